//! SCANDUMP / LOADCHUNK against the live vectors: `scandump`,
//! `loadchunk_header_validation`, and the iterator and data-chunk rules of
//! §5.1 and §5.3.

mod common;

use common::*;
use ferrobloom_core::alloc_guard::{AllocGuard, AllocRequest, Refusal, RefusalKind, Unguarded};
use ferrobloom_core::bloom::chain::MAX_LINKS;
use ferrobloom_core::bloom::scandump::{
    data_chunk, decode_header, encode_header, load_chunk, Header, LinkHeader, LoadError,
    HEADER_FIXED, HEADER_PER_LINK, MAX_CHUNK, MAX_HASHES,
};
use ferrobloom_core::bloom::sizing::{bits_per_entry, hash_count};

#[test]
fn scandump_vectors() {
    for v in group_vectors("scandump") {
        let args = strings(&v["reserve_args"]);
        let mut chain = new_chain(&reserve_params(&args));
        let items = items_hex(&v["items_hex"]);
        assert_eq!(
            items,
            strings(&v["items"])
                .iter()
                .map(|i| i.as_bytes().to_vec())
                .collect::<Vec<_>>()
        );
        for item in &items {
            add(&mut chain, item);
        }
        assert_eq!(chain.debug_lines(), strings(&v["bf_debug"]), "{args:?}");

        let want: Vec<(i64, Vec<u8>)> = v["chunks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (u(&c["iter_returned"]) as i64, hex(s(&c["data_hex"]))))
            .collect();
        // Header: iterator 0 answers (1, header).
        assert_eq!(want[0].0, 1);
        assert_eq!(encode_header(&chain), want[0].1, "{args:?}: header chunk");
        assert_eq!(
            encode_header(&chain),
            hex(s(&v["header_hex"])),
            "{args:?}: header_hex"
        );
        assert_eq!(
            want[0].1.len(),
            HEADER_FIXED + HEADER_PER_LINK * chain.links().len()
        );

        // Every data chunk, following the returned iterators.
        let mut iter = 1i64;
        for (i, (next_want, data_want)) in want.iter().enumerate().skip(1) {
            let (next, data) = data_chunk(&chain, iter);
            assert_eq!(next, *next_want, "{args:?}: chunk {i} iterator");
            assert_eq!(data, data_want.as_slice(), "{args:?}: chunk {i} data");
            iter = next;
        }
        let end = &v["final_reply"];
        assert_eq!(u(&end[0]), 0);
        assert_eq!(s(&end[1]), "");
        assert_eq!(data_chunk(&chain, iter), (0, &[][..]), "{args:?}: end");
        assert_eq!(scandump(&chain), want, "{args:?}: client loop");
        let all: Vec<u8> = want[1..].iter().flat_map(|c| c.1.clone()).collect();
        assert_eq!(all, hex(s(&v["data_hex"])), "{args:?}: data_hex");
        assert_eq!(chain_bytes(&chain), all);

        // LOADCHUNK of the vector's chunks rebuilds the filter, in order and
        // in reverse order.
        for (name, order) in [("in order", in_order(&want)), ("reversed", reversed(&want))] {
            let back = loadchunks(&want, &order).unwrap_or_else(|e| panic!("{args:?}: {e:?}"));
            assert_same_chain(&chain, &back, &format!("{args:?} {name}"));
            assert_ones_exact(&back);
            for item in &items {
                assert!(contains(&back, item));
            }
        }
        // An instantiated header is an empty, usable filter.
        let empty = decode_header(&want[0].1)
            .unwrap()
            .instantiate(&Unguarded)
            .unwrap();
        assert!(chain_bytes(&empty).iter().all(|&b| b == 0));
        assert_eq!(empty.items(), chain.items());
    }
}

#[test]
fn any_iterator_is_accepted_three_links() {
    // §5.1: links of 8 + 8 + 16 bytes; SCANDUMP 1..39 returns 9 (x8),
    // 17 (x8), 33 (x16), then 0.
    let mut chain = reserve(&["0.01", "2"]);
    for c in b'a'..=b'g' {
        add(&mut chain, &[c]);
    }
    let sizes: Vec<u64> = chain.links().iter().map(|l| l.bytes()).collect();
    assert_eq!(sizes, [8, 8, 16]);
    let stream = chain_bytes(&chain);
    for it in 1..=39i64 {
        let (next, data) = data_chunk(&chain, it);
        let want_next = match it {
            1..=8 => 9,
            9..=16 => 17,
            17..=32 => 33,
            _ => 0,
        };
        assert_eq!(next, want_next, "iterator {it}");
        if next == 0 {
            assert!(data.is_empty());
        } else {
            assert_eq!(data, &stream[(it - 1) as usize..(next - 1) as usize]);
        }
    }
    assert_eq!(data_chunk(&chain, i64::MAX), (0, &[][..]));
}

#[test]
fn chunks_are_capped_at_16_mib() {
    // §5.1: a 27,569,384-byte link (BF.RESERVE 0.01 20000000).
    let chain = reserve(&["0.01", "20000000"]);
    assert_eq!(chain.links()[0].bytes(), 27_569_384);
    assert_eq!(MAX_CHUNK, 16_777_216);
    let cases = [
        (1i64, 16_777_217i64, 16_777_216usize),
        (5, 16_777_221, 16_777_216),
        (16_777_217, 27_569_385, 10_792_168),
        (27_569_384, 27_569_385, 1),
        (27_569_385, 0, 0),
    ];
    for (it, next, len) in cases {
        let (n, data) = data_chunk(&chain, it);
        assert_eq!((n, data.len()), (next, len), "iterator {it}");
    }
    let chunks = scandump(&chain);
    assert_eq!(
        chunks[1..].iter().map(|c| c.0).collect::<Vec<_>>(),
        [16_777_217, 27_569_385]
    );
    let back = loadchunks(&chunks, &reversed(&chunks)).unwrap();
    assert_same_chain(&chain, &back, "big link");
}

/// Vector cases 2.8.2 answered `+OK` that we deliberately reject. §9.2 lets
/// a module refuse headers whose filter would answer nonsense or crash:
/// NaN error, hashes 0 (bpe <= 0), n2 >= 64, entries 0. Only entries 0
/// appears in the vectors; the others are crafted in
/// `header_cases_beyond_the_vectors`. Growth 0 is accepted (as by the RDB
/// loader and 2.8.2): such a filter's scale-outs fail cleanly.
const DELIBERATELY_REJECTED: &[&str] = &[
    // Capacity 0: the link is full from the start; meaningless.
    "entries=0",
];

/// Vector cases 2.8.2 refused that we accept: link shapes the RDB loader
/// accepts (old RedisBloom data), so that every filter FerroBloom holds can
/// be exported and read back.
const DELIBERATELY_ACCEPTED: &[&str] = &["bits=1151"];

#[test]
fn loadchunk_header_validation() {
    let mut deliberate_seen = 0;
    for v in group_vectors("loadchunk_header_validation") {
        let case = s(&v["case"]);
        let header = hex(s(&v["header_hex"]));
        let reply = s(&v["reply"]);
        let ours = decode_header(&header).and_then(|h| h.instantiate(&Unguarded));
        if DELIBERATELY_REJECTED.contains(&case) {
            assert_eq!(reply, "+OK", "{case}: 2.8.2 accepted it");
            assert_eq!(ours.err(), Some(LoadError::BadData), "{case}: we reject it");
            deliberate_seen += 1;
        } else if reply == "+OK" || DELIBERATELY_ACCEPTED.contains(&case) {
            let chain = ours.unwrap_or_else(|e| panic!("{case}: refused with {e:?}"));
            // A valid header gives a zero-filled filter, usable at once,
            // whose header is the one loaded.
            assert!(chain_bytes(&chain).iter().all(|&b| b == 0), "{case}");
            assert_eq!(encode_header(&chain), header, "{case}: header round trip");
            let mut chain = chain;
            let _ = add(&mut chain, b"usable");
            let _ = contains(&chain, b"usable");
            assert_ones_exact(&chain);
        } else {
            assert_eq!(reply, "-ERR received bad data", "{case}");
            assert_eq!(
                ours.err(),
                Some(LoadError::BadData),
                "{case}: must be refused"
            );
        }
    }
    assert_eq!(deliberate_seen, DELIBERATELY_REJECTED.len());
}

/// The default filter's header (BF.RESERVE 0.01 100 + BF.ADD item), with a
/// mutation applied to its single link.
fn default_header(mutate: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut chain = reserve(&["0.01", "100"]);
    add(&mut chain, b"item");
    let mut h = encode_header(&chain);
    mutate(&mut h);
    h
}

const LINK: usize = HEADER_FIXED;
fn put_u64(h: &mut [u8], at: usize, v: u64) {
    h[at..at + 8].copy_from_slice(&v.to_le_bytes());
}
fn put_u32(h: &mut [u8], at: usize, v: u32) {
    h[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
fn put_f64(h: &mut [u8], at: usize, v: f64) {
    h[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

#[test]
fn header_cases_beyond_the_vectors() {
    let bad = |name: &str, h: Vec<u8>| {
        let r = decode_header(&h).and_then(|h| h.instantiate(&Unguarded));
        assert_eq!(r.err(), Some(LoadError::BadData), "{name}");
    };
    let good = |name: &str, h: Vec<u8>| {
        let r = decode_header(&h).and_then(|h| h.instantiate(&Unguarded));
        assert!(r.is_ok(), "{name}: {:?}", r.err());
    };
    // Rejected by 2.8.2 too (§5.3 examples).
    for opts in [32u32, 0x8000_0000] {
        bad("options", default_header(|h| put_u32(h, 12, opts)));
    }
    bad(
        "error -0.5",
        default_header(|h| put_f64(h, LINK + 24, -0.5)),
    );
    bad("bits 2000", default_header(|h| put_u64(h, LINK + 8, 2000)));
    bad("bpe 0", default_header(|h| put_f64(h, LINK + 32, 0.0)));
    bad(
        "bpe NaN",
        default_header(|h| put_f64(h, LINK + 32, f64::NAN)),
    );
    bad("empty", Vec::new());
    // Deliberately rejected although 2.8.2 accepted them (§5.3 / §9.2):
    // a NaN error never compares, so the filter would be meaningless.
    bad(
        "error NaN",
        default_header(|h| put_f64(h, LINK + 24, f64::NAN)),
    );
    // bpe -1 with hashes 0 = ceil(ln2 * -1): every item would be present.
    bad(
        "bpe -1 hashes 0",
        default_header(|h| {
            put_f64(h, LINK + 32, -1.0);
            put_u32(h, LINK + 40, 0);
        }),
    );
    // n2 64 / 65: the shift count wraps in C; no such modulus exists.
    bad("n2 64", default_header(|h| h[LINK + 52] = 64));
    bad("n2 65", default_header(|h| h[LINK + 52] = 65));
    bad("n2 255", default_header(|h| h[LINK + 52] = 255));
    // More hashes than any RedisBloom link can have (bounded lookups).
    let bpe = 3000.0;
    assert!(hash_count(bpe) > MAX_HASHES);
    bad(
        "hashes above the bound",
        default_header(|h| {
            put_f64(h, LINK + 32, bpe);
            put_u32(h, LINK + 40, hash_count(bpe));
        }),
    );
    // Accepted, as by 2.8.2.
    let bpe = 1400.0;
    assert!(hash_count(bpe) <= MAX_HASHES);
    good(
        "hashes near the bound",
        default_header(|h| {
            put_f64(h, LINK + 32, bpe);
            put_u32(h, LINK + 40, hash_count(bpe));
        }),
    );
    good("options 7", default_header(|h| put_u32(h, 12, 7)));
    good("options 2", default_header(|h| put_u32(h, 12, 2)));
    good("options 8", default_header(|h| put_u32(h, 12, 8)));
    good(
        "growth 4294967295",
        default_header(|h| put_u32(h, 16, u32::MAX)),
    );
    // nfilters large but the length does not match.
    bad("nfilters 2", default_header(|h| put_u32(h, 8, 2)));
    bad("nfilters max", default_header(|h| put_u32(h, 8, u32::MAX)));
}

#[test]
fn two_link_header_item_sum() {
    let mut chain = reserve(&["0.01", "2"]);
    for c in b'a'..=b'e' {
        add(&mut chain, &[c]);
    }
    let h = encode_header(&chain);
    assert!(decode_header(&h).is_ok());
    let mut wrong = h.clone();
    put_u64(&mut wrong, 0, 4);
    assert_eq!(decode_header(&wrong).err(), Some(LoadError::BadData));
    // Moving one item between links keeps the sum: accepted.
    let mut moved = h.clone();
    put_u64(&mut moved, LINK + 16, 1);
    put_u64(&mut moved, LINK + HEADER_PER_LINK + 16, 4);
    assert!(decode_header(&moved).is_ok());
    // Overflowing sum.
    let mut over = h;
    put_u64(&mut over, LINK + 16, u64::MAX);
    assert_eq!(decode_header(&over).err(), Some(LoadError::BadData));
}

#[test]
fn huge_arrays_fail_cleanly() {
    // bytes 2^60 (bits 2^63): the allocation fails, no abort.
    let h = default_header(|h| {
        put_u64(h, LINK, 1 << 60);
        put_u64(h, LINK + 8, 1 << 63);
    });
    let header = decode_header(&h).expect("shape is valid");
    let r = std::hint::black_box(header.instantiate(&Unguarded));
    assert!(
        matches!(r, Err(LoadError::Alloc(_))),
        "{:?}",
        r.as_ref().err()
    );
}

struct Refuse;
impl AllocGuard for Refuse {
    fn admit(&self, r: AllocRequest) -> Result<(), Refusal> {
        Err(Refusal {
            kind: RefusalKind::MaxMemory,
            needed: r.bytes,
            limit: 0,
            in_use: 0,
        })
    }
}

struct Expect(AllocRequest);
impl AllocGuard for Expect {
    fn admit(&self, r: AllocRequest) -> Result<(), Refusal> {
        assert_eq!(r, self.0);
        Ok(())
    }
}

#[test]
fn instantiate_asks_the_guard_first() {
    let mut chain = reserve(&["0.01", "2"]);
    for c in b'a'..=b'g' {
        add(&mut chain, &[c]);
    }
    let header = decode_header(&encode_header(&chain)).unwrap();
    assert_eq!(header.data_bytes(), Some(32));
    let r = header.instantiate(&Refuse);
    assert!(matches!(r, Err(LoadError::Refused(_))));
    header
        .instantiate(&Expect(AllocRequest {
            bytes: 32,
            filter_size_after: chain.reported_size(),
        }))
        .unwrap();
}

#[test]
fn data_chunk_rules_one_link() {
    // §5.3 examples on a 144-byte filter.
    let fresh = || reserve(&["0.01", "100"]);
    let mut k = fresh();
    load_chunk(&mut k, 5, b"data").unwrap();
    assert_eq!(&k.links()[0].data().as_bytes()[0..4], b"data");
    load_chunk(&mut k, 145, b"data").unwrap();
    assert_eq!(&k.links()[0].data().as_bytes()[140..144], b"data");
    assert_ones_exact(&k);
    assert_eq!(k.items(), 0, "content is not validated, counts unchanged");

    let mut k = fresh();
    assert_eq!(load_chunk(&mut k, 147, b"data"), Err(LoadError::TooBig));
    assert_eq!(load_chunk(&mut k, 149, b"data"), Err(LoadError::NoLink));
    assert_eq!(load_chunk(&mut k, 2, b"x"), Ok(()));
    assert_eq!(k.links()[0].data().as_bytes()[0], b'x');
    assert_eq!(load_chunk(&mut k, 1, b"x"), Err(LoadError::NoLink));
    assert_eq!(load_chunk(&mut k, 0, b"data"), Err(LoadError::BadData));
    assert_eq!(load_chunk(&mut k, 1, b"data"), Err(LoadError::BadData));
    assert_eq!(
        load_chunk(&mut k, i64::MIN, b"data"),
        Err(LoadError::BadData)
    );
    assert_eq!(load_chunk(&mut k, -1, b""), Err(LoadError::BadData));
    assert_eq!(
        load_chunk(&mut k, 1, b""),
        Ok(()),
        "empty data inside a link"
    );
    // Offset iter - len - 1 must be inside a link, also for empty data.
    assert_eq!(load_chunk(&mut k, 144, b""), Ok(()));
    assert_eq!(load_chunk(&mut k, 145, b""), Err(LoadError::NoLink));
    assert_eq!(
        load_chunk(&mut k, i64::MAX, b"data"),
        Err(LoadError::NoLink)
    );
    assert_ones_exact(&k);
}

#[test]
fn data_chunk_rules_three_links() {
    // §5.3: links of 8, 8, 16 bytes with 16-byte data: iter 17, 25, 26, 27
    // -> too big; 33 -> OK; 48 -> too big.
    let mut k = reserve(&["0.01", "2"]);
    for c in b'a'..=b'g' {
        add(&mut k, &[c]);
    }
    let data = [0xa5u8; 16];
    for it in [17, 25, 26, 27, 48] {
        assert_eq!(
            load_chunk(&mut k, it, &data),
            Err(LoadError::TooBig),
            "iter {it}"
        );
    }
    assert_eq!(load_chunk(&mut k, 33, &data), Ok(()));
    assert_eq!(k.links()[2].data().as_bytes(), &data);
    assert_eq!(load_chunk(&mut k, 49, &data), Err(LoadError::NoLink));
    // A chunk may not cross into the next link.
    assert_eq!(load_chunk(&mut k, 10, &[1u8; 9]), Err(LoadError::TooBig));
    assert_eq!(load_chunk(&mut k, 9, &[1u8; 8]), Ok(()));
    assert_ones_exact(&k);
}

#[test]
fn loadchunk_with_arbitrary_splits_rebuilds_the_filter() {
    let mut chain = reserve(&["0.001", "50", "EXPANSION", "3"]);
    for i in 0..400u32 {
        add(&mut chain, &i.to_be_bytes());
    }
    let header = encode_header(&chain);
    let stream = chain_bytes(&chain);
    // Chunks of 7 bytes that never cross a link boundary, last one first.
    let mut pieces = Vec::new();
    let mut start = 0usize;
    for l in chain.links() {
        let end = start + l.bytes() as usize;
        let mut p = start;
        while p < end {
            let q = (p + 7).min(end);
            pieces.push(((q + 1) as i64, stream[p..q].to_vec()));
            p = q;
        }
        start = end;
    }
    pieces.reverse();
    let mut back = decode_header(&header)
        .unwrap()
        .instantiate(&Unguarded)
        .unwrap();
    for (it, data) in &pieces {
        load_chunk(&mut back, *it, data).unwrap();
    }
    assert_same_chain(&chain, &back, "7-byte pieces");
}

#[test]
fn legacy_filters_round_trip_through_scandump() {
    // 2.8.2 exported legacy links (bits 0, or the unrounded encoding-0 bit
    // count) in headers its own LOADCHUNK refused (§7.1 caveat); §9.2 lets
    // us accept those shapes, so that an AOF rewrite can be loaded back.
    for v in group_vectors("rdb_legacy_restore") {
        let name = s(&v["name"]);
        let mut chain =
            ferrobloom_core::bloom::dump::load_payload(&hex(s(&v["payload_hex"]))).unwrap();
        for round in 0..2 {
            let chunks = scandump(&chain);
            let back = loadchunks(&chunks, &reversed(&chunks))
                .unwrap_or_else(|e| panic!("{name} round {round}: {e:?}"));
            assert_same_chain(&chain, &back, name);
            for i in 0..40 {
                add(&mut chain, format!("x{i}").as_bytes());
            }
        }
    }
    // A bits-0 power-of-two link whose modulus is below a word.
    let bpe = bits_per_entry(0.01);
    let p = payload(
        4,
        &one_link_fields(
            0,
            4,
            2,
            3,
            0.01,
            u64::from(hash_count(bpe)),
            bpe,
            0,
            5,
            vec![0; 8],
            0,
        ),
    );
    let mut chain = ferrobloom_core::bloom::dump::load_payload(&p).unwrap();
    add(&mut chain, b"a");
    let chunks = scandump(&chain);
    assert_eq!(
        &chunks[0].1[LINK + 8..LINK + 16],
        &0u64.to_le_bytes(),
        "bits 0 exported"
    );
    let back = loadchunks(&chunks, &in_order(&chunks)).unwrap();
    assert_same_chain(&chain, &back, "bits 0, n2 5");
    assert_eq!(back.links()[0].modulus(), 32);
}

#[test]
fn header_link_shapes_follow_the_rdb_rule() {
    // A header link is accepted exactly when the RDB loader would accept
    // it: its modulus (2^n2 when n2 > 0, else the stored bits) must be at
    // least 1 bit and within the array, and the array no larger than the
    // words the modulus addresses plus 4 KiB. So whatever FerroBloom holds,
    // it can export and read back.
    let chain = reserve(&["0.01", "100"]);
    let base = encode_header(&chain);
    let with = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut h = base.clone();
        f(&mut h);
        decode_header(&h)
            .and_then(|h| h.instantiate(&Unguarded))
            .err()
    };
    // bits 0 needs n2 > 0 and 2^n2 within the array; 2^10 bits address
    // 128 bytes, so arrays of 128 to 128 + 4096 bytes qualify.
    assert_eq!(with(&|h| put_u64(h, LINK + 8, 0)), Some(LoadError::BadData));
    for (bytes, n2, ok) in [
        (144u64, 10u8, true),
        (136, 10, true),
        (128, 10, true),
        (4224, 10, true),
        (4225, 10, false),
        (128, 11, false),
        (144, 11, false),
        (144, 63, false),
        (144, 64, false),
    ] {
        let got = with(&|h| {
            put_u64(h, LINK, bytes);
            put_u64(h, LINK + 8, 0);
            h[LINK + 52] = n2
        });
        assert_eq!(got.is_none(), ok, "{bytes} bytes, bits 0, n2 {n2}");
    }
    // Any stored bits from 1 up to the array's 1152 when n2 is 0 (a 144-byte
    // array is within 4 KiB of any modulus), none beyond it.
    for (bits, ok) in [
        (1u64, true),
        (1024, true),
        (1025, true),
        (1151, true),
        (1152, true),
        (1153, false),
    ] {
        assert_eq!(
            with(&|h| put_u64(h, LINK + 8, bits)).is_none(),
            ok,
            "bits {bits}"
        );
    }
    // With n2 > 0 the modulus is 2^n2, whatever bits says.
    assert_eq!(
        with(&|h| {
            put_u64(h, LINK, 16);
            put_u64(h, LINK + 8, 1102);
            h[LINK + 52] = 5
        }),
        None
    );
}

/// A guard that fails the test if it is asked: the header must have been
/// refused before any memory question.
struct MustNotBeAsked;
impl AllocGuard for MustNotBeAsked {
    fn admit(&self, r: AllocRequest) -> Result<(), Refusal> {
        panic!("the guard was asked for {r:?}")
    }
}

#[test]
fn link_count_is_bounded() {
    let longest = longest_chain();
    let header = encode_header(&longest);
    assert_eq!(header.len(), HEADER_FIXED + HEADER_PER_LINK * MAX_LINKS);
    let loaded = decode_header(&header)
        .and_then(|h| h.instantiate(&Unguarded))
        .expect("MAX_LINKS links");
    assert_eq!(encode_header(&loaded), header);

    // One link more is refused, although every link is valid.
    let longer = encode_header(&one_link_longer(&longest));
    assert_eq!(decode_header(&longer).err(), Some(LoadError::BadData));
    let mut huge = header.clone();
    huge[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_eq!(decode_header(&huge).err(), Some(LoadError::BadData));
}

/// A header of `links`, its item count their sum.
fn header_of(links: Vec<LinkHeader>) -> Vec<u8> {
    Header {
        items: links.iter().map(|l| l.items).sum(),
        options: 5,
        growth: 2,
        links,
    }
    .encode()
}

/// The link of the default filter (0.01, 100) with `bytes`, `bits`, `n2`.
fn shaped(bytes: u64, bits: u64, n2: u8) -> LinkHeader {
    let bpe = bits_per_entry(0.005);
    LinkHeader {
        bytes,
        bits,
        items: 0,
        error: 0.005,
        bpe,
        hashes: hash_count(bpe),
        entries: 100,
        n2,
    }
}

#[test]
fn absurd_sizes_are_bad_data_before_any_guard() {
    let bad = |name: &str, links: Vec<LinkHeader>| {
        let r = decode_header(&header_of(links)).and_then(|h| h.instantiate(&MustNotBeAsked));
        assert_eq!(r.err(), Some(LoadError::BadData), "{name}");
    };
    let good = |name: &str, links: Vec<LinkHeader>| {
        let h = decode_header(&header_of(links)).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        h.instantiate(&Unguarded)
            .unwrap_or_else(|e| panic!("{name}: {e:?}"));
    };
    // A petabyte array under a 64-bit modulus.
    bad("bytes 2^50, bits 64", vec![shaped(1 << 50, 64, 0)]);
    bad("bytes 2^50, n2 6", vec![shaped(1 << 50, 1 << 53, 6)]);
    bad("bytes 2^61 - 8, n2 1", vec![shaped((1 << 61) - 8, 64, 1)]);
    // The bound: the words the modulus addresses, plus 4 KiB.
    good("bits 1152, 144 bytes", vec![shaped(144, 1152, 0)]);
    good("bits 1152, 4240 bytes", vec![shaped(4240, 1152, 0)]);
    bad("bits 1152, 4241 bytes", vec![shaped(4241, 1152, 0)]);
    good("bits 32, n2 5, 8 bytes", vec![shaped(8, 32, 5)]);
    good("bits 0, n2 5, 4104 bytes", vec![shaped(4104, 0, 5)]);
    bad("bits 0, n2 5, 4105 bytes", vec![shaped(4105, 0, 5)]);
    good("bits 28, 4 bytes", vec![shaped(4, 28, 0)]);
    good("n2 10, bits 1024, 136 bytes", vec![shaped(136, 1024, 10)]);
    good("n2 10, bits 1152, 144 bytes", vec![shaped(144, 1152, 10)]);
    bad(
        "n2 10, bits 33800, 4225 bytes",
        vec![shaped(4225, 33800, 10)],
    );
    // Links each possible alone whose arrays add up past 2^64 bytes.
    let big = (1u64 << 61) - 8;
    let one = shaped(big, big * 8, 0);
    assert!(decode_header(&header_of(vec![one])).is_ok());
    bad("9 links of 2^61 bytes", vec![one; 9]);
}
