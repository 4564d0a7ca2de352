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

use super::sizing::{WindowSizingError, WindowSpec};
use super::span::Span;
use crate::bitarray::AllocError;
use crate::bloom::chain::{AllocGuard, AllocRequest, Refusal};
use crate::bloom::link::Link;
use crate::hash::{HashPair, HashWidth};

/// Where a slot of the ring is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotState {
    /// All bits clear, ready to become the active generation.
    Clean,
    /// The generation of `epoch`: looked up while it is among the last
    /// `G + 1` epochs.
    Live { epoch: u64 },
    /// Out of the window; its first `cleared` bytes are clear again.
    Retired { cleared: u64 },
}

/// One slot: a bit array, the larger ones its generation grew when it
/// received more than its share, and where it is in its life.
#[derive(Debug)]
pub struct Slot {
    pub link: Link,
    /// Bit arrays grown by a live generation of a scaling time window,
    /// each twice the last ([`WindowSpec::growth_link`]); freed when the
    /// generation retires.
    pub grown: Vec<Link>,
    pub state: SlotState,
}

impl Slot {
    fn new(link: Link, state: SlotState) -> Slot {
        Slot {
            link,
            grown: Vec::new(),
            state,
        }
    }

    /// Items added to the generation (over all its bit arrays).
    pub fn items(&self) -> u64 {
        self.link.items + self.grown.iter().map(|l| l.items).sum::<u64>()
    }

    /// Every bit array, the first one first.
    pub fn links(&self) -> impl Iterator<Item = &Link> {
        std::iter::once(&self.link).chain(&self.grown)
    }

    /// The bytes of every bit array.
    pub fn bytes(&self) -> u64 {
        self.links().map(Link::bytes).sum()
    }

    /// The bit array that takes the generation's adds.
    fn newest_mut(&mut self) -> &mut Link {
        self.grown.last_mut().unwrap_or(&mut self.link)
    }

    fn newest(&self) -> &Link {
        self.grown.last().unwrap_or(&self.link)
    }

    /// The chance that this generation answers yes for an item never
    /// added, from the bits set in each of its arrays.
    fn estimated_fpr(&self) -> f64 {
        1.0 - self
            .links()
            .map(|l| 1.0 - (l.ones() as f64 / l.modulus().max(1) as f64).powi(l.hashes as i32))
            .product::<f64>()
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
    /// Bytes cleared while the rotation waited (0 when a clean slot was
    /// ready).
    pub cleared_at_once: u64,
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
    pub slots: Vec<Slot>,
    pub active: usize,
    pub epoch: u64,
    pub origin_ms: u64,
    pub rotations: u64,
    pub forgotten: u64,
}

impl WindowFilter {
    pub(super) fn from_parts(p: WindowParts) -> WindowFilter {
        WindowFilter {
            grown_links: p.slots.iter().map(|s| s.grown.len()).sum(),
            spec: p.spec,
            slots: p.slots,
            active: p.active,
            epoch: p.epoch,
            origin_ms: p.origin_ms,
            rotations: p.rotations,
            forgotten: p.forgotten,
        }
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
        let mut slots = Vec::with_capacity(spec.slots as usize);
        for _ in 0..spec.slots {
            let mut link = Link::new(&spec.link).map_err(WindowCreateError::Alloc)?;
            link.skip_huge_pages();
            slots.push(Slot::new(link, SlotState::Clean));
        }
        slots[0].state = SlotState::Live { epoch: 0 };
        Ok(WindowFilter {
            spec,
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

    /// Whether the item may have been added within the window, as seen at
    /// epoch `at` (the current epoch, or a later one the clock says has
    /// begun, so a lookup forgets on time even before a write rotates).
    pub fn contains(&self, h: HashPair, at: u64) -> bool {
        self.found_in_live(h, at.max(self.epoch), None)
    }

    /// The item's positions, the same in every generation's first bit
    /// array (one modulus and hash count for all), written to `buf`; None
    /// when there are more than it holds.
    #[inline]
    fn positions<'b>(
        &self,
        h: HashPair,
        buf: &'b mut [u64; Self::MAX_POSITIONS],
    ) -> Option<&'b [u64]> {
        let link = &self.slots[0].link;
        let k = link.hashes as usize;
        if k == 0 || k > Self::MAX_POSITIONS {
            return None;
        }
        let n = link.positions_into(h, buf);
        Some(&buf[..n])
    }

    /// Most positions the add engine computes once for every generation
    /// (beyond it, positions are computed per test).
    const MAX_POSITIONS: usize = 48;

    /// Whether the item is in a generation live at `at` (other than slot
    /// `skip`). Every generation has the same modulus, so an item's
    /// positions are the same in each: the first lines are prefetched in
    /// all live generations before any is tested, and the cache misses of
    /// the G + 1 generations overlap instead of following one another.
    #[inline]
    fn found_in_live(&self, h: HashPair, at: u64, skip: Option<usize>) -> bool {
        let head = self.slots[0].link.head(h);
        let probed = |i: usize, s: &Slot| Some(i) != skip && self.is_live_at(s.state, at);
        for (i, s) in self.slots.iter().enumerate() {
            if probed(i, s) {
                s.link.prefetch_head(head);
            }
        }
        self.slots
            .iter()
            .enumerate()
            .any(|(i, s)| probed(i, s) && s.link.contains_from_head(h, head))
            || (self.grown_links > 0
                && self.slots.iter().enumerate().any(|(i, s)| {
                    !s.grown.is_empty() && probed(i, s) && s.grown.iter().any(|l| l.contains(h))
                }))
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
        let slot = &self.slots[active];
        let full = self.spec.params.scaling
            && self.spec.params.span.is_time()
            && slot.newest().items >= slot.newest().entries;
        // Only a generation that grew, or is about to, looks before it sets
        // bits: otherwise setting them answers whether the item was there.
        let held = (full || !slot.grown.is_empty()) && slot.links().any(|l| l.contains(h));
        let grown_bytes = if full && !held { self.grow(guard)? } else { 0 };
        self.clear_step(self.clear_budget_per_add());
        let slot = &mut self.slots[active];
        let inserted = !held && {
            let link = slot.newest_mut();
            let inserted = link.insert(h);
            link.items += u64::from(inserted);
            inserted
        };
        let mut rotation = Rotation::default();
        if inserted {
            if let Span::Items { .. } = self.spec.params.span {
                if slot.items() >= self.spec.span_of(self.epoch) {
                    rotation = self.rotate_to(self.epoch + 1);
                }
            }
        }
        Ok(WindowAdd {
            new: inserted && !in_older,
            rotation,
            grown_bytes,
        })
    }

    /// Whether the active generation of a scaling time window holds its
    /// share: its next new item makes it grow.
    #[inline]
    fn active_is_full(&self) -> bool {
        let newest = self.slots[self.active].newest();
        self.spec.params.scaling
            && self.spec.params.span.is_time()
            && newest.items >= newest.entries
    }

    /// The add of one item when no generation grew (every bit array has
    /// the same modulus and hash count): its positions are computed once,
    /// the lines the add will write in the active generation and the
    /// first ones every older live generation tests are all requested
    /// before any is read, so that the memory misses of the `G + 1`
    /// generations overlap instead of following one another. None when
    /// the hash count is over [`Self::MAX_POSITIONS`].
    #[inline]
    fn add_overlapped(&mut self, h: HashPair) -> Option<WindowAdd> {
        let mut buf = [0u64; Self::MAX_POSITIONS];
        let positions = self.positions(h, &mut buf)?;
        let n = positions.len();
        let (active, epoch) = (self.active, self.epoch);
        self.slots[active].link.prefetch_positions_write(positions);
        let head = &positions[..n.min(2)];
        for (i, s) in self.slots.iter().enumerate() {
            if i != active && self.is_live_at(s.state, epoch) {
                s.link.prefetch_positions(head);
            }
        }
        let in_older = self.slots.iter().enumerate().any(|(i, s)| {
            i != active && self.is_live_at(s.state, epoch) && s.link.all_set(positions)
        });
        self.clear_step(self.clear_budget_per_add());
        let slot = &mut self.slots[active];
        let inserted = slot.link.set_all(positions);
        slot.link.items += u64::from(inserted);
        let mut rotation = Rotation::default();
        if inserted {
            if let Span::Items { .. } = self.spec.params.span {
                if slot.link.items >= self.spec.span_of(epoch) {
                    rotation = self.rotate_to(epoch + 1);
                }
            }
        }
        Some(WindowAdd {
            new: inserted && !in_older,
            rotation,
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
    /// An epoch not newer than the current one changes nothing.
    pub fn rotate_to(&mut self, epoch: u64) -> Rotation {
        if epoch <= self.epoch {
            return Rotation::default();
        }
        let mut rotation = Rotation {
            epochs: epoch - self.epoch,
            ..Rotation::default()
        };
        for i in 0..self.slots.len() {
            let state = self.slots[i].state;
            if matches!(state, SlotState::Live { .. }) && !self.is_live_at(state, epoch) {
                rotation.retired += 1;
                rotation.forgotten += self.slots[i].items();
                // What a burst grew goes back now: memory returns to the
                // planned size once the burst has left the window.
                let grown = std::mem::take(&mut self.slots[i].grown);
                self.grown_links -= grown.len();
                rotation.freed_bytes += grown.iter().map(Link::bytes).sum::<u64>();
                self.slots[i].state = SlotState::Retired { cleared: 0 };
            }
        }
        // The live generations hold distinct epochs among the last G, so at
        // least two of the G + 2 slots are not live.
        let next = match self.slots.iter().position(|s| s.state == SlotState::Clean) {
            Some(i) => i,
            None => {
                let (i, cleared) = self
                    .slots
                    .iter()
                    .enumerate()
                    .filter_map(|(i, s)| match s.state {
                        SlotState::Retired { cleared } => Some((i, cleared)),
                        _ => None,
                    })
                    .max_by_key(|&(_, cleared)| cleared)
                    .expect("a window always has a slot that is not live");
                rotation.cleared_at_once = self.slots[i].link.bytes() - cleared;
                self.finish_clearing(i, u64::MAX);
                i
            }
        };
        self.slots[next].state = SlotState::Live { epoch };
        self.active = next;
        self.epoch = epoch;
        self.rotations += u64::from(rotation.retired);
        self.forgotten += rotation.forgotten;
        rotation
    }

    /// Clears up to `budget` bytes of retired slots (the one nearest to
    /// clean first); returns the bytes cleared. Adds run it with a budget
    /// that keeps an item window's next slot clean in time; a server may
    /// run it between commands for time windows.
    pub fn clear_step(&mut self, mut budget: u64) -> u64 {
        let mut done = 0;
        while budget > 0 {
            let Some((i, _)) = self
                .slots
                .iter()
                .enumerate()
                .filter_map(|(i, s)| match s.state {
                    SlotState::Retired { cleared } => Some((i, cleared)),
                    _ => None,
                })
                .max_by_key(|&(_, cleared)| cleared)
            else {
                break;
            };
            let cleared = self.finish_clearing(i, budget);
            done += cleared;
            budget -= cleared;
        }
        done
    }

    /// Bytes still to clear in retired slots.
    pub fn pending_clear_bytes(&self) -> u64 {
        self.slots
            .iter()
            .map(|s| match s.state {
                SlotState::Retired { cleared } => s.link.bytes() - cleared,
                _ => 0,
            })
            .sum()
    }

    /// Clears up to `budget` more bytes of retired slot `i`; marks it clean
    /// when done. Returns the bytes cleared.
    fn finish_clearing(&mut self, i: usize, budget: u64) -> u64 {
        let slot = &mut self.slots[i];
        let SlotState::Retired { cleared } = slot.state else {
            return 0;
        };
        let total = slot.link.bytes();
        let end = cleared.saturating_add(budget).min(total);
        if end == total {
            // The bytes before `cleared` are clear: give the rest back to
            // the kernel rather than write it.
            slot.link.clear_from(cleared as usize);
        } else {
            slot.link.clear_bytes(cleared as usize..end as usize);
        }
        if end == total {
            slot.link.items = 0;
            slot.state = SlotState::Clean;
        } else {
            slot.state = SlotState::Retired { cleared: end };
        }
        end - cleared
    }

    /// Bytes each add clears: twice a slot's bytes over the adds of one
    /// generation, in whole cache lines, so an item window's retired slot
    /// is clean before its next rotation (even when two retire at once).
    fn clear_budget_per_add(&self) -> u64 {
        let per_generation = match self.spec.params.span {
            Span::Items { .. } => self.spec.shortest_span(),
            Span::Time { .. } => self.spec.link.entries,
        };
        (2 * self.spec.link.bytes)
            .div_ceil(per_generation.max(1))
            .next_multiple_of(64)
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
            miss *= 1.0 - slot.estimated_fpr();
        }
        (load, 1.0 - miss)
    }

    /// The chance that a lookup of an item never added answers yes, from
    /// the bits set in each live generation: `1 - prod(1 - fill^k)`.
    pub fn estimated_fpr(&self, at: u64) -> f64 {
        let miss: f64 = self
            .generation_views(at)
            .iter()
            .map(|g| 1.0 - g.estimated_fpr)
            .product();
        1.0 - miss
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
                GenerationView {
                    epoch,
                    links: slot.map_or(0, |s| 1 + s.grown.len() as u32),
                    bytes: slot.map_or(0, Slot::bytes),
                    items: slot.map_or(0, Slot::items),
                    capacity: self.spec.link.entries,
                    bits_set: slot.map_or(0, |s| s.links().map(Link::ones).sum()),
                    bits: slot.map_or(self.spec.link.bits, |s| s.links().map(Link::modulus).sum()),
                    estimated_fpr: slot.map_or(0.0, Slot::estimated_fpr),
                }
            })
            .collect()
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
        let mut slots = Vec::with_capacity(self.slots.len());
        let copy = |l: &Link| {
            l.try_clone().map(|mut l| {
                l.skip_huge_pages();
                l
            })
        };
        for slot in &self.slots {
            slots.push(Slot {
                link: copy(&slot.link)?,
                grown: slot.grown.iter().map(copy).collect::<Result<_, _>>()?,
                state: slot.state,
            });
        }
        Ok(WindowFilter { slots, ..*self })
    }

    /// The live generations at epoch `at`, oldest first (for digests and
    /// statistics, which must not depend on how far clearing has got).
    pub fn live_slots(&self, at: u64) -> Vec<&Slot> {
        let at = at.max(self.epoch);
        let mut live: Vec<&Slot> = self
            .slots
            .iter()
            .filter(|s| self.is_live_at(s.state, at))
            .collect();
        live.sort_by_key(|s| match s.state {
            SlotState::Live { epoch } => epoch,
            _ => 0,
        });
        live
    }

    /// Bit array `index` of all slots' arrays in order (each slot's first
    /// one, then the arrays its generation grew), for defragmentation
    /// (which may move its memory, never its content).
    pub fn link_mut(&mut self, index: usize) -> Option<&mut Link> {
        self.slots
            .iter_mut()
            .flat_map(|s| std::iter::once(&mut s.link).chain(s.grown.iter_mut()))
            .nth(index)
    }

    /// The bytes of all bit arrays: the planned size, and what live
    /// generations grew.
    pub fn bytes(&self) -> u64 {
        self.slots.iter().map(Slot::bytes).sum()
    }

    /// Bit arrays grown by live generations.
    pub fn grown_links(&self) -> usize {
        self.grown_links
    }
}
