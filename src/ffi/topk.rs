//! The TOPK.* command table. The `TopK-TYPE` type's callbacks are
//! `ffi::datatype`'s.

use super::command::{CommandSpec, READ_SLOW, WRITE};
use crate::command::Access;
use crate::topk::{observe, read, write};

/// The TOPK.* commands, in RedisBloom's order. TOPK.COUNT is read only
/// (2.8.2 registers it `write`: a read-only replica refuses it there).
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec::keyed::<write::Reserve>(Access::Insert, false, WRITE),
    CommandSpec::keyed::<write::Add>(Access::Update, false, WRITE),
    CommandSpec::keyed::<write::IncrBy>(Access::Update, false, WRITE),
    CommandSpec::keyed::<read::Query>(Access::Read, false, READ_SLOW),
    CommandSpec::keyed::<read::Count>(Access::Read, false, READ_SLOW),
    CommandSpec::keyed::<read::List>(Access::Read, false, READ_SLOW),
    CommandSpec::keyed::<read::Info>(Access::Read, false, READ_SLOW),
    // FerroBloom's own: TOPK.STATS reads every bucket, so it is not `fast`.
    CommandSpec::keyed::<observe::Stats>(Access::Read, false, READ_SLOW),
    CommandSpec::keyless::<observe::PlanCommand>(false),
];
