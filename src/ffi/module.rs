//! OnLoad: module options, settings from the load arguments and the
//! server's configuration, then every data type with its commands, and the
//! INFO section.

use redis_module::{raw, Context, RedisString, Status};

use super::datatype::register_type;
use super::{api, log, LogLevel};
use crate::bloom::Filter;
use crate::cms::Sketch;
use crate::config;
use crate::cuckoo::Cuckoo;
use crate::topk::TopKey;
use crate::window::Window;

/// Called by the `redis_module!` entry point with the load arguments.
pub fn init(ctx: &Context, args: &[RedisString]) -> Status {
    match load(ctx.ctx, args) {
        Ok(()) => Status::Ok,
        Err(message) => {
            log(ctx.ctx, LogLevel::Warning, &message);
            Status::Err
        }
    }
}

fn load(ctx: *mut raw::RedisModuleCtx, args: &[RedisString]) -> Result<(), String> {
    // SAFETY: (1); called from OnLoad with its context. Declaring IO error
    // handling makes a truncated or garbled RDB/RESTORE payload an error
    // instead of a server abort.
    unsafe {
        api!(RedisModule_SetModuleOptions)(
            ctx,
            raw::REDISMODULE_OPTIONS_HANDLE_IO_ERRORS as std::ffi::c_int,
        )
    };

    // SAFETY: (1); GetServerVersion exists from Redis 6.0.9 on (this module
    // needs 7.0) and takes no argument.
    super::context::set_server_version(unsafe { api!(RedisModule_GetServerVersion)() });

    let load_args: Vec<&dyn config::LoadArg> =
        args.iter().map(|a| a as &dyn config::LoadArg).collect();
    let mut settings = config::settings();
    config::apply_load_args(&load_args, &mut settings)?;
    config::update(|s| *s = settings);
    super::config::register(ctx, &settings)?;
    let settings = config::settings();
    crate::metrics::set_thresholds(settings.fill_warning, settings.fill_alert);
    ferrobloom_core::bitarray::set_huge_pages(settings.huge_pages);

    // One line per data type, then the command tables.
    register_type::<Filter>(ctx)?;
    register_type::<Window>(ctx)?;
    register_type::<Cuckoo>(ctx)?;
    register_type::<Sketch>(ctx)?;
    register_type::<TopKey>(ctx)?;
    register_type::<crate::tdigest::TDigestValue>(ctx)?;
    super::command::register(
        ctx,
        &[
            (c"bloom", super::bloom::COMMANDS),
            (c"cuckoo", super::cuckoo::COMMANDS),
            (c"cms", super::cms::COMMANDS),
            (c"topk", super::topk::COMMANDS),
            (c"tdigest", super::tdigest::COMMANDS),
        ],
    )?;

    super::events::subscribe(ctx)?;

    // SAFETY: (1); replaces the default INFO callback the module macro
    // registered.
    unsafe { api!(RedisModule_RegisterInfoFunc)(ctx, Some(super::info::info)) };
    log(
        ctx,
        LogLevel::Notice,
        &format!(
            "FerroBloom {} (RedisBloom-compatible, version {})",
            env!("CARGO_PKG_VERSION"),
            crate::MODULE_VERSION
        ),
    );
    Ok(())
}
