//! A key's value as the server stores it, read and written over a raw
//! client (DUMP, RESTORE, MEMORY USAGE), the sketch test vectors, and the
//! round trips through an RDB file or an AOF rewrite that the sketch tests
//! share.

use std::fs;
use std::time::Duration;

use super::replication::rewrite_aof;
use super::{dump_parts, restamp_dump, ModuleKind, RawClient, Server, ServerOpts};

const OK: &[u8] = b"+OK\r\n";

/// The content of a RESP bulk string reply.
#[track_caller]
pub fn bulk(reply: &[u8]) -> Vec<u8> {
    assert_eq!(
        reply.first(),
        Some(&b'$'),
        "{}",
        String::from_utf8_lossy(reply)
    );
    let end = reply.iter().position(|&b| b == b'\r').expect("CRLF");
    let len: usize = std::str::from_utf8(&reply[1..end])
        .unwrap()
        .parse()
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(reply)));
    reply[end + 2..end + 2 + len].to_vec()
}

/// The value part of `key`'s DUMP (the RDB version is the server's).
#[track_caller]
pub fn dumped(r: &mut RawClient, key: &str) -> Vec<u8> {
    let payload = bulk(&r.cmd(&["DUMP", key]));
    dump_parts(&payload).0.to_vec()
}

/// RESTORE of `payload` under `key` with no TTL; the raw reply.
pub fn restore(r: &mut RawClient, key: &str, payload: &[u8]) -> Vec<u8> {
    r.cmd(&[b"RESTORE".as_slice(), key.as_bytes(), b"0", payload])
}

/// MEMORY USAGE of `key`.
#[track_caller]
pub fn memory_usage(r: &mut RawClient, key: &str) -> i64 {
    let reply = r.cmd(&["MEMORY", "USAGE", key]);
    String::from_utf8_lossy(&reply[1..reply.len() - 2])
        .parse()
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&reply)))
}

/// crates/core/tests/data/sketches-vectors.json: RedisBloom 2.8.2's
/// replies and DUMP payloads for the sketch types.
pub fn sketch_vectors() -> serde_json::Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/crates/core/tests/data/sketches-vectors.json"
    );
    serde_json::from_slice(&fs::read(path).expect("the vectors")).expect("JSON")
}

/// The `vectors` of one group of `sketch_vectors`; at least four, so a
/// truncated file cannot pass for a complete one.
pub fn vectors_of(group: &str) -> Vec<serde_json::Value> {
    let json = sketch_vectors();
    let vectors = json[group]["vectors"].as_array().expect("vectors");
    assert!(vectors.len() >= 4);
    vectors.clone()
}

/// SAVE on `server` (through `r`, its client) and the RDB file it wrote.
#[track_caller]
pub fn saved_rdb(server: &Server, r: &mut RawClient) -> Vec<u8> {
    assert_eq!(r.cmd(&["SAVE"]), OK);
    fs::read(server.dir().join("dump.rdb")).expect("dump.rdb written by SAVE")
}

/// A FerroBloom server started from `rdb`.
pub fn ferrobloom_loading(rdb: Vec<u8>) -> Server {
    Server::start(ServerOpts::new(ModuleKind::FerroBloom).file("dump.rdb", rdb))
}

/// MEMORY USAGE of each key is the same on both servers when they are the
/// same server version (the allocator's share differs between versions).
#[track_caller]
pub fn assert_same_memory_usage(
    (fb, f): (&Server, &mut RawClient),
    (rb, r): (&Server, &mut RawClient),
    keys: &[&str],
) {
    if fb.version() == rb.version() {
        for k in keys {
            assert_eq!(
                f.cmd(&["MEMORY", "USAGE", k]),
                r.cmd(&["MEMORY", "USAGE", k]),
                "MEMORY USAGE {k}"
            );
        }
    }
}

/// A FerroBloom server with an AOF and no RDB preamble, so a rewrite
/// writes every key as commands.
pub fn ferrobloom_with_plain_aof() -> Server {
    Server::start(
        ServerOpts::new(ModuleKind::FerroBloom)
            .config("appendonly", "yes")
            .config("aof-use-rdb-preamble", "no"),
    )
}

/// Rewrites the AOF of `server` (through `r`), restarts it and returns a
/// client in database `db`, checking that nothing landed in database 0.
#[track_caller]
pub fn rewrite_aof_and_restart(server: &mut Server, r: &mut RawClient, db: u32) -> RawClient {
    rewrite_aof(r, Duration::from_secs(30));
    server.restart();
    let mut f = server.raw();
    assert_eq!(f.cmd(&["DBSIZE"]), b":0\r\n", "nothing lands in database 0");
    assert_eq!(f.line(&format!("SELECT {db}")), OK);
    f
}

/// RESTOREs each of `payloads`, restamped to `server`'s RDB version, under
/// `prefix` followed by its index; the keys, in the order of `payloads`.
#[track_caller]
pub fn restore_restamped(
    server: &Server,
    r: &mut RawClient,
    prefix: &str,
    payloads: &[Vec<u8>],
) -> Vec<String> {
    let rdb_version = server.version().rdb_version();
    let keys: Vec<String> = (0..payloads.len())
        .map(|i| format!("{prefix}{i}"))
        .collect();
    for (key, payload) in keys.iter().zip(payloads) {
        assert_eq!(
            restore(r, key, &restamp_dump(payload, rdb_version)),
            OK,
            "{key}"
        );
    }
    keys
}

/// COPY of `key` to a new key `copied` holds `value` (the value part of a
/// DUMP), and DEBUG DIGEST-VALUE finds the copy equal to the original.
#[track_caller]
pub fn assert_copy_holds(r: &mut RawClient, key: &str, value: &[u8]) {
    assert_eq!(r.cmd(&["COPY", key, "copied"]), b":1\r\n");
    assert_eq!(dumped(r, "copied"), value);
    assert_eq!(
        r.cmd(&["DEBUG", "DIGEST-VALUE", "copied"]),
        r.cmd(&["DEBUG", "DIGEST-VALUE", key])
    );
}
