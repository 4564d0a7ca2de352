//! The `ferrobloom` tool against real servers: FerroBloom, and RedisBloom
//! 2.8.2 as found in the oracle installation (scripts/oracle.sh). Also runs
//! examples/crawler_dedup.py with the oracle's Python (it has redis-py).

#[path = "../../../tests/common/mod.rs"]
mod common;
mod support;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{dump_parts, ModuleKind, Server, ServerOpts};
use redis::{Connection, Value};
use serde_json::Value as Json;
use support::{
    cli, cli_in, cluster, ferrobloom, free_port, q, redisbloom, root, setup, workdir, Run,
};

/// Adds `n` items named `{prefix}{i}` in batches.
fn madd(c: &mut Connection, key: &str, prefix: &str, n: usize) {
    let items: Vec<String> = (0..n).map(|i| format!("{prefix}{i}")).collect();
    for chunk in items.chunks(10_000) {
        let _: Value = redis::cmd("BF.MADD").arg(key).arg(chunk).query(c).unwrap();
    }
}

/// The whole SCANDUMP stream of a key: (iterator, data) pairs, header first.
fn stream(c: &mut Connection, key: &str) -> Vec<(i64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut it = 0i64;
    loop {
        let (next, data): (i64, Vec<u8>) =
            redis::cmd("BF.SCANDUMP").arg(key).arg(it).query(c).unwrap();
        if next == 0 {
            return out;
        }
        out.push((next, data));
        it = next;
    }
}

/// A RESP3 reply as JSON (maps as objects, doubles exact).
fn to_json(v: Value) -> Json {
    match v {
        Value::Nil => Json::Null,
        Value::Int(n) => n.into(),
        Value::Double(d) => d.into(),
        Value::Boolean(b) => b.into(),
        Value::SimpleString(s) => s.into(),
        Value::Okay => "OK".into(),
        Value::BulkString(b) => String::from_utf8_lossy(&b).into_owned().into(),
        Value::Array(a) | Value::Set(a) => a.into_iter().map(to_json).collect(),
        Value::Map(m) => m
            .into_iter()
            .map(|(k, v)| match to_json(k) {
                Json::String(s) => (s, to_json(v)),
                other => (other.to_string(), to_json(v)),
            })
            .collect::<serde_json::Map<_, _>>()
            .into(),
        other => panic!("unexpected reply {other:?}"),
    }
}

fn cmd3(c: &mut Connection, args: &[String]) -> Json {
    let mut cmd = redis::cmd(&args[0]);
    for a in &args[1..] {
        cmd.arg(a);
    }
    to_json(
        cmd.query(c)
            .unwrap_or_else(|e| panic!("{}: {e}", args.join(" "))),
    )
}

// ---------------------------------------------------------------------------
// help and usage

#[test]
fn help_documents_every_subcommand() {
    let top = cli(&["--help"]);
    assert_eq!(top.code, 0);
    for word in [
        "plan",
        "stats",
        "migrate",
        "redis+cluster://",
        "docs/cli.md",
    ] {
        assert!(top.stdout.contains(word), "--help lacks {word}");
    }
    for (sub, words) in [
        (
            "plan",
            &[
                "--capacity",
                "--error",
                "--expansion",
                "--nonscaling",
                "--items",
                "--max-filter-bytes",
                "--json",
                "--window",
                "--generations",
                "--rate",
                "--per-day",
                "--policy",
                "--cuckoo",
                "--bucket-size",
                "--max-iterations",
                "--max-expansions",
            ][..],
        ),
        (
            "stats",
            &[
                "--url",
                "--pattern",
                "--watch",
                "--json",
                "--warning",
                "--alert",
                "--timeout",
                "MBbloom--",
            ][..],
        ),
        (
            "migrate",
            &[
                "--from",
                "--to",
                "--key",
                "--pattern",
                "--rename",
                "--force",
                "--chunk-size",
                "--timeout",
                "--state-file",
            ][..],
        ),
    ] {
        let help = cli(&[sub, "--help"]);
        assert_eq!(help.code, 0);
        for w in words {
            assert!(help.stdout.contains(w), "{sub} --help lacks {w}");
        }
    }
    // Usage errors do not collide with the stats levels (1, 2).
    assert_eq!(
        cli(&["plan", "--capacity", "0", "--error", "0.01"]).code,
        64
    );
    assert_eq!(cli(&["plan", "--capacity", "10", "--error", "1"]).code, 64);
    assert_eq!(cli(&["stats", "--watch", "0"]).code, 64);
    assert_eq!(
        cli(&[
            "migrate",
            "--from",
            "redis://x",
            "--to",
            "redis://y",
            "--rename",
            "n"
        ])
        .code,
        64
    );
    assert_eq!(cli(&["bogus"]).code, 64);
}

// ---------------------------------------------------------------------------
// plan

#[test]
fn plan_numbers_equal_bf_plan() {
    let server = ferrobloom();
    let mut c = server.conn3();
    // The tool's options, and the same request to BF.PLAN.
    let cases = [
        "--capacity 100 --error 0.01",
        "--capacity 1000 --error 0.001 --items 100000",
        "--capacity 10000000 --error 0.001 --items 25000000",
        "--capacity 100 --error 0.01 --nonscaling --items 250",
        "--capacity 1000 --error 0.001 --expansion 4 --items 1000000",
        "--capacity 7 --error 0.3 --expansion 1 --items 50",
        "--capacity 5 --error 0.1 --items 0",
        "--capacity 1000000 --error 0.0001 --expansion 3 --items 123456789",
    ];
    for case in cases {
        let words: Vec<&str> = case.split(' ').collect();
        let mut args = vec!["plan", "--json"];
        args.extend(&words);
        let value = |name: &str| {
            let i = words.iter().position(|w| *w == name)?;
            Some(words[i + 1].to_string())
        };
        let mut server_args: Vec<String> = vec![
            "BF.PLAN".into(),
            value("--capacity").unwrap(),
            value("--error").unwrap(),
        ];
        if let Some(x) = value("--expansion") {
            server_args.extend(["EXPANSION".into(), x]);
        }
        if words.contains(&"--nonscaling") {
            server_args.push("NONSCALING".into());
        }
        if let Some(m) = value("--items") {
            server_args.extend(["ITEMS".into(), m]);
        }
        let run = cli(&args);
        assert_eq!(run.code, 0);
        let out = run.json();
        let policies = out["policies"].as_array().unwrap();
        assert_eq!(policies.len(), 2);
        for p in policies {
            let policy = p["policy"].as_str().unwrap();
            let mut a = server_args.clone();
            a.extend(["POLICY".into(), policy.into()]);
            let reply = cmd3(&mut c, &a);
            for field in ["capacity", "bytes", "size", "refused_items", "fpr", "items"] {
                assert_eq!(p[field], reply[field], "{a:?} {field}");
            }
            let links = reply["links"].as_array().unwrap();
            assert_eq!(p["links"].as_array().unwrap().len(), links.len(), "{a:?}");
            for (mine, theirs) in p["links"].as_array().unwrap().iter().zip(links) {
                for field in ["capacity", "error", "hashes", "bits", "bytes"] {
                    assert_eq!(mine[field], theirs[field], "{a:?} link {field}");
                }
            }
        }
        // The text form shows the same numbers.
        let text_args: Vec<&str> = args.iter().copied().filter(|a| *a != "--json").collect();
        let text = cli(&text_args);
        assert_eq!(text.code, 0);
        for p in policies {
            let size = p["size"].as_u64().unwrap();
            assert!(
                text.stdout
                    .contains(&format!("BF.INFO Size {}", commas(size))),
                "{}",
                text.stdout
            );
            for l in p["links"].as_array().unwrap() {
                assert!(text.stdout.contains(&commas(l["bytes"].as_u64().unwrap())));
            }
        }
    }
}

fn commas(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// BF.PLAN ... WINDOW's reply fields, which `plan --window --json` repeats.
const WINDOW_PLAN_FIELDS: [&str; 17] = [
    "policy",
    "window",
    "generations",
    "generation_span",
    "generation_capacity",
    "generation_error",
    "hashes",
    "bit_arrays",
    "bytes",
    "fpr",
    "forgotten_late_by",
    "plain_filter_bytes",
    "scaling",
    "burst_2x_bytes",
    "burst_2x_fpr",
    "burst_10x_bytes",
    "burst_10x_fpr",
];

#[test]
fn plan_window_numbers_equal_bf_plan() {
    let server = ferrobloom();
    let mut c = server.conn3();
    // The tool's options, and the same request to BF.PLAN.
    let cases: [(&str, &str); 9] = [
        // The crawler: 500,000 new URLs a day, 30 days, error 0.001.
        (
            "--window 30d --per-day 500000 --error 0.001",
            "15000000 0.001 WINDOW 30d",
        ),
        (
            "--window 30d --rate 500,000/d --error 0.001",
            "15000000 0.001 WINDOW 30d",
        ),
        (
            "--window 30d --capacity 15e6 --error 0.001 --generations 30",
            "15000000 0.001 WINDOW 30d GENERATIONS 30",
        ),
        (
            "--window 12h --rate 2000/m --error 0.01 --generations 12 --policy pow2",
            "1440000 0.01 WINDOW 12h GENERATIONS 12 POLICY pow2",
        ),
        (
            "--window 90m --capacity 1000 --error 0.1 --generations 1",
            "1000 0.1 WINDOW 90m GENERATIONS 1",
        ),
        (
            "--window 3600s --capacity 100 --error 0.001 --generations 64",
            "100 0.001 WINDOW 3600s GENERATIONS 64",
        ),
        (
            "--window 3000 --error 0.01 --generations 3",
            "3000 0.01 WINDOW 3000 GENERATIONS 3",
        ),
        (
            "--window 1000 --capacity 30000 --error 0.01 --generations 3",
            "30000 0.01 WINDOW 1000 GENERATIONS 3",
        ),
        ("--window 7s --capacity 5 --error 0.5", "5 0.5 WINDOW 7s"),
    ];
    for (mine, theirs) in cases {
        let mut args = vec!["plan", "--json"];
        args.extend(mine.split(' '));
        let run = cli(&args);
        assert_eq!(run.code, 0, "{mine}");
        let out = run.json();
        let mut request: Vec<String> = vec!["BF.PLAN".into()];
        request.extend(theirs.split(' ').map(String::from));
        let reply = cmd3(&mut c, &request);
        for field in WINDOW_PLAN_FIELDS {
            assert_eq!(out[field], reply[field], "{mine}: {field}");
        }
        assert_eq!(out["warnings"], serde_json::json!([]));
        // The text shows the same memory and shape.
        args.retain(|a| *a != "--json");
        let text = cli(&args);
        assert_eq!(text.code, 0);
        let bytes = reply["bytes"].as_u64().unwrap();
        assert!(
            text.stdout.contains(&format!("{} bytes (", commas(bytes))),
            "{}",
            text.stdout
        );
        let span = reply["generation_span"].as_str().unwrap();
        let g = reply["generations"].as_u64().unwrap();
        let each = match span.parse::<u64>() {
            // An item window's N items spread over G generations: the
            // longest take ceil(N/G), the others one less.
            Ok(items) => match reply["window"].as_str().unwrap().parse::<u64>() {
                Ok(n) if n % g != 0 => {
                    format!("{g} of {} or {} items each", commas(n / g), commas(items))
                }
                _ => format!("{g} of {} items each", commas(items)),
            },
            Err(_) => format!("{g} of {span} each"),
        };
        assert!(text.stdout.contains(&each), "{each}\n{}", text.stdout);
    }
    // A window created with that plan takes what it said.
    let _: () = redis::cmd("BF.RESERVE")
        .arg("seen")
        .arg("0.001")
        .arg("15000000")
        .arg("WINDOW")
        .arg("30d")
        .query(&mut c)
        .unwrap();
    let size: Vec<i64> = q(&mut server.conn(), &["BF.INFO", "seen", "SIZE"]);
    assert_eq!(size, [44_927_840]);

    // The crawler's plan in words, with the comparisons.
    let run = cli(&[
        "plan",
        "--window",
        "30d",
        "--per-day",
        "500000",
        "--error",
        "0.001",
    ]);
    assert_eq!(run.code, 0);
    for words in [
        "Windowed filter: window 30d, 15,000,000 items per window (500,000 a day), error rate 0.001, 8 generations, exact policy",
        "44,927,840 bytes (42.8 MiB) in 10 bit arrays",
        "8 of 90h each; a lookup tests 9",
        "forgotten at most 90h (3.75 days, 12.5% of the window) later",
        "one plain filter for 15,000,000 items            26,957,984",
        "31 daily filters of 500,000 items, 0.1% overall",
        "3.05%",
    ] {
        assert!(run.stdout.contains(words), "{words}\n{}", run.stdout);
    }

    // Options that do not fit a window are usage errors.
    for bad in [
        "--window 30d --error 0.001",
        "--window 30d --capacity 10 --error 0.001 --expansion 2",
        "--window 30d --capacity 10 --error 0.001 --items 5",
        "--window 1000 --per-day 10 --error 0.001",
        "--window 30d --capacity 10 --rate 5/d --error 0.001",
        "--window 30d --capacity 10 --error 0.001 --generations 65",
        "--window 30d --rate 5/w --error 0.001",
        "--window 0 --capacity 10 --error 0.001",
        "--window 5y --capacity 10 --error 0.001",
        "--window 30d --capacity 10 --error 0.001 --policy best",
        "--capacity 10 --error 0.001 --generations 4",
    ] {
        let mut args = vec!["plan"];
        args.extend(bad.split(' '));
        assert_eq!(cli(&args).code, 64, "{bad}");
    }

    // Over bf.max-filter-bytes: a warning, as for plain filters, and the
    // server's refusal agrees.
    let run = cli(&[
        "plan",
        "--window",
        "30d",
        "--capacity",
        "1e6",
        "--error",
        "0.001",
        "--max-filter-bytes",
        "1000000",
        "--json",
    ]);
    assert_eq!(run.code, 0);
    let out = run.json();
    assert_eq!(out["refused"], true);
    assert!(out["warnings"][0]
        .as_str()
        .unwrap()
        .contains("would refuse to create this windowed filter"));
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("bf.max-filter-bytes")
        .arg("1000000")
        .query(&mut c)
        .unwrap();
    let refused = redis::cmd("BF.RESERVE")
        .arg("big")
        .arg("0.001")
        .arg("1000000")
        .arg("WINDOW")
        .arg("30d")
        .query::<()>(&mut c)
        .unwrap_err();
    assert!(
        refused.to_string().contains("Insufficient memory"),
        "{refused}"
    );
}

#[test]
fn plan_warns_when_a_nonscaling_filter_would_refuse_items() {
    let run = cli(&[
        "plan",
        "--capacity",
        "1000",
        "--error",
        "0.01",
        "--nonscaling",
        "--items",
        "5000",
    ]);
    assert_eq!(run.code, 0);
    assert!(run.stdout.contains("WARNING"), "{}", run.stdout);
    assert!(run.stdout.contains("would refuse 4,000 of the 5,000 items"));
    assert!(run.stdout.contains("non scaling filter is full"));
    let json = cli(&[
        "plan",
        "--capacity",
        "1000",
        "--error",
        "0.01",
        "--nonscaling",
        "--items",
        "5000",
        "--json",
    ])
    .json();
    assert_eq!(json["policies"][0]["refused_items"], 4000);
    assert_eq!(json["warnings"].as_array().unwrap().len(), 2);
    // Within capacity: no warning.
    let quiet = cli(&[
        "plan",
        "--capacity",
        "1000",
        "--error",
        "0.01",
        "--nonscaling",
    ]);
    assert!(!quiet.stdout.contains("WARNING"));
    // A scaling filter adds links instead.
    let scaling = cli(&[
        "plan",
        "--capacity",
        "1000",
        "--error",
        "0.01",
        "--items",
        "5000",
        "--json",
    ])
    .json();
    assert_eq!(scaling["policies"][0]["links"].as_array().unwrap().len(), 3);
    assert!(scaling["warnings"].as_array().unwrap().is_empty());
}

// ---------------------------------------------------------------------------
// stats

/// Filters at known fill levels: 50%, 80% (warning), 95% (alert).
fn fill_levels(c: &mut Connection) {
    for (key, items) in [("half", 500), ("eighty", 800), ("ninety-five", 950)] {
        q::<()>(c, &["BF.RESERVE", key, "0.01", "1000", "NONSCALING"]);
        madd(c, key, "item-", items);
    }
}

fn stats_json(server: &Server, extra: &[&str]) -> (i32, Json) {
    let url = server.url();
    let mut args = vec!["stats", "--url", url.as_str(), "--json"];
    args.extend(extra);
    let run = cli(&args);
    let json = run.json();
    assert_eq!(json["exit_code"], run.code);
    (run.code, json)
}

fn keys_in_order(json: &Json) -> Vec<String> {
    json["filters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["key"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn stats_on_ferrobloom() {
    let server = ferrobloom();
    let mut c = server.conn();
    let url = server.url();

    let empty = cli(&["stats", "--url", &url]);
    assert_eq!(empty.code, 0);
    assert!(empty.stdout.contains("no filters found"));

    q::<()>(
        &mut c,
        &["BF.RESERVE", "half", "0.01", "1000", "NONSCALING"],
    );
    madd(&mut c, "half", "item-", 500);
    q::<()>(&mut c, &["SET", "a-string", "x"]);
    let (code, json) = stats_json(&server, &[]);
    assert_eq!(code, 0);
    assert_eq!(keys_in_order(&json), ["half"]);

    q::<()>(
        &mut c,
        &["BF.RESERVE", "eighty", "0.01", "1000", "NONSCALING"],
    );
    madd(&mut c, "eighty", "item-", 800);
    assert_eq!(stats_json(&server, &[]).0, 1);

    q::<()>(
        &mut c,
        &["BF.RESERVE", "ninety-five", "0.01", "1000", "NONSCALING"],
    );
    madd(&mut c, "ninety-five", "item-", 950);
    let (code, json) = stats_json(&server, &[]);
    assert_eq!(code, 2);
    assert_eq!(keys_in_order(&json), ["ninety-five", "eighty", "half"]);
    assert_eq!(json["source"], "BF.STATS");
    assert_eq!(json["thresholds"]["from"], "server");
    assert_eq!(json["thresholds"]["warning"], 0.75);
    assert_eq!(json["thresholds"]["alert"], 0.9);
    let levels: Vec<&str> = json["filters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["level"].as_str().unwrap())
        .collect();
    assert_eq!(levels, ["alert", "warning", "ok"]);
    assert_eq!(json["summary"]["alert"], 1);

    // The numbers are BF.STATS's, exactly.
    let mut c3 = server.conn3();
    for f in json["filters"].as_array().unwrap() {
        let key = f["key"].as_str().unwrap().to_string();
        let s = cmd3(&mut c3, &["BF.STATS".into(), key.clone()]);
        assert_eq!(f["fill_ratio"], s["fill_ratio"], "{key}");
        assert_eq!(f["estimated_fpr"], s["estimated_fpr"], "{key}");
        assert_eq!(f["items"], s["items"]);
        assert_eq!(f["capacity"], s["capacity"]);
        assert_eq!(f["size"], s["size"]);
        assert_eq!(f["bytes"], s["bytes"]);
        assert_eq!(f["links"], s["links"]);
        assert_eq!(f["policy"], s["policy"]);
        assert_eq!(f["level"], s["fill_level"]);
    }

    // The table: sorted by fill, aligned, with the levels.
    let table = cli(&["stats", "--url", &url]);
    assert_eq!(table.code, 2);
    let lines: Vec<&str> = table.stdout.lines().collect();
    let header = lines.iter().position(|l| l.starts_with("KEY")).unwrap();
    assert!(lines[header].contains("ITEMS") && lines[header].contains("LEVEL"));
    assert!(lines[header + 1].starts_with("ninety-five") && lines[header + 1].ends_with("ALERT"));
    assert!(lines[header + 2].starts_with("eighty") && lines[header + 2].ends_with("WARNING"));
    assert!(lines[header + 3].starts_with("half") && lines[header + 3].ends_with("ok"));
    let top = &json["filters"][0];
    let fill = format!("{:.1}%", top["fill_ratio"].as_f64().unwrap() * 100.0);
    assert!(lines[header + 1].contains(&fill), "{}", lines[header + 1]);
    assert!(lines[header + 1].contains(&commas(top["items"].as_u64().unwrap())));
    // Plain text (no colors when not on a terminal), columns aligned: the
    // levels start under LEVEL, the item counts end under ITEMS.
    let level_col = lines[header].find("LEVEL").unwrap();
    let items_end = lines[header].find("ITEMS").unwrap() + "ITEMS".len();
    for (l, level) in lines[header + 1..header + 4]
        .iter()
        .zip(["ALERT", "WARNING", "ok"])
    {
        assert!(!l.contains('\x1b'), "{l:?}");
        assert_eq!(&l[level_col..], level, "{l}");
        assert!(l.as_bytes()[items_end - 1].is_ascii_digit(), "{l}");
        assert_eq!(l.as_bytes()[items_end], b' ', "{l}");
    }
    assert!(table.stdout.contains("1 ALERT, 1 WARNING, 1 ok"));

    // Pattern.
    let (code, json) = stats_json(&server, &["--pattern", "h*"]);
    assert_eq!((code, keys_in_order(&json)), (0, vec!["half".to_string()]));

    // Thresholds come from the server's configuration...
    q::<()>(&mut c, &["CONFIG", "SET", "bf.fill-warning", "0.4"]);
    let (code, json) = stats_json(&server, &["--pattern", "h*"]);
    assert_eq!(code, 1);
    assert_eq!(json["thresholds"]["warning"], 0.4);
    q::<()>(&mut c, &["CONFIG", "SET", "bf.fill-alert", "0.5"]);
    assert_eq!(stats_json(&server, &["--pattern", "h*"]).0, 2);
    // ...unless given on the command line.
    let (code, json) = stats_json(&server, &["--warning", "0.96", "--alert", "0.99"]);
    assert_eq!(code, 0);
    assert_eq!(json["thresholds"]["from"], "command line");
}

#[test]
fn stats_scans_many_filters() {
    let server = ferrobloom();
    let mut c = server.conn();
    let mut pipe = redis::pipe();
    for i in 0..2500 {
        pipe.cmd("BF.ADD")
            .arg(format!("many:{i}"))
            .arg("x")
            .ignore();
        pipe.cmd("SET")
            .arg(format!("many-string:{i}"))
            .arg("x")
            .ignore();
    }
    pipe.query::<()>(&mut c).unwrap();
    let (code, json) = stats_json(&server, &["--pattern", "many*"]);
    assert_eq!(code, 0);
    assert_eq!(json["summary"]["filters"], 2500);
    assert_eq!(json["filters"].as_array().unwrap().len(), 2500);
}

#[test]
fn stats_on_redisbloom_estimates_from_counts() {
    let server = redisbloom();
    let mut c = server.conn();
    let url = server.url();
    assert_eq!(cli(&["stats", "--url", &url]).code, 0);
    q::<()>(
        &mut c,
        &["BF.RESERVE", "half", "0.01", "1000", "NONSCALING"],
    );
    madd(&mut c, "half", "item-", 500);
    assert_eq!(stats_json(&server, &[]).0, 0);
    q::<()>(
        &mut c,
        &["BF.RESERVE", "eighty", "0.01", "1000", "NONSCALING"],
    );
    madd(&mut c, "eighty", "item-", 800);
    assert_eq!(stats_json(&server, &[]).0, 1);
    q::<()>(
        &mut c,
        &["BF.RESERVE", "ninety-five", "0.01", "1000", "NONSCALING"],
    );
    madd(&mut c, "ninety-five", "item-", 950);
    // A scaling filter of four links.
    q::<()>(&mut c, &["BF.RESERVE", "chain", "0.01", "10"]);
    madd(&mut c, "chain", "", 100);

    let (code, json) = stats_json(&server, &[]);
    assert_eq!(code, 2);
    assert_eq!(json["source"], "BF.INFO+BF.DEBUG");
    assert_eq!(json["thresholds"]["from"], "default");
    assert_eq!(
        keys_in_order(&json)[..3],
        ["ninety-five", "eighty", "chain"]
    );
    for f in json["filters"].as_array().unwrap() {
        let key = f["key"].as_str().unwrap();
        assert_eq!(f["policy"], Json::Null);
        assert_eq!(f["fpr_from"], "item counts (BF.INFO, BF.DEBUG)");
        let items: u64 = q(&mut c, &["BF.CARD", key]);
        let info: Vec<Value> = q(&mut c, &["BF.INFO", key]);
        let capacity = match &info[1] {
            Value::Int(n) => *n as u64,
            v => panic!("{v:?}"),
        };
        assert_eq!(f["items"], items);
        assert_eq!(f["capacity"], capacity);
        assert_eq!(f["fill_ratio"], items as f64 / capacity as f64);
        // The standard formula over BF.DEBUG's links.
        let debug: Vec<String> = q(&mut c, &["BF.DEBUG", key]);
        let mut keep = 1.0f64;
        let mut bytes = 0u64;
        for line in &debug[1..] {
            let field = |name: &str| -> f64 {
                line.split(' ')
                    .find_map(|kv| kv.strip_prefix(&format!("{name}:")))
                    .unwrap()
                    .parse()
                    .unwrap()
            };
            let (k, m, n) = (field("hashes"), field("bits"), field("size"));
            let fpr = (1.0 - (1.0 - 1.0 / m).powf(k * n)).powf(k);
            keep *= 1.0 - fpr;
            bytes += field("bytes") as u64;
        }
        let expected = 1.0 - keep;
        let got = f["estimated_fpr"].as_f64().unwrap();
        assert!(
            (got - expected).abs() <= 1e-9 * expected.max(1e-12),
            "{key}: {got} vs {expected}"
        );
        assert_eq!(f["bytes"], bytes);
        assert_eq!(f["links"], (debug.len() - 1) as u64);
    }
    let chain = json["filters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["key"] == "chain")
        .unwrap();
    assert_eq!(chain["links"], 4);

    let table = cli(&["stats", "--url", &url]);
    assert_eq!(table.code, 2);
    assert!(table.stdout.contains("n/a"));
    assert!(table.stdout.contains("* estimated from the item counts"));
    assert!(table.stdout.contains("ALERT") && table.stdout.contains("WARNING"));
    // Thresholds on the command line work here too.
    assert_eq!(stats_json(&server, &["--alert", "0.99"]).0, 1);
    assert_eq!(
        stats_json(&server, &["--warning", "0.98", "--alert", "0.99"]).0,
        0
    );
}

/// BF.STATS of a key as JSON (RESP3).
fn bf_stats(c: &mut Connection, key: &str) -> Json {
    cmd3(c, &["BF.STATS".into(), key.into()])
}

#[test]
fn stats_lists_windowed_filters() {
    let server = ferrobloom();
    let mut c = server.conn();
    let mut c3 = server.conn3();
    let url = server.url();
    // An item window of 3,000 in 3 generations after 4,500 adds: it has
    // seen its whole window, retired one generation of 1,000 items.
    q::<()>(
        &mut c,
        &[
            "BF.RESERVE",
            "recent",
            "0.01",
            "3000",
            "WINDOW",
            "3000",
            "GENERATIONS",
            "3",
        ],
    );
    madd(&mut c, "recent", "r-", 4500);
    // A day window created now: it has seen almost none of its window.
    q::<()>(
        &mut c,
        &["BF.RESERVE", "day", "0.001", "100000", "WINDOW", "1d"],
    );
    madd(&mut c, "day", "d-", 1000);
    let (code, json) = stats_json(&server, &[]);
    assert_eq!(code, 0);
    assert_eq!(json["summary"]["filters"], 2);
    for f in json["filters"].as_array().unwrap() {
        let key = f["key"].as_str().unwrap();
        let stats = bf_stats(&mut c3, key);
        let w = &f["window"];
        for field in [
            "items",
            "capacity",
            "fill_ratio",
            "estimated_fpr",
            "bytes",
            "policy",
        ] {
            assert_eq!(f[field], stats[field], "{key} {field}");
        }
        assert_eq!(f["size"], stats["bytes"], "{key}");
        assert_eq!(f["level"], stats["fill_level"], "{key}");
        for field in [
            "window",
            "generations",
            "generation_span",
            "target_error",
            "rotations",
            "forgotten",
            "forgotten_late_by",
        ] {
            assert_eq!(w[field], stats[field], "{key} {field}");
        }
        assert_eq!(
            w["per_generation"].as_array().unwrap().len(),
            stats["per_generation"].as_array().unwrap().len()
        );
        assert_eq!(f["links"], Json::Null);
    }
    let recent = &json["filters"].as_array().unwrap()[0];
    assert_eq!(recent["key"], "recent", "{json}");
    assert_eq!(recent["window"]["coverage"], 1.0);
    assert_eq!(recent["window"]["rotations"], 1);
    assert_eq!(recent["window"]["forgotten"], 1000);
    assert!(recent["window"]["per_generation"][0]["age_ms"].is_null());
    let day = &json["filters"].as_array().unwrap()[1];
    let coverage = day["window"]["coverage"].as_f64().unwrap();
    assert!(coverage > 0.0 && coverage < 0.01, "{coverage}");
    assert!(day["window"]["per_generation"][0]["age_ms"].is_u64());

    // A window whose generation got more than its share: warning (exit 1)
    // while its estimated false positive rate stays under its error rate.
    q::<()>(
        &mut c,
        &["BF.RESERVE", "busy", "0.01", "80000", "WINDOW", "1h"],
    );
    madd(&mut c, "busy", "b-", 12_000);
    assert_eq!(bf_stats(&mut c3, "busy")["fill_level"], "warning");
    let (code, json) = stats_json(&server, &[]);
    assert_eq!(code, 1);
    assert_eq!(keys_in_order(&json), ["busy", "recent", "day"]);
    assert_eq!(json["summary"]["warning"], 1);

    // One far over its capacity: alert, exit 2, as a plain filter's alert;
    // a plain filter over the warning threshold sorts after it.
    q::<()>(
        &mut c,
        &["BF.RESERVE", "hot", "0.01", "1000", "WINDOW", "1h"],
    );
    madd(&mut c, "hot", "h-", 10_000);
    assert_eq!(bf_stats(&mut c3, "hot")["fill_level"], "alert");
    q::<()>(
        &mut c,
        &["BF.RESERVE", "plain", "0.01", "1000", "NONSCALING"],
    );
    madd(&mut c, "plain", "p-", 800);
    let (code, json) = stats_json(&server, &[]);
    assert_eq!(code, 2);
    assert_eq!(
        keys_in_order(&json),
        ["hot", "busy", "plain", "recent", "day"]
    );
    // The plain filter's entry is as before: no window field.
    let plain = &json["filters"].as_array().unwrap()[2];
    assert!(plain.get("window").is_none(), "{plain}");
    assert_eq!(plain["links"], 1);

    // The table: plain filters in theirs, windows in their own.
    let run = cli(&["stats", "--url", url.as_str()]);
    assert_eq!(run.code, 2);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(
        lines[0].ends_with(
            "· 5 Bloom filters (4 windowed) · thresholds: warning 75.0%, alert 90.0% (server)"
        ),
        "{}",
        lines[0]
    );
    assert!(lines[2].starts_with("KEY "), "{}", run.stdout);
    assert!(lines[3].starts_with("plain ") && lines[3].ends_with("WARNING"));
    assert_eq!(lines[4], "");
    for title in [
        "WINDOWED",
        "WINDOW",
        "COVERAGE",
        "ITEMS",
        "FILL",
        "EST. FPR",
        "TARGET",
        "ROTATIONS",
        "FORGOTTEN",
        "LEVEL",
    ] {
        assert!(lines[5].contains(title), "{}", lines[5]);
    }
    let row = |key: &str| {
        *lines
            .iter()
            .find(|l| l.starts_with(&format!("{key} ")))
            .unwrap_or_else(|| panic!("no row {key}:\n{}", run.stdout))
    };
    assert!(row("hot").ends_with("ALERT"), "{}", row("hot"));
    assert!(row("busy").ends_with("WARNING"));
    let recent = row("recent");
    assert!(recent.ends_with("ok"));
    let card: u64 = q(&mut c, &["BF.CARD", "recent"]);
    for cell in ["3000", "100.0%", &commas(card), "3,000", "1,000"] {
        assert!(recent.contains(cell), "{cell}: {recent}");
    }
    assert!(row("day").contains("1d"));
    assert!(
        run.stdout.contains("1 ALERT, 2 WARNING, 2 ok"),
        "{}",
        run.stdout
    );
    assert!(run
        .stdout
        .contains("windowed: COVERAGE is how much of its window"));

    // --pattern selects windows too; the thresholds do not move their level.
    let (code, json) = stats_json(
        &server,
        &["--pattern", "re*", "--warning", "0.1", "--alert", "0.2"],
    );
    assert_eq!(code, 0);
    assert_eq!(keys_in_order(&json), ["recent"]);
}

#[test]
fn stats_watch_refreshes() {
    let server = ferrobloom();
    let mut c = server.conn();
    fill_levels(&mut c);
    let child = Command::new(env!("CARGO_BIN_EXE_ferrobloom"))
        .args(["stats", "--url", &server.url(), "--watch", "0.2", "--json"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let docs: Vec<Json> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(docs.len() >= 3, "{text}");
    for d in &docs {
        assert_eq!(d["summary"]["filters"], 3);
    }
}

// ---------------------------------------------------------------------------
// migrate

/// Filters of many shapes: default, multi-link chain, non-scaling,
/// expansion 3, several links of 16 MiB chunks.
fn shapes(c: &mut Connection) -> Vec<&'static str> {
    let _: Value = redis::cmd("BF.ADD")
        .arg("m:default")
        .arg("x")
        .query(c)
        .unwrap();
    q::<()>(c, &["BF.RESERVE", "m:chain", "0.01", "10"]);
    madd(c, "m:chain", "", 100);
    q::<()>(
        c,
        &["BF.RESERVE", "m:nonscaling", "0.001", "5000", "NONSCALING"],
    );
    madd(c, "m:nonscaling", "n", 4000);
    q::<()>(
        c,
        &["BF.RESERVE", "m:exp3", "0.05", "100", "EXPANSION", "3"],
    );
    madd(c, "m:exp3", "e", 2000);
    q::<()>(c, &["BF.RESERVE", "m:large", "0.0001", "2000000"]);
    madd(c, "m:large", "l", 50_000);
    vec!["m:chain", "m:default", "m:exp3", "m:large", "m:nonscaling"]
}

fn assert_same_streams(a: &Server, b: &Server, keys: &[&str]) {
    let (mut ca, mut cb) = (a.conn(), b.conn());
    for key in keys {
        let sa = stream(&mut ca, key);
        let sb = stream(&mut cb, key);
        assert!(!sa.is_empty());
        assert!(sa == sb, "{key}: SCANDUMP streams differ");
        let ia: Value = q(&mut ca, &["BF.INFO", key]);
        let ib: Value = q(&mut cb, &["BF.INFO", key]);
        assert_eq!(ia, ib, "{key}");
    }
}

#[test]
fn migrate_redisbloom_to_ferrobloom() {
    let src = redisbloom();
    let dst = ferrobloom();
    let mut c = src.conn();
    let keys = shapes(&mut c);
    q::<()>(&mut c, &["SET", "m:string", "x"]);
    let dir = workdir("rb-to-fb");
    let run = cli_in(
        &dir,
        &[
            "migrate",
            "--from",
            &src.url(),
            "--to",
            &dst.url(),
            "--pattern",
            "m:*",
        ],
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("copied and verified 5 filters"));
    for k in &keys {
        assert!(run.stdout.contains(&format!("{k} -> {k}:")), "{k}");
    }
    assert_same_streams(&src, &dst, &keys);
    // The state file is gone once done.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    // The copies answer like the originals.
    let mut d = dst.conn();
    let found: Vec<i64> = q(&mut d, &["BF.MEXISTS", "m:chain", "0", "50", "99"]);
    assert_eq!(found, [1, 1, 1]);
    let found: i64 = q(&mut d, &["BF.EXISTS", "m:large", "l49999"]);
    assert_eq!(found, 1);
    let typ: String = q(&mut d, &["TYPE", "m:string"]);
    assert_eq!(typ, "none");
    // The chain scales on at the destination as it would have at the source.
    madd(&mut c, "m:chain", "more", 500);
    madd(&mut d, "m:chain", "more", 500);
    assert_same_streams(&src, &dst, &["m:chain"]);
    // And the tool reads it with BF.STATS now.
    let (code, json) = stats_json(&dst, &["--pattern", "m:*"]);
    assert!(code <= 2);
    assert_eq!(json["source"], "BF.STATS");
    assert_eq!(json["summary"]["filters"], 5);
}

#[test]
fn migrate_ferrobloom_to_redisbloom() {
    let src = ferrobloom();
    let dst = redisbloom();
    let mut c = src.conn();
    let mut keys = shapes(&mut c);
    // FerroBloom's pow2 policy: RedisBloom's pre-2.2 layout, which it loads.
    q::<()>(
        &mut c,
        &["BF.RESERVE", "m:pow2", "0.01", "1000", "POLICY", "pow2"],
    );
    madd(&mut c, "m:pow2", "p", 5000);
    keys.push("m:pow2");
    let dir = workdir("fb-to-rb");
    let run = cli_in(
        &dir,
        &["migrate", "--from", &src.url(), "--to", &dst.url()],
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("copied and verified 6 filters"));
    assert_same_streams(&src, &dst, &keys);
    let mut d = dst.conn();
    let found: Vec<i64> = q(&mut d, &["BF.MEXISTS", "m:pow2", "p0", "p4999"]);
    assert_eq!(found, [1, 1]);
    // One key, renamed.
    let run = cli_in(
        &dir,
        &[
            "migrate",
            "--from",
            &src.url(),
            "--to",
            &dst.url(),
            "--key",
            "m:exp3",
            "--rename",
            "m:exp3:copy",
        ],
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("m:exp3 -> m:exp3:copy"));
    assert_eq!(stream(&mut c, "m:exp3"), stream(&mut d, "m:exp3:copy"));
}

#[test]
fn migrate_refuses_to_overwrite_without_force() {
    let src = ferrobloom();
    let dst = redisbloom();
    let mut c = src.conn();
    q::<()>(&mut c, &["BF.RESERVE", "a", "0.01", "1000"]);
    madd(&mut c, "a", "a", 300);
    q::<()>(&mut c, &["BF.RESERVE", "b", "0.01", "1000"]);
    let mut d = dst.conn();
    // The destination holds another filter named `a`, and a string `b`.
    q::<()>(&mut d, &["BF.RESERVE", "a", "0.001", "50", "NONSCALING"]);
    madd(&mut d, "a", "other", 10);
    q::<()>(&mut d, &["SET", "b", "precious"]);
    let before = stream(&mut d, "a");
    let dir = workdir("overwrite");
    let args = ["migrate", "--from", &src.url(), "--to", &dst.url()];
    let run = cli_in(&dir, &args, &[]);
    assert_eq!(run.code, 3);
    assert!(
        run.stderr.contains("already has 2 of these keys: a, b") && run.stderr.contains("--force"),
        "{}",
        run.stderr
    );
    // Nothing was touched.
    assert_eq!(stream(&mut d, "a"), before);
    let b: String = q(&mut d, &["GET", "b"]);
    assert_eq!(b, "precious");
    let run = cli_in(
        &dir,
        &[
            "migrate",
            "--from",
            &src.url(),
            "--to",
            &dst.url(),
            "--key",
            "a",
        ],
        &[],
    );
    assert_eq!(run.code, 3);
    assert!(run.stderr.contains("already has this key: a"));
    // Same server, same key.
    let run = cli_in(
        &dir,
        &[
            "migrate",
            "--from",
            &src.url(),
            "--to",
            &src.url(),
            "--key",
            "a",
        ],
        &[],
    );
    assert_eq!(run.code, 3);
    assert!(run.stderr.contains("same key"));
    // Not a filter.
    q::<()>(&mut c, &["SET", "s", "x"]);
    let run = cli_in(
        &dir,
        &[
            "migrate",
            "--from",
            &src.url(),
            "--to",
            &dst.url(),
            "--key",
            "s",
        ],
        &[],
    );
    assert_eq!(run.code, 3);
    assert!(run.stderr.contains("not a Bloom filter"));
    let run = cli_in(
        &dir,
        &[
            "migrate",
            "--from",
            &src.url(),
            "--to",
            &dst.url(),
            "--key",
            "zz",
        ],
        &[],
    );
    assert_eq!(run.code, 3);
    // --force replaces both.
    let mut forced = args.to_vec();
    forced.push("--force");
    let run = cli_in(&dir, &forced, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_same_streams(&src, &dst, &["a", "b"]);
}

/// The lines of a migration state file (JSON lines).
/// The same server under another spelling of its URL is recognised (by its
/// run_id), and a copy of a filter onto itself is refused instead of
/// replacing the filter with an empty one.
/// Windowed filters of both kinds, and items to look up in them.
fn windows(c: &mut Connection) -> Vec<String> {
    // An item window that has retired a generation, and a day window.
    q::<()>(
        c,
        &[
            "BF.RESERVE",
            "recent",
            "0.01",
            "3000",
            "WINDOW",
            "3000",
            "GENERATIONS",
            "3",
        ],
    );
    madd(c, "recent", "r-", 4500);
    q::<()>(c, &["BF.RESERVE", "day", "0.001", "100000", "WINDOW", "1d"]);
    madd(c, "day", "d-", 1000);
    (0..6000)
        .map(|i| format!("r-{i}"))
        .chain((0..2000).map(|i| format!("d-{i}")))
        .chain((0..2000).map(|i| format!("never-{i}")))
        .collect()
}

fn mexists(c: &mut Connection, key: &str, items: &[String]) -> Vec<i64> {
    redis::cmd("BF.MEXISTS")
        .arg(key)
        .arg(items)
        .query(c)
        .unwrap()
}

fn digest(c: &mut Connection, key: &str) -> String {
    let d: Vec<String> = q(c, &["DEBUG", "DIGEST-VALUE", key]);
    d[0].clone()
}

/// The copy of a windowed filter answers as its source and has its value.
fn assert_same_window(
    a: &mut Connection,
    ka: &str,
    b: &mut Connection,
    kb: &str,
    items: &[String],
) {
    let kind: String = q(b, &["TYPE", kb]);
    assert_eq!(kind, "FBwindows");
    assert_eq!(digest(a, ka), digest(b, kb), "{ka} -> {kb}");
    let answers = mexists(a, ka, items);
    assert!(answers.contains(&1) && answers.contains(&0));
    assert_eq!(answers, mexists(b, kb, items), "{ka} -> {kb}");
    for field in [
        "WINDOW",
        "GENERATIONS",
        "EPOCH",
        "ROTATIONS",
        "FORGOTTEN",
        "ERROR",
    ] {
        let x: Value = q(a, &["BF.INFO", ka, field]);
        let y: Value = q(b, &["BF.INFO", kb, field]);
        assert_eq!(x, y, "{field}");
    }
}

#[test]
fn migrate_copies_windowed_filters() {
    let src = ferrobloom();
    let dst = ferrobloom();
    let mut c = src.conn();
    let mut d = dst.conn();
    let items = windows(&mut c);
    q::<()>(&mut c, &["BF.RESERVE", "plain", "0.01", "1000"]);
    madd(&mut c, "plain", "p-", 100);
    q::<()>(&mut c, &["SET", "s", "text"]);
    let dir = workdir("windows");
    let args = ["migrate", "--from", &src.url(), "--to", &dst.url()];
    let run = cli_in(&dir, &args, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for key in ["recent", "day"] {
        let line = run
            .stdout
            .lines()
            .find(|l| l.starts_with(&format!("{key} -> {key}: windowed filter")))
            .unwrap_or_else(|| panic!("{}", run.stdout));
        let dv = digest(&mut c, key);
        assert!(line.contains(&format!("DEBUG DIGEST-VALUE {dv}")), "{line}");
        assert!(line.contains("BF.CARD and BF.INFO equal"), "{line}");
        assert_same_window(&mut c, key, &mut d, key, &items);
    }
    assert!(run.stdout.contains("plain -> plain: "));
    assert!(
        run.stdout.contains("copied and verified 3 filters"),
        "{}",
        run.stdout
    );
    // Only the string is left out: windows are no longer skipped.
    assert!(
        run.stderr.contains(
            "skipped 1 key (migrate copies Bloom, windowed and Cuckoo filters, \
             Count-Min and Top-K sketches and t-digests only): s (a string)"
        ),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("recent") && !run.stderr.contains("day"),
        "{}",
        run.stderr
    );
    assert!(temp_keys(&mut d).is_empty());

    // Onto existing keys: refused without --force, nothing touched.
    madd(&mut c, "day", "later-", 500);
    let before = digest(&mut d, "day");
    let run = cli_in(
        &dir,
        &[
            "migrate",
            "--from",
            &src.url(),
            "--to",
            &dst.url(),
            "--key",
            "day",
        ],
        &[],
    );
    assert_eq!(run.code, 3);
    assert!(
        run.stderr
            .contains("already has this key: day; nothing was copied (use --force to replace it)"),
        "{}",
        run.stderr
    );
    assert_eq!(digest(&mut d, "day"), before);
    let run = cli_in(
        &dir,
        &[
            "migrate",
            "--from",
            &src.url(),
            "--to",
            &dst.url(),
            "--pattern",
            "*",
        ],
        &[],
    );
    assert_eq!(run.code, 3);
    assert!(
        run.stderr
            .contains("already has 3 of these keys: day, plain, recent"),
        "{}",
        run.stderr
    );
    // With --force, replaced by the source's newer state.
    let run = cli_in(
        &dir,
        &[
            "migrate",
            "--from",
            &src.url(),
            "--to",
            &dst.url(),
            "--key",
            "day",
            "--force",
        ],
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_ne!(digest(&mut d, "day"), before);
    assert_same_window(&mut c, "day", &mut d, "day", &items);
    // A window replaces a plain filter with --force, without a note (both
    // are Bloom filters), and --rename names the copy.
    let run = cli_in(
        &dir,
        &[
            "migrate",
            "--from",
            &src.url(),
            "--to",
            &dst.url(),
            "--key",
            "recent",
            "--rename",
            "plain",
            "--force",
        ],
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stderr.contains("not a Bloom filter"), "{}", run.stderr);
    assert_same_window(&mut c, "recent", &mut d, "plain", &items);
    assert!(temp_keys(&mut d).is_empty());
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "state files left"
    );
}

/// One of the servers `make servers` builds (target/servers).
fn built_server(name: &str) -> PathBuf {
    let path = root().join("target/servers").join(name);
    assert!(
        path.is_file(),
        "{} is missing: run `make servers` (scripts/servers.sh)",
        path.display()
    );
    path
}

/// Windows move between servers of any RDB versions, their DUMP payloads
/// restamped to the destination's: Valkey 9's 80 to Redis 7.0's 10, 10
/// to Redis 7.4's 12, and 12 to 80 (Valkey 9 refuses 12, a version only
/// Redis wrote, although it is below its own).
#[test]
fn migrate_restamps_windows_between_rdb_versions() {
    setup();
    let start = |binary: PathBuf| {
        Server::start(ServerOpts::new(ModuleKind::FerroBloom).server_binary(binary))
    };
    let origin = start(built_server("valkey-9.1"));
    let chain = [
        (start(PathBuf::from("/usr/bin/redis-server")), 80, 10),
        (start(built_server("redis-7.4")), 10, 12),
        (start(built_server("valkey-9.1")), 12, 80),
    ];
    let mut c = origin.conn();
    let items = windows(&mut c);
    let dir = workdir("windows-restamped");
    let mut from = origin.url();
    for (to, was, becomes) in &chain {
        let args = ["migrate", "--from", &from, "--to", &to.url()];
        let run = cli_in(&dir, &args, &[]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let notice = format!(
            "ferrobloom: DUMP payloads of RDB version {was} are restamped to the destination's \
             RDB version {becomes} (version bytes and CRC rewritten"
        );
        assert_eq!(run.stderr.matches(&notice).count(), 1, "{}", run.stderr);
        let mut d = to.conn();
        for key in ["day", "recent"] {
            assert_same_window(&mut c, key, &mut d, key, &items);
            let payload: Vec<u8> = q(&mut d, &["DUMP", key]);
            assert_eq!(dump_parts(&payload).1, *becomes, "{key}");
        }
        assert!(temp_keys(&mut d).is_empty());
        from = to.url();
    }
}

#[test]
fn migrate_reports_windows_a_destination_cannot_take() {
    setup();
    // A window on Valkey 9 (RDB format 80) cannot RESTORE on Redis 7.0
    // (format 10) as it is, and a user that may not SET cannot learn the
    // destination's format to restamp it; the plain filter beside it is
    // copied.
    let src = Server::start(
        ServerOpts::new(ModuleKind::FerroBloom).server_binary(built_server("valkey-9.1")),
    );
    // Debian's Redis 7.0, whatever server the suite runs on
    // (`make test-valkey` sets REDIS_SERVER).
    let dst = Server::start(
        ServerOpts::new(ModuleKind::FerroBloom).server_binary("/usr/bin/redis-server"),
    );
    let mut c = src.conn();
    let mut d = dst.conn();
    windows(&mut c);
    q::<()>(&mut c, &["BF.RESERVE", "plain", "0.01", "1000"]);
    madd(&mut c, "plain", "p-", 100);
    q::<()>(
        &mut d,
        &[
            "ACL", "SETUSER", "mover", "on", ">secret", "~*", "&*", "+@all", "-set",
        ],
    );
    let to = format!("redis://mover:secret@127.0.0.1:{}/", dst.port());
    let label = format!("redis://mover:***@127.0.0.1:{}/", dst.port());
    let dir = workdir("windows-refused");
    let args = ["migrate", "--from", &src.url(), "--to", &to];
    let run = cli_in(&dir, &args, &[]);
    assert_eq!(run.code, 3);
    assert!(run.stdout.contains("plain -> plain: "), "{}", run.stdout);
    for key in ["day", "recent"] {
        assert!(
            run.stderr.contains(&format!(
                "{key}: {label} refused RESTORE (ERR DUMP payload version or checksum are wrong): the payload is in RDB format 80"
            )),
            "{}",
            run.stderr
        );
    }
    assert!(
        run.stderr.contains(
            " (not restamped to the destination's RDB version, which could not be learned: SET \
             and DUMP of a probe string at the temporary key: NOPERM"
        ),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("are restamped"), "{}", run.stderr);
    assert!(run.stderr.contains("(Redis 7.0."), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("2 filters were not copied (1 copied and verified): day, recent (see above)"),
        "{}",
        run.stderr
    );
    let n: i64 = q(&mut d, &["EXISTS", "day", "recent"]);
    assert_eq!(n, 0);
    assert!(temp_keys(&mut d).is_empty());
    // The state file remembers the plain filter: a second run retries the
    // windows only.
    let run = cli_in(&dir, &args, &[]);
    assert_eq!(run.code, 3);
    assert!(run.stderr.contains("resuming from"), "{}", run.stderr);
    assert!(!run.stdout.contains("plain -> plain"), "{}", run.stdout);

    // A destination whose module has no windows (RedisBloom): refused
    // before anything is written.
    let rb = redisbloom();
    let run = cli_in(
        &dir,
        &[
            "migrate",
            "--from",
            &src.url(),
            "--to",
            &rb.url(),
            "--key",
            "recent",
        ],
        &[],
    );
    assert_eq!(run.code, 3);
    assert!(
        run.stderr.contains("recent: ") && run.stderr.contains("cannot hold windowed filters"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("1 filter was not copied (0 copied and verified): recent"),
        "{}",
        run.stderr
    );
    let n: i64 = q(&mut rb.conn(), &["DBSIZE"]);
    assert_eq!(n, 0);
}

#[test]
fn migrate_refuses_to_copy_a_filter_onto_itself() {
    let server = ferrobloom();
    let mut c = server.conn();
    q::<()>(&mut c, &["BF.RESERVE", "sessions", "0.01", "1000"]);
    madd(&mut c, "sessions", "s", 95);
    let before = stream(&mut c, "sessions");
    let dir = workdir("onto-itself");
    let port = server.port();
    let spellings = [
        format!("redis://127.0.0.1:{port}"),
        format!("redis://localhost:{port}/"),
        format!("redis://127.0.0.1:{port}/0"),
    ];
    for to in &spellings {
        for selection in [["--key", "sessions"], ["--pattern", "s*"]] {
            let args = [
                "migrate",
                "--from",
                &server.url(),
                "--to",
                to,
                selection[0],
                selection[1],
                "--force",
            ];
            let run = cli_in(&dir, &args, &[]);
            assert_eq!(run.code, 3, "{}", run.stderr);
            assert!(
                run.stderr
                    .contains("source and destination are the same key; use --rename"),
                "{}",
                run.stderr
            );
        }
    }
    assert_eq!(stream(&mut c, "sessions"), before);
    let exists: i64 = q(&mut c, &["BF.EXISTS", "sessions", "s0"]);
    assert_eq!(exists, 1);
    // Under another name, or into another database, it is a real copy.
    let to = format!("redis://localhost:{port}/");
    let args = [
        "migrate",
        "--from",
        &server.url(),
        "--to",
        &to,
        "--key",
        "sessions",
        "--rename",
        "copy",
    ];
    assert_eq!(cli_in(&dir, &args, &[]).code, 0);
    assert_eq!(stream(&mut c, "copy"), before);
    let to = format!("redis://127.0.0.1:{port}/1");
    let args = [
        "migrate",
        "--from",
        &server.url(),
        "--to",
        &to,
        "--key",
        "sessions",
    ];
    assert_eq!(cli_in(&dir, &args, &[]).code, 0);
    let _: () = q(&mut c, &["SELECT", "1"]);
    assert_eq!(stream(&mut c, "sessions"), before);
}

/// A reader that goes away ends the tool quietly (killed by SIGPIPE like
/// any filter), never with a panic; absurd intervals are usage errors.
#[test]
fn closed_pipes_and_huge_intervals() {
    use std::os::unix::process::ExitStatusExt;
    let server = ferrobloom();
    let mut c = server.conn();
    q::<()>(&mut c, &["BF.RESERVE", "k", "0.01", "1000"]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_ferrobloom"))
        .args(["stats", "--url", &server.url(), "--watch", "0.1"])
        .env_remove("FERROBLOOM_URL")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run ferrobloom");
    drop(child.stdout.take());
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "still running with its reader gone"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.signal(), Some(libc::SIGPIPE), "{status:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    for interval in ["1e20", "86401", "inf", "0.05"] {
        let run = cli(&["stats", "--url", &server.url(), "--watch", interval]);
        assert_eq!(run.code, 64, "--watch {interval}: {}", run.stderr);
        assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    }
}

fn journal(path: &Path) -> Vec<Json> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A filter of about 64 MB: four SCANDUMP chunks (16 MiB at most each).
fn big_filter(c: &mut Connection) {
    q::<()>(c, &["BF.RESERVE", "big", "0.01", "48000000"]);
    madd(c, "big", "url-", 200_000);
}

#[test]
fn migrate_resumes_after_an_interruption() {
    let src = redisbloom();
    let dst = ferrobloom();
    let mut c = src.conn();
    big_filter(&mut c);
    let source = stream(&mut c, "big");
    let data: usize = source[1..].iter().map(|(_, d)| d.len()).sum();
    assert!(data > 63 << 20, "{data}");
    assert_eq!(source.len(), 1 + 4);

    let dir = workdir("resume");
    let state = dir.join("big.state");
    let state_arg = state.to_str().unwrap();
    let args = [
        "migrate",
        "--from",
        &src.url(),
        "--to",
        &dst.url(),
        "--key",
        "big",
        "--state-file",
        state_arg,
    ];
    let stop = |n: &'static str| [("FERROBLOOM_MIGRATE_STOP_AFTER_CHUNKS", n)];

    // Stopped after two chunks: the state records where.
    let started = Instant::now();
    let run = cli_in(&dir, &args, &stop("2"));
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert!(
        run.stderr.contains("Run the same command again to resume"),
        "{}",
        run.stderr
    );
    let lines = journal(&state);
    assert_eq!(lines[0]["version"], 2);
    assert_eq!(lines[0]["selection"], "key:626967");
    let start = &lines[1]["start"];
    assert_eq!(start["key_text"], "big");
    let header: String = source[0].1.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(start["header"], header);
    let cur = &lines.last().unwrap()["loaded"];
    assert_eq!(cur["chunks_loaded"], 2);
    assert_eq!(cur["next_iterator"], source[2].0);
    assert_eq!(
        cur["bytes_loaded"],
        (source[1].1.len() + source[2].1.len()) as u64
    );
    // The destination holds the filter's shape and the first two chunks,
    // under a temporary name: nothing is visible as `big` yet.
    let mut d = dst.conn();
    let exists: i64 = q(&mut d, &["EXISTS", "big"]);
    assert_eq!(exists, 0);
    let temp = temp_keys(&mut d);
    assert_eq!(temp.len(), 1, "{temp:?}");
    assert!(run.stderr.contains(&temp[0]), "{}", run.stderr);
    let partial = stream(&mut d, &temp[0]);
    assert_eq!(partial[0], source[0]);
    assert_eq!(partial[1], source[1]);
    assert_eq!(partial[2], source[2]);
    assert_ne!(partial[3], source[3]);

    // Stopped again, one chunk further.
    let run = cli_in(&dir, &args, &stop("1"));
    assert_eq!(run.code, 4);
    assert!(run.stderr.contains("resuming"), "{}", run.stderr);
    let lines = journal(&state);
    assert_eq!(lines.len(), 5, "{lines:?}");
    assert_eq!(lines.last().unwrap()["loaded"]["chunks_loaded"], 3);

    // The same command completes it, and verifies.
    let run = cli_in(&dir, &args, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("big -> big"), "{}", run.stdout);
    assert!(run.stdout.contains("4 chunks (resumed)"), "{}", run.stdout);
    assert!(run.stdout.contains("verified (xxh3-128"));
    assert!(!state.exists());
    assert!(stream(&mut d, "big") == source);
    assert!(temp_keys(&mut d).is_empty());
    let card: i64 = q(&mut d, &["BF.CARD", "big"]);
    let expected: i64 = q(&mut c, &["BF.CARD", "big"]);
    assert_eq!(card, expected);
    eprintln!(
        "64 MB migration with two interruptions: {:?}",
        started.elapsed()
    );

    // Afterwards, the same command refuses to overwrite the copy.
    let run = cli_in(&dir, &args, &[]);
    assert_eq!(run.code, 3);
    assert!(run.stderr.contains("already has this key"));
}

#[test]
fn migrate_resume_notices_changes() {
    let src = ferrobloom();
    let dst = ferrobloom();
    let mut c = src.conn();
    // Four links: four chunks.
    q::<()>(&mut c, &["BF.RESERVE", "chain", "0.01", "10"]);
    madd(&mut c, "chain", "", 100);
    let dir = workdir("changes");
    let args = [
        "migrate",
        "--from",
        &src.url(),
        "--to",
        &dst.url(),
        "--key",
        "chain",
    ];
    let stop = [("FERROBLOOM_MIGRATE_STOP_AFTER_CHUNKS", "2")];

    // The source changes during the interruption: refused, then --force
    // starts over.
    assert_eq!(cli_in(&dir, &args, &stop).code, 4);
    let _: i64 = q(&mut c, &["BF.ADD", "chain", "a new item"]);
    let run = cli_in(&dir, &args, &[]);
    assert_eq!(run.code, 3);
    assert!(
        run.stderr.contains("changed at the source"),
        "{}",
        run.stderr
    );
    let mut forced = args.to_vec();
    forced.push("--force");
    let run = cli_in(&dir, &forced, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_same_streams(&src, &dst, &["chain"]);

    // The destination's copied part is damaged during the interruption: the
    // verification catches it.
    let mut d = dst.conn();
    q::<()>(&mut d, &["DEL", "chain"]);
    assert_eq!(cli_in(&dir, &args, &stop).code, 4);
    let first = stream(&mut c, "chain")[1].clone();
    let garbage = vec![0xA5u8; first.1.len()];
    let temp = temp_keys(&mut d);
    assert_eq!(temp.len(), 1, "{temp:?}");
    let _: () = redis::cmd("BF.LOADCHUNK")
        .arg(&temp[0])
        .arg(first.0)
        .arg(garbage)
        .query(&mut d)
        .unwrap();
    let run = cli_in(&dir, &args, &[]);
    assert_eq!(run.code, 3);
    assert!(run.stderr.contains("VERIFICATION FAILED"), "{}", run.stderr);
    assert!(run.stderr.contains("xxh3-128"));
    // The broken copy is deleted, never renamed into place.
    let exists: i64 = q(&mut d, &["EXISTS", "chain"]);
    assert_eq!(exists, 0);
    assert!(temp_keys(&mut d).is_empty());

    // It is not resumed: the next run copies the filter from the start.
    let run = cli_in(&dir, &args, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stdout.contains("resumed"), "{}", run.stdout);
    assert_same_streams(&src, &dst, &["chain"]);
    q::<()>(&mut d, &["DEL", "chain"]);
    assert_eq!(cli_in(&dir, &args, &stop).code, 4);

    // A state file of another migration is not used.
    std::fs::copy(first_state(&dir), dir.join("x.state")).unwrap();
    let other = cli_in(
        &dir,
        &[
            "migrate",
            "--from",
            &src.url(),
            "--to",
            &dst.url(),
            "--pattern",
            "c*",
            "--state-file",
            "x.state",
        ],
        &[],
    );
    assert_eq!(other.code, 3);
    assert!(
        other.stderr.contains("records another migration"),
        "{}",
        other.stderr
    );

    let run = cli_in(&dir, &forced, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_same_streams(&src, &dst, &["chain"]);
}

/// The temporary keys of unfinished copies at a destination.
fn temp_keys(c: &mut Connection) -> Vec<String> {
    let mut keys: Vec<String> = q(c, &["KEYS", "ferrobloom-migrate:*"]);
    keys.sort();
    keys
}

/// The default state file left in `dir`.
fn first_state(dir: &Path) -> PathBuf {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("ferrobloom-migrate-")
        })
        .expect("a state file")
}

/// A filter of about 23.7 MB (two 16 MiB SCANDUMP chunks).
fn filter_of_24_mb(c: &mut Connection) -> Vec<(i64, Vec<u8>)> {
    q::<()>(c, &["BF.RESERVE", "big", "0.01", "17200000"]);
    madd(c, "big", "url-", 20_000);
    let source = stream(c, "big");
    let data: usize = source[1..].iter().map(|(_, d)| d.len()).sum();
    assert!((23_000_000..24_000_000).contains(&data), "{data}");
    source
}

fn dbsize(c: &mut Connection) -> i64 {
    q(c, &["DBSIZE"])
}

/// BF.LOADCHUNK calls a server has answered (INFO commandstats).
fn loadchunk_calls(c: &mut Connection) -> u64 {
    let text: String = q(c, &["INFO", "commandstats"]);
    text.lines()
        .find_map(|l| l.strip_prefix("cmdstat_bf.loadchunk:calls="))
        .and_then(|v| v.split(',').next())
        .map_or(0, |v| v.parse().unwrap())
}

/// A copy is loaded under a temporary name and renamed into place only
/// once verified: an interrupted copy never shows as the filter. Chunks are
/// small enough for a destination with little memory, and a destination
/// without the memory is refused before anything is written.
#[test]
fn migrate_never_shows_a_partial_copy_under_its_final_name() {
    let src = ferrobloom();
    let mut c = src.conn();
    let source = filter_of_24_mb(&mut c);
    let data: u64 = source[1..].iter().map(|(_, d)| d.len() as u64).sum();
    let dst = Server::start(ServerOpts::new(ModuleKind::FerroBloom).config("maxmemory", "50mb"));
    let mut d = dst.conn();
    let dir = workdir("temp-key");
    let args = [
        "migrate",
        "--from",
        &src.url(),
        "--to",
        &dst.url(),
        "--key",
        "big",
    ];

    // Stopped after the first SCANDUMP chunk: nothing under `big`.
    let run = cli_in(
        &dir,
        &args,
        &[("FERROBLOOM_MIGRATE_STOP_AFTER_CHUNKS", "1")],
    );
    assert_eq!(run.code, 4, "{}", run.stderr);
    let exists: i64 = q(&mut d, &["EXISTS", "big"]);
    assert_eq!(exists, 0);
    let temp = temp_keys(&mut d);
    assert_eq!(temp.len(), 1);
    for words in [
        "partly copied",
        temp[0].as_str(),
        "nothing is visible under big",
        "Run the same command again to resume",
        "to give up instead, delete",
    ] {
        assert!(run.stderr.contains(words), "{words}: {}", run.stderr);
    }
    // The resume completes under the 50 MB limit (16 MiB chunks did not).
    let run = cli_in(&dir, &args, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(stream(&mut d, "big") == source);
    assert!(temp_keys(&mut d).is_empty());
    assert_eq!(dbsize(&mut d), 1);

    // Too little memory: refused before anything is written.
    let small = Server::start(ServerOpts::new(ModuleKind::FerroBloom).config("maxmemory", "20mb"));
    let mut s = small.conn();
    let args_small = [
        "migrate",
        "--from",
        &src.url(),
        "--to",
        &small.url(),
        "--key",
        "big",
    ];
    let run = cli_in(&dir, &args_small, &[]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(run.stderr.contains("over maxmemory"), "{}", run.stderr);
    assert!(run.stderr.contains("nothing was copied"), "{}", run.stderr);
    assert_eq!(dbsize(&mut s), 0);
    assert_eq!(loadchunk_calls(&mut s), 0);

    // --chunk-size sets the size of each BF.LOADCHUNK.
    let third = ferrobloom();
    let mut t = third.conn();
    let mut chunked = args.to_vec();
    chunked[4] = &*Box::leak(third.url().into_boxed_str());
    chunked.extend(["--chunk-size", "256KiB"]);
    let run = cli_in(&dir, &chunked, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(stream(&mut t, "big") == source);
    let calls = loadchunk_calls(&mut t);
    // The header, then 256 KiB pieces (16 MiB SCANDUMP chunks split evenly).
    assert_eq!(calls, 1 + data.div_ceil(256 << 10), "{calls}");

    // Ctrl-C: stops between two chunks, says what is left; the final name
    // stays free, and the same command resumes.
    let fourth = ferrobloom();
    let mut f = fourth.conn();
    let state = dir.join("sigint.state");
    let child = Command::new(env!("CARGO_BIN_EXE_ferrobloom"))
        .args([
            "migrate",
            "--from",
            &src.url(),
            "--to",
            &fourth.url(),
            "--key",
            "big",
            "--chunk-size",
            "1KiB",
            "--state-file",
            state.to_str().unwrap(),
        ])
        .current_dir(&dir)
        .env_remove("FERROBLOOM_MIGRATE_STOP_AFTER_CHUNKS")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run ferrobloom");
    let deadline = Instant::now() + Duration::from_secs(60);
    while loadchunk_calls(&mut f) < 100 {
        assert!(Instant::now() < deadline, "no chunk arrived");
        std::thread::sleep(Duration::from_millis(10));
    }
    // SAFETY: the PID is our own child's, which has not been waited for.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert!(stderr.contains("Run the same command again"), "{stderr}");
    let exists: i64 = q(&mut f, &["EXISTS", "big"]);
    assert_eq!(exists, 0);
    assert_eq!(temp_keys(&mut f).len(), 1);
    let resume = [
        "migrate",
        "--from",
        &src.url(),
        "--to",
        &fourth.url(),
        "--key",
        "big",
        "--state-file",
        state.to_str().unwrap(),
    ];
    let run = cli_in(&dir, &resume, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(stream(&mut f, "big") == source);
    assert!(temp_keys(&mut f).is_empty());
}

/// With --force, the old filter stays readable until the verified copy
/// replaces it in one step; a key created meanwhile is not overwritten
/// without --force.
#[test]
fn migrate_force_replaces_in_one_step() {
    let src = ferrobloom();
    let dst = ferrobloom();
    let mut c = src.conn();
    q::<()>(&mut c, &["BF.RESERVE", "a", "0.01", "1000"]);
    madd(&mut c, "a", "new", 200);
    let mut d = dst.conn();
    q::<()>(&mut d, &["BF.RESERVE", "a", "0.01", "1000"]);
    madd(&mut d, "a", "old", 200);
    let dir = workdir("force-one-step");
    let args = [
        "migrate",
        "--from",
        &src.url(),
        "--to",
        &dst.url(),
        "--key",
        "a",
        "--force",
        "--chunk-size",
        "1KiB",
    ];
    // Interrupted: the old filter is untouched.
    let run = cli_in(
        &dir,
        &args,
        &[("FERROBLOOM_MIGRATE_STOP_AFTER_CHUNKS", "1")],
    );
    assert_eq!(run.code, 4, "{}", run.stderr);
    let old: i64 = q(&mut d, &["BF.EXISTS", "a", "old7"]);
    assert_eq!(old, 1);
    let run = cli_in(&dir, &args, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_same_streams(&src, &dst, &["a"]);
    assert!(temp_keys(&mut d).is_empty());
}

/// Options that cannot work together are usage errors, before any server
/// is contacted.
#[test]
fn migrate_refuses_options_that_conflict() {
    let src = ferrobloom();
    let dst = ferrobloom();
    let mut c = src.conn();
    q::<()>(&mut c, &["BF.RESERVE", "s1", "0.01", "100"]);
    q::<()>(&mut c, &["BF.RESERVE", "s2", "0.01", "100"]);
    let (from, to) = (src.url(), dst.url());
    let base = ["migrate", "--from", &from, "--to", &to];
    for extra in [
        &["--pattern", "s*", "--rename", "z", "--force"][..],
        &["--pattern", "s*", "--rename", "z"],
        &["--rename", "z"],
        &["--key", "s1", "--pattern", "s*"],
        &["--key", "s1", "--chunk-size", "0"],
        &["--key", "s1", "--chunk-size", "17MiB"],
        &["--key", "s1", "--chunk-size", "512"],
        &["--key", "s1", "--chunk-size", "4XB"],
        &["--key", "s1", "--chunk-size", "-5"],
    ] {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        let run = cli(&args);
        assert_eq!(run.code, 64, "{extra:?}: {}", run.stderr);
        assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    }
    let mut d = dst.conn();
    assert_eq!(dbsize(&mut d), 0);
}

/// A migration says which keys it left out and why, and --force says when
/// it replaces a key that is not a filter.
#[test]
fn migrate_reports_what_it_skips() {
    let src = redisbloom();
    let dst = ferrobloom();
    let mut c = src.conn();
    q::<()>(&mut c, &["BF.RESERVE", "a", "0.01", "100"]);
    q::<()>(&mut c, &["CF.RESERVE", "cf", "1000"]);
    q::<()>(&mut c, &["SET", "s", "x"]);
    let mut d = dst.conn();
    q::<()>(&mut d, &["SET", "a", "precious"]);
    let dir = workdir("skips");
    let args = [
        "migrate",
        "--from",
        &src.url(),
        "--to",
        &dst.url(),
        "--force",
    ];
    let run = cli_in(&dir, &args, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for words in [
        "skipped 1 key (migrate copies Bloom, windowed and Cuckoo filters, Count-Min and \
         Top-K sketches and t-digests only)",
        "s (a string)",
        "--force replaces a key that is not a Bloom filter: a (a string)",
    ] {
        assert!(run.stderr.contains(words), "{words}: {}", run.stderr);
    }
    assert!(!run.stderr.contains("cf ("), "{}", run.stderr);
    let kind: String = q(&mut d, &["TYPE", "a"]);
    assert_eq!(kind, "MBbloom--");
    // The (empty) Cuckoo filter is copied too.
    let kind: String = q(&mut d, &["TYPE", "cf"]);
    assert_eq!(kind, "MBbloomCF");
    assert_eq!(dbsize(&mut d), 2);
    // A one-key migration of another type names it.
    let run = cli_in(
        &dir,
        &[
            "migrate",
            "--from",
            &src.url(),
            "--to",
            &dst.url(),
            "--key",
            "s",
        ],
        &[],
    );
    assert_eq!(run.code, 3);
    assert!(
        run.stderr.contains("s is a string, not a Bloom filter"),
        "{}",
        run.stderr
    );
}

/// A migration from or to a server without a Bloom filter module is an
/// error, not a successful copy of nothing.
#[test]
fn migrate_refuses_servers_without_a_bloom_module() {
    setup();
    let plain = Server::start(ServerOpts::new(ModuleKind::None));
    let bloom = ferrobloom();
    let mut c = bloom.conn();
    q::<()>(&mut c, &["BF.RESERVE", "a", "0.01", "100"]);
    let dir = workdir("no-module");
    for (from, to) in [(plain.url(), bloom.url()), (bloom.url(), plain.url())] {
        let run = cli_in(&dir, &["migrate", "--from", &from, "--to", &to], &[]);
        assert_eq!(run.code, 3, "{}", run.stderr);
        assert!(
            run.stderr.contains("no Bloom filter module on"),
            "{}",
            run.stderr
        );
    }
    let mut p = plain.conn();
    assert_eq!(dbsize(&mut p), 0);
}

// ---------------------------------------------------------------------------
// cluster

#[test]
fn migrate_and_stats_with_a_cluster() {
    let nodes = cluster();
    let seed = format!(
        "redis+cluster://127.0.0.1:{},127.0.0.1:{}",
        nodes[0].port(),
        nodes[1].port()
    );
    let standalone = redisbloom();
    let mut c = standalone.conn();
    let mut keys: Vec<String> = Vec::new();
    for i in 0..12 {
        let key = format!("bf:{i}");
        q::<()>(&mut c, &["BF.RESERVE", &key, "0.01", "1000", "NONSCALING"]);
        madd(&mut c, &key, "x", 80 * i);
        keys.push(key);
    }
    let dir = workdir("cluster");
    let run = cli_in(
        &dir,
        &[
            "migrate",
            "--from",
            &standalone.url(),
            "--to",
            &seed,
            "--pattern",
            "bf:*",
        ],
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("copied and verified 12 filters"));
    // The filters are spread over the masters.
    let per_node: Vec<i64> = nodes
        .iter()
        .map(|n| q(&mut n.conn(), &["DBSIZE"]))
        .collect();
    assert_eq!(per_node.iter().sum::<i64>(), 12);
    assert!(
        per_node.iter().filter(|n| **n > 0).count() >= 2,
        "{per_node:?}"
    );
    // Each copy equals its source.
    let client = redis::cluster::ClusterClient::new(vec![nodes[0].url()]).unwrap();
    let mut cc = client.get_connection().unwrap();
    for key in &keys {
        let mut it = 0i64;
        loop {
            let a: (i64, Vec<u8>) = redis::cmd("BF.SCANDUMP")
                .arg(key)
                .arg(it)
                .query(&mut c)
                .unwrap();
            let b: (i64, Vec<u8>) = redis::cmd("BF.SCANDUMP")
                .arg(key)
                .arg(it)
                .query(&mut cc)
                .unwrap();
            assert_eq!(a, b, "{key}");
            if a.0 == 0 {
                break;
            }
            it = a.0;
        }
    }

    // stats sees every filter of every master; a plain URL to one node is
    // recognised as a cluster.
    for url in [seed.clone(), nodes[2].url()] {
        let run = cli(&["stats", "--url", &url, "--json"]);
        // bf:11 and bf:10 hold 880 and 800 of 1000: warnings.
        assert_eq!(run.code, 1, "{}", run.stderr);
        let json = run.json();
        assert_eq!(json["cluster_nodes"], 3);
        assert_eq!(json["summary"]["filters"], 12);
        assert_eq!(json["summary"]["warning"], 2);
        assert_eq!(keys_in_order(&json)[..3], ["bf:11", "bf:10", "bf:9"]);
    }
    let table = cli(&["stats", "--url", &seed]);
    assert!(table.stdout.contains("(cluster, 3 masters)"));

    // And back, from the cluster to a standalone FerroBloom.
    let back = ferrobloom();
    let run = cli_in(
        &dir,
        &[
            "migrate",
            "--from",
            &seed,
            "--to",
            &back.url(),
            "--pattern",
            "bf:*",
        ],
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
    assert_same_streams(&standalone, &back, &refs);
}

// ---------------------------------------------------------------------------
// examples/crawler_dedup.py

fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("FERROBLOOM_PYTHON") {
        return PathBuf::from(p);
    }
    let p = root().join("target/oracle-venv/bin/python");
    assert!(
        p.exists(),
        "{} not found: run scripts/oracle.sh (it installs redis-py there), or set FERROBLOOM_PYTHON",
        p.display()
    );
    p
}

/// The example crawls 60 simulated days of 500 pages with a 10-day time
/// window, a day lasting 0.2 s (`WINDOW 2s` standing for `WINDOW 10d`: 12 s
/// of real time): no URL is crawled twice within the window, URLs older
/// than it are crawled again, the measured false positive rate is within
/// the target and agrees with the filter's own estimate, memory stays what
/// BF.PLAN said, and the server agrees.
#[test]
fn crawler_example_forgets_after_the_window_in_fixed_memory() {
    let server = ferrobloom();
    let mut c = server.conn();
    // What a previous run left is deleted by the example.
    let _: i64 = q(&mut c, &["BF.ADD", "crawl:seen", "x"]);
    let started = Instant::now();
    let out = Command::new(python())
        .arg(root().join("examples/crawler_dedup.py"))
        .args([
            "--days",
            "60",
            "--pages-per-day",
            "500",
            "--window-days",
            "10",
            "--generations",
            "4",
            "--day-seconds",
            "0.2",
        ])
        .env("FERROBLOOM_URL", server.url())
        .output()
        .expect("run python");
    let took = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}{stderr}");
    assert!(out.status.success(), "exit {:?}", out.status);
    // Real time: the days are slept through, not skipped.
    assert!(took >= Duration::from_millis(11_900), "{took:?}");
    assert!(stdout.contains("deleted crawl:seen left by a previous run"));
    assert!(stdout.contains(
        "plan crawl:seen: WINDOW 2s standing for WINDOW 10d (a simulated day lasts 0.2 s): \
         5,000 URLs per window (10 days of 500) at error 0.001"
    ));
    assert!(stdout.contains("forgets at most 2.5 days (500ms) late"));
    assert!(stdout.contains("false positives: "));
    assert!(stdout.contains("target 0.100%"));
    let summary: Json = serde_json::from_str(
        stdout
            .lines()
            .last()
            .and_then(|l| l.strip_prefix("summary "))
            .expect("a summary line"),
    )
    .unwrap();
    assert_eq!(summary["days"], 60);
    assert_eq!(summary["window"], "2s");
    assert_eq!(summary["window_stands_for"], "10d");
    assert_eq!(summary["generation_span"], "500ms");
    assert_eq!(summary["pages"], 30_000);
    assert_eq!(summary["capacity"], 5_000);
    assert_eq!(summary["window_violations"], 0);
    let n = |field: &str| {
        summary[field]
            .as_f64()
            .unwrap_or_else(|| panic!("{field} in {summary}"))
    };
    // URLs come back after the window: crawled again, and looked up after
    // they were forgotten.
    assert!(n("recrawled") > 10_000.0, "{summary}");
    assert!(n("duplicates_skipped") > 10_000.0, "{summary}");
    assert!(n("forgotten_urls") > 10_000.0, "{summary}");
    // The false positive rate: within the target, and as many as the
    // filter's own estimate from its bits predicts (a Poisson count: six
    // standard deviations either way).
    assert!(n("absent_urls") > 15_000.0, "{summary}");
    assert!(n("false_positive_rate") < 0.002, "{summary}");
    assert_eq!(summary["fpr_within_target"], true);
    let (fps, expected) = (n("false_positives"), n("expected_false_positives"));
    assert!(expected > 3.0, "{summary}");
    assert!(
        (fps - expected).abs() <= 6.0 * expected.sqrt() + 3.0,
        "{summary}"
    );
    // The pages arrived on schedule: a window held the capacity, give or
    // take a crawl round of 63 pages (fewer if a busy machine made the
    // run late).
    assert!(
        (4_000.0..=5_126.0).contains(&n("most_urls_in_a_window")),
        "{summary}"
    );
    // The bit arrays are the plan's whenever no generation is over its
    // share; a round of jitter may put one just over, and it grows.
    assert_eq!(summary["memory_as_planned"], true, "{summary}");
    if n("days_grown") == 0.0 {
        assert_eq!(summary["filter_bytes"], summary["planned_bytes"]);
    } else {
        assert!(n("fullest_generation_share") > 1.0, "{summary}");
    }
    assert!(n("memory_first_day") >= n("planned_bytes"), "{summary}");

    // The server agrees: one windowed filter of the planned size, its
    // window in seconds, generations retired as the days went by.
    let kind: String = redis::cmd("TYPE").arg("crawl:seen").query(&mut c).unwrap();
    assert_eq!(kind, "FBwindows");
    let window: Vec<String> = q(&mut c, &["BF.INFO", "crawl:seen", "WINDOW"]);
    assert_eq!(window, ["2s"]);
    let size: Vec<u64> = q(&mut c, &["BF.INFO", "crawl:seen", "SIZE"]);
    assert_eq!(summary["filter_bytes"], size[0]);
    let memory: u64 = q(&mut c, &["MEMORY", "USAGE", "crawl:seen"]);
    assert_eq!(summary["memory_last_day"], memory);
    // 60 days are 24 generations of 2.5 days; the last write, in the 24th,
    // sees it and the 4 before it, the 19 older ones retired (give or take
    // one if the last round ran late or early). Rounds a busy machine made
    // the example skip move its schedule later (`schedule_slip_ms`): the
    // run lasts that much longer, so up to that many more generation spans
    // (500 ms) are retired.
    let rotations: Vec<u64> = q(&mut c, &["BF.INFO", "crawl:seen", "ROTATIONS"]);
    assert_eq!(summary["generations_retired"], rotations[0]);
    let slipped = (n("schedule_slip_ms") / 500.0).ceil() as u64;
    assert!(
        (18..=20 + slipped).contains(&rotations[0]),
        "{rotations:?} {summary}"
    );
    let info: String = q(&mut c, &["INFO", "bf"]);
    assert!(info.contains("bf_windows:1\r\n"), "{info}");
    assert!(
        info.contains(&format!("bf_window_rotations:{}\r\n", rotations[0])),
        "{info}"
    );

    // The server URL can also be given as an argument; the default is
    // 127.0.0.1:6379 (not used here).
    let out = Command::new(python())
        .arg(root().join("examples/crawler_dedup.py"))
        .args([
            "--url",
            &server.url(),
            "--days",
            "5",
            "--quiet",
            "--prefix",
            "small",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(summary
        .lines()
        .last()
        .unwrap()
        .starts_with("summary {\"days\": 5, \"day_seconds\": 0.2, \"window\": \"6s\", \"window_stands_for\": \"30d\""));

    // WINDOW takes whole seconds: 30 days of 0.15 s are refused as a usage
    // error before anything is created.
    let out = Command::new(python())
        .arg(root().join("examples/crawler_dedup.py"))
        .args([
            "--url",
            &server.url(),
            "--day-seconds",
            "0.15",
            "--prefix",
            "odd",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--window-days x --day-seconds is 4.5 s: WINDOW takes whole seconds"),
        "{stderr}"
    );
    let exists: i64 = q(&mut c, &["EXISTS", "odd"]);
    assert_eq!(exists, 0);
}

// ---------------------------------------------------------------------------
// time limits, servers without a module, arguments, key names (issue 17)

/// Runs the tool and waits at most `limit` for it: a run still going then
/// is killed (by its PID, our own child) and reported as exit -1, so a test
/// fails instead of hanging.
fn cli_within(args: &[&str], env: &[(&str, &str)], limit: Duration) -> (Run, Duration) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ferrobloom"));
    cmd.args(args)
        .current_dir(std::env::temp_dir())
        .env_remove("FERROBLOOM_URL")
        .env_remove("FERROBLOOM_TIMEOUT")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let started = Instant::now();
    let mut child = cmd.spawn().expect("run ferrobloom");
    let code = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status.code().unwrap_or(-1);
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break -1;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let elapsed = started.elapsed();
    let mut stdout = String::new();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut stdout).unwrap();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    eprintln!(
        "$ ferrobloom {}\n[exit {code} after {elapsed:?}]\n{stdout}{stderr}",
        args.join(" ")
    );
    (
        Run {
            code,
            stdout,
            stderr,
        },
        elapsed,
    )
}

/// A listener that accepts connections (the kernel completes them) and
/// never answers, like a hung server.
#[test]
fn a_server_that_never_answers_times_out() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let addr = format!("127.0.0.1:{port}");
    let url = format!("redis://{addr}/");
    let guard = Duration::from_secs(30);
    let message = |secs: &str| format!("{addr} did not answer within {secs} s (--timeout)");

    let (run, took) = cli_within(&["stats", "--url", &url, "--timeout", "1"], &[], guard);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(run.stderr.contains(&message("1")), "{}", run.stderr);
    assert!(took < Duration::from_secs(10), "{took:?}");

    // The handshake (AUTH, SELECT) is bounded too; the option can come
    // before the command, or from the environment.
    let with_auth = format!("redis://user:secret@{addr}/3");
    for (args, env) in [
        (
            vec!["stats", "--url", with_auth.as_str(), "--timeout", "0.5"],
            vec![],
        ),
        (
            vec!["--timeout", "0.5", "stats", "--url", url.as_str(), "--json"],
            vec![],
        ),
        (
            vec!["stats", "--url", url.as_str()],
            vec![("FERROBLOOM_TIMEOUT", "0.5")],
        ),
    ] {
        let (run, took) = cli_within(&args, &env, guard);
        assert_eq!(run.code, 3, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(&message("0.5")), "{}", run.stderr);
        assert!(!run.stderr.contains("secret"), "{}", run.stderr);
        assert!(took < Duration::from_secs(10), "{args:?}: {took:?}");
    }

    // A cluster URL, and migrate, whose default limit is longer.
    let cluster_url = format!("redis+cluster://{addr}");
    let (run, took) = cli_within(
        &["stats", "--url", &cluster_url, "--timeout", "1"],
        &[],
        guard,
    );
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(run.stderr.contains(&message("1")), "{}", run.stderr);
    assert!(took < Duration::from_secs(10), "{took:?}");
    let (run, took) = cli_within(
        &["migrate", "--from", &url, "--to", &url, "--timeout", "1"],
        &[],
        guard,
    );
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(run.stderr.contains(&message("1")), "{}", run.stderr);
    assert!(took < Duration::from_secs(10), "{took:?}");

    // Bad limits are usage errors.
    for bad in ["0", "-1", "abc", "inf", "NaN", "1e9", "0.01"] {
        let (run, _) = cli_within(&["stats", "--url", &url, "--timeout", bad], &[], guard);
        assert_eq!(run.code, 64, "--timeout {bad}: {}", run.stderr);
        assert!(
            run.stderr
                .contains("expected a number of seconds from 0.1 to 86400"),
            "{}",
            run.stderr
        );
    }
    let (run, _) = cli_within(
        &["stats", "--url", &url],
        &[("FERROBLOOM_TIMEOUT", "soon")],
        guard,
    );
    assert_eq!(run.code, 64, "{}", run.stderr);
    drop(listener);
}

#[test]
fn stats_refuses_a_server_without_a_bloom_module() {
    setup();
    let plain = Server::start(ServerOpts::new(ModuleKind::None));
    let mut c = plain.conn();
    q::<()>(&mut c, &["SET", "a-string", "x"]);
    let addr = format!("127.0.0.1:{}", plain.port());
    let expected = format!("no Bloom filter module on {addr}");
    for extra in [&[][..], &["--json"][..], &["--pattern", "nothing*"][..]] {
        let mut args = vec!["stats", "--url", plain.url().leak()];
        args.extend(extra);
        let run = cli(&args);
        assert_eq!(run.code, 3, "{args:?}: {}", run.stdout);
        assert!(run.stderr.contains(&expected), "{}", run.stderr);
        assert!(!run.stdout.contains("0 Bloom filters"), "{}", run.stdout);
    }

    // With COMMAND denied by ACLs, the probe asks BF.INFO itself.
    q::<()>(
        &mut c,
        &[
            "ACL", "SETUSER", "app", "on", ">pw", "~*", "&*", "+@all", "-command",
        ],
    );
    let denied = format!("redis://app:pw@{addr}/");
    let run = cli(&["stats", "--url", &denied]);
    assert_eq!(run.code, 3, "{}", run.stdout);
    assert!(run.stderr.contains(&expected), "{}", run.stderr);

    // Both modules pass, with or without COMMAND.
    for server in [ferrobloom(), redisbloom()] {
        let mut c = server.conn();
        q::<()>(
            &mut c,
            &[
                "ACL", "SETUSER", "app", "on", ">pw", "~*", "&*", "+@all", "-command",
            ],
        );
        q::<()>(&mut c, &["BF.RESERVE", "half", "0.01", "1000"]);
        madd(&mut c, "half", "x", 500);
        let restricted = format!("redis://app:pw@127.0.0.1:{}/", server.port());
        for url in [server.url(), restricted] {
            let run = cli(&["stats", "--url", &url, "--json"]);
            assert_eq!(run.code, 0, "{url}: {}", run.stderr);
            assert_eq!(run.json()["summary"]["filters"], 1);
        }
    }
}

#[test]
fn plan_takes_whole_numbers_in_several_forms() {
    let reference = cli(&["plan", "--capacity", "1000000", "--error", "0.01", "--json"]).json();
    for form in ["1e6", "1_000_000", "1,000,000", "1.0e6", "1000000.0"] {
        let run = cli(&["plan", "--capacity", form, "--error", "0.01", "--json"]);
        assert_eq!(run.code, 0, "{form}: {}", run.stderr);
        assert_eq!(run.json(), reference, "{form}");
    }
    let items = cli(&[
        "plan",
        "--capacity",
        "1e3",
        "--error",
        "0.01",
        "--items",
        "2.5e3",
        "--json",
    ])
    .json();
    assert_eq!(items["items"], 2500);
    for (args, message) in [
        (
            &["--capacity", "1.5", "--error", "0.01"][..],
            "1.5 is not a whole number",
        ),
        (
            &["--capacity", "-5", "--error", "0.01"][..],
            "must be positive",
        ),
        (
            &["--capacity", "0", "--error", "0.01"][..],
            "must be positive",
        ),
        (&["--capacity", "1e30", "--error", "0.01"][..], "too large"),
        (&["--capacity", "lots", "--error", "0.01"][..], "1_000_000"),
        (
            &["--capacity", "100", "--error", "0.01", "--items", "-5"][..],
            "must not be negative",
        ),
        (
            &["--capacity", "100", "--error", "0.01", "--expansion", "-2"][..],
            "must be positive",
        ),
        (
            &["--capacity", "100", "--error", "-0.1"][..],
            "between 0 and 1",
        ),
    ] {
        let mut all = vec!["plan"];
        all.extend(args);
        let run = cli(&all);
        assert_eq!(run.code, 64, "{args:?}");
        assert!(run.stderr.contains(message), "{args:?}: {}", run.stderr);
        assert!(
            !run.stderr.contains("unexpected argument"),
            "{}",
            run.stderr
        );
        assert!(!run.stderr.contains("invalid digit"), "{}", run.stderr);
    }
}

/// The plan warns where the server's memory guard refuses, with the
/// server's own numbers.
#[test]
fn plan_warns_where_the_server_would_refuse_the_memory() {
    let server = ferrobloom();
    let mut c = server.conn();
    let cap: Vec<String> = q(&mut c, &["CONFIG", "GET", "bf.max-filter-bytes"]);

    // 1.2 EiB: BF.PLAN answers, BF.RESERVE is refused; the tool says so.
    let run = cli(&["plan", "--capacity", "1e18", "--error", "0.01"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("WARNING"), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("the server would refuse to create this filter"),
        "{}",
        run.stdout
    );
    let json = cli(&["plan", "--capacity", "1e18", "--error", "0.01", "--json"]).json();
    assert_eq!(json["max_filter_bytes"].to_string(), cap[1]);
    assert_eq!(json["policies"][0]["refused_at_link"], 1);
    let size = json["policies"][0]["size"].as_u64().unwrap();
    let refused = redis::cmd("BF.RESERVE")
        .arg("huge")
        .arg("0.01")
        .arg("1000000000000000000")
        .query::<()>(&mut c)
        .unwrap_err();
    let said = format!("the filter would take {size} bytes, over bf.max-filter-bytes");
    assert!(refused.to_string().contains(&said), "{refused}");
    let warning = json["warnings"][0].as_str().unwrap();
    assert!(warning.contains(&commas(size)), "{warning}");

    // A scaling filter under a smaller cap: the tool names the link the
    // server refuses and the items it holds before that.
    let plan = cli(&[
        "plan",
        "--capacity",
        "10000",
        "--error",
        "0.01",
        "--items",
        "100000",
        "--json",
    ])
    .json();
    let links = plan["policies"][0]["links"].as_array().unwrap();
    let size_after = |n: usize| -> u64 {
        32 + links[..n]
            .iter()
            .map(|l| l["bytes"].as_u64().unwrap() + 64)
            .sum::<u64>()
    };
    let small_cap = size_after(2).to_string();
    let run = cli(&[
        "plan",
        "--capacity",
        "10000",
        "--error",
        "0.01",
        "--items",
        "100000",
        "--max-filter-bytes",
        &small_cap,
        "--json",
    ]);
    assert_eq!(run.code, 0);
    let json = run.json();
    assert_eq!(json["policies"][0]["refused_at_link"], 3);
    let warning = json["warnings"][0].as_str().unwrap().to_string();
    assert!(warning.contains("refuse to add link 3"), "{warning}");
    assert!(
        warning.contains("it holds 30,000 items before that"),
        "{warning}"
    );
    assert!(warning.contains("70,000 of the 100,000 items"), "{warning}");
    assert!(warning.contains(&commas(size_after(3))), "{warning}");
    // The server, with that cap: 30,000 items, then the refusal.
    q::<()>(
        &mut c,
        &["CONFIG", "SET", "bf.max-filter-bytes", &small_cap],
    );
    q::<()>(&mut c, &["BF.RESERVE", "grows", "0.01", "10000"]);
    let mut refusal = None;
    for batch in 0..100 {
        let items: Vec<String> = (0..1000).map(|i| format!("{batch}-{i}")).collect();
        // The items of the batch that crosses the cap are refused (the
        // client library gives the reply as an error).
        if let Err(e) = redis::cmd("BF.MADD")
            .arg("grows")
            .arg(&items)
            .query::<Value>(&mut c)
        {
            refusal = Some(e.to_string());
            break;
        }
    }
    let refusal = refusal.expect("the server refuses the third link");
    assert!(
        refusal.contains(&format!("the filter would take {} bytes", size_after(3))),
        "{refusal}"
    );
    let card: u64 = q(&mut c, &["BF.CARD", "grows"]);
    assert_eq!(card, 30_000);
    // No warning for filters under the cap.
    let run = cli(&["plan", "--capacity", "1000", "--error", "0.01"]);
    assert!(!run.stdout.contains("WARNING"), "{}", run.stdout);
}

#[test]
fn empty_urls_and_conflicting_thresholds_are_usage_errors() {
    let guard = Duration::from_secs(30);
    let (run, _) = cli_within(&["stats"], &[("FERROBLOOM_URL", "")], guard);
    assert_eq!(run.code, 64, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("empty server URL (--url or FERROBLOOM_URL)"),
        "{}",
        run.stderr
    );
    let (run, _) = cli_within(&["stats", "--url", ""], &[], guard);
    assert_eq!(run.code, 64, "{}", run.stderr);
    assert!(run.stderr.contains("empty server URL"), "{}", run.stderr);

    let fb = ferrobloom();
    let url = fb.url();
    for (args, message) in [
        (
            vec!["--warning", "0.95"],
            "--warning 0.95 is above the alert threshold 0.9 (the server's bf.fill-alert)",
        ),
        (
            vec!["--alert", "0.5"],
            "--alert 0.5 is below the warning threshold 0.75 (the server's bf.fill-warning)",
        ),
        (
            vec!["--warning", "0.9", "--alert", "0.8"],
            "--warning 0.9 is above --alert 0.8",
        ),
        // --watch stops on it instead of repeating it.
        (
            vec!["--warning", "0.95", "--watch", "0.2"],
            "--warning 0.95 is above the alert threshold 0.9",
        ),
        (vec!["--warning", "-0.5"], "expected a ratio in (0, 1]"),
        (vec!["--watch", "-1"], "expected a number of seconds"),
    ] {
        let mut all = vec!["stats", "--url", url.as_str()];
        all.extend(&args);
        let (run, _) = cli_within(&all, &[], guard);
        assert_eq!(run.code, 64, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(message), "{args:?}: {}", run.stderr);
    }
    // Without bf.fill-* settings, the defaults are named as such.
    let rb = redisbloom();
    let (run, _) = cli_within(
        &["stats", "--url", &rb.url(), "--warning", "0.95"],
        &[],
        guard,
    );
    assert_eq!(run.code, 64, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "--warning 0.95 is above the alert threshold 0.9 (the default: the server has no bf.fill-alert)"
        ),
        "{}",
        run.stderr
    );
    // Consistent values still work.
    let (run, _) = cli_within(&["stats", "--url", &url, "--warning", "0.85"], &[], guard);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
fn key_names_are_escaped_in_text_and_exact_in_json() {
    let server = ferrobloom();
    let mut c = server.conn();
    let keys: [&[u8]; 4] = [
        b"plain",
        b"red\x1b[31m\nline",
        b"bin\xff\x00",
        "caf\u{e9}\\".as_bytes(),
    ];
    for k in keys {
        let _: Value = redis::cmd("BF.ADD").arg(k).arg("x").query(&mut c).unwrap();
    }
    let run = cli(&["stats", "--url", &server.url()]);
    assert_eq!(run.code, 0);
    assert!(!run.stdout.contains('\x1b'), "{:?}", run.stdout);
    for shown in [
        "plain",
        "red\\x1b[31m\\nline",
        "bin\\xff\\x00",
        "caf\u{e9}\\\\",
    ] {
        assert!(
            run.stdout
                .lines()
                .any(|l| l.starts_with(&format!("{shown} "))),
            "{shown}: {}",
            run.stdout
        );
    }
    // One line per filter: the newline did not break the table.
    let header = run
        .stdout
        .lines()
        .position(|l| l.starts_with("KEY"))
        .unwrap();
    assert_eq!(run.stdout.lines().nth(header + 5), Some(""));

    let json = cli(&["stats", "--url", &server.url(), "--json"]).json();
    let filters = json["filters"].as_array().unwrap();
    let find = |key: &str| filters.iter().find(|f| f["key"] == key).cloned();
    assert_eq!(find("red\x1b[31m\nline").unwrap()["key_hex"], Json::Null);
    assert_eq!(find("caf\u{e9}\\").unwrap()["key_hex"], Json::Null);
    let binary = find("bin\\xff\\x00").unwrap();
    assert_eq!(binary["key_hex"], "62696eff00");

    // migrate prints the key the same way.
    let dst = ferrobloom();
    let dir = workdir("escaped-keys");
    let run = cli_in(
        &dir,
        &[
            "migrate",
            "--from",
            &server.url(),
            "--to",
            &dst.url(),
            "--key",
            "red\x1b[31m\nline",
        ],
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stdout.contains('\x1b'), "{:?}", run.stdout);
    assert!(
        run.stdout
            .contains("red\\x1b[31m\\nline -> red\\x1b[31m\\nline: "),
        "{}",
        run.stdout
    );
}

// ---------------------------------------------------------------------------
// Cuckoo filters

#[test]
fn plan_cuckoo_numbers_equal_cf_plan() {
    let server = ferrobloom();
    let mut c = server.conn3();
    for (case, reserve) in [
        ("--capacity 1000", "1000"),
        (
            "--capacity 1000000 --bucket-size 4 --max-iterations 500",
            "1000000 BUCKETSIZE 4 MAXITERATIONS 500",
        ),
        ("--capacity 100 --expansion 0", "100 EXPANSION 0"),
        (
            "--capacity 12 --bucket-size 3 --expansion 5",
            "12 BUCKETSIZE 3 EXPANSION 5",
        ),
        ("--capacity 5000 --bucket-size 1", "5000 BUCKETSIZE 1"),
    ] {
        let mut args = vec!["plan", "--cuckoo", "--json"];
        args.extend(case.split(' '));
        let run = cli(&args);
        assert_eq!(run.code, 0, "{case}: {}", run.stderr);
        let mine = run.json();
        let mut server_args = vec!["CF.PLAN".to_string()];
        server_args.extend(reserve.split(' ').map(String::from));
        let theirs = cmd3(&mut c, &server_args);
        for field in [
            "capacity",
            "bucket_size",
            "max_iterations",
            "expansion",
            "buckets",
            "slots",
            "bytes",
            "size",
            "fpr_bound",
            "first_expansion_load",
            "first_expansion_low_load",
            "first_expansion_items",
            "max_expansions",
            "expansions",
            "sub_filters",
            "worst_bytes",
            "worst_size",
            "worst_fpr_bound",
            "bloom_error_rate",
            "bloom_hashes",
            "bloom_bytes",
            "bloom_size",
        ] {
            assert_eq!(mine[field], theirs[field], "{case}: {field}");
        }
        // The text shows the same numbers.
        let text_args: Vec<&str> = args.iter().copied().filter(|a| *a != "--json").collect();
        let text = cli(&text_args);
        assert_eq!(text.code, 0);
        let size = theirs["size"].as_u64().unwrap();
        assert!(
            text.stdout
                .contains(&format!("CF.INFO Size {}", commas(size))),
            "{}",
            text.stdout
        );
    }
    // An early expansion is warned about; the server's limits are options.
    let run = cli(&["plan", "--cuckoo", "--capacity", "1000000"]);
    assert!(
        run.stdout.contains("typically expands after about"),
        "{}",
        run.stdout
    );
    let run = cli(&[
        "plan",
        "--cuckoo",
        "--capacity",
        "1000",
        "--max-expansions",
        "3",
        "--max-filter-bytes",
        "2120",
        "--json",
    ]);
    let json = run.json();
    assert_eq!(json["expansions"], 2);
    assert_eq!(json["refused_at_sub_filter"], 3);
    // Usage errors: CF.RESERVE's rules, options of the other kind.
    for args in [
        &["plan", "--cuckoo", "--capacity", "3"][..],
        &[
            "plan",
            "--cuckoo",
            "--capacity",
            "100",
            "--expansion",
            "40000",
        ][..],
        &[
            "plan",
            "--cuckoo",
            "--capacity",
            "100",
            "--bucket-size",
            "0",
        ][..],
        &["plan", "--cuckoo", "--capacity", "100", "--error", "0.01"][..],
        &[
            "plan",
            "--capacity",
            "100",
            "--error",
            "0.01",
            "--bucket-size",
            "4",
        ][..],
        &[
            "plan",
            "--capacity",
            "100",
            "--error",
            "0.01",
            "--expansion",
            "0",
        ][..],
    ] {
        assert_eq!(cli(args).code, 64, "{args:?}");
    }
}

/// A Cuckoo filter grown to several sub-filters, one with a single
/// sub-filter, and an empty one.
fn cuckoo_shapes(c: &mut Connection) -> Vec<&'static str> {
    q::<()>(c, &["CF.RESERVE", "c:grown", "200", "EXPANSION", "2"]);
    for i in 0..900 {
        q::<i64>(c, &["CF.ADD", "c:grown", &format!("g{i}")]);
    }
    q::<()>(c, &["CF.RESERVE", "c:wide", "5000", "BUCKETSIZE", "4"]);
    for i in 0..3000 {
        q::<i64>(c, &["CF.ADD", "c:wide", &format!("w{i}")]);
    }
    q::<()>(
        c,
        &[
            "CF.RESERVE",
            "c:empty",
            "64",
            "BUCKETSIZE",
            "3",
            "MAXITERATIONS",
            "9",
            "EXPANSION",
            "4",
        ],
    );
    vec!["c:grown", "c:wide", "c:empty"]
}

/// CF.SCANDUMP stream and CF.INFO of a key.
fn cf_state(c: &mut Connection, key: &str) -> (Vec<(i64, Vec<u8>)>, Value) {
    let mut out = Vec::new();
    let mut it = 0i64;
    loop {
        let (next, data): (i64, Option<Vec<u8>>) =
            redis::cmd("CF.SCANDUMP").arg(key).arg(it).query(c).unwrap();
        if next == 0 {
            break;
        }
        out.push((next, data.unwrap_or_default()));
        it = next;
    }
    let info: Value = redis::cmd("CF.INFO").arg(key).query(c).unwrap();
    (out, info)
}

#[test]
fn migrate_copies_cuckoo_filters_both_ways() {
    for (from_redisbloom, name) in [(true, "cf-rb-to-fb"), (false, "cf-fb-to-rb")] {
        let (src, dst) = if from_redisbloom {
            (redisbloom(), ferrobloom())
        } else {
            (ferrobloom(), redisbloom())
        };
        let mut c = src.conn();
        let keys = cuckoo_shapes(&mut c);
        let dir = workdir(name);
        // Small chunks: every sub-filter goes in several CF.LOADCHUNK.
        let run = cli_in(
            &dir,
            &[
                "migrate",
                "--from",
                &src.url(),
                "--to",
                &dst.url(),
                "--pattern",
                "c:*",
                "--chunk-size",
                "1KiB",
            ],
            &[],
        );
        assert_eq!(run.code, 0, "{name}: {}", run.stderr);
        assert!(
            run.stdout.contains("copied and verified 3 filters"),
            "{}",
            run.stdout
        );
        assert!(run.stdout.contains("CF.INFO equal"), "{}", run.stdout);
        assert!(
            run.stdout
                .contains("c:empty -> c:empty: an empty Cuckoo filter"),
            "{}",
            run.stdout
        );
        let mut d = dst.conn();
        for k in &keys {
            assert_eq!(cf_state(&mut c, k), cf_state(&mut d, k), "{name}: {k}");
        }
        let found: Vec<i64> = q(&mut d, &["CF.MEXISTS", "c:grown", "g0", "g450", "g899"]);
        assert_eq!(found, [1, 1, 1]);
        // The copies grow on as the originals do.
        for i in 0..300 {
            q::<i64>(&mut c, &["CF.ADD", "c:empty", &format!("e{i}")]);
            q::<i64>(&mut d, &["CF.ADD", "c:empty", &format!("e{i}")]);
        }
        assert_eq!(cf_state(&mut c, "c:empty"), cf_state(&mut d, "c:empty"));
    }
}

#[test]
fn stats_lists_cuckoo_filters() {
    for server in [ferrobloom(), redisbloom()] {
        let mut c = server.conn();
        let keys = cuckoo_shapes(&mut c);
        let (code, json) = stats_json(&server, &["--pattern", "c:*"]);
        assert!(code <= 2, "{json}");
        let filters = json["filters"].as_array().unwrap();
        assert_eq!(filters.len(), keys.len(), "{json}");
        for f in filters {
            assert_eq!(f["type"], "cuckoo", "{f}");
            let key = f["key"].as_str().unwrap();
            let info: Value = redis::cmd("CF.INFO").arg(key).query(&mut c).unwrap();
            let info = to_json(info);
            let get = |label: &str| -> u64 {
                let a = info.as_array().unwrap();
                let i = a.iter().position(|v| v == label).unwrap();
                a[i + 1].as_u64().unwrap()
            };
            assert_eq!(f["items"], get("Number of items inserted"), "{key}");
            assert_eq!(f["size"], get("Size"), "{key}");
            assert_eq!(f["sub_filters"], get("Number of filters"), "{key}");
            assert_eq!(f["bucket_size"], get("Bucket size"), "{key}");
            let fill = f["fill_ratio"].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&fill), "{f}");
            let fpr = f["estimated_fpr"].as_f64().unwrap();
            assert!((0.0..1.0).contains(&fpr), "{f}");
        }
        let slots = |key: &str| {
            filters.iter().find(|f| f["key"] == key).unwrap()["slots"]
                .as_u64()
                .unwrap()
        };
        assert_eq!(slots("c:empty"), 96);
        assert_eq!(slots("c:wide"), 8192);
        // The text table shows them as cuckoo/B.
        let url = server.url();
        let run = cli(&["stats", "--url", &url, "--pattern", "c:*"]);
        assert!(run.stdout.contains("cuckoo/4"), "{}", run.stdout);
        // Counted as Cuckoo filters, not as Bloom filters.
        assert!(
            run.stdout.contains(" · 3 Cuckoo filters · "),
            "{}",
            run.stdout
        );
        assert!(!run.stdout.contains("Bloom filter"), "{}", run.stdout);
        // With a Bloom filter beside them, each kind is counted apart.
        q::<()>(&mut c, &["BF.RESERVE", "c:bloom", "0.01", "100"]);
        let run = cli(&["stats", "--url", &url, "--pattern", "c:*"]);
        assert!(
            run.stdout
                .contains(" · 1 Bloom filter, 3 Cuckoo filters · "),
            "{}",
            run.stdout
        );
    }
}

// ---------------------------------------------------------------------------
// the tool's rough edges (issue 25): URLs, servers that are not Redis,
// help, wording

/// The lines of a run's standard error.
fn stderr_lines(run: &Run) -> Vec<&str> {
    run.stderr.lines().collect()
}

#[test]
fn malformed_urls_are_usage_errors_in_one_line() {
    let guard = Duration::from_secs(30);
    for (url, why) in [
        (
            "http://127.0.0.1:6379/",
            "unknown scheme http:// (expected redis://, redis+cluster:// or redis+unix://)",
        ),
        ("127.0.0.1:6379", "no scheme"),
        (
            "redis://127.0.0.1:99999/",
            "port 99999 is not a number from 1 to 65535",
        ),
        (
            "redis+cluster://127.0.0.1:7000,127.0.0.1:99999",
            "port 99999",
        ),
        ("redis://127.0.0.1:6379/abc", "the database is not a number"),
        ("redis://[::1", "invalid IPv6 address"),
        (
            "rediss://127.0.0.1:6379/",
            "TLS (rediss://) is not supported",
        ),
    ] {
        let (run, _) = cli_within(&["stats", "--url", url], &[], guard);
        assert_eq!(run.code, 64, "{url}: {}", run.stderr);
        let lines = stderr_lines(&run);
        assert_eq!(lines.len(), 1, "{url}: {}", run.stderr);
        assert!(
            lines[0].starts_with(&format!("ferrobloom: bad server URL {url}: ")),
            "{url}: {}",
            run.stderr
        );
        assert!(run.stderr.contains(why), "{url}: {}", run.stderr);
        assert!(
            !run.stderr.contains("InvalidClientConfig"),
            "{}",
            run.stderr
        );
    }
    // The password stays hidden.
    let (run, _) = cli_within(
        &["stats", "--url", "redis://app:secret@127.0.0.1:70000/"],
        &[],
        guard,
    );
    assert_eq!(run.code, 64, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("bad server URL redis://app:***@127.0.0.1:70000/: port 70000"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("secret"), "{}", run.stderr);
    // migrate checks both URLs before it contacts the source (here a
    // port where nothing listens: a connection error, status 3, if tried).
    let nobody = format!("redis://127.0.0.1:{}/", free_port());
    let (run, _) = cli_within(
        &[
            "migrate",
            "--from",
            &nobody,
            "--to",
            "http://127.0.0.1:6380/",
        ],
        &[],
        guard,
    );
    assert_eq!(run.code, 64, "{}", run.stderr);
    assert_eq!(stderr_lines(&run).len(), 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("bad server URL http://127.0.0.1:6380/: unknown scheme http://"),
        "{}",
        run.stderr
    );
}

/// A listener that answers every connection with `reply` (after reading
/// what the client sent first) and closes it, until dropped.
struct NotRedis {
    port: u16,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl NotRedis {
    fn start(reply: &'static [u8]) -> NotRedis {
        use std::io::{Read, Write};
        use std::sync::atomic::Ordering;
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            while !stopped.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((mut peer, _)) => {
                        peer.set_nonblocking(false).unwrap();
                        peer.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
                        let mut buf = [0u8; 4096];
                        let _ = peer.read(&mut buf);
                        let _ = peer.write_all(reply);
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        NotRedis {
            port,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for NotRedis {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn a_server_that_is_not_redis_gets_one_clean_line() {
    let guard = Duration::from_secs(30);
    for (reply, says) in [
        (
            &b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"[..],
            "the server's reply is not in the Redis protocol (RESP): is it a Redis server? check \
             the host and port",
        ),
        (
            &b"\x00\x01\x02 garbage \xff\xfe\r\n"[..],
            "the server's reply is not in the Redis protocol (RESP)",
        ),
        (
            &b""[..],
            "the server closed the connection without answering",
        ),
    ] {
        let fake = NotRedis::start(reply);
        let url = format!("redis://127.0.0.1:{}/", fake.port);
        let cluster = format!("redis+cluster://127.0.0.1:{}", fake.port);
        for args in [
            vec!["stats", "--url", url.as_str(), "--timeout", "5"],
            vec!["stats", "--url", cluster.as_str(), "--timeout", "5"],
            vec![
                "migrate",
                "--from",
                url.as_str(),
                "--to",
                url.as_str(),
                "--timeout",
                "5",
            ],
        ] {
            let (run, _) = cli_within(&args, &[], guard);
            assert_eq!(run.code, 3, "{args:?}: {}", run.stderr);
            let lines = stderr_lines(&run);
            assert_eq!(lines.len(), 1, "{args:?}: {}", run.stderr);
            assert!(
                lines[0].starts_with("ferrobloom: cannot connect to ") && lines[0].contains(says),
                "{args:?}: {}",
                run.stderr
            );
        }
    }
}

#[test]
fn help_lists_every_exit_status_and_what_force_keeps() {
    let help = cli(&["--help"]);
    assert_eq!(help.code, 0);
    let text = help.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    for phrase in [
        "Exit status: 0 success",
        "1 when a filter is at or over the warning threshold",
        "2 when one is at or over the alert threshold",
        "3 on an error",
        "4 when `migrate` was stopped on purpose by FERROBLOOM_MIGRATE_STOP_AFTER_CHUNKS",
        "64 for invalid arguments (a malformed server URL too)",
        "130 when `migrate` was interrupted by Ctrl-C or SIGTERM",
    ] {
        assert!(text.contains(phrase), "--help lacks {phrase:?}:\n{text}");
    }
    // docs/cli.md's table has the same statuses.
    let docs = std::fs::read_to_string(root().join("docs/cli.md")).unwrap();
    let table = docs
        .split("## Exit status")
        .nth(1)
        .unwrap()
        .split("\n\n")
        .find(|b| b.starts_with("| Status"))
        .unwrap();
    let statuses: Vec<&str> = table
        .lines()
        .skip(2)
        .filter_map(|l| l.split('|').nth(1).map(str::trim))
        .collect();
    assert_eq!(statuses, ["0", "1", "2", "3", "4", "64", "130"]);

    // --force: the old key stays readable until RENAME replaces it (as
    // docs/cli.md says), it is not deleted first.
    let migrate = cli(&["migrate", "--help"]);
    let text = migrate
        .stdout
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        text.contains(
            "--force Replace destination keys that already exist. The copy is loaded under a \
             temporary key and verified, then RENAME replaces the old key in one step: the old \
             key stays readable until then"
        ),
        "{text}"
    );
    assert!(!text.contains("deleted first"), "{text}");
    assert!(
        docs.contains("the old key stays readable until `RENAME` replaces it"),
        "docs/cli.md's --force"
    );
}

/// Plurals a count of one must never take: `1 items`, `1 sub-filters`.
const PLURALS: &[&str] = &[
    "items",
    "filters",
    "links",
    "sub-filters",
    "generations",
    "slots",
    "buckets",
    "hashes",
    "chunks",
    "keys",
    "masters",
    "expansions",
];

/// Every `1 <plural>` in `text` (a `1` that is a whole number, not the end
/// of `21` or `0.1`).
fn one_with_a_plural(text: &str) -> Vec<String> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    for (i, _) in text.match_indices("1 ") {
        let whole = i == 0 || !matches!(bytes[i - 1], b'0'..=b'9' | b'.' | b',');
        let word: String = text[i + 2..]
            .chars()
            .take_while(|c| c.is_ascii_alphabetic() || *c == '-')
            .collect();
        if whole && PLURALS.contains(&word.as_str()) {
            found.push(format!("1 {word}"));
        }
    }
    found
}

#[test]
fn counts_of_one_take_the_singular() {
    assert_eq!(
        one_with_a_plural("1 items, 21 items, 0.1 items"),
        ["1 items"]
    );
    for args in [
        &[
            "plan",
            "--capacity",
            "1",
            "--error",
            "0.01",
            "--nonscaling",
            "--items",
            "1",
        ][..],
        &[
            "plan",
            "--cuckoo",
            "--capacity",
            "2",
            "--bucket-size",
            "1",
            "--expansion",
            "0",
        ][..],
        &[
            "plan",
            "--window",
            "1",
            "--generations",
            "1",
            "--error",
            "0.01",
            "--capacity",
            "1",
        ][..],
        &[
            "plan",
            "--window",
            "1h",
            "--rate",
            "1/h",
            "--generations",
            "1",
            "--error",
            "0.01",
        ][..],
    ] {
        let run = cli(args);
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        assert_eq!(
            one_with_a_plural(&run.stdout),
            Vec::<String>::new(),
            "{}",
            run.stdout
        );
    }
    let plan = cli(&["plan", "--capacity", "1", "--error", "0.01", "--items", "1"]);
    for phrase in ["planned for 1 item\n", "total: 1 link,", "with 1 item:"] {
        assert!(plan.stdout.contains(phrase), "{phrase}: {}", plan.stdout);
    }
    let cuckoo = cli(&[
        "plan",
        "--cuckoo",
        "--capacity",
        "2",
        "--bucket-size",
        "1",
        "--expansion",
        "0",
    ]);
    for phrase in [
        "× 1 slot =",
        "with its one sub-filter",
        "worst case: 1 sub-filter (0 expansions)",
    ] {
        assert!(
            cuckoo.stdout.contains(phrase),
            "{phrase}: {}",
            cuckoo.stdout
        );
    }
    let window = cli(&[
        "plan",
        "--window",
        "1h",
        "--rate",
        "1/h",
        "--generations",
        "1",
        "--error",
        "0.01",
    ]);
    for phrase in [
        "1 item per window (1 an hour)",
        ", 1 generation,",
        "1 item arrives per window",
    ] {
        assert!(
            window.stdout.contains(phrase),
            "{phrase}: {}",
            window.stdout
        );
    }

    // migrate and stats on real servers: one filter of one item, one chunk.
    let src = ferrobloom();
    let dst = ferrobloom();
    let mut c = src.conn();
    q::<()>(&mut c, &["BF.RESERVE", "one", "0.01", "100"]);
    q::<i64>(&mut c, &["BF.ADD", "one", "x"]);
    q::<()>(&mut c, &["SET", "s", "x"]);
    let dir = workdir("singular");
    let run = cli_in(
        &dir,
        &["migrate", "--from", &src.url(), "--to", &dst.url()],
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let all = format!("{}{}", run.stdout, run.stderr);
    assert_eq!(one_with_a_plural(&all), Vec::<String>::new(), "{all}");
    assert!(
        run.stdout.contains("1 chunk, 1 item; verified"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("copied and verified 1 filter ("),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr.contains("skipped 1 key (migrate copies"),
        "{}",
        run.stderr
    );
    let run = cli(&["stats", "--url", &dst.url()]);
    assert!(
        run.stdout.contains(" · 1 Bloom filter · "),
        "{}",
        run.stdout
    );
    assert_eq!(
        one_with_a_plural(&run.stdout),
        Vec::<String>::new(),
        "{}",
        run.stdout
    );
}
