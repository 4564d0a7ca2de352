//! Migration between RedisBloom 2.8.2 and FerroBloom, in both directions,
//! by the routes `docs/migration.md` gives an operator:
//!
//! * a client loop of BF.SCANDUMP on the source and BF.LOADCHUNK on the
//!   target (spec §5);
//! * the source's `dump.rdb` (SAVE) loaded by the target at start-up
//!   (spec §6), i.e. swapping the module on the same data;
//! * DUMP on the source and RESTORE on the target.
//!
//! The source holds filters of several shapes: one link, many links,
//! NONSCALING, EXPANSION 1 and 3, auto-created, BF.INSERT-created, and a
//! single-link filter of 67 MB whose SCANDUMP stream is split into 16 MiB
//! chunks. After each move every item answers 1 and BF.INFO, BF.DEBUG,
//! BF.CARD, the DUMP bytes and the SCANDUMP stream are identical; the moved
//! filters then take the same new items with the same replies.

mod common;

use std::fs;

use common::client::show;
use common::{decode, ModuleKind, RawClient, Resp, Server, ServerOpts};

const OK: &[u8] = b"+OK\r\n";
const CHUNK_CAP: usize = 16 * 1024 * 1024;
/// BF.RESERVE big 0.0001 26100000: one link of 67,249,304 bytes (> 64 MiB).
const BIG_BYTES: usize = 67_249_304;

fn opts(kind: &ModuleKind) -> ServerOpts {
    ServerOpts::new(kind.clone())
}

fn words(line: &str) -> Vec<Vec<u8>> {
    line.split_whitespace()
        .map(|w| w.as_bytes().to_vec())
        .collect()
}

fn command(name: &str, key: &str, rest: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut cmd = vec![name.as_bytes().to_vec(), key.as_bytes().to_vec()];
    cmd.extend(rest.iter().cloned());
    cmd
}

fn numbered(prefix: &str, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| format!("{prefix}{i}").into_bytes())
        .collect()
}

/// One source filter: the commands that build it and every item given.
struct Shape {
    key: &'static str,
    commands: Vec<Vec<Vec<u8>>>,
    items: Vec<Vec<u8>>,
}

fn shapes() -> Vec<Shape> {
    let mut out = Vec::new();
    let mut shape = |key: &'static str, create: Option<&str>, items: Vec<Vec<u8>>| {
        let mut commands: Vec<Vec<Vec<u8>>> = create.map(words).into_iter().collect();
        for batch in items.chunks(1000) {
            commands.push(command("BF.MADD", key, batch));
        }
        out.push(Shape {
            key,
            commands,
            items,
        });
    };
    shape(
        "one-link",
        Some("BF.RESERVE one-link 0.001 5000"),
        numbered("o", 2000),
    );
    // Capacities 10, 20, ..., 1280: eight links.
    shape(
        "many-links",
        Some("BF.RESERVE many-links 0.01 10"),
        numbered("m", 1500),
    );
    shape(
        "nonscaling",
        Some("BF.RESERVE nonscaling 0.001 1000 NONSCALING"),
        numbered("n", 900),
    );
    shape(
        "expansion1",
        Some("BF.RESERVE expansion1 0.01 50 EXPANSION 1"),
        numbered("e1-", 400),
    );
    shape(
        "expansion3",
        Some("BF.RESERVE expansion3 0.001 20 EXPANSION 3"),
        numbered("e3-", 1000),
    );
    shape("auto", None, numbered("a", 250));
    shape(
        "big",
        Some("BF.RESERVE big 0.0001 26100000"),
        numbered("big", 20_000),
    );
    let mut inserted =
        words("BF.INSERT inserted CAPACITY 300 ERROR 0.05 EXPANSION 4 NONSCALING ITEMS");
    let items = numbered("ins", 100);
    inserted.extend(items.iter().cloned());
    out.push(Shape {
        key: "inserted",
        commands: vec![inserted],
        items,
    });
    out
}

fn build(raw: &mut RawClient, shapes: &[Shape]) {
    for s in shapes {
        for reply in raw.pipeline(&s.commands) {
            assert!(
                reply == OK || (reply.starts_with(b"*") && !reply.contains(&b'-')),
                "building {}: {}",
                s.key,
                show(&reply)
            );
        }
    }
    // The shapes are what they claim to be.
    let links =
        |raw: &mut RawClient, key: &str| match decode(&raw.cmd(&["BF.INFO", key, "FILTERS"])) {
            Resp::Array(v) => v[0].clone(),
            other => panic!("BF.INFO {key}: {other:?}"),
        };
    assert_eq!(links(raw, "one-link"), Resp::Int(1));
    assert_eq!(links(raw, "many-links"), Resp::Int(8));
    assert_eq!(links(raw, "expansion1"), Resp::Int(8));
    assert_eq!(links(raw, "expansion3"), Resp::Int(5));
    assert_eq!(links(raw, "big"), Resp::Int(1));
    assert_eq!(
        raw.cmd(&["BF.INFO", "big", "SIZE"]),
        format!("*1\r\n:{}\r\n", BIG_BYTES + 96).into_bytes()
    );
}

/// What a filter looks like to clients.
struct Snapshot {
    debug: Vec<u8>,
    info: Vec<u8>,
    card: Vec<u8>,
    dump: Vec<u8>,
    scandump: Vec<(i64, Vec<u8>)>,
}

fn scandump_all(raw: &mut RawClient, key: &str) -> Vec<(i64, Vec<u8>)> {
    let mut chunks = Vec::new();
    let mut iter = 0i64;
    loop {
        let (next, data) = scandump(raw, key, iter);
        if next == 0 {
            return chunks;
        }
        chunks.push((next, data));
        iter = next;
    }
}

fn scandump(raw: &mut RawClient, key: &str, iter: i64) -> (i64, Vec<u8>) {
    let reply = raw.cmd(&["BF.SCANDUMP", key, &iter.to_string()]);
    match decode(&reply) {
        Resp::Array(items) => match items.as_slice() {
            [Resp::Int(next), Resp::Bulk(data)] => (*next, data.clone()),
            _ => panic!("BF.SCANDUMP {key} {iter}: {}", show(&reply)),
        },
        _ => panic!("BF.SCANDUMP {key} {iter}: {}", show(&reply)),
    }
}

fn dump(raw: &mut RawClient, key: &str) -> Vec<u8> {
    match decode(&raw.cmd(&["DUMP", key])) {
        Resp::Bulk(payload) => payload,
        other => panic!("DUMP {key}: {other:?}"),
    }
}

fn snapshot(raw: &mut RawClient, key: &str) -> Snapshot {
    Snapshot {
        debug: raw.cmd(&["BF.DEBUG", key]),
        info: raw.cmd(&["BF.INFO", key]),
        card: raw.cmd(&["BF.CARD", key]),
        dump: dump(raw, key),
        scandump: scandump_all(raw, key),
    }
}

/// Two DUMP payloads hold the same value: byte for byte when both servers
/// write the same RDB version, else all but the trailer (RDB version and
/// CRC), which is the server's (the suite may run FerroBloom on a newer
/// server than the oracle's Redis 7.0).
fn same_payload(a: &[u8], b: &[u8]) -> bool {
    if a.len() < 10 || b.len() < 10 {
        return a == b;
    }
    let (a_body, a_trailer) = a.split_at(a.len() - 10);
    let (b_body, b_trailer) = b.split_at(b.len() - 10);
    if a_trailer[..2] == b_trailer[..2] {
        a == b
    } else {
        a_body == b_body
    }
}

/// The RDB version a server writes (from the trailer of a DUMP).
fn rdb_version(raw: &mut RawClient) -> u16 {
    assert_eq!(raw.cmd(&["BF.RESERVE", "version-probe", "0.1", "1"]), OK);
    let payload = dump(raw, "version-probe");
    assert_eq!(raw.cmd(&["DEL", "version-probe"]), b":1\r\n");
    u16::from_le_bytes([payload[payload.len() - 10], payload[payload.len() - 9]])
}

/// Every filter of `target` is identical to the one of `source`, and every
/// item answers 1 on the target.
#[track_caller]
fn assert_moved(source: &mut RawClient, target: &mut RawClient, shapes: &[Shape], context: &str) {
    assert_eq!(
        target.cmd(&["DBSIZE"]),
        format!(":{}\r\n", shapes.len()).into_bytes(),
        "{context}: DBSIZE"
    );
    for s in shapes {
        let k = s.key;
        let (want, got) = (snapshot(source, k), snapshot(target, k));
        assert!(
            !want.debug.starts_with(b"-"),
            "{context}: {k}: {}",
            show(&want.debug)
        );
        assert_eq!(
            show(&got.debug),
            show(&want.debug),
            "{context}: BF.DEBUG {k}"
        );
        assert_eq!(show(&got.info), show(&want.info), "{context}: BF.INFO {k}");
        assert_eq!(got.card, want.card, "{context}: BF.CARD {k}");
        assert!(
            same_payload(&got.dump, &want.dump),
            "{context}: DUMP {k} differs"
        );
        assert_eq!(
            got.scandump.len(),
            want.scandump.len(),
            "{context}: SCANDUMP chunks of {k}"
        );
        for (i, (g, w)) in got.scandump.iter().zip(&want.scandump).enumerate() {
            assert!(g == w, "{context}: SCANDUMP chunk {i} of {k} differs");
        }
        for batch in s.items.chunks(2000) {
            let reply = target.cmd(&command("BF.MEXISTS", k, batch));
            let mut all = format!("*{}\r\n", batch.len()).into_bytes();
            for _ in batch {
                all.extend_from_slice(b":1\r\n");
            }
            assert!(reply == all, "{context}: an item of {k} is missing");
        }
    }
}

/// The operator's SCANDUMP -> LOADCHUNK loop, one chunk in flight at a time
/// (the big filter is never held whole). Returns the chunk sizes sent.
fn move_by_chunks(source: &mut RawClient, target: &mut RawClient, key: &str) -> Vec<usize> {
    let mut sizes = Vec::new();
    let mut iter = 0;
    loop {
        let (next, data) = scandump(source, key, iter);
        if next == 0 {
            return sizes;
        }
        let reply = target.cmd(&[
            b"BF.LOADCHUNK".as_slice(),
            key.as_bytes(),
            next.to_string().as_bytes(),
            &data,
        ]);
        assert_eq!(show(&reply), "+OK\\r\\n", "BF.LOADCHUNK {key} {next}");
        sizes.push(data.len());
        iter = next;
    }
}

/// SAVE on the source; its dump.rdb, as a file for the target's start-up.
fn saved_rdb(source: &Server) -> Vec<u8> {
    assert_eq!(source.raw().cmd(&["SAVE"]), OK);
    let path = source.dir().join("dump.rdb");
    let rdb = fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(rdb.starts_with(b"REDIS"), "not an RDB file");
    rdb
}

/// Source of one kind, targets of the other: chunks, DUMP/RESTORE, RDB.
fn migrate(from: ModuleKind, to: ModuleKind) {
    let name = |k: &ModuleKind| match k {
        ModuleKind::FerroBloom => "FerroBloom",
        ModuleKind::RedisBloom => "RedisBloom 2.8.2",
        _ => "?",
    };
    let direction = format!("{} -> {}", name(&from), name(&to));
    let shapes = shapes();
    let source = Server::start(opts(&from));
    let mut src = source.raw();
    let target = Server::start(opts(&to));
    let mut dst = target.raw();
    // RDB files and DUMP payloads only move to a server of the same or a
    // newer RDB version (the suite may run FerroBloom on another server
    // than the oracle's Redis 7.0); SCANDUMP / LOADCHUNK moves anywhere.
    let by_rdb = rdb_version(&mut src) <= rdb_version(&mut dst);
    build(&mut src, &shapes);

    // (a) SCANDUMP -> LOADCHUNK.
    for s in &shapes {
        let sizes = move_by_chunks(&mut src, &mut dst, s.key);
        if s.key == "big" {
            // Header, four 16 MiB chunks, the rest.
            assert_eq!(
                sizes,
                vec![
                    73,
                    CHUNK_CAP,
                    CHUNK_CAP,
                    CHUNK_CAP,
                    CHUNK_CAP,
                    BIG_BYTES - 4 * CHUNK_CAP
                ],
                "{direction}: chunks of big"
            );
        }
    }
    assert_moved(
        &mut src,
        &mut dst,
        &shapes,
        &format!("{direction} by SCANDUMP/LOADCHUNK"),
    );

    if !by_rdb {
        println!("{direction}: the target's server cannot read the source's RDB version; only SCANDUMP/LOADCHUNK checked");
        return;
    }

    // (c) DUMP -> RESTORE, on the same (emptied) target.
    assert_eq!(dst.cmd(&["FLUSHALL"]), OK);
    for s in &shapes {
        let payload = dump(&mut src, s.key);
        let reply = dst.cmd(&[b"RESTORE".as_slice(), s.key.as_bytes(), b"0", &payload]);
        assert_eq!(show(&reply), "+OK\\r\\n", "{direction}: RESTORE {}", s.key);
    }
    assert_moved(
        &mut src,
        &mut dst,
        &shapes,
        &format!("{direction} by DUMP/RESTORE"),
    );
    drop(dst);
    drop(target);

    // (b) The source's RDB file loaded at the target's start-up.
    let rdb = saved_rdb(&source);
    let target = Server::start(opts(&to).file("dump.rdb", rdb));
    let mut dst = target.raw();
    assert_moved(
        &mut src,
        &mut dst,
        &shapes,
        &format!("{direction} by RDB file"),
    );

    // The moved filters go on exactly like the originals (scale-outs
    // included).
    for s in &shapes {
        let more = command("BF.MADD", s.key, &numbered("after-move-", 1500));
        assert_eq!(
            show(&src.cmd(&more)),
            show(&dst.cmd(&more)),
            "{direction}: BF.MADD on {} after the move",
            s.key
        );
    }
    assert_moved(
        &mut src,
        &mut dst,
        &shapes,
        &format!("{direction}, grown after the move"),
    );
    for server in [&source, &target] {
        assert!(
            !server.log().contains("panicked"),
            "{direction}: panic in a log"
        );
    }
}

#[test]
fn redisbloom_to_ferrobloom() {
    migrate(ModuleKind::RedisBloom, ModuleKind::FerroBloom);
}

#[test]
fn ferrobloom_to_redisbloom() {
    migrate(ModuleKind::FerroBloom, ModuleKind::RedisBloom);
}
