//! The CMS.* command table. The `CMSk-TYPE` type's callbacks are
//! `ffi::datatype`'s.

use super::command::CommandSpec;
use crate::cms::{read, write};
use crate::command::Access;

/// RedisBloom 2.8.2 registers its reads `readonly`, without `fast`.
const READ: &std::ffi::CStr = c"readonly";

/// RedisBloom 2.8.2 registers its writes `write deny-oom`.
const WRITE: &std::ffi::CStr = c"write deny-oom";

/// The CMS.* commands, in RedisBloom's order.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec::keyed::<write::InitByDim>(Access::Insert, false, WRITE),
    CommandSpec::keyed::<write::InitByProb>(Access::Insert, false, WRITE),
    CommandSpec::keyed::<write::IncrBy>(Access::Update, false, WRITE),
    CommandSpec::keyed::<read::Query>(Access::Read, false, READ),
    CommandSpec::keyed::<read::Info>(Access::Read, false, READ),
];
