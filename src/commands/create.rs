//! Creating a filter in an empty key, shared by BF.RESERVE, BF.INSERT,
//! the auto-creating adds and BF.LOADCHUNK.

use std::ffi::CStr;

use ferrobloom_core::{AllocGuard, AllocRequest, Chain, ChainParams, CreateError, Refusal};

use crate::config;
use crate::ffi::{Ctx, Key};
use crate::filter::Filter;
use crate::guard::{self, CommandGuard, LoadGuard};
use crate::replies;

/// A reply to send instead of going on.
pub enum Failure {
    Static(&'static CStr),
    /// The memory guard refused: the message names the numbers.
    Refused(String),
}

impl Failure {
    pub fn send(&self, ctx: &Ctx) {
        match self {
            Failure::Static(text) => ctx.reply_error(text),
            Failure::Refused(text) => ctx.reply_error_text(text),
        }
    }
}

impl From<&'static CStr> for Failure {
    fn from(text: &'static CStr) -> Self {
        Failure::Static(text)
    }
}

/// The guard of the running command. Whether the command comes from a
/// client or from replication/loading is only looked up when an allocation
/// is actually requested, so adds that allocate nothing pay nothing.
pub struct Guard {
    ctx: *mut redis_module::raw::RedisModuleCtx,
}

impl AllocGuard for Guard {
    fn admit(&self, request: AllocRequest) -> Result<(), Refusal> {
        if crate::ffi::is_replicated_or_loading(self.ctx) {
            LoadGuard { ctx: self.ctx }.admit(request)
        } else {
            CommandGuard { ctx: self.ctx }.admit(request)
        }
    }
}

/// The guard for this command: clients are refused what does not fit;
/// replication and AOF/RDB loading never are (losing data would be worse).
pub fn guard_for(ctx: &Ctx) -> Guard {
    Guard { ctx: ctx.as_ptr() }
}

/// Creates a filter with `params` in the empty key `key`.
pub fn create<'k>(
    ctx: &Ctx,
    key: &'k mut Key<'_>,
    params: &ChainParams,
) -> Result<&'k mut Filter, Failure> {
    let chain = Chain::new(params, &guard_for(ctx)).map_err(|e| match e {
        CreateError::Refused(refusal) => {
            Failure::Refused(guard::refusal_message("could not create filter", &refusal))
        }
        CreateError::Sizing(_) | CreateError::Alloc(_) => {
            Failure::Static(replies::COULD_NOT_CREATE)
        }
    })?;
    install(key, Filter::new(chain))
}

/// Stores a new filter in the empty key.
pub fn install<'k>(key: &'k mut Key<'_>, filter: Box<Filter>) -> Result<&'k mut Filter, Failure> {
    key.set_filter(filter)
        .ok_or(Failure::Static(replies::COULD_NOT_CREATE))
}

/// The parameters auto-created filters get (BF.ADD, BF.MADD).
pub fn default_params() -> ChainParams {
    let s = config::settings();
    ChainParams {
        capacity: s.initial_size,
        error: s.error_rate,
        growth: if s.expansion == 0 { 2 } else { s.expansion },
        nonscaling: s.expansion == 0,
        policy: s.policy,
    }
}
