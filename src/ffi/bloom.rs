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
use std::ptr;

use redis_module::raw::{self, RedisModuleDigest, RedisModuleIO, RedisModuleString};

use super::api;
use super::args::string_bytes;
use super::command::CommandSpec;
use super::env::CallbackEnv;
use super::key::{RegisteredType, TypeHandle};
use super::value_io::{
    contained, emit_record, key_name_from_io, Digest, ModuleInput, ModuleOutput,
};
use crate::bloom::datatype;
use crate::bloom::{dump, observe, read, write, Filter};
use crate::command::Access;
use crate::window;

/// The BF.* commands, in RedisBloom's order, then FerroBloom's own.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec::routed::<write::Reserve, window::write::Reserve>(Access::Insert, false),
    CommandSpec::routed::<write::Add, window::write::Add>(Access::Insert, true),
    CommandSpec::routed::<write::MAdd, window::write::MAdd>(Access::Insert, true),
    CommandSpec::routed::<write::Insert, window::write::Insert>(Access::Insert, true),
    CommandSpec::routed::<read::Exists, window::read::Exists>(Access::Read, true),
    CommandSpec::routed::<read::MExists, window::read::MExists>(Access::Read, true),
    CommandSpec::routed::<read::Info, window::read::Info>(Access::Read, true),
    CommandSpec::routed::<read::Card, window::read::Card>(Access::Read, true),
    CommandSpec::routed::<read::Debug, window::read::Debug>(Access::Read, false),
    CommandSpec::routed::<dump::ScanDump, window::dump::ScanDump>(Access::Read, false),
    CommandSpec::routed::<dump::LoadChunk, window::dump::LoadChunk>(Access::Update, false),
    // FerroBloom's own.
    CommandSpec::routed_keyless::<observe::PlanCommand, window::observe::Plan>(false),
    CommandSpec::routed::<observe::Stats, window::observe::Stats>(Access::Read, false),
];

/// The registered `MBbloom--` type.
static BLOOM_TYPE: TypeHandle = TypeHandle::new();

impl RegisteredType for Filter {
    fn handle() -> &'static TypeHandle {
        &BLOOM_TYPE
    }
}

/// # Safety
/// (5): `value` is a live `Box<Filter>` of this module.
unsafe fn filter_ref<'a>(value: *const c_void) -> &'a Filter {
    // SAFETY: the caller's guarantee.
    unsafe { &*value.cast::<Filter>() }
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
        datatype::aof_rewrite(filter, |record| {
            emit_record(aof, c"BF.LOADCHUNK", key, record)
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
        defrag: Some(super::defrag::defrag_value::<Filter>),
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
