//! Creating a filter in an empty key, shared by BF.RESERVE, BF.INSERT,
//! the auto-creating adds and BF.LOADCHUNK.

use std::ffi::CStr;

use ferrobloom_core::{AllocGuard, AllocRequest, Chain, ChainParams, CreateError, Refusal};

use crate::ffi::{Ctx, Key};
use crate::filter::Filter;
use crate::grammar::Defaults;
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
pub struct Guard<'a> {
    ctx: *mut redis_module::raw::RedisModuleCtx,
    /// The key the memory is for, named in the warning of a load.
    key: &'a [u8],
}

impl AllocGuard for Guard<'_> {
    fn admit(&self, request: AllocRequest) -> Result<(), Refusal> {
        if crate::ffi::is_replicated_or_loading(self.ctx) {
            LoadGuard {
                ctx: self.ctx,
                key: self.key,
            }
            .admit(request)
        } else {
            CommandGuard { ctx: self.ctx }.admit(request)
        }
    }
}

/// The guard for this command: clients are refused what does not fit;
/// replication and AOF/RDB loading never are (losing data would be worse).
pub fn guard_for<'a>(ctx: &Ctx, key: &'a [u8]) -> Guard<'a> {
    Guard {
        ctx: ctx.as_ptr(),
        key,
    }
}

/// Creates a filter with `params` in the empty key `key`.
pub fn create<'k>(
    ctx: &Ctx,
    key: &'k mut Key<'_>,
    name: &[u8],
    params: &ChainParams,
) -> Result<&'k mut Filter, Failure> {
    let chain = Chain::new(params, &guard_for(ctx, name)).map_err(|e| match e {
        CreateError::Refused(refusal) => Failure::Refused(guard::refusal_message(&refusal)),
        CreateError::Alloc(e) => Failure::Refused(guard::allocation_failed_message(e.bytes)),
        CreateError::Sizing(_) => Failure::Static(replies::COULD_NOT_CREATE),
    })?;
    install(key, Filter::new(chain))
}

/// Stores a new filter in the empty key.
pub fn install<'k>(key: &'k mut Key<'_>, filter: Box<Filter>) -> Result<&'k mut Filter, Failure> {
    key.set_filter(filter)
        .ok_or(Failure::Static(replies::COULD_NOT_CREATE))
}

/// The parameters auto-created filters get (BF.ADD, BF.MADD, and a BF.INSERT
/// without options): `defaults`, with expansion 0 meaning non-scaling.
pub fn auto_params(defaults: &Defaults) -> ChainParams {
    ChainParams {
        capacity: defaults.capacity,
        error: defaults.error_rate,
        growth: if defaults.expansion == 0 {
            2
        } else {
            defaults.expansion
        },
        nonscaling: defaults.expansion == 0,
        policy: defaults.policy,
    }
}
