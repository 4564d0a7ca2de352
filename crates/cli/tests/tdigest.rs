//! The `ferrobloom` tool and t-digests, against real servers (FerroBloom,
//! and RedisBloom 2.8.2 from scripts/oracle.sh): `plan --tdigest` against
//! independent arithmetic and TDIGEST.INFO on both modules; `stats` of
//! t-digests on both modules; `migrate` of t-digests among filters both
//! ways and through a cluster, verified by what both servers answer.

#[path = "../../../tests/common/mod.rs"]
mod common;
mod support;

use common::double_in_one_form;
use redis::{Connection, Value};
use serde_json::Value as Json;
use support::{
    assert_spread_over_masters, assert_stderr_says, assert_succeeded_saying, cli, cli_json,
    cluster, cluster_conn, cluster_url, ferrobloom, filter_entry, migrate, q, redisbloom, workdir,
};

// ---------------------------------------------------------------------------
// plan

fn plan_json(args: &[&str]) -> Json {
    cli_json(&[&["plan", "--json"][..], args].concat())
}

/// A reply's name/value pairs as integers.
fn info(c: &mut Connection, key: &str) -> Vec<(String, i64)> {
    let flat: Vec<Value> = q(c, &["TDIGEST.INFO", key]);
    flat.chunks(2)
        .map(|p| match p {
            [Value::BulkString(k), Value::Int(n)] => (String::from_utf8_lossy(k).into(), *n),
            [Value::SimpleString(k), Value::Int(n)] => (k.clone(), *n),
            other => panic!("{other:?}"),
        })
        .collect()
}

fn field(info: &[(String, i64)], name: &str) -> i64 {
    info.iter()
        .find(|(k, _)| k == name)
        .unwrap_or_else(|| panic!("{name} in {info:?}"))
        .1
}

/// Capacity 6c + 10 and MEMORY USAGE 16·capacity + 8, worked out here and
/// read from TDIGEST.INFO on both modules; the rank error
/// π·ln N·q(1 − q) / c.
#[test]
fn plan_matches_both_modules_and_arithmetic() {
    let rb = redisbloom();
    let fb = ferrobloom();
    let (mut r, mut f) = (rb.conn(), fb.conn());
    for (i, (c, n)) in [(100u64, 1_000_000u64), (1, 10), (500, 123_456), (37, 2)]
        .into_iter()
        .enumerate()
    {
        let (cs, ns) = (c.to_string(), n.to_string());
        let j = plan_json(&["--tdigest", &cs, "--observations", &ns]);
        let ctx = format!("{c} {n}: {j}");
        assert_eq!(j["type"], "tdigest", "{ctx}");
        assert_eq!(j["capacity"], 6 * c + 10, "{ctx}");
        assert_eq!(j["memory_usage"], 16 * (6 * c + 10) + 8, "{ctx}");
        assert_eq!(j["command"], format!("TDIGEST.CREATE key COMPRESSION {c}"));
        let rank =
            |q: f64| 2.0 * std::f64::consts::PI * (n.max(2) as f64).ln() * q * (1.0 - q) / c as f64;
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs().max(1.0);
        assert!(
            close(j["rank_error_median"].as_f64().unwrap(), rank(0.5)),
            "{ctx}"
        );
        assert!(
            close(j["rank_error_tail"].as_f64().unwrap(), rank(0.01)),
            "{ctx}"
        );
        let key = format!("d{i}");
        for conn in [&mut r, &mut f] {
            q::<()>(conn, &["TDIGEST.CREATE", &key, "COMPRESSION", &cs]);
            let got = info(conn, &key);
            assert_eq!(j["capacity"], field(&got, "Capacity"), "{ctx}");
            assert_eq!(j["memory_usage"], field(&got, "Memory usage"), "{ctx}");
        }
    }
    let run = cli(&["plan", "--tdigest", "100"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for words in [
        "t-digest: TDIGEST.CREATE key COMPRESSION 100: capacity 610 nodes, planned for \
         1,000,000 observations",
        "MEMORY USAGE:   9,768 bytes",
        "rank error:     at most ",
    ] {
        assert!(run.stdout.contains(words), "{words}: {}", run.stdout);
    }
    // What TDIGEST.CREATE refuses, and other types' flags.
    let run = cli(&["plan", "--tdigest", "357913940"]);
    assert_eq!(run.code, 64);
    assert_stderr_says(&run, "ERR T-Digest: allocation failed");
    let j = plan_json(&["--tdigest", "1000", "--max-filter-bytes", "10000"]);
    assert_eq!(j["guard"], "bf.max-filter-bytes");
    for bad in [
        &["--tdigest", "0"][..],
        &["--tdigest", "-5"],
        &["--tdigest", "2.5"],
        &["--tdigest", "10", "--width", "5"],
        &["--tdigest", "10", "--topk", "5"],
        &["--observations", "5", "--capacity", "9", "--error", "0.1"],
    ] {
        let mut args = vec!["plan"];
        args.extend(bad);
        assert_eq!(cli(&args).code, 64, "{bad:?}");
    }
}

// ---------------------------------------------------------------------------
// stats

fn add(c: &mut Connection, key: &str, values: impl IntoIterator<Item = f64>) {
    let mut cmd = redis::cmd("TDIGEST.ADD");
    cmd.arg(key);
    for v in values {
        cmd.arg(format!("{v:?}"));
    }
    let _: Value = cmd.query(c).unwrap();
}

#[test]
fn stats_lists_digests_on_both_modules() {
    let mut entries = Vec::new();
    for server in [redisbloom(), ferrobloom()] {
        let mut c = server.conn();
        q::<()>(&mut c, &["TDIGEST.CREATE", "d:lat", "COMPRESSION", "50"]);
        add(&mut c, "d:lat", (0..5000).map(|i| f64::from(i % 997) * 0.5));
        q::<()>(&mut c, &["TDIGEST.CREATE", "d:empty"]);
        q::<i64>(&mut c, &["BF.ADD", "d:bloom", "x"]);
        // Before the DUMP, which compresses the digest on 2.8.2.
        let held = info(&mut c, "d:lat");
        let url = server.url();
        let run = cli(&["stats", "--url", &url, "--pattern", "d:*", "--json"]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let j = run.json();
        assert_eq!(j["filters"].as_array().unwrap().len(), 3, "{j}");
        let lat = filter_entry(&j, "d:lat").clone();
        assert_eq!(lat["type"], "tdigest");
        assert_eq!(lat["from"], "TDIGEST.INFO+DUMP");
        assert_eq!(lat["compression"].as_f64(), Some(50.0));
        assert_eq!(lat["capacity"], 310);
        assert_eq!(lat["observations"], 5000);
        assert_eq!(
            lat["nodes"],
            field(&held, "Merged nodes") + field(&held, "Unmerged nodes")
        );
        assert_eq!(lat["size"], field(&held, "Memory usage"));
        let min: String = q(&mut c, &["TDIGEST.MIN", "d:lat"]);
        let max: String = q(&mut c, &["TDIGEST.MAX", "d:lat"]);
        assert_eq!(lat["min"].as_f64(), Some(min.parse().unwrap()));
        assert_eq!(lat["max"].as_f64(), Some(max.parse().unwrap()));
        let centroids = lat["centroids"].as_u64().unwrap();
        assert!(centroids > 1 && centroids <= 310, "{lat}");
        assert_eq!(lat["level"], "ok");
        let empty = filter_entry(&j, "d:empty");
        assert_eq!(
            (empty["observations"].as_u64(), empty["min"].is_null()),
            (Some(0), true)
        );
        entries.push(lat);

        let run = cli(&["stats", "--url", &url, "--pattern", "d:*"]);
        assert_eq!(run.code, 0);
        for words in [
            " · 1 Bloom filter, 2 t-digests · ",
            "T-DIGEST ",
            "RANK ERROR",
            "t-digests: NODES are",
        ] {
            assert!(run.stdout.contains(words), "{words}: {}", run.stdout);
        }
    }
    // The same adds give the same digest on both modules, and the same
    // numbers decoded here.
    assert_eq!(entries[0], entries[1]);
}

// ---------------------------------------------------------------------------
// migrate

/// What a digest answers: MIN, MAX, QUANTILE and CDF at fixed points,
/// TRIMMED_MEAN, RANK, and TDIGEST.INFO's observations and capacity, as
/// numbers in one form (Redis 7.0 prints `%.17g`, 7.2+ and Valkey the
/// shortest form).
fn answers(c: &mut Connection, key: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for cmd in [
        vec!["TDIGEST.MIN", key],
        vec!["TDIGEST.MAX", key],
        vec!["TDIGEST.TRIMMED_MEAN", key, "0.1", "0.9"],
    ] {
        out.push(q(c, &cmd));
    }
    let qs: Vec<String> = q(
        c,
        &[
            "TDIGEST.QUANTILE",
            key,
            "0",
            "0.001",
            "0.3",
            "0.5",
            "0.999",
            "1",
        ],
    );
    out.extend(qs);
    let cdf: Vec<String> = q(c, &["TDIGEST.CDF", key, "-1", "3", "250.25", "1e9"]);
    out.extend(cdf);
    let ranks: Vec<i64> = q(c, &["TDIGEST.RANK", key, "3", "250"]);
    out.extend(ranks.iter().map(i64::to_string));
    let i = info(c, key);
    out.push(field(&i, "Observations").to_string());
    out.push(field(&i, "Capacity").to_string());
    // Equal doubles as equal text, whether printed as Redis 7.0 does (the
    // oracle's server) or as 7.2+ and Valkey do.
    out.into_iter()
        .map(|t| double_in_one_form(&t).unwrap_or(t))
        .collect()
}

/// Digests and a Bloom filter under `m:`: a large one, one read between
/// adds, one of one observation, an empty one.
fn mixed(c: &mut Connection) -> Vec<&'static str> {
    q::<()>(c, &["TDIGEST.CREATE", "m:big", "COMPRESSION", "100"]);
    add(
        c,
        "m:big",
        (0..20_000).map(|i| f64::from((i * 7919) % 10_007) / 3.0),
    );
    q::<()>(c, &["TDIGEST.CREATE", "m:read", "COMPRESSION", "20"]);
    add(c, "m:read", (0..300).map(f64::from));
    let _: Vec<String> = q(c, &["TDIGEST.QUANTILE", "m:read", "0.5"]);
    add(c, "m:read", (0..40).map(|i| f64::from(i) * 10.0));
    q::<()>(c, &["TDIGEST.CREATE", "m:one"]);
    add(c, "m:one", [42.5]);
    q::<()>(c, &["TDIGEST.CREATE", "m:empty", "COMPRESSION", "7"]);
    q::<()>(c, &["BF.RESERVE", "m:bf", "0.01", "1000"]);
    q::<i64>(c, &["BF.ADD", "m:bf", "x"]);
    vec!["m:big", "m:read", "m:empty"]
}

#[test]
fn migrate_digests_both_ways_among_filters() {
    let rb = redisbloom();
    let fb = ferrobloom();
    let back = redisbloom();
    let mut r = rb.conn();
    let keys = mixed(&mut r);
    let dir = workdir("tdigest-both-ways");

    let run = migrate(&dir, &rb.url(), &fb.url(), &["--pattern", "m:*"]);
    assert_succeeded_saying(&run, "copied and verified 1 filter and 4 t-digests (");
    let line = run
        .stdout
        .lines()
        .find(|l| l.starts_with("m:big -> m:big: t-digest compression 100, 20,000 observations"))
        .unwrap_or_else(|| panic!("{}", run.stdout));
    assert!(line.contains("MIN, MAX, QUANTILE and CDF equal"), "{line}");
    // 2.8.2's DUMP compressed its digest in place.
    assert_eq!(field(&info(&mut r, "m:big"), "Unmerged nodes"), 0);
    let mut f = fb.conn();
    for k in &keys {
        assert_eq!(answers(&mut r, k), answers(&mut f, k), "{k}");
    }
    // One observation: 2.8.2 answers nan, FerroBloom its value (and both
    // their MIN and MAX).
    let one = |c: &mut Connection, cmd: &str| -> String {
        if cmd == "TDIGEST.QUANTILE" {
            let v: Vec<String> = q(c, &[cmd, "m:one", "0.5"]);
            v[0].clone()
        } else {
            q(c, &[cmd, "m:one"])
        }
    };
    assert_eq!(one(&mut r, "TDIGEST.QUANTILE"), "nan");
    assert_eq!(one(&mut f, "TDIGEST.QUANTILE"), "42.5");
    for cmd in ["TDIGEST.MIN", "TDIGEST.MAX"] {
        assert_eq!(one(&mut r, cmd), one(&mut f, cmd), "{cmd}");
    }
    assert!(run
        .stdout
        .contains("MIN and MAX equal (one observation: RedisBloom 2.8.2 answers nan"));

    // A digest with points not merged yet copies out in 2.8.2's bytes
    // (compressed), which 2.8.2 loads; the verifying reads compress the
    // source as its clients see it, as 2.8.2's reads do (TDIGEST.INFO
    // then shows no unmerged point), and its answers stay the same.
    add(&mut f, "m:read", [1.5, 2.5, 3.5]);
    assert!(field(&info(&mut f, "m:read"), "Unmerged nodes") > 0);
    let before = answers(&mut f, "m:read");
    let run = migrate(&dir, &fb.url(), &back.url(), &["--pattern", "m:*"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(field(&info(&mut f, "m:read"), "Unmerged nodes"), 0);
    assert_eq!(answers(&mut f, "m:read"), before);
    let mut b = back.conn();
    add(&mut r, "m:read", [1.5, 2.5, 3.5]);
    for k in &keys {
        assert_eq!(answers(&mut f, k), answers(&mut b, k), "{k}");
        assert_eq!(answers(&mut r, k), answers(&mut b, k), "{k}");
    }
    // FerroBloom's single observation reaches 2.8.2 as a centroid, which
    // 2.8.2 answers too.
    assert_eq!(one(&mut b, "TDIGEST.QUANTILE"), "42.5");

    // The copies take adds as the originals do.
    for c in [&mut r, &mut b] {
        add(c, "m:big", [-5.0, 1e6]);
    }
    assert_eq!(answers(&mut r, "m:big"), answers(&mut b, "m:big"));

    // An existing digest is refused without --force, replaced with it.
    let run = migrate(&dir, &rb.url(), &back.url(), &["--key", "m:big"]);
    assert_eq!(run.code, 3);
    assert_stderr_says(&run, "already has this key: m:big");
    add(&mut r, "m:big", [77.0; 50]);
    let run = migrate(&dir, &rb.url(), &back.url(), &["--key", "m:big", "--force"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(answers(&mut r, "m:big"), answers(&mut b, "m:big"));
}

/// Digests into a three-master FerroBloom cluster and back out to
/// RedisBloom; `stats` finds them on every master.
#[test]
fn migrate_and_stats_of_digests_with_a_cluster() {
    let nodes = cluster();
    let seed = cluster_url(&nodes);
    let src = ferrobloom();
    let mut c = src.conn();
    let keys: Vec<String> = (0..6).map(|i| format!("k:{i}")).collect();
    for (i, key) in keys.iter().enumerate() {
        q::<()>(&mut c, &["TDIGEST.CREATE", key, "COMPRESSION", "30"]);
        add(&mut c, key, (0..(100 * (i + 1))).map(|v| v as f64 * 1.25));
    }
    let dir = workdir("tdigest-cluster");
    let run = migrate(&dir, &src.url(), &seed, &["--pattern", "k:*"]);
    assert_succeeded_saying(&run, "copied and verified 6 t-digests (");
    assert_spread_over_masters(&nodes, 6);
    let mut cc = cluster_conn(&nodes);
    for key in &keys {
        let a: Vec<String> = q(&mut c, &["TDIGEST.QUANTILE", key, "0.1", "0.5", "0.9"]);
        let b: Vec<String> = redis::cmd("TDIGEST.QUANTILE")
            .arg(key)
            .arg(&["0.1", "0.5", "0.9"])
            .query(&mut cc)
            .unwrap();
        assert_eq!(a, b, "{key}");
    }
    let j = cli_json(&["stats", "--url", &seed, "--json"]);
    assert_eq!(j["summary"]["filters"], 6, "{j}");
    assert_eq!(filter_entry(&j, "k:3")["observations"], 400);

    let rb = redisbloom();
    let run = migrate(&dir, &seed, &rb.url(), &["--pattern", "k:*"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mut r = rb.conn();
    for key in &keys {
        assert_eq!(answers(&mut c, key), answers(&mut r, key), "{key}");
    }
}
