//! The server as the command layer's [`Env`]: settings, where a call comes
//! from, and the memory readings of the guard.

use std::ffi::c_int;

use redis_module::raw::{self, RedisModuleCtx};

use super::context::Ctx;
use super::{api, log, LogLevel};
use crate::command::Env;
use crate::config::{self, Settings};
use crate::guard::{self, Budget, ServerMemory};

/// The memory readings, asked from the server through `ctx` (or none: a
/// callback without a context).
pub struct ServerInfo {
    ctx: *mut RedisModuleCtx,
}

/// `used_memory` and `maxmemory` of INFO memory.
fn server_memory(ctx: *mut RedisModuleCtx) -> Option<(u64, u64)> {
    // SAFETY: (1), (2); a null ctx is accepted (the data is then not
    // auto-freed, and is freed below with the same null ctx); the fields
    // are read before the data is freed.
    unsafe {
        let info = api!(RedisModule_GetServerInfo)(ctx, c"memory".as_ptr());
        if info.is_null() {
            return None;
        }
        let mut err: c_int = 0;
        let used =
            api!(RedisModule_ServerInfoGetFieldUnsigned)(info, c"used_memory".as_ptr(), &mut err);
        let used_ok = err == 0;
        let max =
            api!(RedisModule_ServerInfoGetFieldUnsigned)(info, c"maxmemory".as_ptr(), &mut err);
        let max_ok = err == 0;
        api!(RedisModule_FreeServerInfo)(ctx, info);
        (used_ok && max_ok).then_some((used, max))
    }
}

impl ServerMemory for ServerInfo {
    fn maxmemory_state(&self) -> Option<(u64, u64)> {
        // SAFETY: (1). The ratio is 0 when no maxmemory is set, which spares
        // building the INFO data then.
        let ratio = unsafe { api!(RedisModule_GetUsedMemoryRatio)() };
        if ratio <= 0.0 {
            return None;
        }
        server_memory(self.ctx).filter(|&(_, max)| max > 0)
    }

    fn used_memory(&self) -> Option<u64> {
        guard::cached_used_memory(|| server_memory(self.ctx).map(|(used, _)| used))
    }

    fn budget(&self) -> Option<Budget> {
        guard::budget()
    }
}

/// The server as a command or a data type callback sees it. A command
/// has its context ([`CommandEnv`]); a data type callback (RDB load, COPY)
/// has none ([`CallbackEnv`]), so the client that sent the command (COPY)
/// is unknown and where the call comes from is told by the server's state
/// instead (see [`ServerEnv::replicated_or_loading`]).
pub struct ServerEnv<'c> {
    ctx: Option<&'c Ctx>,
    memory: ServerInfo,
}

/// The environment of a running command.
pub type CommandEnv<'c> = ServerEnv<'c>;

/// The environment of a data type callback.
pub type CallbackEnv = ServerEnv<'static>;

impl<'c> ServerEnv<'c> {
    pub fn new(ctx: &'c Ctx) -> Self {
        ServerEnv {
            ctx: Some(ctx),
            memory: ServerInfo { ctx: ctx.as_ptr() },
        }
    }
}

impl ServerEnv<'_> {
    /// The context's flags, or the server's in a callback.
    fn flags(&self) -> c_int {
        match self.ctx {
            Some(ctx) => ctx.flags(),
            // SAFETY: (1); a null context is accepted since Redis 6.2
            // (only the client-specific flags need one).
            None => unsafe { api!(RedisModule_GetContextFlags)(std::ptr::null_mut()) },
        }
    }
}

impl ServerEnv<'static> {
    pub fn without_context() -> Self {
        ServerEnv {
            ctx: None,
            memory: ServerInfo {
                ctx: std::ptr::null_mut(),
            },
        }
    }
}

impl Env for ServerEnv<'_> {
    fn settings(&self) -> Settings {
        config::settings()
    }
    /// A command knows from its context. A callback: while the server
    /// loads (an AOF replaying a COPY, an RDB), or while it is a replica: a
    /// read-only replica takes writes from its master alone, and on a
    /// writable one the master's COPY cannot be told from a client's (no
    /// context names the client), so neither is refused: refusing the
    /// master's would leave the replica without a key its master has. A
    /// master's own clients are refused what does not fit.
    fn replicated_or_loading(&self) -> bool {
        if let Some(ctx) = self.ctx {
            return ctx.is_replicated_or_loading();
        }
        // SAFETY: (1); a null context is accepted since Redis 6.2 (only
        // the client-specific flags need one): the flags read are the
        // server's.
        let flags = unsafe { api!(RedisModule_GetContextFlags)(std::ptr::null_mut()) };
        flags
            & (raw::REDISMODULE_CTX_FLAGS_LOADING as c_int
                | raw::REDISMODULE_CTX_FLAGS_SLAVE as c_int)
            != 0
    }
    /// A command knows from its context; a callback from the server's
    /// state.
    fn loading(&self) -> bool {
        self.flags() & raw::REDISMODULE_CTX_FLAGS_LOADING as c_int != 0
    }
    /// The server's role, also in a callback (a save on a fork child reads
    /// the parent's role at the fork).
    fn is_master(&self) -> bool {
        self.flags() & raw::REDISMODULE_CTX_FLAGS_MASTER as c_int != 0
    }
    /// The running client's user, by RedisModule_ACLCheckCommandPermissions;
    /// None in a callback, for the master link or a load, when the server
    /// names no user (a module's call) or lacks the calls.
    fn user_may_run(&self, argv: &[&[u8]]) -> Option<bool> {
        let ctx = self.ctx?;
        if ctx.is_replicated_or_loading() {
            return None;
        }
        ctx.user_may_run(argv)
    }
    /// Only a command has a client.
    fn client_on_read_only_replica(&self) -> bool {
        self.ctx
            .is_some_and(|ctx| ctx.is_read_only_replica() && !ctx.is_replicated_or_loading())
    }
    fn memory(&self) -> &dyn ServerMemory {
        &self.memory
    }
    /// Logged without the module's name, as the callbacks' warnings are.
    fn log_warning(&self, message: &str) {
        log(std::ptr::null_mut(), LogLevel::Warning, message);
    }
    fn now_ms(&self) -> u64 {
        milliseconds()
    }
}

/// The server's clock (RedisModule_Milliseconds: Unix time in ms).
fn milliseconds() -> u64 {
    // SAFETY: (1); the call reads the clock and touches no module state.
    let ms = unsafe { api!(RedisModule_Milliseconds)() };
    u64::try_from(ms).unwrap_or(0)
}
