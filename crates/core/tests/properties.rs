//! Property tests of the core: random chains (capacity, error, expansion,
//! scaling, allocation policy, hash width) fed random binary items.
//!
//! (a) no false negatives, also across scale-outs;
//! (b) SCANDUMP -> LOADCHUNK in random order rebuilds an identical chain;
//! (c) RDB save -> load round-trips identically;
//! (d) `Link::ones()` is always the popcount of the array;
//! (e) mutated headers and DUMP payloads never panic, and what loads works;
//! (f) bit positions equal the naive `((a + i*b) mod 2^64) mod M`.

mod common;

use common::*;
use ferrobloom_core::alloc_guard::{AllocGuard, AllocRequest, Refusal, RefusalKind, Unguarded};
use ferrobloom_core::bloom::chain::{options, AddOutcome, Chain, ChainParams};
use ferrobloom_core::bloom::dump::{self, load_payload};
use ferrobloom_core::bloom::link::Link;
use ferrobloom_core::bloom::scandump::{self, decode_header, encode_header, load_chunk};
use ferrobloom_core::bloom::sizing::Policy;
use ferrobloom_core::dump_format::crc64_jones;
use ferrobloom_core::hash::HashPair;
use ferrobloom_core::BitArray;
use proptest::prelude::*;

/// Cases per property: `PROPTEST_CASES` when set (longer runs), else the
/// given default.
fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[derive(Clone, Debug)]
struct Config {
    capacity: u64,
    error: f64,
    growth: u32,
    nonscaling: bool,
    policy: Policy,
    /// Re-create the chain with legacy options (no FORCE64) through a
    /// header, so the 32-bit hash is exercised too.
    width32: bool,
}

fn config() -> impl Strategy<Value = Config> {
    (
        prop_oneof![1u64..=20, 1u64..=5000],
        (1e-6f64.ln()..0.5f64.ln()).prop_map(f64::exp),
        1u32..=4,
        prop::bool::weighted(0.25),
        prop_oneof![Just(Policy::Exact), Just(Policy::Pow2)],
        prop::bool::weighted(0.25),
    )
        .prop_map(
            |(capacity, error, growth, nonscaling, policy, width32)| Config {
                capacity,
                error: error.clamp(1.000_001e-6, 0.499_999),
                growth,
                nonscaling,
                policy,
                width32,
            },
        )
}

/// Binary items: empty, NUL / 0xFF runs, short and longer random strings.
fn item() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(Vec::new()),
        prop::collection::vec(prop_oneof![Just(0u8), Just(0xffu8)], 1..12),
        prop::collection::vec(any::<u8>(), 1..16),
        prop::collection::vec(any::<u8>(), 16..80),
    ]
}

/// Unsigned values around the edges that matter to the loaders.
fn extreme_u64() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        Just(1),
        Just(2),
        Just(63),
        Just(64),
        Just(65),
        Just(1 << 32),
        Just(u64::from(u32::MAX)),
        Just(1 << 63),
        Just(u64::MAX),
        Just(u64::MAX / 2 + 1),
        0u64..100,
        any::<u64>(),
    ]
}

fn items(max: usize) -> impl Strategy<Value = Vec<Vec<u8>>> {
    prop::collection::vec(item(), 0..max)
}

fn build(cfg: &Config) -> Chain {
    let params = ChainParams {
        capacity: cfg.capacity,
        error: cfg.error,
        growth: cfg.growth,
        nonscaling: cfg.nonscaling,
        policy: cfg.policy,
    };
    let chain = Chain::new(&params, &Unguarded).expect("valid parameters");
    if !cfg.width32 {
        return chain;
    }
    let mut header = encode_header(&chain);
    let opts = chain.options() & !options::FORCE64;
    header[12..16].copy_from_slice(&opts.to_le_bytes());
    decode_header(&header)
        .expect("legacy options are valid")
        .instantiate(&Unguarded)
        .unwrap()
}

fn add_all(chain: &mut Chain, items: &[Vec<u8>]) -> Vec<AddOutcome> {
    items.iter().map(|i| add(chain, i)).collect()
}

/// A deterministic permutation of 0..n from a seed (Fisher-Yates, splitmix).
fn permutation(n: usize, mut seed: u64) -> Vec<usize> {
    let mut next = || {
        seed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut p: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        p.swap(i, j);
    }
    p
}

/// Admits up to a byte budget per request (fuzzed data may ask for a lot).
struct Cap(u64);
impl AllocGuard for Cap {
    fn admit(&self, r: AllocRequest) -> Result<(), Refusal> {
        if r.bytes > self.0 {
            Err(Refusal {
                kind: RefusalKind::FilterCap,
                needed: r.bytes,
                limit: self.0,
                in_use: 0,
            })
        } else {
            Ok(())
        }
    }
}

/// Uses a loaded chain the way commands would; must not panic.
fn exercise(chain: &mut Chain, probes: &[Vec<u8>]) {
    let guard = Cap(1 << 20);
    for p in probes {
        let h = chain.hash(p);
        let _ = chain.contains(h);
        let _ = chain.add(h, &guard);
        let _ = chain.contains(h);
    }
    let _ = chain.debug_lines();
    let _ = chain.reported_size();
    let _ = encode_header(chain);
    let _ = scandump::data_chunk(chain, 1);
    let _ = dump::dump_payload(chain, 10);
    assert_ones_exact(chain);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(160)))]

    /// (a) Every item an add accepted (added or already present) is then
    /// contained, whatever scale-outs happened; counts add up.
    #[test]
    fn no_false_negatives(cfg in config(), items in items(400)) {
        let mut chain = build(&cfg);
        let outcomes = add_all(&mut chain, &items);
        let mut added = 0u64;
        for (item, o) in items.iter().zip(&outcomes) {
            match o {
                AddOutcome::Added => added += 1,
                AddOutcome::Present => {}
                AddOutcome::Full => prop_assert!(cfg.nonscaling, "only non-scaling filters are full"),
                other => prop_assert!(false, "unexpected {other:?}"),
            }
            if *o != AddOutcome::Full {
                prop_assert!(contains(&chain, item));
            }
        }
        for (item, o) in items.iter().zip(&outcomes) {
            if *o != AddOutcome::Full {
                prop_assert!(contains(&chain, item), "lost {item:?}");
            }
        }
        prop_assert_eq!(chain.items(), added);
        prop_assert_eq!(chain.links().iter().map(|l| l.items).sum::<u64>(), added);
        if cfg.nonscaling {
            prop_assert_eq!(chain.links().len(), 1);
            prop_assert!(chain.items() <= chain.links()[0].entries);
            if cfg.policy == Policy::Exact {
                prop_assert_eq!(chain.links()[0].entries, cfg.capacity);
            }
        }
        let links = chain.links();
        for l in &links[..links.len() - 1] {
            prop_assert_eq!(l.items, l.entries, "older links are exactly full");
        }
        for (n, l) in links.iter().enumerate() {
            let requested = cfg.capacity.saturating_mul(u64::from(cfg.growth).saturating_pow(n as u32));
            if cfg.policy == Policy::Exact {
                prop_assert_eq!(l.entries, requested);
            } else {
                prop_assert!(l.entries >= requested, "pow2 links only inflate");
            }
            if cfg.policy == Policy::Pow2 {
                prop_assert!(l.n2 > 0);
                prop_assert_eq!(l.modulus(), 1u64 << l.n2);
            } else {
                prop_assert_eq!(l.modulus(), l.bits);
            }
        }
        prop_assert_eq!(
            chain.reported_size(),
            32 + 64 * links.len() as u64 + links.iter().map(|l| l.bytes()).sum::<u64>()
        );
    }

    /// Every lookup path (single, batched, the reference formula link by
    /// link) gives the same answer, for present and absent items, also on
    /// chains longer than the prefetched window of older links.
    #[test]
    fn lookup_paths_agree(
        cfg in config(),
        items in items(400),
        probes in items(100),
        short in 0usize..40,
    ) {
        let mut chain = build(&cfg);
        add_all(&mut chain, &items);
        let hashes: Vec<HashPair> = items.iter().chain(&probes).map(|i| chain.hash(i)).collect();
        let mut batched = vec![false; hashes.len()];
        chain.contains_many(&hashes, &mut batched);
        // A batch shorter than the pipeline's reach answers alike.
        let short = short.min(hashes.len());
        let mut short_batch = vec![false; short];
        chain.contains_many(&hashes[hashes.len() - short..], &mut short_batch);
        prop_assert_eq!(&short_batch[..], &batched[hashes.len() - short..]);
        for (h, got) in hashes.iter().zip(&batched) {
            let naive = chain.links().iter().any(|l| {
                naive_positions(h.a, h.b, l.hashes, l.modulus())
                    .iter()
                    .all(|&p| l.data().get(p))
            });
            prop_assert_eq!(chain.contains(*h), naive);
            prop_assert_eq!(*got, naive);
        }
    }

    /// Batched adds (the pipelined path, and the item-by-item fallback when
    /// a batch meets a full link or a scale-out) give the same outcomes,
    /// counts and bits as adding the items one by one, whatever the batch
    /// boundaries, duplicates inside a batch included.
    #[test]
    fn batched_adds_match_single_adds(
        cfg in config(),
        first in items(300),
        batch in items(200),
        cut in 1usize..130,
    ) {
        let mut single = build(&cfg);
        let mut batched = build(&cfg);
        add_all(&mut single, &first);
        add_all(&mut batched, &first);
        // Duplicates, within the batch and of earlier items.
        let mut batch = batch;
        batch.extend(batch.clone().into_iter().take(20));
        batch.extend(first.iter().take(20).cloned());
        let hashes: Vec<HashPair> = batch.iter().map(|i| batched.hash(i)).collect();
        let mut got = Vec::new();
        for piece in hashes.chunks(cut) {
            let mut out = vec![AddOutcome::Present; piece.len()];
            let done = batched.add_many(piece, &Unguarded, &mut out);
            got.extend_from_slice(&out[..done]);
            if got.last() == Some(&AddOutcome::Full) {
                break;
            }
        }
        // Item by item, stopping after "full" as a batch does.
        let mut want = Vec::new();
        for h in &hashes {
            let o = single.add(*h, &Unguarded);
            want.push(o);
            if o == AddOutcome::Full {
                break;
            }
        }
        prop_assert_eq!(got, want);
        prop_assert_eq!(batched.items(), single.items());
        prop_assert_eq!(batched.links().len(), single.links().len());
        for (a, b) in batched.links().iter().zip(single.links()) {
            prop_assert_eq!(a.items, b.items);
            prop_assert!(a.data().as_bytes() == b.data().as_bytes(), "bits differ");
        }
        assert_ones_exact(&batched);
    }

    /// (b) SCANDUMP then LOADCHUNK with the data chunks in random order
    /// gives an identical chain, which then behaves identically.
    #[test]
    fn scandump_loadchunk_round_trip(
        cfg in config(),
        items in items(300),
        more in items(50),
        seed in any::<u64>(),
    ) {
        let mut chain = build(&cfg);
        add_all(&mut chain, &items);
        let chunks = scandump(&chain);
        prop_assert_eq!(chunks.len() - 1, chain.links().len(), "small links: one chunk each");
        let order = permutation(chunks.len() - 1, seed);
        let mut back = loadchunks(&chunks, &order).expect("own export loads");
        assert_same_chain(&chain, &back, "scandump round trip");
        prop_assert_eq!(chain.ones(), back.ones());
        prop_assert_eq!(scandump(&back), chunks);
        // Same future.
        prop_assert_eq!(add_all(&mut chain, &more), add_all(&mut back, &more));
        assert_same_chain(&chain, &back, "after more adds");
    }

    /// (b') The same with every link cut into random pieces.
    #[test]
    fn loadchunk_random_pieces(cfg in config(), items in items(200), cut in 1usize..64, seed in any::<u64>()) {
        let mut chain = build(&cfg);
        add_all(&mut chain, &items);
        let mut pieces = Vec::new();
        let mut start = 0usize;
        for l in chain.links() {
            let data = l.data().as_bytes();
            for (k, piece) in data.chunks(cut).enumerate() {
                let end = start + k * cut + piece.len();
                pieces.push(((end + 1) as i64, piece.to_vec()));
            }
            start += data.len();
        }
        let mut back = decode_header(&encode_header(&chain)).unwrap().instantiate(&Unguarded).unwrap();
        for i in permutation(pieces.len(), seed) {
            let (it, data) = &pieces[i];
            load_chunk(&mut back, *it, data).unwrap();
        }
        assert_same_chain(&chain, &back, "pieces");
    }

    /// (c) RDB save through a DumpWriter, then load, round-trips
    /// identically, and saving again gives the same bytes.
    #[test]
    fn rdb_round_trip(cfg in config(), items in items(300), more in items(50)) {
        let mut chain = build(&cfg);
        add_all(&mut chain, &items);
        let p = dump::dump_payload(&chain, 10);
        let mut back = load_payload(&p).expect("own payload loads");
        assert_same_chain(&chain, &back, "rdb round trip");
        prop_assert_eq!(dump::dump_payload(&back, 10), p);
        prop_assert_eq!(add_all(&mut chain, &more), add_all(&mut back, &more));
        assert_same_chain(&chain, &back, "after more adds");
    }

    /// (d) `ones()` equals the popcount after adds and after LOADCHUNK of
    /// random bytes at random places.
    #[test]
    fn ones_tracks_the_popcount(
        cfg in config(),
        items in items(200),
        writes in prop::collection::vec((any::<prop::sample::Index>(), any::<prop::sample::Index>(), prop::collection::vec(any::<u8>(), 0..40)), 0..20),
        more in items(50),
    ) {
        let mut chain = build(&cfg);
        add_all(&mut chain, &items);
        assert_ones_exact(&chain);
        for (link_ix, off_ix, bytes) in writes {
            let sizes: Vec<u64> = chain.links().iter().map(|l| l.bytes()).collect();
            let link = link_ix.index(sizes.len());
            let offset = off_ix.index(sizes[link] as usize) as u64;
            let len = (bytes.len() as u64).min(sizes[link] - offset) as usize;
            let start: u64 = sizes[..link].iter().sum::<u64>() + offset;
            let iter = (start + len as u64 + 1) as i64;
            load_chunk(&mut chain, iter, &bytes[..len]).unwrap();
            let o = offset as usize;
            prop_assert_eq!(&chain.links()[link].data().as_bytes()[o..o + len], &bytes[..len]);
            assert_ones_exact(&chain);
        }
        add_all(&mut chain, &more);
        assert_ones_exact(&chain);
    }

    /// (e) A mutated header never panics; what loads is usable.
    #[test]
    fn mutated_headers_never_panic(
        cfg in config(),
        items in items(40),
        mutations in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        resize in prop_oneof![Just(0i32), -3i32..3],
        probes in items(10),
    ) {
        let mut chain = build(&cfg);
        add_all(&mut chain, &items);
        let mut h = encode_header(&chain);
        for (ix, byte) in &mutations {
            let i = ix.index(h.len());
            h[i] = *byte;
        }
        if resize < 0 {
            h.truncate(h.len().saturating_sub((-resize) as usize));
        } else {
            h.extend(std::iter::repeat_n(0xAB, resize as usize));
        }
        if let Ok(header) = decode_header(&h) {
            if let Ok(mut loaded) = header.instantiate(&Cap(1 << 22)) {
                prop_assert_eq!(encode_header(&loaded), h.clone());
                let _ = load_chunk(&mut loaded, 9, &[0xff; 8]);
                exercise(&mut loaded, &probes);
            }
        }
    }

    /// (e) A mutated DUMP payload never panics (with the CRC fixed up, so
    /// the parser sees the damage, or left stale); what loads is usable.
    #[test]
    fn mutated_payloads_never_panic(
        cfg in config(),
        items in items(40),
        mutations in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        fix_crc in prop::bool::weighted(0.9),
        probes in items(10),
    ) {
        let mut chain = build(&cfg);
        add_all(&mut chain, &items);
        let mut p = dump::dump_payload(&chain, 10);
        let body = p.len() - 10;
        for (ix, byte) in &mutations {
            let i = ix.index(body);
            p[i] = *byte;
        }
        if fix_crc {
            let n = p.len();
            let crc = crc64_jones(&p[..n - 8]);
            p[n - 8..].copy_from_slice(&crc.to_le_bytes());
        }
        if let Ok(mut loaded) = load_payload(&p) {
            exercise(&mut loaded, &probes);
        }
    }

    /// (e) Field-level damage: any field of a valid payload or header
    /// replaced by an arbitrary or extreme value of its type.
    #[test]
    fn replaced_fields_never_panic(
        cfg in config(),
        items in items(60),
        replacements in prop::collection::vec((any::<prop::sample::Index>(), extreme_u64(), any::<u64>()), 1..4),
        probes in items(10),
    ) {
        let mut chain = build(&cfg);
        add_all(&mut chain, &items);
        // The DUMP fields.
        let mut fields = walk_payload(&dump::dump_payload(&chain, 10)).fields;
        for (ix, value, bits) in &replacements {
            let i = ix.index(fields.len());
            fields[i] = match &fields[i] {
                Field::U(_) => Field::U(*value),
                Field::D(_) => Field::D(f64::from_bits(*bits)),
                Field::S(s) => Field::S(s[..(*value as usize) % (s.len() + 1)].to_vec()),
            };
        }
        if let Ok(mut loaded) = load_payload(&payload(4, &fields)) {
            exercise(&mut loaded, &probes);
        }
        // The header fields (u64 / u32 / f64 / u8 at their offsets).
        let mut h = encode_header(&chain);
        let mut slots: Vec<(usize, usize)> = vec![(0, 8), (8, 4), (12, 4), (16, 4)];
        for l in 0..chain.links().len() {
            let at = scandump::HEADER_FIXED + l * scandump::HEADER_PER_LINK;
            for (off, len) in [(0, 8), (8, 8), (16, 8), (24, 8), (32, 8), (40, 4), (44, 8), (52, 1)] {
                slots.push((at + off, len));
            }
        }
        for (ix, value, bits) in &replacements {
            let (at, len) = slots[ix.index(slots.len())];
            let v = if len == 8 && (at + 8 <= h.len()) && ix.index(2) == 0 { *bits } else { *value };
            h[at..at + len].copy_from_slice(&v.to_le_bytes()[..len]);
        }
        if let Ok(header) = decode_header(&h) {
            if let Ok(mut loaded) = header.instantiate(&Cap(1 << 22)) {
                exercise(&mut loaded, &probes);
            }
        }
    }

    /// (e) Arbitrary bytes as a header or a payload never panic.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400), probes in items(5)) {
        if let Ok(header) = decode_header(&bytes) {
            if let Ok(mut loaded) = header.instantiate(&Cap(1 << 22)) {
                exercise(&mut loaded, &probes);
            }
        }
        let mut p = bytes.clone();
        if p.len() >= 8 {
            let n = p.len();
            let crc = crc64_jones(&p[..n - 8]);
            p[n - 8..].copy_from_slice(&crc.to_le_bytes());
        }
        if let Ok(mut loaded) = load_payload(&p) {
            exercise(&mut loaded, &probes);
        }
    }
}

/// The positions of the reference formula, in probe order.
fn naive_positions(a: u64, b: u64, k: u32, m: u64) -> Vec<u64> {
    (0..u64::from(k))
        .map(|i| a.wrapping_add(i.wrapping_mul(b)) % m)
        .collect()
}

fn check_positions(link: &mut Link, a: u64, b: u64, m: u64) -> Result<(), TestCaseError> {
    prop_assert_eq!(link.modulus(), m);
    let h = HashPair { a, b };
    let want = naive_positions(a, b, link.hashes, m);
    let mut all = vec![u64::MAX; link.hashes as usize];
    prop_assert_eq!(link.positions_into(h, &mut all), all.len());
    prop_assert_eq!(&all, &want);
    // A shorter buffer gets the first positions.
    let mut buf = [u64::MAX; 64];
    let n = link.positions_into(h, &mut buf);
    prop_assert_eq!(n, (link.hashes as usize).min(buf.len()));
    prop_assert_eq!(&buf[..n], &want[..n]);
    let head = link.head(h);
    prop_assert_eq!(head[0], want[0]);
    if link.hashes > 1 {
        prop_assert_eq!(head[1], want[1]);
    }
    let naive_contains = want.iter().all(|&p| link.data().get(p));
    prop_assert!(!naive_contains || link.ones() > 0);
    prop_assert_eq!(link.contains_from_head(h, head), naive_contains);
    prop_assert!(link.insert(h));
    prop_assert!(want.iter().all(|&p| link.data().get(p)));
    prop_assert!(link.contains_from_head(h, head));
    let mut distinct = want.clone();
    distinct.sort_unstable();
    distinct.dedup();
    prop_assert_eq!(set_bits(link.data().as_bytes()), distinct.clone());
    prop_assert_eq!(link.ones(), distinct.len() as u64);
    prop_assert!(!link.insert(h), "a second insert flips nothing");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(400)))]

    /// (f) Exact policy: modulus = the stored bit count, any value up to
    /// the array's size (legacy data need not be a multiple of 8 or 64).
    #[test]
    fn positions_exact_policy(
        a in any::<u64>(),
        b in any::<u64>(),
        m in prop_oneof![1u64..=64, 1u64..=5000, 1u64..=(1 << 22)],
        slack in 0u64..16,
        hashes in prop_oneof![1u32..=20, 1u32..=200],
    ) {
        let bytes = m.div_ceil(8) + slack;
        let data = BitArray::zeroed(bytes).unwrap();
        let mut link = Link::from_parts(100, 0.01, 9.585, hashes, m, 0, 0, data).unwrap();
        check_positions(&mut link, a, b, m)?;
    }

    /// (f) Power-of-two policy: modulus 2^n2 whatever the stored bits
    /// (bytes * 8, or 0 as pre-2.2 data stored).
    #[test]
    fn positions_pow2_policy(
        a in any::<u64>(),
        b in any::<u64>(),
        n2 in 1u8..=22,
        legacy_bits_zero in any::<bool>(),
        hashes in prop_oneof![1u32..=20, 1u32..=200],
    ) {
        let m = 1u64 << n2;
        let bytes = m.div_ceil(64) * 8;
        let data = BitArray::zeroed(bytes).unwrap();
        let bits = if legacy_bits_zero { 0 } else { bytes * 8 };
        let mut link = Link::from_parts(100, 0.01, 9.585, hashes, bits, n2, 0, data).unwrap();
        check_positions(&mut link, a, b, m)?;
    }

    /// (f) Links built by sizing: the modulus each policy yields.
    #[test]
    fn positions_of_sized_links(
        a in any::<u64>(),
        b in any::<u64>(),
        capacity in 1u64..5000,
        error in (1e-6f64.ln()..0.5f64.ln()).prop_map(f64::exp),
        pow2 in any::<bool>(),
    ) {
        let policy = if pow2 { Policy::Pow2 } else { Policy::Exact };
        let spec = ferrobloom_core::bloom::sizing::LinkSpec::new(capacity, error, policy).unwrap();
        let mut link = Link::new(&spec).unwrap();
        let m = if pow2 { 1u64 << spec.n2 } else { spec.bits };
        check_positions(&mut link, a, b, m)?;
    }
}

#[test]
fn permutation_is_a_permutation() {
    for n in [0, 1, 2, 7, 100] {
        let mut p = permutation(n, 42);
        p.sort_unstable();
        assert_eq!(p, (0..n).collect::<Vec<_>>());
    }
}
