//! FerroBloom's own t-digest commands. TDIGEST.STATS: what a digest holds
//! and the rank error to expect from it now (no compress: the digest as
//! stored). TDIGEST.PLAN: what `TDIGEST.CREATE key COMPRESSION c` would
//! create, what the memory guard would say to it now, and the rank error
//! to expect after `n` observations, without a key. Replies are maps in
//! RESP3 and flat name/value arrays in RESP2, like CMS.STATS / CMS.PLAN.
//!
//! The rank errors are `ferrobloom_core::tdigest::plan`'s bound: the
//! largest share of the observations one centroid may hold at that
//! quantile, a fraction of the observations (docs/sizing.md compares it
//! with measured errors).

use std::ffi::CStr;

use ferrobloom_core::tdigest::digest::CreateError;
use ferrobloom_core::tdigest::{plan, stats};
use ferrobloom_core::AllocRequest;

use super::{replies, TDigestValue};
use crate::command::{
    Absent, ArgSource, CommandError, Env, KeylessCommand, Outcome, ReadCommand, Reply,
};
use crate::guard;

/// What the value holds besides its node array (its box).
const VALUE_BYTES: u64 = std::mem::size_of::<TDigestValue>() as u64;

/// The block jemalloc (Redis' allocator, which the module allocates
/// through) gives for a request of `size` bytes: its size classes are 8,
/// 16, then four per doubling (`2^k + i·2^(k−2)`, at least 16 apart).
/// Measured against `bf_allocated_bytes` (docs/sizing.md).
pub fn jemalloc_size_class(size: u64) -> u64 {
    if size <= 8 {
        return 8;
    }
    if size <= 16 {
        return 16;
    }
    // 2^k < size ≤ 2^(k+1).
    let k = 63 - (size - 1).leading_zeros();
    let spacing = (1u64 << k.saturating_sub(2)).max(16);
    size.div_ceil(spacing).saturating_mul(spacing)
}

/// What a digest of `capacity` nodes takes from the allocator: its node
/// array and the value's box, each at its size class.
pub fn allocated_bytes(capacity: i64) -> u64 {
    jemalloc_size_class(16 * capacity.max(0) as u64) + jemalloc_size_class(VALUE_BYTES)
}

/// `TDIGEST.STATS key`.
pub struct Stats;

impl ReadCommand for Stats {
    const NAME: &'static CStr = c"tdigest.stats";
    const ARITY: (usize, usize) = (2, 2);
    type Value = TDigestValue;

    fn read(v: &TDigestValue, _: &impl ArgSource, _: &impl Env) -> Reply<'static> {
        stats_reply(v)
    }

    /// As the TDIGEST.* reads: `ERR T-Digest: key does not exist`.
    fn absent(key: Absent, _: &impl ArgSource) -> Reply<'static> {
        Reply::Error(match key {
            Absent::Missing => CommandError::Static(replies::KEY_DOES_NOT_EXIST),
            Absent::Other => CommandError::Static(replies::WRONGTYPE),
        })
    }
}

fn stats_reply(v: &TDigestValue) -> Reply<'static> {
    let td = v.digest();
    let st = stats::stats(td);
    let info = td.info();
    let or_null = |x: Option<f64>| x.map_or(Reply::Null, Reply::Double);
    Reply::Map(vec![
        (c"compression", Reply::Integer(info.compression)),
        (c"capacity", Reply::Integer(st.capacity)),
        (c"observations", Reply::Integer(st.observations)),
        (c"merged_nodes", Reply::count(st.merged_nodes as u64)),
        (c"unmerged_nodes", Reply::count(st.unmerged_nodes as u64)),
        (c"fill", Reply::Double(st.fill)),
        (c"heaviest_centroid", Reply::Integer(st.heaviest_centroid)),
        (c"min", or_null(st.min)),
        (c"max", or_null(st.max)),
        (c"bytes", Reply::count(v.node_bytes())),
        (c"allocated", Reply::count(allocated_bytes(st.capacity))),
        (c"memory_usage", Reply::Integer(st.memory_usage)),
        (c"median_error_bound", Reply::Double(st.rank_error_median)),
        (c"tail_error_bound", Reply::Double(st.rank_error_tail)),
    ])
}

/// `TDIGEST.PLAN compression [OBSERVATIONS n]`.
pub struct PlanCommand;

impl KeylessCommand for PlanCommand {
    const NAME: &'static CStr = c"tdigest.plan";

    fn run(args: &impl ArgSource, env: &impl Env) -> Outcome<'static> {
        Outcome::reply(plan_reply(args, env).unwrap_or_else(Reply::Error))
    }
}

/// The observations planned for when OBSERVATIONS is not given.
pub const DEFAULT_OBSERVATIONS: u64 = 1_000_000;

/// TDIGEST.PLAN's own errors, worded as CMS.PLAN's.
pub const PLAN_UNKNOWN_ARGUMENT: &CStr = c"ERR unknown argument (expected OBSERVATIONS)";
pub const PLAN_BAD_OBSERVATIONS: &CStr = c"ERR bad observations (expected an integer >= 0)";

/// A parsed TDIGEST.PLAN.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlanRequest {
    pub compression: i64,
    pub observations: u64,
}

/// The compression with TDIGEST.CREATE's checks and texts, then
/// `OBSERVATIONS n` (any case).
pub fn parse_plan(args: &impl ArgSource) -> Result<PlanRequest, CommandError> {
    if args.count() < 2 {
        return Err(CommandError::Arity);
    }
    let compression = match replies::parse_integer(args.arg(1)) {
        None => return Err(replies::PARSING_COMPRESSION.into()),
        Some(c) if c <= 0 => return Err(replies::COMPRESSION_NOT_POSITIVE.into()),
        Some(c) => c,
    };
    let mut observations = DEFAULT_OBSERVATIONS;
    let mut i = 2;
    while i < args.count() {
        if !args.arg(i).eq_ignore_ascii_case(b"OBSERVATIONS") {
            return Err(CommandError::Static(PLAN_UNKNOWN_ARGUMENT));
        }
        if i + 1 >= args.count() {
            return Err(CommandError::Arity);
        }
        observations = args
            .int(i + 1)
            .filter(|&n| n >= 0)
            .ok_or(CommandError::Static(PLAN_BAD_OBSERVATIONS))? as u64;
        i += 2;
    }
    Ok(PlanRequest {
        compression,
        observations,
    })
}

/// What the memory guard would answer TDIGEST.CREATE with this plan now,
/// with the live settings: `ok`, or the limit it would cross
/// (`bf.max-filter-bytes`, `maxmemory`, `machine-memory`, as CMS.PLAN and
/// CF.PLAN name them).
pub fn guard_verdict(p: &plan::TDigestPlan, env: &impl Env) -> &'static CStr {
    let request = AllocRequest {
        bytes: 16 * p.capacity as u64,
        filter_size_after: p.memory_usage as u64,
    };
    match guard::check(env.memory(), env.settings().max_filter_bytes, request) {
        Ok(()) => c"ok",
        Err(refusal) => crate::cuckoo::observe::refusal_kind(refusal.kind),
    }
}

fn plan_reply(args: &impl ArgSource, env: &impl Env) -> Result<Reply<'static>, CommandError> {
    let request = parse_plan(args)?;
    let p = plan::plan(request.compression as f64, request.observations).map_err(|e| match e {
        // A capacity past 32 bits: TDIGEST.CREATE's answer.
        CreateError::CapacityOverflow => CommandError::from(replies::ALLOCATION_FAILED),
        _ => replies::COMPRESSION_NOT_POSITIVE.into(),
    })?;
    let bytes = 16 * p.capacity as u64;
    Ok(Reply::Map(vec![
        (c"compression", Reply::Integer(request.compression)),
        (c"capacity", Reply::Integer(p.capacity)),
        (c"observations", Reply::count(p.observations)),
        (c"bytes", Reply::count(bytes)),
        (c"allocated", Reply::count(allocated_bytes(p.capacity))),
        (c"memory_usage", Reply::Integer(p.memory_usage)),
        (c"guard", Reply::Simple(guard_verdict(&p, env))),
        (c"median_error_bound", Reply::Double(p.rank_error_median)),
        (c"tail_error_bound", Reply::Double(p.rank_error_tail)),
    ]))
}
