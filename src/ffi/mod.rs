//! The one place where the module touches the Redis module API: every
//! `RedisModule_*` call is in this folder, behind safe types. The rest of
//! the crate (the command layer, the data types, settings, metrics, the
//! memory guard) is plain Rust and is unit-tested without a server.
//!
//! - `module`: OnLoad (options, settings, registration of everything).
//! - `command`: the command trampolines (one generic `extern "C"` handler
//!   per command kind) and command registration (flags, key specs, ACL).
//! - `context`: the running command's context: opening keys, rendering an
//!   [`crate::command::Outcome`] (reply, propagation, events).
//! - `args`, `key`: arguments and open keys behind the command layer's
//!   traits; `env`: the server as a command's [`crate::command::Env`].
//! - `datatype`: one generic set of data type callbacks (RDB, AOF, memory,
//!   digest, copy, free, defrag) for every type's `crate::datatype::DataType`,
//!   each type's handle, and type registration; `value_io`: what those
//!   callbacks share (serialized values, digests, AOF records).
//! - `bloom`, `cuckoo`: the BF.* and CF.* command tables.
//! - `config`, `info`, `alloc`, `defrag`: module configuration, the INFO
//!   section, the global allocator, active defragmentation.
//!
//! Invariants every `unsafe` block here relies on (numbered, cited by the
//! SAFETY notes):
//! 1. The API function pointers are filled by RedisModule_Init before any
//!    command or callback runs, and the functions used exist on every
//!    supported server (Redis 7.0+, Valkey 8+); `api!` panics (caught at the
//!    boundary) if one is missing rather than calling through a null
//!    pointer.
//! 2. A `Ctx` wraps the context Redis passed to the running command; it is
//!    valid for the whole call, and only on the main thread.
//! 3. `argv` holds `argc` valid strings that live until the command
//!    returns, so byte slices borrowed from them live as long as `Args`.
//! 4. A `Key` owns an open key handle and closes it exactly once on drop;
//!    the value pointer of a key of a type registered through
//!    [`key::TypeHandle`] is a `Box<V>` of the Rust type `V` registered
//!    with that handle, leaked by `Key::store` or by the type's RDB loader
//!    or copy, owned by Redis until the type's `free`.

pub mod alloc;
mod args;
pub mod bloom;
pub mod cms;
mod command;
mod config;
mod context;
pub mod cuckoo;
mod datatype;
mod defrag;
mod env;
mod events;
mod info;
mod key;
pub mod module;
pub mod tdigest;
pub mod topk;
mod value_io;

use std::ffi::{c_int, CString};

use redis_module::raw;

/// Calls a module API function, panicking (caught at the boundary) if the
/// server does not export it.
macro_rules! api {
    ($name:ident) => {
        match redis_module::raw::$name {
            Some(f) => f,
            None => panic!(concat!("module API function missing: ", stringify!($name))),
        }
    };
}
pub(crate) use api;

/// An API function the server may not export (calls newer than Redis
/// 7.0), as an `Option` of its pointer.
macro_rules! optional_api {
    ($name:ident) => {{
        // SAFETY: (1): reading the API table, which RedisModule_Init filled
        // before any caller runs and which never changes afterwards.
        unsafe { redis_module::raw::$name }
    }};
}
pub(crate) use optional_api;

pub const REDISMODULE_OK: c_int = raw::REDISMODULE_OK as c_int;

/// Log levels of RedisModule_Log.
#[derive(Clone, Copy)]
pub enum LogLevel {
    Notice,
    Warning,
}

/// Writes one line to the server log (with a null context: logged without
/// the module's name, as callbacks without a context log).
pub fn log(ctx: *mut raw::RedisModuleCtx, level: LogLevel, message: &str) {
    let level = match level {
        LogLevel::Notice => c"notice",
        LogLevel::Warning => c"warning",
    };
    let text = CString::new(message.replace('\0', " ")).unwrap_or_default();
    // Looked up rather than required: logging works (or does nothing) in
    // any state.
    if let Some(log) = optional_api!(RedisModule_Log) {
        // SAFETY: (1) the function exists; ctx is a valid context or null,
        // which RedisModule_Log accepts; "%s" consumes exactly one C string.
        unsafe { log(ctx, level.as_ptr(), c"%s".as_ptr(), text.as_ptr()) };
    }
}
