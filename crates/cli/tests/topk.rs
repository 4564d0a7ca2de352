//! The `ferrobloom` tool and Top-K sketches, against real servers
//! (FerroBloom, and RedisBloom 2.8.2 from scripts/oracle.sh): `plan
//! --topk` against independent arithmetic and the MEMORY USAGE both
//! modules report; `stats` of Top-K sketches on both modules; `migrate`
//! of Top-K sketches among filters both ways and through a cluster, and
//! the refusal of items with a NUL byte where the destination cuts them.

#[path = "../../../tests/common/mod.rs"]
mod common;
mod support;

use std::path::PathBuf;

use common::{ModuleKind, Server, ServerOpts};
use ferrobloom_core::topk::{dump, TopK};
use redis::{Connection, Value};
use serde_json::Value as Json;
use support::{
    assert_failed_saying, assert_migrate_refused_alone, assert_no_partial_copies,
    assert_spread_over_masters, assert_stderr_says, assert_succeeded_saying, cli, cli_json,
    cluster, cluster_conn, cluster_url, doubles_in_one_form, dump_value, ferrobloom, filter_entry,
    key_types, migrate, q, redisbloom, resp2_pairs, workdir,
};

// ---------------------------------------------------------------------------
// plan

fn plan_json(args: &[&str]) -> Json {
    cli_json(&[&["plan", "--json"][..], args].concat())
}

/// Each field of a TOPK.PLAN reply equals the tool's JSON field of that
/// name (doubles to the last bit, nil as null).
fn assert_same_as_topk_plan(j: &Json, reply: &Value, ctx: &str) {
    let fields = resp2_pairs(reply);
    assert_eq!(fields.len(), 14, "{ctx}: {reply:?}");
    for (name, value) in fields {
        let mine = &j[name.as_str()];
        match &value {
            Value::Int(n) => assert_eq!(mine, &Json::from(*n), "{ctx}: {name}"),
            Value::Nil => assert!(mine.is_null(), "{ctx}: {name} {mine}"),
            Value::SimpleString(s) => assert_eq!(mine, &Json::from(s.as_str()), "{ctx}: {name}"),
            Value::BulkString(b) => {
                let text = String::from_utf8_lossy(b);
                let x: f64 = text.parse().unwrap();
                assert_eq!(mine.as_f64(), Some(x), "{ctx}: {name} {text}");
            }
            other => panic!("{ctx}: {name} {other:?}"),
        }
    }
}

/// The JSON holds TOPK.PLAN's reply field for field (same core code), for
/// defaults, explicit dimensions, totals, item lengths and decay 1; MEMORY
/// USAGE worked out here (2088 + W·D·8 + k·24), and the bytes W·D·8 + k·24.
#[test]
fn plan_matches_topk_plan_and_arithmetic() {
    let fb = ferrobloom();
    let mut f = fb.conn();
    for (k, dims, total, item) in [
        (10u64, None, None, None),
        (10, None, Some(100_000u64), Some(16u64)),
        (100, Some((2000u64, 7u64, "0.9")), Some(1_000_000), None),
        (1, Some((1, 1, "0.5")), Some(10), Some(3)),
        (50, Some((1000, 3, "0.99")), Some(123_456_789), None),
        (7, Some((40, 5, "1")), Some(5000), None),
    ] {
        let mut args = vec!["--topk".to_string(), k.to_string()];
        let mut cmd = redis::cmd("TOPK.PLAN");
        cmd.arg(k);
        if let Some((w, d, decay)) = dims {
            args.extend(
                [
                    "--width",
                    &w.to_string(),
                    "--depth",
                    &d.to_string(),
                    "--decay",
                    decay,
                ]
                .map(String::from),
            );
            cmd.arg(w).arg(d).arg(decay);
        }
        if let Some(t) = total {
            args.extend(["--total".to_string(), t.to_string()]);
            cmd.arg("TOTAL").arg(t);
        }
        if let Some(i) = item {
            args.extend(["--item-bytes".to_string(), i.to_string()]);
            cmd.arg("ITEMLEN").arg(i);
        }
        let words: Vec<&str> = args.iter().map(String::as_str).collect();
        let j = plan_json(&words);
        let ctx = format!("{args:?}: {j}");
        let reply: Value = cmd.query(&mut f).unwrap();
        assert_same_as_topk_plan(&j, &reply, &ctx);
        let (w, d) = dims.map_or((8, 7), |(w, d, _)| (w, d));
        assert_eq!(j["type"], "topk", "{ctx}");
        assert_eq!(j["memory_usage"], 2088 + w * d * 8 + k * 24, "{ctx}");
        assert_eq!(j["bytes"], w * d * 8 + k * 24, "{ctx}");
        assert_eq!(j["min_reliable_count"].is_null(), total.is_none(), "{ctx}");
    }
    // The defaults, as text.
    let run = cli(&["plan", "--topk", "10", "--total", "1e5"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for words in [
        "Top-K: TOPK.RESERVE key 10: k 10, width 8, depth 7, decay 0.9",
        "MEMORY USAGE:   2,776 bytes",
        "smallest count tracked reliably in a stream of 100,000 counts: ",
    ] {
        assert!(run.stdout.contains(words), "{words}: {}", run.stdout);
    }
    // The per-value cap, and what TOPK.RESERVE refuses.
    let j = plan_json(&[
        "--topk",
        "5",
        "--width",
        "1000",
        "--depth",
        "10",
        "--max-filter-bytes",
        "50000",
    ]);
    assert_eq!(j["guard"], "bf.max-filter-bytes");
    assert!(j["warnings"][0]
        .as_str()
        .unwrap()
        .contains("over bf.max-filter-bytes"));
    for bad in [
        &["--topk", "0"][..],
        &["--topk", "4294967296"],
        &["--topk", "5", "--width", "4294967296", "--depth", "2"],
        &["--topk", "5", "--width", "40"],
        &["--topk", "5", "--decay", "0"],
        &["--topk", "5", "--decay", "1.01"],
        &[
            "--width",
            "5",
            "--depth",
            "5",
            "--capacity",
            "9",
            "--error",
            "0.1",
        ],
        &["--decay", "0.5", "--capacity", "9", "--error", "0.1"],
        &["--total", "5", "--capacity", "9", "--error", "0.1"],
    ] {
        let mut args = vec!["plan"];
        args.extend(bad);
        assert_eq!(cli(&args).code, 64, "{bad:?}");
    }
    let run = cli(&[
        "plan",
        "--topk",
        "1",
        "--width",
        "4294967295",
        "--depth",
        "4294967295",
    ]);
    assert_eq!(run.code, 64);
    assert_stderr_says(
        &run,
        "ERR Insufficient memory to create topk data structure",
    );
    let reply: redis::RedisResult<Value> = redis::cmd("TOPK.PLAN")
        .arg(1)
        .arg(4294967295u64)
        .arg(4294967295u64)
        .arg(0.9)
        .query(&mut f);
    assert!(reply.is_err(), "{reply:?}");
}

/// The plan's MEMORY USAGE is what both modules report for the value:
/// the server's MEMORY USAGE less its own overhead for the key, which each
/// server counts its way. Redis 7.x adds the key's dict entry (24 bytes)
/// and its string (8 for a two-letter name): 32. Valkey 8.1 and 9.1 keep
/// the key inside the value's object and add 24 or 40 bytes: a key keeps
/// its number, but which keys get 40 changes from run to run (with the
/// layout of its keyspace table, which is seeded at random), so there the
/// plan is checked to within that. The module's own number is checked
/// exactly on every run by FerroBloom on the oracle's Redis 7.0 too.
#[test]
fn plan_memory_is_what_both_modules_report() {
    let shapes = [("10", "8", "7"), ("100", "2000", "7"), ("3", "50", "2")];
    let planned: Vec<i64> = shapes
        .iter()
        .map(|(k, w, d)| {
            plan_json(&["--topk", k, "--width", w, "--depth", d, "--decay", "0.9"])["memory_usage"]
                .as_i64()
                .unwrap()
        })
        .collect();
    let oracle_server = std::env::var_os("REDISBLOOM_SERVER")
        .map_or_else(|| PathBuf::from("/usr/bin/redis-server"), PathBuf::from);
    let on_oracle_server =
        Server::start(ServerOpts::new(ModuleKind::FerroBloom).server_binary(oracle_server));
    for server in [redisbloom(), on_oracle_server, ferrobloom()] {
        let mut c = server.conn();
        let overhead: Vec<i64> = shapes
            .iter()
            .zip(&planned)
            .enumerate()
            .map(|(i, ((k, w, d), plan))| {
                let key = format!("m{i}");
                q::<()>(&mut c, &["TOPK.RESERVE", &key, k, w, d, "0.9"]);
                q::<i64>(&mut c, &["MEMORY", "USAGE", &key]) - plan
            })
            .collect();
        let v = server.version();
        if v.valkey {
            assert!(
                overhead.iter().all(|o| [24, 40].contains(o)),
                "{v:?}: {overhead:?}"
            );
        } else {
            assert_eq!(overhead, [32; 3], "{v:?}");
        }
    }
}

// ---------------------------------------------------------------------------
// stats

/// The same sketches on any server: decay 1 draws no coin, so both
/// modules hold the same state.
fn sketches(c: &mut Connection) {
    q::<()>(c, &["TOPK.RESERVE", "t:hot", "3", "50", "4", "1"]);
    let mut add = redis::cmd("TOPK.ADD");
    add.arg("t:hot");
    for i in 0..200 {
        add.arg(format!("item{}", i % 7 * (i % 3)));
    }
    let _: Value = add.query(c).unwrap();
    q::<()>(c, &["TOPK.RESERVE", "t:empty", "10"]);
    q::<i64>(c, &["BF.ADD", "t:bloom", "x"]);
}

fn list(c: &mut Connection, key: &str) -> Vec<(Vec<u8>, i64)> {
    let flat: Vec<Value> = q(c, &["TOPK.LIST", key, "WITHCOUNT"]);
    flat.chunks(2)
        .map(|p| match p {
            [Value::BulkString(item), Value::Int(n)] => (item.clone(), *n),
            [Value::Nil, Value::Int(n)] => (Vec::new(), *n),
            other => panic!("{other:?}"),
        })
        .collect()
}

#[test]
fn stats_lists_topk_on_both_modules() {
    let mut entries = Vec::new();
    for server in [redisbloom(), ferrobloom()] {
        let mut c = server.conn();
        sketches(&mut c);
        let url = server.url();
        let run = cli(&["stats", "--url", &url, "--pattern", "t:*", "--json"]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let j = run.json();
        assert_eq!(j["filters"].as_array().unwrap().len(), 3, "{j}");
        let hot = filter_entry(&j, "t:hot").clone();
        let listed = list(&mut c, "t:hot");
        assert_eq!(hot["type"], "topk");
        assert_eq!(hot["from"], "TOPK.INFO+DUMP");
        assert_eq!(
            (
                hot["k"].as_u64(),
                hot["width"].as_u64(),
                hot["depth"].as_u64()
            ),
            (Some(3), Some(50), Some(4))
        );
        assert_eq!(hot["decay"].as_f64(), Some(1.0));
        assert_eq!(hot["listed"], listed.len());
        assert_eq!(hot["top_count"], listed[0].1);
        assert_eq!(
            hot["entry_count"],
            listed.iter().map(|l| l.1).min().unwrap()
        );
        assert_eq!(hot["size"], 2088 + 50 * 4 * 8 + 3 * 24);
        assert_eq!(hot["level"], "ok");
        let empty = filter_entry(&j, "t:empty");
        assert_eq!(
            (empty["listed"].as_u64(), empty["width"].as_u64()),
            (Some(0), Some(8))
        );
        assert_eq!(filter_entry(&j, "t:bloom")["type"], "bloom");
        entries.push(hot);

        let run = cli(&["stats", "--url", &url, "--pattern", "t:*"]);
        assert_eq!(run.code, 0);
        for words in [
            " · 1 Bloom filter, 2 Top-K sketches · ",
            "TOP-K ",
            "Top-K: LISTED is",
        ] {
            assert!(run.stdout.contains(words), "{words}: {}", run.stdout);
        }
    }
    // Decoded locally, the same numbers from either module.
    assert_eq!(entries[0], entries[1]);
}

// ---------------------------------------------------------------------------
// migrate

/// Top-K sketches and a Bloom filter under `m:`: one with decay 0.9 and
/// colliding buckets, one with decay 1, an empty one.
fn mixed(c: &mut Connection) -> Vec<&'static str> {
    q::<()>(c, &["TOPK.RESERVE", "m:zipf", "10", "12", "3", "0.9"]);
    let mut add = redis::cmd("TOPK.ADD");
    add.arg("m:zipf");
    for i in 1..=3000u64 {
        // Roughly Zipf: item n about 1/n of the time.
        let n = (3000 / i).min(60);
        add.arg(format!("z{n}"));
    }
    let _: Value = add.query(c).unwrap();
    q::<()>(c, &["TOPK.RESERVE", "m:one", "4", "100", "5", "1"]);
    let _: Value = redis::cmd("TOPK.INCRBY")
        .arg("m:one")
        .arg("a")
        .arg(50)
        .arg("b")
        .arg(7)
        .arg("c")
        .arg(1)
        .query(c)
        .unwrap();
    q::<()>(c, &["TOPK.RESERVE", "m:empty", "5"]);
    q::<()>(c, &["BF.RESERVE", "m:bf", "0.01", "1000"]);
    q::<i64>(c, &["BF.ADD", "m:bf", "x"]);
    vec!["m:zipf", "m:one", "m:empty"]
}

/// A sketch's value decoded from its DUMP (the heap's pointer bytes,
/// a process address in 2.8.2's, are not part of it).
fn decoded(c: &mut Connection, key: &str) -> TopK {
    let p: Vec<u8> = q(c, &["DUMP", key]);
    dump::load_payload(&p).unwrap_or_else(|e| panic!("{key}: {e:?}"))
}

fn same_sketch(a: &mut Connection, b: &mut Connection, key: &str) {
    let (x, y) = (decoded(a, key), decoded(b, key));
    assert_eq!(x.params(), y.params(), "{key}");
    assert_eq!(x.bucket_bytes(), y.bucket_bytes(), "{key}");
    assert_eq!(x.heap(), y.heap(), "{key}");
    assert_eq!(list(a, key), list(b, key), "{key}");
    // The decay is a double: printed 0.90000000000000002 by Redis 7.0 (the
    // oracle's server), 0.9 by 7.2+ and Valkey.
    let info = |c: &mut Connection| doubles_in_one_form(q(c, &["TOPK.INFO", key]));
    assert_eq!(info(a), info(b), "{key}");
}

#[test]
fn migrate_topk_both_ways_among_filters() {
    let rb = redisbloom();
    let fb = ferrobloom();
    let back = redisbloom();
    let mut r = rb.conn();
    let keys = mixed(&mut r);
    let dir = workdir("topk-both-ways");

    let run = migrate(&dir, &rb.url(), &fb.url(), &["--pattern", "m:*"]);
    assert_succeeded_saying(&run, "copied and verified 1 filter and 3 Top-K sketches (");
    assert!(
        run.stdout.contains("bytes of bit arrays and buckets)"),
        "{}",
        run.stdout
    );
    let line = run
        .stdout
        .lines()
        .find(|l| l.starts_with("m:zipf -> m:zipf: Top-K sketch k 10, 12x3, decay 0.9"))
        .unwrap_or_else(|| panic!("{}", run.stdout));
    assert!(
        line.contains("TOPK.INFO and TOPK.LIST WITHCOUNT equal"),
        "{line}"
    );
    let mut f = fb.conn();
    for k in &keys {
        same_sketch(&mut r, &mut f, k);
    }
    // FerroBloom writes the heap's pointer bytes as zeros.
    let p: Vec<u8> = q(&mut f, &["DUMP", "m:zipf"]);
    let again: Vec<u8> = q(&mut f, &["DUMP", "m:zipf"]);
    assert_eq!(p, again);

    // And back to another RedisBloom 2.8.2.
    let run = migrate(&dir, &fb.url(), &back.url(), &["--pattern", "m:*"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mut b = back.conn();
    for k in &keys {
        same_sketch(&mut r, &mut b, k);
    }
    // The copies count on as the originals do (decay 1: no coin).
    for c in [&mut r, &mut b, &mut f] {
        let _: Value = redis::cmd("TOPK.ADD")
            .arg("m:one")
            .arg(&["d", "d", "b", "e"])
            .query(c)
            .unwrap();
    }
    assert_eq!(list(&mut r, "m:one"), list(&mut b, "m:one"));
    assert_eq!(list(&mut r, "m:one"), list(&mut f, "m:one"));

    // An existing sketch is refused without --force, replaced with it.
    let run = migrate(&dir, &rb.url(), &back.url(), &["--key", "m:one"]);
    assert_eq!(run.code, 3);
    assert_stderr_says(&run, "already has this key: m:one");
    let _: Value = redis::cmd("TOPK.INCRBY")
        .arg("m:one")
        .arg("z")
        .arg(500)
        .query(&mut r)
        .unwrap();
    let run = migrate(&dir, &rb.url(), &back.url(), &["--key", "m:one", "--force"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    same_sketch(&mut r, &mut b, "m:one");
    assert_eq!(list(&mut b, "m:one")[0], (b"z".to_vec(), 500));
}

/// A Top-K holding an item with a NUL byte cannot go to RedisBloom 2.8.2
/// (it cuts the item): it is refused before anything is copied, with the
/// reason, while the rest is copied; between FerroBloom servers it is
/// copied whole.
#[test]
fn migrate_refuses_nul_items_to_redisbloom() {
    let src = ferrobloom();
    let rb = redisbloom();
    let other = ferrobloom();
    let mut s = src.conn();
    q::<()>(&mut s, &["TOPK.RESERVE", "n:nul", "3", "20", "3", "1"]);
    let _: Value = redis::cmd("TOPK.ADD")
        .arg("n:nul")
        .arg(&[&b"a\0b"[..], b"a\0b", b"plain"])
        .query(&mut s)
        .unwrap();
    q::<()>(&mut s, &["TOPK.RESERVE", "n:plain", "3", "20", "3", "1"]);
    let _: Value = redis::cmd("TOPK.ADD")
        .arg("n:plain")
        .arg(&["a", "b", "a"])
        .query(&mut s)
        .unwrap();
    q::<()>(&mut s, &["BF.RESERVE", "n:bf", "0.01", "100"]);
    let dir = workdir("topk-nul");

    let run = migrate(&dir, &src.url(), &rb.url(), &["--pattern", "n:*"]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    let line = run
        .stderr
        .lines()
        .find(|l| l.starts_with("ferrobloom: n:nul: "))
        .unwrap_or_else(|| panic!("{}", run.stderr));
    for words in [
        "a Top-K sketch with an item holding a NUL byte (a\\x00b)",
        "it cuts items at the first NUL",
        "lists \"a\" there",
        "copy it to a FerroBloom server",
    ] {
        assert!(line.contains(words), "{words}: {line}");
    }
    assert_stderr_says(&run, "1 filter was not copied (2 copied and verified)");
    let mut r = rb.conn();
    let kinds = key_types(&mut r, &["n:nul", "n:plain", "n:bf"]);
    assert_eq!(kinds, ["none", "TopK-TYPE", "MBbloom--"]);
    assert_no_partial_copies(&mut r);
    same_sketch(&mut s, &mut r, "n:plain");

    // Alone, it is refused with nothing written.
    assert_migrate_refused_alone(
        &dir,
        &src.url(),
        &rb,
        &["--key", "n:nul", "--rename", "n:x"],
        &[],
    );

    // Between FerroBloom servers the item goes whole.
    let run = migrate(&dir, &src.url(), &other.url(), &["--pattern", "n:*"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mut o = other.conn();
    same_sketch(&mut s, &mut o, "n:nul");
    assert_eq!(list(&mut o, "n:nul")[0], (b"a\0b".to_vec(), 2));
}

/// Top-K sketches into a three-master FerroBloom cluster (the probe runs
/// in the slot of the key it answers for) and back out to RedisBloom;
/// `stats` finds them on every master.
#[test]
fn migrate_and_stats_of_topk_with_a_cluster() {
    let nodes = cluster();
    let seed = cluster_url(&nodes);
    let src = ferrobloom();
    let mut c = src.conn();
    let mut keys = Vec::new();
    for i in 0..6 {
        let key = format!("k:{i}");
        q::<()>(&mut c, &["TOPK.RESERVE", &key, "3", "30", "3", "0.9"]);
        let item = if i == 5 {
            b"nul\0item".to_vec()
        } else {
            format!("i{i}").into_bytes()
        };
        let _: Value = redis::cmd("TOPK.INCRBY")
            .arg(&key)
            .arg(&item[..])
            .arg(i + 1)
            .query(&mut c)
            .unwrap();
        keys.push(key);
    }
    let dir = workdir("topk-cluster");
    let run = migrate(&dir, &src.url(), &seed, &["--pattern", "k:*"]);
    assert_succeeded_saying(&run, "copied and verified 6 Top-K sketches (");
    assert_spread_over_masters(&nodes, 6);
    let mut cc = cluster_conn(&nodes);
    for key in &keys {
        assert_eq!(dump_value(&mut c, key), dump_value(&mut cc, key), "{key}");
    }
    let j = cli_json(&["stats", "--url", &seed, "--json"]);
    assert_eq!(j["summary"]["filters"], 6, "{j}");
    assert_eq!(filter_entry(&j, "k:4")["top_count"], 5);

    // Out of the cluster to RedisBloom: all but the one with a NUL.
    let rb = redisbloom();
    let run = migrate(&dir, &seed, &rb.url(), &["--pattern", "k:*"]);
    assert_failed_saying(
        &run,
        3,
        "1 filter was not copied (5 copied and verified): k:5",
    );
    let mut r = rb.conn();
    for (i, key) in keys.iter().enumerate() {
        let kind: String = q(&mut r, &["TYPE", key]);
        assert_eq!(kind, if i < 5 { "TopK-TYPE" } else { "none" }, "{key}");
    }
}
