//! BF.EXISTS, BF.MEXISTS, BF.INFO, BF.CARD, BF.DEBUG.

use super::arity_error;
use crate::ffi::{command_handler, Args, Ctx, KeyKind};
use crate::grammar::InfoField;
use crate::replies;

command_handler!(exists => exists_command);
command_handler!(mexists => mexists_command);
command_handler!(info => info_command);
command_handler!(card => card_command);
command_handler!(debug => debug_command);

fn exists_command(ctx: &Ctx, args: Args<'_>) {
    if args.len() != 3 {
        return ctx.reply_error(arity_error!("bf.exists"));
    }
    let key = ctx.open_read(&args.get(1));
    // A key of another type answers "not present", as in RedisBloom.
    let present = key
        .filter()
        .is_some_and(|f| f.contains(f.hash(args.bytes(2))));
    ctx.reply_bool(present);
}

fn mexists_command(ctx: &Ctx, args: Args<'_>) {
    if args.len() < 3 {
        return ctx.reply_error(arity_error!("bf.mexists"));
    }
    let key = ctx.open_read(&args.get(1));
    ctx.reply_array(args.len() - 2);
    let Some(filter) = key.filter() else {
        for _ in 2..args.len() {
            ctx.reply_bool(false);
        }
        return;
    };
    filter.chain.contains_pipelined(
        args.len() - 2,
        |j| filter.hash(args.bytes(2 + j)),
        |_, present| ctx.reply_bool(present),
    );
}

fn info_command(ctx: &Ctx, args: Args<'_>) {
    if !(2..=3).contains(&args.len()) {
        return ctx.reply_error(arity_error!("bf.info"));
    }
    let key = ctx.open_read(&args.get(1));
    let filter = match key.kind() {
        KeyKind::Missing => return ctx.reply_error(replies::NOT_FOUND),
        KeyKind::Other => return ctx.reply_error(replies::WRONGTYPE),
        KeyKind::Bloom => key.filter().expect("a Bloom key holds a filter"),
    };
    let chain = &filter.chain;
    let value = |field: InfoField| -> Option<i64> {
        Some(match field {
            InfoField::Capacity => chain.capacity() as i64,
            InfoField::Size => chain.reported_size() as i64,
            InfoField::Filters => chain.links().len() as i64,
            InfoField::Items => chain.items() as i64,
            InfoField::Expansion => return chain.expansion().map(i64::from),
        })
    };
    let reply_value = |v: Option<i64>| match v {
        Some(v) => ctx.reply_integer(v),
        None => ctx.reply_null(),
    };
    if args.len() == 3 {
        let Some(field) = InfoField::parse(args.bytes(2)) else {
            return ctx.reply_error(replies::INVALID_INFO_VALUE);
        };
        // RESP2: a one-element array; RESP3: a one-entry map.
        if ctx.is_resp3() {
            ctx.reply_map(1);
            ctx.reply_simple(field.label());
        } else {
            ctx.reply_array(1);
        }
        return reply_value(value(field));
    }
    ctx.reply_map(InfoField::ALL.len());
    for field in InfoField::ALL {
        ctx.reply_simple(field.label());
        reply_value(value(field));
    }
}

fn card_command(ctx: &Ctx, args: Args<'_>) {
    if args.len() != 2 {
        return ctx.reply_error(arity_error!("bf.card"));
    }
    let key = ctx.open_read(&args.get(1));
    match key.kind() {
        KeyKind::Missing => ctx.reply_integer(0),
        KeyKind::Other => ctx.reply_error(replies::WRONGTYPE),
        KeyKind::Bloom => {
            let filter = key.filter().expect("a Bloom key holds a filter");
            ctx.reply_integer(filter.chain.items() as i64);
        }
    }
}

fn debug_command(ctx: &Ctx, args: Args<'_>) {
    if args.len() != 2 {
        return ctx.reply_error(arity_error!("bf.debug"));
    }
    let key = ctx.open_read(&args.get(1));
    let filter = match key.kind() {
        KeyKind::Missing => return ctx.reply_error(replies::NOT_FOUND),
        KeyKind::Other => return ctx.reply_error(replies::WRONGTYPE),
        KeyKind::Bloom => key.filter().expect("a Bloom key holds a filter"),
    };
    let lines = filter.chain.debug_lines();
    ctx.reply_array(lines.len());
    for line in &lines {
        ctx.reply_bulk(line.as_bytes());
    }
}
