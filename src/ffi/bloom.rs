//! The Bloom filter as the server sees it: the `MBbloom--` data type
//! (callbacks Redis invokes directly, each with panics contained, calling
//! `crate::bloom::datatype`) and the BF.* command table.
//!
//! SAFETY invariants, in addition to those of `ffi`:
//! 5. Every `value` pointer Redis hands a callback is a `Box<Filter>` made
//!    by this module (`Key::store`, `rdb_load`, `copy`), alive until `free`,
//!    which receives it exactly once.
//! 6. `io` / `aof` / `md` pointers are valid for the duration of the
//!    callback that received them.

use std::ffi::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::{self, NonNull};

use ferrobloom_core::rdb::{RdbError, RdbInput, RdbOutput};
use ferrobloom_core::BitArray;
use redis_module::raw::{self, RedisModuleDigest, RedisModuleIO, RedisModuleString};

use super::args::string_bytes;
use super::command::CommandSpec;
use super::env::CallbackEnv;
use super::key::{RegisteredType, TypeHandle};
use super::{api, optional_api};
use crate::bloom::datatype::{self, DigestSink};
use crate::bloom::{dump, observe, read, write, Filter};
use crate::command::Access;

/// The BF.* commands, in RedisBloom's order, then FerroBloom's own.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec::keyed::<write::Reserve>(Access::Insert, false),
    CommandSpec::keyed::<write::Add>(Access::Insert, true),
    CommandSpec::keyed::<write::MAdd>(Access::Insert, true),
    CommandSpec::keyed::<write::Insert>(Access::Insert, true),
    CommandSpec::keyed::<read::Exists>(Access::Read, true),
    CommandSpec::keyed::<read::MExists>(Access::Read, true),
    CommandSpec::keyed::<read::Info>(Access::Read, true),
    CommandSpec::keyed::<read::Card>(Access::Read, true),
    CommandSpec::keyed::<read::Debug>(Access::Read, false),
    CommandSpec::keyed::<dump::ScanDump>(Access::Read, false),
    CommandSpec::keyed::<dump::LoadChunk>(Access::Update, false),
    // FerroBloom's own.
    CommandSpec::keyless::<observe::PlanCommand>(false),
    CommandSpec::keyed::<observe::Stats>(Access::Read, false),
];

/// The registered `MBbloom--` type.
static BLOOM_TYPE: TypeHandle = TypeHandle::new();

impl RegisteredType for Filter {
    fn handle() -> &'static TypeHandle {
        &BLOOM_TYPE
    }
}

/// Runs `f`, turning a panic into `fallback` (never unwinding into Redis).
fn contained<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(fallback)
}

/// # Safety
/// (5): `value` is a live `Box<Filter>` of this module.
unsafe fn filter_ref<'a>(value: *const c_void) -> &'a Filter {
    // SAFETY: the caller's guarantee.
    unsafe { &*value.cast::<Filter>() }
}

struct ModuleInput {
    io: *mut RedisModuleIO,
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
            Some(p) if len > 0 => Ok(unsafe { BitArray::from_raw_parts(p, len) }),
            Some(p) => {
                // SAFETY: as above; an empty buffer is freed and replaced.
                unsafe { api!(RedisModule_Free)(p.as_ptr().cast()) };
                Ok(BitArray::zeroed(0).expect("empty array"))
            }
            None => Ok(BitArray::zeroed(0).expect("empty array")),
        }
    }
}

struct ModuleOutput {
    io: *mut RedisModuleIO,
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
fn key_name_from_io(io: *mut RedisModuleIO) -> Vec<u8> {
    match optional_api!(RedisModule_GetKeyNameFromIO) {
        // SAFETY: (6); the function returns null or a string owned by Redis
        // for the duration of the callback, which `string_bytes` copies.
        Some(get) => unsafe { string_bytes(get(io)) },
        None => Vec::new(),
    }
}

extern "C" fn rdb_load(io: *mut RedisModuleIO, encver: c_int) -> *mut c_void {
    contained(ptr::null_mut(), || {
        let key = key_name_from_io(io);
        match datatype::rdb_load(&mut ModuleInput { io }, encver, &key, &CallbackEnv::new()) {
            Ok(filter) => Box::into_raw(filter).cast(),
            Err(message) => {
                let message = std::ffi::CString::new(message).unwrap_or_default();
                // SAFETY: (1), (6); "%s" consumes one C string.
                unsafe {
                    api!(RedisModule_LogIOError)(
                        io,
                        c"warning".as_ptr(),
                        c"%s".as_ptr(),
                        message.as_ptr(),
                    )
                };
                ptr::null_mut()
            }
        }
    })
}

extern "C" fn rdb_save(io: *mut RedisModuleIO, value: *mut c_void) {
    contained((), || {
        // SAFETY: (5).
        let filter = unsafe { filter_ref(value) };
        datatype::rdb_save(filter, &mut ModuleOutput { io });
    })
}

extern "C" fn aof_rewrite(
    aof: *mut RedisModuleIO,
    key: *mut RedisModuleString,
    value: *mut c_void,
) {
    contained((), || {
        // SAFETY: (5).
        let filter = unsafe { filter_ref(value) };
        datatype::aof_rewrite(filter, |iter, bytes| {
            // SAFETY: (1), (6); "slb" = RedisModuleString*, long long, then
            // a buffer pointer and its size_t length.
            unsafe {
                api!(RedisModule_EmitAOF)(
                    aof,
                    c"BF.LOADCHUNK".as_ptr(),
                    c"slb".as_ptr(),
                    key,
                    iter as std::ffi::c_longlong,
                    bytes.as_ptr().cast::<std::ffi::c_char>(),
                    bytes.len(),
                )
            };
        });
    })
}

extern "C" fn mem_usage(value: *const c_void) -> usize {
    // SAFETY: (5).
    contained(0, || datatype::mem_usage(unsafe { filter_ref(value) }))
}

extern "C" fn free(value: *mut c_void) {
    contained((), || {
        // SAFETY: (5): Redis gives up the value; dropped exactly once. May run
        // on a lazy-free thread: Filter's drop and the metrics are
        // thread-safe.
        drop(unsafe { Box::from_raw(value.cast::<Filter>()) });
    })
}

extern "C" fn free_effort(_key: *mut RedisModuleString, value: *const c_void) -> usize {
    // SAFETY: (5).
    contained(1, || datatype::free_effort(unsafe { filter_ref(value) }))
}

struct Digest {
    md: *mut RedisModuleDigest,
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

extern "C" fn digest(md: *mut RedisModuleDigest, value: *mut c_void) {
    contained((), || {
        // SAFETY: (5).
        let filter = unsafe { filter_ref(value) };
        datatype::digest(filter, &mut Digest { md });
    })
}

extern "C" fn copy(
    _from: *mut RedisModuleString,
    to: *mut RedisModuleString,
    value: *const c_void,
) -> *mut c_void {
    contained(ptr::null_mut(), || {
        // SAFETY: (5).
        let filter = unsafe { filter_ref(value) };
        // SAFETY: (6): `to` is the destination name Redis passed to COPY.
        let to = unsafe { string_bytes(to) };
        match datatype::copy(filter, &to, &CallbackEnv::new()) {
            Some(copy) => Box::into_raw(copy).cast(),
            None => ptr::null_mut(),
        }
    })
}

/// Registers the type. Called once from OnLoad.
pub fn register_type(ctx: *mut raw::RedisModuleCtx) -> Result<(), String> {
    let mut methods = raw::RedisModuleTypeMethods {
        // Version 4 is what Redis 7.0 knows; later servers accept it.
        version: 4,
        rdb_load: Some(rdb_load),
        rdb_save: Some(rdb_save),
        aof_rewrite: Some(aof_rewrite),
        mem_usage: Some(mem_usage),
        digest: Some(digest),
        free: Some(free),
        aux_load: None,
        aux_save: None,
        aux_save_triggers: 0,
        free_effort: Some(free_effort),
        unlink: None,
        copy: Some(copy),
        defrag: Some(super::defrag::defrag_filter),
        mem_usage2: None,
        free_effort2: None,
        unlink2: None,
        copy2: None,
        aux_save2: None,
    };
    // SAFETY: (1); ctx is the OnLoad context; Redis copies the methods.
    let ty = unsafe {
        api!(RedisModule_CreateDataType)(
            ctx,
            datatype::TYPE_NAME.as_ptr(),
            datatype::ENCODING_VERSION,
            &mut methods,
        )
    };
    if ty.is_null() {
        return Err("could not create the MBbloom-- data type".into());
    }
    BLOOM_TYPE.set(ty);
    Ok(())
}
