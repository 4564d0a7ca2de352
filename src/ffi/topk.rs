//! The TOPK.* command table. The `TopK-TYPE` type's callbacks are
//! `ffi::datatype`'s.

use super::command::CommandSpec;
use crate::command::Access;
use crate::topk::{observe, read, write};

/// RedisBloom 2.8.2 registers its reads `readonly`, without `fast`.
const READ: &std::ffi::CStr = c"readonly";

/// RedisBloom 2.8.2 registers its writes `write deny-oom`.
const WRITE: &std::ffi::CStr = c"write deny-oom";

/// The TOPK.* commands, in RedisBloom's order. TOPK.COUNT is read only
/// (2.8.2 registers it `write`: a read-only replica refuses it there).
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec::keyed::<write::Reserve>(Access::Insert, false, WRITE),
    CommandSpec::keyed::<write::Add>(Access::Update, false, WRITE),
    CommandSpec::keyed::<write::IncrBy>(Access::Update, false, WRITE),
    CommandSpec::keyed::<read::Query>(Access::Read, false, READ),
    CommandSpec::keyed::<read::Count>(Access::Read, false, READ),
    CommandSpec::keyed::<read::List>(Access::Read, false, READ),
    CommandSpec::keyed::<read::Info>(Access::Read, false, READ),
    // FerroBloom's own: TOPK.STATS reads every bucket, so it is not `fast`.
    CommandSpec::keyed::<observe::Stats>(Access::Read, false, READ),
    CommandSpec::keyless::<observe::PlanCommand>(false),
];
