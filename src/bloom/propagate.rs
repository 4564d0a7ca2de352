//! What the write commands propagate to replicas and the AOF: the command
//! as received when a replica reading it does exactly what this server did,
//! otherwise a rewrite with every creation parameter spelled out (in
//! RedisBloom's grammar, so RedisBloom replicas understand it too), and
//! nothing when nothing changed.

use ferrobloom_core::{AddOutcome, ChainParams, Policy};

use super::create::replica_rule;
use super::grammar::{self, Reserve};
use crate::command::{Applied, ArgSource, ItemOutcome, Propagation, RewriteArg};

/// The key is the commands' first argument.
const KEY: RewriteArg = RewriteArg::Input(1);

/// What an add did, as the propagation rule sees it
/// ([`crate::command::Applied`]): a full non-scaling filter and a refused
/// or failed scale-out change nothing.
#[inline(always)]
pub fn item(outcome: AddOutcome) -> ItemOutcome {
    match outcome {
        AddOutcome::Added => ItemOutcome::Changed,
        AddOutcome::Present => ItemOutcome::Unchanged,
        AddOutcome::Full | AddOutcome::ScaleFailed | AddOutcome::ScaleRefused(_) => {
            ItemOutcome::Failed
        }
    }
}

/// The creation options only FerroBloom has: POLICY appears for pow2
/// filters, which only FerroBloom makes.
fn creation_tokens(params: &ChainParams, out: &mut Vec<RewriteArg>) {
    if params.policy == Policy::Pow2 {
        out.push(RewriteArg::text("POLICY"));
        out.push(RewriteArg::text("pow2"));
    }
}

/// A filter creation with items, as a BF.INSERT with every parameter
/// explicit, so a replica or an AOF replay with other settings creates the
/// same filter.
pub fn creating_insert(params: &ChainParams, items: impl Iterator<Item = usize>) -> Propagation {
    let mut args = vec![
        KEY,
        RewriteArg::text("CAPACITY"),
        RewriteArg::text(params.capacity),
        RewriteArg::text("ERROR"),
        RewriteArg::text(params.error),
        RewriteArg::text("EXPANSION"),
        RewriteArg::text(params.growth),
    ];
    if params.nonscaling {
        args.push(RewriteArg::text("NONSCALING"));
    }
    creation_tokens(params, &mut args);
    args.push(RewriteArg::text("ITEMS"));
    args.extend(items.map(RewriteArg::Input));
    Propagation::Rewrite {
        command: c"BF.INSERT",
        args,
    }
}

/// A creation without items, as a BF.RESERVE with every parameter explicit.
pub fn creating_reserve(params: &ChainParams) -> Propagation {
    let mut args = vec![
        KEY,
        RewriteArg::text(params.error),
        RewriteArg::text(params.capacity),
    ];
    if params.nonscaling {
        args.push(RewriteArg::text("NONSCALING"));
    } else {
        args.push(RewriteArg::text("EXPANSION"));
        args.push(RewriteArg::text(params.growth));
    }
    creation_tokens(params, &mut args);
    Propagation::Rewrite {
        command: c"BF.RESERVE",
        args,
    }
}

/// A BF.RESERVE that created its filter with `defaults` where it named
/// nothing: verbatim when a replica would read the same parameters from
/// it, otherwise spelled out. BF.RESERVE names its error rate and capacity,
/// so only the expansion and the policy can come from defaults: when ours
/// are a replica's, the command reads the same there (the common case,
/// which spares a second parse).
pub fn reserve(args: &impl ArgSource, parsed: &Reserve, defaults: &ChainParams) -> Propagation {
    let replica = replica_rule(defaults);
    if *defaults == replica || grammar::parse_reserve(args, &replica).as_ref() == Ok(parsed) {
        Propagation::Verbatim
    } else {
        creating_reserve(&parsed.params)
    }
}

/// An add command (BF.ADD, BF.MADD, BF.INSERT) with items from argument
/// `from` on. Without a failure: the command as received, or spelled out
/// when it created the filter with `created_with` that a replica may not
/// choose. After a failure: only what changed the filter (see [`Applied`]),
/// or nothing.
#[inline]
pub fn adds(
    argc: usize,
    from: usize,
    applied: &Applied,
    created_with: Option<&ChainParams>,
) -> Propagation {
    match (applied.first_failure, created_with) {
        (None, None) => Propagation::Verbatim,
        _ => spelled_adds(argc, from, applied, created_with),
    }
}

/// [`adds`] after a creation or a failure: a rewrite, or nothing.
#[inline(never)]
fn spelled_adds(
    argc: usize,
    from: usize,
    applied: &Applied,
    created_with: Option<&ChainParams>,
) -> Propagation {
    if applied.first_failure.is_none() {
        return match created_with {
            Some(params) => creating_insert(params, from..argc),
            None => Propagation::Verbatim,
        };
    }
    match created_with {
        Some(params) => {
            let items = applied.items(from, argc);
            if items.is_empty() {
                creating_reserve(params)
            } else {
                creating_insert(params, items.into_iter())
            }
        }
        // The key, then the items applied.
        None => applied.propagation(c"BF.MADD", 1..2, from, argc),
    }
}

/// Whether a replica reading this BF.INSERT would create `params` whatever
/// its settings: it names every parameter that settings could decide.
pub fn insert_is_explicit(args: &impl ArgSource, params: &ChainParams) -> bool {
    let settings = |error, capacity| ChainParams {
        capacity,
        error,
        growth: 2,
        nonscaling: false,
        policy: Policy::Exact,
    };
    [settings(0.01, 100), settings(0.02, 101)]
        .iter()
        .all(|d| grammar::parse_insert(args, d).map(|p| p.params) == Ok(*params))
}
