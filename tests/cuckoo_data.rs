//! Cuckoo filters (`MBbloomCF`) as data: datasets move between RedisBloom
//! 2.8.2 and FerroBloom unchanged, before FerroBloom serves the CF.*
//! commands. RedisBloom builds the filters (with kick-outs, expansions and
//! deletions); FerroBloom loads its RDB file and its DUMP payloads, and
//! must hand back the same bytes: DUMP, SAVE read back by RedisBloom, an
//! AOF rewrite, COPY and DEBUG RELOAD. A damaged payload is refused and
//! stores nothing.

mod common;

use std::fs;

use common::{ModuleKind, RawClient, Server, ServerOpts};

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

fn dumps(r: &mut RawClient, keys: &[String]) -> Vec<Vec<u8>> {
    keys.iter().map(|k| r.cmd(&["DUMP", k])).collect()
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
    let want = dumps(&mut r, &keys);
    for (k, d) in keys.iter().zip(&want) {
        assert!(d.starts_with(b"$"), "DUMP {k}");
    }

    // RedisBloom's RDB file loads in FerroBloom, every value the same.
    let fb =
        Server::start(ServerOpts::new(ModuleKind::FerroBloom).file("dump.rdb", saved_rdb(&rb)));
    let mut f = fb.raw();
    assert_eq!(
        dumps(&mut f, &keys),
        want,
        "DUMP after loading RedisBloom's RDB"
    );
    assert_eq!(f.cmd(&["TYPE", "grown"]), b"+MBbloomCF\r\n");
    // MEMORY USAGE is the filter's Size, as RedisBloom reports it.
    for k in &keys[..4] {
        assert_eq!(
            f.cmd(&["MEMORY", "USAGE", k]),
            r.cmd(&["MEMORY", "USAGE", k]),
            "MEMORY USAGE {k}"
        );
    }

    // Its DUMP payloads restore in FerroBloom...
    for (k, d) in keys.iter().zip(&want) {
        let payload = &d[d.iter().position(|&b| b == b'\n').unwrap() + 1..d.len() - 2];
        let copy = format!("{k}-restored");
        assert_eq!(
            f.cmd(&[b"RESTORE".as_slice(), copy.as_bytes(), b"0", payload]),
            OK
        );
        assert_eq!(f.cmd(&["DUMP", &copy]), *d, "DUMP of the restored {k}");
    }
    // ... COPY and DEBUG RELOAD keep them...
    assert_eq!(f.cmd(&["COPY", "grown", "grown-copy"]), b":1\r\n");
    assert_eq!(f.cmd(&["DUMP", "grown-copy"]), want[1]);
    assert_eq!(
        f.cmd(&["DEBUG", "DIGEST-VALUE", "grown-copy"]),
        f.cmd(&["DEBUG", "DIGEST-VALUE", "grown"])
    );
    assert_eq!(f.cmd(&["DEBUG", "RELOAD"]), OK);
    assert_eq!(dumps(&mut f, &keys), want, "DUMP after DEBUG RELOAD");

    // ... and FerroBloom's RDB file loads back in RedisBloom.
    let back =
        Server::start(ServerOpts::new(ModuleKind::RedisBloom).file("dump.rdb", saved_rdb(&fb)));
    assert_eq!(
        dumps(&mut back.raw(), &keys),
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
    let want = dumps(&mut r, &keys);
    let mut server = Server::start(
        ServerOpts::new(ModuleKind::FerroBloom)
            .config("appendonly", "yes")
            .config("aof-use-rdb-preamble", "no"),
    );
    let mut f = server.raw();
    for (k, d) in keys.iter().zip(&want) {
        let payload = &d[d.iter().position(|&b| b == b'\n').unwrap() + 1..d.len() - 2];
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
    server.restart();
    assert_eq!(
        dumps(&mut server.raw(), &keys),
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
    let d = r.cmd(&["DUMP", "c"]);
    let payload = d[d.iter().position(|&b| b == b'\n').unwrap() + 1..d.len() - 2].to_vec();
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
            assert_eq!(f.cmd(&["DUMP", "bad"]), r.cmd(&["DUMP", "bad"]));
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
