//! Keyspace notifications of class "module" (enable with
//! `notify-keyspace-events Kd` or `Ed`): what happened to a value, each
//! event at most once per command, threshold events once per crossing.
//! Commands record them in their [`crate::command::Outcome`]; the FFI layer
//! sends them.

use std::ffi::CStr;

/// One kind of event, in the order they are sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    Created,
    Added,
    Scaled,
    FillWarning,
    FillAlert,
    GuardRefused,
    /// Generations of a windowed filter left the window (sent by the write
    /// that moved the window on).
    Rotated,
    /// A Cuckoo filter was created, got items, lost items, grew a
    /// sub-filter, or was compacted (CF.COMPACT, or the compaction a delete
    /// started, when it freed a sub-filter).
    CuckooCreated,
    CuckooAdded,
    CuckooDeleted,
    CuckooExpanded,
    CuckooCompacted,
    /// A Count-Min sketch was created (CMS.INITBYDIM, CMS.INITBYPROB),
    /// had some count changed by CMS.INCRBY, or was replaced by the
    /// weighted sum of CMS.MERGE.
    SketchCreated,
    SketchIncremented,
    SketchMerged,
    /// A Top-K sketch was created, counted items, or expelled an item
    /// from its list (the item is in the command's reply).
    TopkReserved,
    TopkAdded,
    TopkExpelled,
    /// A t-digest was created (TDIGEST.CREATE), got values (TDIGEST.ADD,
    /// also one refused part-way after some were added), was emptied
    /// (TDIGEST.RESET), or was written by TDIGEST.MERGE (the destination).
    TDigestCreated,
    TDigestAdded,
    TDigestReset,
    TDigestMerged,
}

impl Event {
    pub const ALL: [Event; 22] = [
        Event::Created,
        Event::Added,
        Event::Scaled,
        Event::FillWarning,
        Event::FillAlert,
        Event::GuardRefused,
        Event::Rotated,
        Event::CuckooCreated,
        Event::CuckooAdded,
        Event::CuckooDeleted,
        Event::CuckooExpanded,
        Event::CuckooCompacted,
        Event::SketchCreated,
        Event::SketchIncremented,
        Event::SketchMerged,
        Event::TopkReserved,
        Event::TopkAdded,
        Event::TopkExpelled,
        Event::TDigestCreated,
        Event::TDigestAdded,
        Event::TDigestReset,
        Event::TDigestMerged,
    ];

    /// The event name subscribers see.
    pub fn name(self) -> &'static CStr {
        match self {
            Event::Created => c"bf.create",
            Event::Added => c"bf.add",
            Event::Scaled => c"bf.scale",
            Event::FillWarning => c"bf.fill-warning",
            Event::FillAlert => c"bf.fill-alert",
            Event::GuardRefused => c"bf.guard-refused",
            Event::Rotated => c"bf.rotate",
            Event::CuckooCreated => c"cf.create",
            Event::CuckooAdded => c"cf.add",
            Event::CuckooDeleted => c"cf.del",
            Event::CuckooExpanded => c"cf.expand",
            Event::CuckooCompacted => c"cf.compact",
            Event::SketchCreated => c"cms.create",
            Event::SketchIncremented => c"cms.incrby",
            Event::SketchMerged => c"cms.merge",
            Event::TopkReserved => c"topk.reserve",
            Event::TopkAdded => c"topk.add",
            Event::TopkExpelled => c"topk.expelled",
            Event::TDigestCreated => c"tdigest.create",
            Event::TDigestAdded => c"tdigest.add",
            Event::TDigestReset => c"tdigest.reset",
            Event::TDigestMerged => c"tdigest.merge",
        }
    }

    fn bit(self) -> u32 {
        1 << self as u32
    }
}

/// The events of one command: a set, sent in [`Event::ALL`]'s order
/// whatever the order they were recorded in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Events(u32);

impl Events {
    pub fn add(&mut self, event: Event) {
        self.0 |= event.bit();
    }

    /// Adds `event` when `happened`.
    pub fn add_if(&mut self, happened: bool, event: Event) {
        if happened {
            self.add(event);
        }
    }

    /// Adds every event of `other`.
    pub fn merge(&mut self, other: Events) {
        self.0 |= other.0;
    }

    pub fn contains(self, event: Event) -> bool {
        self.0 & event.bit() != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn iter(self) -> impl Iterator<Item = Event> {
        Event::ALL.into_iter().filter(move |e| self.contains(*e))
    }

    pub fn of(events: &[Event]) -> Events {
        let mut set = Events::default();
        events.iter().for_each(|e| set.add(*e));
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_sent_in_a_fixed_order_once() {
        let mut e = Events::default();
        assert!(e.is_empty());
        e.add(Event::GuardRefused);
        e.add(Event::Created);
        e.add(Event::Created);
        let names: Vec<_> = e.iter().map(Event::name).collect();
        assert_eq!(names, [c"bf.create", c"bf.guard-refused"]);
    }

    /// Every event has its own bit in the set.
    #[test]
    fn every_event_fits_the_set() {
        let all = Events::of(&Event::ALL);
        assert_eq!(all.iter().count(), Event::ALL.len());
        for (i, e) in Event::ALL.into_iter().enumerate() {
            assert_eq!(e as usize, i, "{e:?} out of ALL's order");
        }
    }
}
