//! Chain semantics: the `scaling` vectors, §3.2 / §3.4 rules, scale-out
//! failures, and the few `replies` vectors whose outcome is decided by the
//! core (the rest are server tests).

mod common;

use common::*;
use ferrobloom_core::alloc_guard::{AllocGuard, AllocRequest, Refusal, RefusalKind, Unguarded};
use ferrobloom_core::bloom::chain::{options, AddOutcome, Chain, ChainParams};
use ferrobloom_core::bloom::link::Link;
use ferrobloom_core::bloom::scandump::{self, LoadError};
use ferrobloom_core::bloom::sizing::{bits_per_entry, hash_count, LinkSpec, Policy};
use ferrobloom_core::BitArray;

/// The items of a `scaling` vector, from its description: `items "0".."99"
/// ...` (decimal strings) or `items a..g` (single letters).
fn scaling_items(desc: &str) -> Vec<Vec<u8>> {
    let rest = desc.strip_prefix("items ").expect("items description");
    let range = rest.split_whitespace().next().unwrap();
    let (lo, hi) = range.split_once("..").expect("a .. range");
    if lo.starts_with('"') {
        let lo: u32 = lo.trim_matches('"').parse().unwrap();
        let hi: u32 = hi.trim_matches('"').parse().unwrap();
        (lo..=hi).map(|i| i.to_string().into_bytes()).collect()
    } else {
        let (lo, hi) = (lo.as_bytes(), hi.as_bytes());
        assert!(lo.len() == 1 && hi.len() == 1, "{desc}");
        (lo[0]..=hi[0]).map(|c| vec![c]).collect()
    }
}

#[test]
fn scaling_vectors() {
    for v in group_vectors("scaling") {
        let args = strings(&v["reserve_args"]);
        let items = scaling_items(s(&v["items"]));
        let mut chain = new_chain(&reserve_params(&args));
        let replies = madd(&mut chain, &items);
        let want: Vec<Reply> = u64s(&v["madd_replies"])
            .into_iter()
            .map(|x| Reply::Int(x as i64))
            .collect();
        assert_eq!(replies, want, "{args:?}: MADD replies");
        assert_eq!(
            chain.debug_lines(),
            strings(&v["bf_debug"]),
            "{args:?}: BF.DEBUG"
        );

        let info = &v["bf_info"];
        assert_eq!(chain.capacity(), u(&info["Capacity"]), "{args:?}");
        assert_eq!(chain.reported_size(), u(&info["Size"]), "{args:?}");
        assert_eq!(
            chain.links().len() as u64,
            u(&info["Number of filters"]),
            "{args:?}"
        );
        assert_eq!(
            chain.items(),
            u(&info["Number of items inserted"]),
            "{args:?}"
        );
        let expansion = &info["Expansion rate"];
        assert_eq!(
            chain.expansion().map(u64::from),
            expansion.as_u64(),
            "{args:?}"
        );
        assert!(expansion.is_null() || expansion.is_u64());

        // Counts only count new inserts: the replies' ones.
        let ones = replies.iter().filter(|r| **r == Reply::Int(1)).count() as u64;
        assert_eq!(chain.items(), ones);
        assert_eq!(
            chain.items(),
            chain.links().iter().map(|l| l.items).sum::<u64>()
        );
        // No false negatives.
        for item in &items {
            assert!(contains(&chain, item));
        }
        assert_ones_exact(&chain);
    }
}

#[test]
fn expansion_1_chain_from_the_spec() {
    // §3.2: BF.RESERVE e1 0.01 4 EXPANSION 1 + 30 items -> 7 links of
    // capacity 4, hashes 8..14, ratios 0.005 .. 7.8125e-05.
    let mut chain = reserve(&["0.01", "4", "EXPANSION", "1"]);
    for i in 0..30 {
        add(&mut chain, i.to_string().as_bytes());
    }
    assert_eq!(chain.links().len(), 7);
    for (n, l) in chain.links().iter().enumerate() {
        assert_eq!(l.entries, 4);
        assert_eq!(l.hashes, 8 + n as u32);
        assert_eq!(l.error, 0.005 * 0.5f64.powi(n as i32));
    }
    assert!(chain.debug_lines()[1].ends_with("ratio:0.005"));
    assert!(chain.debug_lines()[7].ends_with("ratio:7.8125e-05"));
}

#[test]
fn expansion_3_chain_from_the_spec() {
    // §3.2: BF.RESERVE e3 0.001 5 EXPANSION 3 + 200 items -> capacities
    // 5, 15, 45, 135, Capacity 200, Size 800.
    let mut chain = reserve(&["0.001", "5", "EXPANSION", "3"]);
    for i in 0..200 {
        add(&mut chain, i.to_string().as_bytes());
    }
    let caps: Vec<u64> = chain.links().iter().map(|l| l.entries).collect();
    assert_eq!(caps, [5, 15, 45, 135]);
    assert_eq!(chain.capacity(), 200);
    assert_eq!(chain.reported_size(), 800);
    assert_eq!(chain.expansion(), Some(3));
}

#[test]
fn growth_and_error_progression() {
    // Link n: capacity C * g^n, error e * 0.5^(n+1), exact sizing.
    for (cap, error, growth) in [
        (10u64, 0.01, 2u32),
        (3, 0.1, 4),
        (7, 0.001, 1),
        (1, 0.05, 3),
    ] {
        let params = ChainParams {
            capacity: cap,
            error,
            growth,
            nonscaling: false,
            policy: Policy::Exact,
        };
        let mut chain = new_chain(&params);
        let mut i = 0u64;
        while chain.links().len() < 5 {
            add(&mut chain, &i.to_le_bytes());
            i += 1;
        }
        assert_eq!(chain.options(), options::FORCE64 | options::NOROUND);
        for (n, l) in chain.links().iter().enumerate() {
            let n = n as u32;
            assert_eq!(l.entries, cap * u64::from(growth).pow(n), "link {n}");
            let e = error * 0.5f64.powi(n as i32 + 1);
            assert_eq!(l.error, e, "link {n}");
            let spec = LinkSpec::new(l.entries, e, Policy::Exact).unwrap();
            assert_eq!(
                (l.bytes(), l.bits, l.hashes, l.n2),
                (spec.bytes, spec.bits, spec.hashes, 0)
            );
            assert_eq!(l.bpe, spec.bpe);
        }
        // Every full link holds exactly its capacity.
        for l in &chain.links()[..chain.links().len() - 1] {
            assert_eq!(l.items, l.entries);
        }
    }
}

#[test]
fn nonscaling_full_behaviour() {
    // §2.2: BF.RESERVE ns 0.01 2 NONSCALING; MADD ns a b c a d -> 1 1 full.
    let mut ns = reserve(&["0.01", "2", "NONSCALING"]);
    assert_eq!(ns.options(), 13);
    assert_eq!(ns.expansion(), None);
    assert_eq!(ns.growth(), 2, "the expansion is still stored");
    assert_eq!(ns.links()[0].error, 0.01, "no halving when non-scaling");
    let replies = madd(
        &mut ns,
        &[
            b"a".to_vec(),
            b"b".to_vec(),
            b"c".to_vec(),
            b"a".to_vec(),
            b"d".to_vec(),
        ],
    );
    assert_eq!(
        replies,
        [
            Reply::Int(1),
            Reply::Int(1),
            Reply::Err("ERR non scaling filter is full".into())
        ]
    );
    let before = chain_bytes(&ns);
    assert_eq!(add(&mut ns, b"e"), AddOutcome::Full);
    // Present items still answer 0.
    assert_eq!(add(&mut ns, b"a"), AddOutcome::Present);
    assert_eq!(add(&mut ns, b"b"), AddOutcome::Present);
    assert_eq!(ns.items(), 2);
    assert_eq!(ns.links().len(), 1);
    assert_eq!(chain_bytes(&ns), before, "a full filter does not change");
    assert!(!contains(&ns, b"e"));
}

#[test]
fn counts_only_count_new_inserts_and_duplicates_in_a_batch() {
    // BF.MADD k a a b -> 1 0 1.
    let mut chain = reserve(&["0.01", "100"]);
    let replies = madd(&mut chain, &[b"a".to_vec(), b"a".to_vec(), b"b".to_vec()]);
    assert_eq!(replies, [Reply::Int(1), Reply::Int(0), Reply::Int(1)]);
    assert_eq!(chain.items(), 2);
    assert_eq!(add(&mut chain, b"a"), AddOutcome::Present);
    assert_eq!(
        add(&mut chain, b""),
        AddOutcome::Added,
        "the empty item is valid"
    );
    assert_eq!(add(&mut chain, b""), AddOutcome::Present);
    assert_eq!(chain.items(), 3);
    assert_eq!(chain.links()[0].items, 3);
}

#[test]
fn false_positive_is_not_counted() {
    // test_debug of §2.7: "70" is a false positive of the 0.01/10 chain.
    let mut chain = reserve(&["0.01", "10"]);
    for i in 0..70 {
        assert_eq!(add(&mut chain, i.to_string().as_bytes()), AddOutcome::Added);
    }
    assert!(
        contains(&chain, b"70"),
        "a false positive before it was added"
    );
    assert_eq!(add(&mut chain, b"70"), AddOutcome::Present);
    assert_eq!(chain.items(), 70);
}

#[test]
fn scale_out_happens_only_when_an_absent_item_meets_a_full_link() {
    let mut chain = reserve(&["0.01", "2"]);
    add(&mut chain, b"a");
    add(&mut chain, b"b");
    assert!(chain.links()[0].is_full());
    assert_eq!(chain.links().len(), 1, "filling does not scale");
    assert_eq!(add(&mut chain, b"a"), AddOutcome::Present);
    assert_eq!(chain.links().len(), 1, "a present item does not scale");
    assert_eq!(add(&mut chain, b"c"), AddOutcome::Added);
    assert_eq!(chain.links().len(), 2);
    assert_eq!(chain.links()[1].items, 1);
}

/// A one-link chain whose only link is full, with chosen fields.
fn full_chain(entries: u64, error: f64, growth: u32) -> Chain {
    let bpe = bits_per_entry(error);
    let link = Link::from_parts(
        entries,
        error,
        bpe,
        hash_count(bpe),
        64,
        0,
        entries,
        BitArray::zeroed(8).unwrap(),
    )
    .unwrap();
    Chain::from_parts(
        entries,
        options::FORCE64 | options::NOROUND,
        growth,
        vec![link],
    )
    .unwrap()
}

fn assert_scale_fails(mut chain: Chain, what: &str) {
    let before = chain_bytes(&chain);
    let debug = chain.debug_lines();
    for item in [&b"x"[..], b"y", b"x"] {
        assert_eq!(add(&mut chain, item), AddOutcome::ScaleFailed, "{what}");
        assert_eq!(chain.links().len(), 1, "{what}: nothing appended");
        assert_eq!(chain.debug_lines(), debug, "{what}: unchanged");
        assert_eq!(chain_bytes(&chain), before, "{what}: bytes unchanged");
        assert!(!contains(&chain, item), "{what}: not reported present");
    }
    // BF.MADD keeps going after the error (§2.2).
    let replies = madd(&mut chain, &[b"p".to_vec(), b"q".to_vec()]);
    assert_eq!(replies.len(), 2, "{what}");
}

#[test]
fn scale_out_failures_append_nothing() {
    // Growth 0 (EXPANSION 4294967296 wrapped): 2.8.2 appended a zero link.
    let mut g0 = new_chain(&ChainParams {
        capacity: 2,
        error: 0.01,
        growth: 0,
        nonscaling: false,
        policy: Policy::Exact,
    });
    assert_eq!(
        madd(&mut g0, &[b"a".to_vec(), b"b".to_vec()]),
        [Reply::Int(1), Reply::Int(1)]
    );
    assert!(g0.next_link_spec().is_err());
    assert_scale_fails(g0, "growth 0");

    // entries * growth overflows u64.
    assert_scale_fails(full_chain(1 << 63, 0.01, 2), "entries overflow");
    assert_scale_fails(
        full_chain(u64::MAX / 3 + 1, 0.01, 3),
        "entries overflow (3)",
    );
    // entries * bpe does not fit in 64 bits.
    assert_scale_fails(full_chain(1 << 62, 0.01, 2), "bit count overflow");
    // The error halves to 0.
    assert_scale_fails(full_chain(4, f64::from_bits(1), 2), "error underflow");
}

#[test]
fn error_underflow_ends_a_long_chain_cleanly() {
    // Capacity 1, EXPANSION 1: every new item needs a link, each with half
    // the error; after ~1,070 links the error would reach 0 (§9.2).
    let mut chain = reserve(&["0.01", "1", "EXPANSION", "1"]);
    let mut i = 0u64;
    let mut added = 0u64;
    let outcome = loop {
        match add(&mut chain, &i.to_le_bytes()) {
            AddOutcome::Added => added += 1,
            // A rare false positive.
            AddOutcome::Present => {}
            other => break other,
        }
        i += 1;
        assert!(i < 4000, "the error must underflow eventually");
    };
    assert_eq!(outcome, AddOutcome::ScaleFailed);
    let last = chain.links().last().unwrap();
    assert_eq!(
        last.error,
        f64::from_bits(1),
        "the last link has the smallest error"
    );
    assert!(last.hashes <= 1075);
    assert_eq!(chain.items(), added);
    assert_eq!(chain.links().len() as u64, added);
    let links = chain.links().len();
    let mut failed = 0;
    for j in 0..20u8 {
        match add(&mut chain, &[b'z', j]) {
            AddOutcome::ScaleFailed => failed += 1,
            AddOutcome::Present => {}
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(chain.links().len(), links);
    }
    assert!(failed > 0);
    assert!(chain.links().len() > 594, "no link limit");
    // The chain still exports and reloads.
    let chunks = scandump(&chain);
    let back = loadchunks(&chunks, &in_order(&chunks)).unwrap();
    assert_same_chain(&chain, &back, "long chain");
}

/// A guard that refuses anything above a byte budget and records requests.
struct Budget {
    limit: u64,
    seen: std::cell::RefCell<Vec<AllocRequest>>,
}

impl AllocGuard for Budget {
    fn admit(&self, request: AllocRequest) -> Result<(), Refusal> {
        self.seen.borrow_mut().push(request);
        if request.filter_size_after > self.limit {
            Err(Refusal {
                kind: RefusalKind::FilterCap,
                needed: request.filter_size_after,
                limit: self.limit,
                in_use: 0,
            })
        } else {
            Ok(())
        }
    }
}

#[test]
fn guard_sees_the_exact_requests_and_refusal_appends_nothing() {
    let budget = Budget {
        limit: 240,
        seen: Default::default(),
    };
    let params = reserve_params(&["0.01".into(), "100".into()]);
    let mut chain = Chain::new(&params, &budget).unwrap();
    assert_eq!(
        budget.seen.borrow().as_slice(),
        [AllocRequest {
            bytes: 144,
            filter_size_after: 240
        }]
    );
    for i in 0..100u32 {
        let h = chain.hash(&i.to_le_bytes());
        assert!(matches!(
            chain.add(h, &budget),
            AddOutcome::Added | AddOutcome::Present
        ));
    }
    let h = chain.hash(b"one too many");
    let next = chain.next_link_spec().unwrap();
    let outcome = chain.add(h, &budget);
    let want = AllocRequest {
        bytes: next.bytes,
        filter_size_after: 240 + 64 + next.bytes,
    };
    assert_eq!(budget.seen.borrow().last(), Some(&want));
    assert_eq!(
        outcome,
        AddOutcome::ScaleRefused(Refusal {
            kind: RefusalKind::FilterCap,
            needed: want.filter_size_after,
            limit: 240,
            in_use: 0,
        })
    );
    assert_eq!(chain.links().len(), 1);
    // With room, the same add succeeds.
    assert_eq!(chain.add(h, &Unguarded), AddOutcome::Added);
    assert_eq!(chain.links().len(), 2);
    assert_eq!(chain.reported_size(), want.filter_size_after);

    // A refused creation.
    let tight = Budget {
        limit: 239,
        seen: Default::default(),
    };
    assert!(Chain::new(&params, &tight).is_err());
}

#[test]
fn legacy_32_bit_chain_scales_with_32_bit_hash_and_pow2_links() {
    // Options 0: 32-bit hash, power-of-two new links.
    let mut base = reserve(&["0.01", "3"]);
    let mut header = scandump::encode_header(&base);
    header[12..16].copy_from_slice(&0u32.to_le_bytes());
    base = scandump::decode_header(&header)
        .unwrap()
        .instantiate(&Unguarded)
        .unwrap();
    let mut chain = base;
    for i in 0..40u32 {
        add(&mut chain, format!("x{i}").as_bytes());
    }
    assert!(chain.links().len() > 1);
    for l in &chain.links()[1..] {
        assert!(l.n2 > 0, "new links are power-of-two sized");
        assert_eq!(l.modulus(), 1 << l.n2);
    }
    assert!(chain.debug_lines()[1].contains("hashwidth:32"));
    for i in 0..40u32 {
        assert!(contains(&chain, format!("x{i}").as_bytes()));
    }
}

#[test]
fn try_clone_is_deep() {
    let mut chain = reserve(&["0.01", "5"]);
    for i in 0..20u8 {
        add(&mut chain, &[i]);
    }
    let copy = chain.try_clone().unwrap();
    assert_same_chain(&chain, &copy, "clone");
    add(&mut chain, b"only in the original");
    assert!(!contains(&copy, b"only in the original"));
}

/// The RESP2 reply of a `replies` vector as elements: integers or errors.
fn parse_resp2(wire: &str) -> Vec<Reply> {
    let mut lines: Vec<&str> = wire.split("\r\n").collect();
    assert_eq!(lines.pop(), Some(""), "ends with CRLF");
    let one = |l: &str| match l.as_bytes()[0] {
        b':' => Reply::Int(l[1..].parse().unwrap()),
        b'-' => Reply::Err(l[1..].to_string()),
        _ => panic!("unexpected element {l}"),
    };
    if let Some(n) = lines[0].strip_prefix('*') {
        let n: usize = n.parse().unwrap();
        assert_eq!(lines.len(), n + 1);
        lines[1..].iter().map(|l| one(l)).collect()
    } else {
        assert_eq!(lines.len(), 1);
        vec![one(lines[0])]
    }
}

/// The `replies` vectors the core decides: adds to the full non-scaling
/// filter of the setup, SCANDUMP past the end and LOADCHUNK validation.
/// Everything else there (argument parsing, key types, arity, COPY, RESP3
/// encodings) is the module's and belongs to the server tests.
#[test]
fn replies_decided_by_the_core() {
    let setup: Vec<Vec<String>> = group("replies")["setup"]
        .as_array()
        .unwrap()
        .iter()
        .map(strings)
        .collect();
    assert_eq!(setup[1], ["BF.ADD", "bf", "a"]);
    assert_eq!(setup[2], ["BF.RESERVE", "ns", "0.01", "2", "NONSCALING"]);
    assert_eq!(setup[3], ["BF.MADD", "ns", "a", "b"]);
    let fresh_bf = || {
        // Auto-created with the default configuration (§2.2).
        let mut bf = reserve(&["0.01", "100"]);
        add(&mut bf, b"a");
        bf
    };
    let fresh_ns = || {
        let mut ns = reserve(&setup[2][2..].iter().map(String::as_str).collect::<Vec<_>>());
        madd(&mut ns, &[b"a".to_vec(), b"b".to_vec()]);
        ns
    };
    let load_error_text = |e: LoadError| match e {
        LoadError::BadData => "ERR received bad data",
        LoadError::NoLink => "ERR invalid offset - no link found",
        LoadError::TooBig => "ERR invalid chunk - Too big for current filter",
        other => panic!("unexpected {other:?}"),
    };

    let mut checked = 0;
    for v in group_vectors("replies") {
        let cmd = strings(&v["command"]);
        let want = || parse_resp2(s(&v["resp2"]));
        let args: Vec<&str> = cmd.iter().map(String::as_str).collect();
        let got = match args.as_slice() {
            ["BF.ADD", "ns", item] => madd(&mut fresh_ns(), &[item.as_bytes().to_vec()]),
            ["BF.MADD", "ns", items @ ..] | ["BF.INSERT", "ns", "ITEMS", items @ ..] => {
                let items: Vec<Vec<u8>> = items.iter().map(|i| i.as_bytes().to_vec()).collect();
                madd(&mut fresh_ns(), &items)
            }
            ["BF.SCANDUMP", "bf", it] if it.parse::<i64>().is_ok_and(|i| i >= 1) => {
                let bf = fresh_bf();
                let (next, data) = scandump::data_chunk(&bf, it.parse().unwrap());
                assert_eq!((next, data), (0, &[][..]), "{cmd:?}");
                // The reply is [0, ""]: compare the wire form directly.
                assert_eq!(s(&v["resp2"]), "*2\r\n:0\r\n$0\r\n\r\n");
                checked += 1;
                continue;
            }
            ["BF.LOADCHUNK", "bf", it, data] if it.parse::<i64>().is_ok() => {
                let mut bf = fresh_bf();
                let r = scandump::load_chunk(&mut bf, it.parse().unwrap(), data.as_bytes());
                vec![Reply::Err(load_error_text(r.unwrap_err()).into())]
            }
            ["BF.LOADCHUNK", "missing", "1", data] => {
                let r = scandump::decode_header(data.as_bytes()).map(|_| ());
                vec![Reply::Err(load_error_text(r.unwrap_err()).into())]
            }
            _ => continue,
        };
        assert_eq!(got, want(), "{cmd:?}");
        checked += 1;
    }
    // ns: BF.ADD zz, BF.MADD a zz b, BF.INSERT ITEMS a zz b; SCANDUMP 999;
    // LOADCHUNK bf 0 / 1 / 999 / 147, missing 1.
    assert_eq!(checked, 9, "replies checked");
}

#[test]
fn add_outcomes_leave_no_trace_when_present() {
    let mut chain = reserve(&["0.01", "100"]);
    add(&mut chain, b"item");
    let before = chain_bytes(&chain);
    assert_eq!(add(&mut chain, b"item"), AddOutcome::Present);
    assert_eq!(chain_bytes(&chain), before);
    assert_eq!(chain.items(), 1);
}
