//! Cuckoo filters (`MBbloomCF`) as data: datasets move between RedisBloom
//! 2.8.2 and FerroBloom unchanged, before FerroBloom serves the CF.*
//! commands. RedisBloom builds the filters (with kick-outs, expansions and
//! deletions); FerroBloom loads its RDB file and its DUMP payloads, and
//! must hand back the same bytes: DUMP, SAVE read back by RedisBloom, an
//! AOF rewrite, COPY and DEBUG RELOAD. A damaged payload is refused and
//! stores nothing.

mod common;

use std::fs;

use common::{decode, dump_parts, restamp_dump, ModuleKind, RawClient, Resp, Server, ServerOpts};

const OK: &[u8] = b"+OK\r\n";

/// Filters of several shapes, built by RedisBloom 2.8.2.
fn build_on_redisbloom(r: &mut RawClient) -> Vec<String> {
    let mut keys = Vec::new();
    for (key, reserve) in [
        ("small", "CF.RESERVE small 8"),
        ("grown", "CF.RESERVE grown 16 BUCKETSIZE 2 EXPANSION 2"),
        ("wide", "CF.RESERVE wide 1000 BUCKETSIZE 4 MAXITERATIONS 50"),
        ("fixed", "CF.RESERVE fixed 64 EXPANSION 0"),
    ] {
        assert_eq!(r.line(reserve), OK, "{reserve}");
        for i in 0..300 {
            // A full non-growing filter answers an error: that is part of
            // the state too.
            r.cmd(&["CF.ADD", key, &format!("{key}:{i}")]);
        }
        for i in (0..300).step_by(7) {
            r.cmd(&["CF.DEL", key, &format!("{key}:{i}")]);
        }
        keys.push(key.to_string());
    }
    assert_eq!(
        r.line("CF.INSERT auto ITEMS a b c \"\""),
        b"*4\r\n:1\r\n:1\r\n:1\r\n:1\r\n"
    );
    keys.push("auto".to_string());
    // A Bloom filter beside them.
    assert_eq!(r.line("BF.ADD bloom x"), b":1\r\n");
    keys.push("bloom".to_string());
    keys
}

/// The DUMP payload of every key.
fn dumps(r: &mut RawClient, keys: &[String]) -> Vec<Vec<u8>> {
    keys.iter()
        .map(|k| match decode(&r.cmd(&["DUMP", k])) {
            Resp::Bulk(payload) => payload,
            other => panic!("DUMP {k}: {other:?}"),
        })
        .collect()
}

/// The values of DUMP payloads without their envelope (the server's RDB
/// version and the CRC, checked here): the suite may run FerroBloom on
/// another server than the oracle's Redis 7.0, whose payloads carry
/// another RDB version around the same value bytes.
fn values(payloads: &[Vec<u8>]) -> Vec<Vec<u8>> {
    payloads.iter().map(|p| dump_parts(p).0.to_vec()).collect()
}

/// The DUMP payloads of every key on `server`, checked to carry its RDB
/// version, as values.
fn dumped_values(server: &Server, keys: &[String]) -> Vec<Vec<u8>> {
    let version = server.version().rdb_version();
    let payloads = dumps(&mut server.raw(), keys);
    for (k, p) in keys.iter().zip(&payloads) {
        assert_eq!(dump_parts(p).1, version, "DUMP {k}: RDB version");
    }
    values(&payloads)
}

fn saved_rdb(server: &Server) -> Vec<u8> {
    assert_eq!(server.raw().cmd(&["SAVE"]), OK);
    fs::read(server.dir().join("dump.rdb")).expect("dump.rdb written by SAVE")
}

#[test]
fn cuckoo_filters_move_between_redisbloom_and_ferrobloom_unchanged() {
    let rb = Server::start(ServerOpts::new(ModuleKind::RedisBloom));
    let mut r = rb.raw();
    let keys = build_on_redisbloom(&mut r);
    let payloads = dumps(&mut r, &keys);
    let want = values(&payloads);

    // RedisBloom's RDB file loads in FerroBloom, every value the same.
    let fb =
        Server::start(ServerOpts::new(ModuleKind::FerroBloom).file("dump.rdb", saved_rdb(&rb)));
    let mut f = fb.raw();
    assert_eq!(
        dumped_values(&fb, &keys),
        want,
        "DUMP after loading RedisBloom's RDB"
    );
    assert_eq!(f.cmd(&["TYPE", "grown"]), b"+MBbloomCF\r\n");
    // MEMORY USAGE is the filter's Size, as RedisBloom reports it. The
    // server adds its own per-key overhead, so the totals compare only on
    // the oracle's server.
    if fb.version() == rb.version() {
        for k in &keys[..4] {
            assert_eq!(
                f.cmd(&["MEMORY", "USAGE", k]),
                r.cmd(&["MEMORY", "USAGE", k]),
                "MEMORY USAGE {k}"
            );
        }
    }

    // Its DUMP payloads (RDB version 10: every server takes them) restore
    // in FerroBloom...
    for (k, payload) in keys.iter().zip(&payloads) {
        let copy = format!("{k}-restored");
        assert_eq!(
            f.cmd(&[b"RESTORE".as_slice(), copy.as_bytes(), b"0", payload]),
            OK
        );
    }
    let restored: Vec<String> = keys.iter().map(|k| format!("{k}-restored")).collect();
    assert_eq!(
        dumped_values(&fb, &restored),
        want,
        "DUMP of the restored filters"
    );
    // ... COPY and DEBUG RELOAD keep them...
    assert_eq!(f.cmd(&["COPY", "grown", "grown-copy"]), b":1\r\n");
    assert_eq!(
        dumped_values(&fb, &["grown-copy".to_string()]),
        [want[1].clone()]
    );
    assert_eq!(
        f.cmd(&["DEBUG", "DIGEST-VALUE", "grown-copy"]),
        f.cmd(&["DEBUG", "DIGEST-VALUE", "grown"])
    );
    assert_eq!(f.cmd(&["DEBUG", "RELOAD"]), OK);
    assert_eq!(dumped_values(&fb, &keys), want, "DUMP after DEBUG RELOAD");

    // ... and FerroBloom's data loads back in RedisBloom: its RDB file
    // where the oracle's server reads that RDB version, else its DUMP
    // payloads in the oracle's envelope.
    let rb_version = rb.version().rdb_version();
    let back = if fb.version().rdb_version() <= rb_version {
        Server::start(ServerOpts::new(ModuleKind::RedisBloom).file("dump.rdb", saved_rdb(&fb)))
    } else {
        let back = Server::start(ServerOpts::new(ModuleKind::RedisBloom));
        for (k, payload) in keys.iter().zip(dumps(&mut f, &keys)) {
            let payload = restamp_dump(&payload, rb_version);
            assert_eq!(
                back.raw()
                    .cmd(&[b"RESTORE".as_slice(), k.as_bytes(), b"0", &payload]),
                OK
            );
        }
        back
    };
    assert_eq!(
        dumped_values(&back, &keys),
        want,
        "DUMP in RedisBloom after FerroBloom's SAVE"
    );
    assert_eq!(
        back.raw().cmd(&["CF.EXISTS", "grown", "grown:1"]),
        b":1\r\n"
    );
}

#[test]
fn an_aof_rewrite_keeps_cuckoo_filters() {
    let rb = Server::start(ServerOpts::new(ModuleKind::RedisBloom));
    let mut r = rb.raw();
    let keys = build_on_redisbloom(&mut r);
    let payloads = dumps(&mut r, &keys);
    let want = values(&payloads);
    let mut server = Server::start(
        ServerOpts::new(ModuleKind::FerroBloom)
            .config("appendonly", "yes")
            .config("aof-use-rdb-preamble", "no"),
    );
    let mut f = server.raw();
    for (k, payload) in keys.iter().zip(&payloads) {
        assert_eq!(
            f.cmd(&[b"RESTORE".as_slice(), k.as_bytes(), b"0", payload]),
            OK
        );
    }
    // A rewrite without the RDB preamble writes each filter as commands.
    assert_eq!(f.cmd(&["BGREWRITEAOF"]).first(), Some(&b'+'));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let info = String::from_utf8(f.cmd(&["INFO", "persistence"])).unwrap();
        if info.contains("aof_rewrite_in_progress:0") && info.contains("aof_rewrite_scheduled:0") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "AOF rewrite never finished"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let base: Vec<u8> = fs::read_dir(server.dir().join("appendonlydir"))
        .expect("appendonlydir")
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains(".base."))
        .flat_map(|p| fs::read(p).unwrap())
        .collect();
    // RedisBloom's form: a header and a chunk per sub-filter.
    let loadchunks = base.windows(12).filter(|w| w == b"CF.LOADCHUNK").count();
    assert!(
        loadchunks >= 10,
        "{loadchunks} CF.LOADCHUNK in the rewritten AOF"
    );
    server.restart();
    assert_eq!(
        dumped_values(&server, &keys),
        want,
        "DUMP after replaying the rewritten AOF"
    );
}

#[test]
fn damaged_cuckoo_payloads_are_refused_and_store_nothing() {
    let rb = Server::start(ServerOpts::new(ModuleKind::RedisBloom));
    let mut r = rb.raw();
    assert_eq!(r.line("CF.RESERVE c 64"), OK);
    r.cmd(&["CF.ADD", "c", "x"]);
    let payload = dumps(&mut r, &["c".to_string()]).remove(0);
    let fb = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let mut f = fb.raw();
    // Every truncation, with a valid trailer (so Redis hands it to the
    // type's loader), is refused.
    let body = &payload[..payload.len() - 10];
    let trailer = |b: &[u8]| {
        let mut p = b.to_vec();
        p.extend_from_slice(&ferrobloom_core::dump_format::RDB_VERSION_7_0.to_le_bytes());
        let crc = ferrobloom_core::dump_format::crc64_jones(&p);
        p.extend_from_slice(&crc.to_le_bytes());
        p
    };
    assert_eq!(
        f.cmd(&[b"RESTORE".as_slice(), b"ok", b"0", &trailer(body)]),
        OK
    );
    // A cut inside the last bytes can be completed by the trailer's own
    // bytes (Redis reads the value from the whole payload): such a payload
    // is a different but well-formed filter, which RedisBloom also takes.
    let mut completed = 0;
    for cut in 1..body.len() {
        let damaged = trailer(&body[..cut]);
        let reply = f.cmd(&[b"RESTORE".as_slice(), b"bad", b"0", &damaged]);
        if reply == OK {
            completed += 1;
            assert_eq!(
                r.cmd(&[b"RESTORE".as_slice(), b"bad", b"0", &damaged]),
                OK,
                "FerroBloom took a payload cut at {cut} that RedisBloom refuses"
            );
            let bad = ["bad".to_string()];
            assert_eq!(values(&dumps(&mut f, &bad)), values(&dumps(&mut r, &bad)));
            f.cmd(&["DEL", "bad"]);
            r.cmd(&["DEL", "bad"]);
            continue;
        }
        assert!(reply.starts_with(b"-"), "cut at {cut}: {reply:?}");
        assert_eq!(f.cmd(&["EXISTS", "bad"]), b":0\r\n", "cut at {cut}");
    }
    assert!(
        completed <= 2,
        "{completed} truncated payloads were accepted"
    );
    assert_eq!(f.cmd(&["EXISTS", "bad"]), b":0\r\n");
    assert_eq!(f.cmd(&["PING"]), b"+PONG\r\n");
}
