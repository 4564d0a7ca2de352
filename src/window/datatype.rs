//! What the `FBwindows` data type does when the server saves, loads,
//! rewrites, copies, digests, measures or frees a windowed filter.

use ferrobloom_core::alloc_guard::{AllocGuard, AllocRequest};
use ferrobloom_core::dump_format::RDB_VERSION_7_0;
use ferrobloom_core::rdb_io::{RdbError, RdbInput, RdbOutput};
use ferrobloom_core::window::{dump, rdb};

use super::Window;
use crate::bloom::datatype::DigestSink;
use crate::command::Env;
use crate::guard::{self, CommandGuard};

/// The module type's name and encoding version (the core's, as a C string
/// for the server).
pub const TYPE_NAME: &std::ffi::CStr = c"FBwindows";
pub const ENCODING_VERSION: i32 = rdb::ENCODING_VERSION;
const _: () = assert!(TYPE_NAME.to_bytes().len() == 9);

pub fn rdb_load(
    input: &mut dyn RdbInput,
    encver: i32,
    key: &[u8],
    env: &impl Env,
) -> Result<Box<Window>, String> {
    match rdb::load(input, encver) {
        Ok(filter) => {
            guard::check_loaded(env, super::WHAT, key, filter.bytes(), filter.bytes());
            Ok(Window::new(filter))
        }
        Err(e) => {
            let what = if key.is_empty() {
                "a windowed filter".to_string()
            } else {
                format!("the windowed filter '{}'", guard::printable(key))
            };
            let why = match e {
                RdbError::Io => "the data ends early or cannot be read (Io)".to_string(),
                RdbError::Invalid(reason) => reason.to_string(),
            };
            Err(format!("refusing {what} in RDB/RESTORE data: {why}"))
        }
    }
}

pub fn rdb_save(window: &Window, out: &mut dyn RdbOutput) {
    rdb::save(window.filter(), out);
}

/// The AOF rewrite of a windowed filter: one `RESTORE key 0 <payload>`,
/// whose payload is the value's DUMP (RDB version 10, which every
/// supported server reads).
pub fn aof_payload(window: &Window) -> Vec<u8> {
    dump::dump_payload(window.filter(), RDB_VERSION_7_0)
}

/// MEMORY USAGE: the bit arrays (those grown by bursts too), the cells'
/// stale marks and the slots describing them.
pub fn mem_usage(window: &Window) -> usize {
    let f = window.filter();
    (f.bytes() + f.cells().mark_bytes()) as usize
        + std::mem::size_of::<Window>()
        + (f.slots().len() + f.grown_links()) * 96
}

/// As for Bloom filters: a unit per 4 KiB page plus one per slot, so large
/// windows are freed off the main thread.
pub fn free_effort(window: &Window) -> usize {
    let f = window.filter();
    (f.bytes() / 4096) as usize + f.slots().len()
}

/// DEBUG DIGEST: what the window holds, not how far clearing of retired
/// generations has got (which a master's idle time decides and replicas do
/// not see).
pub fn digest(window: &Window, sink: &mut impl DigestSink) {
    let f = window.filter();
    let params = f.spec().params;
    sink.add_int(params.error.to_bits());
    sink.add_int(params.capacity);
    sink.add_bytes(params.span.display().as_bytes());
    sink.add_int(u64::from(params.generations));
    sink.add_bytes(params.policy.name().as_bytes());
    if !params.scaling {
        sink.add_bytes(b"NONSCALING");
    }
    sink.add_int(f.origin_ms());
    sink.add_int(f.epoch());
    sink.add_int(f.rotations());
    sink.add_int(f.forgotten());
    let live = f.live_slots(f.epoch());
    for &i in &live {
        let slot = &f.slots()[i];
        if let ferrobloom_core::window::SlotState::Live { epoch } = slot.state {
            sink.add_int(epoch);
        }
        sink.add_int(slot.first_items);
        for link in &slot.grown {
            sink.add_int(link.items);
            sink.add_bytes(link.data().as_bytes());
        }
    }
    // The live generations' bits, in epoch order whatever slots hold them.
    f.live_bits(&live, &mut |block| sink.add_bytes(block));
    sink.end_sequence();
}

/// COPY: a deep copy, admitted by the memory guard like a new filter.
pub fn copy(window: &Window, to: &[u8], env: &impl Env) -> Option<Box<Window>> {
    let f = window.filter();
    let request = AllocRequest {
        bytes: f.bytes(),
        filter_size_after: f.bytes(),
    };
    let refused = match CommandGuard::new(env, to, super::WHAT).admit(request) {
        Ok(()) => match f.try_clone() {
            Ok(copy) => return Some(Window::new(copy)),
            Err(_) => guard::allocation_failed_message(request.bytes),
        },
        Err(refusal) => guard::refusal_message(&refusal, env.memory()),
    };
    env.log_warning(&format!(
        "COPY of a windowed filter to '{}' refused: {}",
        guard::printable(to),
        refused.trim_start_matches("ERR ")
    ));
    None
}
