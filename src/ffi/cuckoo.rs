//! The CF.* command table. The `MBbloomCF` type's callbacks are
//! `ffi::datatype`'s.

use super::command::{CommandSpec, READ, WRITE};
use crate::command::Access;
use crate::cuckoo::{dump, observe, read, write};

/// The CF.* commands, in RedisBloom's order. Flags as RedisBloom registers
/// them: CF.DEL is `write fast` (it runs under maxmemory), CF.COMPACT
/// `readonly fast` although it moves fingerprints (it runs on read-only
/// replicas, as in RedisBloom).
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec::keyed::<write::Reserve>(Access::Insert, false, WRITE),
    CommandSpec::keyed::<write::Add<false>>(Access::Insert, true, WRITE),
    CommandSpec::keyed::<write::Add<true>>(Access::Insert, true, WRITE),
    CommandSpec::keyed::<write::Insert<false>>(Access::Insert, true, WRITE),
    CommandSpec::keyed::<write::Insert<true>>(Access::Insert, true, WRITE),
    CommandSpec::keyed::<read::Exists>(Access::Read, true, READ),
    CommandSpec::keyed::<read::MExists>(Access::Read, true, READ),
    CommandSpec::keyed::<read::Count>(Access::Read, true, READ),
    CommandSpec::keyed::<write::Del>(Access::Delete, true, c"write fast"),
    CommandSpec::keyed::<write::Compact>(Access::Update, false, READ),
    CommandSpec::keyed::<dump::ScanDump>(Access::Read, false, READ),
    CommandSpec::keyed::<dump::LoadChunk>(Access::Update, false, WRITE),
    CommandSpec::keyed::<read::Info>(Access::Read, true, READ),
    CommandSpec::keyed::<read::Debug>(Access::Read, false, READ),
    // FerroBloom's own.
    CommandSpec::keyed::<observe::Stats>(Access::Read, false, READ),
    CommandSpec::keyless::<observe::PlanCommand>(false),
];
