//! What every data type's callbacks (`ffi::datatype`) share: panics
//! contained at the boundary, the typed reads and writes of a serialized
//! value over the module API (the core's `RdbInput` / `RdbOutput`), the key
//! name of a load, DEBUG DIGEST and the records of an AOF rewrite.
//!
//! SAFETY invariant, in addition to those of `ffi`:
//! 6. `io` / `aof` / `md` pointers, and the key name of an AOF rewrite, are
//!    valid for the duration of the callback that received them (the
//!    values hold them only that long).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;

use ferrobloom_core::rdb_io::{RdbError, RdbInput, RdbOutput};
use ferrobloom_core::BitArray;
use redis_module::raw::{RedisModuleDigest, RedisModuleIO};

use super::args::string_bytes;
use super::{api, optional_api};
use crate::datatype::{AofRecord, DigestSink};

/// Runs `f`, turning a panic into `fallback` (never unwinding into Redis).
pub fn contained<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(fallback)
}

pub struct ModuleInput {
    pub io: *mut RedisModuleIO,
}

impl ModuleInput {
    fn check(&self) -> Result<(), RdbError> {
        // SAFETY: (1), (6).
        if unsafe { api!(RedisModule_IsIOError)(self.io) } != 0 {
            Err(RdbError::Io)
        } else {
            Ok(())
        }
    }
}

impl RdbInput for ModuleInput {
    fn read_unsigned(&mut self) -> Result<u64, RdbError> {
        // SAFETY: (1), (6).
        let v = unsafe { api!(RedisModule_LoadUnsigned)(self.io) };
        self.check().map(|_| v)
    }

    fn read_double(&mut self) -> Result<f64, RdbError> {
        // SAFETY: (1), (6).
        let v = unsafe { api!(RedisModule_LoadDouble)(self.io) };
        self.check().map(|_| v)
    }

    fn read_bit_array(&mut self) -> Result<BitArray, RdbError> {
        let mut len = 0usize;
        // SAFETY: (1), (6). The buffer, when not null, was allocated by
        // Redis' allocator for `len` bytes and is ours to free.
        let buffer = unsafe { api!(RedisModule_LoadStringBuffer)(self.io, &mut len) };
        let owned = NonNull::new(buffer.cast::<u8>());
        if let Err(e) = self.check() {
            if let Some(p) = owned {
                // SAFETY: the buffer is ours (see above) and not used again.
                unsafe { api!(RedisModule_Free)(p.as_ptr().cast()) };
            }
            return Err(e);
        }
        match owned {
            // SAFETY: adopted without copying: it comes from Redis' allocator,
            // which the module's global allocator is (BitArray::from_raw_parts
            // items 1-3; jemalloc aligns blocks of 8 bytes or more to 8).
            Some(p) if len > 0 => {
                // SAFETY: as above: a live block of Redis' allocator of `len`
                // bytes, counted now that the module owns it.
                unsafe { super::alloc::adopted(p.as_ptr(), len) };
                Ok(unsafe { BitArray::from_raw_parts(p, len) })
            }
            Some(p) => {
                // SAFETY: as above; an empty buffer is freed and replaced.
                unsafe { api!(RedisModule_Free)(p.as_ptr().cast()) };
                Ok(BitArray::zeroed(0).expect("empty array"))
            }
            None => Ok(BitArray::zeroed(0).expect("empty array")),
        }
    }
}

pub struct ModuleOutput {
    pub io: *mut RedisModuleIO,
}

impl RdbOutput for ModuleOutput {
    fn write_unsigned(&mut self, value: u64) {
        // SAFETY: (1), (6).
        unsafe { api!(RedisModule_SaveUnsigned)(self.io, value) };
    }
    fn write_double(&mut self, value: f64) {
        // SAFETY: (1), (6).
        unsafe { api!(RedisModule_SaveDouble)(self.io, value) };
    }
    fn write_bytes(&mut self, bytes: &[u8]) {
        // SAFETY: (1), (6); the buffer is valid for its length.
        unsafe { api!(RedisModule_SaveStringBuffer)(self.io, bytes.as_ptr().cast(), bytes.len()) };
    }
}

/// The name of the key being loaded, where the server tells it (empty
/// otherwise: RESTORE on some servers, or a module reading without a key).
pub fn key_name_from_io(io: *mut RedisModuleIO) -> Vec<u8> {
    match optional_api!(RedisModule_GetKeyNameFromIO) {
        // SAFETY: (6); the function returns null or a string owned by Redis
        // for the duration of the callback, which `string_bytes` copies.
        Some(get) => unsafe { string_bytes(get(io)) },
        None => Vec::new(),
    }
}

pub struct Digest {
    pub md: *mut RedisModuleDigest,
}

impl DigestSink for Digest {
    fn add_int(&mut self, value: u64) {
        // SAFETY: (1), (6).
        unsafe { api!(RedisModule_DigestAddLongLong)(self.md, value as i64) };
    }
    fn add_bytes(&mut self, bytes: &[u8]) {
        // SAFETY: (1), (6); the buffer is valid for its length.
        unsafe {
            api!(RedisModule_DigestAddStringBuffer)(self.md, bytes.as_ptr().cast(), bytes.len())
        };
    }
    fn end_sequence(&mut self) {
        // SAFETY: (1), (6).
        unsafe { api!(RedisModule_DigestEndSequence)(self.md) };
    }
}

/// Writes `<command> key <iter> <bytes>` to the AOF being rewritten (the
/// LOADCHUNK commands a filter is rewritten as).
fn emit_chunk(
    aof: *mut RedisModuleIO,
    command: &std::ffi::CStr,
    key: *mut redis_module::raw::RedisModuleString,
    iter: i64,
    bytes: &[u8],
) {
    // SAFETY: (1) of ffi; `aof` and `key` are the rewrite callback's, valid
    // during it. "slb" = RedisModuleString*, long long, then a buffer
    // pointer and its size_t length; Redis copies them.
    unsafe {
        api!(RedisModule_EmitAOF)(
            aof,
            command.as_ptr(),
            c"slb".as_ptr(),
            key,
            iter as std::ffi::c_longlong,
            bytes.as_ptr().cast::<std::ffi::c_char>(),
            bytes.len(),
        )
    };
}

/// Writes `RESTORE key 0 <payload>` to the AOF being rewritten (a value
/// whose state only its serialized form carries; see `AofRecord`).
fn emit_restore(
    aof: *mut RedisModuleIO,
    key: *mut redis_module::raw::RedisModuleString,
    payload: &[u8],
) {
    // SAFETY: (1) of ffi; `aof` and `key` are the rewrite callback's, valid
    // during it. "scb" = RedisModuleString*, a C string, then a buffer
    // pointer and its size_t length; Redis copies them.
    unsafe {
        api!(RedisModule_EmitAOF)(
            aof,
            c"RESTORE".as_ptr(),
            c"scb".as_ptr(),
            key,
            c"0".as_ptr(),
            payload.as_ptr().cast::<std::ffi::c_char>(),
            payload.len(),
        )
    };
}

/// Writes one record of a type's AOF rewrite.
pub fn emit_record(
    aof: *mut RedisModuleIO,
    key: *mut redis_module::raw::RedisModuleString,
    record: AofRecord<'_>,
) {
    match record {
        AofRecord::Chunk {
            command,
            iter,
            bytes,
        } => emit_chunk(aof, command, key, iter, bytes),
        AofRecord::Restore(payload) => emit_restore(aof, key, payload),
    }
}
