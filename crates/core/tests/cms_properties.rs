//! Property tests of the Count-Min sketch: random shapes (width, depth,
//! cell size) driven by random streams over a small item set, so that
//! items share columns.
//!
//! (a) for streams of non-negative increments, the estimate is never below
//!     the true count, and N is the sum of the increments;
//! (b) merging two sketches (weights 1, 1) equals one sketch fed both
//!     streams, and weights scale the cells exactly;
//! (c) RDB save → load and DUMP → RESTORE give identical values;
//! (d) a failed increment or merge leaves every byte and N unchanged, a
//!     successful one moves each of the item's cells and N by exactly the
//!     increment;
//! (e) the DUMP decoder never panics on mutated payloads.

use std::collections::HashMap;

use ferrobloom_core::alloc_guard::Unguarded;
use ferrobloom_core::cms::dump::{dump_payload, load_payload};
use ferrobloom_core::cms::merge::merge;
use ferrobloom_core::cms::rdb::{self, RdbError, RdbInput, RdbOutput};
use ferrobloom_core::cms::{fuzzing, CellSize, CountMinSketch, IncrError, Operand};
use ferrobloom_core::dump_format::RDB_VERSION_7_0;
use ferrobloom_core::BitArray;
use proptest::prelude::*;

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn shape() -> impl Strategy<Value = (u64, u64, CellSize)> {
    (
        1u64..40,
        1u64..40,
        prop::sample::select(CellSize::ALL.to_vec()),
    )
}

fn new(w: u64, d: u64, c: CellSize) -> CountMinSketch {
    CountMinSketch::new(w, d, c, &Unguarded).expect("a small sketch")
}

/// Items 0..24 as bytes, with increments up to `max`.
fn stream(max: i64) -> impl Strategy<Value = Vec<(u8, i64)>> {
    prop::collection::vec((0u8..24, 0..=max), 0..120)
}

fn item(i: u8) -> [u8; 2] {
    [b'i', i]
}

/// The values an RDB save writes, read back in order (the module API's
/// typed calls without Redis' framing).
#[derive(Default)]
struct Fields {
    unsigned: Vec<u64>,
    strings: Vec<Vec<u8>>,
}

impl RdbOutput for Fields {
    fn write_unsigned(&mut self, v: u64) {
        self.unsigned.push(v);
    }
    fn write_double(&mut self, _: f64) {
        unreachable!("a sketch saves no double");
    }
    fn write_bytes(&mut self, b: &[u8]) {
        self.strings.push(b.to_vec());
    }
}

impl RdbInput for Fields {
    fn read_unsigned(&mut self) -> Result<u64, RdbError> {
        if self.unsigned.is_empty() {
            return Err(RdbError::Io);
        }
        Ok(self.unsigned.remove(0))
    }
    fn read_double(&mut self) -> Result<f64, RdbError> {
        Err(RdbError::Io)
    }
    fn read_bit_array(&mut self) -> Result<BitArray, RdbError> {
        if self.strings.is_empty() {
            return Err(RdbError::Io);
        }
        BitArray::from_bytes(&self.strings.remove(0)).map_err(|_| RdbError::Io)
    }
}

fn same(a: &CountMinSketch, b: &CountMinSketch) {
    assert_eq!(
        (a.width(), a.depth(), a.count(), a.cell_size()),
        (b.width(), b.depth(), b.count(), b.cell_size())
    );
    assert_eq!(a.cell_bytes(), b.cell_bytes());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(256)))]

    #[test]
    fn estimates_never_undercount((w, d, c) in shape(), ops in stream(300)) {
        let mut s = new(w, d, c);
        let mut truth: HashMap<u8, u64> = HashMap::new();
        let mut total = 0u64;
        for (i, n) in ops {
            match s.incrby(&item(i), n) {
                Ok(est) => {
                    *truth.entry(i).or_default() += n as u64;
                    total += n as u64;
                    prop_assert!(est >= truth[&i]);
                }
                Err(e) => prop_assert_eq!(e, IncrError::Overflow),
            }
        }
        prop_assert_eq!(s.count(), total);
        for i in 0..24u8 {
            prop_assert!(s.query(&item(i)) >= truth.get(&i).copied().unwrap_or(0));
        }
    }

    #[test]
    fn merge_equals_adding_the_streams(
        (w, d) in (1u64..30, 1u64..8),
        a in stream(1000),
        b in stream(1000),
        k in 0i64..5,
    ) {
        // 8-byte cells: nothing in these streams can overflow.
        let c = CellSize::Eight;
        let (mut sa, mut sb, mut both) = (new(w, d, c), new(w, d, c), new(w, d, c));
        for &(i, n) in &a {
            sa.incrby(&item(i), n).unwrap();
            both.incrby(&item(i), n).unwrap();
        }
        for &(i, n) in &b {
            sb.incrby(&item(i), n).unwrap();
            both.incrby(&item(i), n).unwrap();
        }
        let mut dest = new(w, d, c);
        merge(&mut dest, &[(Operand::Other(&sa), 1), (Operand::Other(&sb), 1)]).unwrap();
        same(&dest, &both);
        // Weights scale every cell and N; dest as a source works in place.
        let mut scaled = sa.try_clone(&Unguarded).unwrap();
        merge(&mut scaled, &[(Operand::Dest, k), (Operand::Other(&sb), k)]).unwrap();
        prop_assert_eq!(scaled.count(), both.count() * k as u64);
        for j in 0..w * d {
            prop_assert_eq!(scaled.cell(j), both.cell(j) * k as u64);
        }
        // Subtracting a sketch from itself empties it.
        merge(&mut scaled, &[(Operand::Dest, 1), (Operand::Dest, -1)]).unwrap();
        prop_assert!(scaled.cell_bytes().iter().all(|&x| x == 0));
        prop_assert_eq!(scaled.count(), 0);
    }

    #[test]
    fn save_load_and_dump_restore_are_identical(
        (w, d, c) in shape(),
        ops in prop::collection::vec((0u8..24, -300i64..300), 0..120),
    ) {
        let mut s = new(w, d, c);
        for (i, n) in ops {
            let _ = s.incrby(&item(i), n);
        }
        let mut fields = Fields::default();
        let encver = rdb::save(&s, &mut fields);
        prop_assert_eq!(encver, rdb::ENCODING_2_8_2);
        prop_assert_eq!(fields.unsigned.len(), if c == CellSize::Four { 3 } else { 4 });
        let back = rdb::load(&mut fields, encver).unwrap();
        same(&back, &s);
        let payload = dump_payload(&s, RDB_VERSION_7_0);
        let restored = load_payload(&payload).unwrap();
        same(&restored, &s);
        prop_assert_eq!(dump_payload(&restored, RDB_VERSION_7_0), payload);
    }

    #[test]
    fn failed_increments_change_nothing(
        (w, d, c) in shape(),
        ops in prop::collection::vec((0u8..24, any::<i64>(), 0u32..64), 0..120),
    ) {
        let mut s = new(w, d, c);
        for (i, n, shift) in ops {
            // Mostly small increments, some huge, of both signs.
            let n = if shift > 48 { n } else { n >> shift.max(52) };
            let bytes = s.cell_bytes().to_vec();
            let count = s.count();
            let cells: Vec<u64> = (0..d).map(|r| s.cell(s.cell_index(&item(i), r))).collect();
            match s.incrby(&item(i), n) {
                Ok(est) => {
                    prop_assert_eq!(i128::from(s.count()), i128::from(count) + i128::from(n));
                    for (r, before) in cells.iter().enumerate() {
                        let now = s.cell(s.cell_index(&item(i), r as u64));
                        prop_assert_eq!(i128::from(now), i128::from(*before) + i128::from(n));
                    }
                    prop_assert_eq!(est, s.query(&item(i)));
                }
                Err(e) => {
                    prop_assert_eq!(s.cell_bytes(), &bytes[..]);
                    prop_assert_eq!(s.count(), count);
                    prop_assert_eq!(e == IncrError::Overflow, n > 0);
                    let limit = c.max_count();
                    let fits = cells.iter().all(|&x| {
                        let v = i128::from(x) + i128::from(n);
                        (0..=i128::from(limit)).contains(&v)
                    }) && (0..=i128::from(i64::MAX)).contains(&(i128::from(count) + i128::from(n)));
                    prop_assert!(!fits, "refused an increment that fits");
                }
            }
        }
    }

    #[test]
    fn merges_succeed_exactly_when_2_8_2s_check_passes(
        (w, d, c) in shape(),
        ops in stream(100),
        weights in prop::collection::vec(
            prop_oneof![
                -3i64..4,
                any::<i64>(),
                (0u32..63).prop_map(|k| (1i64 << k) - 1),
                // Powers of two of both signs: products that wrap to
                // small values, sums that cancel.
                (0u32..63, any::<bool>()).prop_map(|(k, neg)| if neg { -(1i64 << k) } else { 1 << k }),
            ],
            1..4,
        ),
        zero_count in any::<bool>(),
    ) {
        let mut a = new(w, d, c);
        for (i, n) in ops {
            let _ = a.incrby(&item(i), n);
        }
        if zero_count {
            // A value whose N is below its cells (2.8.2 loads such values
            // as they are): the cells' own checks decide, not N's.
            let mut fields = Fields::default();
            let encver = rdb::save(&a, &mut fields);
            fields.unsigned[2] = 0;
            a = rdb::load(&mut fields, encver).unwrap();
        }
        let other = a.try_clone(&Unguarded).unwrap();
        let before = (a.cell_bytes().to_vec(), a.count());
        let sources: Vec<_> = weights
            .iter()
            .enumerate()
            .map(|(k, &wt)| (if k % 2 == 0 { Operand::Dest } else { Operand::Other(&other) }, wt))
            .collect();
        // The reference: every product and partial sum checked in i64,
        // sources in order (the same value for every source here).
        let reference = |x: u64, limit: u64| -> Option<u64> {
            let mut sum = 0i64;
            for &wt in &weights {
                let p = i64::try_from(i128::from(x) * i128::from(wt)).ok()?;
                sum = sum.checked_add(p)?;
            }
            u64::try_from(sum).ok().filter(|&v| v <= limit)
        };
        let want_cells: Option<Vec<u64>> =
            (0..w * d).map(|j| reference(other.cell(j), c.max_count())).collect();
        let want_count = reference(before.1, u64::MAX);
        match merge(&mut a, &sources) {
            Ok(()) => {
                prop_assert_eq!(Some(a.count()), want_count);
                let cells: Vec<u64> = (0..w * d).map(|j| a.cell(j)).collect();
                prop_assert_eq!(Some(cells), want_cells);
            }
            Err(_) => {
                prop_assert!(want_count.is_none() || want_cells.is_none(), "refused a merge that fits");
                prop_assert_eq!((a.cell_bytes().to_vec(), a.count()), before);
            }
        }
    }

    #[test]
    fn mutated_payloads_never_panic(
        (w, d, c) in shape(),
        ops in stream(50),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut s = new(w, d, c);
        for (i, n) in ops {
            let _ = s.incrby(&item(i), n);
        }
        let payload = dump_payload(&s, RDB_VERSION_7_0);
        let mut body = payload[..payload.len() - 10].to_vec();
        for (at, x) in flips {
            let i = at.index(body.len());
            body[i] ^= x;
        }
        fuzzing::rdb(&body);
        fuzzing::round_trips(&body);
        fuzzing::rdb(&body[..cut.index(body.len())]);
    }
}
