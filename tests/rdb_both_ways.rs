//! RDB files move both ways between RedisBloom 2.8.2 and FerroBloom, with a
//! key of every type both modules have: Bloom filters (plain, scaled out
//! over several sub-filters, non-scaling), Cuckoo filters (one and several
//! sub-filters), Count-Min sketches (4-byte cells: small, LZF-compressed,
//! merged, and one saturated by 2.8.2), Top-K sketches (colliding and not,
//! long items and items sharing prefixes) and t-digests (several
//! compressions, an empty one).
//!
//! The same commands go to a server with each module, every reply
//! compared. 2.8.2's RDB then loads into FerroBloom, and FerroBloom's into
//! 2.8.2 (through DUMP/RESTORE where FerroBloom runs on a server with a
//! newer RDB version), and each server after each load must hold the
//! same values and answer the same reads:
//! * Bloom, Cuckoo and Count-Min: the DUMP value bytes;
//! * Top-K: the DUMP fields with the strings decompressed and 2.8.2's heap
//!   pointer bytes masked (`common::differential::topk_dump`, spec §6.2);
//! * t-digest: the answers of reads, after a TDIGEST.QUANTILE on both
//!   sides first (2.8.2 compresses on reads and on SAVE, FerroBloom
//!   changes nothing on a read: docs/tdigest.md), so DUMP bytes are not
//!   compared for them;
//! * reads of every kind: BF.EXISTS/BF.INFO, CF.COUNT/CF.INFO,
//!   CMS.QUERY/CMS.INFO (its first three pairs: FerroBloom adds
//!   `cell_size`, docs/cms.md), TOPK.LIST/QUERY/COUNT/INFO,
//!   TDIGEST.QUANTILE/CDF/RANK/BYRANK/TRIMMED_MEAN/MIN/MAX.
//!
//! Not here: Top-K items with NUL bytes and the empty item, which 2.8.2
//! saves cut or loads as null (docs/topk.md; tests/differential_topk.rs
//! checks them), and decay < 1 with colliding buckets (2.8.2's `rand()`).

mod common;

use common::differential::{args, b, comparable_value, quote, show_reply, Args};
use common::{
    decode, doubles_in_one_form, restamp_dump, ModuleKind, RawClient, Resp, Server, ServerOpts,
};

const OK: &[u8] = b"+OK\r\n";
const BLOOM: &[u8] = b"+MBbloom--\r\n";
const CUCKOO: &[u8] = b"+MBbloomCF\r\n";
const CMS: &[u8] = b"+CMSk-TYPE\r\n";
const TOPK: &[u8] = b"+TopK-TYPE\r\n";
const TDIGEST: &[u8] = b"+TDIS-TYPE\r\n";

/// The items every read asks about: some added, some not.
fn probe() -> Args {
    let mut items: Args = (0..40).map(|i| format!("i{i}").into_bytes()).collect();
    items.extend([b("foo"), b("bar"), b("fo"), b("foobar"), b("absent")]);
    items.push(vec![b'L'; 300]);
    items
}

/// The commands that build the data, sent to both modules.
fn workload() -> Vec<Args> {
    let mut cmds = vec![
        args!["BF.RESERVE", "bf:plain", "0.001", "1000"],
        args!["BF.RESERVE", "bf:scaled", "0.01", "50", "EXPANSION", "2"],
        args!["BF.RESERVE", "bf:fixed", "0.05", "100", "NONSCALING"],
        args!["CF.RESERVE", "cf:one", "1000"],
        args![
            "CF.RESERVE",
            "cf:grown",
            "64",
            "BUCKETSIZE",
            "2",
            "EXPANSION",
            "1"
        ],
        args!["CMS.INITBYPROB", "cms:big", "0.001", "0.01"],
        args!["CMS.INITBYDIM", "cms:small", "5", "2"],
        args!["CMS.INITBYDIM", "cms:merged", "2000", "7"],
        args!["TOPK.RESERVE", "topk:collide", "4", "3", "2", "1"],
        args!["TOPK.RESERVE", "topk:wide", "10", "200", "4", "1"],
        args!["TOPK.RESERVE", "topk:default", "5"],
        args!["TOPK.RESERVE", "topk:empty", "3", "8", "3", "1"],
        args!["TDIGEST.CREATE", "td:plain"],
        args!["TDIGEST.CREATE", "td:small", "COMPRESSION", "5"],
        args!["TDIGEST.CREATE", "td:empty", "COMPRESSION", "50"],
    ];
    let items: Args = (0..300).map(|i| format!("i{i}").into_bytes()).collect();
    let mut bf = args!["BF.MADD", "bf:plain"];
    bf.extend(items[..200].iter().cloned());
    cmds.push(bf);
    for chunk in items.chunks(50) {
        let mut a = args!["BF.MADD", "bf:scaled"];
        a.extend(chunk.iter().cloned());
        cmds.push(a);
        let mut a = args!["CF.INSERT", "cf:grown", "ITEMS"];
        a.extend(chunk.iter().cloned());
        cmds.push(a);
    }
    let mut a = args!["BF.MADD", "bf:fixed"];
    a.extend(items[..80].iter().cloned());
    cmds.push(a);
    for it in &items[..30] {
        cmds.push(args!["CF.ADD", "cf:one", it]);
    }
    let mut a = args!["CMS.INCRBY", "cms:big"];
    for (n, it) in items.iter().enumerate() {
        a.push(it.clone());
        a.push((n % 17 + 1).to_string().into_bytes());
    }
    cmds.push(a);
    cmds.push(args!["CMS.INCRBY", "cms:small", "foo", "3", "bar", "5"]);
    cmds.push(args![
        "CMS.MERGE",
        "cms:merged",
        "1",
        "cms:big",
        "WEIGHTS",
        "3"
    ]);
    // Top-K: collisions with decay 1 (every one decrements, as in 2.8.2),
    // items sharing prefixes, a long one, INCRBY 0 into the heap.
    let topk_items: Args = [&b"foo"[..], b"fo", b"foobar", b"bar", b"i1", b"i2", b"i3"]
        .iter()
        .map(b)
        .chain([vec![b'L'; 300]])
        .collect();
    for (n, it) in topk_items.iter().cycle().take(60).enumerate() {
        let key = if n % 2 == 0 {
            "topk:collide"
        } else {
            "topk:wide"
        };
        cmds.push(args![
            "TOPK.ADD",
            key,
            it,
            &topk_items[n * 7 % topk_items.len()]
        ]);
    }
    cmds.push(args!["TOPK.INCRBY", "topk:wide", "i5", "40", "i6", "0"]);
    cmds.push(args!["TOPK.INCRBY", "topk:collide", "i9", "7", "foo", "2"]);
    // Decay 0.9 (the default): one item, so no bucket collides and no
    // decay is drawn (2.8.2 draws from `rand()`; FerroBloom keeps a count
    // of its draws in record 0's padding, docs/topk.md).
    cmds.push(args!["TOPK.ADD", "topk:default", "foo", "foo", "foo"]);
    // t-digests: many values with weights, few values, none.
    for i in 0..300 {
        let v = format!("{}", (i * 37 % 101) as f64 / 7.0);
        cmds.push(args!["TDIGEST.ADD", "td:plain", &v, "1e6"]);
        cmds.push(args!["TDIGEST.ADD", "td:small", &v]);
    }
    cmds
}

fn send_both(rb: &mut RawClient, fb: &mut RawClient, cmd: &[Vec<u8>]) {
    let (x, y) = (rb.cmd(cmd), fb.cmd(cmd));
    assert_eq!(
        doubles_in_one_form(&x),
        doubles_in_one_form(&y),
        "{}",
        common::differential::show_cmd(cmd)
    );
}

fn saved_rdb(server: &Server) -> Vec<u8> {
    assert_eq!(server.raw().cmd(&["SAVE"]), OK);
    std::fs::read(server.dir().join("dump.rdb")).expect("dump.rdb")
}

fn sorted_keys(r: &mut RawClient) -> Vec<Vec<u8>> {
    let Resp::Array(keys) = decode(&r.cmd(&["KEYS", "*"])) else {
        panic!("KEYS")
    };
    let mut keys: Vec<Vec<u8>> = keys
        .into_iter()
        .map(|k| match k {
            Resp::Bulk(k) => k,
            other => panic!("{other:?}"),
        })
        .collect();
    keys.sort();
    keys
}

/// Sorted keys with each key's TYPE and its value in compared form: the
/// DUMP value bytes, Top-K fields with the pointers masked, nothing for a
/// t-digest (its reads are compared instead).
fn values(server: &Server) -> Vec<(String, Vec<u8>, Vec<u8>)> {
    let mut r = server.raw();
    sorted_keys(&mut r)
        .into_iter()
        .map(|k| {
            let t = r.cmd(&[b"TYPE".as_slice(), k.as_slice()]);
            let Resp::Bulk(p) = decode(&r.cmd(&[b"DUMP".as_slice(), k.as_slice()])) else {
                panic!("DUMP {}", quote(&k, 60))
            };
            let value = if t == TDIGEST {
                Vec::new()
            } else {
                comparable_value(&p)
            };
            (quote(&k, 60), t, value)
        })
        .collect()
}

/// CMS.INFO's first three pairs (2.8.2's), RESP2.
fn cms_info(reply: &[u8]) -> Vec<u8> {
    match decode(reply) {
        Resp::Array(mut v) => {
            v.truncate(6);
            format!("{v:?}").into_bytes()
        }
        _ => reply.to_vec(),
    }
}

/// What a client reads of every key, by type.
fn reads(server: &Server) -> Vec<(String, Vec<u8>)> {
    let mut r = server.raw();
    let items = probe();
    let with = |mut a: Args| {
        a.extend(items.iter().cloned());
        a
    };
    let mut out = Vec::new();
    for k in sorted_keys(&mut r) {
        let t = r.cmd(&[b"TYPE".as_slice(), k.as_slice()]);
        let cmds: Vec<Args> = match t.as_slice() {
            BLOOM => vec![with(args!["BF.MEXISTS", &k]), args!["BF.INFO", &k]],
            CUCKOO => vec![with(args!["CF.MEXISTS", &k]), args!["CF.INFO", &k]]
                .into_iter()
                .chain(items.iter().take(10).map(|i| args!["CF.COUNT", &k, i]))
                .collect(),
            CMS => vec![with(args!["CMS.QUERY", &k]), args!["CMS.INFO", &k]],
            TOPK => vec![
                args!["TOPK.LIST", &k, "WITHCOUNT"],
                with(args!["TOPK.QUERY", &k]),
                with(args!["TOPK.COUNT", &k]),
                args!["TOPK.INFO", &k],
            ],
            TDIGEST => vec![
                args![
                    "TDIGEST.QUANTILE",
                    &k,
                    "0",
                    "0.01",
                    "0.25",
                    "0.5",
                    "0.9",
                    "1"
                ],
                args!["TDIGEST.CDF", &k, "-1", "0", "3.5", "7", "14.3", "100"],
                args!["TDIGEST.RANK", &k, "-1", "0", "7", "100"],
                args!["TDIGEST.BYRANK", &k, "0", "1", "1000", "100000000"],
                args!["TDIGEST.TRIMMED_MEAN", &k, "0.1", "0.9"],
                args!["TDIGEST.MIN", &k],
                args!["TDIGEST.MAX", &k],
            ],
            _ => panic!("{}: type {}", quote(&k, 60), show_reply(&t)),
        };
        for c in cmds {
            let reply = r.cmd(&c);
            let reply = if c[0] == b"CMS.INFO" {
                cms_info(&reply)
            } else {
                reply
            };
            out.push((common::differential::show_cmd(&c), reply));
        }
    }
    out
}

/// Asserts `server` holds `want` and answers `want_reads`.
fn check(
    server: &Server,
    what: &str,
    want: &[(String, Vec<u8>, Vec<u8>)],
    want_reads: &[(String, Vec<u8>)],
) {
    let got = values(server);
    assert_eq!(got.len(), want.len(), "{what}: keys");
    for (g, w) in got.iter().zip(want) {
        assert_eq!(
            (&g.0, show_reply(&g.1)),
            (&w.0, show_reply(&w.1)),
            "{what}: key and type"
        );
        assert!(
            g.2 == w.2,
            "{what}: value of {}:\n  want {}\n  got  {}",
            w.0,
            String::from_utf8_lossy(&w.2),
            String::from_utf8_lossy(&g.2)
        );
    }
    for (g, w) in reads(server).iter().zip(want_reads) {
        assert_eq!(g.0, w.0, "{what}");
        // The oracle runs on Redis 7.0, FerroBloom maybe elsewhere.
        assert_eq!(
            doubles_in_one_form(&g.1),
            doubles_in_one_form(&w.1),
            "{what}: {}",
            w.0
        );
    }
}

#[test]
fn rdb_files_move_both_ways() {
    let rb = Server::start(ServerOpts::new(ModuleKind::RedisBloom));
    let fb = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let (mut r, mut f) = (rb.raw(), fb.raw());
    for c in workload() {
        send_both(&mut r, &mut f, &c);
    }
    // A sketch 2.8.2 saturates at 2^32 − 1 (FerroBloom refuses the
    // overflowing pair, docs/cms.md): 2.8.2's data goes to FerroBloom's
    // server by RESTORE, so both hold what 2.8.2 made.
    assert_eq!(r.line("CMS.INITBYDIM cms:full 3 2"), OK);
    r.line("CMS.INCRBY cms:full a 4294967295 b 7");
    let Resp::Bulk(full) = decode(&r.line("DUMP cms:full")) else {
        panic!("DUMP cms:full")
    };
    let full = restamp_dump(&full, fb.version().rdb_version());
    assert_eq!(
        f.cmd(&[b"RESTORE".as_slice(), b"cms:full", b"0", &full]),
        OK
    );
    // 2.8.2 compresses its t-digests on a read (and on SAVE): a QUANTILE
    // on both first, so both answer from the same digest from here on.
    for k in ["td:plain", "td:small", "td:empty"] {
        send_both(&mut r, &mut f, &args!["TDIGEST.QUANTILE", k, "0.5"]);
    }

    let want = values(&rb);
    let types = |t: &[u8]| want.iter().filter(|(_, x, _)| x == t).count();
    assert_eq!(
        [BLOOM, CUCKOO, CMS, TOPK, TDIGEST].map(types),
        [3, 2, 4, 4, 3],
        "keys of each type"
    );
    let want_reads = reads(&rb);
    check(
        &fb,
        "FerroBloom after the same commands",
        &want,
        &want_reads,
    );
    // The colliding sketch is full (k 4 listed out of 8 items sent) and
    // the wide one lists five items: the Top-K data is not trivial.
    let listed = |k: &str| {
        want_reads
            .iter()
            .find(|(c, _)| c.starts_with(&format!("TOPK.LIST {k}")))
            .map(|(_, r)| r.clone())
            .unwrap_or_default()
    };
    assert!(
        listed("topk:collide").starts_with(b"*8\r\n"),
        "{}",
        show_reply(&listed("topk:collide"))
    );
    assert!(
        listed("topk:wide").starts_with(b"*10\r\n"),
        "{}",
        show_reply(&listed("topk:wide"))
    );

    // 2.8.2's RDB (Redis 7.0, RDB version 10) loads in FerroBloom.
    let fb_loaded =
        Server::start(ServerOpts::new(ModuleKind::FerroBloom).file("dump.rdb", saved_rdb(&rb)));
    check(
        &fb_loaded,
        "FerroBloom after loading 2.8.2's RDB",
        &want,
        &want_reads,
    );

    // FerroBloom's RDB loads in 2.8.2 where the oracle's server reads its
    // RDB version; from a newer server the DUMP payloads go, restamped.
    let rb_rdb = rb.version().rdb_version();
    let back = if fb.version().rdb_version() <= rb_rdb {
        Server::start(ServerOpts::new(ModuleKind::RedisBloom).file("dump.rdb", saved_rdb(&fb)))
    } else {
        let back = Server::start(ServerOpts::new(ModuleKind::RedisBloom));
        let mut to = back.raw();
        for k in sorted_keys(&mut f) {
            let Resp::Bulk(p) = decode(&f.cmd(&[b"DUMP".as_slice(), k.as_slice()])) else {
                panic!("DUMP")
            };
            let p = restamp_dump(&p, rb_rdb);
            assert_eq!(
                to.cmd(&[b"RESTORE".as_slice(), k.as_slice(), b"0", p.as_slice()]),
                OK
            );
        }
        back
    };
    check(
        &back,
        "2.8.2 after loading FerroBloom's data",
        &want,
        &want_reads,
    );

    // And the file FerroBloom wrote after loading 2.8.2's.
    let again = Server::start(
        ServerOpts::new(ModuleKind::FerroBloom).file("dump.rdb", saved_rdb(&fb_loaded)),
    );
    check(&again, "FerroBloom after its own SAVE", &want, &want_reads);
}
