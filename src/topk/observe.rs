//! FerroBloom's own Top-K commands. TOPK.STATS: what a sketch holds and
//! lists, and whether its listed counts are above the count its width,
//! depth and decay track reliably at what the sketch has counted (it reads
//! every bucket: O(width·depth + k)). TOPK.PLAN: what TOPK.RESERVE would
//! create, and the smallest count it would track reliably in a stream of a
//! given total, without a key. Replies are maps in RESP3 and flat
//! name/value arrays in RESP2, like TOPK.INFO.

use std::ffi::CStr;

use ferrobloom_core::topk::plan::{
    self as topk_plan, min_reliable_count, RELIABLE_DELTA, RELIABLE_ERROR,
};
use ferrobloom_core::topk::sizing::{decay_from_arg, depth_from_arg, k_from_arg, width_from_arg};
use ferrobloom_core::topk::stats::stats;
use ferrobloom_core::topk::{ParamError, Params};
use ferrobloom_core::AllocRequest;

use super::{replies, TopKey};
use crate::command::{
    Absent, ArgSource, CommandError, Env, KeylessCommand, Outcome, ReadCommand, Reply,
};
use crate::guard;

pub struct Stats;

impl ReadCommand for Stats {
    const NAME: &'static CStr = c"topk.stats";
    const ARITY: (usize, usize) = (2, 2);
    type Value = TopKey;

    fn read(s: &TopKey, _: &impl ArgSource, _: &impl Env) -> Reply<'static> {
        stats_reply(s)
    }

    fn absent(key: Absent, _: &impl ArgSource) -> Reply<'static> {
        Reply::Error(CommandError::Static(match key {
            Absent::Missing => replies::KEY_DOES_NOT_EXIST,
            Absent::Other => replies::WRONGTYPE,
        }))
    }
}

/// How the listed counts stand against the reliable count: `reliable`
/// when every listed count is at or above it (an empty list too),
/// `partial` when some are, `unreliable` when none is: the list may then
/// miss heavier items and its counts may be far below the truth.
pub fn list_reliability(listed: u32, reliable_listed: u32) -> &'static CStr {
    if reliable_listed == listed {
        c"reliable"
    } else if reliable_listed > 0 {
        c"partial"
    } else {
        c"unreliable"
    }
}

fn stats_reply(key: &TopKey) -> Reply<'static> {
    let s = key.sketch();
    let st = stats(s);
    let reliable = min_reliable_count(
        st.width,
        st.depth,
        st.decay,
        st.counted,
        RELIABLE_ERROR,
        RELIABLE_DELTA,
    );
    let reliable_listed = s
        .heap()
        .iter()
        .filter(|h| h.count() > 0 && u64::from(h.count()) >= reliable)
        .count() as u32;
    Reply::Map(vec![
        (c"k", Reply::count(u64::from(st.k))),
        (c"width", Reply::count(u64::from(st.width))),
        (c"depth", Reply::count(u64::from(st.depth))),
        (c"decay", Reply::Double(st.decay)),
        (c"listed", Reply::count(u64::from(st.listed))),
        (
            c"smallest_listed_count",
            Reply::count(u64::from(st.min_listed_count)),
        ),
        (
            c"largest_listed_count",
            Reply::count(u64::from(st.max_listed_count)),
        ),
        (c"counted", Reply::count(st.counted)),
        (c"bytes", Reply::count(s.allocated_bytes())),
        (c"memory_usage", Reply::count(s.memory_usage())),
        (c"occupied_buckets", Reply::count(st.occupied_buckets)),
        (c"occupancy", Reply::Double(st.occupancy)),
        (c"error", Reply::Double(RELIABLE_ERROR)),
        (c"confidence", Reply::Double(1.0 - RELIABLE_DELTA)),
        (c"min_reliable_count", Reply::count(reliable)),
        (c"reliable_listed", Reply::count(u64::from(reliable_listed))),
        (
            c"list_reliability",
            Reply::Simple(list_reliability(st.listed, reliable_listed)),
        ),
    ])
}

/// `TOPK.PLAN k [width depth decay] [TOTAL n] [ITEMLEN bytes]`.
pub struct PlanCommand;

impl KeylessCommand for PlanCommand {
    const NAME: &'static CStr = c"topk.plan";

    fn run(args: &impl ArgSource, env: &impl Env) -> Outcome<'static> {
        Outcome::reply(plan_reply(args, env).unwrap_or_else(Reply::Error))
    }
}

/// TOPK.PLAN's own errors, worded as CMS.PLAN's.
pub const PLAN_UNKNOWN_ARGUMENT: &CStr = c"ERR unknown argument (expected TOTAL or ITEMLEN)";
pub const PLAN_BAD_TOTAL: &CStr = c"ERR bad total (expected an integer >= 0)";
pub const PLAN_BAD_ITEMLEN: &CStr = c"ERR bad item length (expected an integer >= 0)";

/// A parsed TOPK.PLAN.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlanRequest {
    pub params: Params,
    /// The stream's expected total count (0: not given).
    pub total: u64,
    /// The mean item length, for the bytes of a full list (0: not given).
    pub item_len: u64,
}

fn is_option(word: &[u8]) -> bool {
    word.eq_ignore_ascii_case(b"TOTAL") || word.eq_ignore_ascii_case(b"ITEMLEN")
}

/// TOPK.RESERVE's numbers after the command name, with its checks, texts
/// and order (k, then width, depth and decay when the word after k is no
/// option), then `TOTAL n` and `ITEMLEN bytes` in any order and case.
pub fn parse_plan(args: &impl ArgSource) -> Result<PlanRequest, CommandError> {
    if args.count() < 2 {
        return Err(CommandError::Arity);
    }
    let bad = |e| CommandError::Static(replies::param_error(e));
    let int = |i: usize, e| args.int(i).ok_or(bad(e));
    let k = k_from_arg(int(1, ParamError::K)?).map_err(bad)?;
    let mut params = Params::with_defaults(k);
    let mut i = 2;
    if args.count() > 2 && !is_option(args.arg(2)) {
        if args.count() < 5 {
            return Err(CommandError::Arity);
        }
        params.width = width_from_arg(int(2, ParamError::Width)?).map_err(bad)?;
        params.depth = depth_from_arg(int(3, ParamError::Depth)?).map_err(bad)?;
        let decay = args.double(4).ok_or(bad(ParamError::Decay))?;
        params.decay = decay_from_arg(decay).map_err(bad)?;
        i = 5;
    }
    let mut request = PlanRequest {
        params,
        total: 0,
        item_len: 0,
    };
    while i < args.count() {
        let word = args.arg(i);
        let (slot, text) = if word.eq_ignore_ascii_case(b"TOTAL") {
            (&mut request.total, PLAN_BAD_TOTAL)
        } else if word.eq_ignore_ascii_case(b"ITEMLEN") {
            (&mut request.item_len, PLAN_BAD_ITEMLEN)
        } else {
            return Err(CommandError::Static(PLAN_UNKNOWN_ARGUMENT));
        };
        if i + 1 >= args.count() {
            return Err(CommandError::Arity);
        }
        *slot = args
            .int(i + 1)
            .filter(|&n| n >= 0)
            .ok_or(CommandError::Static(text))? as u64;
        i += 2;
    }
    Ok(request)
}

/// What the memory guard would answer TOPK.RESERVE of this size now, with
/// the live settings: `ok`, or the limit it would cross
/// (`bf.max-filter-bytes`, `maxmemory`, `machine-memory`).
pub fn guard_verdict(plan: &topk_plan::Plan, env: &impl Env) -> &'static CStr {
    let request = AllocRequest {
        bytes: plan.data_bytes,
        filter_size_after: plan.reported_bytes,
    };
    match guard::check(env.memory(), env.settings().max_filter_bytes, request) {
        Ok(()) => c"ok",
        Err(refusal) => crate::cuckoo::observe::refusal_kind(refusal.kind),
    }
}

fn plan_reply(args: &impl ArgSource, env: &impl Env) -> Result<Reply<'static>, CommandError> {
    let request = parse_plan(args)?;
    let p = request.params;
    // Buckets beyond the address space: TOPK.RESERVE's reply for them.
    let plan = topk_plan::plan(p, request.item_len, request.total)
        .ok_or(CommandError::Static(replies::INSUFFICIENT_MEMORY))?;
    Ok(Reply::Map(vec![
        (c"k", Reply::count(u64::from(p.k))),
        (c"width", Reply::count(u64::from(p.width))),
        (c"depth", Reply::count(u64::from(p.depth))),
        (c"decay", Reply::Double(p.decay)),
        (c"total", Reply::count(request.total)),
        (c"item_len", Reply::count(request.item_len)),
        (c"memory_usage", Reply::count(plan.reported_bytes)),
        (c"bytes", Reply::count(plan.data_bytes)),
        (c"allocated_bytes", Reply::count(plan.allocated_bytes)),
        (c"full_bytes", Reply::count(plan.full_bytes)),
        (c"error", Reply::Double(RELIABLE_ERROR)),
        (c"confidence", Reply::Double(1.0 - RELIABLE_DELTA)),
        (
            c"min_reliable_count",
            plan.min_reliable_count.map_or(Reply::Null, Reply::count),
        ),
        (c"guard", Reply::Simple(guard_verdict(&plan, env))),
    ]))
}
