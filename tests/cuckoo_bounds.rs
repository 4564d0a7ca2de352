//! Cuckoo filters whose shape a client chooses (a CF.LOADCHUNK header, a
//! RESTORE payload), on a real server: compaction of thousands of
//! sub-filters takes time linear in the filter's size, and every value
//! RESTORE accepts comes back unchanged from an AOF rewrite and reload
//! (the rest is refused up front, never allocated by a replay).

mod common;

use std::time::{Duration, Instant};

use common::replication::wait_for_aof_rewrite;
use common::{decode, ModuleKind, RawClient, Resp, Server, ServerOpts};
use ferrobloom_core::cuckoo::dump::type_id;
use ferrobloom_core::cuckoo::rdb::RdbOutput;
use ferrobloom_core::cuckoo::CuckooHash;
use ferrobloom_core::dump_format::{DumpWriter, RDB_VERSION_7_0};

const OK: &[u8] = b"+OK\r\n";

/// A CF.LOADCHUNK header (RedisBloom's 38 packed little-endian bytes).
fn header(items: u64, base: u64, sub_filters: u64, bucket_size: u16, expansion: u16) -> Vec<u8> {
    let mut h = Vec::new();
    for v in [items, base, 0, sub_filters] {
        h.extend_from_slice(&v.to_le_bytes());
    }
    for v in [bucket_size, 20, expansion] {
        h.extend_from_slice(&v.to_le_bytes());
    }
    h
}

/// Loads `sub_filters` sub-filters of `bytes` bytes each into `key`, the
/// data of sub-filter `i` given by `fill(i)`.
fn load(
    r: &mut RawClient,
    key: &str,
    header: &[u8],
    sizes: (u64, u64),
    fill: impl Fn(u64) -> Vec<u8>,
) {
    let (sub_filters, bytes) = sizes;
    assert_eq!(
        r.cmd(&[b"CF.LOADCHUNK".as_slice(), key.as_bytes(), b"1", header]),
        OK
    );
    let cmds: Vec<Vec<Vec<u8>>> = (0..sub_filters)
        .map(|i| {
            let next = 1 + (i + 1) * bytes;
            vec![
                b"CF.LOADCHUNK".to_vec(),
                key.as_bytes().to_vec(),
                next.to_string().into_bytes(),
                fill(i),
            ]
        })
        .collect();
    for reply in r.pipeline(&cmds) {
        assert_eq!(reply, OK);
    }
}

fn filters(r: &mut RawClient, key: &str) -> i64 {
    match decode(&r.cmd(&["CF.INFO", key])) {
        Resp::Array(v) => match v[5] {
            Resp::Int(n) => n,
            ref other => panic!("CF.INFO: {other:?}"),
        },
        other => panic!("CF.INFO: {other:?}"),
    }
}

/// 8,192 sub-filters of one size (EXPANSION 1: a shape one CF.INSERT can
/// reach), every slot full: nothing can move, and the literal algorithm
/// looks at every older sub-filter for each of the 262,144 fingerprints
/// (about 10^9 bucket reads: seconds). Then random contents, where a
/// delete's automatic compaction moves fingerprints a long way down.
#[test]
fn compaction_of_a_crafted_header_is_linear() {
    let server = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let mut r = server.raw();
    let (subs, n0, bs) = (8192u64, 16u64, 2u16);
    let bytes = n0 * u64::from(bs);
    load(
        &mut r,
        "full",
        &header(1_000_000, n0, subs, bs, 1),
        (subs, bytes),
        |_| vec![0x07; bytes as usize],
    );
    let start = Instant::now();
    assert_eq!(r.cmd(&["CF.COMPACT", "full"]), OK);
    let took = start.elapsed();
    assert_eq!(filters(&mut r, "full"), subs as i64, "nothing could move");
    assert!(
        took < Duration::from_millis(1500),
        "CF.COMPACT took {took:?}"
    );

    // Random bytes (about one empty slot in 256), a small item counter:
    // CF.DEL compacts after its delete.
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut random = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let data: Vec<Vec<u8>> = (0..subs)
        .map(|_| (0..bytes).map(|_| (random() >> 24) as u8).collect())
        .collect();
    load(
        &mut r,
        "random",
        &header(10, n0, subs, bs, 1),
        (subs, bytes),
        |i| data[i as usize].clone(),
    );
    // An item whose fingerprint is in one of its buckets somewhere.
    let item = (0..1000)
        .map(|i| format!("item:{i}"))
        .find(|i| {
            let h = CuckooHash::of(i.as_bytes());
            let mask = n0 - 1;
            data.iter().any(|d| {
                [h.i1(mask), h.i2(mask)]
                    .iter()
                    .any(|&b| d[(b * 2) as usize..(b * 2 + 2) as usize].contains(&h.fp))
            })
        })
        .expect("an item present");
    let start = Instant::now();
    assert_eq!(r.cmd(&["CF.DEL", "random", &item]), b":1\r\n");
    let took = start.elapsed();
    assert!(took < Duration::from_millis(1500), "CF.DEL took {took:?}");
    let start = Instant::now();
    assert_eq!(r.cmd(&["CF.COMPACT", "random"]), OK);
    let took = start.elapsed();
    assert!(
        took < Duration::from_millis(1500),
        "CF.COMPACT took {took:?}"
    );
    assert_eq!(r.cmd(&["PING"]), b"+PONG\r\n");
}

/// Headers declaring more sub-filters than their shape can reach are
/// refused: EXPANSION 2 from one bucket reaches 2^55 buckets at the 56th.
#[test]
fn headers_past_the_reachable_sub_filters_are_refused() {
    let server = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let mut r = server.raw();
    for (h, why) in [
        (
            header(1, 1, 57, 1, 2),
            "57 sub-filters doubling from 1 bucket",
        ),
        (header(1, 4, 2, 2, 0), "EXPANSION 0 with 2 sub-filters"),
        (
            header(1, 4, 5, 2, 32768),
            "5 sub-filters of EXPANSION 32768",
        ),
    ] {
        assert_eq!(
            r.cmd(&[b"CF.LOADCHUNK".as_slice(), b"h", b"1", &h]),
            b"-Couldn't create filter!\r\n",
            "{why}"
        );
        assert_eq!(r.cmd(&["EXISTS", "h"]), b":0\r\n");
    }
}

/// An encoding-4 DUMP payload: the seven fields (sub-filters, base
/// buckets, items, deletes, bucket size, max iterations, expansion), then
/// each sub-filter's bucket count and bytes.
fn payload(fields: [u64; 7], subs: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let mut w = DumpWriter::new(type_id(4));
    for f in fields {
        w.write_unsigned(f);
    }
    for (n, data) in subs {
        w.write_unsigned(*n);
        w.write_bytes(data);
    }
    w.finish(RDB_VERSION_7_0)
}

/// `buckets` buckets of 2 slots holding item `a`'s fingerprint at its
/// first bucket.
fn holding_a(buckets: u64) -> Vec<u8> {
    let h = CuckooHash::of(b"a");
    let mut data = vec![0u8; (buckets * 2) as usize];
    data[(h.i1(buckets - 1) * 2) as usize] = h.fp;
    data
}

/// RedisBloom 2.8.2's RESTORE takes these, and its AOF rewrite (a
/// CF.LOADCHUNK header, then the bytes) cannot rebuild them: a sub-filter
/// whose size is not the base bucket count came back altered, MAXITERATIONS
/// 0 and EXPANSION 0 with two sub-filters were lost (`Couldn't create
/// filter!`), and 2^48 base buckets beside a small sub-filter made the
/// reload allocate 2^48 buckets and abort the server. Each value RESTORE
/// accepts must come back from BGREWRITEAOF + DEBUG LOADAOF with the same
/// digest; the others are refused and store nothing.
#[test]
fn every_cuckoo_value_restore_accepts_survives_an_aof_rewrite() {
    let server = Server::start(
        ServerOpts::new(ModuleKind::FerroBloom)
            .config("appendonly", "yes")
            .config("aof-use-rdb-preamble", "no"),
    );
    let mut r = server.raw();
    let cases = [
        (
            "plain",
            payload([1, 4, 1, 0, 2, 20, 1], &[(4, holding_a(4))]),
            true,
        ),
        (
            "grown",
            payload(
                [2, 4, 1, 0, 2, 20, 2],
                &[(4, vec![0; 8]), (8, holding_a(8))],
            ),
            true,
        ),
        (
            "size-not-base",
            payload([1, 4, 1, 0, 2, 20, 1], &[(16, holding_a(16))]),
            false,
        ),
        (
            "max-iterations-0",
            payload([1, 4, 1, 0, 2, 0, 1], &[(4, holding_a(4))]),
            false,
        ),
        (
            "expansion-0-two-sub-filters",
            payload(
                [2, 4, 1, 0, 2, 20, 0],
                &[(4, vec![0; 8]), (4, holding_a(4))],
            ),
            false,
        ),
        (
            "base-2^48",
            payload([1, 1 << 48, 1, 0, 2, 20, 1], &[(4, holding_a(4))]),
            false,
        ),
    ];
    let mut kept = Vec::new();
    for (key, p, accepted) in &cases {
        let reply = r.cmd(&[b"RESTORE".as_slice(), key.as_bytes(), b"0", p]);
        if reply == OK {
            kept.push((key, r.cmd(&["DEBUG", "DIGEST-VALUE", key])));
            assert_eq!(r.cmd(&["CF.EXISTS", key, "a"]), b":1\r\n", "{key}");
        } else {
            assert_eq!(reply, b"-ERR Bad data format\r\n", "{key}");
            assert_eq!(r.cmd(&["EXISTS", key]), b":0\r\n", "{key}");
        }
        assert_eq!(reply == OK, *accepted, "{key}: {reply:?}");
    }
    assert_eq!(r.cmd(&["BGREWRITEAOF"]).first(), Some(&b'+'));
    wait_for_aof_rewrite(&mut r, Duration::from_secs(20));
    assert_eq!(r.cmd(&["DEBUG", "LOADAOF"]), OK);
    for (key, digest) in &kept {
        assert_eq!(
            &r.cmd(&["DEBUG", "DIGEST-VALUE", key]),
            digest,
            "{key} changed through the AOF"
        );
        assert_eq!(r.cmd(&["CF.EXISTS", key, "a"]), b":1\r\n", "{key}");
    }
    assert_eq!(
        r.cmd(&["DBSIZE"]),
        format!(":{}\r\n", kept.len()).as_bytes()
    );
}
