//! A Bloom filter that forgets: generations of plain Bloom filters in a
//! fixed ring of bit arrays, retired one by one as the window moves on.
//!
//! # How it moves
//!
//! Time (or, for an item window, the count of items added) is cut into
//! epochs of one generation span. The generation of the current epoch is
//! *active*: adds set their bits there. A lookup tests every *live*
//! generation: those of the last `G + 1` epochs (the active one and the
//! `G` before it). When the epoch advances ([`WindowFilter::rotate_to`]), a
//! clean slot becomes the new active generation and the generations that
//! fell out of the last `G + 1` epochs are *retired*: no longer looked up,
//! and cleared a little at a time ([`WindowFilter::clear_step`], also run by
//! every add) so that a clean slot is ready for the next rotation.
//!
//! Epochs are numbers the caller gives: the filter never reads a clock.
//! The master decides when an epoch ends and replicas apply the same
//! numbers, so every copy holds the same bits.
//!
//! # Guarantees (property-tested in `tests/window_properties.rs`)
//!
//! - **No false negatives in the window.** An item added in epoch `e` is
//!   found by every lookup until the filter reaches epoch `e + G + 1`: for
//!   a time window at least `G` generation spans, which is at least the
//!   window, after the add. An item window's `N` items are spread so that
//!   any `G` consecutive generations take exactly `N`
//!   ([`WindowSpec::span_of`]): it keeps exactly its last `N` items.
//! - **Forgotten at most one generation late.** From epoch `e + G + 1` on,
//!   no lookup tests the generation it was added to; so an item leaves at
//!   most one generation span after the window (for an item window,
//!   `ceil(N/G) - 1` items after its last `N`: [`WindowSpec::slack`]).
//!   Adding it again puts it in the active generation, so it lives on.
//! - **False positive rate.** While every generation holds at most its
//!   share (`ceil(capacity / G)`) of items, a lookup is wrong with
//!   probability at most `error` ([`super::sizing`]). An item window never
//!   holds more. A scaling time window's generation that receives more
//!   grows bit arrays of twice the items at half the error rate, so it
//!   stays below twice its share of the error rate; a NONSCALING one keeps
//!   taking items into its full array, and
//!   [`WindowFilter::estimated_fpr`] reports from the bits actually set.
//! - **Planned memory.** The `G + 2` bit arrays are allocated at
//!   creation; afterwards only a scaling time window's bursts allocate
//!   (after the guard admits each array), and what a generation grew is
//!   freed when it retires.
//! - **No long pauses.** A rotation clears nothing when the retired slots
//!   were cleared meanwhile (always true of an item window, whose adds
//!   clear a share each); otherwise it finishes clearing one slot, at most
//!   `1 / (G + 2)` of the filter.

use super::cells::{Cells, Mask};
use super::sizing::{WindowSizingError, WindowSpec};
use super::span::Span;
use crate::alloc_guard::{AllocGuard, AllocRequest, Refusal};
use crate::bitarray::{AllocError, BitArray};
use crate::bloom::link::Link;
use crate::hash::{HashPair, HashWidth};

/// Where a slot of the ring is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotState {
    /// Holds no generation: its bits read as clear (those a retired
    /// generation left are cleared lazily: [`super::cells`]), ready to
    /// become the active generation.
    Clean,
    /// The generation of `epoch`: looked up while it is among the last
    /// `G + 1` epochs.
    Live { epoch: u64 },
}

/// One slot: a generation's bits in the interleaved cells (its first bit
/// array), the larger arrays it grew when it received more than its
/// share, and where it is in its life.
#[derive(Debug)]
pub struct Slot {
    /// Items added to its first bit array.
    pub first_items: u64,
    /// Its bits set in the cells.
    pub first_ones: u64,
    /// Bit arrays grown by a live generation of a scaling time window,
    /// each twice the last ([`WindowSpec::growth_link`]); freed when the
    /// generation retires.
    pub grown: Vec<Link>,
    pub state: SlotState,
}

impl Slot {
    fn new(state: SlotState) -> Slot {
        Slot {
            first_items: 0,
            first_ones: 0,
            grown: Vec::new(),
            state,
        }
    }

    /// Items added to the generation (over all its bit arrays).
    pub fn items(&self) -> u64 {
        self.first_items + self.grown.iter().map(|l| l.items).sum::<u64>()
    }
}

/// Why a windowed filter could not be created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowCreateError {
    Sizing(WindowSizingError),
    Refused(Refusal),
    Alloc(AllocError),
}

/// What a rotation did, for metrics and notifications.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rotation {
    /// Epochs passed (0: the epoch asked for is not newer).
    pub epochs: u64,
    /// Generations that left the window.
    pub retired: u32,
    /// Items those generations held.
    pub forgotten: u64,
    /// Bytes of grown bit arrays freed with the generations that retired.
    pub freed_bytes: u64,
}

/// The outcome of adding one item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowAdd {
    /// Whether the item was new within the window (BF.ADD's 1).
    pub new: bool,
    /// The rotation an item window made after this add filled its
    /// generation.
    pub rotation: Rotation,
    /// Bytes of the bit array the active generation grew for this add
    /// (0: none).
    pub grown_bytes: u64,
}

/// Why an add was not applied: the active generation is full and the
/// bit array it would grow was refused (by the guard or the allocator),
/// or would be beyond [`super::sizing::MAX_GROWN_LINKS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GrowError {
    Refused(Refusal),
    Alloc(AllocError),
    TooLarge,
}

/// One live generation as BF.STATS shows it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GenerationView {
    pub epoch: u64,
    /// Bit arrays: 1, or more when it grew past its share.
    pub links: u32,
    /// Bytes of its bit arrays.
    pub bytes: u64,
    /// Items added to it (a re-added item counts in each generation it was
    /// added to).
    pub items: u64,
    /// Items it was sized for: its share of the window's capacity.
    pub capacity: u64,
    pub bits_set: u64,
    pub bits: u64,
    /// The chance that this generation alone answers yes for an item never
    /// added: `(bits_set / bits)^k`.
    pub estimated_fpr: f64,
}

impl GenerationView {
    /// Items over capacity: above 1 when it received more than its share of
    /// the window, and its false positive rate rises above the plan.
    pub fn fill_ratio(&self) -> f64 {
        self.items as f64 / self.capacity.max(1) as f64
    }

    pub fn set_fraction(&self) -> f64 {
        self.bits_set as f64 / self.bits.max(1) as f64
    }
}

/// A windowed Bloom filter.
#[derive(Debug)]
pub struct WindowFilter {
    spec: WindowSpec,
    /// Every slot's first bit array, interleaved ([`super::cells`]).
    cells: Cells,
    slots: Vec<Slot>,
    /// Index of the active generation's slot.
    active: usize,
    /// The active generation's epoch.
    epoch: u64,
    /// Time windows: the master's clock (ms) when epoch 0 began.
    origin_ms: u64,
    /// Generations retired and items forgotten since creation.
    rotations: u64,
    forgotten: u64,
    /// Grown bit arrays in all slots (0 keeps lookups to one pass).
    grown_links: usize,
}

/// The fields of a filter as the RDB decoder rebuilt and checked them.
pub(super) struct WindowParts {
    pub spec: WindowSpec,
    pub cells: Cells,
    pub slots: Vec<Slot>,
    pub active: usize,
    pub epoch: u64,
    pub origin_ms: u64,
    pub rotations: u64,
    pub forgotten: u64,
}

/// Most positions an add or lookup computes once and prefetches (beyond
/// it, positions are computed as they are tested).
const MAX_POSITIONS: usize = 48;

/// Positions a lookup requests ahead of the one it tests.
const LOOKAHEAD: usize = 4;

impl WindowFilter {
    pub(super) fn from_parts(p: WindowParts) -> WindowFilter {
        WindowFilter {
            grown_links: p.slots.iter().map(|s| s.grown.len()).sum(),
            spec: p.spec,
            cells: p.cells,
            slots: p.slots,
            active: p.active,
            epoch: p.epoch,
            origin_ms: p.origin_ms,
            rotations: p.rotations,
            forgotten: p.forgotten,
        }
    }

    /// The interleaved cells of a window of shape `spec` (empty).
    pub(super) fn new_cells(spec: &WindowSpec) -> Result<Cells, AllocError> {
        Cells::new(
            spec.slots,
            spec.link.modulus(),
            spec.link.hashes,
            spec.link.bytes * u64::from(spec.slots),
        )
    }

    /// Index of the active generation's slot.
    pub fn active_slot(&self) -> usize {
        self.active
    }

    /// A new filter whose epoch 0 starts at `now_ms` (ignored by item
    /// windows), after `guard` admits its whole memory.
    pub fn new(
        spec: WindowSpec,
        now_ms: u64,
        guard: &dyn AllocGuard,
    ) -> Result<WindowFilter, WindowCreateError> {
        guard
            .admit(AllocRequest {
                bytes: spec.bytes,
                filter_size_after: spec.bytes,
            })
            .map_err(WindowCreateError::Refused)?;
        let mut cells = Self::new_cells(&spec).map_err(WindowCreateError::Alloc)?;
        cells.skip_huge_pages();
        let mut slots: Vec<Slot> = (0..spec.slots)
            .map(|_| Slot::new(SlotState::Clean))
            .collect();
        slots[0].state = SlotState::Live { epoch: 0 };
        Ok(WindowFilter {
            spec,
            cells,
            slots,
            active: 0,
            epoch: 0,
            origin_ms: if spec.params.span.is_time() {
                now_ms
            } else {
                0
            },
            rotations: 0,
            forgotten: 0,
            grown_links: 0,
        })
    }

    pub fn spec(&self) -> &WindowSpec {
        &self.spec
    }

    pub fn slots(&self) -> &[Slot] {
        &self.slots
    }

    /// Every slot's first bit array, interleaved.
    pub fn cells(&self) -> &Cells {
        &self.cells
    }

    /// The active generation's epoch.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    pub fn origin_ms(&self) -> u64 {
        self.origin_ms
    }

    pub fn rotations(&self) -> u64 {
        self.rotations
    }

    pub fn forgotten(&self) -> u64 {
        self.forgotten
    }

    /// The hash of an item (64-bit MurmurHash64A, as new Bloom filters).
    pub fn hash(&self, item: &[u8]) -> HashPair {
        HashPair::of(item, HashWidth::Bits64)
    }

    /// The epoch a time window is in at `now_ms` on the master's clock;
    /// an item window's epoch is its own (it moves with the adds). Never
    /// before the filter's current epoch: a clock set back does not bring
    /// forgotten items back or hold rotations up.
    pub fn epoch_at(&self, now_ms: u64) -> u64 {
        match self.spec.params.span {
            Span::Time { .. } => {
                let by_clock = now_ms.saturating_sub(self.origin_ms) / self.spec.generation_span;
                by_clock.max(self.epoch)
            }
            Span::Items { .. } => self.epoch,
        }
    }

    /// Whether a slot's generation is looked up while the filter is at
    /// epoch `at`.
    fn is_live_at(&self, state: SlotState, at: u64) -> bool {
        match state {
            SlotState::Live { epoch } => {
                epoch.saturating_add(u64::from(self.spec.generations())) >= at
            }
            _ => false,
        }
    }

    /// The slots live at epoch `at`, as a mask of cell bits.
    #[inline]
    fn live_mask(&self, at: u64) -> Mask {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| self.is_live_at(s.state, at))
            .fold(0, |m, (i, _)| m | 1 << i)
    }

    /// Whether the item may have been added within the window, as seen at
    /// epoch `at` (the current epoch, or a later one the clock says has
    /// begun, so a lookup forgets on time even before a write rotates).
    pub fn contains(&self, h: HashPair, at: u64) -> bool {
        self.found_in_live(h, at.max(self.epoch), None)
    }

    /// Whether the item is in a generation live at `at` (other than slot
    /// `skip`): its cells are requested all at once, then ANDed until no
    /// live generation is left (an absent item stops after a few), and
    /// only then the arrays grown by bursts are tested.
    #[inline]
    fn found_in_live(&self, h: HashPair, at: u64, skip: Option<usize>) -> bool {
        let mut live = self.live_mask(at);
        if let Some(s) = skip {
            live &= !(1 << s);
        }
        (live != 0 && self.in_cells(h, live) != 0)
            || (self.grown_links > 0
                && self.slots.iter().enumerate().any(|(i, s)| {
                    !s.grown.is_empty()
                        && Some(i) != skip
                        && self.is_live_at(s.state, at)
                        && s.grown.iter().any(|l| l.contains(h))
                }))
    }

    /// The slots among `mask` whose first bit array holds the item. The
    /// cells are requested [`LOOKAHEAD`] positions ahead of the one tested:
    /// an absent item is ruled out after a few positions (about
    /// `log2(G + 1) + 1.3` in full generations), and requesting all `k` at
    /// once stalls on the CPU's few outstanding misses for lines that are
    /// mostly not needed.
    #[inline]
    fn in_cells(&self, h: HashPair, mask: Mask) -> Mask {
        let mut buf = [0u64; MAX_POSITIONS];
        let n = self.cells.positions_into(h, &mut buf);
        if n < self.cells.hashes() as usize {
            return self.cells.and_over(h, mask);
        }
        let positions = &buf[..n];
        self.cells.prefetch(&positions[..n.min(LOOKAHEAD)]);
        let mut found = mask;
        for (i, &p) in positions.iter().enumerate() {
            if let Some(&ahead) = positions.get(i + LOOKAHEAD) {
                self.cells.prefetch(&[ahead]);
            }
            found &= self.cells.cell(p);
            if found == 0 {
                break;
            }
        }
        found
    }

    /// Sets the item's bits in slot `slot`'s first bit array; true when at
    /// least one was clear.
    fn insert_first(&mut self, h: HashPair, slot: usize) -> bool {
        self.cells.prepare_writes();
        let mut flipped = 0;
        for i in 0..u64::from(self.cells.hashes()) {
            let p = self.cells.position(h, i);
            flipped += u64::from(self.cells.set(p, slot as u32));
        }
        self.slots[slot].first_ones += flipped;
        flipped > 0
    }

    /// Adds an item at the current epoch (rotate first with
    /// [`WindowFilter::rotate_to`]). An item found only in an older
    /// generation is added to the active one too, so it stays as long as
    /// if it were new; it still answers "not new".
    ///
    /// A scaling time window whose active generation has taken its share
    /// grows a bit array twice as large (after `guard` admits it) rather
    /// than overfill the full one; when that is refused, the item is not
    /// added and nothing changes.
    pub fn add(&mut self, h: HashPair, guard: &dyn AllocGuard) -> Result<WindowAdd, GrowError> {
        let active = self.active;
        if self.grown_links == 0 && !self.active_is_full() {
            if let Some(added) = self.add_overlapped(h) {
                return Ok(added);
            }
        }
        let in_older = self.found_in_live(h, self.epoch, Some(active));
        let full = self.active_is_full();
        let slot = &self.slots[active];
        // Only a generation that grew, or is about to, looks before it sets
        // bits: otherwise setting them answers whether the item was there.
        let held = (full || !slot.grown.is_empty())
            && (self.cells.and_over(h, 1 << active) != 0
                || slot.grown.iter().any(|l| l.contains(h)));
        let grown_bytes = if full && !held { self.grow(guard)? } else { 0 };
        self.clear_cells(self.clear_budget_per_add());
        let inserted = !held
            && match self.slots[active].grown.last_mut() {
                Some(link) => {
                    let inserted = link.insert(h);
                    link.items += u64::from(inserted);
                    inserted
                }
                None => {
                    let inserted = self.insert_first(h, active);
                    self.slots[active].first_items += u64::from(inserted);
                    inserted
                }
            };
        Ok(WindowAdd {
            new: inserted && !in_older,
            rotation: self.after_insert(inserted),
            grown_bytes,
        })
    }

    /// An item window rotates once its active generation took its share.
    fn after_insert(&mut self, inserted: bool) -> Rotation {
        match self.spec.params.span {
            Span::Items { .. }
                if inserted && self.slots[self.active].items() >= self.spec.span_of(self.epoch) =>
            {
                self.rotate_to(self.epoch + 1)
            }
            _ => Rotation::default(),
        }
    }

    /// Whether the active generation of a scaling time window holds its
    /// share: its next new item makes it grow.
    #[inline]
    fn active_is_full(&self) -> bool {
        let slot = &self.slots[self.active];
        let (items, entries) = match slot.grown.last() {
            Some(l) => (l.items, l.entries),
            None => (slot.first_items, self.spec.link.entries),
        };
        self.spec.params.scaling && self.spec.params.span.is_time() && items >= entries
    }

    /// The add of one item when no generation grew: its positions are
    /// computed once and their cells requested for writing before any is
    /// read; one pass then sets the active generation's bits and ANDs the
    /// older live generations' (found in all of them: not new). None when
    /// the hash count is over [`MAX_POSITIONS`].
    #[inline]
    fn add_overlapped(&mut self, h: HashPair) -> Option<WindowAdd> {
        let mut buf = [0u64; MAX_POSITIONS];
        let n = self.cells.positions_into(h, &mut buf);
        if n < self.cells.hashes() as usize {
            return None;
        }
        let positions = &buf[..n];
        let (active, epoch) = (self.active, self.epoch);
        self.cells.prefetch_write(positions);
        let mut older = self.live_mask(epoch) & !(1 << active);
        self.clear_cells(self.clear_budget_per_add());
        self.cells.prepare_writes();
        let mut flipped = 0u64;
        for &p in positions {
            let cell = self.cells.cell(p);
            older &= cell;
            if cell >> active & 1 == 0 {
                self.cells.set(p, active as u32);
                flipped += 1;
            }
        }
        let slot = &mut self.slots[active];
        slot.first_ones += flipped;
        let inserted = flipped > 0;
        slot.first_items += u64::from(inserted);
        Some(WindowAdd {
            new: inserted && older == 0,
            rotation: self.after_insert(inserted),
            grown_bytes: 0,
        })
    }

    /// Grows the active generation by its next bit array, after `guard`
    /// admits it; returns its bytes.
    fn grow(&mut self, guard: &dyn AllocGuard) -> Result<u64, GrowError> {
        let next = self.slots[self.active].grown.len() as u32 + 1;
        let spec = self
            .spec
            .growth_link(next)
            .map_err(|_| GrowError::TooLarge)?;
        guard
            .admit(AllocRequest {
                bytes: spec.bytes,
                filter_size_after: self.bytes().saturating_add(spec.bytes),
            })
            .map_err(GrowError::Refused)?;
        let mut link = Link::new(&spec).map_err(GrowError::Alloc)?;
        link.skip_huge_pages();
        self.slots[self.active].grown.push(link);
        self.grown_links += 1;
        Ok(spec.bytes)
    }

    /// Moves the window to `epoch`: retires the generations older than the
    /// last `G + 1` epochs and makes a clean slot the active generation.
    /// An epoch not newer than the current one changes nothing. Nothing is
    /// cleared while it waits: the retired generations' bits are marked
    /// stale, in one pass over the marks (16 bytes per 4,096 cells).
    pub fn rotate_to(&mut self, epoch: u64) -> Rotation {
        if epoch <= self.epoch {
            return Rotation::default();
        }
        let mut rotation = Rotation {
            epochs: epoch - self.epoch,
            ..Rotation::default()
        };
        let mut retired: Mask = 0;
        for i in 0..self.slots.len() {
            let state = self.slots[i].state;
            if matches!(state, SlotState::Live { .. }) && !self.is_live_at(state, epoch) {
                rotation.retired += 1;
                let slot = &mut self.slots[i];
                rotation.forgotten += slot.items();
                // What a burst grew goes back now: memory returns to the
                // planned size once the burst has left the window.
                let grown = std::mem::take(&mut slot.grown);
                self.grown_links -= grown.len();
                rotation.freed_bytes += grown.iter().map(Link::bytes).sum::<u64>();
                if slot.first_ones > 0 {
                    retired |= 1 << i;
                }
                slot.first_ones = 0;
                slot.first_items = 0;
                slot.state = SlotState::Clean;
            }
        }
        self.cells.retire(retired);
        // The live generations hold distinct epochs among the last G, so at
        // least two of the G + 2 slots are clean.
        let next = self
            .slots
            .iter()
            .position(|s| s.state == SlotState::Clean)
            .expect("a window always has a slot that is not live");
        self.slots[next].state = SlotState::Live { epoch };
        self.active = next;
        self.epoch = epoch;
        self.rotations += u64::from(rotation.retired);
        self.forgotten += rotation.forgotten;
        rotation
    }

    /// Clears up to `budget` bytes' worth of cells holding bits of retired
    /// generations (a block at a time, where the last sweep stopped);
    /// returns the bytes' worth cleared. Every add runs it with a budget
    /// that sweeps the whole array well within a generation.
    pub fn clear_step(&mut self, budget: u64) -> u64 {
        let bits_per_cell = u64::from(self.cells.width());
        let cells = budget.saturating_mul(8) / bits_per_cell;
        self.cells.sweep(cells) * bits_per_cell / 8
    }

    /// Sweeps `budget` cells (see [`WindowFilter::clear_step`]).
    fn clear_cells(&mut self, budget: u64) {
        self.cells.sweep(budget);
    }

    /// Bytes of cells that still hold bits of retired generations (they
    /// read as clear already).
    pub fn pending_clear_bytes(&self) -> u64 {
        self.cells.stale_bytes()
    }

    /// Cells each add sweeps: twice the cells over the adds of one
    /// generation, so the array is swept before the next rotation (even
    /// when two generations retire at once).
    fn clear_budget_per_add(&self) -> u64 {
        let per_generation = match self.spec.params.span {
            Span::Items { .. } => self.spec.shortest_span(),
            Span::Time { .. } => self.spec.link.entries,
        };
        (2 * self.cells.cells()).div_ceil(per_generation.max(1))
    }

    /// Items added to the live generations at epoch `at` (a re-added item
    /// counts once per generation it was added to).
    pub fn items(&self, at: u64) -> u64 {
        let at = at.max(self.epoch);
        self.slots
            .iter()
            .filter(|s| self.is_live_at(s.state, at))
            .map(Slot::items)
            .sum()
    }

    /// The chance that slot `s`'s generation answers yes for an item never
    /// added, from the bits set in each of its arrays.
    fn slot_fpr(&self, s: &Slot) -> f64 {
        let first = self.fpr_of(s.first_ones, self.cells.cells(), self.cells.hashes());
        let miss = (1.0 - first)
            * s.grown
                .iter()
                .map(|l| 1.0 - self.fpr_of(l.ones(), l.modulus(), l.hashes))
                .product::<f64>();
        1.0 - miss
    }

    fn fpr_of(&self, ones: u64, bits: u64, hashes: u32) -> f64 {
        (ones as f64 / bits.max(1) as f64).powi(hashes as i32)
    }

    /// How the window is doing at epoch `at`, without allocating: the
    /// fullest live generation's items over the items it was sized for
    /// (above 1: it received more than its share), and
    /// [`WindowFilter::estimated_fpr`].
    pub fn health(&self, at: u64) -> (f64, f64) {
        let at = at.max(self.epoch);
        let share = self.spec.link.entries.max(1) as f64;
        let (mut load, mut miss) = (0.0f64, 1.0);
        for slot in self.slots.iter().filter(|s| self.is_live_at(s.state, at)) {
            load = load.max(slot.items() as f64 / share);
            miss *= 1.0 - self.slot_fpr(slot);
        }
        (load, 1.0 - miss)
    }

    /// The chance that a lookup of an item never added answers yes, from
    /// the bits set in each live generation: `1 - prod(1 - fill^k)`.
    pub fn estimated_fpr(&self, at: u64) -> f64 {
        self.health(at).1
    }

    /// Every live generation at epoch `at`, oldest first: the last `G + 1`
    /// epochs (from epoch 0 on). A time window's epoch in which nothing
    /// was added (the key was idle) has no bit array yet, and shows as an
    /// empty generation.
    pub fn generation_views(&self, at: u64) -> Vec<GenerationView> {
        let at = at.max(self.epoch);
        let first = at.saturating_sub(u64::from(self.spec.generations()));
        (first..=at)
            .map(|epoch| {
                let slot = self
                    .slots
                    .iter()
                    .find(|s| s.state == SlotState::Live { epoch });
                let grown =
                    |f: fn(&Link) -> u64| slot.map_or(0, |s| s.grown.iter().map(f).sum::<u64>());
                GenerationView {
                    epoch,
                    links: slot.map_or(0, |s| 1 + s.grown.len() as u32),
                    bytes: slot.map_or(0, |s| self.slot_bytes(s)),
                    items: slot.map_or(0, Slot::items),
                    capacity: self.spec.link.entries,
                    bits_set: slot.map_or(0, |s| s.first_ones) + grown(Link::ones),
                    bits: slot.map_or(self.spec.link.bits, |_| self.cells.cells())
                        + grown(Link::modulus),
                    estimated_fpr: slot.map_or(0.0, |s| self.slot_fpr(s)),
                }
            })
            .collect()
    }

    /// A slot's bytes: its share of the cells, and what it grew.
    fn slot_bytes(&self, s: &Slot) -> u64 {
        self.spec.link.bytes + s.grown.iter().map(Link::bytes).sum::<u64>()
    }

    /// When a time window's generation `epoch` began on the master's clock
    /// (None for an item window, whose generations begin with adds).
    pub fn epoch_start_ms(&self, epoch: u64) -> Option<u64> {
        self.spec.params.span.is_time().then(|| {
            self.origin_ms
                .saturating_add(epoch.saturating_mul(self.spec.generation_span))
        })
    }

    /// A deep copy (COPY).
    pub fn try_clone(&self) -> Result<WindowFilter, AllocError> {
        let copy = |l: &Link| {
            l.try_clone().map(|mut l| {
                l.skip_huge_pages();
                l
            })
        };
        let mut slots = Vec::with_capacity(self.slots.len());
        for slot in &self.slots {
            slots.push(Slot {
                grown: slot.grown.iter().map(copy).collect::<Result<_, _>>()?,
                ..*slot
            });
        }
        let mut cells = self.cells.try_clone()?;
        cells.skip_huge_pages();
        Ok(WindowFilter {
            cells,
            slots,
            ..*self
        })
    }

    /// The indexes of the slots live at epoch `at`, oldest first (for
    /// digests and statistics, which must not depend on how far clearing
    /// has got).
    pub fn live_slots(&self, at: u64) -> Vec<usize> {
        let at = at.max(self.epoch);
        let mut live: Vec<usize> = (0..self.slots.len())
            .filter(|&i| self.is_live_at(self.slots[i].state, at))
            .collect();
        live.sort_by_key(|&i| match self.slots[i].state {
            SlotState::Live { epoch } => epoch,
            _ => 0,
        });
        live
    }

    /// The live generations' bits of every cell, in the order of `live`
    /// (from [`WindowFilter::live_slots`]), a cell's bits packed into
    /// whole bytes, handed to `sink` a block at a time: what the filter
    /// holds, whatever slots it sits in and however far clearing has got.
    pub fn live_bits(&self, live: &[usize], sink: &mut dyn FnMut(&[u8])) {
        let per_cell = live.len().div_ceil(8).max(1);
        let mut block = Vec::with_capacity(4096 * per_cell);
        for p in 0..self.cells.cells() {
            let cell = self.cells.cell(p);
            let mut packed: u128 = 0;
            for (j, &s) in live.iter().enumerate() {
                packed |= (cell >> s & 1) << j;
            }
            block.extend_from_slice(&packed.to_le_bytes()[..per_cell]);
            if block.len() >= 4096 * per_cell {
                sink(&block);
                block.clear();
            }
        }
        if !block.is_empty() {
            sink(&block);
        }
    }

    /// Bit arrays held: the cells, then every array grown by a live
    /// generation.
    pub fn arrays(&self) -> usize {
        1 + self.grown_links
    }

    /// Hands array `index` (as [`WindowFilter::arrays`] counts them) to
    /// `relocate`, for defragmentation (which may move its memory, never
    /// its content); false when there is no such array.
    pub fn relocate_array(
        &mut self,
        index: usize,
        relocate: impl FnOnce(BitArray) -> BitArray,
    ) -> bool {
        if index == 0 {
            self.cells.relocate_data(relocate);
            return true;
        }
        match self
            .slots
            .iter_mut()
            .flat_map(|s| s.grown.iter_mut())
            .nth(index - 1)
        {
            Some(link) => {
                link.relocate_data(relocate);
                true
            }
            None => false,
        }
    }

    /// The bytes of all bit arrays: the planned size, and what live
    /// generations grew.
    pub fn bytes(&self) -> u64 {
        self.cells.bytes()
            + self
                .slots
                .iter()
                .flat_map(|s| &s.grown)
                .map(Link::bytes)
                .sum::<u64>()
    }

    /// Bit arrays grown by live generations.
    pub fn grown_links(&self) -> usize {
        self.grown_links
    }
}
