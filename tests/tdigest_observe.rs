//! TDIGEST.STATS, TDIGEST.PLAN, the `tdigest.*` keyspace events and the
//! t-digest fields of `INFO bf` on a real server: reply shapes in RESP2
//! and RESP3, numbers against arithmetic done here, events only for what
//! changed, and the totals through every way a digest comes, changes and
//! goes.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::client::{
    assert_errors, assert_stats_and_plan_are_reads, error, ferrobloom, int, keyevent, ok, run,
    wait_until,
};
use common::info::{info_u64s, wait_lazyfree};
use common::reply::{self, bulk_bytes, fields, float, pairs};
use common::{RawClient, Resp, Server};
use ferrobloom_core::dump_format::RDB_VERSION_7_0;
use ferrobloom_core::tdigest::{dump, TDigest};
use ferrobloom_core::Unguarded;

/// PLAN's bound: the largest share of the observations a centroid at
/// quantile q may hold, `2π·ln n·q(1 − q)/c` (see plan.rs).
fn bound(c: f64, n: f64, q: f64) -> f64 {
    2.0 * std::f64::consts::PI * n.ln() * q * (1.0 - q) / c
}

const STATS_FIELDS: [&str; 14] = [
    "compression",
    "capacity",
    "observations",
    "merged_nodes",
    "unmerged_nodes",
    "fill",
    "heaviest_centroid",
    "min",
    "max",
    "bytes",
    "allocated",
    "memory_usage",
    "median_error_bound",
    "tail_error_bound",
];

const PLAN_FIELDS: [&str; 9] = [
    "compression",
    "capacity",
    "observations",
    "bytes",
    "allocated",
    "memory_usage",
    "guard",
    "median_error_bound",
    "tail_error_bound",
];

/// TDIGEST.INFO's numbers by name.
fn td_info(r: &mut RawClient, key: &str) -> BTreeMap<String, i64> {
    pairs(run(r, &format!("TDIGEST.INFO {key}")))
        .into_iter()
        .map(|(k, v)| (k, reply::int(&v)))
        .collect()
}

#[test]
fn stats_and_plan_in_resp2_and_resp3() {
    let fb = Server::start(ferrobloom());
    let mut r = fb.raw();
    ok(&mut r, "TDIGEST.CREATE k COMPRESSION 50");
    let values: Vec<String> = (1..=1000).map(|i| i.to_string()).collect();
    ok(&mut r, &format!("TDIGEST.ADD k {}", values.join(" ")));
    let info = td_info(&mut r, "k");
    let check = |reply: Resp| {
        let p = pairs(reply);
        let names: Vec<&str> = p.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, STATS_FIELDS);
        let f: BTreeMap<String, Resp> = p.into_iter().collect();
        assert_eq!(reply::int(&f["compression"]), 50);
        assert_eq!(reply::int(&f["capacity"]), 310);
        assert_eq!(reply::int(&f["observations"]), 1000);
        assert_eq!(reply::int(&f["merged_nodes"]), info["Merged nodes"]);
        assert_eq!(reply::int(&f["unmerged_nodes"]), info["Unmerged nodes"]);
        let nodes = info["Merged nodes"] + info["Unmerged nodes"];
        assert_eq!(float(&f["fill"]), nodes as f64 / 310.0);
        let heaviest = reply::int(&f["heaviest_centroid"]);
        assert!(heaviest > 1 && heaviest < 1000, "{heaviest}");
        assert_eq!((float(&f["min"]), float(&f["max"])), (1.0, 1000.0));
        assert_eq!(reply::int(&f["bytes"]), 16 * 310);
        // 4960 bytes of nodes in jemalloc's 5120 class, and the box.
        assert!((5120 + 64..=5120 + 256).contains(&reply::int(&f["allocated"])));
        assert_eq!(reply::int(&f["memory_usage"]), info["Memory usage"]);
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-15 * b;
        assert!(close(
            float(&f["median_error_bound"]),
            bound(50.0, 1000.0, 0.5)
        ));
        assert!(close(
            float(&f["tail_error_bound"]),
            bound(50.0, 1000.0, 0.01)
        ));
    };
    check(run(&mut r, "TDIGEST.STATS k"));
    // MEMORY USAGE is the value's number plus the key's own overhead.
    let memory = int(&mut r, "MEMORY USAGE k");
    assert!((16 * 310 + 8..16 * 310 + 200).contains(&memory), "{memory}");
    // STATS does not compress: TDIGEST.INFO is unchanged.
    assert_eq!(td_info(&mut r, "k"), info);

    // PLAN for the same compression: the bytes STATS reports.
    let plan_check = |reply: Resp, n: i64| {
        let p = pairs(reply);
        let names: Vec<&str> = p.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, PLAN_FIELDS);
        let f: BTreeMap<String, Resp> = p.into_iter().collect();
        assert_eq!(reply::int(&f["compression"]), 50);
        assert_eq!(reply::int(&f["capacity"]), 310);
        assert_eq!(reply::int(&f["observations"]), n);
        assert_eq!(reply::int(&f["bytes"]), 16 * 310);
        assert_eq!(reply::int(&f["memory_usage"]), 16 * 310 + 8);
        assert_eq!(f["guard"], Resp::Simple("ok".into()));
        f
    };
    let f = plan_check(run(&mut r, "TDIGEST.PLAN 50 OBSERVATIONS 1000"), 1000);
    let stats = fields(run(&mut r, "TDIGEST.STATS k"));
    for name in ["allocated", "median_error_bound", "tail_error_bound"] {
        assert_eq!(f[name], stats[name], "{name}");
    }
    plan_check(run(&mut r, "tdigest.plan 50"), 1_000_000);

    r.hello3();
    let reply = run(&mut r, "TDIGEST.STATS k");
    assert!(matches!(reply, Resp::Map(_)), "{reply:?}");
    check(reply);
    let reply = run(&mut r, "TDIGEST.PLAN 50 OBSERVATIONS 1000");
    assert!(matches!(reply, Resp::Map(_)), "{reply:?}");
    plan_check(reply, 1000);
    // An empty digest has no min or max.
    ok(&mut r, "TDIGEST.CREATE e");
    let f = fields(run(&mut r, "TDIGEST.STATS e"));
    assert_eq!((&f["min"], &f["max"]), (&Resp::Nil, &Resp::Nil));

    // The guard's verdict with the live settings.
    ok(&mut r, "CONFIG SET bf.max-filter-bytes 5000");
    let f = fields(run(&mut r, "TDIGEST.PLAN 500"));
    assert_eq!(f["guard"], Resp::Simple("bf.max-filter-bytes".into()));
    let f = fields(run(&mut r, "TDIGEST.PLAN 50"));
    assert_eq!(f["guard"], Resp::Simple("ok".into()));
    ok(&mut r, "CONFIG SET bf.max-filter-bytes 0");

    assert_errors(
        &mut r,
        &[
            ("TDIGEST.STATS nokey", "ERR T-Digest: key does not exist"),
            (
                "TDIGEST.STATS k x",
                "ERR wrong number of arguments for 'tdigest.stats' command",
            ),
            (
                "TDIGEST.PLAN",
                "ERR wrong number of arguments for 'tdigest.plan' command",
            ),
            (
                "TDIGEST.PLAN x",
                "ERR T-Digest: error parsing compression parameter",
            ),
            (
                "TDIGEST.PLAN 0",
                "ERR T-Digest: compression parameter needs to be a positive integer",
            ),
            ("TDIGEST.PLAN 400000000", "ERR T-Digest: allocation failed"),
            (
                "TDIGEST.PLAN 100 OBSERVATIONS",
                "ERR wrong number of arguments for 'tdigest.plan' command",
            ),
            (
                "TDIGEST.PLAN 100 N 5",
                "ERR unknown argument (expected OBSERVATIONS)",
            ),
            (
                "TDIGEST.PLAN 100 OBSERVATIONS -5",
                "ERR bad observations (expected an integer >= 0)",
            ),
        ],
    );
    ok(&mut r, "SET str x");
    assert!(error(&mut r, "TDIGEST.STATS str").starts_with("WRONGTYPE"));
    // Keyless: nothing was created.
    assert_eq!(int(&mut r, "DBSIZE"), 3);

    // Registered as reads; PLAN has no key.
    assert_stats_and_plan_are_reads(&mut r, "tdigest.stats", "tdigest.plan");
}

/// A DUMP payload of a digest of compression 200 holding 2^63 − 1024
/// observations of 1.0 (weights are saved as doubles: the largest below
/// 2^63), so 1023 more fit and the 1024th overflows. Its 1210 nodes take
/// those without a compress.
fn heavy_payload() -> Vec<u8> {
    let mut td = TDigest::new(200.0, &Unguarded).unwrap();
    td.add_weighted(1.0, i64::MAX - 1023).unwrap();
    td.compress().unwrap();
    dump::dump_payload(&td, RDB_VERSION_7_0)
}

/// `TDIGEST.ADD key` of 1024 values: 1023 added, then `overflow detected`.
fn overflowing_add(key: &str) -> String {
    let values: Vec<String> = (0..1024).map(|i| i.to_string()).collect();
    format!("TDIGEST.ADD {key} {}", values.join(" "))
}

/// The keyevent notifications (`event key`) until `until`'s
/// `tdigest.create`.
fn events_until(sub: &mut RawClient, until: &str) -> Vec<String> {
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        assert!(Instant::now() < deadline, "no sentinel; seen {seen:?}");
        let Some((event, key)) = keyevent(&sub.read_reply().expect("a notification")) else {
            continue;
        };
        if key == until && event == "tdigest.create" {
            return seen;
        }
        seen.push(format!("{event} {key}"));
    }
}

#[test]
fn writes_send_events_only_when_something_changed() {
    let fb = Server::start(ferrobloom());
    let mut r = fb.raw();
    ok(&mut r, "CONFIG SET notify-keyspace-events Ed");
    assert_eq!(
        r.cmd(&[b"RESTORE".as_slice(), b"heavy", b"0", &heavy_payload()]),
        b"+OK\r\n"
    );
    let mut sub = fb.raw();
    sub.cmd(&["PSUBSCRIBE", "__keyevent@0__:*"]);
    let overflow = overflowing_add("heavy");
    for (line, refused) in [
        ("TDIGEST.CREATE k", false),
        ("TDIGEST.CREATE k", true),
        ("TDIGEST.CREATE bad COMPRESSION 0", true),
        ("TDIGEST.ADD k 1 2 3", false),
        ("TDIGEST.ADD k 4 x", true),
        ("TDIGEST.ADD k 4 inf", true),
        ("TDIGEST.ADD nokey 1", true),
        ("TDIGEST.QUANTILE k 0.5", false),
        ("TDIGEST.STATS k", false),
        ("TDIGEST.PLAN 100", false),
        ("TDIGEST.RESET k", false),
        ("TDIGEST.RESET nokey", true),
        ("TDIGEST.ADD k 5", false),
        ("TDIGEST.MERGE d 1 k", false),
        ("TDIGEST.MERGE d 1 nokey", true),
        ("TDIGEST.MERGE d 2 d k", false),
        ("TDIGEST.MERGE d 1 k OVERRIDE", false),
        ("TDIGEST.MERGE d 1 k COMPRESSION 0", true),
        // 1023 values fit before the total weight overflows: an error,
        // but they were added (and propagated), so `tdigest.add`.
        (overflow.as_str(), true),
        ("TDIGEST.ADD heavy 10", true),
        ("CONFIG SET bf.max-filter-bytes 100", false),
        ("TDIGEST.CREATE g", true),
        ("CONFIG SET bf.max-filter-bytes 0", false),
        ("TDIGEST.CREATE zz-end", false),
    ] {
        assert_eq!(run(&mut r, line).is_error(), refused, "{line}");
    }
    assert_eq!(
        events_until(&mut sub, "zz-end"),
        [
            "tdigest.create k",
            "tdigest.add k",
            "tdigest.reset k",
            "tdigest.add k",
            "tdigest.merge d",
            "tdigest.merge d",
            "tdigest.merge d",
            "tdigest.add heavy",
            "bf.guard-refused g",
        ]
    );
    assert_eq!(td_info(&mut r, "heavy")["Observations"], i64::MAX);
}

const INFO_NAMES: [&str; 9] = [
    "digests",
    "bytes",
    "observations",
    "created",
    "loaded",
    "copied",
    "merges",
    "resets",
    "overflows",
];

/// The t-digest fields of INFO bf, without their `bf_tdigest_` prefix.
fn totals(r: &mut RawClient) -> BTreeMap<&'static str, u64> {
    info_u64s(r, "bf", "bf_tdigest_", &INFO_NAMES)
}

/// The gauges as the keyspace has them: digests, Σ 16·capacity,
/// Σ observations (from TDIGEST.INFO of every key).
fn keyspace(r: &mut RawClient) -> (u64, u64, u64) {
    let Resp::Array(keys) = run(r, "KEYS *") else {
        panic!()
    };
    let (mut n, mut bytes, mut observations) = (0, 0, 0);
    for key in keys {
        let key = key.as_str().unwrap();
        if run(r, &format!("TYPE {key}")) != Resp::Simple("TDIS-TYPE".into()) {
            continue;
        }
        let info = td_info(r, &key);
        n += 1;
        bytes += 16 * info["Capacity"] as u64;
        observations += info["Observations"] as u64;
    }
    (n, bytes, observations)
}

#[track_caller]
fn agree(r: &mut RawClient, what: &str) -> BTreeMap<&'static str, u64> {
    let t = totals(r);
    assert_eq!(
        (t["digests"], t["bytes"], t["observations"]),
        keyspace(r),
        "{what}: {t:?}"
    );
    t
}

#[test]
fn info_follows_digests_through_every_way_they_come_and_go() {
    let fb = Server::start(ferrobloom());
    let mut r = fb.raw();
    let zero = totals(&mut r);
    assert!(zero.values().all(|&v| v == 0), "{zero:?}");

    ok(&mut r, "TDIGEST.CREATE a");
    ok(&mut r, "TDIGEST.CREATE b COMPRESSION 50");
    let t = agree(&mut r, "created");
    assert_eq!(
        (t["digests"], t["bytes"], t["created"]),
        (2, 16 * 610 + 16 * 310, 2)
    );
    let values: Vec<String> = (1..=1000).map(|i| i.to_string()).collect();
    ok(&mut r, &format!("TDIGEST.ADD a {}", values.join(" ")));
    ok(&mut r, "TDIGEST.ADD b 1 2 3");
    assert_eq!(agree(&mut r, "adds")["observations"], 1003);
    // Reads change nothing counted.
    run(&mut r, "TDIGEST.QUANTILE a 0.5");
    run(&mut r, "TDIGEST.CDF b 2");
    assert_eq!(agree(&mut r, "reads")["observations"], 1003);
    ok(&mut r, "TDIGEST.RESET b");
    let t = agree(&mut r, "reset");
    assert_eq!((t["observations"], t["resets"]), (1000, 1));
    ok(&mut r, "TDIGEST.ADD b 4 5");

    // MERGE into a new key (a creation), into an existing one (replaced),
    // with the destination listed, with OVERRIDE and a new compression.
    ok(&mut r, "TDIGEST.MERGE m 2 a b");
    let t = agree(&mut r, "merge into a new key");
    assert_eq!((t["digests"], t["merges"], t["created"]), (3, 1, 3));
    assert_eq!(t["observations"], 2 * 1002);
    ok(&mut r, "TDIGEST.MERGE m 1 b");
    ok(&mut r, "TDIGEST.MERGE m 2 m a");
    let t = agree(&mut r, "merges into an existing key");
    assert_eq!((t["digests"], t["merges"], t["created"]), (3, 3, 3));
    assert_eq!(t["observations"], 1002 + 1004 + 1000);
    ok(&mut r, "TDIGEST.MERGE m 1 b OVERRIDE COMPRESSION 500");
    let t = agree(&mut r, "merge with OVERRIDE");
    assert_eq!(t["bytes"], 16 * (610 + 310 + 3010));
    assert_eq!(t["observations"], 1000 + 2 + 2);
    // A refused merge changes nothing.
    assert!(run(&mut r, "TDIGEST.MERGE m 1 nokey").is_error());
    assert_eq!(agree(&mut r, "refused merge")["merges"], 4);

    // RESTORE and COPY.
    let payload = bulk_bytes(&run(&mut r, "DUMP a"));
    assert_eq!(
        r.cmd(&[b"RESTORE".as_slice(), b"restored", b"0", &payload]),
        b"+OK\r\n"
    );
    assert_eq!(int(&mut r, "COPY b copied"), 1);
    let t = agree(&mut r, "restore and copy");
    assert_eq!((t["digests"], t["loaded"], t["copied"]), (5, 1, 1));
    // a, b, m (b's 2 after OVERRIDE), restored (a's), copied (b's).
    assert_eq!(t["observations"], 1000 + 2 + 2 + 1000 + 2);
    // RESTORE REPLACE over a digest: the old one leaves.
    assert_eq!(
        r.cmd(&[b"RESTORE".as_slice(), b"copied", b"0", &payload, b"REPLACE"]),
        b"+OK\r\n"
    );
    let t = agree(&mut r, "restore replace");
    assert_eq!((t["digests"], t["loaded"]), (5, 2));

    // DEBUG RELOAD frees every digest and loads it again.
    ok(&mut r, "DEBUG RELOAD");
    // Valkey frees the old values on the lazy-free thread.
    wait_lazyfree(&mut r);
    let t = agree(&mut r, "reload");
    assert_eq!((t["digests"], t["loaded"]), (5, 2 + 5));

    // Overflow: a digest at 2^63 − 1024 observations takes 1023 more.
    assert_eq!(
        r.cmd(&[b"RESTORE".as_slice(), b"heavy", b"0", &heavy_payload()]),
        b"+OK\r\n"
    );
    assert!(run(&mut r, &overflowing_add("heavy")).is_error());
    let t = totals(&mut r);
    assert_eq!(t["overflows"], 1);
    assert_eq!(td_info(&mut r, "heavy")["Observations"], i64::MAX);
    assert_eq!(int(&mut r, "DEL heavy"), 1);

    // DEL, then UNLINK of a large digest (freed on the lazy-free thread:
    // compression 20000 is 120,010 nodes, 1.9 MB).
    assert_eq!(int(&mut r, "DEL restored"), 1);
    let t = agree(&mut r, "del");
    assert_eq!(t["digests"], 4);
    ok(&mut r, "CONFIG SET lazyfree-lazy-user-del yes");
    ok(&mut r, "TDIGEST.CREATE big COMPRESSION 20000");
    ok(&mut r, "TDIGEST.ADD big 1 2 3");
    assert_eq!(
        agree(&mut r, "big")["bytes"],
        16 * (610 + 310 + 3010 + 610 + 120_010)
    );
    assert_eq!(int(&mut r, "UNLINK big"), 1);
    wait_lazyfree(&mut r);
    let t = agree(&mut r, "unlink");
    assert_eq!(t["digests"], 4);

    // Expiry: the key goes, and so do its counts.
    ok(&mut r, "TDIGEST.CREATE short");
    ok(&mut r, "TDIGEST.ADD short 1");
    assert_eq!(int(&mut r, "PEXPIRE short 1"), 1);
    wait_until("expiry", Duration::from_secs(10), || {
        int(&mut r, "EXISTS short") == 0
    });
    assert_eq!(agree(&mut r, "expired")["digests"], 4);

    // FLUSHALL ASYNC and FLUSHALL empty the gauges; counters stay.
    ok(&mut r, "TDIGEST.CREATE big COMPRESSION 20000");
    ok(&mut r, "FLUSHALL ASYNC");
    wait_lazyfree(&mut r);
    let t = agree(&mut r, "flushall async");
    assert_eq!((t["digests"], t["bytes"], t["observations"]), (0, 0, 0));
    ok(&mut r, "TDIGEST.CREATE again");
    ok(&mut r, "TDIGEST.ADD again 1");
    ok(&mut r, "FLUSHALL");
    // Asynchronous by default on Valkey 8 and later.
    wait_lazyfree(&mut r);
    let t = agree(&mut r, "flushall");
    assert_eq!((t["digests"], t["bytes"], t["observations"]), (0, 0, 0));
    assert_eq!(
        (
            t["created"],
            t["loaded"],
            t["copied"],
            t["merges"],
            t["resets"]
        ),
        (3 + 1 + 1 + 1 + 1, 8, 1, 4, 1)
    );
}
