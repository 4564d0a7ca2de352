//! What the server-wide totals (`INFO bf`, `bf_tdigest_*`) count for a
//! t-digest, kept beside the value so a digest takes exactly what it added
//! wherever it goes (DEL, UNLINK and lazy free, FLUSHALL, a MERGE that
//! replaces it, a reload), and never drives a total below zero.
//!
//! The value holds a [`Counted`]: made when the value is made
//! ([`Counted::enter`]), moved by [`TDigestValue::recount`] after a write
//! that changes the observations, given back when the value is dropped
//! ([`Counted::leave`], possibly on the lazy-free thread). The constructors
//! [`TDigestValue::created`], [`TDigestValue::loaded`] and
//! [`TDigestValue::copied`] also count where a digest came from.

use ferrobloom_core::tdigest::TDigest;

use super::TDigestValue;
use crate::metrics::TOTALS;

/// What the totals count for one digest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counted {
    /// The node array: 16 bytes a node of capacity (fixed at creation).
    bytes: u64,
    /// The observations (merged plus unmerged weight) as last counted.
    observations: u64,
}

/// The observations of `td` (a crafted digest cannot make it negative
/// here).
fn observations(td: &TDigest) -> u64 {
    td.total_weight().max(0) as u64
}

impl Counted {
    /// A digest starts being counted (main thread: commands, loading,
    /// COPY).
    pub fn enter(td: &TDigest) -> Counted {
        let c = Counted {
            bytes: 16 * td.capacity().max(0) as u64,
            observations: observations(td),
        };
        let t = &TOTALS;
        t.tdigest_digests.add(1);
        t.tdigest_bytes.add(c.bytes);
        t.tdigest_observations.add(c.observations);
        c
    }

    /// The digest stops being counted (any thread): exactly what it added.
    pub fn leave(self) {
        let t = &TOTALS;
        t.tdigest_digests.sub(1);
        t.tdigest_bytes.sub(self.bytes);
        t.tdigest_observations.sub(self.observations);
    }
}

impl TDigestValue {
    /// A digest made by a command (TDIGEST.CREATE, TDIGEST.MERGE into a
    /// new key).
    pub fn created(digest: TDigest) -> Box<TDigestValue> {
        TOTALS.tdigest_created.incr();
        TDigestValue::new(digest)
    }

    /// A digest read from an RDB file or a DUMP payload.
    pub fn loaded(digest: TDigest) -> Box<TDigestValue> {
        TOTALS.tdigest_loaded.incr();
        TDigestValue::new(digest)
    }

    /// A COPY.
    pub fn copied(digest: TDigest) -> Box<TDigestValue> {
        TOTALS.tdigest_copied.incr();
        TDigestValue::new(digest)
    }

    /// After a write changed the observations (ADD, RESET): the totals
    /// follow (main thread).
    pub fn recount(&mut self) {
        let now = observations(self.digest());
        TOTALS
            .tdigest_observations
            .shift(self.counted.observations, now);
        self.counted.observations = now;
    }
}

/// A write's bookkeeping, so the commands carry one line each.
pub mod record {
    use super::TDigestValue;
    use crate::metrics::TOTALS;
    use crate::notify::{Event, Events};

    /// TDIGEST.ADD applied `added` values (all of them, or those before an
    /// `overflow detected`): `tdigest.add` when any was added.
    pub fn add(v: &mut TDigestValue, added: usize, overflowed: bool) -> Events {
        if overflowed {
            TOTALS.tdigest_overflows.incr();
        }
        let mut events = Events::default();
        if added > 0 {
            v.recount();
            events.add(Event::TDigestAdded);
        }
        events
    }

    /// TDIGEST.RESET applied.
    pub fn reset(v: &mut TDigestValue) -> Events {
        TOTALS.tdigest_resets.incr();
        v.recount();
        Events::of(&[Event::TDigestReset])
    }

    /// TDIGEST.CREATE stored a digest.
    pub fn create() -> Events {
        Events::of(&[Event::TDigestCreated])
    }

    /// TDIGEST.MERGE replaced (or created) the destination.
    pub fn merge() -> Events {
        TOTALS.tdigest_merges.incr();
        Events::of(&[Event::TDigestMerged])
    }

    /// A MERGE refused with `overflow detected`.
    pub fn merge_overflow() {
        TOTALS.tdigest_overflows.incr();
    }
}
