//! The CMS.* command table. The `CMSk-TYPE` type's callbacks are
//! `ffi::datatype`'s.

use std::ffi::c_int;

use redis_module::raw::{RedisModuleCtx, RedisModuleString};

use super::command::{
    declared_key_positions, render_checked, run_command, CommandSpec, NumKeys, OpenSources,
    READ_SLOW, WRITE, WRITE_GETKEYS,
};
use crate::cms::merge::Merge;
use crate::cms::{observe, read, write};
use crate::command::{Access, RefusalCheck};

/// The CMS.* commands, in RedisBloom's order.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec::keyed::<write::InitByDim>(Access::Insert, false, WRITE),
    CommandSpec::keyed::<write::InitByProb>(Access::Insert, false, WRITE),
    CommandSpec::keyed::<write::IncrBy>(Access::Update, false, WRITE),
    // Every key it reads is declared (spec §8: 2.8.2 declares only the
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
    CommandSpec::keyed::<read::Query>(Access::Read, false, READ_SLOW),
    CommandSpec::keyed::<read::Info>(Access::Read, false, READ_SLOW),
    // FerroBloom's own.
    CommandSpec::keyed::<observe::Stats>(Access::Read, false, READ_SLOW),
    CommandSpec::keyless::<observe::PlanCommand>(false),
];

/// CMS.MERGE: the destination opened for writing, the sources by the
/// command as it checks them.
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
        let mut dest = ctx.open(&args.get(1), true);
        let check = RefusalCheck::start();
        let sources = OpenSources { ctx, args: &args };
        let outcome = Merge::run(&args, &mut dest, &sources);
        render_checked(ctx, outcome, &check, Merge::NAME, &args);
    })
}
