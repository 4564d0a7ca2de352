//! Server-wide aggregates over all filters, kept up to date as filters are
//! created, grow, fill, load and are freed, so `INFO bf` never scans the
//! keyspace.
//!
//! Gauges are split in an `up` half written only by the main thread with a
//! plain store (an add costs no locked instruction) and a `down` half that
//! frees update atomically, since Redis may free a value on its lazy-free
//! thread. The largest fill ratio and estimated false positive rate come
//! from ordered multisets updated when a filter's observation is refreshed.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

/// A value that only the main thread increases.
pub struct Gauge {
    up: AtomicU64,
    down: AtomicU64,
}

impl Gauge {
    const fn new() -> Self {
        Gauge {
            up: AtomicU64::new(0),
            down: AtomicU64::new(0),
        }
    }

    /// Increase (main thread only).
    #[inline]
    pub fn add(&self, n: u64) {
        self.up
            .store(self.up.load(Relaxed).wrapping_add(n), Relaxed);
    }

    /// Decrease (any thread).
    #[inline]
    pub fn sub(&self, n: u64) {
        self.down.fetch_add(n, Relaxed);
    }

    pub fn get(&self) -> u64 {
        self.up.load(Relaxed).wrapping_sub(self.down.load(Relaxed))
    }
}

/// A counter that only grows, on the main thread.
pub struct Counter(AtomicU64);

impl Counter {
    const fn new() -> Self {
        Counter(AtomicU64::new(0))
    }
    pub fn incr(&self) {
        self.add(1);
    }
    pub fn add(&self, n: u64) {
        self.0.store(self.0.load(Relaxed).wrapping_add(n), Relaxed);
    }
    pub fn get(&self) -> u64 {
        self.0.load(Relaxed)
    }
}

pub struct Totals {
    pub filters: Gauge,
    pub filters_exact: Gauge,
    pub filters_pow2: Gauge,
    pub links: Gauge,
    /// Sum of BF.INFO Size.
    pub bytes: Gauge,
    pub items: Gauge,
    pub capacity: Gauge,
    pub pow2_rounding_bytes: Gauge,
    /// Filters (Bloom or Cuckoo) whose LOADCHUNK sequence has not
    /// delivered every chunk, and the bytes their progress holds.
    pub filters_loading: Gauge,
    pub loading_bytes: Gauge,
    pub scale_outs: Counter,
    pub guard_refusals: Counter,
    pub fill_warning_crossings: Counter,
    pub fill_alert_crossings: Counter,
    /// Windowed filters (`FBwindows`) and their bit arrays.
    pub windows: Gauge,
    pub window_bytes: Gauge,
    /// Generations that left their window, and the items they held.
    pub window_rotations: Counter,
    /// Bit arrays grown by generations that received more than their
    /// share.
    pub window_growths: Counter,
    pub window_forgotten: Counter,
    /// Cuckoo filters (`MBbloomCF`): how many, their sub-filters, the sum
    /// of their CF.INFO Size, the items they hold and the slots they have.
    pub cuckoo_filters: Gauge,
    pub cuckoo_sub_filters: Gauge,
    pub cuckoo_bytes: Gauge,
    pub cuckoo_items: Gauge,
    pub cuckoo_slots: Gauge,
    /// Items deleted (CF.DEL that found the item), sub-filters added by
    /// inserts, and inserts refused for lack of room or memory.
    pub cuckoo_deletes: Counter,
    pub cuckoo_expansions: Counter,
    pub cuckoo_insert_failures: Counter,
    /// Count-Min sketches (`CMSk-TYPE`): how many, their cell bytes
    /// (width·depth·cell size), the sum of their N.
    pub cms_sketches: Gauge,
    pub cms_bytes: Gauge,
    pub cms_count: Gauge,
    /// Sketches created by a command, loaded from RDB or RESTORE, copied.
    pub cms_created: Counter,
    pub cms_loaded: Counter,
    pub cms_copied: Counter,
    /// Merges applied, and CMS.INCRBY pairs refused because a cell or N
    /// would leave its range.
    pub cms_merges: Counter,
    pub cms_overflows: Counter,
    pub cms_underflows: Counter,
    /// t-digests (`TDIS-TYPE`): how many, their node arrays' bytes
    /// (16 bytes a node of capacity), the sum of their observations.
    pub tdigest_digests: Gauge,
    pub tdigest_bytes: Gauge,
    pub tdigest_observations: Gauge,
    /// Digests made by a command (TDIGEST.CREATE, TDIGEST.MERGE into a new
    /// key), loaded from RDB or RESTORE, copied; merges and resets
    /// applied; commands refused with `overflow detected`.
    pub tdigest_created: Counter,
    pub tdigest_loaded: Counter,
    pub tdigest_copied: Counter,
    pub tdigest_merges: Counter,
    pub tdigest_resets: Counter,
    pub tdigest_overflows: Counter,
}

pub static TOTALS: Totals = Totals {
    filters: Gauge::new(),
    filters_exact: Gauge::new(),
    filters_pow2: Gauge::new(),
    links: Gauge::new(),
    bytes: Gauge::new(),
    items: Gauge::new(),
    capacity: Gauge::new(),
    pow2_rounding_bytes: Gauge::new(),
    filters_loading: Gauge::new(),
    loading_bytes: Gauge::new(),
    scale_outs: Counter::new(),
    guard_refusals: Counter::new(),
    fill_warning_crossings: Counter::new(),
    fill_alert_crossings: Counter::new(),
    windows: Gauge::new(),
    window_bytes: Gauge::new(),
    window_rotations: Counter::new(),
    window_growths: Counter::new(),
    window_forgotten: Counter::new(),
    cuckoo_filters: Gauge::new(),
    cuckoo_sub_filters: Gauge::new(),
    cuckoo_bytes: Gauge::new(),
    cuckoo_items: Gauge::new(),
    cuckoo_slots: Gauge::new(),
    cuckoo_deletes: Counter::new(),
    cuckoo_expansions: Counter::new(),
    cuckoo_insert_failures: Counter::new(),
    cms_sketches: Gauge::new(),
    cms_bytes: Gauge::new(),
    cms_count: Gauge::new(),
    cms_created: Counter::new(),
    cms_loaded: Counter::new(),
    cms_copied: Counter::new(),
    cms_merges: Counter::new(),
    cms_overflows: Counter::new(),
    cms_underflows: Counter::new(),
    tdigest_digests: Gauge::new(),
    tdigest_bytes: Gauge::new(),
    tdigest_observations: Gauge::new(),
    tdigest_created: Counter::new(),
    tdigest_loaded: Counter::new(),
    tdigest_copied: Counter::new(),
    tdigest_merges: Counter::new(),
    tdigest_resets: Counter::new(),
    tdigest_overflows: Counter::new(),
};

impl Gauge {
    /// Moves the gauge from `old` to `new` (main thread): increases go to
    /// the main-thread half, decreases to the shared one.
    #[inline]
    pub fn shift(&self, old: u64, new: u64) {
        if new >= old {
            self.add(new - old);
        } else {
            self.sub(old - new);
        }
    }
}

/// What the totals currently count for one filter.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Observation {
    pub items: u64,
    pub capacity: u64,
    pub bytes: u64,
    pub links: u64,
    pub pow2_rounding_bytes: u64,
    pub pow2: bool,
    /// items / capacity.
    pub fill: f64,
    /// Estimated false positive rate from the set bits.
    pub fpr: f64,
}

/// A multiset of f64 values (non-negative, so their bit patterns order like
/// the values), for the maxima.
struct Values(BTreeMap<u64, u64>);

impl Values {
    const fn new() -> Self {
        Values(BTreeMap::new())
    }
    fn insert(&mut self, v: f64) {
        *self.0.entry(v.max(0.0).to_bits()).or_insert(0) += 1;
    }
    fn remove(&mut self, v: f64) {
        let key = v.max(0.0).to_bits();
        if let Some(n) = self.0.get_mut(&key) {
            *n -= 1;
            if *n == 0 {
                self.0.remove(&key);
            }
        }
    }
    fn max(&self) -> f64 {
        self.0
            .last_key_value()
            .map_or(0.0, |(k, _)| f64::from_bits(*k))
    }
    /// How many values are at or above `threshold`.
    fn count_from(&self, threshold: f64) -> u64 {
        self.0
            .range(threshold.max(0.0).to_bits()..)
            .map(|(_, n)| n)
            .sum()
    }
}

/// Fill ratios and FPRs of all filters, and how many filters are at or
/// above each fill threshold.
struct Levels {
    fills: Values,
    fprs: Values,
    warning: f64,
    alert: f64,
    above_warning: u64,
    above_alert: u64,
}

static LEVELS: Mutex<Levels> = Mutex::new(Levels {
    fills: Values::new(),
    fprs: Values::new(),
    warning: crate::config::DEFAULT_FILL_WARNING,
    alert: crate::config::DEFAULT_FILL_ALERT,
    above_warning: 0,
    above_alert: 0,
});

fn levels() -> std::sync::MutexGuard<'static, Levels> {
    LEVELS.lock().unwrap_or_else(|e| e.into_inner())
}

fn add_observation(o: &Observation) {
    let t = &TOTALS;
    t.filters.add(1);
    if o.pow2 {
        t.filters_pow2.add(1)
    } else {
        t.filters_exact.add(1)
    }
    t.links.add(o.links);
    t.bytes.add(o.bytes);
    t.items.add(o.items);
    t.capacity.add(o.capacity);
    t.pow2_rounding_bytes.add(o.pow2_rounding_bytes);
}

fn remove_observation(o: &Observation) {
    let t = &TOTALS;
    t.filters.sub(1);
    if o.pow2 {
        t.filters_pow2.sub(1)
    } else {
        t.filters_exact.sub(1)
    }
    t.links.sub(o.links);
    t.bytes.sub(o.bytes);
    t.items.sub(o.items);
    t.capacity.sub(o.capacity);
    t.pow2_rounding_bytes.sub(o.pow2_rounding_bytes);
}

/// A filter starts being counted.
pub fn enter(o: &Observation) {
    add_observation(o);
    let mut l = levels();
    l.fills.insert(o.fill);
    l.fprs.insert(o.fpr);
    if o.fill >= l.warning {
        l.above_warning += 1;
    }
    if o.fill >= l.alert {
        l.above_alert += 1;
    }
}

/// A filter stops being counted (freed, possibly off the main thread).
pub fn leave(o: &Observation) {
    remove_observation(o);
    let mut l = levels();
    l.fills.remove(o.fill);
    l.fprs.remove(o.fpr);
    if o.fill >= l.warning {
        l.above_warning -= 1;
    }
    if o.fill >= l.alert {
        l.above_alert -= 1;
    }
}

/// Which fill thresholds a change of observation crossed upwards.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Crossings {
    pub warning: bool,
    pub alert: bool,
}

/// A filter's observation changed from `old` to `new` (main thread).
pub fn change(old: &Observation, new: &Observation) -> Crossings {
    let t = &TOTALS;
    // Counters only grow while a filter lives (items, capacity, links,
    // bytes), so the differences go to the main-thread halves.
    t.items.add(new.items.wrapping_sub(old.items));
    t.capacity.add(new.capacity.wrapping_sub(old.capacity));
    t.links.add(new.links.wrapping_sub(old.links));
    t.bytes.add(new.bytes.wrapping_sub(old.bytes));
    t.pow2_rounding_bytes.add(
        new.pow2_rounding_bytes
            .wrapping_sub(old.pow2_rounding_bytes),
    );
    if old.fill == new.fill && old.fpr == new.fpr {
        return Crossings::default();
    }
    let mut l = levels();
    l.fills.remove(old.fill);
    l.fills.insert(new.fill);
    l.fprs.remove(old.fpr);
    l.fprs.insert(new.fpr);
    let (w, a) = (l.warning, l.alert);
    let step = |was: f64, now: f64, at: f64| -> i64 { i64::from(now >= at) - i64::from(was >= at) };
    let dw = step(old.fill, new.fill, w);
    let da = step(old.fill, new.fill, a);
    l.above_warning = l.above_warning.wrapping_add_signed(dw);
    l.above_alert = l.above_alert.wrapping_add_signed(da);
    let crossings = Crossings {
        warning: dw > 0,
        alert: da > 0,
    };
    drop(l);
    if crossings.warning {
        t.fill_warning_crossings.incr();
    }
    if crossings.alert {
        t.fill_alert_crossings.incr();
    }
    crossings
}

/// New fill thresholds: recount the filters at or above them.
pub fn set_thresholds(warning: f64, alert: f64) {
    let mut l = levels();
    l.warning = warning;
    l.alert = alert;
    l.above_warning = l.fills.count_from(warning);
    l.above_alert = l.fills.count_from(alert);
}

/// A consistent reading for INFO.
pub struct Snapshot {
    pub max_fill: f64,
    pub max_fpr: f64,
    pub above_warning: u64,
    pub above_alert: u64,
    pub warning: f64,
    pub alert: f64,
}

pub fn snapshot() -> Snapshot {
    let l = levels();
    Snapshot {
        max_fill: l.fills.max(),
        max_fpr: l.fprs.max(),
        above_warning: l.above_warning,
        above_alert: l.above_alert,
        warning: l.warning,
        alert: l.alert,
    }
}

/// How a windowed filter is doing against its plan (`BF.STATS`'s
/// `fill_level`): the plain filters' fill thresholds do not apply, since
/// an item window's generation is full by design before it rotates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum WindowLevel {
    #[default]
    Ok,
    /// A live generation received more than its share: more than the
    /// planned items per window are arriving.
    Warning,
    /// The estimated false positive rate is above the error rate asked
    /// for, or a generation received more than twice its share.
    Alert,
}

/// What the totals count for one windowed filter, as of its last write.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WindowObservation {
    pub level: WindowLevel,
    /// The fullest live generation's items over its share.
    pub load: f64,
    pub fpr: f64,
}

/// The windowed filters' levels: how many are at each, their worst
/// estimated false positive rate and load.
struct WindowLevels {
    fprs: Values,
    loads: Values,
    warning: u64,
    alert: u64,
}

static WINDOW_LEVELS: Mutex<WindowLevels> = Mutex::new(WindowLevels {
    fprs: Values::new(),
    loads: Values::new(),
    warning: 0,
    alert: 0,
});

fn window_levels() -> std::sync::MutexGuard<'static, WindowLevels> {
    WINDOW_LEVELS.lock().unwrap_or_else(|e| e.into_inner())
}

impl WindowLevels {
    fn count(&mut self, o: &WindowObservation, sign: i64) {
        if sign > 0 {
            self.fprs.insert(o.fpr);
            self.loads.insert(o.load);
        } else {
            self.fprs.remove(o.fpr);
            self.loads.remove(o.load);
        }
        match o.level {
            WindowLevel::Ok => {}
            WindowLevel::Warning => self.warning = self.warning.wrapping_add_signed(sign),
            WindowLevel::Alert => self.alert = self.alert.wrapping_add_signed(sign),
        }
    }
}

/// A windowed filter starts being counted.
pub fn window_enter(o: &WindowObservation) {
    window_levels().count(o, 1);
}

/// A windowed filter stops being counted (possibly off the main thread).
pub fn window_leave(o: &WindowObservation) {
    window_levels().count(o, -1);
}

/// A windowed filter's observation changed: which levels it rose to,
/// counted as the plain filters' threshold crossings are.
pub fn window_change(old: &WindowObservation, new: &WindowObservation) -> Crossings {
    if old == new {
        return Crossings::default();
    }
    {
        let mut l = window_levels();
        l.count(old, -1);
        l.count(new, 1);
    }
    let crossings = Crossings {
        warning: old.level < WindowLevel::Warning && new.level >= WindowLevel::Warning,
        alert: old.level < WindowLevel::Alert && new.level >= WindowLevel::Alert,
    };
    if crossings.warning {
        TOTALS.fill_warning_crossings.incr();
    }
    if crossings.alert {
        TOTALS.fill_alert_crossings.incr();
    }
    crossings
}

/// A consistent reading of the windowed filters' levels for INFO.
pub struct WindowSnapshot {
    /// Windows at warning or above.
    pub over_warning: u64,
    pub over_alert: u64,
    pub max_fpr: f64,
    pub max_load: f64,
}

pub fn window_snapshot() -> WindowSnapshot {
    let l = window_levels();
    WindowSnapshot {
        over_warning: l.warning + l.alert,
        over_alert: l.alert,
        max_fpr: l.fprs.max(),
        max_load: l.loads.max(),
    }
}

/// The Count-Min sketches' fill ratios (fullest cell over the cell size's
/// maximum), for the largest and the counts at or above the thresholds,
/// which are read when INFO asks (so a CONFIG SET of a threshold needs no
/// recount).
static CMS_FILLS: Mutex<Values> = Mutex::new(Values::new());

fn cms_fills() -> std::sync::MutexGuard<'static, Values> {
    CMS_FILLS.lock().unwrap_or_else(|e| e.into_inner())
}

/// A sketch starts being counted at fill ratio `fill`.
pub fn cms_enter(fill: f64) {
    cms_fills().insert(fill);
}

/// A sketch stops being counted (possibly off the main thread).
pub fn cms_leave(fill: f64) {
    cms_fills().remove(fill);
}

/// A sketch's fill ratio changed.
pub fn cms_change(old: f64, new: f64) {
    if old != new {
        let mut fills = cms_fills();
        fills.remove(old);
        fills.insert(new);
    }
}

/// The sketches' fill levels for INFO.
pub struct CmsSnapshot {
    pub max_fill: f64,
    pub over_warning: u64,
    pub over_alert: u64,
}

pub fn cms_snapshot(warning: f64, alert: f64) -> CmsSnapshot {
    let fills = cms_fills();
    CmsSnapshot {
        max_fill: fills.max(),
        over_warning: fills.count_from(warning),
        over_alert: fills.count_from(alert),
    }
}

/// Top-K sketches (`TopK-TYPE`), kept apart from [`Totals`]: how many,
/// their buckets and heap records (W·D·8 + k·24, fixed for a sketch's
/// life), where they came from, and what their adds did. Gauges fall on
/// free, which may run on the lazy-free thread.
pub struct TopkTotals {
    pub sketches: Gauge,
    pub bytes: Gauge,
    /// Sketches created by TOPK.RESERVE, loaded from RDB or RESTORE,
    /// copied.
    pub created: Counter,
    pub loaded: Counter,
    pub copied: Counter,
    /// Items counted (each item of TOPK.ADD, each pair of TOPK.INCRBY
    /// applied), and those that pushed another item out of a list.
    pub adds: Counter,
    pub expelled: Counter,
}

pub static TOPK: TopkTotals = TopkTotals {
    sketches: Gauge::new(),
    bytes: Gauge::new(),
    created: Counter::new(),
    loaded: Counter::new(),
    copied: Counter::new(),
    adds: Counter::new(),
    expelled: Counter::new(),
};
