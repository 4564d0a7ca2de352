//! The TDIGEST.* command table. The `TDIS-TYPE` type's callbacks are
//! `ffi::datatype`'s.

use std::ffi::c_int;

use redis_module::raw::{RedisModuleCtx, RedisModuleString};

use super::command::{
    declared_key_positions, render_checked, run_command, CommandSpec, NumKeys, OpenSources,
    READ_SLOW, WRITE, WRITE_GETKEYS,
};
use super::env::ServerEnv;
use super::key::LateWriteKey;
use crate::command::{Access, RefusalCheck};
use crate::tdigest::merge::Merge;
use crate::tdigest::{observe, read, write};

/// The TDIGEST.* commands, in RedisBloom's order.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec::keyed::<write::Create>(Access::Insert, false, WRITE),
    CommandSpec::keyed::<write::Reset>(Access::Update, false, WRITE),
    CommandSpec::keyed::<write::Add>(Access::Update, false, WRITE),
    // Every key it reads is declared (2.8.2 declares only the
    // destination), so Redis Cluster refuses sources in other slots.
    CommandSpec::custom(
        Merge::NAME,
        merge_handler,
        WRITE_GETKEYS,
        Access::Update,
        NumKeys {
            at: 2,
            access: Access::Read,
        },
    ),
    CommandSpec::keyed::<read::Min>(Access::Read, false, READ_SLOW),
    CommandSpec::keyed::<read::Max>(Access::Read, false, READ_SLOW),
    CommandSpec::keyed::<read::Quantile>(Access::Read, false, READ_SLOW),
    CommandSpec::keyed::<read::Cdf>(Access::Read, false, READ_SLOW),
    CommandSpec::keyed::<read::Rank>(Access::Read, false, READ_SLOW),
    CommandSpec::keyed::<read::RevRank>(Access::Read, false, READ_SLOW),
    CommandSpec::keyed::<read::ByRank>(Access::Read, false, READ_SLOW),
    CommandSpec::keyed::<read::ByRevRank>(Access::Read, false, READ_SLOW),
    CommandSpec::keyed::<read::TrimmedMean>(Access::Read, false, READ_SLOW),
    CommandSpec::keyed::<read::Info>(Access::Read, false, READ_SLOW),
    // FerroBloom's own.
    CommandSpec::keyed::<observe::Stats>(Access::Read, false, READ_SLOW),
    CommandSpec::keyless::<observe::PlanCommand>(false),
];

/// TDIGEST.MERGE: the destination opened for reading, and for writing only
/// once the merge is built (a refused MERGE touches no key, as in 2.8.2);
/// the sources by the command as it checks them.
extern "C" fn merge_handler(
    ctx: *mut RedisModuleCtx,
    argv: *mut *mut RedisModuleString,
    argc: c_int,
) -> c_int {
    run_command(ctx, argv, argc, |ctx, args| {
        if declared_key_positions(ctx, Merge::key_positions(&args)) {
            return;
        }
        if let Err(e) = Merge::parse(&args) {
            return ctx.reply_error(&e, Merge::NAME);
        }
        let mut dest = LateWriteKey::open(ctx, args.get(1));
        let check = RefusalCheck::start();
        let sources = OpenSources { ctx, args: &args };
        let env = ServerEnv::new(ctx);
        let outcome = Merge::run(&args, &mut dest, &sources, &env);
        render_checked(ctx, outcome, &check, Merge::NAME, &args);
    })
}
