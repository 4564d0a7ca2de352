//! BF.SCANDUMP and BF.LOADCHUNK: RedisBloom's export stream.

use ferrobloom_core::scandump::{self, LoadError};

use super::arity_error;
use super::create;
use crate::ffi::{command_handler, Args, Ctx, KeyKind};
use crate::filter::Filter;
use crate::{guard, notify, replies};

command_handler!(scandump => scandump_command);
command_handler!(loadchunk => loadchunk_command);

fn scandump_command(ctx: &Ctx, args: Args<'_>) {
    if args.len() != 3 {
        return ctx.reply_error(arity_error!("bf.scandump"));
    }
    let key = ctx.open_read(&args.get(1));
    let filter = match key.kind() {
        KeyKind::Missing => return ctx.reply_error(replies::NOT_FOUND),
        KeyKind::Other => return ctx.reply_error(replies::WRONGTYPE),
        KeyKind::Bloom => key.filter().expect("a Bloom key holds a filter"),
    };
    let Some(iter) = args.get(2).to_i64() else {
        return ctx.reply_error(replies::SCANDUMP_NOT_NUMERIC);
    };
    ctx.reply_array(2);
    match iter {
        0 => {
            ctx.reply_integer(1);
            ctx.reply_bulk(&scandump::encode_header(&filter.chain));
        }
        i if i < 0 => {
            ctx.reply_integer(0);
            ctx.reply_bulk(&[]);
        }
        i => {
            let (next, chunk) = scandump::data_chunk(&filter.chain, i);
            ctx.reply_integer(next);
            ctx.reply_bulk(chunk);
        }
    }
}

fn load_error(ctx: &Ctx, e: LoadError) {
    match e {
        LoadError::BadData => ctx.reply_error(replies::BAD_DATA),
        LoadError::Alloc(e) => ctx.reply_error_text(&guard::allocation_failed_message(e.bytes)),
        LoadError::NoLink => ctx.reply_error(replies::NO_LINK),
        LoadError::TooBig => ctx.reply_error(replies::TOO_BIG),
        LoadError::Refused(refusal) => ctx.reply_error_text(&guard::refusal_message(&refusal)),
    }
}

fn loadchunk_command(ctx: &Ctx, args: Args<'_>) {
    if args.len() != 4 {
        return ctx.reply_error(arity_error!("bf.loadchunk"));
    }
    let Some(iter) = args.get(2).to_i64() else {
        return ctx.reply_error(replies::LOADCHUNK_NOT_NUMERIC);
    };
    let data = args.bytes(3);
    let name = args.get(1);
    let mut key = ctx.open_write(&name);
    match key.kind() {
        KeyKind::Other => ctx.reply_error(replies::WRONGTYPE),
        KeyKind::Missing if iter != 1 => ctx.reply_error(replies::NOT_FOUND),
        KeyKind::Missing => {
            let chain = scandump::decode_header(data)
                .and_then(|header| header.instantiate(&create::guard_for(ctx, name.bytes())));
            match chain {
                Ok(chain) => match create::install(&mut key, Filter::new(chain)) {
                    Ok(filter) => {
                        filter.start_loading();
                        ctx.reply_ok();
                        ctx.replicate_verbatim();
                        if ctx.module_events_enabled() {
                            ctx.notify(notify::CREATED, &name);
                        }
                    }
                    Err(failure) => failure.send(ctx),
                },
                Err(e) => {
                    load_error(ctx, e);
                    if matches!(e, LoadError::Refused(_)) && ctx.module_events_enabled() {
                        ctx.notify(notify::REFUSED, &name);
                    }
                }
            }
        }
        KeyKind::Bloom => {
            let filter = key.filter_mut().expect("a Bloom key holds a filter");
            match filter.load_chunk(iter, data) {
                Ok(()) => {
                    // Bits changed: fill and estimated FPR with them.
                    filter.refresh();
                    ctx.reply_ok();
                    ctx.replicate_verbatim();
                }
                Err(e) => load_error(ctx, e),
            }
        }
    }
}
