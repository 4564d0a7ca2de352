//! The Count-Min sketch against the live-verified vectors
//! (`tests/data/sketches-vectors.json`, from RedisBloom 2.8.2; the spec is
//! sketches-compat.md, cited as §): MurmurHash2, INITBYPROB's dimensions,
//! the creation limits of the `replies` group, the cells, counts, queries,
//! MEMORY USAGE and DUMP bytes of scripted increments, and crafted RESTORE
//! payloads. Then the committed fuzz corpora, replayed through the fuzz
//! target bodies while an allocator records the largest request.
//!
//! Increments follow RedisBloom 8.12 (§3.9): where 2.8.2 saturates cells
//! and reports an overflow, the test checks 8.12's answer instead and that
//! 2.8.2's saturated DUMP loads. Where this implementation refuses a
//! payload 2.8.2 accepted (§6.4, §6.5), the test names the case.

mod common;

use std::path::Path;

use common::recording::{largest_request, Recording};
use common::{hex, s, sketch_group, to_hex, u};
use ferrobloom_core::alloc_guard::Unguarded;
use ferrobloom_core::cms::dump::{dump_payload, load_payload, type_id};
use ferrobloom_core::cms::sizing::{check_dims, dims_from_prob};
use ferrobloom_core::cms::{fuzzing, CellSize, CountMinSketch, IncrError};
use ferrobloom_core::dump_format::RDB_VERSION_7_0;
use ferrobloom_core::hash::murmur2;

#[global_allocator]
static ALLOCATOR: Recording = Recording;

/// `*n\r\n:a\r\n:b...` → the integers (`None` for an error element).
fn integers(reply: &str) -> Vec<Option<u64>> {
    reply
        .split("\r\n")
        .skip(1)
        .filter(|l| !l.is_empty())
        .map(|l| l.strip_prefix(':').map(|n| n.parse().expect("an integer")))
        .collect()
}

#[test]
fn murmur2_table() {
    let mut n = 0;
    for v in sketch_group("murmur2") {
        let item = hex(s(&v["item_hex"]));
        for (seed, want) in v["seed"].as_object().expect("seeds") {
            let seed: u32 = seed.parse().expect("a seed");
            assert_eq!(u64::from(murmur2(&item, seed)), u(want), "{v}");
            n += 1;
        }
    }
    assert_eq!(n, 11 * 8);
    // §3.2's examples.
    assert_eq!(murmur2(b"", 0), 0);
    assert_eq!(murmur2(b"foo", 0), 0x8fea6375);
    assert_eq!(murmur2(b"bar", 0), 0x27f6e557);
    assert_eq!(murmur2(b"foo", 1919), 0x4064c400);
}

#[test]
fn dims_from_prob_vectors() {
    for v in sketch_group("cms_dims_from_prob") {
        let error: f64 = s(&v["error"]).parse().expect("error");
        let prob: f64 = s(&v["prob"]).parse().expect("prob");
        let reply = s(&v["reply"]);
        match dims_from_prob(error, prob) {
            Ok(d) => {
                assert_eq!(reply, "+OK\r\n", "{v}");
                assert_eq!((d.width, d.depth), (u(&v["width"]), u(&v["depth"])), "{v}");
            }
            Err(e) => assert_eq!(reply, format!("-{}\r\n", e.message()), "{v}"),
        }
    }
}

/// The INITBYDIM and INITBYPROB replies whose arguments parse: the limits
/// of §3.3 rows 3p-6 give the same replies.
#[test]
fn creation_limits_of_the_replies_group() {
    let mut n = 0;
    for v in sketch_group("replies") {
        let cmd: Vec<&str> = v["command"]
            .as_array()
            .expect("command")
            .iter()
            .map(s)
            .collect();
        let reply = s(&v["resp2"]);
        if cmd.len() != 4 || reply.contains("already exists") {
            continue;
        }
        let got = match cmd[0] {
            "CMS.INITBYDIM" => match (cmd[2].parse::<i64>(), cmd[3].parse::<i64>()) {
                (Ok(w), Ok(d)) if w >= 1 && d >= 1 => {
                    check_dims(w as u64, d as u64, CellSize::Four).map(|_| ())
                }
                _ => continue,
            },
            "CMS.INITBYPROB" => {
                dims_from_prob(cmd[2].parse().unwrap(), cmd[3].parse().unwrap()).map(|_| ())
            }
            _ => continue,
        };
        let want = match got {
            Ok(()) => "+OK\r\n".to_string(),
            Err(e) => format!("-{}\r\n", e.message()),
        };
        assert_eq!(reply, want, "{cmd:?}");
        n += 1;
    }
    assert!(n >= 7, "only {n} creation replies");
}

#[test]
fn cells_counts_queries_and_dumps() {
    for v in sketch_group("cms_cells") {
        let (w, d) = (u(&v["width"]), u(&v["depth"]));
        let mut sk = CountMinSketch::new(w, d, CellSize::Four, &Unguarded).unwrap();
        let mut overflowed = false;
        for (pair, reply) in v["incrby"]
            .as_array()
            .unwrap()
            .iter()
            .zip(v["incrby_replies_resp2"].as_array().unwrap())
        {
            let item = hex(s(&pair[0]));
            let incr = pair[1].as_i64().unwrap();
            let got = sk.incrby(&item, incr);
            match integers(s(reply))[..] {
                [Some(n)] => assert_eq!(got, Ok(n), "{v}"),
                // 2.8.2 saturates; 8.12 refuses and changes nothing.
                [None] => {
                    assert_eq!(got, Err(IncrError::Overflow), "{v}");
                    overflowed = true;
                }
                _ => panic!("reply {reply}"),
            }
        }
        let theirs = load_payload(&hex(s(&v["dump_hex"]))).expect("2.8.2's DUMP loads");
        assert_eq!((theirs.width(), theirs.depth()), (w, d));
        assert_eq!(theirs.count(), u(&v["info_count"]));
        let mut cells = vec![0u64; (w * d) as usize];
        for (i, c) in v["nonzero_cells"].as_object().unwrap() {
            cells[i.parse::<usize>().unwrap()] = u(c);
        }
        let read = |s: &CountMinSketch| (0..w * d).map(|i| s.cell(i)).collect::<Vec<_>>();
        assert_eq!(read(&theirs), cells, "{v}");
        let items: Vec<Vec<u8>> = v["query_items_hex"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| hex(s(i)))
            .collect();
        let query = |s: &CountMinSketch| items.iter().map(|i| Some(s.query(i))).collect::<Vec<_>>();
        assert_eq!(query(&theirs), integers(s(&v["query_reply"])), "{v}");
        // MEMORY USAGE of key `c`: the value, its 1-byte key's sds and the
        // dict entry (32 bytes on 7.0.15).
        assert_eq!(sk.memory_usage() + 32, u(&v["memory_usage_key_c"]));
        // The value's own payload (strings raw) re-dumps identically.
        let raw = dump_payload(&theirs, RDB_VERSION_7_0);
        assert_eq!(
            dump_payload(&load_payload(&raw).unwrap(), RDB_VERSION_7_0),
            raw
        );
        if overflowed {
            // The saturated cells 2.8.2 left are at the cell maximum.
            assert_eq!(read(&theirs).into_iter().max(), Some(u64::from(u32::MAX)));
            continue;
        }
        assert_eq!(read(&sk), cells, "{v}");
        assert_eq!(sk.count(), u(&v["info_count"]));
        assert_eq!(query(&sk), integers(s(&v["query_reply"])));
        assert_eq!(sk.cell_bytes(), theirs.cell_bytes());
        if s(&v["array_string_encoding"]) == "raw" {
            assert_eq!(to_hex(&raw), s(&v["dump_hex"]), "byte-identical DUMP");
        }
    }
}

/// §3.8's worked example and §6.1's DUMP, byte for byte.
#[test]
fn worked_example_dump() {
    let mut sk = CountMinSketch::new(2, 2, CellSize::Four, &Unguarded).unwrap();
    assert_eq!(sk.incrby(b"foo", 3), Ok(3));
    assert_eq!(sk.incrby(b"bar", 5), Ok(5));
    assert_eq!(
        to_hex(&dump_payload(&sk, RDB_VERSION_7_0)),
        "078108c4a4f9360f1000020202020208051000000000080000000300000005000000000a00d78dc4a1a4786f34"
    );
    assert_eq!(type_id(0), 0x08c4a4f9360f1000);
}

#[test]
fn crafted_payloads() {
    let mut n = 0;
    for v in sketch_group("rdb_crafted") {
        let desc = s(&v["desc"]);
        if !desc.starts_with("CMS") {
            continue;
        }
        n += 1;
        let loaded = load_payload(&hex(s(&v["payload_hex"])));
        let accepted = s(&v["restore_reply"]) == "+OK\r\n";
        if desc.contains("16-byte array") {
            // §6.4: 2.8.2 accepts it and writes out of bounds on INCRBY.
            assert!(accepted);
            assert!(loaded.is_err(), "{desc}: a short cell array is refused");
            continue;
        }
        assert_eq!(loaded.is_ok(), accepted, "{desc}");
        let Ok(sk) = loaded else { continue };
        for step in v["after"].as_array().into_iter().flatten() {
            let args: Vec<&str> = step[0].as_array().unwrap().iter().map(s).collect();
            let reply = s(&step[1]);
            match args[0] {
                "cms.info" => assert_eq!(
                    reply,
                    format!(
                        "*6\r\n+width\r\n:{}\r\n+depth\r\n:{}\r\n+count\r\n:{}\r\n",
                        sk.width(),
                        sk.depth(),
                        sk.count() as i64
                    )
                ),
                "cms.query" => {
                    let got: Vec<_> = args[2..]
                        .iter()
                        .map(|i| Some(sk.query(i.as_bytes())))
                        .collect();
                    assert_eq!(got, integers(reply), "{desc}");
                }
                other => panic!("unexpected follow-up {other}"),
            }
        }
    }
    assert_eq!(n, 4);
}

/// Truncations and bit flips of every CMS payload in the vectors: never a
/// panic (the CRC is recomputed, so the decoder sees the damage).
#[test]
fn damaged_vector_payloads() {
    for v in sketch_group("cms_cells")
        .iter()
        .chain(sketch_group("rdb_crafted"))
    {
        let Some(p) = v.get("dump_hex").or(v.get("payload_hex")) else {
            continue;
        };
        let body = hex(s(p));
        if !to_hex(&body).starts_with("078108c4a4f9360f10") {
            continue;
        }
        let body = &body[..body.len() - 10];
        for cut in 0..body.len() {
            fuzzing::rdb(&body[..cut]);
        }
        for i in 0..body.len() * 8 {
            let mut flipped = body.to_vec();
            flipped[i / 8] ^= 1 << (i % 8);
            fuzzing::rdb(&flipped);
            fuzzing::round_trips(&flipped);
        }
    }
    assert!(largest_request() <= fuzzing::LIMIT);
}

/// Runs every file of tests/data/fuzz/<target>/ through `run`.
fn replay_dir(target: &str, run: fn(&[u8])) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/fuzz")
        .join(target);
    let entries = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("the {target} corpus {}: {e}", dir.display()));
    let mut n = 0;
    for entry in entries {
        let path = entry.expect("readable directory").path();
        run(&std::fs::read(&path).expect("readable input"));
        n += 1;
    }
    n
}

/// The committed corpora: seeds and every crash input found, kept as
/// regressions; no input may make the decoder allocate more at once than
/// the targets let a sketch have.
#[test]
fn committed_fuzz_corpora() {
    assert!(replay_dir("cms_rdb", fuzzing::rdb) > 0);
    assert!(replay_dir("cms_roundtrip", fuzzing::round_trips) > 0);
    let largest = largest_request();
    assert!(
        largest <= fuzzing::LIMIT,
        "an input made the decoder allocate {largest} bytes at once"
    );
}
