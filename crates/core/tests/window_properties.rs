//! Property tests of windowed filters: random windows (in time and in
//! items, 1 to 10 generations) fed random schedules of adds, clock steps,
//! background clearing and lookups.
//!
//! (a) no false negatives: an item is found until its window has passed;
//! (b) forgotten on time: once every generation of an item has left the
//!     window, nothing is found;
//! (c) memory never changes, set-bit counts stay exact, clean slots are
//!     clean, and an item window never clears while an add waits;
//! (d) over a long stream, the measured false positive rate stays within
//!     the error rate asked for.

use std::collections::HashMap;

use ferrobloom_core::alloc_guard::Unguarded;
use ferrobloom_core::bloom::sizing::Policy;
use ferrobloom_core::window::{dump, SlotState, Span, WindowFilter, WindowParams, WindowSpec};
use proptest::prelude::*;

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[derive(Clone, Debug)]
enum Op {
    /// Adds item `n` of a small pool (so items come back).
    Add(u16),
    /// Moves the clock on by this many ms (time windows) and rotates to
    /// the epoch it gives.
    Wait(u32),
    /// Runs the background clearing with this budget.
    Clear(u16),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u16..400).prop_map(Op::Add),
        2 => (0u32..3_000).prop_map(Op::Wait),
        1 => (0u16..2_000).prop_map(Op::Clear),
    ]
}

fn window() -> impl Strategy<Value = WindowParams> {
    let span = prop_oneof![
        (1u64..300).prop_map(|count| Span::Items { count }),
        (64u64..20_000).prop_map(|ms| Span::Time { ms }),
    ];
    (span, 1u32..=10, 1u64..300, 1e-4f64..0.2, any::<bool>()).prop_map(
        |(span, generations, capacity, error, pow2)| WindowParams {
            error,
            capacity,
            // An item window holds at least one item per generation.
            span: match span {
                Span::Items { count } => Span::Items {
                    count: count.max(u64::from(generations)),
                },
                time => time,
            },
            generations,
            policy: if pow2 { Policy::Pow2 } else { Policy::Exact },
            scaling: true,
        },
    )
}

fn item(n: u16) -> Vec<u8> {
    format!("item:{n}").into_bytes()
}

/// (c): memory, counts and clean slots.
fn check_slots(f: &WindowFilter, bytes: u64) {
    assert_eq!(f.bytes(), bytes);
    let cells = f.cells();
    for (i, slot) in f.slots().iter().enumerate() {
        assert_eq!(
            slot.first_ones,
            cells.count_slot(i as u32, 0..cells.cells())
        );
        if slot.state == SlotState::Clean {
            assert_eq!(slot.first_ones, 0);
            assert_eq!(slot.first_items, 0);
        }
    }
    let live = f
        .slots()
        .iter()
        .filter(|s| matches!(s.state, SlotState::Live { .. }))
        .count();
    assert!(live <= f.spec().generations() as usize + 1);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(300)))]

    #[test]
    fn windows_keep_what_is_in_them_and_forget_the_rest(
        params in window(),
        ops in prop::collection::vec(op(), 1..600),
    ) {
        let spec = WindowSpec::new(&params).unwrap();
        let start = 1_000_000u64;
        let mut f = WindowFilter::new(spec, start, &Unguarded).unwrap();
        let bytes = spec.bytes;
        let g = u64::from(params.generations);
        let mut now = start;
        // Item -> (epoch, time) of its last add.
        let mut last: HashMap<u16, (u64, u64)> = HashMap::new();
        for op in ops {
            match op {
                Op::Add(n) => {
                    let epoch = f.epoch();
                    let added = f.add(f.hash(&item(n)), &Unguarded).unwrap();
                    // "New" means no live generation held it (or a false
                    // positive said so): never new while it is in the window.
                    if last.get(&n).is_some_and(|&(e, _)| e + g >= epoch) {
                        prop_assert!(!added.new);
                    }
                    last.insert(n, (epoch, now));
                }
                Op::Wait(ms) => {
                    if let Span::Time { .. } = params.span {
                        now += u64::from(ms);
                        f.rotate_to(f.epoch_at(now));
                    }
                }
                Op::Clear(budget) => {
                    f.clear_step(u64::from(budget));
                }
            }
            // (a) in epochs, and in time for a time window.
            let at = f.epoch_at(now);
            for (&n, &(epoch, time)) in &last {
                if epoch + g >= at {
                    prop_assert!(f.contains(f.hash(&item(n)), at), "item {} of epoch {} at {}", n, epoch, at);
                }
                if let Span::Time { ms } = params.span {
                    if now <= time + ms {
                        prop_assert!(f.contains(f.hash(&item(n)), at));
                    }
                }
            }
            check_slots(&f, bytes);
        }
        // (b) one whole window and one generation later, with no adds,
        // every generation has left: nothing is found.
        let later = f.epoch() + g + 1;
        let rotation = f.rotate_to(later);
        prop_assert_eq!(rotation.epochs, g + 1);
        for n in 0..400 {
            prop_assert!(!f.contains(f.hash(&item(n)), later));
        }
        prop_assert_eq!(f.items(later), 0);
        check_slots(&f, bytes);
        // Background clearing ends with every slot but the active clean.
        f.clear_step(u64::MAX);
        prop_assert_eq!(f.pending_clear_bytes(), 0);
        let clean = f.slots().iter().filter(|s| s.state == SlotState::Clean).count();
        prop_assert_eq!(clean, f.slots().len() - 1);
    }

    /// A time window read at a later time forgets on time, before any write
    /// rotates it: a lookup at the clock's epoch skips what left.
    #[test]
    fn lookups_forget_on_time_without_a_rotation(
        generations in 1u32..=8,
        ms in 100u64..10_000,
        adds in 1u16..200,
    ) {
        let params = WindowParams {
            error: 0.01,
            capacity: 1000,
            span: Span::Time { ms },
            generations,
            policy: Policy::Exact,
            scaling: true,
        };
        let spec = WindowSpec::new(&params).unwrap();
        let mut f = WindowFilter::new(spec, 0, &Unguarded).unwrap();
        for n in 0..adds {
            f.add(f.hash(&item(n)), &Unguarded).unwrap();
        }
        let s = spec.generation_span;
        let g = u64::from(generations);
        // Found through the whole window after the last add (all at t = 0).
        prop_assert!(f.contains(f.hash(&item(0)), f.epoch_at(ms)));
        prop_assert!(f.contains(f.hash(&item(0)), f.epoch_at(g * s + s - 1)));
        // Gone one generation later at the most.
        let gone = f.epoch_at((g + 1) * s);
        for n in 0..adds {
            prop_assert!(!f.contains(f.hash(&item(n)), gone));
        }
        prop_assert!(gone * s <= ms + s + g);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(200)))]

    /// (e) An item window keeps exactly what it promises: after every add
    /// of a distinct item, each of the last `N` items is found, and an
    /// item after which `N + slack` items were added is not (the error
    /// rate is 1e-9, so a false positive would be a one in millions
    /// event). Spans add up to exactly `N`, whatever `G` (up to 64).
    #[test]
    fn item_windows_keep_exactly_the_last_n_items(
        count in 1u64..400,
        generations in 1u32..=64,
        capacity in 1u64..500,
        rounds in 1u64..4,
    ) {
        let generations = generations.min(count as u32);
        let params = WindowParams {
            error: 1e-9,
            capacity,
            span: Span::Items { count },
            generations,
            policy: Policy::Exact,
            scaling: true,
        };
        let spec = WindowSpec::new(&params).unwrap();
        let g = u64::from(generations);
        // Any G consecutive generations hold exactly N items.
        for start in 0..2 * g {
            prop_assert_eq!((start..start + g).map(|e| spec.span_of(e)).sum::<u64>(), count);
        }
        prop_assert_eq!(spec.slack(), count.div_ceil(g) - 1);
        let mut f = WindowFilter::new(spec, 0, &Unguarded).unwrap();
        let total = rounds * count + count / 2 + 1;
        let mut kept_longest = 0;
        for i in 0..total {
            prop_assert!(f.add(f.hash(&item_n(i)), &Unguarded).unwrap().new);
            let at = f.epoch();
            for j in i.saturating_sub(count - 1)..=i {
                prop_assert!(f.contains(f.hash(&item_n(j)), at), "item {} after {}", j, i);
            }
            if let Some(j) = i.checked_sub(count + spec.slack()) {
                prop_assert!(!f.contains(f.hash(&item_n(j)), at), "item {} kept after {}", j, i);
            }
            // The longest an item was kept, in adds after it.
            let oldest_found = (0..=i).find(|&j| f.contains(f.hash(&item_n(j)), at)).unwrap();
            kept_longest = kept_longest.max(i - oldest_found);
        }
        // The bound is reached: it is the true one, not a loose one.
        if total > 2 * count + spec.slack() {
            prop_assert_eq!(kept_longest, count - 1 + spec.slack());
        }
    }
}

fn item_n(n: u64) -> Vec<u8> {
    format!("distinct:{n}").into_bytes()
}

/// (d) A stream of 400,000 distinct items through an item window of 20,000
/// (8 generations, error 1%): at every checkpoint, the last 20,000 items
/// are all found and fresh items are found falsely at most 1% of the time
/// (measured on 20,000 of them: 1.25% is 3.5 standard deviations above).
#[test]
fn long_item_stream_stays_within_its_error_rate() {
    let params = WindowParams {
        error: 0.01,
        capacity: 20_000,
        span: Span::Items { count: 20_000 },
        generations: 8,
        policy: Policy::Exact,
        scaling: true,
    };
    stream(params, |_| 0, 20_000);
}

/// The same for a time window: 20,000 items per 20 s, one item a ms.
#[test]
fn long_time_stream_stays_within_its_error_rate() {
    let params = WindowParams {
        error: 0.01,
        capacity: 20_000,
        span: Span::Time { ms: 20_000 },
        generations: 8,
        policy: Policy::Pow2,
        scaling: true,
    };
    stream(params, |i| i, 20_000);
}

fn stream(params: WindowParams, clock: impl Fn(u64) -> u64, window_items: u64) {
    let spec = WindowSpec::new(&params).unwrap();
    let mut f = WindowFilter::new(spec, 0, &Unguarded).unwrap();
    let bytes = f.bytes();
    let key = |i: u64| format!("https://example.com/page/{i}").into_bytes();
    let mut worst: f64 = 0.0;
    let mut not_new = 0u64;
    for i in 0..400_000u64 {
        let now = clock(i);
        let at = f.epoch_at(now);
        f.rotate_to(at);
        // A distinct item answers "not new" only by a false positive.
        if !f.add(f.hash(&key(i)), &Unguarded).unwrap().new {
            not_new += 1;
        }
        if i % 25_000 == 24_999 {
            let at = f.epoch_at(now);
            for j in i + 1 - window_items..=i {
                assert!(f.contains(f.hash(&key(j)), at), "item {j} at {i}");
            }
            let probes = 20_000u64;
            let false_positives = (0..probes)
                .filter(|j| f.contains(f.hash(&format!("never:{i}:{j}").into_bytes()), at))
                .count();
            let rate = false_positives as f64 / probes as f64;
            worst = worst.max(rate);
            assert!(rate <= 0.0125, "{rate} at item {i}");
            // The estimate from the bits set is honest: within 4 standard
            // deviations of the measurement (plus 10% for the formula).
            let estimate = f.estimated_fpr(at);
            assert!(estimate <= 0.0101, "{estimate}");
            let sd = (estimate / probes as f64).sqrt();
            assert!(
                (rate - estimate).abs() <= 4.0 * sd + 0.1 * estimate,
                "measured {rate}, estimated {estimate} at item {i}"
            );
            assert_eq!(f.bytes(), bytes);
        }
    }
    assert!(worst > 0.0, "the measurement measures something");
    assert!(not_new < 400_000 / 100, "{not_new}");
}

/// Small generations (25 items, a few hundred bits) keep the error rate
/// too: every item gets its k distinct positions (a prime modulus), where
/// a modulus sharing factors with an item's step would repeat positions.
#[test]
fn small_generations_keep_their_error_rate() {
    for (window, error, generations) in [
        (100, 0.01, 4),
        (100, 0.001, 4),
        (100, 0.001, 8),
        (1024, 0.001, 4),
        (1024, 0.01, 8),
        (4096, 0.001, 4),
    ] {
        let params = WindowParams {
            error,
            capacity: window,
            span: Span::Items { count: window },
            generations,
            policy: Policy::Exact,
            scaling: true,
        };
        let spec = WindowSpec::new(&params).unwrap();
        let mut f = WindowFilter::new(spec, 0, &Unguarded).unwrap();
        for i in 0..10 * window {
            f.add(f.hash(format!("url:{i}").as_bytes()), &Unguarded)
                .unwrap();
        }
        let probes = 200_000u32;
        let found = (0..probes)
            .filter(|j| f.contains(f.hash(format!("absent:{j}").as_bytes()), f.epoch()))
            .count();
        let rate = f64::from(found as u32) / f64::from(probes);
        let sd = (error / f64::from(probes)).sqrt();
        assert!(
            rate <= error + 4.0 * sd,
            "window {window}, error {error}, {generations} generations: {rate}"
        );
    }
}

/// A guard that admits `left` more grown bit arrays, then refuses.
struct Allowance(std::cell::Cell<u32>);

impl ferrobloom_core::alloc_guard::AllocGuard for Allowance {
    fn admit(
        &self,
        request: ferrobloom_core::alloc_guard::AllocRequest,
    ) -> Result<(), ferrobloom_core::alloc_guard::Refusal> {
        match self.0.get() {
            0 => Err(ferrobloom_core::alloc_guard::Refusal {
                kind: ferrobloom_core::alloc_guard::RefusalKind::FilterCap,
                needed: request.filter_size_after,
                limit: 0,
                in_use: 0,
            }),
            n => {
                self.0.set(n - 1);
                Ok(())
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(60)))]

    /// (f) A burst into a scaling time window: every item added is found
    /// for the whole window, the window grows bit arrays only while a
    /// generation holds more than its share, the false positive rate of
    /// fresh items stays below twice its error rate, DUMP/RESTORE keeps
    /// the grown arrays, and memory returns to the planned size once the
    /// burst has left the window. A refused growth adds nothing.
    #[test]
    fn bursts_grow_generations_and_memory_returns(
        generations in 1u32..=4,
        capacity in 1u64..3_000,
        burst in 1u64..9_000,
        allowance in 0u32..6,
        nonscaling in any::<bool>(),
    ) {
        let params = WindowParams {
            error: 0.01,
            capacity,
            span: Span::Time { ms: 1_000 * u64::from(generations) },
            generations,
            policy: Policy::Exact,
            scaling: !nonscaling,
        };
        let spec = WindowSpec::new(&params).unwrap();
        let mut f = WindowFilter::new(spec, 0, &Unguarded).unwrap();
        let guard = Allowance(std::cell::Cell::new(allowance));
        let mut added = Vec::new();
        let mut refused = 0u64;
        for i in 0..burst {
            let bytes = f.bytes();
            match f.add(f.hash(&item_n(i)), &guard) {
                Ok(a) => {
                    prop_assert_eq!(f.bytes(), bytes + a.grown_bytes);
                    added.push(i);
                }
                Err(_) => {
                    prop_assert_eq!(f.bytes(), bytes);
                    refused += 1;
                }
            }
        }
        let grown: usize = f.slots().iter().map(|s| s.grown.len()).sum();
        prop_assert!(grown as u32 <= allowance);
        if nonscaling {
            prop_assert_eq!(grown, 0);
            prop_assert_eq!(refused, 0);
        } else if refused == 0 {
            // Each array but the newest holds its capacity.
            let slot = &f.slots()[f.active_slot()];
            if let Some((_, earlier)) = slot.grown.split_last() {
                prop_assert!(slot.first_items >= spec.link.entries);
                for l in earlier {
                    prop_assert!(l.items >= l.entries);
                }
            }
            // Found for the whole window, at its last millisecond too.
            let last = f.epoch_at(u64::from(generations) * 1_000 + 999);
            for &i in &added {
                prop_assert!(f.contains(f.hash(&item_n(i)), last));
            }
            let probes = 4_000u64;
            let fp = (0..probes)
                .filter(|j| f.contains(f.hash(format!("fresh:{j}").as_bytes()), f.epoch()))
                .count() as f64 / probes as f64;
            // Below twice the generation's share (plus 4 sd of noise).
            let bound = 2.0 * spec.generation_error;
            prop_assert!(fp <= bound + 4.0 * (bound / probes as f64).sqrt(), "{} {}", fp, bound);
        }
        // DUMP and RESTORE keep every array.
        let payload = dump::dump_payload(&f, ferrobloom_core::dump_format::RDB_VERSION_7_0);
        let g = dump::load_payload(&payload).unwrap();
        prop_assert_eq!(g.bytes(), f.bytes());
        prop_assert_eq!(dump::dump_payload(&g, ferrobloom_core::dump_format::RDB_VERSION_7_0), payload);
        // Once the burst has left the window, memory is as planned.
        f.rotate_to(f.epoch() + u64::from(generations) + 1);
        prop_assert_eq!(f.bytes(), spec.bytes);
        prop_assert_eq!(f.grown_links(), 0);
    }
}
