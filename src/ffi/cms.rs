//! The CMS.* command table. The `CMSk-TYPE` type's callbacks are
//! `ffi::datatype`'s.

use std::ffi::c_int;

use redis_module::raw::{RedisModuleCtx, RedisModuleString};

use super::api;
use super::args::Args;
use super::command::{render_checked, run_command, CommandSpec, NumKeys};
use super::context::Ctx;
use super::key::Key;
use crate::cms::merge::{Merge, Sources};
use crate::cms::{read, write};
use crate::command::{Access, RefusalCheck};

/// RedisBloom 2.8.2 registers its reads `readonly`, without `fast`.
const READ: &std::ffi::CStr = c"readonly";

/// RedisBloom 2.8.2 registers its writes `write deny-oom`.
const WRITE: &std::ffi::CStr = c"write deny-oom";

/// CMS.MERGE also answers the server's key position requests: Redis 7.0's
/// cluster finds a module command's keys through them or through the key
/// positions given at registration, never through key specs.
const MERGE_FLAGS: &std::ffi::CStr = c"write deny-oom getkeys-api";

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
        MERGE_FLAGS,
        Access::Update,
        NumKeys {
            at: 2,
            access: Access::Read,
        },
    ),
    CommandSpec::keyed::<read::Query>(Access::Read, false, READ),
    CommandSpec::keyed::<read::Info>(Access::Read, false, READ),
];

/// The sources of the running CMS.MERGE, opened for reading.
struct OpenSources<'c, 'a> {
    ctx: &'c Ctx,
    args: &'c Args<'a>,
}

impl Sources for OpenSources<'_, '_> {
    type Key<'k>
        = Key<'k>
    where
        Self: 'k;

    fn open(&self, arg: usize, _: &[u8]) -> Key<'_> {
        self.ctx.open(&self.args.get(arg), false)
    }
}

/// Whether the server calls the command only to learn its keys.
fn keys_position_request(ctx: &Ctx) -> bool {
    // SAFETY: (1), (2).
    unsafe { api!(RedisModule_IsKeysPositionRequest)(ctx.as_ptr()) != 0 }
}

/// CMS.MERGE: the destination opened for writing, the sources by the
/// command as it checks them.
extern "C" fn merge_handler(
    ctx: *mut RedisModuleCtx,
    argv: *mut *mut RedisModuleString,
    argc: c_int,
) -> c_int {
    run_command(ctx, argv, argc, |ctx, args| {
        if keys_position_request(ctx) {
            for pos in Merge::key_positions(&args) {
                // SAFETY: (1), (2); pos < argc, an argument of this call.
                unsafe { api!(RedisModule_KeyAtPos)(ctx.as_ptr(), pos as c_int) };
            }
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
