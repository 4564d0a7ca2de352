//! Every data type as the server sees it: one generic set of the callbacks
//! Redis invokes on a module type's values (RDB load and save, AOF
//! rewrite, memory usage, free, free effort, digest, copy, defrag), each
//! with panics contained, calling the type's [`DataType`] implementation;
//! the handle of each registered type; and [`register_type`].
//!
//! A new type implements `DataType` in its folder, adds its line to
//! `type_handles!` below and one `register_type::<T>` line to
//! `ffi::module`.
//!
//! SAFETY invariant, in addition to those of `ffi` and `value_io`:
//! 5. Every `value` pointer Redis hands a callback of `T` here is a
//!    `Box<T>` made by this module (`Key::store`, `rdb_load`, `copy`),
//!    alive until `free`, which receives it exactly once: each type is
//!    registered with the callbacks of its own `T` only.

use std::ffi::{c_int, c_void, CString};
use std::ptr;

use redis_module::raw::{
    self, RedisModuleDefragCtx, RedisModuleDigest, RedisModuleIO, RedisModuleString,
};

use super::api;
use super::args::string_bytes;
use super::env::CallbackEnv;
use super::key::{RegisteredType, TypeHandle};
use super::value_io::{
    contained, emit_record, key_name_from_io, Digest, ModuleInput, ModuleOutput,
};
use crate::bloom::Filter;
use crate::cms::Sketch;
use crate::cuckoo::Cuckoo;
use crate::datatype::DataType;
use crate::topk::TopKey;
use crate::window::Window;

/// Declares the server's handle of each registered type, set by
/// `register_type` and read when a key is opened.
macro_rules! type_handles {
    ($($value:ty => $handle:ident),* $(,)?) => {$(
        static $handle: TypeHandle = TypeHandle::new();

        impl RegisteredType for $value {
            fn handle() -> &'static TypeHandle {
                &$handle
            }
        }
    )*};
}

type_handles! {
    Filter => BLOOM_TYPE,
    Window => WINDOW_TYPE,
    Cuckoo => CUCKOO_TYPE,
    Sketch => CMS_TYPE,
    TopKey => TOPK_TYPE,
    crate::tdigest::TDigestValue => TDIGEST_TYPE,
}

/// # Safety
/// (5): `value` is a live `Box<T>` of this module.
unsafe fn value_ref<'a, T: DataType>(value: *const c_void) -> &'a T {
    // SAFETY: the caller's guarantee.
    unsafe { &*value.cast::<T>() }
}

extern "C" fn rdb_load<T: DataType>(io: *mut RedisModuleIO, encver: c_int) -> *mut c_void {
    contained(ptr::null_mut(), || {
        let key = key_name_from_io(io);
        match T::rdb_load(
            &mut ModuleInput { io },
            encver,
            &key,
            &CallbackEnv::without_context(),
        ) {
            Ok(value) => Box::into_raw(value).cast(),
            Err(message) => {
                let message = CString::new(message).unwrap_or_default();
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

extern "C" fn rdb_save<T: DataType>(io: *mut RedisModuleIO, value: *mut c_void) {
    contained((), || {
        // SAFETY: (5).
        let value = unsafe { value_ref::<T>(value) };
        value.rdb_save(&mut ModuleOutput { io });
    })
}

extern "C" fn aof_rewrite<T: DataType>(
    aof: *mut RedisModuleIO,
    key: *mut RedisModuleString,
    value: *mut c_void,
) {
    contained((), || {
        // SAFETY: (5).
        let value = unsafe { value_ref::<T>(value) };
        value.aof_rewrite(&mut |record| emit_record(aof, key, record));
    })
}

extern "C" fn mem_usage<T: DataType>(value: *const c_void) -> usize {
    // SAFETY: (5).
    contained(0, || unsafe { value_ref::<T>(value) }.mem_usage())
}

extern "C" fn free<T: DataType>(value: *mut c_void) {
    contained((), || {
        // SAFETY: (5): Redis gives up the value; dropped exactly once. May run
        // on a lazy-free thread: DataType values are Send, and their drops
        // free memory and update atomic metrics only.
        drop(unsafe { Box::from_raw(value.cast::<T>()) });
    })
}

extern "C" fn free_effort<T: DataType>(
    _key: *mut RedisModuleString,
    value: *const c_void,
) -> usize {
    // SAFETY: (5).
    contained(1, || unsafe { value_ref::<T>(value) }.free_effort())
}

extern "C" fn digest<T: DataType>(md: *mut RedisModuleDigest, value: *mut c_void) {
    contained((), || {
        // SAFETY: (5).
        let value = unsafe { value_ref::<T>(value) };
        value.digest(&mut Digest { md });
    })
}

extern "C" fn copy<T: DataType>(
    _from: *mut RedisModuleString,
    to: *mut RedisModuleString,
    value: *const c_void,
) -> *mut c_void {
    contained(ptr::null_mut(), || {
        // SAFETY: (5).
        let value = unsafe { value_ref::<T>(value) };
        // SAFETY: (6): `to` is the destination name Redis passed to COPY.
        let to = unsafe { string_bytes(to) };
        match value.copy(&to, &CallbackEnv::without_context()) {
            Some(copy) => Box::into_raw(copy).cast(),
            None => ptr::null_mut(),
        }
    })
}

/// 0 when done, 1 when more remains (Redis calls again later with the
/// cursor set).
extern "C" fn defrag<T: DataType>(
    ctx: *mut RedisModuleDefragCtx,
    _key: *mut RedisModuleString,
    value: *mut *mut c_void,
) -> c_int {
    // SAFETY: (5): `*value` is the live Box<T> of this key; `value` is
    // Redis' slot for it and `ctx` the running defrag context, both valid
    // for the callback.
    contained(0, || unsafe {
        super::defrag::defrag_value::<T>(ctx, value)
    })
}

/// Registers `T` as a module data type, with the callbacks above, and
/// keeps its handle. Called once per type from OnLoad.
pub fn register_type<T: RegisteredType>(ctx: *mut raw::RedisModuleCtx) -> Result<(), String> {
    const {
        assert!(
            T::NAME.to_bytes().len() == 9,
            "a type name has nine characters"
        )
    };
    let mut methods = raw::RedisModuleTypeMethods {
        // Version 4 is what Redis 7.0 knows; later servers accept it.
        version: 4,
        rdb_load: Some(rdb_load::<T>),
        rdb_save: Some(rdb_save::<T>),
        aof_rewrite: Some(aof_rewrite::<T>),
        mem_usage: Some(mem_usage::<T>),
        digest: Some(digest::<T>),
        free: Some(free::<T>),
        aux_load: None,
        aux_save: None,
        aux_save_triggers: 0,
        free_effort: Some(free_effort::<T>),
        unlink: None,
        copy: Some(copy::<T>),
        defrag: Some(defrag::<T>),
        mem_usage2: None,
        free_effort2: None,
        unlink2: None,
        copy2: None,
        aux_save2: None,
    };
    // SAFETY: (1); ctx is the OnLoad context; Redis copies the methods.
    let ty = unsafe {
        api!(RedisModule_CreateDataType)(ctx, T::NAME.as_ptr(), T::ENCODING_VERSION, &mut methods)
    };
    if ty.is_null() {
        return Err(format!(
            "could not create the {} data type",
            T::NAME.to_string_lossy()
        ));
    }
    T::handle().set(ty);
    Ok(())
}
