//! Top-K sketches (`TopK-TYPE`) as data: RedisBloom 2.8.2's sketches load
//! into FerroBloom (DUMP payload, RDB file) and keep their content through
//! DEBUG RELOAD, COPY and MEMORY USAGE. The commands are tested in
//! `topk/commands.rs`, replicas and reloads in `topk/replication.rs`, what
//! a TOPK.INCRBY with a bad increment propagates in `topk/propagation.rs`.

#[path = "topk/commands.rs"]
mod commands;
mod common;
#[path = "topk/propagation.rs"]
mod propagation;
#[path = "topk/replication.rs"]
mod replication;

use common::stored::{
    assert_same_memory_usage, bulk, ferrobloom_loading, ferrobloom_with_plain_aof, memory_usage,
    restore, rewrite_aof_and_restart, saved_rdb, sketch_vectors,
};
use common::{decode, hex, restamp_dump, ModuleKind, RawClient, Resp, Server, ServerOpts};
use ferrobloom_core::topk::{dump, rdb, TopK};

const OK: &[u8] = b"+OK\r\n";

/// Every byte of a reply, printable.
fn esc(bytes: &[u8]) -> String {
    bytes.escape_ascii().to_string()
}

/// Everything a sketch saves except the heap's pointer bytes (2.8.2 writes
/// process addresses there, FerroBloom zeroes): parameters, buckets, heap
/// records with the pointers masked, and the item strings.
type Shape = (u32, u32, u32, u64, Vec<u8>, Vec<u8>, Vec<Vec<u8>>);

fn shape(s: &TopK) -> Shape {
    (
        s.k(),
        s.width(),
        s.depth(),
        s.decay().to_bits(),
        s.bucket_bytes().to_vec(),
        rdb::heap_image(s),
        s.heap().iter().map(rdb::item_string).collect(),
    )
}

fn shape_of_payload(payload: &[u8]) -> Shape {
    shape(&dump::load_payload(payload).expect("a Top-K DUMP loads"))
}

fn decoded(r: &mut RawClient, key: &str) -> Shape {
    shape_of_payload(&bulk(&r.cmd(&["DUMP", key])))
}

#[test]
fn redisbloom_dump_restores_and_survives_reload_and_copy() {
    let fb = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let mut f = fb.raw();
    let json = sketch_vectors();
    let payload = hex(json["topk_dump_example"]["dump_hex"]
        .as_str()
        .expect("dump_hex"));
    let want = shape_of_payload(&payload);
    // TOPK.RESERVE tk 2 3 2 0.9; TOPK.ADD tk foo.
    assert_eq!((want.0, want.1, want.2), (2, 3, 2));
    assert!(want.6.iter().any(|s| s == b"foo\0"));

    let payload = restamp_dump(&payload, fb.version().rdb_version());
    assert_eq!(restore(&mut f, "tk", &payload), OK);
    assert_eq!(f.cmd(&["TYPE", "tk"]), b"+TopK-TYPE\r\n");
    assert_eq!(decoded(&mut f, "tk"), want);

    assert_eq!(f.cmd(&["COPY", "tk", "copied"]), b":1\r\n");
    assert_eq!(decoded(&mut f, "copied"), want);
    assert_eq!(
        f.cmd(&["DEBUG", "DIGEST-VALUE", "copied"]),
        f.cmd(&["DEBUG", "DIGEST-VALUE", "tk"])
    );
    // A different sketch digests differently.
    let mut other = dump::load_payload(&payload).unwrap();
    other.add(b"bar").unwrap();
    let other = dump::dump_payload(&other, fb.version().rdb_version());
    assert_eq!(restore(&mut f, "other", &other), OK);
    assert_ne!(
        f.cmd(&["DEBUG", "DIGEST-VALUE", "other"]),
        f.cmd(&["DEBUG", "DIGEST-VALUE", "tk"])
    );

    assert_eq!(f.cmd(&["DEBUG", "RELOAD"]), OK);
    assert_eq!(decoded(&mut f, "tk"), want, "after DEBUG RELOAD");
    assert_eq!(decoded(&mut f, "copied"), want, "copy after DEBUG RELOAD");
}

#[test]
fn an_rdb_written_by_redisbloom_loads() {
    let rb = Server::start(ServerOpts::new(ModuleKind::RedisBloom));
    let mut r = rb.raw();
    assert_eq!(r.line("TOPK.RESERVE small 3"), OK);
    assert_eq!(r.line("TOPK.RESERVE big 50 400 5 0.95"), OK);
    assert_eq!(r.line("TOPK.RESERVE empty 4 8 2 1"), OK);
    for i in 0..300 {
        let item = format!("item:{}", i % 37);
        r.cmd(&["TOPK.ADD", "small", &item, "common"]);
        r.cmd(&["TOPK.INCRBY", "big", &item, &(i % 5 + 1).to_string()]);
    }
    assert_eq!(r.line("SELECT 2"), OK);
    assert_eq!(r.line("TOPK.RESERVE elsewhere 2 3 2 0.9"), OK);
    r.line("TOPK.ADD elsewhere x y x");
    assert_eq!(r.line("SELECT 0"), OK);
    let keys = ["small", "big", "empty"];
    let want: Vec<Shape> = keys.iter().map(|k| decoded(&mut r, k)).collect();
    assert_eq!(r.line("SELECT 2"), OK);
    let want_elsewhere = decoded(&mut r, "elsewhere");
    let file = saved_rdb(&rb, &mut r);

    let fb = ferrobloom_loading(file);
    let mut f = fb.raw();
    for (k, want) in keys.iter().zip(&want) {
        assert_eq!(f.cmd(&["TYPE", k]), b"+TopK-TYPE\r\n");
        assert_eq!(
            &decoded(&mut f, k),
            want,
            "{k} after loading RedisBloom's RDB"
        );
    }
    assert_eq!(f.line("SELECT 2"), OK);
    assert_eq!(decoded(&mut f, "elsewhere"), want_elsewhere);
    assert_eq!(f.line("SELECT 0"), OK);
    assert_eq!(r.line("SELECT 0"), OK);
    assert_same_memory_usage((&fb, &mut f), (&rb, &mut r), &keys);
    // Spec §7.5: the reported size grows with k, width and depth.
    assert!(memory_usage(&mut f, "big") > memory_usage(&mut f, "small"));
    assert_eq!(f.cmd(&["DEBUG", "RELOAD"]), OK);
    for (k, want) in keys.iter().zip(&want) {
        assert_eq!(&decoded(&mut f, k), want, "{k} after DEBUG RELOAD");
    }
}

/// Sketches FerroBloom made (decay 0.9 with collisions, so the draw counter
/// is saved too) load into RedisBloom 2.8.2 from an RDB file, with the
/// same content apart from the heap's pointer bytes.
#[test]
fn an_rdb_written_by_ferrobloom_loads_into_redisbloom() {
    let fb = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let mut f = fb.raw();
    assert_eq!(f.line("TOPK.RESERVE small 3 4 2 0.9"), OK);
    assert_eq!(f.line("TOPK.RESERVE wide 5 200 4 1"), OK);
    for i in 0..400 {
        let item = format!("item:{}", i % 23);
        f.cmd(&["TOPK.ADD", "small", &item, "common"]);
        f.cmd(&["TOPK.INCRBY", "wide", &item, &(i % 4).to_string()]);
    }
    let keys = ["small", "wide"];
    let want: Vec<Shape> = keys.iter().map(|k| decoded(&mut f, k)).collect();
    assert!(
        rdb::heap_image(&dump::load_payload(&bulk(&f.cmd(&["DUMP", "small"]))).unwrap())[20..24]
            != [0; 4],
        "the draw counter is saved in the first record's padding"
    );
    let listed: Vec<Vec<u8>> = keys
        .iter()
        .map(|k| f.cmd(&["TOPK.LIST", k, "WITHCOUNT"]))
        .collect();
    let file = saved_rdb(&fb, &mut f);

    // The oracle's server (Redis 7.0) reads RDB files up to its version;
    // from a newer server the sketches go as DUMP payloads, restamped.
    let empty = Server::start(ServerOpts::new(ModuleKind::RedisBloom));
    let oracle_rdb = empty.version().rdb_version();
    let rb = if fb.version().rdb_version() <= oracle_rdb {
        drop(empty);
        Server::start(ServerOpts::new(ModuleKind::RedisBloom).file("dump.rdb", file))
    } else {
        let mut to = empty.raw();
        for k in keys {
            let payload = restamp_dump(&bulk(&f.cmd(&["DUMP", k])), oracle_rdb);
            assert_eq!(restore(&mut to, k, &payload), OK);
        }
        empty
    };
    let mut r = rb.raw();
    for ((k, want), listed) in keys.iter().zip(&want).zip(&listed) {
        assert_eq!(&decoded(&mut r, k), want, "{k} in RedisBloom");
        assert_eq!(
            esc(&r.cmd(&["TOPK.LIST", k, "WITHCOUNT"])),
            esc(listed),
            "{k} listed by RedisBloom"
        );
    }
}

/// An AOF rewrite writes each sketch as a RESTORE in its database; the
/// restarted server has the same sketches there.
#[test]
fn an_aof_rewrite_keeps_sketches_in_their_database() {
    let mut fb = ferrobloom_with_plain_aof();
    let mut f = fb.raw();
    assert_eq!(f.line("SELECT 4"), OK);
    assert_eq!(f.line("TOPK.RESERVE t 4 10 3 0.8"), OK);
    for i in 0..300 {
        f.cmd(&["TOPK.ADD", "t", &format!("x{}", i % 31), "hot"]);
    }
    let want = decoded(&mut f, "t");
    let listed = f.line("TOPK.LIST t WITHCOUNT");
    let mut f = rewrite_aof_and_restart(&mut fb, &mut f, 4);
    assert_eq!(decoded(&mut f, "t"), want);
    assert_eq!(f.line("TOPK.LIST t WITHCOUNT"), listed);
}
