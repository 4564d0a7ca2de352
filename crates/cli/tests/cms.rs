//! The `ferrobloom` tool and Count-Min sketches, against real servers
//! (FerroBloom, and RedisBloom 2.8.2 from scripts/oracle.sh): `plan --cms`
//! against independent arithmetic, CMS.PLAN and 2.8.2's own dimensions;
//! `stats` of sketches on both modules; `migrate` of sketches among Bloom
//! and Cuckoo filters both ways, and the refusal of cell sizes 2.8.2
//! cannot load.

#[path = "../../../tests/common/mod.rs"]
mod common;
mod support;

use ferrobloom_core::cms::{dump, CellSize, CountMinSketch};
use ferrobloom_core::dump_format::RDB_VERSION_7_0;
use ferrobloom_core::Unguarded;
use redis::{Connection, Value};
use serde_json::Value as Json;
use support::{
    assert_failed_saying, assert_migrate_refused_alone, assert_no_partial_copies,
    assert_spread_over_masters, assert_stderr_says, assert_succeeded_saying, cli, cli_json,
    cluster, cluster_conn, cluster_url, dump_value, ferrobloom, filter_entry, key_types, migrate,
    q, redisbloom, resp2_pairs, workdir,
};

// ---------------------------------------------------------------------------
// plan

fn plan_json(args: &[&str]) -> Json {
    cli_json(&[&["plan", "--cms", "--json"][..], args].concat())
}

/// The numbers worked out here, not by the core: width ceil(2/error),
/// depth ceil(log2(1/p)), the bound 2N/width with probability 1 − 2^−depth,
/// bytes width·depth·n, MEMORY USAGE 8 + width·depth·8 for 4-byte cells,
/// the smallest n whose largest count 2^(8n) − 1 (2^63 − 1 for 8) is at
/// least N.
#[test]
fn plan_numbers_from_independent_arithmetic() {
    for (error, probability, total, width, depth, smallest) in [
        ("0.001", "0.01", 1_000_000u64, 2000u64, 7u64, Some(4u64)),
        ("0.01", "0.001", 60_000, 200, 10, Some(2)),
        ("0.1", "0.5", 255, 20, 1, Some(1)),
        ("0.1", "0.5", 256, 20, 1, Some(2)),
        ("0.3", "0.25", 1 << 32, 7, 2, Some(8)),
        ("0.3", "0.25", 1 << 63, 7, 2, None),
    ] {
        let total_text = total.to_string();
        let j = plan_json(&[
            "--error",
            error,
            "--probability",
            probability,
            "--total",
            &total_text,
        ]);
        let ctx = format!("{error} {probability} {total}: {j}");
        assert_eq!(j["width"], width, "{ctx}");
        assert_eq!(j["depth"], depth, "{ctx}");
        assert_eq!(j["total"], total, "{ctx}");
        let bound = 2.0 * total as f64 / width as f64;
        assert_eq!(j["error_bound"].as_f64(), Some(bound), "{ctx}");
        let confidence = 1.0 - 1.0 / (1u64 << depth) as f64;
        assert_eq!(j["confidence"].as_f64(), Some(confidence), "{ctx}");
        let sizes = j["cell_sizes"].as_array().unwrap();
        for (c, n) in sizes.iter().zip([1u64, 2, 4, 8]) {
            assert_eq!(c["cell_size"], n, "{ctx}");
            assert_eq!(c["bytes"], width * depth * n, "{ctx}");
            let max = if n == 8 {
                i64::MAX as u64
            } else {
                (1u64 << (8 * n)) - 1
            };
            assert_eq!(c["max_count"], max, "{ctx}");
            assert_eq!(c["holds_total"], max >= total, "{ctx}");
        }
        assert_eq!(sizes[2]["memory_usage"], 8 + width * depth * 8, "{ctx}");
        assert_eq!(j["smallest_cell_size"].as_u64(), smallest, "{ctx}");
        match smallest {
            Some(n) => assert_eq!(
                j["command"],
                format!("CMS.INITBYPROB key {error} {probability} CELL_SIZE {n}"),
                "{ctx}"
            ),
            None => {
                assert!(j["command"].is_null(), "{ctx}");
                assert!(j["warnings"][0]
                    .as_str()
                    .unwrap()
                    .contains("no cell size holds"));
            }
        }
    }
    // By dimensions, and as text.
    let j = plan_json(&["--width", "1000", "--depth", "5", "--total", "1e4"]);
    assert_eq!(j["error_bound"].as_f64(), Some(20.0));
    assert_eq!(j["command"], "CMS.INITBYDIM key 1000 5 CELL_SIZE 2");
    let run = cli(&[
        "plan",
        "--cms",
        "--error",
        "0.001",
        "--probability",
        "0.01",
        "--total",
        "1,000,000",
    ]);
    assert_eq!(run.code, 0);
    for words in [
        "width 2,000, depth 7, planned for a total count of 1,000,000",
        "at most 1,000 (2 × 1,000,000 / 2,000",
        "except with probability 0.781% (2^-7)",
        "create: CMS.INITBYPROB key 0.001 0.01 CELL_SIZE 4",
        "no CELL_SIZE: CMS.INITBYPROB key 0.001 0.01",
    ] {
        assert!(run.stdout.contains(words), "{words}: {}", run.stdout);
    }
}

/// The dimensions are those RedisBloom 2.8.2 creates, and the JSON holds
/// CMS.PLAN's reply field for field.
#[test]
fn plan_matches_redisbloom_and_cms_plan() {
    let rb = redisbloom();
    let fb = ferrobloom();
    let (mut r, mut f) = (rb.conn(), fb.conn());
    for (i, (error, probability)) in [
        ("0.001", "0.01"),
        ("0.01", "0.1"),
        ("0.3", "1e-9"),
        ("0.0001", "0.001"),
        ("0.5", "0.99"),
    ]
    .into_iter()
    .enumerate()
    {
        let key = format!("p{i}");
        q::<()>(&mut r, &["CMS.INITBYPROB", &key, error, probability]);
        let info: Vec<Value> = q(&mut r, &["CMS.INFO", &key]);
        let j = plan_json(&[
            "--error",
            error,
            "--probability",
            probability,
            "--total",
            "123456",
        ]);
        let num = |v: &Value| match v {
            Value::Int(n) => *n as u64,
            other => panic!("{other:?}"),
        };
        assert_eq!(j["width"], num(&info[1]), "{error} {probability}");
        assert_eq!(j["depth"], num(&info[3]), "{error} {probability}");

        let reply: Value = redis::cmd("CMS.PLAN")
            .arg("BYPROB")
            .arg(error)
            .arg(probability)
            .arg("TOTAL")
            .arg(123456)
            .query(&mut f)
            .unwrap();
        assert_same_as_server(&j, &reply, &format!("{error} {probability}"));
    }
    let j = plan_json(&["--width", "77", "--depth", "3", "--total", "70000"]);
    let reply: Value = redis::cmd("CMS.PLAN")
        .arg("BYDIM")
        .arg(77)
        .arg(3)
        .arg("TOTAL")
        .arg(70000)
        .query(&mut f)
        .unwrap();
    assert_same_as_server(&j, &reply, "BYDIM 77 3");
    // The dimensions CMS.INITBYDIM refuses are usage errors.
    let run = cli(&[
        "plan",
        "--cms",
        "--width",
        "8589934592",
        "--depth",
        "8589934592",
        "--total",
        "1",
    ]);
    assert_eq!(run.code, 64, "{}", run.stderr);
    assert!(run.stderr.contains("CMS: invalid init arguments"));
    for bad in [
        &["--error", "0.01", "--total", "5"][..],
        &["--error", "0.01", "--probability", "0.1"],
        &["--error", "0.01", "--probability", "1.5", "--total", "5"],
        &["--width", "5", "--depth", "0", "--total", "5"],
        &[
            "--width", "5", "--depth", "2", "--error", "0.1", "--total", "5",
        ],
        &[
            "--width",
            "5",
            "--depth",
            "2",
            "--total",
            "5",
            "--capacity",
            "9",
        ],
    ] {
        let mut args = vec!["plan", "--cms"];
        args.extend(bad);
        assert_eq!(cli(&args).code, 64, "{bad:?}");
    }
}

/// Each field of a CMS.PLAN reply equals the tool's JSON field of that
/// name (1 and 0 for its booleans; doubles to the last bit).
fn assert_same_as_server(j: &Json, reply: &Value, ctx: &str) {
    for (name, value) in resp2_pairs(reply) {
        let mine = &j[name.as_str()];
        match (&value, name.as_str()) {
            (Value::Array(sizes), "cell_sizes") => {
                for (k, size) in sizes.iter().enumerate() {
                    for (field, v) in resp2_pairs(size) {
                        let m = &mine[k][field.as_str()];
                        let expected = match v {
                            Value::Int(n) if field == "holds_total" => Json::from(n == 1),
                            Value::Int(n) => Json::from(n),
                            Value::SimpleString(s) => Json::from(s),
                            Value::BulkString(b) => Json::from(String::from_utf8(b).unwrap()),
                            other => panic!("{other:?}"),
                        };
                        assert_eq!(m, &expected, "{ctx}: cell_sizes[{k}].{field}");
                    }
                }
            }
            (Value::Int(n), _) => assert_eq!(mine, &Json::from(*n), "{ctx}: {name}"),
            (Value::Nil, _) => assert!(mine.is_null(), "{ctx}: {name}"),
            (Value::BulkString(b), _) => {
                let text = String::from_utf8_lossy(b);
                let x: f64 = text.parse().unwrap();
                assert_eq!(mine.as_f64(), Some(x), "{ctx}: {name} {text}");
            }
            (other, _) => panic!("{ctx}: {name} {other:?}"),
        }
    }
}

// ---------------------------------------------------------------------------
// stats

/// The payload of a sketch built here, with `size` cells and `items`
/// added (RESTOREs into FerroBloom).
fn payload(width: u64, depth: u64, size: CellSize, items: &[(&str, i64)]) -> Vec<u8> {
    let mut s = CountMinSketch::new(width, depth, size, &Unguarded).unwrap();
    for (item, n) in items {
        s.incrby(item.as_bytes(), *n).unwrap();
    }
    dump::dump_payload(&s, RDB_VERSION_7_0)
}

fn restore(c: &mut Connection, key: &str, payload: &[u8]) {
    let _: () = redis::cmd("RESTORE")
        .arg(key)
        .arg(0)
        .arg(payload)
        .query(c)
        .unwrap();
}

/// Sketches of known content: `s:ok` (1000 × 1: its fullest cell is the
/// larger of its two items' estimates), `s:hot` (one cell at 4e9, past
/// the alert threshold), `s:empty`; and a Bloom filter beside them.
fn sketches(c: &mut Connection) {
    q::<()>(c, &["CMS.INITBYDIM", "s:ok", "1000", "1"]);
    q::<Vec<i64>>(c, &["CMS.INCRBY", "s:ok", "foo", "10", "bar", "990"]);
    q::<()>(c, &["CMS.INITBYPROB", "s:hot", "0.01", "0.01"]);
    q::<Vec<i64>>(c, &["CMS.INCRBY", "s:hot", "x", "4000000000"]);
    q::<()>(c, &["CMS.INITBYDIM", "s:empty", "10", "2"]);
    q::<()>(c, &["BF.RESERVE", "s:bloom", "0.01", "100"]);
}

#[test]
fn stats_lists_sketches_on_both_modules() {
    for (server, from) in [(redisbloom(), "CMS.INFO+DUMP"), (ferrobloom(), "CMS.STATS")] {
        let mut c = server.conn();
        sketches(&mut c);
        let url = server.url();
        let run = cli(&["stats", "--url", &url, "--pattern", "s:*", "--json"]);
        assert_eq!(run.code, 2, "{}", run.stderr);
        let j = run.json();
        assert_eq!(j["filters"].as_array().unwrap().len(), 4, "{j}");

        let ok = filter_entry(&j, "s:ok");
        let est: Vec<u64> = q(&mut c, &["CMS.QUERY", "s:ok", "foo", "bar"]);
        let fullest = est[0].max(est[1]);
        assert_eq!(ok["type"], "cms");
        assert_eq!(ok["from"], from, "{ok}");
        assert_eq!(ok["count"], 1000);
        assert_eq!(ok["width"], 1000);
        assert_eq!(ok["depth"], 1);
        assert_eq!(ok["cell_size"], 4);
        assert_eq!(ok["cell_max"], 4294967295u64);
        assert_eq!(ok["fullest_cell"], fullest);
        assert_eq!(
            ok["fill_ratio"].as_f64(),
            Some(fullest as f64 / 4294967295.0)
        );
        assert_eq!(ok["error_bound"].as_f64(), Some(2.0));
        assert_eq!(ok["confidence"].as_f64(), Some(0.5));
        assert_eq!(ok["count_headroom"], i64::MAX as u64 - 1000);
        assert_eq!(ok["bytes"], 4000);
        assert_eq!(ok["size"], 8 + 1000 * 8);
        assert_eq!(ok["level"], "ok");

        let hot = filter_entry(&j, "s:hot");
        assert_eq!(
            (hot["width"].as_u64(), hot["depth"].as_u64()),
            (Some(200), Some(7))
        );
        assert_eq!(hot["fullest_cell"], 4_000_000_000u64);
        assert_eq!(hot["error_bound"].as_f64(), Some(2.0 * 4e9 / 200.0));
        assert_eq!(hot["level"], "alert", "{hot}");
        let empty = filter_entry(&j, "s:empty");
        assert_eq!(
            (empty["count"].as_u64(), empty["fill_ratio"].as_f64()),
            (Some(0), Some(0.0))
        );
        assert_eq!(filter_entry(&j, "s:bloom")["type"], "bloom");

        // The text: sketches in their own table, counted apart.
        let run = cli(&["stats", "--url", &url, "--pattern", "s:*"]);
        assert_eq!(run.code, 2);
        for words in [
            " · 1 Bloom filter, 3 Count-Min sketches · ",
            "SKETCH ",
            "ERROR BOUND",
            "sketches: COUNT is N",
        ] {
            assert!(run.stdout.contains(words), "{words}: {}", run.stdout);
        }
        let hot_line = run
            .stdout
            .lines()
            .find(|l| l.starts_with("s:hot "))
            .unwrap();
        assert!(hot_line.ends_with("ALERT"), "{hot_line}");
        assert!(hot_line.contains("93.1%"), "{hot_line}");
        assert_eq!(
            run.stdout
                .contains("* read from CMS.INFO and the key's DUMP"),
            from == "CMS.INFO+DUMP",
            "{}",
            run.stdout
        );
    }
}

/// Sketches of the other cell sizes (FerroBloom only) are measured against
/// their own maximum, from CMS.STATS and from the DUMP alike.
#[test]
fn stats_of_other_cell_sizes() {
    let server = ferrobloom();
    let mut c = server.conn();
    restore(&mut c, "one", &payload(50, 2, CellSize::One, &[("a", 200)]));
    restore(&mut c, "two", &payload(50, 2, CellSize::Two, &[("a", 200)]));
    let (code, j) = {
        let run = cli(&["stats", "--url", &server.url(), "--json"]);
        (run.code, run.json())
    };
    assert_eq!(code, 1, "{j}");
    let one = filter_entry(&j, "one");
    assert_eq!(
        (one["cell_size"].as_u64(), one["cell_max"].as_u64()),
        (Some(1), Some(255))
    );
    assert_eq!(one["fill_ratio"].as_f64(), Some(200.0 / 255.0));
    assert_eq!(one["level"], "warning");
    let two = filter_entry(&j, "two");
    assert_eq!(two["fill_ratio"].as_f64(), Some(200.0 / 65535.0));
    assert_eq!(two["level"], "ok");
    assert_eq!(two["bytes"], 200);
    // 200 / 255 is past the warning threshold; a lower alert threshold
    // from the command line makes it an alert.
    let run = cli(&[
        "stats",
        "--url",
        &server.url(),
        "--alert",
        "0.78",
        "--warning",
        "0.5",
    ]);
    assert_eq!(run.code, 2, "{}", run.stdout);
}

// ---------------------------------------------------------------------------
// migrate

/// Sketches and filters under `m:`: a sketch with increments, an empty
/// one, one with a cell one below 2^32 − 1, a Bloom filter and a Cuckoo
/// filter.
fn mixed(c: &mut Connection) -> Vec<&'static str> {
    q::<()>(c, &["CMS.INITBYPROB", "m:cms", "0.001", "0.01"]);
    let items: Vec<String> = (0..500).map(|i| format!("i{i}")).collect();
    let mut incr = redis::cmd("CMS.INCRBY");
    incr.arg("m:cms");
    for (i, item) in items.iter().enumerate() {
        incr.arg(item).arg(i + 1);
    }
    let _: Value = incr.query(c).unwrap();
    q::<()>(c, &["CMS.INITBYDIM", "m:cms-empty", "7", "3"]);
    q::<()>(c, &["CMS.INITBYDIM", "m:cms-full", "5", "2"]);
    let _: Value = redis::cmd("CMS.INCRBY")
        .arg("m:cms-full")
        .arg("a")
        .arg(4294967294u64)
        .query(c)
        .unwrap();
    q::<()>(c, &["BF.RESERVE", "m:bf", "0.01", "1000"]);
    q::<i64>(c, &["BF.ADD", "m:bf", "x"]);
    q::<()>(c, &["CF.RESERVE", "m:cf", "1000"]);
    q::<i64>(c, &["CF.ADD", "m:cf", "y"]);
    vec!["m:cms", "m:cms-empty", "m:cms-full"]
}

fn sketch_state(c: &mut Connection, key: &str) -> (Value, Vec<u64>) {
    let info: Value = q(c, &["CMS.INFO", key]);
    let info = match info {
        // FerroBloom adds 8.12's cell_size pair: compare 2.8.2's three.
        Value::Array(mut a) => {
            a.truncate(6);
            Value::Array(a)
        }
        other => other,
    };
    let est: Vec<u64> = q(c, &["CMS.QUERY", key, "i0", "i7", "i499", "a", "nope"]);
    (info, est)
}

/// `keys` hold the same bytes (DUMP) and answer alike on both servers.
#[track_caller]
fn assert_same_sketches(a: &mut Connection, b: &mut Connection, keys: &[&str]) {
    for k in keys {
        assert_eq!(dump_value(a, k), dump_value(b, k), "{k}: DUMP bytes");
        assert_eq!(sketch_state(a, k), sketch_state(b, k), "{k}");
    }
}

#[test]
fn migrate_sketches_both_ways_among_filters() {
    let rb = redisbloom();
    let fb = ferrobloom();
    let back = redisbloom();
    let mut r = rb.conn();
    let keys = mixed(&mut r);
    let dir = workdir("cms-both-ways");

    let run = migrate(&dir, &rb.url(), &fb.url(), &["--pattern", "m:*"]);
    assert_succeeded_saying(
        &run,
        "copied and verified 2 filters and 3 Count-Min sketches (",
    );
    assert!(!run.stderr.contains("skipped"), "{}", run.stderr);
    let line = run
        .stdout
        .lines()
        .find(|l| l.starts_with("m:cms -> m:cms: Count-Min sketch 2000x7, 4-byte cells"))
        .unwrap_or_else(|| panic!("{}", run.stdout));
    assert!(line.contains("CMS.INFO and CMS.QUERY equal"), "{line}");
    let mut f = fb.conn();
    assert_same_sketches(&mut r, &mut f, &keys);
    let kind: String = q(&mut f, &["TYPE", "m:cf"]);
    assert_eq!(kind, "MBbloomCF");

    // And back to another RedisBloom 2.8.2, byte for byte.
    let run = migrate(&dir, &fb.url(), &back.url(), &["--pattern", "m:*"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mut b = back.conn();
    assert_same_sketches(&mut r, &mut b, &keys);
    // The copies count on as the originals do.
    for c in [&mut r, &mut b] {
        q::<Vec<i64>>(c, &["CMS.INCRBY", "m:cms", "i7", "5", "new", "3"]);
    }
    assert_eq!(sketch_state(&mut r, "m:cms"), sketch_state(&mut b, "m:cms"));

    // An existing sketch is refused without --force, replaced with it.
    let run = migrate(&dir, &rb.url(), &back.url(), &["--key", "m:cms"]);
    assert_eq!(run.code, 3);
    assert_stderr_says(&run, "already has this key: m:cms");
    q::<Vec<i64>>(&mut r, &["CMS.INCRBY", "m:cms", "i0", "1000"]);
    let run = migrate(&dir, &rb.url(), &back.url(), &["--key", "m:cms", "--force"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(sketch_state(&mut r, "m:cms"), sketch_state(&mut b, "m:cms"));
}

/// A sketch with 1-, 2- or 8-byte cells cannot go to RedisBloom 2.8.2: it
/// is refused before anything is copied, with the reason, while the rest
/// is copied; between FerroBloom servers it is copied.
#[test]
fn migrate_refuses_other_cell_sizes_to_redisbloom() {
    let src = ferrobloom();
    let rb = redisbloom();
    let other = ferrobloom();
    let mut s = src.conn();
    restore(&mut s, "c:one", &payload(40, 3, CellSize::One, &[("a", 9)]));
    restore(
        &mut s,
        "c:eight",
        &payload(40, 3, CellSize::Eight, &[("a", 1 << 40)]),
    );
    q::<()>(&mut s, &["CMS.INITBYDIM", "c:four", "40", "3"]);
    q::<Vec<i64>>(&mut s, &["CMS.INCRBY", "c:four", "a", "9"]);
    q::<()>(&mut s, &["BF.RESERVE", "c:bf", "0.01", "100"]);
    let dir = workdir("cms-cell-sizes");

    let run = migrate(&dir, &src.url(), &rb.url(), &["--pattern", "c:*"]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    for (key, n) in [("c:one", 1), ("c:eight", 8)] {
        let line = run
            .stderr
            .lines()
            .find(|l| l.starts_with(&format!("ferrobloom: {key}: ")))
            .unwrap_or_else(|| panic!("{key}: {}", run.stderr));
        assert!(
            line.contains(&format!("a sketch with {n}-byte cells (CELL_SIZE {n})")),
            "{line}"
        );
        assert!(line.contains("copy it to a FerroBloom server"), "{line}");
    }
    assert_stderr_says(&run, "2 filters were not copied (2 copied and verified)");
    let mut r = rb.conn();
    let kinds = key_types(&mut r, &["c:one", "c:eight", "c:four", "c:bf"]);
    assert_eq!(kinds, ["none", "none", "CMSk-TYPE", "MBbloom--"]);
    assert_no_partial_copies(&mut r);
    assert_eq!(dump_value(&mut s, "c:four"), dump_value(&mut r, "c:four"));

    // Alone, it is refused with nothing written.
    assert_migrate_refused_alone(
        &dir,
        &src.url(),
        &rb,
        &["--key", "c:one", "--rename", "c:x"],
        &["c:one: a sketch with 1-byte cells"],
    );

    // Between FerroBloom servers every cell size goes.
    let run = migrate(&dir, &src.url(), &other.url(), &["--pattern", "c:*"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run
        .stdout
        .contains("c:one -> c:one: Count-Min sketch 40x3, 1-byte cells"));
    let mut o = other.conn();
    for k in ["c:one", "c:eight", "c:four"] {
        assert_eq!(dump_value(&mut s, k), dump_value(&mut o, k), "{k}");
        let est: Vec<u64> = q(&mut o, &["CMS.QUERY", k, "a"]);
        let want: Vec<u64> = q(&mut s, &["CMS.QUERY", k, "a"]);
        assert_eq!(est, want, "{k}");
    }
    let info: Vec<Value> = q(&mut o, &["CMS.INFO", "c:eight"]);
    assert_eq!(info[7], Value::Int(8));
}

/// Sketches into a three-master FerroBloom cluster and back out: each
/// lands on its slot's master (the probe for other cell sizes too), and
/// `stats` finds them on every master.
#[test]
fn migrate_and_stats_of_sketches_with_a_cluster() {
    let nodes = cluster();
    let seed = cluster_url(&nodes);
    let src = ferrobloom();
    let mut c = src.conn();
    let mut keys = Vec::new();
    for i in 0..8 {
        let key = format!("k:{i}");
        if i % 2 == 0 {
            q::<()>(&mut c, &["CMS.INITBYDIM", &key, "64", "4"]);
            q::<Vec<i64>>(
                &mut c,
                &["CMS.INCRBY", &key, "a", &(i * 10 + 1).to_string()],
            );
        } else {
            restore(
                &mut c,
                &key,
                &payload(64, 4, CellSize::Two, &[("a", i * 10 + 1)]),
            );
        }
        keys.push(key);
    }
    let dir = workdir("cms-cluster");
    let run = migrate(&dir, &src.url(), &seed, &["--pattern", "k:*"]);
    assert_succeeded_saying(&run, "copied and verified 8 Count-Min sketches (");
    assert_spread_over_masters(&nodes, 8);
    let mut cc = cluster_conn(&nodes);
    for key in &keys {
        assert_eq!(dump_value(&mut c, key), dump_value(&mut cc, key), "{key}");
    }
    let j = cli_json(&["stats", "--url", &seed, "--json"]);
    assert_eq!(j["summary"]["filters"], 8, "{j}");
    let two = filter_entry(&j, "k:7");
    assert_eq!(
        (two["cell_size"].as_u64(), two["count"].as_u64()),
        (Some(2), Some(71))
    );
    assert_eq!(two["from"], "CMS.STATS");

    // Out of the cluster to RedisBloom: the 4-byte ones only.
    let rb = redisbloom();
    let run = migrate(&dir, &seed, &rb.url(), &["--pattern", "k:*"]);
    assert_failed_saying(&run, 3, "4 filters were not copied (4 copied and verified)");
    let mut r = rb.conn();
    for (i, key) in keys.iter().enumerate() {
        let kind: String = q(&mut r, &["TYPE", key]);
        assert_eq!(kind, if i % 2 == 0 { "CMSk-TYPE" } else { "none" }, "{key}");
    }
}
