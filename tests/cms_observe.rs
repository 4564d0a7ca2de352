//! CMS.STATS, CMS.PLAN and the Count-Min fields of `INFO bf` on a real
//! server: reply shapes in RESP2 and RESP3, numbers against arithmetic
//! done here, and the totals through every way a sketch comes and goes.

mod common;

use std::collections::BTreeMap;

use common::client::{assert_errors, assert_stats_and_plan_are_reads, error, ferrobloom, run};
use common::info::{info_field, info_u64, info_u64s, wait_lazyfree};
use common::reply::{fields, float, int, pairs, simple};
use common::{decode, RawClient, Resp, Server};
use ferrobloom_core::cms::{dump, CellSize, CountMinSketch};
use ferrobloom_core::Unguarded;

const OK: &[u8] = b"+OK\r\n";

/// Stores `sketch` under `key` through RESTORE of its DUMP payload.
fn put(server: &Server, r: &mut RawClient, key: &str, sketch: &CountMinSketch) {
    let payload = dump::dump_payload(sketch, server.version().rdb_version());
    assert_eq!(
        r.cmd(&[b"RESTORE".as_slice(), key.as_bytes(), b"0", &payload]),
        OK,
        "{key}"
    );
}

/// A `width`×`depth` sketch where item `i` (for i < items) counts
/// `count(i)`.
fn filled(
    width: u64,
    depth: u64,
    size: CellSize,
    items: u64,
    count: impl Fn(u64) -> i64,
) -> CountMinSketch {
    let mut s = CountMinSketch::new(width, depth, size, &Unguarded).unwrap();
    for i in 0..items {
        s.incrby(format!("item{i}").as_bytes(), count(i)).unwrap();
    }
    s
}

const STATS_FIELDS: [&str; 13] = [
    "width",
    "depth",
    "cell_size",
    "count",
    "bytes",
    "memory_usage",
    "error_bound",
    "confidence",
    "fullest_cell",
    "cell_max",
    "fullest_fraction",
    "count_headroom",
    "fill_level",
];

#[test]
fn stats_in_resp2_and_resp3_with_the_numbers_worked_out_here() {
    let fb = Server::start(ferrobloom());
    let mut r = fb.raw();
    // 500 items counting 1..=500 in 2-byte cells: N = 500·501/2.
    let sketch = filled(2000, 7, CellSize::Two, 500, |i| i as i64 + 1);
    let n: i64 = 500 * 501 / 2;
    put(&fb, &mut r, "s", &sketch);
    // The fullest cell, read cell by cell from the sketch we sent.
    let fullest = (0..2000 * 7).map(|i| sketch.cell(i)).max().unwrap() as i64;
    assert!(fullest >= 500, "item 499 alone puts 500 in its cells");

    let check = |reply: Resp| {
        let p = pairs(reply);
        let names: Vec<&str> = p.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, STATS_FIELDS);
        let f: BTreeMap<String, Resp> = p.into_iter().collect();
        assert_eq!(int(&f["width"]), 2000);
        assert_eq!(int(&f["depth"]), 7);
        assert_eq!(int(&f["cell_size"]), 2);
        assert_eq!(int(&f["count"]), n);
        assert_eq!(int(&f["bytes"]), 2000 * 7 * 2);
        assert_eq!(float(&f["error_bound"]), 2.0 * n as f64 / 2000.0);
        assert_eq!(float(&f["confidence"]), 1.0 - 1.0 / 128.0);
        assert_eq!(int(&f["fullest_cell"]), fullest);
        assert_eq!(int(&f["cell_max"]), 65535);
        assert_eq!(float(&f["fullest_fraction"]), fullest as f64 / 65535.0);
        assert_eq!(int(&f["count_headroom"]), i64::MAX - n);
        assert_eq!(simple(&f["fill_level"]), "ok");
        int(&f["memory_usage"])
    };
    let usage = check(decode(&r.line("CMS.STATS s")));
    // MEMORY USAGE is the value's number plus the key's own overhead.
    let memory = int(&run(&mut r, "MEMORY USAGE s"));
    assert!(
        (usage..usage + 200).contains(&memory),
        "{usage} vs {memory}"
    );
    r.hello3();
    assert!(matches!(decode(&r.line("CMS.STATS s")), Resp::Map(_)));
    assert_eq!(check(decode(&r.line("CMS.STATS s"))), usage);

    // 4-byte cells: 2.8.2's MEMORY USAGE number, 8 + W·D·8.
    put(
        &fb,
        &mut r,
        "four",
        &filled(100, 5, CellSize::Four, 3, |_| 1),
    );
    let f = fields(decode(&r.line("CMS.STATS four")));
    assert_eq!(int(&f["memory_usage"]), 8 + 100 * 5 * 8);
    assert_eq!(int(&f["cell_max"]), 4294967295);

    // Fill levels against the live thresholds: one item at 230 of 255.
    put(
        &fb,
        &mut r,
        "one",
        &filled(50, 3, CellSize::One, 1, |_| 230),
    );
    let level = |r: &mut RawClient| simple(&fields(decode(&r.line("CMS.STATS one")))["fill_level"]);
    assert_eq!(level(&mut r), "alert");
    assert_eq!(r.line("CONFIG SET bf.fill-alert 0.95"), OK);
    assert_eq!(level(&mut r), "warning");
    assert_eq!(r.line("CONFIG SET bf.fill-warning 0.91"), OK);
    assert_eq!(level(&mut r), "ok");

    assert_eq!(error(&mut r, "CMS.STATS nokey"), "CMS: key does not exist");
    assert_eq!(r.line("SET str x"), OK);
    assert!(error(&mut r, "CMS.STATS str").starts_with("WRONGTYPE"));
    assert_eq!(
        error(&mut r, "CMS.STATS s x"),
        "ERR wrong number of arguments for 'cms.stats' command"
    );
    // Registered as reads: CMS.STATS reads every cell, so it is not
    // `fast` (as RedisBloom's CMS.* are not); CMS.PLAN has no key.
    assert_stats_and_plan_are_reads(&mut r, "cms.stats", "cms.plan");
}

const PLAN_FIELDS: [&str; 11] = [
    "width",
    "depth",
    "total",
    "error",
    "probability",
    "error_bound",
    "confidence",
    "textbook_error_bound",
    "textbook_confidence",
    "cell_sizes",
    "smallest_cell_size",
];

#[test]
fn plan_in_resp2_and_resp3_matches_what_the_sketch_takes() {
    let fb = Server::start(ferrobloom());
    let mut r = fb.raw();
    let check = |reply: Resp| -> Vec<BTreeMap<String, Resp>> {
        let p = pairs(reply);
        let names: Vec<&str> = p.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, PLAN_FIELDS);
        let f: BTreeMap<String, Resp> = p.into_iter().collect();
        assert_eq!(int(&f["width"]), 2000);
        assert_eq!(int(&f["depth"]), 7);
        assert_eq!(int(&f["total"]), 1_000_000);
        assert_eq!(float(&f["error"]), 0.001);
        assert_eq!(float(&f["probability"]), 1.0 / 128.0);
        assert_eq!(float(&f["error_bound"]), 1000.0);
        assert_eq!(float(&f["confidence"]), 127.0 / 128.0);
        let textbook = float(&f["textbook_error_bound"]);
        assert!((textbook - std::f64::consts::E * 500.0).abs() < 1e-9);
        assert!((float(&f["textbook_confidence"]) - (1.0 - (-7f64).exp())).abs() < 1e-15);
        assert_eq!(int(&f["smallest_cell_size"]), 4);
        let Resp::Array(sizes) = &f["cell_sizes"] else {
            panic!("{:?}", f["cell_sizes"])
        };
        let sizes: Vec<BTreeMap<String, Resp>> = sizes.iter().map(|s| fields(s.clone())).collect();
        for (s, bytes) in sizes.iter().zip([1, 2, 4, 8]) {
            assert_eq!(int(&s["cell_size"]), bytes);
            assert_eq!(int(&s["bytes"]), 14000 * bytes);
            assert_eq!(int(&s["holds_total"]), i64::from(bytes >= 4));
            assert_eq!(simple(&s["guard"]), "ok");
        }
        sizes
    };
    let line = "CMS.PLAN BYPROB 0.001 0.01 TOTAL 1000000";
    let sizes = check(decode(&r.line(line)));
    // Each size's memory_usage is what CMS.STATS reports for such a sketch.
    for (s, size) in sizes.iter().zip(CellSize::ALL) {
        let key = format!("k{}", size.bytes());
        put(&fb, &mut r, &key, &filled(2000, 7, size, 0, |_| 0));
        let stats = fields(decode(&r.line(&format!("CMS.STATS {key}"))));
        assert_eq!(int(&s["memory_usage"]), int(&stats["memory_usage"]));
    }
    // Keywords in any case; BYDIM plans the same sketch.
    let by_dim = decode(&r.line("cms.plan bydim 2000 7 total 1000000"));
    assert_eq!(by_dim, decode(&r.line(line)));
    r.hello3();
    let reply = decode(&r.line(line));
    assert!(matches!(reply, Resp::Map(_)));
    check(reply);

    // The guard's verdict with the live settings.
    assert_eq!(r.line("CONFIG SET bf.max-filter-bytes 50000"), OK);
    let f = fields(decode(&r.line(line)));
    let Resp::Array(sizes) = &f["cell_sizes"] else {
        panic!()
    };
    let verdicts: Vec<String> = sizes
        .iter()
        .map(|s| simple(&fields(s.clone())["guard"]))
        .collect();
    assert_eq!(
        verdicts,
        ["ok", "ok", "bf.max-filter-bytes", "bf.max-filter-bytes"]
    );
    assert!(matches!(f["smallest_cell_size"], Resp::Int(4)));
    let f = fields(decode(
        &r.line("CMS.PLAN BYDIM 10 10 TOTAL 9223372036854775807"),
    ));
    assert_eq!(int(&f["smallest_cell_size"]), 8);
    let f = fields(decode(&r.line("CMS.PLAN BYDIM 10 10")));
    assert_eq!(int(&f["smallest_cell_size"]), 1);

    assert_errors(
        &mut r,
        &[
            (
                "CMS.PLAN BYDIM 10",
                "ERR wrong number of arguments for 'cms.plan' command",
            ),
            (
                "CMS.PLAN BYDIM 10 5 TOTAL",
                "ERR wrong number of arguments for 'cms.plan' command",
            ),
            (
                "CMS.PLAN FOO 10 5",
                "ERR unknown mode (expected BYPROB or BYDIM)",
            ),
            ("CMS.PLAN BYDIM 0 5", "CMS: invalid width"),
            ("CMS.PLAN BYDIM 5 abc", "CMS: invalid depth"),
            ("CMS.PLAN BYPROB 0 0.5", "CMS: invalid overestimation value"),
            ("CMS.PLAN BYPROB 0.1 1", "CMS: invalid prob value"),
            ("CMS.PLAN BYPROB 0.1 nan", "CMS: invalid prob value"),
            (
                "CMS.PLAN BYDIM 10 5 WIDTH 3",
                "ERR unknown argument (expected TOTAL)",
            ),
            (
                "CMS.PLAN BYDIM 10 5 TOTAL -3",
                "ERR bad total (expected an integer >= 0)",
            ),
            (
                "CMS.PLAN BYDIM 8589934592 8589934592",
                "CMS: invalid init arguments",
            ),
            (
                "CMS.PLAN BYDIM 4611686018427387904 1",
                "CMS: Insufficient memory to create the key",
            ),
        ],
    );
    // Keyless: nothing was created.
    assert_eq!(int(&run(&mut r, "DBSIZE")), 4);
}

/// The Count-Min fields of INFO bf.
fn cms_info(r: &mut RawClient) -> BTreeMap<&'static str, u64> {
    let names = [
        "cms_sketches",
        "cms_bytes",
        "cms_count",
        "cms_over_warning",
        "cms_over_alert",
        "cms_created",
        "cms_loaded",
        "cms_copied",
    ];
    info_u64s(r, "bf", "bf_", &names)
}

#[test]
fn info_follows_sketches_through_restore_copy_reload_del_and_flush() {
    let fb = Server::start(ferrobloom());
    let mut r = fb.raw();
    let zero = cms_info(&mut r);
    assert!(zero.values().all(|&v| v == 0), "{zero:?}");
    assert_eq!(info_field(&mut r, "bf", "bf_cms_max_fill_ratio"), "0");

    // a: 1-byte cells, one item at 230 (fill 230/255, over both
    // thresholds); b: 4-byte cells, 10 items of 1..=10; c: large enough to
    // be freed on the lazy-free thread (free effort above 64 pages).
    let a = filled(50, 3, CellSize::One, 1, |_| 230);
    let b = filled(100, 4, CellSize::Four, 10, |i| i as i64 + 1);
    let c = filled(2000, 70, CellSize::Four, 1, |_| 5);
    put(&fb, &mut r, "a", &a);
    put(&fb, &mut r, "b", &b);
    put(&fb, &mut r, "c", &c);
    let bytes = 150 + 1600 + 560_000;
    let count = 230 + 55 + 5;
    let all = cms_info(&mut r);
    assert_eq!(all["cms_sketches"], 3);
    assert_eq!(all["cms_bytes"], bytes);
    assert_eq!(all["cms_count"], count);
    assert_eq!((all["cms_over_warning"], all["cms_over_alert"]), (1, 1));
    assert_eq!(all["cms_loaded"], 3);
    assert_eq!(
        info_field(&mut r, "bf", "bf_cms_max_fill_ratio")
            .parse::<f64>()
            .unwrap(),
        230.0 / 255.0
    );
    // Thresholds moved by CONFIG SET apply at once.
    assert_eq!(r.line("CONFIG SET bf.fill-alert 0.95"), OK);
    assert_eq!(cms_info(&mut r)["cms_over_alert"], 0);
    assert_eq!(cms_info(&mut r)["cms_over_warning"], 1);
    assert_eq!(r.line("CONFIG SET bf.fill-alert 0.9"), OK);

    // COPY adds a sketch with the same numbers.
    assert_eq!(int(&run(&mut r, "COPY b b2")), 1);
    let copied = cms_info(&mut r);
    assert_eq!(copied["cms_sketches"], 4);
    assert_eq!(copied["cms_bytes"], bytes + 1600);
    assert_eq!(copied["cms_count"], count + 55);
    assert_eq!(copied["cms_copied"], 1);

    // DEBUG RELOAD frees every sketch and loads them again.
    assert_eq!(r.line("DEBUG RELOAD"), OK);
    // Valkey 9 frees the old dataset in the background after a reload.
    wait_lazyfree(&mut r);
    let reloaded = cms_info(&mut r);
    assert_eq!(reloaded["cms_sketches"], 4);
    assert_eq!(reloaded["cms_bytes"], bytes + 1600);
    assert_eq!(reloaded["cms_count"], count + 55);
    assert_eq!(reloaded["cms_over_alert"], 1);
    assert_eq!(reloaded["cms_loaded"], 3 + 4);

    // DEL, then UNLINK of the large one (freed off the main thread).
    assert_eq!(int(&run(&mut r, "DEL a")), 1);
    let deleted = cms_info(&mut r);
    assert_eq!(deleted["cms_sketches"], 3);
    assert_eq!(deleted["cms_bytes"], bytes + 1600 - 150);
    assert_eq!(deleted["cms_count"], count + 55 - 230);
    assert_eq!(
        (deleted["cms_over_warning"], deleted["cms_over_alert"]),
        (0, 0)
    );
    assert_eq!(r.line("CONFIG SET lazyfree-lazy-user-del yes"), OK);
    assert_eq!(int(&run(&mut r, "UNLINK c")), 1);
    wait_lazyfree(&mut r);
    let unlinked = cms_info(&mut r);
    assert_eq!(unlinked["cms_sketches"], 2);
    assert_eq!(unlinked["cms_bytes"], 3200);
    assert_eq!(unlinked["cms_count"], 110);

    // FLUSHALL ASYNC and FLUSHALL empty the totals.
    put(&fb, &mut r, "c", &c);
    assert_eq!(r.line("FLUSHALL ASYNC"), OK);
    wait_lazyfree(&mut r);
    let flushed = cms_info(&mut r);
    assert_eq!(
        (
            flushed["cms_sketches"],
            flushed["cms_bytes"],
            flushed["cms_count"]
        ),
        (0, 0, 0)
    );
    put(&fb, &mut r, "a", &a);
    assert_eq!(cms_info(&mut r)["cms_over_alert"], 1);
    // SYNC: Valkey 8 and later flush in the background by default.
    assert_eq!(r.line("FLUSHALL SYNC"), OK);
    let flushed = cms_info(&mut r);
    assert_eq!(
        (
            flushed["cms_sketches"],
            flushed["cms_bytes"],
            flushed["cms_over_alert"]
        ),
        (0, 0, 0)
    );
    assert_eq!(info_field(&mut r, "bf", "bf_cms_max_fill_ratio"), "0");
}

fn max_fill(r: &mut RawClient) -> f64 {
    info_field(r, "bf", "bf_cms_max_fill_ratio")
        .parse()
        .unwrap()
}

fn counter(r: &mut RawClient, name: &str) -> u64 {
    info_u64(r, "bf", &format!("bf_cms_{name}"))
}

#[test]
fn info_follows_creation_increments_and_refusals() {
    let fb = Server::start(ferrobloom());
    let mut r = fb.raw();
    assert_eq!(r.line("CMS.INITBYDIM a 100 5 CELL_SIZE 1"), OK);
    assert_eq!(r.line("CMS.INITBYPROB b 0.01 0.01"), OK);
    let made = cms_info(&mut r);
    assert_eq!(made["cms_sketches"], 2);
    assert_eq!(made["cms_created"], 2);
    // 100·5 one-byte cells; ceil(2/0.01)·7 four-byte cells.
    assert_eq!(made["cms_bytes"], 500 + 200 * 7 * 4);
    assert_eq!(made["cms_count"], 0);

    // x alone in a: its cells hold exactly its count.
    let estimates = |r: &mut RawClient, line: &str| format!("{:?}", run(r, line));
    assert_eq!(estimates(&mut r, "CMS.INCRBY a x 200"), "Array([Int(200)])");
    assert_eq!(
        estimates(&mut r, "CMS.INCRBY b p 1000 q 24"),
        format!("{:?}", run(&mut r, "CMS.QUERY b p q"))
    );
    assert_eq!(counter(&mut r, "count"), 1224);
    assert_eq!(max_fill(&mut r), 200.0 / 255.0);
    assert_eq!(
        (
            counter(&mut r, "over_warning"),
            counter(&mut r, "over_alert")
        ),
        (1, 0)
    );
    // Refused pairs change nothing and are counted.
    let refused = run(&mut r, "CMS.INCRBY a x 56 x -201 x 30");
    assert_eq!(
        format!("{refused:?}"),
        "Array([Error(\"CMS: INCRBY overflow\"), Error(\"CMS: INCRBY underflow\"), Int(230)])"
    );
    assert_eq!(
        (counter(&mut r, "overflows"), counter(&mut r, "underflows")),
        (1, 1)
    );
    assert_eq!(counter(&mut r, "count"), 1254);
    assert_eq!(max_fill(&mut r), 230.0 / 255.0);
    assert_eq!(counter(&mut r, "over_alert"), 1);
    let stats = fields(decode(&r.line("CMS.STATS a")));
    assert_eq!(int(&stats["fullest_cell"]), 230);
    assert_eq!(simple(&stats["fill_level"]), "alert");

    // A decrement lowers N at once; the fill counts keep the fullest
    // cell they knew until the sketch is read whole again (here a
    // reload), while CMS.STATS reads the cells.
    assert_eq!(
        estimates(&mut r, "CMS.INCRBY a x -130"),
        "Array([Int(100)])"
    );
    assert_eq!(counter(&mut r, "count"), 1124);
    let stats = fields(decode(&r.line("CMS.STATS a")));
    assert_eq!(int(&stats["fullest_cell"]), 100);
    assert_eq!(simple(&stats["fill_level"]), "ok");
    assert_eq!(counter(&mut r, "over_alert"), 1);
    assert_eq!(r.line("DEBUG RELOAD"), OK);
    // Valkey 9 frees the old dataset in the background after a reload.
    wait_lazyfree(&mut r);
    assert_eq!(counter(&mut r, "over_warning"), 0);
    assert_eq!(max_fill(&mut r), 100.0 / 255.0);
    assert_eq!(counter(&mut r, "count"), 1124);
    assert_eq!(counter(&mut r, "loaded"), 2);

    // A merge counts the destination again: twice a's cells (x at 100).
    assert_eq!(r.line("CMS.INITBYDIM m 100 5 CELL_SIZE 1"), OK);
    assert_eq!(r.line("CMS.MERGE m 1 a WEIGHTS 2"), OK);
    assert_eq!(counter(&mut r, "merges"), 1);
    assert_eq!(counter(&mut r, "count"), 1124 + 200);
    assert_eq!(max_fill(&mut r), 200.0 / 255.0);
    assert_eq!(counter(&mut r, "over_warning"), 1);
    // One that would overflow a cell changes nothing and is not counted.
    assert!(run(&mut r, "CMS.MERGE m 2 m a WEIGHTS 1 1").is_error());
    assert_eq!(counter(&mut r, "merges"), 1);
    assert_eq!(counter(&mut r, "count"), 1324);
    // Into itself with a weight of 0: emptied, and counted exactly again.
    assert_eq!(r.line("CMS.MERGE m 1 m WEIGHTS 0"), OK);
    assert_eq!(counter(&mut r, "merges"), 2);
    assert_eq!(counter(&mut r, "count"), 1124);
    assert_eq!(counter(&mut r, "over_warning"), 0);
    assert_eq!(int(&fields(decode(&r.line("CMS.STATS m")))["count"]), 0);

    // A sketch deleted with items in it takes its N along.
    assert_eq!(int(&run(&mut r, "DEL b")), 1);
    assert_eq!(int(&run(&mut r, "DEL m")), 1);
    assert_eq!(counter(&mut r, "count"), 100);
    assert_eq!(counter(&mut r, "sketches"), 1);
    assert_eq!(counter(&mut r, "bytes"), 500);
    assert_eq!(counter(&mut r, "created"), 3);
}
