//! TOPK.STATS, TOPK.PLAN and the Top-K fields of `INFO bf` on a real
//! server: reply shapes in RESP2 and RESP3, numbers against arithmetic
//! done here, and the totals through every way a sketch comes and goes.

mod common;

use std::collections::BTreeMap;

use common::client::{assert_errors, assert_stats_and_plan_are_reads, error, ferrobloom, run};
use common::info::{info_u64s, wait_lazyfree};
use common::reply::{fields, float, int, pairs, simple};
use common::{decode, RawClient, Resp, Server};
use ferrobloom_core::topk::{dump, Params, TopK};
use ferrobloom_core::Unguarded;

const OK: &[u8] = b"+OK\r\n";

/// A sketch made here, `fill` applied to it.
fn made(k: u32, width: u32, depth: u32, fill: impl Fn(&mut TopK)) -> TopK {
    let params = Params {
        k,
        width,
        depth,
        decay: 0.9,
    };
    let mut s = TopK::new(params, &Unguarded).unwrap();
    fill(&mut s);
    s
}

/// Stores `sketch` under `key` through RESTORE of its DUMP payload.
fn put(server: &Server, r: &mut RawClient, key: &str, sketch: &TopK) {
    let payload = dump::dump_payload(sketch, server.version().rdb_version());
    assert_eq!(
        r.cmd(&[b"RESTORE".as_slice(), key.as_bytes(), b"0", &payload]),
        OK,
        "{key}"
    );
}

const STATS_FIELDS: [&str; 17] = [
    "k",
    "width",
    "depth",
    "decay",
    "listed",
    "smallest_listed_count",
    "largest_listed_count",
    "counted",
    "bytes",
    "memory_usage",
    "occupied_buckets",
    "occupancy",
    "error",
    "confidence",
    "min_reliable_count",
    "reliable_listed",
    "list_reliability",
];

#[test]
fn stats_in_resp2_and_resp3_with_the_numbers_worked_out_here() {
    let fb = Server::start(ferrobloom());
    let mut r = fb.raw();
    assert_eq!(r.line("TOPK.RESERVE s 3 1000 3 0.9"), OK);
    // 100,000 counts in buckets of their own (no item shares a bucket
    // with another at this width: nothing decays).
    run(&mut r, "TOPK.INCRBY s a 99500 b 300 c 200");
    let check = |reply: Resp| {
        let p = pairs(reply);
        let names: Vec<&str> = p.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, STATS_FIELDS);
        let f: BTreeMap<String, Resp> = p.into_iter().collect();
        assert_eq!(int(&f["k"]), 3);
        assert_eq!(int(&f["width"]), 1000);
        assert_eq!(int(&f["depth"]), 3);
        assert_eq!(float(&f["decay"]), 0.9);
        assert_eq!(int(&f["listed"]), 3);
        assert_eq!(int(&f["smallest_listed_count"]), 200);
        assert_eq!(int(&f["largest_listed_count"]), 99_500);
        assert_eq!(int(&f["counted"]), 100_000);
        // 2.8.2's MEMORY USAGE: 2088 + 1000·3·8 + 3·24.
        assert_eq!(int(&f["memory_usage"]), 26_160);
        assert!(int(&f["bytes"]) > 24_000, "{:?}", f["bytes"]);
        assert_eq!(int(&f["occupied_buckets"]), 9);
        assert_eq!(float(&f["occupancy"]), 9.0 / 3000.0);
        assert_eq!(float(&f["error"]), 0.1);
        assert_eq!(float(&f["confidence"]), 0.99);
        // N/w = 100 per bucket; keeping it at decay 0.9, depth 3:
        // sqrt(100 / (0.1 · ln(1/0.9) · 0.01^(1/3))) = 209.4.
        assert_eq!(int(&f["min_reliable_count"]), 210);
        assert_eq!(int(&f["reliable_listed"]), 2);
        assert_eq!(simple(&f["list_reliability"]), "partial");
        int(&f["memory_usage"])
    };
    let usage = check(decode(&r.line("TOPK.STATS s")));
    // MEMORY USAGE is the value's number plus the key's own overhead.
    let memory = int(&run(&mut r, "MEMORY USAGE s"));
    assert!(
        (usage..usage + 200).contains(&memory),
        "{usage} vs {memory}"
    );
    r.hello3();
    assert!(matches!(decode(&r.line("TOPK.STATS s")), Resp::Map(_)));
    assert_eq!(check(decode(&r.line("TOPK.STATS s"))), usage);

    // Only items counted once each: none can be trusted.
    assert_eq!(r.line("TOPK.RESERVE once 3 1000 3 0.9"), OK);
    let items: Vec<String> = (0..600).map(|i| format!("item{i}")).collect();
    let mut add = vec!["TOPK.ADD".to_string(), "once".to_string()];
    add.extend(items);
    r.cmd(&add);
    let f = fields(decode(&r.line("TOPK.STATS once")));
    assert_eq!(int(&f["largest_listed_count"]), 1);
    assert!(int(&f["min_reliable_count"]) >= 2, "{f:?}");
    assert_eq!(simple(&f["list_reliability"]), "unreliable");

    assert_eq!(
        error(&mut r, "TOPK.STATS nokey"),
        "TopK: key does not exist"
    );
    assert_eq!(r.line("SET str x"), OK);
    assert!(error(&mut r, "TOPK.STATS str").starts_with("WRONGTYPE"));
    assert_eq!(
        error(&mut r, "TOPK.STATS s x"),
        "ERR wrong number of arguments for 'topk.stats' command"
    );
    // Registered as reads: TOPK.STATS reads every bucket, so it is not
    // `fast`; TOPK.PLAN has no key.
    assert_stats_and_plan_are_reads(&mut r, "topk.stats", "topk.plan");
}

const PLAN_FIELDS: [&str; 14] = [
    "k",
    "width",
    "depth",
    "decay",
    "total",
    "item_len",
    "memory_usage",
    "bytes",
    "allocated_bytes",
    "full_bytes",
    "error",
    "confidence",
    "min_reliable_count",
    "guard",
];

#[test]
fn plan_in_resp2_and_resp3_matches_what_the_sketch_takes() {
    let fb = Server::start(ferrobloom());
    let mut r = fb.raw();
    let check = |reply: Resp| {
        let p = pairs(reply);
        let names: Vec<&str> = p.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, PLAN_FIELDS);
        let f: BTreeMap<String, Resp> = p.into_iter().collect();
        assert_eq!(int(&f["k"]), 50);
        assert_eq!(int(&f["width"]), 2000);
        assert_eq!(int(&f["depth"]), 5);
        assert_eq!(float(&f["decay"]), 0.9);
        assert_eq!(int(&f["total"]), 10_000_000);
        assert_eq!(int(&f["item_len"]), 20);
        assert_eq!(int(&f["memory_usage"]), 2088 + 80_000 + 1200);
        assert_eq!(int(&f["bytes"]), 80_000 + 1200);
        let allocated = int(&f["allocated_bytes"]);
        assert!(allocated > 80_000, "{allocated}");
        assert_eq!(int(&f["full_bytes"]), allocated + 50 * 20);
        assert_eq!(float(&f["error"]), 0.1);
        assert_eq!(float(&f["confidence"]), 0.99);
        // The foothold: N/w = 5,000.
        assert_eq!(int(&f["min_reliable_count"]), 5_000);
        assert_eq!(simple(&f["guard"]), "ok");
        int(&f["memory_usage"])
    };
    let line = "TOPK.PLAN 50 2000 5 0.9 TOTAL 10000000 ITEMLEN 20";
    let planned = check(decode(&r.line(line)));
    // What TOPK.STATS reports for such a sketch.
    assert_eq!(r.line("TOPK.RESERVE t 50 2000 5 0.9"), OK);
    let stats = fields(decode(&r.line("TOPK.STATS t")));
    assert_eq!(int(&stats["memory_usage"]), planned);
    // Keywords in any case and order.
    assert_eq!(
        decode(&r.line("topk.plan 50 2000 5 0.9 itemlen 20 total 10000000")),
        decode(&r.line(line))
    );
    r.hello3();
    let reply = decode(&r.line(line));
    assert!(matches!(reply, Resp::Map(_)));
    check(reply);
    // Without TOTAL there is no reliable count; k alone takes the
    // defaults (width 8, depth 7, decay 0.9).
    let f = fields(decode(&r.line("TOPK.PLAN 10")));
    assert!(matches!(f["min_reliable_count"], Resp::Nil), "{f:?}");
    assert_eq!(int(&f["memory_usage"]), 2776);
    assert_eq!(int(&f["width"]), 8);

    // The guard's verdict with the live settings.
    assert_eq!(r.line("CONFIG SET bf.max-filter-bytes 50000"), OK);
    let f = fields(decode(&r.line(line)));
    assert_eq!(simple(&f["guard"]), "bf.max-filter-bytes");
    assert!(error(&mut r, "TOPK.RESERVE big 50 2000 5 0.9")
        .starts_with("ERR Insufficient memory to create topk data structure"));
    assert_eq!(r.line("CONFIG SET bf.max-filter-bytes 0"), OK);

    assert_errors(
        &mut r,
        &[
            (
                "TOPK.PLAN",
                "ERR wrong number of arguments for 'topk.plan' command",
            ),
            (
                "TOPK.PLAN 10 8 7",
                "ERR wrong number of arguments for 'topk.plan' command",
            ),
            (
                "TOPK.PLAN 10 TOTAL",
                "ERR wrong number of arguments for 'topk.plan' command",
            ),
            ("TOPK.PLAN 0", "TopK: invalid k"),
            ("TOPK.PLAN 10 0 7 0.9", "TopK: invalid width"),
            ("TOPK.PLAN 10 8 x 0.9", "TopK: invalid depth"),
            (
                "TOPK.PLAN 10 8 7 2",
                "TopK: invalid decay value. must be '<= 1' & '> 0'",
            ),
            (
                "TOPK.PLAN 10 TOTAL 5 WIDTH 3",
                "ERR unknown argument (expected TOTAL or ITEMLEN)",
            ),
            (
                "TOPK.PLAN 10 TOTAL -3",
                "ERR bad total (expected an integer >= 0)",
            ),
            (
                "TOPK.PLAN 10 ITEMLEN 1.5",
                "ERR bad item length (expected an integer >= 0)",
            ),
            (
                "TOPK.PLAN 1 4294967295 4294967295 0.9",
                "ERR Insufficient memory to create topk data structure",
            ),
        ],
    );
    // Keyless: nothing was created.
    assert_eq!(int(&run(&mut r, "DBSIZE")), 1);
}

/// The Top-K fields of INFO bf.
fn topk_info(r: &mut RawClient) -> BTreeMap<&'static str, u64> {
    let names = [
        "topk_sketches",
        "topk_bytes",
        "topk_created",
        "topk_loaded",
        "topk_copied",
        "topk_adds",
        "topk_expelled",
    ];
    info_u64s(r, "bf", "bf_", &names)
}

/// Buckets and heap records: W·D·8 + k·24.
fn bytes(k: u64, width: u64, depth: u64) -> u64 {
    width * depth * 8 + k * 24
}

#[test]
fn info_follows_sketches_through_commands_restore_copy_reload_del_and_flush() {
    let fb = Server::start(ferrobloom());
    let mut r = fb.raw();
    let zero = topk_info(&mut r);
    assert!(zero.values().all(|&v| v == 0), "{zero:?}");

    // Created by commands, and what their adds do.
    assert_eq!(r.line("TOPK.RESERVE a 1"), OK);
    assert_eq!(r.line("TOPK.RESERVE b 5 100 4 0.9"), OK);
    let made = topk_info(&mut r);
    assert_eq!(made["topk_sketches"], 2);
    assert_eq!(made["topk_created"], 2);
    let (a, b) = (bytes(1, 8, 7), bytes(5, 100, 4));
    assert_eq!(made["topk_bytes"], a + b);
    // k 1: each new item that reaches the one slot's count expels the
    // item there, as the reply says.
    let Resp::Array(replies) = run(&mut r, "TOPK.ADD a x y y z") else {
        panic!()
    };
    let expelled = replies.iter().filter(|e| !matches!(e, Resp::Nil)).count() as u64;
    assert!(expelled >= 1, "{replies:?}");
    // An INCRBY pair with a bad increment is not counted, nor any after it.
    run(&mut r, "TOPK.INCRBY b p 3 q 0 s x t 1");
    let added = topk_info(&mut r);
    assert_eq!(added["topk_adds"], 4 + 2);
    assert_eq!(added["topk_expelled"], expelled);
    // Keys of other commands' errors change nothing.
    assert!(run(&mut r, "TOPK.ADD missing x").is_error());
    assert_eq!(topk_info(&mut r)["topk_adds"], 6);

    // c: large enough to be freed on the lazy-free thread (free effort
    // above 64 pages).
    let c = made_c();
    put(&fb, &mut r, "c", &c);
    let c_bytes = bytes(10, 10_000, 5);
    let all = topk_info(&mut r);
    assert_eq!(all["topk_sketches"], 3);
    assert_eq!(all["topk_loaded"], 1);
    assert_eq!(all["topk_bytes"], a + b + c_bytes);

    // COPY adds a sketch with the same numbers.
    assert_eq!(int(&run(&mut r, "COPY b b2")), 1);
    let copied = topk_info(&mut r);
    assert_eq!(copied["topk_sketches"], 4);
    assert_eq!(copied["topk_bytes"], a + 2 * b + c_bytes);
    assert_eq!(copied["topk_copied"], 1);

    // DEBUG RELOAD frees every sketch and loads them again.
    assert_eq!(r.line("DEBUG RELOAD"), OK);
    // Valkey 9 frees the old dataset in the background after a reload.
    wait_lazyfree(&mut r);
    let reloaded = topk_info(&mut r);
    assert_eq!(reloaded["topk_sketches"], 4);
    assert_eq!(reloaded["topk_bytes"], a + 2 * b + c_bytes);
    assert_eq!(reloaded["topk_loaded"], 1 + 4);
    assert_eq!(reloaded["topk_created"], 2);

    // DEL, then UNLINK of the large one (freed off the main thread).
    assert_eq!(int(&run(&mut r, "DEL a")), 1);
    let deleted = topk_info(&mut r);
    assert_eq!(deleted["topk_sketches"], 3);
    assert_eq!(deleted["topk_bytes"], 2 * b + c_bytes);
    assert_eq!(r.line("CONFIG SET lazyfree-lazy-user-del yes"), OK);
    assert_eq!(int(&run(&mut r, "UNLINK c")), 1);
    wait_lazyfree(&mut r);
    let unlinked = topk_info(&mut r);
    assert_eq!(unlinked["topk_sketches"], 2);
    assert_eq!(unlinked["topk_bytes"], 2 * b);

    // FLUSHALL ASYNC and FLUSHALL empty the gauges; the counters stay.
    put(&fb, &mut r, "c", &c);
    assert_eq!(r.line("FLUSHALL ASYNC"), OK);
    wait_lazyfree(&mut r);
    let flushed = topk_info(&mut r);
    assert_eq!((flushed["topk_sketches"], flushed["topk_bytes"]), (0, 0));
    assert_eq!(flushed["topk_loaded"], 6);
    put(&fb, &mut r, "c", &c);
    assert_eq!(r.line("TOPK.RESERVE d 3"), OK);
    // SYNC: Valkey 8 and later flush in the background by default.
    assert_eq!(r.line("FLUSHALL SYNC"), OK);
    let flushed = topk_info(&mut r);
    assert_eq!((flushed["topk_sketches"], flushed["topk_bytes"]), (0, 0));
    assert_eq!(flushed["topk_created"], 3);
}

/// 10 × 10,000 × 5: 400,240 bytes of buckets and records.
fn made_c() -> TopK {
    made(10, 10_000, 5, |s| {
        for i in 0..100u32 {
            s.incrby(format!("c{}", i % 13).as_bytes(), i % 5).unwrap();
        }
    })
}
