//! FerroBloom's own commands: BF.PLAN (sizing before allocation) and
//! BF.STATS (how full a filter is). Replies are maps in RESP3 and flat
//! name/value arrays in RESP2, like BF.INFO.

use std::ffi::CStr;

use ferrobloom_core::bloom::plan::{self, Plan, PlanError};
use ferrobloom_core::bloom::stats;
use ferrobloom_core::{ChainParams, LinkSpec, Policy};

use super::filter::Filter;
use super::grammar;
use super::replies;
use crate::command::{ArgSource, CommandError, Env, KeylessCommand, Outcome, ReadCommand, Reply};

pub(crate) fn policy_name(policy: Policy) -> Reply<'static> {
    Reply::Simple(match policy {
        Policy::Exact => c"exact",
        Policy::Pow2 => c"pow2",
    })
}

fn link_spec(l: &LinkSpec) -> Reply<'static> {
    Reply::Map(vec![
        (c"capacity", Reply::count(l.entries)),
        (c"error", Reply::Double(l.error)),
        (c"hashes", Reply::count(u64::from(l.hashes))),
        (c"bits", Reply::count(l.modulus())),
        (c"bytes", Reply::count(l.bytes)),
    ])
}

fn plan_error(e: PlanError) -> CommandError {
    CommandError::Static(match e {
        PlanError::TooManyLinks => replies::PLAN_TOO_MANY_LINKS,
        PlanError::Sizing(_) => replies::PLAN_TOO_LARGE,
    })
}

pub struct PlanCommand;

impl KeylessCommand for PlanCommand {
    const NAME: &'static CStr = c"bf.plan";

    fn run(args: &impl ArgSource, env: &impl Env) -> Outcome<'static> {
        Outcome::reply(plan_reply(args, env).unwrap_or_else(Reply::Error))
    }
}

fn plan_reply(args: &impl ArgSource, env: &impl Env) -> Result<Reply<'static>, CommandError> {
    // BF.PLAN creates nothing: it plans with the local settings.
    let request = grammar::parse_plan(args, &env.settings().creation_params())?;
    let params = request.params;
    let chosen = plan::plan(&params, request.items).map_err(plan_error)?;
    let other = plan::plan(
        &ChainParams {
            policy: params.policy.other(),
            ..params
        },
        request.items,
    );
    let (other_links, other_bytes, other_size) = match &other {
        Ok(Plan {
            links,
            data_bytes,
            reported_size,
            ..
        }) => (links.len() as u64, *data_bytes, *reported_size),
        Err(_) => (0, 0, 0),
    };
    Ok(Reply::Map(vec![
        (c"policy", policy_name(chosen.policy)),
        (c"items", Reply::count(chosen.items)),
        (
            c"links",
            Reply::Array(chosen.links.iter().map(link_spec).collect()),
        ),
        (c"capacity", Reply::count(chosen.capacity)),
        (c"bytes", Reply::count(chosen.data_bytes)),
        (c"size", Reply::count(chosen.reported_size)),
        (c"refused_items", Reply::count(chosen.refused_items)),
        (c"fpr", Reply::Double(chosen.fpr)),
        (c"other_policy", policy_name(params.policy.other())),
        (c"other_policy_links", Reply::count(other_links)),
        (c"other_policy_bytes", Reply::count(other_bytes)),
        (c"other_policy_size", Reply::count(other_size)),
    ]))
}

pub struct Stats;

impl ReadCommand for Stats {
    const NAME: &'static CStr = c"bf.stats";
    const ARITY: (usize, usize) = (2, 2);
    type Value = Filter;

    fn read(filter: &Filter, _: &impl ArgSource, env: &impl Env) -> Reply<'static> {
        stats_reply(filter, env)
    }
}

fn stats_reply(filter: &Filter, env: &impl Env) -> Reply<'static> {
    let chain = filter.chain();
    let s = stats::stats(chain);
    let settings = env.settings();
    let level = if s.fill >= settings.fill_alert {
        c"alert"
    } else if s.fill >= settings.fill_warning {
        c"warning"
    } else {
        c"ok"
    };
    let per_link = s
        .links
        .iter()
        .map(|l| {
            Reply::Map(vec![
                (c"capacity", Reply::count(l.capacity)),
                (c"items", Reply::count(l.items)),
                (c"bytes", Reply::count(l.bytes)),
                (c"hashes", Reply::count(u64::from(l.hashes))),
                (c"error", Reply::Double(l.error)),
                (c"set_fraction", Reply::Double(l.set_fraction)),
                (c"estimated_fpr", Reply::Double(l.fpr)),
            ])
        })
        .collect();
    Reply::Map(vec![
        (c"capacity", Reply::count(s.capacity)),
        (c"items", Reply::count(s.items)),
        (c"links", Reply::count(s.links.len() as u64)),
        (c"size", Reply::count(s.size)),
        (c"bytes", Reply::count(s.data_bytes)),
        (c"policy", policy_name(s.policy)),
        (c"scaling", Reply::count(u64::from(s.scaling))),
        (
            c"expansion",
            Reply::optional(chain.expansion().map(i64::from)),
        ),
        (c"fill_ratio", Reply::Double(s.fill)),
        (c"newest_fill_ratio", Reply::Double(s.fill_newest)),
        (c"fill_level", Reply::Simple(level)),
        (c"estimated_fpr", Reply::Double(s.estimated_fpr)),
        (c"target_error", Reply::Double(s.target_error)),
        (c"other_policy", policy_name(s.policy.other())),
        (
            c"other_policy_size",
            s.other_policy_size.map_or(Reply::Null, Reply::count),
        ),
        (
            c"pow2_rounding_bytes",
            Reply::count(stats::pow2_rounding_bytes(chain)),
        ),
        // A filter whose LOADCHUNK sequence is incomplete: lookups may
        // answer 0 for items in the chunks still missing.
        (
            c"loading",
            Reply::count(u64::from(filter.loading().is_some())),
        ),
        (
            c"loaded_bytes",
            Reply::count(filter.loading().map_or(s.data_bytes, |p| p.received())),
        ),
        (c"per_link", Reply::Array(per_link)),
    ])
}
