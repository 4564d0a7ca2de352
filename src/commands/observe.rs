//! FerroBloom's own commands: BF.PLAN (sizing before allocation) and
//! BF.STATS (how full a filter is). Replies are maps in RESP3 and flat
//! name/value arrays in RESP2, like BF.INFO.

use std::ffi::CStr;

use ferrobloom_core::plan::{self, Plan, PlanError};
use ferrobloom_core::{stats, ChainParams, LinkSpec};

use super::arity_error;
use crate::config;
use crate::ffi::{command_handler, Args, Ctx, KeyKind};
use crate::grammar::{self, ArgError};
use crate::replies;

command_handler!(plan => plan_command);
command_handler!(stats => stats_command);

fn field_u64(ctx: &Ctx, name: &CStr, value: u64) {
    ctx.reply_simple(name);
    ctx.reply_integer(value.min(i64::MAX as u64) as i64);
}

fn field_f64(ctx: &Ctx, name: &CStr, value: f64, resp3: bool) {
    ctx.reply_simple(name);
    ctx.reply_double(value, resp3);
}

fn field_text(ctx: &Ctx, name: &CStr, value: &CStr) {
    ctx.reply_simple(name);
    ctx.reply_simple(value);
}

fn policy_name(policy: ferrobloom_core::Policy) -> &'static CStr {
    match policy {
        ferrobloom_core::Policy::Exact => c"exact",
        ferrobloom_core::Policy::Pow2 => c"pow2",
    }
}

fn reply_link_spec(ctx: &Ctx, l: &LinkSpec, resp3: bool) {
    ctx.reply_map(5);
    field_u64(ctx, c"capacity", l.entries);
    field_f64(ctx, c"error", l.error, resp3);
    field_u64(ctx, c"hashes", u64::from(l.hashes));
    field_u64(ctx, c"bits", l.modulus());
    field_u64(ctx, c"bytes", l.bytes);
}

fn plan_error(ctx: &Ctx, e: PlanError) {
    match e {
        PlanError::TooManyLinks => ctx.reply_error(replies::PLAN_TOO_MANY_LINKS),
        PlanError::Sizing(_) => ctx.reply_error(replies::PLAN_TOO_LARGE),
    }
}

fn plan_command(ctx: &Ctx, args: Args<'_>) {
    let request = match grammar::parse_plan(&args, &config::settings().defaults()) {
        Ok(r) => r,
        Err(ArgError::Arity) => return ctx.reply_error(arity_error!("bf.plan")),
        Err(ArgError::Reply(text)) => return ctx.reply_error(text),
    };
    let params = ChainParams {
        capacity: request.capacity,
        error: request.error_rate,
        growth: request.expansion,
        nonscaling: request.nonscaling,
        policy: request.policy,
    };
    let chosen = match plan::plan(&params, request.items) {
        Ok(p) => p,
        Err(e) => return plan_error(ctx, e),
    };
    let other = plan::plan(
        &ChainParams {
            policy: params.policy.other(),
            ..params
        },
        request.items,
    );
    let resp3 = ctx.is_resp3();
    ctx.reply_map(12);
    field_text(ctx, c"policy", policy_name(chosen.policy));
    field_u64(ctx, c"items", chosen.items);
    ctx.reply_simple(c"links");
    ctx.reply_array(chosen.links.len());
    for l in &chosen.links {
        reply_link_spec(ctx, l, resp3);
    }
    field_u64(ctx, c"capacity", chosen.capacity);
    field_u64(ctx, c"bytes", chosen.data_bytes);
    field_u64(ctx, c"size", chosen.reported_size);
    field_u64(ctx, c"refused_items", chosen.refused_items);
    field_f64(ctx, c"fpr", chosen.fpr, resp3);
    field_text(ctx, c"other_policy", policy_name(params.policy.other()));
    let (other_links, other_bytes, other_size) = match &other {
        Ok(Plan {
            links,
            data_bytes,
            reported_size,
            ..
        }) => (links.len() as u64, *data_bytes, *reported_size),
        Err(_) => (0, 0, 0),
    };
    field_u64(ctx, c"other_policy_links", other_links);
    field_u64(ctx, c"other_policy_bytes", other_bytes);
    field_u64(ctx, c"other_policy_size", other_size);
}

fn stats_command(ctx: &Ctx, args: Args<'_>) {
    if args.len() != 2 {
        return ctx.reply_error(arity_error!("bf.stats"));
    }
    let key = ctx.open_read(&args.get(1));
    let filter = match key.kind() {
        KeyKind::Missing => return ctx.reply_error(replies::NOT_FOUND),
        KeyKind::Other => return ctx.reply_error(replies::WRONGTYPE),
        KeyKind::Bloom => key.filter().expect("a Bloom key holds a filter"),
    };
    let s = stats::stats(&filter.chain);
    let settings = config::settings();
    let level = if s.fill >= settings.fill_alert {
        c"alert"
    } else if s.fill >= settings.fill_warning {
        c"warning"
    } else {
        c"ok"
    };
    let resp3 = ctx.is_resp3();
    ctx.reply_map(19);
    field_u64(ctx, c"capacity", s.capacity);
    field_u64(ctx, c"items", s.items);
    field_u64(ctx, c"links", s.links.len() as u64);
    field_u64(ctx, c"size", s.size);
    field_u64(ctx, c"bytes", s.data_bytes);
    field_text(ctx, c"policy", policy_name(s.policy));
    field_u64(ctx, c"scaling", u64::from(s.scaling));
    ctx.reply_simple(c"expansion");
    match filter.chain.expansion() {
        Some(e) => ctx.reply_integer(i64::from(e)),
        None => ctx.reply_null(),
    }
    field_f64(ctx, c"fill_ratio", s.fill, resp3);
    field_f64(ctx, c"newest_fill_ratio", s.fill_newest, resp3);
    field_text(ctx, c"fill_level", level);
    field_f64(ctx, c"estimated_fpr", s.estimated_fpr, resp3);
    field_f64(ctx, c"target_error", s.target_error, resp3);
    field_text(ctx, c"other_policy", policy_name(s.policy.other()));
    ctx.reply_simple(c"other_policy_size");
    match s.other_policy_size {
        Some(v) => ctx.reply_integer(v.min(i64::MAX as u64) as i64),
        None => ctx.reply_null(),
    }
    field_u64(
        ctx,
        c"pow2_rounding_bytes",
        stats::pow2_rounding_bytes(&filter.chain),
    );
    // A filter whose LOADCHUNK sequence is incomplete: lookups may answer 0
    // for items in the chunks still missing.
    field_u64(ctx, c"loading", u64::from(filter.loading().is_some()));
    field_u64(
        ctx,
        c"loaded_bytes",
        filter.loading().map_or(s.data_bytes, |p| p.received()),
    );
    ctx.reply_simple(c"per_link");
    ctx.reply_array(s.links.len());
    for l in &s.links {
        ctx.reply_map(7);
        field_u64(ctx, c"capacity", l.capacity);
        field_u64(ctx, c"items", l.items);
        field_u64(ctx, c"bytes", l.bytes);
        field_u64(ctx, c"hashes", u64::from(l.hashes));
        field_f64(ctx, c"error", l.error, resp3);
        field_f64(ctx, c"set_fraction", l.set_fraction, resp3);
        field_f64(ctx, c"estimated_fpr", l.fpr, resp3);
    }
}
