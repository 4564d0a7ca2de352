//! Property tests of the Cuckoo filter: random shapes (capacity, bucket
//! size, max iterations, expansion) driven by random add / unique add /
//! delete / compact sequences over a small item set (so duplicates and
//! shared fingerprints are common).
//!
//! (a) no false negatives: an item added more often than deleted is found;
//! (b) CF.COUNT is at least the number of copies stored;
//! (c) deleting an item that is present succeeds;
//! (d) the item counter equals the occupied slots;
//! (e) RDB (DUMP) save → load and SCANDUMP → LOADCHUNK in random order
//!     rebuild identical filters;
//! (f) the decoders (header, chunk, DUMP payload) never panic on arbitrary
//!     or mutated input, and what they accept works.

use std::collections::HashMap;

use ferrobloom_core::alloc_guard::{AllocGuard, AllocRequest, Refusal, RefusalKind};
use ferrobloom_core::cuckoo::dump::{dump_payload, load_payload};
use ferrobloom_core::cuckoo::fuzzing;
use ferrobloom_core::cuckoo::scandump::{self, create_from_header, load_chunk, Header, Step};
use ferrobloom_core::cuckoo::{CompactMode, CuckooFilter, CuckooHash, CuckooParams, InsertOutcome};
use ferrobloom_core::dump_format::{crc64_jones, RDB_VERSION_7_0};
use proptest::prelude::*;

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Refuses filters above 4 MiB: with expansion 4 and many duplicates the
/// sub-filters grow geometrically.
struct Capped;

const CAP: u64 = 4 << 20;

impl AllocGuard for Capped {
    fn admit(&self, r: AllocRequest) -> Result<(), Refusal> {
        if r.filter_size_after > CAP {
            Err(Refusal {
                kind: RefusalKind::FilterCap,
                needed: r.filter_size_after,
                limit: CAP,
                in_use: 0,
            })
        } else {
            Ok(())
        }
    }
}

#[derive(Clone, Debug)]
enum Op {
    Add(u8),
    AddNx(u8),
    Del(u8),
    Compact,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (0u8..40).prop_map(Op::Add),
        2 => (0u8..40).prop_map(Op::AddNx),
        3 => (0u8..40).prop_map(Op::Del),
        1 => Just(Op::Compact),
    ]
}

fn params() -> impl Strategy<Value = CuckooParams> {
    (1u8..=6, 1u16..=30, 0u16..=4, 0u64..=60).prop_map(|(bs, mi, e, extra)| CuckooParams {
        capacity: 2 * u64::from(bs) + extra,
        bucket_size: bs,
        max_iterations: mi,
        expansion: e,
    })
}

fn item(i: u8) -> Vec<u8> {
    format!("item-{i}").into_bytes()
}

fn occupied(f: &CuckooFilter) -> u64 {
    f.sub_filters()
        .iter()
        .map(|s| s.as_bytes().iter().filter(|&&b| b != 0).count() as u64)
        .sum()
}

/// Runs `ops`, checking (a)–(d) after each; returns the filter.
fn run(p: &CuckooParams, ops: &[Op]) -> Result<CuckooFilter, TestCaseError> {
    let mut f = CuckooFilter::new(p, &Capped).expect("small filters are admitted");
    let mut copies: HashMap<u8, u64> = HashMap::new();
    for op in ops {
        match *op {
            Op::Add(i) | Op::AddNx(i) => {
                let h = CuckooHash::of(&item(i));
                let nx = matches!(op, Op::AddNx(_));
                let out = if nx {
                    f.insert_unique(h, &Capped)
                } else {
                    f.insert(h, &Capped)
                };
                match out {
                    InsertOutcome::Inserted => *copies.entry(i).or_default() += 1,
                    InsertOutcome::Exists => prop_assert!(nx && f.contains(h)),
                    InsertOutcome::NoRoom => prop_assert_eq!(f.expansion(), 0),
                    InsertOutcome::GrowthFailed(_) => {}
                }
            }
            Op::Del(i) => {
                // Only items stored: deleting an absent item may clear
                // another item's matching fingerprint (any Cuckoo filter).
                if let Some(c) = copies.get_mut(&i).filter(|c| **c > 0) {
                    prop_assert!(
                        f.delete(CuckooHash::of(&item(i))),
                        "delete of a stored item"
                    );
                    *c -= 1;
                }
            }
            Op::Compact => f.compact(CompactMode::Continue),
        }
        for (&i, &c) in &copies {
            let h = CuckooHash::of(&item(i));
            if c > 0 {
                prop_assert!(f.contains(h), "false negative for {}", i);
            }
            prop_assert!(f.count(h) >= c, "count below the copies of {}", i);
        }
        prop_assert_eq!(f.items(), occupied(&f));
        prop_assert_eq!(f.items(), copies.values().sum::<u64>());
    }
    Ok(f)
}

fn same(a: &CuckooFilter, b: &CuckooFilter) -> Result<(), TestCaseError> {
    prop_assert_eq!(Header::of(a), Header::of(b));
    prop_assert_eq!(a.sub_filter_count(), b.sub_filter_count());
    for (x, y) in a.sub_filters().iter().zip(b.sub_filters()) {
        prop_assert_eq!(x.buckets(), y.buckets());
        prop_assert_eq!(x.as_bytes(), y.as_bytes());
    }
    Ok(())
}

fn frame(body: &[u8]) -> Vec<u8> {
    let mut p = body.to_vec();
    p.extend_from_slice(&RDB_VERSION_7_0.to_le_bytes());
    let crc = crc64_jones(&p);
    p.extend_from_slice(&crc.to_le_bytes());
    p
}

/// What a decoder accepted must work: operations do not panic and an added
/// item is found.
fn exercise(mut f: CuckooFilter) -> Result<(), TestCaseError> {
    if f.total_bytes() > CAP {
        return Ok(());
    }
    for i in 0..6u8 {
        let h = CuckooHash::of(&item(i));
        if f.insert(h, &Capped) == InsertOutcome::Inserted {
            prop_assert!(f.contains(h));
        }
        let _ = f.count(h);
    }
    let _ = f.delete(CuckooHash::of(&item(0)));
    f.compact(CompactMode::Stop);
    f.compact(CompactMode::Continue);
    let _ = dump_payload(&f, RDB_VERSION_7_0);
    let _ = scandump::chunks(&f).count();
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(256)))]

    #[test]
    fn workloads_keep_every_stored_item(p in params(), ops in prop::collection::vec(op(), 0..200)) {
        run(&p, &ops)?;
    }

    #[test]
    fn rdb_and_scandump_round_trip(
        p in params(),
        ops in prop::collection::vec(op(), 0..200),
        seed in any::<u64>(),
    ) {
        let f = run(&p, &ops)?;
        let payload = dump_payload(&f, RDB_VERSION_7_0);
        let g = load_payload(&payload).expect("own payload loads");
        same(&f, &g)?;
        prop_assert_eq!(dump_payload(&g, RDB_VERSION_7_0), payload);

        let header = Header::of(&f).encode();
        let mut h = create_from_header(&header, &Capped).expect("own header loads");
        let mut chunks: Vec<(u64, &[u8])> = scandump::chunks(&f).collect();
        // A deterministic shuffle from the seed.
        let mut s = seed | 1;
        for i in (1..chunks.len()).rev() {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            chunks.swap(i, (s % (i as u64 + 1)) as usize);
        }
        for (it, data) in chunks {
            load_chunk(&mut h, it as i64, data).expect("own chunk loads");
        }
        same(&f, &h)?;
        match scandump::scandump(&f, 0) {
            Step::Header(b) => prop_assert!(f.items() > 0 && b == header),
            Step::Done => prop_assert_eq!(f.items(), 0),
            Step::Chunk { .. } => prop_assert!(false, "iterator 0 is the header"),
        }
    }

    #[test]
    fn headers_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..48)) {
        if let Ok(f) = create_from_header(&bytes, &Capped) {
            prop_assert_eq!(bytes.len(), scandump::HEADER_LEN);
            exercise(f)?;
        }
    }

    #[test]
    fn plausible_headers_never_panic(
        items in any::<u64>(),
        n0_log in 0u32..64,
        deletes in any::<u64>(),
        subs in 0u64..70_000,
        bs in 0u16..300,
        mi in any::<u16>(),
        e in any::<u16>(),
    ) {
        let header = Header {
            items,
            base_buckets: 1u64 << n0_log,
            deletes,
            sub_filters: subs,
            bucket_size: bs,
            max_iterations: mi,
            expansion: e,
        };
        if let Ok(f) = create_from_header(&header.encode(), &Capped) {
            prop_assert_eq!(Header::of(&f), header);
            exercise(f)?;
        }
    }

    #[test]
    fn chunks_never_panic(
        p in params(),
        iterator in any::<i64>(),
        small in -4i64..80,
        data in prop::collection::vec(any::<u8>(), 0..40),
    ) {
        let mut f = CuckooFilter::new(&p, &Capped).unwrap();
        let total = f.total_bytes();
        for it in [iterator, small] {
            if load_chunk(&mut f, it, &data).is_ok() {
                prop_assert!(it > data.len() as i64);
                prop_assert!((it - 1) as u64 <= total);
            }
        }
        prop_assert_eq!(f.total_bytes(), total);
        exercise(f)?;
    }

    #[test]
    fn fuzz_bodies_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..160)) {
        fuzzing::header(&bytes);
        fuzzing::chunk(&bytes);
        fuzzing::rdb(&bytes);
        let mut with_prefix = hex_prefix();
        with_prefix.extend_from_slice(&bytes);
        fuzzing::rdb(&with_prefix);
    }

    #[test]
    fn payload_bodies_never_panic(body in prop::collection::vec(any::<u8>(), 0..120)) {
        let mut with_prefix = hex_prefix();
        with_prefix.extend_from_slice(&body);
        for b in [&body[..], &with_prefix[..]] {
            if let Ok(f) = load_payload(&frame(b)) {
                exercise(f)?;
            }
        }
    }

    #[test]
    fn mutated_payloads_never_panic(
        p in params(),
        ops in prop::collection::vec(op(), 0..60),
        flips in prop::collection::vec((any::<prop::sample::Index>(), 0u8..8), 1..4),
        cut in any::<prop::sample::Index>(),
    ) {
        let f = run(&p, &ops)?;
        let payload = dump_payload(&f, RDB_VERSION_7_0);
        let body = &payload[..payload.len() - 10];
        let mut flipped = body.to_vec();
        for (i, bit) in &flips {
            let at = i.index(flipped.len());
            flipped[at] ^= 1 << bit;
        }
        if let Ok(g) = load_payload(&frame(&flipped)) {
            exercise(g)?;
        }
        let cut = cut.index(body.len());
        prop_assert!(load_payload(&frame(&body[..cut])).is_err(), "a truncated payload loads");
    }
}

/// The start of a MBbloomCF value (module opcode and id, encoding 4), so
/// random bodies reach the field decoder.
fn hex_prefix() -> Vec<u8> {
    let mut p = vec![0x07, 0x81];
    p.extend_from_slice(&ferrobloom_core::cuckoo::dump::type_id(4).to_be_bytes());
    p
}
