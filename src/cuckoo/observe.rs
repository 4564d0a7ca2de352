//! FerroBloom's own Cuckoo filter commands. CF.STATS: how full a filter is,
//! what it answers wrongly, and what its next growth costs; it reads every
//! slot (O(size)). CF.PLAN: what CF.RESERVE would allocate and may grow
//! into, without a key. Replies are maps in RESP3 and flat name/value arrays
//! in RESP2, like CF.INFO.

use std::borrow::Cow;
use std::ffi::CStr;

use ferrobloom_core::cuckoo::plan::{self as cf_plan, CuckooPlan};
use ferrobloom_core::cuckoo::{stats, SizingError};
use ferrobloom_core::{AllocRequest, Refusal, RefusalKind};

use super::{grammar, replies, Cuckoo};
use crate::command::{ArgSource, CommandError, Env, KeylessCommand, Outcome, ReadCommand, Reply};
use crate::guard;

pub struct Stats;

impl ReadCommand for Stats {
    const NAME: &'static CStr = c"cf.stats";
    const ARITY: (usize, usize) = (2, 2);
    type Value = Cuckoo;

    fn read(cuckoo: &Cuckoo, _: &impl ArgSource, env: &impl Env) -> Reply<'static> {
        stats_reply(cuckoo, env)
    }
}

/// `ok`, `warning` when the newest sub-filter's slots are filled past the
/// fill-warning threshold (inserts start to need kick-outs, then a new
/// sub-filter), `alert` past fill-alert when the filter cannot grow
/// (EXPANSION 0 or `cf-max-expansions` reached): inserts will then fail.
fn fill_level(newest_load: f64, can_grow: bool, env: &impl Env) -> &'static CStr {
    let settings = env.settings();
    if !can_grow && newest_load >= settings.fill_alert {
        c"alert"
    } else if newest_load >= settings.fill_warning {
        c"warning"
    } else {
        c"ok"
    }
}

fn stats_reply(cuckoo: &Cuckoo, env: &impl Env) -> Reply<'static> {
    let f = cuckoo.filter();
    let s = stats::stats(f);
    let max_expansions = env.settings().cf_max_expansions;
    let expansions_left = if f.expansion() == 0 {
        0
    } else {
        max_expansions.saturating_sub(f.sub_filter_count())
    };
    let next_bytes = match f.next_sub_filter_buckets() {
        Ok(n) if expansions_left > 0 => n.saturating_mul(u64::from(f.bucket_size())),
        _ => 0,
    };
    let newest_load = s.sub_filters.last().map_or(0.0, |n| n.load);
    let per_sub_filter = s
        .sub_filters
        .iter()
        .map(|sub| {
            Reply::Map(vec![
                (c"buckets", Reply::count(sub.buckets)),
                (c"bytes", Reply::count(sub.bytes)),
                (c"occupied_slots", Reply::count(sub.occupied)),
                (c"load_factor", Reply::Double(sub.load)),
                (c"estimated_fpr", Reply::Double(sub.fpr)),
            ])
        })
        .collect();
    Reply::Map(vec![
        (c"size", Reply::count(f.reported_size())),
        (c"bytes", Reply::count(f.total_bytes())),
        (c"sub_filters", Reply::count(f.sub_filter_count())),
        (c"buckets", Reply::count(f.base_buckets())),
        (c"bucket_size", Reply::count(u64::from(f.bucket_size()))),
        (
            c"max_iterations",
            Reply::count(u64::from(f.max_iterations())),
        ),
        (c"expansion", Reply::count(u64::from(f.expansion()))),
        (c"items", Reply::count(f.items())),
        (c"deletes", Reply::count(f.deletes())),
        (c"slots", Reply::count(s.slots)),
        (c"occupied_slots", Reply::count(s.occupied)),
        (c"load_factor", Reply::Double(s.load)),
        (c"newest_load_factor", Reply::Double(newest_load)),
        (
            c"fill_level",
            Reply::Simple(fill_level(newest_load, expansions_left > 0, env)),
        ),
        (c"estimated_fpr", Reply::Double(s.fpr)),
        (c"expansions_left", Reply::count(expansions_left)),
        (c"next_sub_filter_bytes", Reply::count(next_bytes)),
        // A filter whose CF.LOADCHUNK sequence is incomplete: lookups may
        // answer 0 for items in the chunks still missing.
        (
            c"loading",
            Reply::count(u64::from(cuckoo.loading().is_some())),
        ),
        (
            c"loaded_bytes",
            Reply::count(cuckoo.loading().map_or(f.total_bytes(), |p| p.received())),
        ),
        (c"per_sub_filter", Reply::Array(per_sub_filter)),
    ])
}

/// `CF.PLAN capacity [BUCKETSIZE bs] [MAXITERATIONS mi] [EXPANSION e]`.
pub struct PlanCommand;

impl KeylessCommand for PlanCommand {
    const NAME: &'static CStr = c"cf.plan";

    fn run(args: &impl ArgSource, env: &impl Env) -> Outcome<'static> {
        Outcome::reply(plan_reply(args, env).unwrap_or_else(Reply::Error))
    }
}

/// The first sub-filter (index, 0 = CF.RESERVE's) the memory guard would
/// refuse if the filter were created, then grown, now: the per-filter cap
/// on CF.INFO Size, the server's maxmemory and the machine's memory, each
/// with the bytes the filter would have taken by then.
pub fn guard_refusal(plan: &CuckooPlan, env: &impl Env) -> Option<(usize, Refusal)> {
    let cap = env.settings().max_filter_bytes;
    let mut bytes = 0u64;
    plan.sub_filters.iter().enumerate().find_map(|(i, s)| {
        bytes = bytes.saturating_add(s.bytes);
        let request = AllocRequest {
            bytes,
            filter_size_after: s.size_after,
        };
        guard::check(env.memory(), cap, request)
            .err()
            .map(|r| (i, r))
    })
}

pub(crate) fn refusal_kind(kind: RefusalKind) -> &'static CStr {
    match kind {
        RefusalKind::FilterCap => c"bf.max-filter-bytes",
        RefusalKind::MaxMemory => c"maxmemory",
        RefusalKind::MachineMemory => c"machine-memory",
    }
}

fn plan_reply(args: &impl ArgSource, env: &impl Env) -> Result<Reply<'static>, CommandError> {
    let params = grammar::parse_plan(args)?;
    // CF.PLAN creates nothing: it plans with the live cf-max-expansions.
    let plan = cf_plan::plan(&params, env.settings().cf_max_expansions).map_err(|e| match e {
        // The grammar checked the ranges and the minimum capacity.
        SizingError::TooLarge | SizingError::CapacityTooSmall => replies::CANNOT_CREATE,
        SizingError::BucketSize => replies::BUCKET_SIZE_RANGE,
        SizingError::MaxIterations => replies::MAX_ITERATIONS_RANGE,
        SizingError::Expansion => replies::EXPANSION_RANGE,
    })?;
    let first = *plan.first();
    let expansion = plan.first_expansion;
    let refusal = guard_refusal(&plan, env);
    let bloom = plan.bloom_equivalent();
    let sub_filters = plan
        .sub_filters
        .iter()
        .map(|s| {
            Reply::Map(vec![
                (c"buckets", Reply::count(s.buckets)),
                (c"bytes", Reply::count(s.bytes)),
                (c"size", Reply::count(s.size_after)),
            ])
        })
        .collect();
    let (refuses, refused_at, refused_by, message) = match refusal {
        None => (c"nothing", Reply::Null, Reply::Null, Reply::Null),
        Some((i, r)) => {
            let text = if i == 0 {
                guard::refusal_message(&r, env.memory())
            } else {
                guard::growth_refusal_message(&r, env.memory())
            };
            (
                if i == 0 { c"reserve" } else { c"expansion" },
                Reply::count(i as u64 + 1),
                Reply::Simple(refusal_kind(r.kind)),
                Reply::Bulk(Cow::Owned(text.into_bytes())),
            )
        }
    };
    Ok(Reply::Map(vec![
        (c"capacity", Reply::count(plan.capacity)),
        (c"bucket_size", Reply::count(u64::from(plan.bucket_size))),
        (
            c"max_iterations",
            Reply::count(u64::from(plan.max_iterations)),
        ),
        (c"expansion", Reply::count(u64::from(plan.expansion))),
        (c"buckets", Reply::count(first.buckets)),
        (c"slots", Reply::count(plan.slots())),
        (c"bytes", Reply::count(first.bytes)),
        (c"size", Reply::count(first.size_after)),
        (c"fpr_bound", Reply::Double(plan.fpr_per_sub_filter)),
        (
            c"first_expansion_load",
            expansion.map_or(Reply::Null, |e| Reply::Double(e.load)),
        ),
        (
            c"first_expansion_low_load",
            expansion.map_or(Reply::Null, |e| Reply::Double(e.low_load)),
        ),
        (
            c"first_expansion_items",
            expansion.map_or(Reply::Null, |e| Reply::count(e.items)),
        ),
        (c"max_expansions", Reply::count(plan.max_expansions)),
        (c"expansions", Reply::count(plan.expansions())),
        (c"sub_filters", Reply::Array(sub_filters)),
        (c"worst_bytes", Reply::count(plan.worst_bytes())),
        (c"worst_size", Reply::count(plan.worst_size())),
        (c"worst_fpr_bound", Reply::Double(plan.worst_fpr)),
        // The same capacity and error rate in a (non-scaling) Bloom filter.
        (
            c"bloom_error_rate",
            bloom.map_or(Reply::Null, |b| Reply::Double(b.error)),
        ),
        (
            c"bloom_hashes",
            bloom.map_or(Reply::Null, |b| Reply::count(u64::from(b.hashes))),
        ),
        (
            c"bloom_bytes",
            bloom.map_or(Reply::Null, |b| Reply::count(b.bytes)),
        ),
        (
            c"bloom_size",
            bloom.map_or(Reply::Null, |b| Reply::count(b.size)),
        ),
        (
            c"max_filter_bytes",
            Reply::count(env.settings().max_filter_bytes),
        ),
        (c"guard_refuses", Reply::Simple(refuses)),
        (c"guard_refused_sub_filter", refused_at),
        (c"guard_refused_by", refused_by),
        (c"guard_message", message),
    ]))
}
