//! The loading state of a LOADCHUNK sequence (a filter made by a SCANDUMP
//! header whose data chunks have not all arrived) is part of the value:
//! a full sync, DEBUG RELOAD, an AOF rewrite (with and without its RDB
//! preamble) and DUMP/RESTORE in the middle of the sequence leave the
//! master, its replica and an AOF replay with the same value, and no item
//! added between the header and the data becomes a false negative. Bloom
//! (BF.*) and Cuckoo (CF.*) filters alike.

mod common;

use std::time::Duration;

use common::client::{digest, ferrobloom, int, ok, run};
use common::info::info_field;
use common::replication::{replicate, wait_for_aof_rewrite, wait_for_replica};
use common::{decode, RawClient, Resp, Server};

/// A field of BF.STATS / CF.STATS (RESP2: names and values in turn).
fn stats_field(r: &mut RawClient, kind: Kind, key: &str, field: &str) -> Resp {
    let Resp::Array(items) = run(r, &format!("{}.STATS {key}", kind.prefix())) else {
        panic!("STATS {key}")
    };
    items
        .chunks(2)
        .find(|pair| pair[0].as_str().as_deref() == Some(field))
        .map(|pair| pair[1].clone())
        .unwrap_or_else(|| panic!("no {field} in STATS {key}"))
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Bloom,
    Cuckoo,
}

impl Kind {
    fn prefix(self) -> &'static str {
        match self {
            Kind::Bloom => "BF",
            Kind::Cuckoo => "CF",
        }
    }

    fn reserve(self, key: &str) -> String {
        match self {
            Kind::Bloom => format!("BF.RESERVE {key} 0.01 1000"),
            Kind::Cuckoo => format!("CF.RESERVE {key} 1000"),
        }
    }
}

/// SCANDUMP's header and data chunks of `key`.
fn scandump(r: &mut RawClient, kind: Kind, key: &str) -> Vec<(i64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut iter = 0i64;
    loop {
        let reply = run(r, &format!("{}.SCANDUMP {key} {iter}", kind.prefix()));
        let Resp::Array(v) = reply else {
            panic!("{reply:?}")
        };
        let Resp::Int(next) = v[0] else {
            panic!("{v:?}")
        };
        if next == 0 {
            return out;
        }
        let Resp::Bulk(data) = &v[1] else {
            panic!("{v:?}")
        };
        out.push((next, data.clone()));
        iter = next;
    }
}

fn loadchunk(r: &mut RawClient, kind: Kind, key: &str, iter: i64, data: &[u8]) {
    let name = format!("{}.LOADCHUNK", kind.prefix());
    let iter = iter.to_string();
    let reply = decode(&r.cmd(&[name.as_bytes(), key.as_bytes(), iter.as_bytes(), data]));
    assert_eq!(reply, Resp::Simple("OK".into()), "{name} {key} {iter}");
}

/// How many of `items` the filter at `key` finds.
fn found(r: &mut RawClient, kind: Kind, key: &str, items: &[String]) -> usize {
    items
        .iter()
        .filter(|i| int(r, &format!("{}.EXISTS {key} {i}", kind.prefix())) == 1)
        .count()
}

/// What happens between the header (and the adds after it) and the data
/// chunks.
#[derive(Clone, Copy, Debug)]
enum Break {
    /// A replica attaches: a full synchronisation ships the value in an RDB.
    FullSync,
    /// DEBUG RELOAD: save and load the RDB.
    Reload,
    /// BGREWRITEAOF, with or without its RDB preamble; DEBUG LOADAOF after
    /// the chunks replays the rewritten file and the chunks after it.
    AofRewrite { preamble: bool },
    /// DUMP, DEL, RESTORE.
    DumpRestore,
}

fn rewrite_aof(m: &mut RawClient) {
    let started = run(m, "BGREWRITEAOF");
    assert!(matches!(started, Resp::Simple(_)), "{started:?}");
    wait_for_aof_rewrite(m, Duration::from_secs(30));
}

/// Header, 20 adds of items the source does not hold, the break, the data
/// chunks: every item is found on the master (and the replica), digests
/// agree, and an AOF replay rebuilds the same value.
fn loading_state_survives(kind: Kind, brk: Break) {
    let preamble = matches!(brk, Break::AofRewrite { preamble: true });
    let master = Server::start(
        ferrobloom()
            .config("appendonly", "yes")
            .config("aof-use-rdb-preamble", if preamble { "yes" } else { "no" }),
    );
    let mut m = master.raw();
    ok(&mut m, &kind.reserve("src"));
    let items: Vec<String> = (0..300).map(|i| format!("s{i}")).collect();
    for item in &items {
        int(&mut m, &format!("{}.ADD src {item}", kind.prefix()));
    }
    let chunks = scandump(&mut m, kind, "src");
    assert!(chunks.len() >= 2, "a header and data");
    loadchunk(&mut m, kind, "dst", chunks[0].0, &chunks[0].1);
    let late: Vec<String> = (0..20).map(|i| format!("late{i}")).collect();
    for item in &late {
        assert_eq!(int(&mut m, &format!("{}.ADD dst {item}", kind.prefix())), 1);
    }
    let loading_digest = digest(&mut m, "dst");

    let mut replica = None;
    match brk {
        Break::FullSync => {
            let s = Server::start(ferrobloom());
            replicate(&master, &s, Duration::from_secs(30));
            let mut r = s.raw();
            assert_eq!(digest(&mut r, "dst"), loading_digest, "after the full sync");
            replica = Some(s);
        }
        Break::Reload => ok(&mut m, "DEBUG RELOAD"),
        Break::AofRewrite { .. } => rewrite_aof(&mut m),
        Break::DumpRestore => {
            let Resp::Bulk(payload) = run(&mut m, "DUMP dst") else {
                panic!("DUMP dst")
            };
            assert_eq!(int(&mut m, "DEL dst"), 1);
            let reply = decode(&m.cmd(&[b"RESTORE".as_slice(), b"dst", b"0", &payload]));
            assert_eq!(reply, Resp::Simple("OK".into()));
        }
    }
    assert_eq!(digest(&mut m, "dst"), loading_digest, "{brk:?}");

    for (iter, data) in &chunks[1..] {
        loadchunk(&mut m, kind, "dst", *iter, data);
    }
    assert_eq!(stats_field(&mut m, kind, "dst", "loading"), Resp::Int(0));
    assert_eq!(
        found(&mut m, kind, "dst", &late),
        20,
        "{brk:?}: added items"
    );
    assert_eq!(
        found(&mut m, kind, "dst", &items),
        300,
        "{brk:?}: loaded items"
    );
    let done = digest(&mut m, "dst");

    if let Some(s) = &replica {
        let mut r = s.raw();
        wait_for_replica(&mut m, &mut r, Duration::from_secs(30));
        assert_eq!(
            found(&mut r, kind, "dst", &late),
            20,
            "replica: added items"
        );
        assert_eq!(digest(&mut r, "dst"), done, "the replica's digest");
    }
    // The AOF (rewritten or not) replays to the same value.
    ok(&mut m, "DEBUG LOADAOF");
    assert_eq!(digest(&mut m, "dst"), done, "{brk:?}: after DEBUG LOADAOF");
    assert_eq!(found(&mut m, kind, "dst", &late), 20, "after DEBUG LOADAOF");
    // And once more from a rewrite of the finished filter.
    rewrite_aof(&mut m);
    ok(&mut m, "DEBUG LOADAOF");
    assert_eq!(
        digest(&mut m, "dst"),
        done,
        "{brk:?}: rewritten when complete"
    );
}

#[test]
fn bloom_loading_state_survives_a_full_sync() {
    loading_state_survives(Kind::Bloom, Break::FullSync);
}

#[test]
fn cuckoo_loading_state_survives_a_full_sync() {
    loading_state_survives(Kind::Cuckoo, Break::FullSync);
}

#[test]
fn loading_state_survives_debug_reload() {
    loading_state_survives(Kind::Bloom, Break::Reload);
    loading_state_survives(Kind::Cuckoo, Break::Reload);
}

#[test]
fn loading_state_survives_aof_rewrites() {
    for preamble in [true, false] {
        loading_state_survives(Kind::Bloom, Break::AofRewrite { preamble });
        loading_state_survives(Kind::Cuckoo, Break::AofRewrite { preamble });
    }
}

#[test]
fn loading_state_survives_dump_and_restore() {
    loading_state_survives(Kind::Bloom, Break::DumpRestore);
    loading_state_survives(Kind::Cuckoo, Break::DumpRestore);
}

/// Without adds in between, a complete filter saves exactly what the
/// source saves (RedisBloom's bytes), and its loading state counts in
/// `INFO bf` and MEMORY USAGE only while it lasts.
#[test]
fn a_finished_sequence_saves_plain_bytes_and_counts_its_progress_while_loading() {
    let server = Server::start(ferrobloom());
    let mut r = server.raw();
    for kind in [Kind::Bloom, Kind::Cuckoo] {
        ok(&mut r, "FLUSHALL");
        ok(&mut r, &kind.reserve("src"));
        for i in 0..100 {
            int(&mut r, &format!("{}.ADD src s{i}", kind.prefix()));
        }
        let chunks = scandump(&mut r, kind, "src");
        loadchunk(&mut r, kind, "dst", chunks[0].0, &chunks[0].1);
        let field = |r: &mut RawClient, f: &str| -> u64 { info_field(r, "bf", f).parse().unwrap() };
        assert_eq!(field(&mut r, "bf_filters_loading"), 1, "{kind:?}");
        let usage_src = int(&mut r, "MEMORY USAGE src");
        let usage_dst = int(&mut r, "MEMORY USAGE dst");
        let progress = field(&mut r, "bf_loading_bytes");
        assert!(progress > 0);
        // Per-key overheads are the same for both keys (same name length).
        assert_eq!(usage_dst - usage_src, progress as i64, "{kind:?}");
        // Half of the data, in disjoint pieces: the progress grows.
        let (iter, data) = &chunks[1];
        let start = *iter - 1 - data.len() as i64;
        for piece in (0..data.len()).step_by(64).step_by(2) {
            let end = (piece + 16).min(data.len());
            loadchunk(
                &mut r,
                kind,
                "dst",
                start + end as i64 + 1,
                &data[piece..end],
            );
        }
        assert!(field(&mut r, "bf_loading_bytes") > progress, "{kind:?}");
        for (iter, data) in &chunks[1..] {
            loadchunk(&mut r, kind, "dst", *iter, data);
        }
        assert_eq!(field(&mut r, "bf_filters_loading"), 0, "{kind:?}");
        assert_eq!(field(&mut r, "bf_loading_bytes"), 0, "{kind:?}");
        assert_eq!(
            int(&mut r, "MEMORY USAGE dst"),
            int(&mut r, "MEMORY USAGE src")
        );
        let dump = |r: &mut RawClient, key: &str| r.cmd(&["DUMP", key]);
        assert_eq!(dump(&mut r, "dst"), dump(&mut r, "src"), "{kind:?}");
        assert_eq!(digest(&mut r, "dst"), digest(&mut r, "src"), "{kind:?}");
    }
}

/// Adds made while loading may scale the filter out past the header's
/// stream (Bloom) or grow a sub-filter (Cuckoo): the value still saves,
/// reloads and completes with the stream's chunks.
#[test]
fn a_filter_that_grew_while_loading_reloads_and_completes() {
    let server = Server::start(ferrobloom());
    let mut r = server.raw();
    for kind in [Kind::Bloom, Kind::Cuckoo] {
        ok(&mut r, "FLUSHALL");
        match kind {
            Kind::Bloom => ok(&mut r, "BF.RESERVE src 0.01 100"),
            Kind::Cuckoo => ok(&mut r, "CF.RESERVE src 64 EXPANSION 1"),
        }
        let items: Vec<String> = (0..40).map(|i| format!("s{i}")).collect();
        for item in &items {
            int(&mut r, &format!("{}.ADD src {item}", kind.prefix()));
        }
        let chunks = scandump(&mut r, kind, "src");
        loadchunk(&mut r, kind, "dst", chunks[0].0, &chunks[0].1);
        let late: Vec<String> = (0..150).map(|i| format!("late{i}")).collect();
        for item in &late {
            int(&mut r, &format!("{}.ADD dst {item}", kind.prefix()));
        }
        let info = run(&mut r, &format!("{}.INFO dst", kind.prefix()));
        let grown = match kind {
            Kind::Bloom => {
                format!("{info:?}").contains("Number of filters\"), Int(2)")
                    || format!("{info:?}").contains("Number of filters\"), Int(3)")
            }
            Kind::Cuckoo => !format!("{info:?}").contains("Number of filters\"), Int(1)"),
        };
        assert!(grown, "{kind:?} did not grow: {info:?}");
        let before = digest(&mut r, "dst");
        ok(&mut r, "DEBUG RELOAD");
        assert_eq!(digest(&mut r, "dst"), before, "{kind:?}");
        for (iter, data) in &chunks[1..] {
            loadchunk(&mut r, kind, "dst", *iter, data);
        }
        assert_eq!(stats_field(&mut r, kind, "dst", "loading"), Resp::Int(0));
        assert_eq!(found(&mut r, kind, "dst", &items), 40, "{kind:?}");
        assert_eq!(found(&mut r, kind, "dst", &late), 150, "{kind:?}");
    }
}
