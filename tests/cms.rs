//! Count-Min sketches (`CMSk-TYPE`) as data: RedisBloom 2.8.2's sketches
//! load into FerroBloom (RDB file, DUMP payload) and come back byte for
//! byte (DUMP, DEBUG RELOAD, COPY, AOF rewrite); sketches of other cell
//! sizes keep their size and are refused cleanly by RedisBloom 2.8.2.

mod common;

use common::stored::{
    assert_copy_holds, assert_same_memory_usage, bulk, dumped, ferrobloom_loading,
    ferrobloom_with_plain_aof, memory_usage, restore, restore_restamped, rewrite_aof_and_restart,
    saved_rdb, sketch_vectors, vectors_of,
};
use common::{dump_parts, hex, restamp_dump, ModuleKind, RawClient, Server, ServerOpts};
use ferrobloom_core::cms::{dump, CellSize, CountMinSketch};
use ferrobloom_core::dump_format::{module_type_id, DumpWriter};
use ferrobloom_core::rdb_io::RdbOutput;
use ferrobloom_core::Unguarded;

const OK: &[u8] = b"+OK\r\n";

/// RedisBloom 2.8.2's DUMP payloads of the `cms_cells` vectors.
fn vector_dumps() -> Vec<Vec<u8>> {
    vectors_of("cms_cells")
        .iter()
        .map(|v| hex(v["dump_hex"].as_str().expect("dump_hex")))
        .collect()
}

/// What `key`'s DUMP holds: width, depth, cell size, N and the cells
/// (Redis compresses longer cell strings, so bytes compare decoded).
fn decoded(r: &mut RawClient, key: &str) -> (u64, u64, u64, u64, Vec<u8>) {
    let payload = bulk(&r.cmd(&["DUMP", key]));
    shape(&dump::load_payload(&payload).expect("a sketch's DUMP loads"))
}

fn shape(s: &CountMinSketch) -> (u64, u64, u64, u64, Vec<u8>) {
    (
        s.width(),
        s.depth(),
        s.cell_size().bytes(),
        s.count(),
        s.cell_bytes().to_vec(),
    )
}

#[test]
fn redisbloom_dumps_restore_and_dump_back_byte_identical() {
    let fb = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let mut f = fb.raw();
    let dumps = vector_dumps();
    let keys = restore_restamped(&fb, &mut f, "cms", &dumps);
    for (key, payload) in keys.iter().zip(&dumps) {
        assert_eq!(f.cmd(&["TYPE", key]), b"+CMSk-TYPE\r\n");
        assert_eq!(dumped(&mut f, key), dump_parts(payload).0, "DUMP {key}");
    }
    assert_copy_holds(&mut f, "cms0", dump_parts(&dumps[0]).0);
    assert_ne!(
        f.cmd(&["DEBUG", "DIGEST-VALUE", "cms0"]),
        f.cmd(&["DEBUG", "DIGEST-VALUE", "cms1"])
    );
    // 2.8.2's MEMORY USAGE callback: 8 + width·depth·8 (13×4 → 424), plus
    // the server's own per-key overhead, which does not depend on the
    // value.
    assert_eq!(
        memory_usage(&mut f, "cms3") - memory_usage(&mut f, "cms0"),
        (1000 * 3 - 13 * 4) * 8
    );

    assert_eq!(f.cmd(&["DEBUG", "RELOAD"]), OK);
    for (key, payload) in keys.iter().zip(&dumps) {
        assert_eq!(
            dumped(&mut f, key),
            dump_parts(payload).0,
            "after DEBUG RELOAD {key}"
        );
    }
}

/// A sketch of `cell_size` whose item `a` counts 200 and `b` 7.
fn sketch(cell_size: CellSize) -> CountMinSketch {
    let mut s = CountMinSketch::new(11, 3, cell_size, &Unguarded).unwrap();
    s.incrby(b"a", 200).unwrap();
    s.incrby(b"b", 7).unwrap();
    s
}

#[test]
fn other_cell_sizes_keep_their_size_and_redisbloom_refuses_them() {
    let fb = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let rb = Server::start(ServerOpts::new(ModuleKind::RedisBloom));
    let (mut f, mut r) = (fb.raw(), rb.raw());
    for size in CellSize::ALL {
        let key = format!("c{}", size.bytes());
        let payload = dump::dump_payload(&sketch(size), fb.version().rdb_version());
        assert_eq!(restore(&mut f, &key, &payload), OK, "{key}");
        assert_eq!(decoded(&mut f, &key), shape(&sketch(size)), "{key}");
        let for_rb = restamp_dump(&payload, rb.version().rdb_version());
        let answer = restore(&mut r, &key, &for_rb);
        if size == CellSize::Four {
            assert_eq!(answer, OK);
            assert_eq!(
                r.cmd(&["CMS.QUERY", &key, "a", "b"]),
                b"*2\r\n:200\r\n:7\r\n"
            );
        } else {
            assert_eq!(answer, b"-ERR Bad data format\r\n", "{key}");
            assert_eq!(r.cmd(&["EXISTS", &key]), b":0\r\n");
        }
    }
    assert_eq!(f.cmd(&["DEBUG", "RELOAD"]), OK);
    for size in CellSize::ALL {
        let key = format!("c{}", size.bytes());
        assert_eq!(
            decoded(&mut f, &key),
            shape(&sketch(size)),
            "after RELOAD {key}"
        );
    }
    // The value's size follows its cells: 1-byte cells are the smallest.
    assert_ne!(memory_usage(&mut f, "c1"), memory_usage(&mut f, "c8"));

    // RedisBloom 8.12's encoding 1 (cell size before the cells) loads and
    // is written back in encoding 0.
    let mut w = DumpWriter::new(module_type_id(b"CMSk-TYPE", 1).unwrap());
    for field in [2u64, 1, 9, 2] {
        w.write_unsigned(field);
    }
    w.write_bytes(&[9, 0, 0, 0]);
    assert_eq!(
        restore(&mut f, "v812", &w.finish(fb.version().rdb_version())),
        OK
    );
    let mut w = DumpWriter::new(module_type_id(b"CMSk-TYPE", 0).unwrap());
    for field in [2u64, 1, 9] {
        w.write_unsigned(field);
    }
    w.write_bytes(&[9, 0, 0, 0]);
    w.write_unsigned(2);
    let encoding_0 = w.finish(fb.version().rdb_version());
    assert_eq!(dumped(&mut f, "v812"), dump_parts(&encoding_0).0);

    // Damaged values store nothing.
    let mut w = DumpWriter::new(module_type_id(b"CMSk-TYPE", 0).unwrap());
    for field in [2u64, 2, 0] {
        w.write_unsigned(field);
    }
    w.write_bytes(&[0; 4]);
    w.write_unsigned(2);
    let answer = restore(&mut f, "bad", &w.finish(fb.version().rdb_version()));
    assert!(
        answer.starts_with(b"-"),
        "{}",
        String::from_utf8_lossy(&answer)
    );
    assert_eq!(f.cmd(&["EXISTS", "bad"]), b":0\r\n");
}

#[test]
fn an_rdb_written_by_redisbloom_loads() {
    let rb = Server::start(ServerOpts::new(ModuleKind::RedisBloom));
    let mut r = rb.raw();
    assert_eq!(r.line("CMS.INITBYDIM dim 13 4"), OK);
    assert_eq!(r.line("CMS.INITBYPROB prob 0.001 0.01"), OK);
    assert_eq!(r.line("CMS.INITBYDIM empty 5 5"), OK);
    for i in 0..200 {
        let item = format!("item:{i}");
        r.cmd(&["CMS.INCRBY", "dim", &item, &(i % 17 + 1).to_string()]);
        r.cmd(&["CMS.INCRBY", "prob", &item, "3", "common", "1"]);
    }
    assert_eq!(r.line("SELECT 3"), OK);
    assert_eq!(r.line("CMS.INITBYDIM elsewhere 7 2"), OK);
    r.line("CMS.INCRBY elsewhere x 5");
    assert_eq!(r.line("SELECT 0"), OK);
    let keys = ["dim", "prob", "empty"];
    let want: Vec<Vec<u8>> = keys.iter().map(|k| dumped(&mut r, k)).collect();
    assert_eq!(r.line("SELECT 3"), OK);
    let want_elsewhere = dumped(&mut r, "elsewhere");
    let rdb = saved_rdb(&rb, &mut r);

    let fb = ferrobloom_loading(rdb);
    let mut f = fb.raw();
    for (k, want) in keys.iter().zip(&want) {
        assert_eq!(
            &dumped(&mut f, k),
            want,
            "DUMP {k} after loading RedisBloom's RDB"
        );
    }
    assert_eq!(f.line("SELECT 3"), OK);
    assert_eq!(dumped(&mut f, "elsewhere"), want_elsewhere);
    assert_same_memory_usage((&fb, &mut f), (&rb, &mut r), &keys);
}

#[test]
fn an_aof_rewrite_keeps_sketches_in_their_database() {
    let mut fb = ferrobloom_with_plain_aof();
    let payloads: Vec<Vec<u8>> = CellSize::ALL
        .iter()
        .map(|&size| dump::dump_payload(&sketch(size), fb.version().rdb_version()))
        .collect();
    let mut f = fb.raw();
    assert_eq!(f.line("SELECT 5"), OK);
    for (i, p) in payloads.iter().enumerate() {
        assert_eq!(restore(&mut f, &format!("k{i}"), p), OK);
    }
    let mut f = rewrite_aof_and_restart(&mut fb, &mut f, 5);
    for (i, &size) in CellSize::ALL.iter().enumerate() {
        assert_eq!(
            decoded(&mut f, &format!("k{i}")),
            shape(&sketch(size)),
            "k{i}"
        );
    }
}

#[test]
fn query_and_info_answer_as_redisbloom_in_resp2_and_resp3() {
    let fb = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let mut f = fb.raw();
    let json = sketch_vectors();
    let v = &json["cms_cells"]["vectors"][0];
    let payload = restamp_dump(
        &hex(v["dump_hex"].as_str().unwrap()),
        fb.version().rdb_version(),
    );
    assert_eq!(restore(&mut f, "c", &payload), OK);
    let mut query: Vec<Vec<u8>> = vec![b"CMS.QUERY".to_vec(), b"c".to_vec()];
    for item in v["query_items_hex"].as_array().unwrap() {
        query.push(hex(item.as_str().unwrap()));
    }
    let want_query = v["query_reply"].as_str().unwrap().as_bytes();
    let info2 = format!(
        "*8\r\n+width\r\n:{}\r\n+depth\r\n:{}\r\n+count\r\n:{}\r\n+cell_size\r\n:4\r\n",
        v["width"], v["depth"], v["info_count"]
    );
    assert_eq!(f.cmd(&query), want_query);
    assert_eq!(f.cmd(&["CMS.INFO", "c"]), info2.as_bytes());
    assert_eq!(f.cmd(&["SET", "s", "x"]), OK);
    let errors = |f: &mut RawClient| {
        assert_eq!(
            f.cmd(&["CMS.QUERY", "nokey", "a"]),
            b"-CMS: key does not exist\r\n"
        );
        assert_eq!(
            f.cmd(&["CMS.INFO", "nokey"]),
            b"-CMS: key does not exist\r\n"
        );
        assert!(f.cmd(&["CMS.QUERY", "s", "a"]).starts_with(b"-WRONGTYPE"));
        assert!(f.cmd(&["CMS.INFO", "s"]).starts_with(b"-WRONGTYPE"));
        assert!(f
            .cmd(&["CMS.QUERY", "c"])
            .starts_with(b"-ERR wrong number of arguments"));
        assert!(f
            .cmd(&["CMS.INFO", "c", "x"])
            .starts_with(b"-ERR wrong number of arguments"));
    };
    errors(&mut f);

    f.hello3();
    assert_eq!(f.cmd(&query), want_query);
    assert_eq!(
        f.cmd(&["CMS.INFO", "c"]),
        info2.replacen("*8", "%4", 1).as_bytes()
    );
    errors(&mut f);

    // Registered `readonly` without `fast`, as RedisBloom registers them.
    for name in ["cms.query", "cms.info"] {
        let info = String::from_utf8_lossy(&f.cmd(&["COMMAND", "INFO", name])).into_owned();
        assert!(info.contains("readonly"), "{info}");
        assert!(!info.contains("fast"), "{info}");
    }
}

#[path = "cms/writes.rs"]
mod writes;

#[path = "cms/propagation.rs"]
mod propagation;

#[path = "cms/merge.rs"]
mod merge;
