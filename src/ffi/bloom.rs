//! The BF.* command table (plain filters, and windowed ones routed by what
//! the key holds). The `MBbloom--` type's callbacks are `ffi::datatype`'s.

use super::command::CommandSpec;
use crate::bloom::{dump, observe, read, write};
use crate::command::Access;
use crate::window::commands as window;

/// The BF.* commands, in RedisBloom's order, then FerroBloom's own.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec::routed::<write::Reserve, window::Reserve>(Access::Insert, false),
    CommandSpec::routed::<write::Add, window::Add>(Access::Insert, true),
    CommandSpec::routed::<write::MAdd, window::MAdd>(Access::Insert, true),
    CommandSpec::routed::<write::Insert, window::Insert>(Access::Insert, true),
    CommandSpec::routed::<read::Exists, window::Exists>(Access::Read, true),
    CommandSpec::routed::<read::MExists, window::MExists>(Access::Read, true),
    CommandSpec::routed::<read::Info, window::Info>(Access::Read, true),
    CommandSpec::routed::<read::Card, window::Card>(Access::Read, true),
    CommandSpec::routed::<read::Debug, window::Debug>(Access::Read, false),
    CommandSpec::routed::<dump::ScanDump, window::ScanDump>(Access::Read, false),
    CommandSpec::routed::<dump::LoadChunk, window::LoadChunk>(Access::Update, false),
    // FerroBloom's own.
    CommandSpec::keyless::<observe::PlanCommand>(false),
    CommandSpec::routed::<observe::Stats, window::Stats>(Access::Read, false),
];
