//! The `MBbloom--` data type: RDB save/load, AOF rewrite, memory usage,
//! digest, copy, lazy free. Callbacks Redis invokes directly, each with
//! panics contained.
//!
//! SAFETY invariants, in addition to those of `ffi`:
//! 5. Every `value` pointer Redis hands a callback is a `Box<Filter>` made
//!    by this module (`Key::set_filter`, `rdb_load`, `copy`), alive until
//!    `free`, which receives it exactly once.
//! 6. `io` / `aof` / `md` pointers are valid for the duration of the
//!    callback that received them.

use std::ffi::{c_int, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::{self, NonNull};

use ferrobloom_core::rdb::{self, RdbError, RdbInput, RdbOutput};
use ferrobloom_core::{scandump, AllocGuard, AllocRequest, BitArray};
use redis_module::raw::{self, RedisModuleDigest, RedisModuleIO, RedisModuleString};

use crate::ffi::api;
use crate::filter::Filter;

/// The type name; fixed by RedisBloom, and part of every RDB and DUMP.
pub const TYPE_NAME: &CStr = c"MBbloom--";

/// Runs `f`, turning a panic into `fallback` (never unwinding into Redis).
fn contained<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(fallback)
}

/// # Safety
/// (5): `value` is a live `Box<Filter>` of this module.
unsafe fn filter_ref<'a>(value: *mut c_void) -> &'a Filter {
    &*value.cast::<Filter>()
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
    // SAFETY: (6); the function exists on Redis 7.0+ and Valkey; it returns
    // null or a string owned by Redis for the duration of the callback,
    // which `string_bytes` copies.
    unsafe {
        match raw::RedisModule_GetKeyNameFromIO {
            Some(get) => string_bytes(get(io).cast_mut()),
            None => Vec::new(),
        }
    }
}

/// The log line of a value that could not be loaded: the key (when the
/// server tells it), so an operator can find it, and the reason.
fn load_error_message(key: &[u8], e: RdbError) -> String {
    let what = if key.is_empty() {
        "a Bloom filter".to_string()
    } else {
        format!("the Bloom filter '{}'", crate::guard::printable(key))
    };
    let why = match e {
        RdbError::Io => "the data ends early or cannot be read (Io)".to_string(),
        RdbError::Invalid(reason) => reason.to_string(),
    };
    format!("refusing {what} in RDB/RESTORE data: {why}")
}

extern "C" fn rdb_load(io: *mut RedisModuleIO, encver: c_int) -> *mut c_void {
    contained(ptr::null_mut(), || {
        match rdb::load(&mut ModuleInput { io }, encver) {
            Ok(chain) => {
                // Never refused (the data would be lost), but a filter over
                // a limit is named in the log.
                crate::guard::check_loaded(
                    &key_name_from_io(io),
                    chain.data_bytes(),
                    chain.reported_size(),
                );
                Box::into_raw(Filter::new(chain)).cast()
            }
            Err(e) => {
                let message = std::ffi::CString::new(load_error_message(&key_name_from_io(io), e))
                    .unwrap_or_default();
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
        rdb::save(&filter.chain, &mut ModuleOutput { io });
    })
}

/// Emits the filter as RedisBloom does: its SCANDUMP stream as
/// BF.LOADCHUNK commands, so the AOF replays in either module.
extern "C" fn aof_rewrite(
    aof: *mut RedisModuleIO,
    key: *mut RedisModuleString,
    value: *mut c_void,
) {
    contained((), || {
        // SAFETY: (5).
        let chain = &unsafe { filter_ref(value) }.chain;
        let emit = |iter: i64, bytes: &[u8]| {
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
        };
        emit(1, &scandump::encode_header(chain));
        let mut iter = 1i64;
        loop {
            let (next, chunk) = scandump::data_chunk(chain, iter);
            if next == 0 {
                break;
            }
            emit(next, chunk);
            iter = next;
        }
    })
}

extern "C" fn mem_usage(value: *const c_void) -> usize {
    contained(0, || {
        // SAFETY: (5).
        let filter = unsafe { filter_ref(value as *mut c_void) };
        filter.chain.reported_size() as usize
    })
}

extern "C" fn free(value: *mut c_void) {
    contained((), || {
        // SAFETY: (5): Redis gives up the value; dropped exactly once. May run
        // on a lazy-free thread: Filter's drop and the metrics are
        // thread-safe.
        drop(unsafe { Box::from_raw(value.cast::<Filter>()) });
    })
}

/// Large filters are freed off the main thread: Redis frees a value
/// asynchronously (UNLINK, FLUSHALL ASYNC, lazyfree-lazy-*) when the effort
/// exceeds its threshold (64), so count one unit per 4 KiB page plus one per
/// link.
extern "C" fn free_effort(_key: *mut RedisModuleString, value: *const c_void) -> usize {
    contained(1, || {
        // SAFETY: (5).
        let chain = &unsafe { filter_ref(value as *mut c_void) }.chain;
        (chain.data_bytes() / 4096) as usize + chain.links().len()
    })
}

extern "C" fn digest(md: *mut RedisModuleDigest, value: *mut c_void) {
    contained((), || {
        // SAFETY: (5).
        let chain = &unsafe { filter_ref(value) }.chain;
        let add_int = |v: u64| {
            // SAFETY: (1), (6).
            unsafe { api!(RedisModule_DigestAddLongLong)(md, v as i64) };
        };
        let add_bytes = |b: &[u8]| {
            // SAFETY: (1), (6); the buffer is valid for its length.
            unsafe { api!(RedisModule_DigestAddStringBuffer)(md, b.as_ptr().cast(), b.len()) };
        };
        add_int(chain.items());
        add_int(u64::from(chain.options()));
        add_int(u64::from(chain.growth()));
        for l in chain.links() {
            add_int(l.entries);
            add_int(l.error.to_bits());
            add_int(u64::from(l.hashes));
            add_int(l.bpe.to_bits());
            add_int(l.bits);
            add_int(u64::from(l.n2));
            add_int(l.items);
            add_bytes(l.data().as_bytes());
        }
        // SAFETY: (1), (6).
        unsafe { api!(RedisModule_DigestEndSequence)(md) };
    })
}

/// COPY: an independent deep copy (RedisBloom refuses COPY), admitted by
/// the memory guard like any new filter. A refused copy returns null: Redis
/// then answers `ERR module key failed to copy`, and the reason is logged.
extern "C" fn copy(
    _from: *mut RedisModuleString,
    to: *mut RedisModuleString,
    value: *const c_void,
) -> *mut c_void {
    contained(ptr::null_mut(), || {
        // SAFETY: (5).
        let filter = unsafe { filter_ref(value as *mut c_void) };
        let request = AllocRequest {
            bytes: filter.chain.data_bytes(),
            filter_size_after: filter.chain.reported_size(),
        };
        let guard = crate::guard::CommandGuard {
            ctx: ptr::null_mut(),
        };
        let refused = match guard.admit(request) {
            Ok(()) => match filter.chain.try_clone() {
                Ok(chain) => return Box::into_raw(Filter::new(chain)).cast(),
                Err(_) => crate::guard::allocation_failed_message(request.bytes),
            },
            Err(refusal) => crate::guard::refusal_message(&refusal),
        };
        crate::ffi::log(
            ptr::null_mut(),
            crate::ffi::LogLevel::Warning,
            &format!(
                "COPY of a Bloom filter to '{}' refused: {}",
                crate::guard::printable(&string_bytes(to)),
                refused.trim_start_matches("ERR ")
            ),
        );
        ptr::null_mut()
    })
}

/// The bytes of a string Redis passed to a callback.
fn string_bytes(s: *mut RedisModuleString) -> Vec<u8> {
    if s.is_null() {
        return Vec::new();
    }
    let mut len = 0usize;
    // SAFETY: (1), (6): a string Redis passed to the running callback.
    let ptr = unsafe { api!(RedisModule_StringPtrLen)(s, &mut len) };
    if ptr.is_null() || len == 0 {
        return Vec::new();
    }
    // SAFETY: Redis' pointer/length pair describes the string's buffer.
    unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) }.to_vec()
}

/// Registers the type. Called once from OnLoad.
pub fn register(ctx: *mut raw::RedisModuleCtx) -> Result<(), &'static str> {
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
        defrag: Some(crate::defrag::defrag),
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
            TYPE_NAME.as_ptr(),
            rdb::ENCODING_VERSION,
            &mut methods,
        )
    };
    if ty.is_null() {
        return Err("could not create the MBbloom-- data type");
    }
    crate::ffi::BLOOM_TYPE.store(ty, std::sync::atomic::Ordering::Relaxed);
    Ok(())
}
