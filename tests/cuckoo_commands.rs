//! Cuckoo filters (CF.*) on a real server, beyond reply-for-reply
//! compatibility (tests/differential_cuckoo.rs): replicas and AOF replays
//! end identical (CF.LOADCHUNK data chunks included, which RedisBloom 2.8.2
//! loses), `INFO bf` counts them, keyspace events, CF_MAX_EXPANSIONS and
//! `bf.cf-max-expansions`, the memory guard, and CF.STATS.

mod common;

use std::collections::BTreeMap;
use std::thread::sleep;
use std::time::{Duration, Instant};

use common::client::ferrobloom;
use common::{decode, Resp};
use common::{RawClient, Server};

const OK: &[u8] = b"+OK\r\n";

fn info_bf(r: &mut RawClient) -> BTreeMap<String, String> {
    let text = String::from_utf8(r.cmd(&["INFO", "bf"])).unwrap();
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .filter_map(|(k, v)| Some((k.strip_prefix("bf_")?.to_string(), v.to_string())))
        .collect()
}

fn int(r: &mut RawClient, args: &[&str]) -> i64 {
    match decode(&r.cmd(args)) {
        Resp::Int(v) => v,
        other => panic!("{args:?}: {other:?}"),
    }
}

/// A workload with growth, kick-outs, duplicates, deletes (and the
/// compaction they start), CF.COMPACT and a SCANDUMP → LOADCHUNK copy.
fn workload(r: &mut RawClient) -> Vec<String> {
    assert_eq!(r.line("CF.RESERVE grown 64 BUCKETSIZE 2 EXPANSION 2"), OK);
    assert_eq!(
        r.line("CF.RESERVE wide 1000 BUCKETSIZE 4 MAXITERATIONS 5"),
        OK
    );
    for i in 0..600 {
        r.cmd(&["CF.ADD", "grown", &format!("g{i}")]);
        r.cmd(&["CF.ADDNX", "wide", &format!("w{}", i % 400)]);
    }
    let mut insert = vec!["CF.INSERT".to_string(), "auto".into(), "ITEMS".into()];
    insert.extend((0..300).map(|i| format!("a{}", i % 50)));
    r.cmd(&insert);
    for i in (0..600).step_by(3) {
        r.cmd(&["CF.DEL", "grown", &format!("g{i}")]);
    }
    assert_eq!(r.line("CF.COMPACT wide"), OK);
    let mut it = 0i64;
    loop {
        let Resp::Array(pair) = decode(&r.cmd(&["CF.SCANDUMP", "grown", &it.to_string()])) else {
            panic!("SCANDUMP")
        };
        let (Resp::Int(next), data) = (&pair[0], &pair[1]) else {
            panic!("{pair:?}")
        };
        if *next == 0 {
            break;
        }
        let Resp::Bulk(bytes) = data else {
            panic!("{data:?}")
        };
        let reply = r.cmd(&[
            b"CF.LOADCHUNK".as_slice(),
            b"copy",
            next.to_string().as_bytes(),
            bytes,
        ]);
        assert_eq!(reply, OK);
        it = *next;
    }
    vec!["grown".into(), "wide".into(), "auto".into(), "copy".into()]
}

fn snapshot(r: &mut RawClient, keys: &[String]) -> Vec<(Vec<u8>, Vec<u8>)> {
    keys.iter()
        .map(|k| (r.cmd(&["DUMP", k]), r.cmd(&["DEBUG", "DIGEST-VALUE", k])))
        .collect()
}

fn wait_for_replica(master: &mut RawClient, replica: &mut RawClient) {
    let start = Instant::now();
    loop {
        let offset = |r: &mut RawClient, field: &str| -> Option<u64> {
            let text = String::from_utf8(r.cmd(&["INFO", "replication"])).unwrap();
            text.lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|v| v.trim().parse().ok())
        };
        let target = offset(master, "master_repl_offset:");
        let up = String::from_utf8(replica.cmd(&["INFO", "replication"]))
            .unwrap()
            .contains("master_link_status:up");
        if up && target.is_some() && offset(replica, "slave_repl_offset:") == target {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "replica never caught up"
        );
        sleep(Duration::from_millis(20));
    }
}

#[test]
fn replicas_and_aof_replays_end_identical() {
    let mut master = Server::start(
        ferrobloom()
            .config("appendonly", "yes")
            .config("aof-use-rdb-preamble", "no"),
    );
    let replica =
        Server::start(ferrobloom().config("replicaof", &format!("127.0.0.1 {}", master.port())));
    let mut m = master.raw();
    let mut r = replica.raw();
    let start = Instant::now();
    while !String::from_utf8(r.cmd(&["INFO", "replication"]))
        .unwrap()
        .contains("master_link_status:up")
    {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "replica never linked"
        );
        sleep(Duration::from_millis(20));
    }
    let keys = workload(&mut m);
    let want = snapshot(&mut m, &keys);
    assert!(want.iter().all(|(dump, _)| dump.starts_with(b"$")));
    wait_for_replica(&mut m, &mut r);
    assert_eq!(snapshot(&mut r, &keys), want, "the replica's filters");
    // CF.EXISTS on the copy made with CF.LOADCHUNK answers on the replica.
    assert_eq!(r.cmd(&["CF.EXISTS", "copy", "g1"]), b":1\r\n");
    // CF.COMPACT is flagged read-only (as in RedisBloom), but a replica
    // refuses it to its clients: it would move fingerprints there only.
    let mut compacted = 0;
    for k in &keys {
        if r.cmd(&["TYPE", k]) == b"+MBbloomCF\r\n" {
            assert_eq!(
                r.cmd(&["CF.COMPACT", k]),
                b"-READONLY You can't write against a read only replica.\r\n",
                "CF.COMPACT {k} on the replica"
            );
            compacted += 1;
        }
    }
    assert!(compacted > 0);
    assert_eq!(
        snapshot(&mut r, &keys),
        want,
        "after CF.COMPACT on the replica"
    );
    // The AOF (commands as propagated) replays into the same filters.
    assert_eq!(m.cmd(&["DEBUG", "LOADAOF"]), OK);
    assert_eq!(snapshot(&mut m, &keys), want, "after replaying the AOF");
    // And so does a rewritten one (CF.LOADCHUNK per filter).
    assert_eq!(m.cmd(&["BGREWRITEAOF"]).first(), Some(&b'+'));
    let start = Instant::now();
    loop {
        let text = String::from_utf8(m.cmd(&["INFO", "persistence"])).unwrap();
        if text.contains("aof_rewrite_in_progress:0") && text.contains("aof_rewrite_scheduled:0") {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "rewrite never ended"
        );
        sleep(Duration::from_millis(20));
    }
    master.restart();
    assert_eq!(
        snapshot(&mut master.raw(), &keys),
        want,
        "after the rewritten AOF"
    );
}

#[test]
fn info_counts_cuckoo_filters() {
    let server = Server::start(ferrobloom());
    let mut r = server.raw();
    let before = info_bf(&mut r);
    assert_eq!(before["cuckoo_filters"], "0");
    assert_eq!(before["cuckoo_load_factor"], "0");
    assert_eq!(r.line("CF.RESERVE a 1000"), OK);
    assert_eq!(r.line("CF.RESERVE b 8 EXPANSION 2"), OK);
    for i in 0..10 {
        r.cmd(&["CF.ADD", "b", &i.to_string()]);
        r.cmd(&["CF.ADD", "a", &i.to_string()]);
    }
    assert_eq!(r.line("CF.DEL a 3"), b":1\r\n");
    let info = info_bf(&mut r);
    assert_eq!(info["cuckoo_filters"], "2");
    assert_eq!(info["cuckoo_sub_filters"], "3");
    // CF.INFO Size of both: 1,080 + 40 + 2 × 16 + 8 + 16.
    assert_eq!(info["cuckoo_bytes"], (1080 + 40 + 32 + 24).to_string());
    assert_eq!(info["cuckoo_items"], "19");
    assert_eq!(info["cuckoo_slots"], (1024 + 24).to_string());
    let load: f64 = info["cuckoo_load_factor"].parse().unwrap();
    assert!((load - 19.0 / 1048.0).abs() < 1e-12, "{load}");
    assert_eq!(info["cuckoo_deletes"], "1");
    assert_eq!(info["cuckoo_expansions"], "1");
    // Deleting and unlinking keys, FLUSHALL, and a reload.
    assert_eq!(r.line("DEL a"), b":1\r\n");
    assert_eq!(info_bf(&mut r)["cuckoo_filters"], "1");
    assert_eq!(r.line("DEBUG RELOAD"), OK);
    let start = Instant::now();
    while info_bf(&mut r)["cuckoo_filters"] != "1" {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "lazy free never ended"
        );
        sleep(Duration::from_millis(20));
    }
    assert_eq!(info_bf(&mut r)["cuckoo_items"], "10");
    assert_eq!(r.line("FLUSHALL"), OK);
    let start = Instant::now();
    while info_bf(&mut r)["cuckoo_filters"] != "0" {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "lazy free never ended"
        );
        sleep(Duration::from_millis(20));
    }
    assert_eq!(info_bf(&mut r)["cuckoo_bytes"], "0");
}

#[test]
fn writes_send_keyspace_events() {
    let server = Server::start(ferrobloom());
    let mut r = server.raw();
    assert_eq!(r.line("CONFIG SET notify-keyspace-events Ed"), OK);
    let mut sub = server.raw();
    sub.cmd(&["PSUBSCRIBE", "__keyevent@0__:*"]);
    r.cmd(&["CF.RESERVE", "f", "4", "EXPANSION", "1"]);
    for i in 0..8 {
        r.cmd(&["CF.ADD", "f", &i.to_string()]);
    }
    r.cmd(&["CF.DEL", "f", "1"]);
    r.cmd(&["CF.COMPACT", "f"]);
    r.cmd(&["PING"]);
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(5);
    while seen.len() < 5 && Instant::now() < deadline {
        let (Resp::Push(parts) | Resp::Array(parts)) = decode(&sub.read_reply().unwrap()) else {
            continue;
        };
        if let Some(channel) = parts.get(2).and_then(Resp::as_str) {
            let event = channel.rsplit(':').next().unwrap().to_string();
            if !seen.contains(&event) {
                seen.push(event);
            }
        }
    }
    seen.sort();
    assert_eq!(
        seen,
        ["cf.add", "cf.compact", "cf.create", "cf.del", "cf.expand"]
    );
}

#[test]
fn the_expansion_limit_from_load_arguments_and_settings() {
    let server = Server::start(ferrobloom().module_args(&["CF_MAX_EXPANSIONS", "2"]));
    let mut r = server.raw();
    assert_eq!(
        r.line("CONFIG GET bf.cf-max-expansions"),
        b"*2\r\n$20\r\nbf.cf-max-expansions\r\n$1\r\n2\r\n"
    );
    assert_eq!(r.line("CF.RESERVE m 4"), OK);
    let replies: Vec<Vec<u8>> = (0..7)
        .map(|i| r.cmd(&["CF.ADD", "m", &i.to_string()]))
        .collect();
    assert!(replies[..5].iter().all(|x| x == b":1\r\n"), "{replies:?}");
    assert_eq!(replies[5], b"-Maximum expansions reached\r\n");
    assert_eq!(r.line("CONFIG SET bf.cf-max-expansions 3"), OK);
    assert_eq!(r.cmd(&["CF.ADD", "m", "6"]), b":1\r\n");
    assert!(r
        .line("CONFIG SET bf.cf-max-expansions 0")
        .starts_with(b"-ERR"));
    // RedisBloom's checks of the load argument.
    for (value, why) in [
        ("0", "CF_MAX_EXPANSIONS must be an integer >= 1"),
        ("abc", "Invalid argument for 'CF_MAX_EXPANSIONS'"),
    ] {
        let failed = Server::try_start(ferrobloom().module_args(&["CF_MAX_EXPANSIONS", value]));
        let log = match failed {
            Ok(_) => panic!("loaded with CF_MAX_EXPANSIONS {value}"),
            Err(f) => f.log,
        };
        assert!(log.contains(why), "{log}");
    }
}

#[test]
fn the_memory_guard_refuses_oversized_filters() {
    let server = Server::start(ferrobloom().config("bf.max-filter-bytes", "1mb"));
    let mut r = server.raw();
    let refused = String::from_utf8(r.cmd(&["CF.RESERVE", "big", "10000000"])).unwrap();
    assert!(
        refused.starts_with("-ERR Insufficient memory to create filter: the filter would take"),
        "{refused}"
    );
    assert_eq!(r.line("EXISTS big"), b":0\r\n");
    // A filter that may grow once: the growth past the cap is refused,
    // what it holds stays.
    assert_eq!(r.line("CF.RESERVE g 400000"), OK);
    let mut inserted = 0;
    let last = loop {
        let mut args = vec!["CF.INSERT".to_string(), "g".into(), "ITEMS".into()];
        args.extend((0..1000).map(|i| format!("{inserted}-{i}")));
        let reply = decode(&r.cmd(&args));
        let Resp::Array(items) = &reply else {
            panic!("{reply:?}")
        };
        // A refused growth leaves the filter as it was, so the same item
        // is refused again, as a single add.
        if let Some(at) = items.iter().position(|x| *x == Resp::Int(-1)) {
            break r.cmd(&["CF.ADD", "g", &args[3 + at]]);
        }
        inserted += 1000;
        assert!(inserted < 2_000_000, "never refused");
    };
    let last = String::from_utf8(last).unwrap();
    assert!(last.starts_with("-ERR Insufficient memory: "), "{last}");
    assert!(int(&mut r, &["MEMORY", "USAGE", "g"]) <= 1 << 20);
    assert_eq!(r.cmd(&["CF.EXISTS", "g", "0-1"]), b":1\r\n");
    assert!(info_bf(&mut r)["guard_refusals"].parse::<u64>().unwrap() >= 2);
}

#[test]
fn stats_show_load_fpr_and_growth() {
    let server = Server::start(ferrobloom());
    let mut r = server.raw();
    assert_eq!(r.line("CF.RESERVE s 1000 BUCKETSIZE 4 EXPANSION 2"), OK);
    let mut args = vec!["CF.INSERT".to_string(), "s".into(), "ITEMS".into()];
    args.extend((0..500).map(|i| i.to_string()));
    r.cmd(&args);
    let Resp::Array(flat) = decode(&r.cmd(&["CF.STATS", "s"])) else {
        panic!()
    };
    let s: BTreeMap<String, Resp> = flat
        .chunks(2)
        .map(|p| (p[0].as_str().unwrap(), p[1].clone()))
        .collect();
    let n = |k: &str| match &s[k] {
        Resp::Int(v) => *v as f64,
        Resp::Bulk(b) => String::from_utf8_lossy(b).parse().unwrap(),
        other => panic!("{k}: {other:?}"),
    };
    assert_eq!(n("items"), 500.0);
    assert_eq!(n("occupied_slots"), 500.0);
    assert_eq!(n("slots"), 1024.0);
    assert_eq!(n("size"), 1080.0);
    assert!((n("load_factor") - 500.0 / 1024.0).abs() < 1e-12);
    // 1 − (1 − load/255)^8.
    let fpr = 1.0 - (1.0 - (500.0 / 1024.0) / 255.0f64).powi(8);
    assert!(
        (n("estimated_fpr") - fpr).abs() < 1e-12,
        "{}",
        n("estimated_fpr")
    );
    assert_eq!(n("next_sub_filter_bytes"), 2048.0);
    assert_eq!(n("expansions_left"), 31.0);
    assert_eq!(s["fill_level"], Resp::Simple("ok".into()));
    assert_eq!(r.line("CF.STATS nothing"), b"-ERR not found\r\n");
    assert_eq!(r.line("SET str x"), OK);
    assert!(r.line("CF.STATS str").starts_with(b"-WRONGTYPE"));
}
