//! t-digests (`TDIS-TYPE`) as data: RedisBloom 2.8.2's t-digests load into
//! FerroBloom (RDB file, DUMP payload) and come back byte for byte (DUMP,
//! DEBUG RELOAD, COPY, AOF rewrite).

#[path = "tdigest/commands.rs"]
mod commands;
mod common;
#[path = "tdigest/merge.rs"]
mod merge;
#[path = "tdigest/reads.rs"]
mod reads;
#[path = "tdigest/replication.rs"]
mod replication;

use common::stored::{
    assert_copy_holds, assert_same_memory_usage, bulk, dumped, ferrobloom_loading,
    ferrobloom_with_plain_aof, memory_usage, restore, restore_restamped, rewrite_aof_and_restart,
    saved_rdb, vectors_of,
};
use common::{dump_parts, hex, restamp_dump, ModuleKind, Server, ServerOpts};
use ferrobloom_core::dump_format::RDB_VERSION_7_0;
use ferrobloom_core::tdigest::format::{format_double, DoubleStyle};
use ferrobloom_core::tdigest::{dump, TDigest};
use ferrobloom_core::Unguarded;

const OK: &[u8] = b"+OK\r\n";

/// The `tdigest_scenarios` vectors: RedisBloom 2.8.2's replies and DUMP
/// payloads.
fn vectors() -> Vec<serde_json::Value> {
    vectors_of("tdigest_scenarios")
}

/// RedisBloom 2.8.2's DUMP payloads of the `tdigest_scenarios` vectors.
fn vector_dumps() -> Vec<Vec<u8>> {
    vectors()
        .iter()
        .map(|v| hex(v["dump_hex"].as_str().expect("dump_hex")))
        .collect()
}

/// What FerroBloom's DUMP of a restored 2.8.2 payload holds (the value
/// part): the same bytes, except for a digest of one observation, which
/// 2.8.2 saves unmerged (and answers `nan` for) and FerroBloom keeps as a
/// centroid (spec §9.2, issue 30 point 3).
fn expected(payload: &[u8]) -> Vec<u8> {
    let td = dump::load_payload(payload, &Unguarded).expect("2.8.2's payload loads");
    if td.merged_nodes() == 0 && td.unmerged_nodes() == 1 {
        let fixed = dump::dump_payload(&td, RDB_VERSION_7_0);
        let back = dump::load_payload(&fixed, &Unguarded).unwrap();
        assert_eq!((back.merged_nodes(), back.unmerged_nodes()), (1, 0));
        assert_eq!(back.total_weight(), 1);
        dump_parts(&fixed).0.to_vec()
    } else {
        dump_parts(payload).0.to_vec()
    }
}

/// A double as 2.8.2 prints it on Redis 7.0 (`%.17g`), as the running
/// server prints it: 7.2 and Valkey print the shortest round-trip form.
fn printed(text: &str, redis_70: bool) -> String {
    if redis_70 {
        return text.to_string();
    }
    match text {
        // 7.2 drops the sign of a NaN.
        "nan" | "-nan" => "nan".to_string(),
        _ => format_double(text.parse().expect("a double"), DoubleStyle::Redis72),
    }
}

/// A RESP2 reply of RedisBloom 2.8.2 on Redis 7.0 as FerroBloom's server
/// prints it: every bulk string that is a double reprinted by [`printed`]
/// (the oracle always runs on Debian's 7.0; FerroBloom may run on 7.4 or
/// Valkey).
fn as_printed_by(reply: &[u8], redis_70: bool) -> Vec<u8> {
    if redis_70 {
        return reply.to_vec();
    }
    let text = std::str::from_utf8(reply).expect("a RESP2 reply of doubles is text");
    let mut out = String::new();
    let mut lines = text.split_terminator("\r\n");
    while let Some(line) = lines.next() {
        if line.starts_with('$') && line != "$-1" {
            let content = lines.next().expect("a bulk string's content");
            let content = if content.parse::<f64>().is_ok() || content == "-nan" {
                printed(content, false)
            } else {
                content.to_string()
            };
            out += &format!("${}\r\n{content}\r\n", content.len());
        } else {
            out += line;
            out += "\r\n";
        }
    }
    out.into_bytes()
}

#[test]
fn redisbloom_dumps_restore_and_dump_back_byte_identical() {
    let fb = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let mut f = fb.raw();
    let dumps = vector_dumps();
    let keys = restore_restamped(&fb, &mut f, "td", &dumps);
    for (key, payload) in keys.iter().zip(&dumps) {
        assert_eq!(f.cmd(&["TYPE", key]), b"+TDIS-TYPE\r\n");
        assert_eq!(dumped(&mut f, key), expected(payload), "DUMP {key}");
    }
    assert_copy_holds(&mut f, "td0", &expected(&dumps[0]));
    // 2.8.2 answers one constant for every t-digest; ours follows the
    // content.
    for other in &keys[1..] {
        assert_ne!(
            f.cmd(&["DEBUG", "DIGEST-VALUE", "td0"]),
            f.cmd(&["DEBUG", "DIGEST-VALUE", other]),
            "{other}"
        );
    }

    assert_eq!(f.cmd(&["DEBUG", "RELOAD"]), OK);
    for (key, payload) in keys.iter().zip(&dumps) {
        assert_eq!(
            dumped(&mut f, key),
            expected(payload),
            "after DEBUG RELOAD {key}"
        );
    }
}

#[test]
fn memory_usage_follows_2_8_2s_formula() {
    let fb = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let mut f = fb.raw();
    let rdb_version = fb.version().rdb_version();
    let dumps = vector_dumps();
    // Two empty digests of known capacities, restored from payloads built
    // here.
    let small = TDigest::new(5.0, &Unguarded).unwrap();
    let big = TDigest::new(500.0, &Unguarded).unwrap();
    for (key, td) in [("small", &small), ("big", &big)] {
        let p = dump::dump_payload(td, rdb_version);
        assert_eq!(restore(&mut f, key, &p), OK);
    }
    // 16 bytes per node of capacity 6c + 10, plus the server's own per-key
    // overhead, which does not depend on the value.
    assert_eq!(
        memory_usage(&mut f, "big") - memory_usage(&mut f, "small"),
        16 * ((6 * 500 + 10) - (6 * 5 + 10))
    );
    assert_eq!(
        restore(&mut f, "v", &restamp_dump(&dumps[0], rdb_version)),
        OK
    );
    assert!(memory_usage(&mut f, "v") > 16 * 40);
}

#[test]
fn an_rdb_written_by_redisbloom_loads() {
    let rb = Server::start(ServerOpts::new(ModuleKind::RedisBloom));
    let mut r = rb.raw();
    assert_eq!(r.line("TDIGEST.CREATE plain"), OK);
    assert_eq!(r.line("TDIGEST.CREATE small COMPRESSION 5"), OK);
    assert_eq!(r.line("TDIGEST.CREATE empty COMPRESSION 50"), OK);
    for i in 0..300 {
        let v = format!("{}", (i * 37 % 101) as f64 / 7.0);
        r.cmd(&["TDIGEST.ADD", "plain", &v, "1e6"]);
        r.cmd(&["TDIGEST.ADD", "small", &v]);
    }
    assert_eq!(r.line("SELECT 3"), OK);
    assert_eq!(r.line("TDIGEST.CREATE elsewhere"), OK);
    r.line("TDIGEST.ADD elsewhere 1 2 3");
    assert_eq!(r.line("SELECT 0"), OK);
    let keys = ["plain", "small", "empty"];
    let want: Vec<Vec<u8>> = keys.iter().map(|k| dumped(&mut r, k)).collect();
    assert_eq!(r.line("SELECT 3"), OK);
    let want_elsewhere = dumped(&mut r, "elsewhere");
    assert_eq!(r.line("SELECT 0"), OK);
    let rdb = saved_rdb(&rb, &mut r);

    let fb = ferrobloom_loading(rdb);
    let mut f = fb.raw();
    for (k, want) in keys.iter().zip(&want) {
        assert_eq!(f.cmd(&["TYPE", k]), b"+TDIS-TYPE\r\n");
        assert_eq!(
            &dumped(&mut f, k),
            want,
            "DUMP {k} after loading RedisBloom's RDB"
        );
    }
    assert_eq!(f.line("SELECT 3"), OK);
    assert_eq!(dumped(&mut f, "elsewhere"), want_elsewhere);
    assert_eq!(f.line("SELECT 0"), OK);
    assert_same_memory_usage((&fb, &mut f), (&rb, &mut r), &keys);
}

#[test]
fn an_aof_rewrite_keeps_t_digests_in_their_database() {
    let mut fb = ferrobloom_with_plain_aof();
    let dumps = vector_dumps();
    let mut f = fb.raw();
    assert_eq!(f.line("SELECT 5"), OK);
    restore_restamped(&fb, &mut f, "k", &dumps);
    let mut f = rewrite_aof_and_restart(&mut fb, &mut f, 5);
    for (i, p) in dumps.iter().enumerate() {
        assert_eq!(dumped(&mut f, &format!("k{i}")), expected(p), "k{i}");
    }
}
