//! CF.PLAN's predictions against what CF.RESERVE really allocates, on
//! FerroBloom and on RedisBloom 2.8.2: CF.INFO Size and Number of buckets,
//! MEMORY USAGE, the size after every expansion up to the
//! CF_MAX_EXPANSIONS limit (forced by adding one item again and again: each
//! sub-filter takes at most 2 × bucket size copies), the refusal after the
//! last one; and the load at the first expansion, identical on both modules
//! for the same items.

mod common;

use std::collections::BTreeMap;

use common::{decode, ModuleKind, RawClient, Resp, Server, ServerOpts};

const OK: &[u8] = b"+OK\r\n";

/// Arguments of CF.RESERVE after the key (and of CF.PLAN), and the
/// CF_MAX_EXPANSIONS both servers are started with.
const CASES: &[(&str, u64)] = &[
    ("1000", 32),
    ("1000 EXPANSION 0", 32),
    ("5000 BUCKETSIZE 1", 32),
    ("100 bucketsize 4 maxiterations 7 expansion 3", 4),
    ("12 BUCKETSIZE 3 EXPANSION 5", 4),
    ("8 EXPANSION 3", 4),
    ("1000000 BUCKETSIZE 4", 3),
    ("777 BUCKETSIZE 7 EXPANSION 2", 5),
];

fn server(kind: ModuleKind, max_expansions: u64) -> Server {
    Server::start(
        ServerOpts::new(kind).module_args(&["CF_MAX_EXPANSIONS", &max_expansions.to_string()]),
    )
}

fn fields(reply: Resp) -> BTreeMap<String, Resp> {
    let Resp::Array(flat) = reply else {
        panic!("{reply:?}")
    };
    flat.chunks(2)
        .map(|p| (p[0].as_str().expect("a field name"), p[1].clone()))
        .collect()
}

fn int(r: &Resp) -> u64 {
    match r {
        Resp::Int(v) => *v as u64,
        other => panic!("{other:?}"),
    }
}

fn float(r: &Resp) -> f64 {
    r.as_str().expect("a double").parse().unwrap()
}

fn info(r: &mut RawClient, key: &str) -> BTreeMap<String, u64> {
    fields(decode(&r.cmd(&["CF.INFO", key])))
        .into_iter()
        .map(|(k, v)| (k, int(&v)))
        .collect()
}

fn memory_usage(r: &mut RawClient, key: &str) -> u64 {
    int(&decode(&r.cmd(&["MEMORY", "USAGE", key])))
}

/// What a server's CF.RESERVE made of `args`, and of every expansion:
/// (Size, Number of buckets, MEMORY USAGE less Size) after reservation,
/// then Size after each new sub-filter, then the reply of the add that
/// found the limit.
fn observe(r: &mut RawClient, key: &str, args: &str) -> (u64, u64, u64, Vec<u64>, String) {
    let mut line = vec!["CF.RESERVE", key];
    line.extend(args.split_whitespace());
    assert_eq!(r.cmd(&line), OK, "{args}");
    let i = info(r, key);
    let size = i["Size"];
    let overhead = memory_usage(r, key) - size;
    let mut sizes = vec![size];
    let last = loop {
        let reply = decode(&r.cmd(&["CF.ADD", key, "same"]));
        if reply.is_error() {
            break format!("{reply:?}");
        }
        let i = info(r, key);
        if i["Number of filters"] as usize > sizes.len() {
            assert_eq!(i["Number of filters"] as usize, sizes.len() + 1);
            sizes.push(i["Size"]);
        }
        assert!(sizes.len() <= 64, "{args}: runaway");
    };
    (size, i["Number of buckets"], overhead, sizes, last)
}

#[test]
fn plan_predicts_reserve_and_every_expansion_on_both_modules() {
    let mut overheads = Vec::new();
    for &(args, limit) in CASES {
        let ferro = server(ModuleKind::FerroBloom, limit);
        let oracle = server(ModuleKind::RedisBloom, limit);
        let mut f = ferro.raw();
        let mut o = oracle.raw();
        let mut line = vec!["CF.PLAN"];
        line.extend(args.split_whitespace());
        let plan = fields(decode(&f.cmd(&line)));
        let subs: Vec<BTreeMap<String, Resp>> = match &plan["sub_filters"] {
            Resp::Array(s) => s.iter().map(|s| fields(s.clone())).collect(),
            other => panic!("{other:?}"),
        };
        assert_eq!(int(&plan["max_expansions"]), limit, "the live setting");
        assert_eq!(int(&plan["expansions"]) as usize + 1, subs.len());
        let planned_sizes: Vec<u64> = subs.iter().map(|s| int(&s["size"])).collect();
        // The Bloom filter for the same capacity and error rate is what
        // BF.RESERVE … NONSCALING makes of them.
        let bloom_error = plan["bloom_error_rate"].as_str().expect("a double");
        let capacity = int(&plan["capacity"]).to_string();
        for (name, r) in [("FerroBloom", &mut f), ("RedisBloom", &mut o)] {
            let reserve = ["BF.RESERVE", "bk", &bloom_error, &capacity, "NONSCALING"];
            assert_eq!(r.cmd(&reserve), OK, "{name} {args}");
            assert_eq!(
                decode(&r.cmd(&["BF.INFO", "bk", "SIZE"])),
                Resp::Array(vec![Resp::Int(int(&plan["bloom_size"]) as i64)]),
                "{name} {args}: the Bloom filter's Size"
            );
            assert_eq!(r.cmd(&["DEL", "bk"]), b":1\r\n");
        }
        for (name, r) in [("FerroBloom", &mut f), ("RedisBloom", &mut o)] {
            let (size, buckets, overhead, sizes, last) = observe(r, "kk", args);
            assert_eq!(size, int(&plan["size"]), "{name} {args}: Size");
            assert_eq!(buckets, int(&plan["buckets"]), "{name} {args}: buckets");
            assert_eq!(size, 40 + 16 + int(&plan["bytes"]), "{name} {args}: bytes");
            assert_eq!(sizes, planned_sizes, "{name} {args}: after expansions");
            assert_eq!(
                sizes.last().copied(),
                Some(int(&plan["worst_size"])),
                "{name} {args}"
            );
            let want = if int(&plan["expansion"]) == 0 {
                "Filter is full"
            } else {
                "Maximum expansions reached"
            };
            assert!(last.contains(want), "{name} {args}: {last}");
            overheads.push((name, args, overhead));
        }
    }
    // MEMORY USAGE is Size plus the key's own overhead: the same for every
    // filter of a module (same key name, same server), and the same on
    // both modules when they run on the same server (the suite may run
    // FerroBloom on another server than the oracle's Redis 7.0, whose key
    // overhead differs).
    let same_server = server(ModuleKind::FerroBloom, 32).version()
        == server(ModuleKind::RedisBloom, 32).version();
    for module in ["FerroBloom", "RedisBloom"] {
        let mine: Vec<_> = overheads.iter().filter(|o| o.0 == module).collect();
        let first = mine[0].2;
        assert!(first > 0 && first < 200, "{overheads:?}");
        assert!(mine.iter().all(|o| o.2 == first), "{overheads:?}");
    }
    if same_server {
        assert!(
            overheads.iter().all(|o| o.2 == overheads[0].2),
            "{overheads:?}"
        );
    }
}

/// Items `p0`, `p1`, … are added one by one until the filter has two
/// sub-filters; returns the items stored before the add that grew it.
fn items_at_first_expansion(r: &mut RawClient, key: &str) -> u64 {
    const BATCH: usize = 256;
    let mut next = 0usize;
    let mut before = 0u64;
    loop {
        let cmds: Vec<Vec<String>> = (next..next + BATCH)
            .flat_map(|i| {
                [
                    vec!["CF.ADD".into(), key.into(), format!("p{i}")],
                    vec!["CF.DEBUG".into(), key.into()],
                ]
            })
            .collect();
        next += BATCH;
        for pair in r.pipeline(&cmds).chunks(2) {
            let debug = decode(&pair[1]).as_str().unwrap();
            let get = |name: &str| -> u64 {
                debug
                    .split_whitespace()
                    .find_map(|kv| kv.strip_prefix(name)?.strip_prefix(':'))
                    .unwrap()
                    .parse()
                    .unwrap()
            };
            if get("filters") > 1 {
                return before;
            }
            before = get("items");
        }
        assert!(next < 1 << 22, "no expansion");
    }
}

#[test]
fn first_expansion_load_is_the_same_on_both_modules_and_near_the_table() {
    let ferro = server(ModuleKind::FerroBloom, 32);
    let oracle = server(ModuleKind::RedisBloom, 32);
    let mut f = ferro.raw();
    let mut o = oracle.raw();
    for args in ["16384 BUCKETSIZE 1", "16384", "16384 BUCKETSIZE 4"] {
        let mut line = vec!["CF.PLAN"];
        line.extend(args.split_whitespace());
        let plan = fields(decode(&f.cmd(&line)));
        let slots = int(&plan["slots"]);
        let key = format!("first {args}");
        let mut counts = Vec::new();
        for r in [&mut f, &mut o] {
            let mut reserve = vec!["CF.RESERVE", key.as_str()];
            reserve.extend(args.split_whitespace());
            assert_eq!(r.cmd(&reserve), OK);
            counts.push(items_at_first_expansion(r, &key));
        }
        // Same bytes, same moment.
        assert_eq!(counts[0], counts[1], "{args}");
        let load = counts[0] as f64 / slots as f64;
        // One filter is one trial: it lands in the measured spread.
        let low = float(&plan["first_expansion_low_load"]);
        let median = float(&plan["first_expansion_load"]);
        assert!(
            load >= low - 0.1 && load <= median + 0.15,
            "{args}: load {load}, table median {median}, lowest {low}"
        );
    }
}

#[test]
fn plan_follows_the_live_settings_and_the_guard() {
    let ferro = server(ModuleKind::FerroBloom, 32);
    let mut r = ferro.raw();
    assert_eq!(r.line("CONFIG SET bf.cf-max-expansions 3"), OK);
    let plan = fields(decode(&r.line("CF.PLAN 1000")));
    assert_eq!(int(&plan["expansions"]), 2);
    assert_eq!(plan["guard_refuses"], Resp::Simple("nothing".into()));
    assert_eq!(plan["guard_refused_sub_filter"], Resp::Nil);
    // Room for two sub-filters of 1,024 bytes (Size 2,120), not three.
    assert_eq!(r.line("CONFIG SET bf.max-filter-bytes 2120"), OK);
    let plan = fields(decode(&r.line("CF.PLAN 1000")));
    assert_eq!(plan["guard_refuses"], Resp::Simple("expansion".into()));
    assert_eq!(int(&plan["guard_refused_sub_filter"]), 3);
    assert_eq!(
        plan["guard_refused_by"],
        Resp::Simple("bf.max-filter-bytes".into())
    );
    let message = plan["guard_message"].as_str().unwrap();
    assert_eq!(r.line("CF.RESERVE g 1000"), OK);
    let mut last = String::new();
    for _ in 0..20 {
        last = format!("{:?}", decode(&r.cmd(&["CF.ADD", "g", "x"])));
    }
    assert!(last.contains(&message), "{last} / {message}");
    assert_eq!(info(&mut r, "g")["Number of filters"], 2);
    // Below the first sub-filter: CF.RESERVE is refused, with these words.
    assert_eq!(r.line("CONFIG SET bf.max-filter-bytes 1000"), OK);
    let plan = fields(decode(&r.line("CF.PLAN 1000")));
    assert_eq!(plan["guard_refuses"], Resp::Simple("reserve".into()));
    let message = plan["guard_message"].as_str().unwrap();
    let refused = decode(&r.line("CF.RESERVE h 1000"));
    assert_eq!(refused, Resp::Error(message));
    // Nothing was allocated, no key was touched; RESP3 gets a map.
    assert_eq!(decode(&r.line("DBSIZE")), Resp::Int(1));
    r.hello3();
    assert!(matches!(decode(&r.line("CF.PLAN 1000")), Resp::Map(_)));
    // CF.RESERVE's errors, word for word.
    for (line, want) in [
        (
            "CF.PLAN",
            "ERR wrong number of arguments for 'cf.plan' command",
        ),
        ("CF.PLAN 1.5", "Bad capacity"),
        (
            "CF.PLAN 100 BUCKETSIZE 51",
            "Capacity must be at least (BucketSize * 2)",
        ),
        (
            "CF.PLAN 9223372036854775807",
            "ERR Insufficient memory to create filter",
        ),
    ] {
        assert_eq!(decode(&r.line(line)), Resp::Error(want.into()), "{line}");
    }
}
