//! Cuckoo filters as the server sees them: the `MBbloomCF` data type
//! (callbacks calling `crate::cuckoo::datatype`, each with panics
//! contained), and the CF.* command table.
//!
//! SAFETY invariants, in addition to those of `ffi` and `value_io`:
//! 8. Every `value` pointer Redis hands a callback here is a `Box<Cuckoo>`
//!    made by this module (`Key::store`, `rdb_load`, `copy`), alive until
//!    `free`, which receives it exactly once.

use std::ffi::{c_int, c_void};
use std::ptr;

use redis_module::raw::{self, RedisModuleDigest, RedisModuleIO, RedisModuleString};

use super::api;
use super::args::string_bytes;
use super::command::{CommandSpec, READ, WRITE};
use super::env::CallbackEnv;
use super::key::{RegisteredType, TypeHandle};
use super::value_io::{
    contained, emit_record, key_name_from_io, Digest, ModuleInput, ModuleOutput,
};
use crate::command::Access;
use crate::cuckoo::{chunks, datatype, observe, read, write, Cuckoo};

/// The CF.* commands, in RedisBloom's order. Flags as RedisBloom registers
/// them: CF.DEL is `write fast` (it runs under maxmemory), CF.COMPACT
/// `readonly fast` although it moves fingerprints (it runs on read-only
/// replicas, as in RedisBloom).
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec::keyed::<write::Reserve>(Access::Insert, false, WRITE),
    CommandSpec::keyed::<write::Add<false>>(Access::Insert, true, WRITE),
    CommandSpec::keyed::<write::Add<true>>(Access::Insert, true, WRITE),
    CommandSpec::keyed::<write::Insert<false>>(Access::Insert, true, WRITE),
    CommandSpec::keyed::<write::Insert<true>>(Access::Insert, true, WRITE),
    CommandSpec::keyed::<read::Exists>(Access::Read, true, READ),
    CommandSpec::keyed::<read::MExists>(Access::Read, true, READ),
    CommandSpec::keyed::<read::Count>(Access::Read, true, READ),
    CommandSpec::keyed::<write::Del>(Access::Delete, true, c"write fast"),
    CommandSpec::keyed::<write::Compact>(Access::Update, false, READ),
    CommandSpec::keyed::<chunks::ScanDump>(Access::Read, false, READ),
    CommandSpec::keyed::<chunks::LoadChunk>(Access::Update, false, WRITE),
    CommandSpec::keyed::<read::Info>(Access::Read, true, READ),
    CommandSpec::keyed::<read::Debug>(Access::Read, false, READ),
    // FerroBloom's own.
    CommandSpec::keyed::<observe::Stats>(Access::Read, false, READ),
    CommandSpec::keyless::<observe::PlanCommand>(false),
];

/// The registered `MBbloomCF` type.
static CUCKOO_TYPE: TypeHandle = TypeHandle::new();

impl RegisteredType for Cuckoo {
    fn handle() -> &'static TypeHandle {
        &CUCKOO_TYPE
    }
}

/// # Safety
/// (8): `value` is a live `Box<Cuckoo>` of this module.
unsafe fn cuckoo_ref<'a>(value: *const c_void) -> &'a Cuckoo {
    // SAFETY: the caller's guarantee.
    unsafe { &*value.cast::<Cuckoo>() }
}

extern "C" fn rdb_load(io: *mut RedisModuleIO, encver: c_int) -> *mut c_void {
    contained(ptr::null_mut(), || {
        let key = key_name_from_io(io);
        match datatype::rdb_load(&mut ModuleInput { io }, encver, &key, &CallbackEnv::new()) {
            Ok(cuckoo) => Box::into_raw(cuckoo).cast(),
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
        // SAFETY: (8).
        let cuckoo = unsafe { cuckoo_ref(value) };
        datatype::rdb_save(cuckoo, &mut ModuleOutput { io });
    })
}

extern "C" fn aof_rewrite(
    aof: *mut RedisModuleIO,
    key: *mut RedisModuleString,
    value: *mut c_void,
) {
    contained((), || {
        // SAFETY: (8).
        let cuckoo = unsafe { cuckoo_ref(value) };
        datatype::aof_rewrite(cuckoo, |record| {
            emit_record(aof, c"CF.LOADCHUNK", key, record)
        });
    })
}

extern "C" fn mem_usage(value: *const c_void) -> usize {
    // SAFETY: (8).
    contained(0, || datatype::mem_usage(unsafe { cuckoo_ref(value) }))
}

extern "C" fn free(value: *mut c_void) {
    contained((), || {
        // SAFETY: (8): Redis gives up the value; dropped exactly once. May run
        // on a lazy-free thread: dropping a Cuckoo only frees memory.
        drop(unsafe { Box::from_raw(value.cast::<Cuckoo>()) });
    })
}

extern "C" fn free_effort(_key: *mut RedisModuleString, value: *const c_void) -> usize {
    // SAFETY: (8).
    contained(1, || datatype::free_effort(unsafe { cuckoo_ref(value) }))
}

extern "C" fn digest(md: *mut RedisModuleDigest, value: *mut c_void) {
    contained((), || {
        // SAFETY: (8).
        let cuckoo = unsafe { cuckoo_ref(value) };
        datatype::digest(cuckoo, &mut Digest { md });
    })
}

extern "C" fn copy(
    _from: *mut RedisModuleString,
    to: *mut RedisModuleString,
    value: *const c_void,
) -> *mut c_void {
    contained(ptr::null_mut(), || {
        // SAFETY: (8).
        let cuckoo = unsafe { cuckoo_ref(value) };
        // SAFETY: (6): `to` is the destination name Redis passed to COPY.
        let to = unsafe { string_bytes(to) };
        match datatype::copy(cuckoo, &to, &CallbackEnv::new()) {
            Some(copy) => Box::into_raw(copy).cast(),
            None => ptr::null_mut(),
        }
    })
}

/// Registers the type. Called once from OnLoad.
pub fn register_type(ctx: *mut raw::RedisModuleCtx) -> Result<(), String> {
    let mut methods = raw::RedisModuleTypeMethods {
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
        defrag: Some(super::defrag::defrag_value::<Cuckoo>),
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
        return Err("could not create the MBbloomCF data type".into());
    }
    CUCKOO_TYPE.set(ty);
    Ok(())
}
