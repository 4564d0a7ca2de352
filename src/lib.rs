//! FerroBloom: a Redis module with RedisBloom's Bloom filter commands, data
//! type and formats, built on the Redis-free core in `ferrobloom-core`.
//!
//! This crate is the thin layer between Redis and the core: command
//! parsing and replies (`commands`, `grammar`), the data type callbacks
//! (`datatype`, `defrag`), configuration and server-wide metrics. The
//! `unsafe` FFI lives in `ffi`, `datatype`, `defrag` and `alloc`.

mod alloc;
mod commands;
mod config;
mod datatype;
mod defrag;
mod ffi;
mod filter;
mod grammar;
mod guard;
mod info;
mod memory_limit;
mod metrics;
mod module_config;
mod notify;
mod replies;

use redis_module::{redis_module, Context, RedisString, Status};

/// RedisBloom's module version number: clients detect the module by its
/// name `bf` and gate features on this number.
pub const MODULE_VERSION: i32 = 20802;

impl config::LoadArg for RedisString {
    fn bytes(&self) -> &[u8] {
        self.as_slice()
    }
    fn int(&self) -> Option<i64> {
        self.parse_integer().ok()
    }
    fn double(&self) -> Option<f64> {
        self.parse_float().ok()
    }
}

fn init(ctx: &Context, args: &[RedisString]) -> Status {
    let raw = ctx.ctx;
    // SAFETY: (1) of ffi; called from OnLoad with its context. Declaring IO
    // error handling makes a truncated or garbled RDB/RESTORE payload an
    // error instead of a server abort.
    unsafe {
        ffi::api!(RedisModule_SetModuleOptions)(
            raw,
            redis_module::raw::REDISMODULE_OPTIONS_HANDLE_IO_ERRORS as std::ffi::c_int,
        )
    };

    let load_args: Vec<&dyn config::LoadArg> =
        args.iter().map(|a| a as &dyn config::LoadArg).collect();
    let mut settings = config::settings();
    if let Err(message) = config::apply_load_args(&load_args, &mut settings) {
        ffi::log(raw, ffi::LogLevel::Warning, &message);
        return Status::Err;
    }
    config::update(|s| *s = settings);
    if let Err(message) = module_config::register(raw, &settings) {
        ffi::log(raw, ffi::LogLevel::Warning, &message);
        return Status::Err;
    }
    let settings = config::settings();
    metrics::set_thresholds(settings.fill_warning, settings.fill_alert);
    ferrobloom_core::bitarray::set_huge_pages(settings.huge_pages);

    if let Err(message) = datatype::register(raw) {
        ffi::log(raw, ffi::LogLevel::Warning, message);
        return Status::Err;
    }
    if let Err(message) = commands::register(raw) {
        ffi::log(raw, ffi::LogLevel::Warning, &message);
        return Status::Err;
    }
    // SAFETY: (1) of ffi; replaces the default INFO callback the module
    // macro registered.
    unsafe { ffi::api!(RedisModule_RegisterInfoFunc)(raw, Some(info::info)) };
    ffi::log(
        raw,
        ffi::LogLevel::Notice,
        &format!(
            "FerroBloom {} (RedisBloom-compatible, version {MODULE_VERSION})",
            env!("CARGO_PKG_VERSION")
        ),
    );
    Status::Ok
}

redis_module! {
    name: "bf",
    version: MODULE_VERSION,
    allocator: (alloc::RedisAllocator, alloc::RedisAllocator),
    data_types: [],
    init: init,
    commands: [],
}
