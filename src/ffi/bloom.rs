//! The BF.* command table (plain filters, and windowed ones routed by what
//! the key holds). The `MBbloom--` type's callbacks are `ffi::datatype`'s.

use super::command::CommandSpec;
use crate::bloom::{dump, observe, read, write};
use crate::command::Access;
use crate::window;

/// The BF.* commands, in RedisBloom's order, then FerroBloom's own.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec::routed::<write::Reserve, window::write::Reserve>(Access::Insert, false),
    CommandSpec::routed::<write::Add, window::write::Add>(Access::Insert, true),
    CommandSpec::routed::<write::MAdd, window::write::MAdd>(Access::Insert, true),
    CommandSpec::routed::<write::Insert, window::write::Insert>(Access::Insert, true),
    CommandSpec::routed::<read::Exists, window::read::Exists>(Access::Read, true),
    CommandSpec::routed::<read::MExists, window::read::MExists>(Access::Read, true),
    CommandSpec::routed::<read::Info, window::read::Info>(Access::Read, true),
    CommandSpec::routed::<read::Card, window::read::Card>(Access::Read, true),
    CommandSpec::routed::<read::Debug, window::read::Debug>(Access::Read, false),
    CommandSpec::routed::<dump::ScanDump, window::dump::ScanDump>(Access::Read, false),
    CommandSpec::routed::<dump::LoadChunk, window::dump::LoadChunk>(Access::Update, false),
    // FerroBloom's own.
    CommandSpec::routed_keyless::<observe::PlanCommand, window::observe::Plan>(false),
    CommandSpec::routed::<observe::Stats, window::observe::Stats>(Access::Read, false),
];
