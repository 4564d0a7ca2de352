//! The TDIGEST.* command table. The `TDIS-TYPE` type's callbacks are
//! `ffi::datatype`'s.

use super::command::CommandSpec;
use crate::command::Access;
use crate::tdigest::{read, write};

/// RedisBloom 2.8.2 registers its reads `readonly`, without `fast`.
const READ: &std::ffi::CStr = c"readonly";

/// RedisBloom 2.8.2 registers its writes `write deny-oom`.
const WRITE: &std::ffi::CStr = c"write deny-oom";

/// The TDIGEST.* commands, in RedisBloom's order.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec::keyed::<write::Create>(Access::Insert, false, WRITE),
    CommandSpec::keyed::<write::Reset>(Access::Update, false, WRITE),
    CommandSpec::keyed::<write::Add>(Access::Update, false, WRITE),
    CommandSpec::keyed::<read::Min>(Access::Read, false, READ),
    CommandSpec::keyed::<read::Max>(Access::Read, false, READ),
    CommandSpec::keyed::<read::Quantile>(Access::Read, false, READ),
    CommandSpec::keyed::<read::Cdf>(Access::Read, false, READ),
    CommandSpec::keyed::<read::Rank>(Access::Read, false, READ),
    CommandSpec::keyed::<read::RevRank>(Access::Read, false, READ),
    CommandSpec::keyed::<read::ByRank>(Access::Read, false, READ),
    CommandSpec::keyed::<read::ByRevRank>(Access::Read, false, READ),
    CommandSpec::keyed::<read::TrimmedMean>(Access::Read, false, READ),
    CommandSpec::keyed::<read::Info>(Access::Read, false, READ),
];
