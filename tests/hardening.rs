//! The protections a production module owes its server: a memory guard
//! that holds with default settings (machine and cgroup memory, COPY,
//! loading) and answers in RedisBloom's own words where a LOADCHUNK header
//! or a scale-out cannot be had, replays of auto-creating adds that end as
//! the writer's filters did, and interrupted LOADCHUNK sequences that stay
//! visible and lose nothing.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::client::{error, ferrobloom, int, ok, run};
use common::{decode, ModuleKind, RawClient, Resp, Server, ServerOpts};
use ferrobloom_core::{LinkSpec, Policy};

#[track_caller]
fn run_args(r: &mut RawClient, args: &[&[u8]]) -> Resp {
    decode(&r.cmd(args))
}

/// A field of `INFO bf`.
#[track_caller]
fn info_bf(r: &mut RawClient, field: &str) -> String {
    let text = match run(r, "INFO bf") {
        Resp::Bulk(b) => String::from_utf8(b).unwrap(),
        other => panic!("INFO bf: {other:?}"),
    };
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in INFO bf: {text}"))
        .trim()
        .to_string()
}

#[track_caller]
fn info_bf_u64(r: &mut RawClient, field: &str) -> u64 {
    info_bf(r, field).parse().unwrap()
}

/// A field of a BF.STATS reply (RESP2: a flat list of names and values).
#[track_caller]
fn stats_field(r: &mut RawClient, key: &str, field: &str) -> Resp {
    let Resp::Array(items) = run(r, &format!("BF.STATS {key}")) else {
        panic!("BF.STATS {key}")
    };
    items
        .chunks(2)
        .find(|pair| pair[0].as_str().as_deref() == Some(field))
        .map(|pair| pair[1].clone())
        .unwrap_or_else(|| panic!("no {field} in BF.STATS {key}"))
}

fn config_get(r: &mut RawClient, name: &str) -> String {
    match run(r, &format!("CONFIG GET {name}")) {
        Resp::Array(v) if v.len() == 2 => v[1].as_str().unwrap(),
        other => panic!("CONFIG GET {name}: {other:?}"),
    }
}

/// Bytes of the first link of a scaling filter (its error halved), as the
/// core sizes it.
fn first_link_bytes(capacity: u64, error: f64) -> u64 {
    LinkSpec::new(capacity, error * 0.5, Policy::Exact)
        .unwrap()
        .bytes
}

const REFUSED: &str = "ERR Insufficient memory to create filter: ";

// ---------------------------------------------------------------------------
// The memory guard with default settings
// ---------------------------------------------------------------------------

/// The scenario of a new user on a big machine: two filters of 5 billion
/// items at 1e-7 (21.9 GB each). With default settings the per-filter cap
/// refuses both; with the cap off, what the server can really get refuses at
/// least the second, before anything is allocated.
#[test]
fn default_settings_refuse_filters_the_machine_cannot_hold() {
    let server = Server::start(ferrobloom());
    let mut r = server.raw();
    assert_eq!(config_get(&mut r, "bf.max-filter-bytes"), "4294967296");
    assert_eq!(info_bf_u64(&mut r, "bf_max_filter_bytes"), 4 << 30);
    let huge = first_link_bytes(5_000_000_000, 0.0000001);
    assert!(huge > 20_000_000_000, "{huge}");
    let size = huge + 32 + 64;
    for key in ["a", "b"] {
        assert_eq!(
            error(&mut r, &format!("BF.RESERVE {key} 0.0000001 5000000000")),
            format!(
                "{REFUSED}the filter would take {size} bytes, over bf.max-filter-bytes (4294967296 bytes)"
            )
        );
    }
    // A 100M-item filter at 0.001 fits under the default cap.
    ok(&mut r, "BF.RESERVE urls 0.001 100000000");
    assert_eq!(int(&mut r, "BF.ADD urls https://example.com/"), 1);
    assert_eq!(int(&mut r, "DEL urls"), 1);

    // Without the cap, the machine (or cgroup) budget decides.
    ok(&mut r, "CONFIG SET bf.max-filter-bytes 0");
    let limit = info_bf_u64(&mut r, "bf_memory_limit");
    let allowed = info_bf_u64(&mut r, "bf_memory_allowed");
    let source = info_bf(&mut r, "bf_memory_limit_source");
    assert_eq!(allowed, limit / 100 * 90);
    let describe = if source == "physical-memory" {
        "the machine's physical memory"
    } else {
        "the cgroup memory limit"
    };
    let used_before = info_used_memory(&mut r);
    let first = run(&mut r, "BF.RESERVE a 0.0000001 5000000000");
    let second = error(&mut r, "BF.RESERVE b 0.0000001 5000000000");
    let expect_refusal = |e: &str| {
        let rest = e.strip_prefix(REFUSED).unwrap_or_else(|| panic!("{e}"));
        let tail = format!(
            "are in use, over the {allowed} bytes the server may use (90% of {describe}, {limit} bytes)"
        );
        assert!(
            rest.starts_with(&format!("it needs {huge} bytes and ")),
            "{e}"
        );
        assert!(rest.ends_with(&tail), "{e}");
    };
    if used_before + huge <= allowed {
        // This machine holds one: the second sees the first's bytes in use.
        assert_eq!(first, Resp::Simple("OK".into()));
        expect_refusal(&second);
        let in_use: u64 = second[REFUSED.len()..]
            .split(' ')
            .nth(5)
            .unwrap()
            .parse()
            .unwrap();
        assert!(in_use >= huge, "{second}");
        // Adds to the one that was admitted work.
        assert_eq!(int(&mut r, "BF.ADD a x"), 1);
    } else {
        match first {
            Resp::Error(e) => expect_refusal(&e),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(int(&mut r, "EXISTS b"), 0);
    assert_eq!(run(&mut r, "PING"), Resp::Simple("PONG".into()));

    // Sized from the budget: 60% of it fits once, never twice.
    int(&mut r, "DEL a");
    // Valkey 8 and later free deleted keys in the background by default
    // (lazyfree-lazy-user-del yes): the guard rightly counts the 21.9 GB
    // until the lazy-free thread has returned them.
    wait_for(Duration::from_secs(60), || info_used_memory(&mut r) < huge);
    let per_item = first_link_bytes(1_000_000, 0.01) as f64 / 1_000_000.0;
    let capacity = (allowed as f64 * 0.6 / per_item) as u64;
    ok(&mut r, &format!("BF.RESERVE p 0.01 {capacity}"));
    expect_refusal_any(&error(&mut r, &format!("BF.RESERVE q 0.01 {capacity}")));
    assert_eq!(int(&mut r, "EXISTS q"), 0);
    assert_eq!(int(&mut r, "BF.ADD p x"), 1);
    assert!(info_bf_u64(&mut r, "bf_guard_refusals") >= 3);
}

fn expect_refusal_any(e: &str) {
    assert!(
        e.starts_with(REFUSED) && e.contains("bytes the server may use"),
        "{e}"
    );
}

fn info_used_memory(r: &mut RawClient) -> u64 {
    let text = match run(r, "INFO memory") {
        Resp::Bulk(b) => String::from_utf8(b).unwrap(),
        other => panic!("INFO memory: {other:?}"),
    };
    text.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// COPY allocates a whole new filter: the guard is asked first, and a
/// refused copy leaves no key behind.
#[test]
fn copy_asks_the_guard() {
    let server = Server::start(ferrobloom());
    let mut r = server.raw();
    ok(&mut r, "BF.RESERVE src 0.01 1000000");
    assert_eq!(int(&mut r, "BF.ADD src x"), 1);
    let size = match run(&mut r, "BF.INFO src SIZE") {
        Resp::Array(v) => match v[0] {
            Resp::Int(s) => s as u64,
            ref other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    };
    ok(
        &mut r,
        &format!("CONFIG SET bf.max-filter-bytes {}", size - 1),
    );
    let refusals = info_bf_u64(&mut r, "bf_guard_refusals");
    let e = error(&mut r, "COPY src dst");
    assert!(e.contains("failed to copy"), "{e}");
    assert_eq!(int(&mut r, "EXISTS dst"), 0);
    assert_eq!(info_bf_u64(&mut r, "bf_guard_refusals"), refusals + 1);
    let log = server.log();
    assert!(
        log.contains(&format!(
            "COPY of a Bloom filter to 'dst' refused: Insufficient memory to create filter: \
             the filter would take {size} bytes, over bf.max-filter-bytes ({} bytes)",
            size - 1
        )),
        "{log}"
    );
    ok(&mut r, &format!("CONFIG SET bf.max-filter-bytes {size}"));
    assert_eq!(int(&mut r, "COPY src dst"), 1);
    assert_eq!(int(&mut r, "BF.EXISTS dst x"), 1);
}

/// Loading is never refused, but a filter loaded over a limit is named in
/// one warning with its bytes.
#[test]
fn loading_over_the_cap_warns_once_naming_the_key() {
    let mut server = Server::start(ferrobloom().config("save", "3600 1"));
    let mut r = server.raw();
    let reserve: [&[u8]; 4] = [b"BF.RESERVE", b"big\x01", b"0.001", b"2000000"];
    assert_eq!(run_args(&mut r, &reserve), Resp::Simple("OK".into()));
    assert_eq!(
        run_args(&mut r, &[b"BF.ADD", b"big\x01", b"a"]),
        Resp::Int(1)
    );
    ok(&mut r, "BF.RESERVE small 0.01 100");
    let bytes = first_link_bytes(2_000_000, 0.001);
    ok(&mut r, "SAVE");
    drop(r);
    // The same data, restarted with a cap below the big filter.
    std::fs::write(server.dir().join("cap.conf"), "bf.max-filter-bytes 1mb\n").unwrap();
    server.stop();
    let mut restarted = Server::start(
        ferrobloom()
            .config(
                "include",
                &server.dir().join("cap.conf").display().to_string(),
            )
            .file(
                "dump.rdb",
                std::fs::read(server.dir().join("dump.rdb")).unwrap(),
            ),
    );
    let mut r = restarted.raw();
    assert_eq!(
        run_args(&mut r, &[b"BF.EXISTS", b"big\x01", b"a"]),
        Resp::Int(1)
    );
    assert_eq!(config_get(&mut r, "bf.max-filter-bytes"), "1048576");
    let log = restarted.log();
    let warning = format!("loading Bloom filter 'big\\x01' ({bytes} bytes) over a memory limit");
    assert_eq!(log.matches(&warning).count(), 1, "{log}");
    assert_eq!(log.matches("over a memory limit").count(), 1, "{log}");
    assert!(
        log.contains("over bf.max-filter-bytes (1048576 bytes)"),
        "{log}"
    );
    // Clients are refused what loading was allowed.
    match run_args(&mut r, &[b"COPY", b"big\x01", b"c"]) {
        Resp::Error(e) => assert!(e.contains("failed to copy"), "{e}"),
        other => panic!("{other:?}"),
    }
    restarted.stop();
}

// ---------------------------------------------------------------------------
// Replays of auto-creating adds
// ---------------------------------------------------------------------------

/// An AOF written by RedisBloom (300 BF.ADD to a missing key) loaded by
/// FerroBloom started with `EXPANSION 0`: the replay creates the filter as
/// RedisBloom did (scaling, expansion 2), so all 300 items are there.
#[test]
fn aof_of_auto_created_filters_replays_with_the_writers_rule() {
    let mut writer = Server::start(
        ServerOpts::new(ModuleKind::RedisBloom)
            .config("appendonly", "yes")
            .config("aof-use-rdb-preamble", "no"),
    );
    let mut w = writer.raw();
    let items: Vec<String> = (0..300).map(|i| format!("item:{i}")).collect();
    for item in &items {
        assert_eq!(int(&mut w, &format!("BF.ADD k {item}")), 1);
    }
    let rb_debug = run(&mut w, "BF.DEBUG k");
    drop(w);
    writer.stop();
    let aof_dir = writer.dir().join("appendonlydir");
    let mut opts = ferrobloom()
        .module_args(&["EXPANSION", "0"])
        .config("appendonly", "yes");
    for entry in std::fs::read_dir(&aof_dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        opts = opts.file(
            format!("appendonlydir/{name}"),
            std::fs::read(&path).unwrap(),
        );
    }
    let server = Server::start(opts);
    let mut r = server.raw();
    assert_eq!(int(&mut r, "BF.CARD k"), 300);
    let mut exists: Vec<&[u8]> = vec![b"BF.MEXISTS", b"k"];
    exists.extend(items.iter().map(|i| i.as_bytes()));
    assert_eq!(
        run_args(&mut r, &exists),
        Resp::Array(vec![Resp::Int(1); 300])
    );
    assert_eq!(run(&mut r, "BF.DEBUG k"), rb_debug);
    // A client's add still follows the local settings: non-scaling.
    assert_eq!(int(&mut r, "BF.ADD fresh x"), 1);
    assert_eq!(
        run(&mut r, "BF.INFO fresh EXPANSION"),
        Resp::Array(vec![Resp::Nil])
    );
}

/// The same rule on a replica of a RedisBloom master.
#[test]
fn replica_of_redisbloom_creates_filters_as_the_master_did() {
    let master = Server::start(ServerOpts::new(ModuleKind::RedisBloom));
    let replica = Server::start(ferrobloom().module_args(&["EXPANSION", "0"]));
    let mut m = master.raw();
    let mut s = replica.raw();
    ok(&mut s, &format!("REPLICAOF 127.0.0.1 {}", master.port()));
    wait_for(Duration::from_secs(10), || {
        info_field(&mut s, "replication", "master_link_status") == "up"
    });
    let items: Vec<String> = (0..300).map(|i| format!("r:{i}")).collect();
    for item in &items {
        assert_eq!(int(&mut m, &format!("BF.ADD k {item}")), 1);
    }
    let offset = info_field(&mut m, "replication", "master_repl_offset");
    wait_for(Duration::from_secs(10), || {
        info_field(&mut s, "replication", "slave_repl_offset") == offset
    });
    assert_eq!(int(&mut s, "BF.CARD k"), 300);
    assert_eq!(run(&mut s, "BF.DEBUG k"), run(&mut m, "BF.DEBUG k"));
    let dump = |r: &mut RawClient| run(r, "BF.SCANDUMP k 1");
    assert_eq!(dump(&mut s), dump(&mut m));
}

fn info_field(r: &mut RawClient, section: &str, field: &str) -> String {
    let text = match run(r, &format!("INFO {section}")) {
        Resp::Bulk(b) => String::from_utf8(b).unwrap(),
        other => panic!("INFO {section}: {other:?}"),
    };
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_default()
        .trim()
        .to_string()
}

fn wait_for(limit: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "timed out");
        std::thread::sleep(Duration::from_millis(20));
    }
}

// ---------------------------------------------------------------------------
// Interrupted LOADCHUNK sequences
// ---------------------------------------------------------------------------

/// SCANDUMP's header and data chunks of `key`.
fn scandump(r: &mut RawClient, key: &str) -> Vec<(i64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut iter = 0i64;
    loop {
        let reply = run(r, &format!("BF.SCANDUMP {key} {iter}"));
        let Resp::Array(v) = reply else {
            panic!("{reply:?}")
        };
        let (Resp::Int(next), Resp::Bulk(data)) = (&v[0], &v[1]) else {
            panic!("{v:?}")
        };
        if *next == 0 {
            return out;
        }
        out.push((*next, data.clone()));
        iter = *next;
    }
}

fn loadchunk(r: &mut RawClient, key: &str, iter: i64, data: &[u8]) -> Resp {
    let iter = iter.to_string();
    run_args(r, &[b"BF.LOADCHUNK", key.as_bytes(), iter.as_bytes(), data])
}

#[test]
fn an_unfinished_loadchunk_is_visible_and_loses_no_add() {
    let server = Server::start(ferrobloom());
    let mut r = server.raw();
    ok(&mut r, "BF.RESERVE src 0.01 1000");
    let items: Vec<String> = (0..500).map(|i| format!("s{i}")).collect();
    for item in &items {
        int(&mut r, &format!("BF.ADD src {item}"));
    }
    let chunks = scandump(&mut r, "src");
    assert_eq!(chunks.len(), 2, "header and one data chunk");
    let data_bytes = chunks[1].1.len() as u64;

    // The header alone: a filter that is known to be incomplete.
    assert_eq!(
        loadchunk(&mut r, "dst", 1, &chunks[0].1),
        Resp::Simple("OK".into())
    );
    assert_eq!(stats_field(&mut r, "dst", "loading"), Resp::Int(1));
    assert_eq!(stats_field(&mut r, "dst", "loaded_bytes"), Resp::Int(0));
    assert_eq!(info_bf_u64(&mut r, "bf_filters_loading"), 1);
    // Lookups answer from the bits loaded so far.
    assert_eq!(int(&mut r, "BF.EXISTS dst s1"), 0);
    // An add in between is kept when the data arrives.
    assert_eq!(int(&mut r, "BF.ADD dst late"), 1);
    // The data in two halves, the second first.
    let (iter, data) = &chunks[1];
    let half = data.len() / 2;
    let first_iter = iter - (data.len() - half) as i64;
    assert_eq!(
        loadchunk(&mut r, "dst", *iter, &data[half..]),
        Resp::Simple("OK".into())
    );
    assert_eq!(
        stats_field(&mut r, "dst", "loaded_bytes"),
        Resp::Int((data.len() - half) as i64)
    );
    assert_eq!(stats_field(&mut r, "dst", "loading"), Resp::Int(1));
    assert_eq!(
        loadchunk(&mut r, "dst", first_iter, &data[..half]),
        Resp::Simple("OK".into())
    );
    assert_eq!(stats_field(&mut r, "dst", "loading"), Resp::Int(0));
    assert_eq!(
        stats_field(&mut r, "dst", "loaded_bytes"),
        Resp::Int(data_bytes as i64)
    );
    assert_eq!(info_bf_u64(&mut r, "bf_filters_loading"), 0);
    assert_eq!(int(&mut r, "BF.EXISTS dst late"), 1);
    let mut exists: Vec<&[u8]> = vec![b"BF.MEXISTS", b"dst"];
    exists.extend(items.iter().map(|i| i.as_bytes()));
    assert_eq!(
        run_args(&mut r, &exists),
        Resp::Array(vec![Resp::Int(1); items.len()])
    );
    assert_eq!(int(&mut r, "BF.CARD dst"), int(&mut r, "BF.CARD src") + 1);

    // A complete filter takes chunks as RedisBloom does: overwritten.
    assert_eq!(
        loadchunk(&mut r, "dst", *iter, data),
        Resp::Simple("OK".into())
    );
    assert_eq!(
        scandump(&mut r, "dst")[1].1,
        scandump(&mut r, "src")[1].1,
        "the chunk replaced the bytes"
    );

    // Deleting a filter still loading ends its count.
    assert_eq!(
        loadchunk(&mut r, "gone", 1, &chunks[0].1),
        Resp::Simple("OK".into())
    );
    assert_eq!(info_bf_u64(&mut r, "bf_filters_loading"), 1);
    assert_eq!(int(&mut r, "DEL gone"), 1);
    assert_eq!(info_bf_u64(&mut r, "bf_filters_loading"), 0);
}

// ---------------------------------------------------------------------------
// RedisBloom's words where a filter cannot be had
// ---------------------------------------------------------------------------

/// The header of a 4-link filter (`BF.RESERVE bf 0.01 5` and 50 adds)
/// whose first link claims about 2.2e17 bytes and 1.7e18 bits: byte 27 is
/// the top byte of the link's byte count, byte 35 of its bit count, so the
/// link stays consistent (bits = bytes × 8) and only its size is absurd.
fn oversized_bloom_header(r: &mut RawClient) -> Vec<u8> {
    ok(r, "BF.RESERVE bf 0.01 5");
    for i in 0..50 {
        run(r, &format!("BF.ADD bf foo{i}"));
    }
    let mut header = scandump(r, "bf").swap_remove(0).1;
    assert_eq!(header.len(), 20 + 4 * 53, "4 links");
    assert_eq!(int(r, "DEL bf"), 1);
    header[27] = 0x03;
    header[35] = 0x18;
    header
}

/// A one-link chain whose only link (1 byte, 8 bits, 1 hash, error 0.1) is
/// full at 361,141,753,813,009 items, growth 1: its next add must scale out
/// to a link of 2^48 bytes.
const FULL_HUGE_LINK_HEADER: [u8; 73] = [
    0x11, 0x18, 0xf3, 0xdd, 0x74, 0x48, 0x01, 0x00, // chain items
    0x01, 0x00, 0x00, 0x00, // links
    0x01, 0x00, 0x00, 0x00, // options
    0x01, 0x00, 0x00, 0x00, // growth
    0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // bytes
    0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // bits
    0x11, 0x18, 0xf3, 0xdd, 0x74, 0x48, 0x01, 0x00, // link items
    0x9a, 0x99, 0x99, 0x99, 0x99, 0x99, 0xb9, 0x3f, // error 0.1
    0x9a, 0x99, 0x99, 0x99, 0x99, 0x99, 0xb9, 0x3f, // bits per entry 0.1
    0x01, 0x00, 0x00, 0x00, // hashes
    0x11, 0x18, 0xf3, 0xdd, 0x74, 0x48, 0x01, 0x00, // entries
    0x00, // n2
];

/// The header of `CF.RESERVE cf 100` with 50 adds, its bucket count made
/// 2^48 (bytes 8 to 15 hold it): 2^49 bytes of buckets.
fn oversized_cuckoo_header(r: &mut RawClient) -> Vec<u8> {
    ok(r, "CF.RESERVE cf 100");
    for i in 0..50 {
        run(r, &format!("CF.ADD cf foo{i}"));
    }
    let Resp::Array(pair) = run(r, "CF.SCANDUMP cf 0") else {
        panic!("CF.SCANDUMP")
    };
    let Resp::Bulk(mut header) = pair[1].clone() else {
        panic!("{pair:?}")
    };
    assert_eq!(header.len(), 38);
    assert_eq!(int(r, "DEL cf"), 1);
    header[8..12].fill(0);
    header[14] = 0x01;
    assert_eq!(header[8..16], (1u64 << 48).to_le_bytes());
    header
}

/// The bytes a refusal by the per-filter cap names, after `words`.
#[track_caller]
fn cap_refusal_bytes(e: &str, words: &str) -> u64 {
    e.strip_prefix(words)
        .and_then(|rest| rest.strip_prefix(": the filter would take "))
        .and_then(|rest| rest.strip_suffix(" bytes, over bf.max-filter-bytes (4294967296 bytes)"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("not a refusal by the cap after {words:?}: {e}"))
}

/// A refusal by what the server may use, after `words`.
#[track_caller]
fn expect_machine_refusal(e: &str, words: &str) {
    assert!(
        e.starts_with(&format!("{words}: it needs ")) && e.contains("bytes the server may use"),
        "{e}"
    );
}

/// The three cases of RedisBloom's own tests: a LOADCHUNK header whose
/// filter cannot be allocated is `received bad data` (Cuckoo: `Couldn't
/// create filter!`), a scale-out that cannot be allocated is `problem
/// inserting into filter`. The memory guard refuses all three before
/// anything is allocated, in those words, then its numbers; creation keeps
/// `Insufficient memory to create filter`.
#[test]
fn refusals_speak_redisbloom_words() {
    let server = Server::start(ferrobloom());
    let mut r = server.raw();
    let refusals = info_bf_u64(&mut r, "bf_guard_refusals");

    // (a) A Bloom header of a 2.2e17-byte link.
    let header = oversized_bloom_header(&mut r);
    let e = match run_args(&mut r, &[b"BF.LOADCHUNK", b"bf", b"1", &header]) {
        Resp::Error(e) => e,
        other => panic!("{other:?}"),
    };
    let bytes = cap_refusal_bytes(&e, "ERR received bad data");
    assert!(bytes > (3 << 56), "{e}");
    assert_eq!(int(&mut r, "EXISTS bf"), 0);

    // (b) A full link of 3.6e14 items: its scale-out is refused, the
    // filter stays as it was, and no link is added for a chunk to reach.
    assert_eq!(
        run_args(
            &mut r,
            &[b"BF.LOADCHUNK", b"k", b"1", &FULL_HUGE_LINK_HEADER]
        ),
        Resp::Simple("OK".into())
    );
    let debug = run(&mut r, "BF.DEBUG k");
    let e = error(&mut r, "BF.ADD k 1");
    assert_eq!(
        cap_refusal_bytes(&e, "ERR problem inserting into filter"),
        (1 << 48) + 161,
        "{e}"
    );
    for (line, n) in [("BF.MADD k 2 3", 2), ("BF.INSERT k ITEMS 4", 1)] {
        let Resp::Array(items) = run(&mut r, line) else {
            panic!("{line}")
        };
        assert_eq!(items.len(), n, "a refusal does not stop the batch");
        for item in items {
            match item {
                Resp::Error(e) => {
                    cap_refusal_bytes(&e, "ERR problem inserting into filter");
                }
                other => panic!("{line}: {other:?}"),
            }
        }
    }
    assert_eq!(run(&mut r, "BF.DEBUG k"), debug);
    assert_eq!(
        error(&mut r, "BF.LOADCHUNK k 71752852194637 HELLO"),
        "ERR invalid offset - no link found"
    );

    // (c) A Cuckoo header of 2^48 buckets.
    let header = oversized_cuckoo_header(&mut r);
    let e = match run_args(&mut r, &[b"CF.LOADCHUNK", b"cf", b"1", &header]) {
        Resp::Error(e) => e,
        other => panic!("{other:?}"),
    };
    assert!(
        cap_refusal_bytes(&e, "Couldn't create filter!") > 1 << 49,
        "{e}"
    );
    assert_eq!(int(&mut r, "EXISTS cf"), 0);
    assert_eq!(info_bf_u64(&mut r, "bf_guard_refusals"), refusals + 6);

    // Without the cap, what the server may use refuses them in the same
    // words.
    ok(&mut r, "CONFIG SET bf.max-filter-bytes 0");
    let header = oversized_bloom_header(&mut r);
    match run_args(&mut r, &[b"BF.LOADCHUNK", b"bf", b"1", &header]) {
        Resp::Error(e) => expect_machine_refusal(&e, "ERR received bad data"),
        other => panic!("{other:?}"),
    }
    expect_machine_refusal(
        &error(&mut r, "BF.ADD k 1"),
        "ERR problem inserting into filter",
    );
    let header = oversized_cuckoo_header(&mut r);
    match run_args(&mut r, &[b"CF.LOADCHUNK", b"cf", b"1", &header]) {
        Resp::Error(e) => expect_machine_refusal(&e, "Couldn't create filter!"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        run(&mut r, "KEYS *"),
        Resp::Array(vec![Resp::Bulk(b"k".to_vec())])
    );

    // Creation keeps its own words.
    let e = error(&mut r, "BF.RESERVE big 0.01 1000000000000000000");
    expect_machine_refusal(&e, "ERR Insufficient memory to create filter");
    let e = error(&mut r, "CF.RESERVE big 1000000000000000");
    expect_machine_refusal(&e, "ERR Insufficient memory to create filter");
    assert_eq!(run(&mut r, "PING"), Resp::Simple("PONG".into()));
}

/// `args` sent to RedisBloom (`o`) and FerroBloom (`f`): the first answers
/// `words` exactly, the second `words`, then its numbers.
#[track_caller]
fn compare(o: &mut RawClient, f: &mut RawClient, args: &[&[u8]], words: &str) {
    let (x, y) = (decode(&o.cmd(args)), decode(&f.cmd(args)));
    assert_eq!(x, Resp::Error(words.into()), "RedisBloom 2.8.2");
    match y {
        Resp::Error(e) => assert!(e.starts_with(&format!("{words}: ")), "{e}"),
        other => panic!("{other:?}"),
    }
}

/// The same three cases on RedisBloom 2.8.2 itself, run on Redis 7.4 (on
/// 7.0, where a module's allocation cannot fail, 2.8.2 aborts the server
/// on each): FerroBloom's replies start with its words. After the refused
/// scale-out of (b), 2.8.2 keeps a link without memory in the chain, and
/// the LOADCHUNK that reaches it crashes the server: that step is sent to
/// FerroBloom only (above).
#[test]
fn refusal_words_are_redisbloom_s() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let redis74 = root.join("target/servers/redis-7.4");
    if !redis74.is_file() {
        eprintln!("skipped: {} not found (make servers)", redis74.display());
        return;
    }
    let oracle = Server::start(ServerOpts::new(ModuleKind::RedisBloom).server_binary(&redis74));
    let server = Server::start(ferrobloom());
    let (mut o, mut f) = (oracle.raw(), server.raw());
    let (ho, hf) = (
        oversized_bloom_header(&mut o),
        oversized_bloom_header(&mut f),
    );
    assert_eq!(ho, hf);
    compare(
        &mut o,
        &mut f,
        &[b"BF.LOADCHUNK", b"bf", b"1", &ho],
        "ERR received bad data",
    );
    for c in [&mut o, &mut f] {
        assert_eq!(
            run_args(c, &[b"BF.LOADCHUNK", b"k", b"1", &FULL_HUGE_LINK_HEADER]),
            Resp::Simple("OK".into())
        );
    }
    compare(
        &mut o,
        &mut f,
        &[b"BF.ADD", b"k", b"1"],
        "ERR problem inserting into filter",
    );
    let (ho, hf) = (
        oversized_cuckoo_header(&mut o),
        oversized_cuckoo_header(&mut f),
    );
    assert_eq!(ho, hf);
    compare(
        &mut o,
        &mut f,
        &[b"CF.LOADCHUNK", b"cf", b"1", &ho],
        "Couldn't create filter!",
    );
    for c in [&mut o, &mut f] {
        assert_eq!(run(c, "EXISTS bf cf"), Resp::Int(0));
        assert_eq!(run(c, "PING"), Resp::Simple("PONG".into()));
    }
}
