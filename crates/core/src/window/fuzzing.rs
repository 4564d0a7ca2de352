//! The body of the windowed filter's fuzz target (fuzz/fuzz_targets/
//! window_rdb.rs): a DUMP payload body decoded as the module decodes it
//! and, when accepted, exercised and checked. A panic is a finding.

use super::dump::{dump_payload, load_payload};
use super::filter::{SlotState, WindowFilter};
use crate::alloc_guard::Unguarded;
use crate::dump_format;

/// Windows above this size are not exercised (their arrays were already
/// read from the input, so they are no bigger than it).
pub const LIMIT: u64 = crate::bloom::fuzzing::LIMIT;

fn check(f: &WindowFilter) {
    let cells = f.cells();
    for (i, slot) in f.slots().iter().enumerate() {
        for link in &slot.grown {
            assert_eq!(link.ones(), link.data().count_ones());
        }
        assert_eq!(
            slot.first_ones,
            cells.count_slot(i as u32, 0..cells.cells())
        );
        if slot.state == SlotState::Clean {
            assert_eq!(slot.first_ones, 0, "a clean slot has bits set");
        }
    }
}

pub fn rdb(data: &[u8]) {
    let mut payload = data.to_vec();
    payload.extend_from_slice(&dump_format::RDB_VERSION_7_0.to_le_bytes());
    let crc = dump_format::crc64_jones(&payload);
    payload.extend_from_slice(&crc.to_le_bytes());
    let Ok(mut f) = load_payload(&payload) else {
        return;
    };
    if f.bytes() > LIMIT {
        return;
    }
    check(&f);
    let g = u64::from(f.spec().generations());
    for (i, item) in data.chunks(3).take(8).enumerate() {
        let h = f.hash(item);
        // A full generation at its last growth refuses the add: nothing
        // changes then.
        let bytes = f.bytes();
        if f.add(h, &Unguarded).is_err() {
            assert_eq!(f.bytes(), bytes, "a refused add changed the memory");
            continue;
        }
        assert!(f.contains(h, f.epoch()), "an added item must be found");
        if i % 3 == 2 {
            let next = f.epoch() + 1;
            f.rotate_to(next);
            assert!(f.contains(h, f.epoch()), "found after one rotation");
        }
    }
    let _ = f.estimated_fpr(f.epoch());
    f.clear_step(4096);
    check(&f);
    let gone = f.epoch() + g + 1;
    f.rotate_to(gone);
    assert_eq!(f.items(gone), 0);
    check(&f);
}

/// A windowed filter's AOF rewrite is `RESTORE key 0 <DUMP payload>` (it
/// has no SCANDUMP): an accepted payload body, then the same filter after
/// some adds and rotations, must come back identical from its own payload.
pub fn round_trips(data: &[u8]) {
    let mut payload = data.to_vec();
    payload.extend_from_slice(&dump_format::RDB_VERSION_7_0.to_le_bytes());
    let crc = dump_format::crc64_jones(&payload);
    payload.extend_from_slice(&crc.to_le_bytes());
    let Ok(mut f) = load_payload(&payload) else {
        return;
    };
    if f.bytes() > LIMIT {
        return;
    }
    let same = |f: &WindowFilter| {
        let p = dump_payload(f, dump_format::RDB_VERSION_7_0);
        let g = load_payload(&p).expect("a window's own payload loads");
        assert_eq!(
            dump_payload(&g, dump_format::RDB_VERSION_7_0),
            p,
            "the payload changed on reload"
        );
    };
    same(&f);
    for (i, item) in data.chunks(5).take(16).enumerate() {
        let h = f.hash(item);
        let _ = f.add(h, &Unguarded);
        if i % 4 == 3 {
            let next = f.epoch().saturating_add(1);
            f.rotate_to(next);
        }
    }
    same(&f);
}
