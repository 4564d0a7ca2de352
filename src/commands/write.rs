//! BF.RESERVE, BF.ADD, BF.MADD, BF.INSERT.

use ferrobloom_core::{AddOutcome, ChainParams, Policy};

use super::arity_error;
use super::create::{self, Failure, Guard};
use crate::config;
use crate::ffi::{command_handler, Args, Ctx, Key, KeyKind, RString, ReplicaArg};
use crate::filter::Filter;
use crate::grammar::{self, ArgError, Defaults};
use crate::notify::Effects;
use crate::{guard, replies};

command_handler!(reserve => reserve_command);
command_handler!(add => add_command);
command_handler!(madd => madd_command);
command_handler!(insert => insert_command);

fn send_arg_error(ctx: &Ctx, e: ArgError, arity: &'static std::ffi::CStr) {
    match e {
        ArgError::Arity => ctx.reply_error(arity),
        ArgError::Reply(text) => ctx.reply_error(text),
    }
}

/// Creates a filter, recording the creation or the guard's refusal.
fn create_in<'k>(
    ctx: &Ctx,
    key: &'k mut Key<'_>,
    name: &[u8],
    params: &ChainParams,
    effects: &mut Effects,
) -> Result<&'k mut Filter, Failure> {
    let result = create::create(ctx, key, name, params);
    match &result {
        Ok(_) => effects.created = true,
        Err(Failure::Refused(_)) => effects.refused = true,
        Err(_) => {}
    }
    result
}

/// What a command that does not say otherwise gets when it comes from a
/// master or an AOF: RedisBloom's fixed expansion (2) and the exact policy
/// (the only one RedisBloom creates). Error rate and capacity come from the
/// local settings, as in RedisBloom. FerroBloom masters spell out whatever
/// their own settings decided (see `replicate_creation`), so replicas end
/// identical whatever their settings.
fn replica_defaults(error_rate: f64, capacity: u64) -> Defaults {
    Defaults {
        error_rate,
        capacity,
        expansion: 2,
        policy: Policy::Exact,
    }
}

/// The defaults for this command: the local settings for a client's, the
/// replica rule for one from a master or an AOF (so that a RedisBloom AOF or
/// master stream replays into the filters it made, whatever this server's
/// load arguments say).
fn command_defaults(ctx: &Ctx) -> Defaults {
    let local = config::settings().defaults();
    if ctx.is_replicated_or_loading() {
        replica_defaults(local.error_rate, local.capacity)
    } else {
        local
    }
}

/// The creation options spelled out: what makes a replica create the same
/// filter whatever its settings.
fn creation_tokens(params: &ChainParams, out: &mut Vec<ReplicaArg<'_>>) {
    if params.policy == Policy::Pow2 {
        out.push(ReplicaArg::Text("POLICY".into()));
        out.push(ReplicaArg::Text("pow2".into()));
    }
}

/// Propagates a filter creation by an add (BF.ADD, BF.MADD, or a BF.INSERT
/// relying on settings) as a BF.INSERT with every parameter explicit, so a
/// replica or an AOF replay with other settings creates the same filter.
/// RedisBloom's grammar, so RedisBloom replicas understand it too (POLICY
/// only appears for pow2 filters, which only FerroBloom makes).
fn replicate_creation<'a>(
    ctx: &Ctx,
    key: RString<'a>,
    params: &ChainParams,
    items: impl Iterator<Item = RString<'a>>,
) {
    let mut argv = vec![
        ReplicaArg::Arg(key),
        ReplicaArg::Text("CAPACITY".into()),
        ReplicaArg::Text(params.capacity.to_string()),
        ReplicaArg::Text("ERROR".into()),
        ReplicaArg::Text(params.error.to_string()),
        ReplicaArg::Text("EXPANSION".into()),
        ReplicaArg::Text(params.growth.to_string()),
    ];
    if params.nonscaling {
        argv.push(ReplicaArg::Text("NONSCALING".into()));
    }
    creation_tokens(params, &mut argv);
    argv.push(ReplicaArg::Text("ITEMS".into()));
    argv.extend(items.map(ReplicaArg::Arg));
    ctx.replicate(c"BF.INSERT", &argv);
}

/// Propagates a creation without items as a BF.RESERVE with every
/// parameter explicit.
fn replicate_reserve(ctx: &Ctx, key: RString<'_>, params: &ChainParams) {
    let mut argv = vec![
        ReplicaArg::Arg(key),
        ReplicaArg::Text(params.error.to_string()),
        ReplicaArg::Text(params.capacity.to_string()),
    ];
    if params.nonscaling {
        argv.push(ReplicaArg::Text("NONSCALING".into()));
    } else {
        argv.push(ReplicaArg::Text("EXPANSION".into()));
        argv.push(ReplicaArg::Text(params.growth.to_string()));
    }
    creation_tokens(params, &mut argv);
    ctx.replicate(c"BF.RESERVE", &argv);
}

fn reserve_command(ctx: &Ctx, args: Args<'_>) {
    let defaults = command_defaults(ctx);
    let parsed = match grammar::parse_reserve(&args, &defaults) {
        Ok(p) => p,
        Err(e) => return send_arg_error(ctx, e, arity_error!("bf.reserve")),
    };
    let name = args.get(1);
    let mut key = ctx.open_write(&name);
    match key.kind() {
        KeyKind::Bloom => return ctx.reply_error(replies::ITEM_EXISTS),
        KeyKind::Other => return ctx.reply_error(replies::WRONGTYPE),
        KeyKind::Missing => {}
    }
    let params = ChainParams {
        capacity: parsed.capacity,
        error: parsed.error_rate,
        growth: parsed.expansion,
        nonscaling: parsed.nonscaling,
        policy: parsed.policy,
    };
    let mut effects = Effects::default();
    match create_in(ctx, &mut key, name.bytes(), &params, &mut effects) {
        Ok(_) => {
            ctx.reply_ok();
            // Verbatim when a replica would read the same parameters from
            // it; otherwise spelled out. BF.RESERVE names its error rate and
            // capacity, so only the expansion and the policy can come from
            // defaults: when ours are a replica's, the command reads the
            // same there (the common case, which spares a second parse).
            let replica = replica_defaults(defaults.error_rate, defaults.capacity);
            let same_defaults = defaults == replica;
            if same_defaults || grammar::parse_reserve(&args, &replica) == Ok(parsed) {
                ctx.replicate_verbatim();
            } else {
                replicate_reserve(ctx, name, &params);
            }
        }
        Err(failure) => failure.send(ctx),
    }
    effects.notify(ctx, &name);
}

/// The parameters a BF.ADD or BF.MADD creates its filter with.
fn auto_create_params(ctx: &Ctx) -> ChainParams {
    create::auto_params(&command_defaults(ctx))
}

/// The filter an add goes to: existing, or created with the defaults.
fn existing_or_default<'k>(
    ctx: &Ctx,
    key: &'k mut Key<'_>,
    name: &[u8],
    effects: &mut Effects,
) -> Result<&'k mut Filter, Failure> {
    match key.kind() {
        KeyKind::Other => Err(Failure::Static(replies::WRONGTYPE)),
        KeyKind::Missing => create_in(ctx, key, name, &auto_create_params(ctx), effects),
        KeyKind::Bloom => Ok(key.filter_mut().expect("a Bloom key holds a filter")),
    }
}

/// Replies one add outcome; false when the batch must stop (RedisBloom
/// stops at a full non-scaling filter).
fn reply_outcome(ctx: &Ctx, outcome: AddOutcome, effects: &mut Effects) -> bool {
    match outcome {
        AddOutcome::Added => {
            effects.added = true;
            ctx.reply_bool(true)
        }
        AddOutcome::Present => ctx.reply_bool(false),
        AddOutcome::Full => {
            ctx.reply_error(replies::NONSCALING_FULL);
            return false;
        }
        AddOutcome::ScaleFailed => ctx.reply_error(replies::PROBLEM_INSERTING),
        AddOutcome::ScaleRefused(refusal) => {
            effects.refused = true;
            ctx.reply_error_text(&guard::refusal_message(&refusal))
        }
    }
    true
}

fn add_command(ctx: &Ctx, args: Args<'_>) {
    if args.len() != 3 {
        return ctx.reply_error(arity_error!("bf.add"));
    }
    let name = args.get(1);
    let mut key = ctx.open_write(&name);
    let mut effects = Effects::default();
    let filter = match existing_or_default(ctx, &mut key, name.bytes(), &mut effects) {
        Ok(f) => f,
        Err(failure) => {
            failure.send(ctx);
            return effects.notify(ctx, &name);
        }
    };
    let h = filter.hash(args.bytes(2));
    let (outcome, changes) = filter.add(h, &create::guard_for(ctx, name.bytes()));
    effects.record(changes);
    reply_outcome(ctx, outcome, &mut effects);
    let mut applied = Applied::default();
    applied.record(2, outcome);
    // The settings are read only when this add created the filter.
    let created_with = effects.created.then(|| auto_create_params(ctx));
    propagate_adds(ctx, &args, 2, &applied, created_with.as_ref());
    effects.notify(ctx, &name);
}

/// Which of a batch's items changed the filter, for propagation: a replica
/// or an AOF replay must apply exactly those. The items before the first
/// failed one all count (an item already present is a no-op there too);
/// after a failure only the items really added do, so that nothing the
/// master refused (a full non-scaling filter, a scale-out the memory guard
/// refused: replicas never refuse) is applied elsewhere.
#[derive(Debug, Default)]
struct Applied {
    /// Argument index of the first item whose add failed.
    first_failure: Option<usize>,
    /// Argument indices of the items added after it (allocated only once a
    /// failure happened, which keeps the common path allocation-free).
    added_after: Vec<usize>,
}

impl Applied {
    fn record(&mut self, index: usize, outcome: AddOutcome) {
        match (self.first_failure, outcome) {
            (None, AddOutcome::Added | AddOutcome::Present) => {}
            (None, _) => self.first_failure = Some(index),
            (Some(_), AddOutcome::Added) => self.added_after.push(index),
            (Some(_), _) => {}
        }
    }

    /// The items to propagate, given the batch's arguments `from..end`.
    fn items<'a>(&self, args: &Args<'a>, from: usize) -> Vec<RString<'a>> {
        let prefix_end = self.first_failure.unwrap_or(args.len());
        (from..prefix_end)
            .chain(self.added_after.iter().copied())
            .map(|i| args.get(i))
            .collect()
    }
}

/// Propagates an add command. Without a failure: the command as received,
/// or spelled out when it created the filter from local settings. After a
/// failure: only what changed the filter (see [`Applied`]), or nothing.
/// `created_with` holds the parameters of a filter this command created
/// that must be spelled out.
fn propagate_adds(
    ctx: &Ctx,
    args: &Args<'_>,
    from: usize,
    applied: &Applied,
    created_with: Option<&ChainParams>,
) {
    if applied.first_failure.is_none() {
        return match created_with {
            Some(params) => replicate_creation(ctx, args.get(1), params, args.from(from)),
            None => ctx.replicate_verbatim(),
        };
    }
    let items = applied.items(args, from);
    if let Some(params) = created_with {
        if items.is_empty() {
            replicate_reserve(ctx, args.get(1), params);
        } else {
            replicate_creation(ctx, args.get(1), params, items.into_iter());
        }
    } else if !items.is_empty() {
        let mut argv = vec![ReplicaArg::Arg(args.get(1))];
        argv.extend(items.into_iter().map(ReplicaArg::Arg));
        ctx.replicate(c"BF.MADD", &argv);
    }
}

/// Adds `count` items from argument `from` on, in order, and replies with
/// an array of outcomes, stopping after a "full" error as RedisBloom does.
fn add_items(
    ctx: &Ctx,
    filter: &mut Filter,
    args: &Args<'_>,
    from: usize,
    effects: &mut Effects,
) -> Applied {
    let mut applied = Applied::default();
    let guard: Guard = create::guard_for(ctx, args.bytes(1));
    let count = args.len() - from;
    // Only a non-scaling filter that may fill up within the batch can stop
    // early; only then is the length unknown up front.
    let postponed = !filter.chain.is_scaling() && !filter.chain.batch_fits(count);
    if postponed {
        ctx.reply_postponed_array();
    } else {
        ctx.reply_array(count);
    }
    let item = |j: usize| args.bytes(from + j);
    // The common case: the whole batch fits in the newest link, and each
    // reply is sent from inside the pipeline, while later items' cache
    // lines are on their way.
    let pipelined = filter.add_pipelined(count, item, |i, outcome| {
        applied.record(from + i, outcome);
        reply_outcome(ctx, outcome, effects);
    });
    if let Some(changes) = pipelined {
        effects.record(changes);
        if postponed {
            ctx.set_array_length(count);
        }
        return applied;
    }
    let mut replied = 0usize;
    for j in 0..count {
        let (outcome, changes) = filter.add(filter.hash(item(j)), &guard);
        effects.record(changes);
        replied += 1;
        applied.record(from + j, outcome);
        if !reply_outcome(ctx, outcome, effects) {
            break;
        }
    }
    if postponed {
        ctx.set_array_length(replied);
    }
    applied
}

fn madd_command(ctx: &Ctx, args: Args<'_>) {
    if args.len() < 3 {
        return ctx.reply_error(arity_error!("bf.madd"));
    }
    let name = args.get(1);
    let mut key = ctx.open_write(&name);
    let mut effects = Effects::default();
    match existing_or_default(ctx, &mut key, name.bytes(), &mut effects) {
        Ok(filter) => {
            let applied = add_items(ctx, filter, &args, 2, &mut effects);
            let created_with = effects.created.then(|| auto_create_params(ctx));
            propagate_adds(ctx, &args, 2, &applied, created_with.as_ref());
        }
        Err(failure) => failure.send(ctx),
    }
    effects.notify(ctx, &name);
}

fn insert_command(ctx: &Ctx, args: Args<'_>) {
    let parsed = match grammar::parse_insert(&args, &command_defaults(ctx)) {
        Ok(p) => p,
        Err(e) => return send_arg_error(ctx, e, arity_error!("bf.insert")),
    };
    let name = args.get(1);
    let mut key = ctx.open_write(&name);
    let mut effects = Effects::default();
    let params = insert_params(&parsed);
    let filter = match key.kind() {
        KeyKind::Other => return ctx.reply_error(replies::WRONGTYPE),
        KeyKind::Missing if parsed.nocreate => return ctx.reply_error(replies::NOT_FOUND),
        KeyKind::Missing => create_in(ctx, &mut key, name.bytes(), &params, &mut effects),
        KeyKind::Bloom => Ok(key.filter_mut().expect("a Bloom key holds a filter")),
    };
    match filter {
        Ok(filter) => {
            let from = parsed.items_from;
            let applied = add_items(ctx, filter, &args, from, &mut effects);
            // An explicit creation replicates verbatim when nothing failed;
            // after a failure it is spelled out like any other.
            let spelled = effects.created
                && (applied.first_failure.is_some() || !insert_is_explicit(&args, &params));
            let created_with = spelled.then_some(&params);
            propagate_adds(ctx, &args, from, &applied, created_with);
        }
        Err(failure) => failure.send(ctx),
    }
    effects.notify(ctx, &name);
}

fn insert_params(parsed: &grammar::Insert) -> ChainParams {
    ChainParams {
        capacity: parsed.capacity,
        error: parsed.error_rate,
        growth: parsed.expansion,
        nonscaling: parsed.nonscaling,
        policy: parsed.policy,
    }
}

/// Whether a replica reading this BF.INSERT would create `params` whatever
/// its settings: it names every parameter that settings could decide.
fn insert_is_explicit(args: &Args<'_>, params: &ChainParams) -> bool {
    [replica_defaults(0.01, 100), replica_defaults(0.02, 101)]
        .iter()
        .all(|d| grammar::parse_insert(args, d).map(|p| insert_params(&p)) == Ok(*params))
}
