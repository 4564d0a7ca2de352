//! Replays inputs through the fuzz target bodies: the committed corpus of
//! every target (tests/data/fuzz/<target>/: the seeds scripts/fuzz-corpus.py
//! derives from real RedisBloom output, and every crash input ever found,
//! kept as regressions), and the seeds the corpora start from (the real
//! RedisBloom output in vectors.json) with their truncations and bit flips.
//!
//! Besides not panicking, no input may make the decoders allocate more at
//! once than the fuzz targets let a filter have: an allocator that records
//! the largest single request watches the replays.

mod common;

use std::fs;
use std::path::Path;

use common::recording::{largest_request, Recording};
use ferrobloom_core::bloom::fuzzing;
use ferrobloom_core::cuckoo::fuzzing as fuzzing_cuckoo;
use ferrobloom_core::window::fuzzing as fuzzing_window;

#[global_allocator]
static ALLOCATOR: Recording = Recording;

/// The most any replay may ask for at once: the largest filter array the
/// targets admit ([`fuzzing::LIMIT`]); everything else they allocate is
/// small.
fn assert_allocations_bounded() {
    let largest = largest_request();
    assert!(
        largest <= fuzzing::LIMIT,
        "an input made the decoders allocate {largest} bytes at once"
    );
}

/// Runs every file of tests/data/fuzz/<target>/ through `run`; returns how
/// many there were.
fn replay_dir(target: &str, run: fn(&[u8])) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/fuzz")
        .join(target);
    let entries =
        fs::read_dir(&dir).unwrap_or_else(|e| panic!("the {target} corpus {}: {e}", dir.display()));
    let mut n = 0;
    for entry in entries {
        let path = entry.expect("readable directory").path();
        run(&fs::read(&path).expect("readable input"));
        n += 1;
    }
    n
}

#[test]
fn committed_inputs_are_handled() {
    for (target, run, at_least) in [
        ("header", fuzzing::header as fn(&[u8]), 20),
        ("chunk", fuzzing::chunk, 10),
        ("rdb", fuzzing::rdb, 10),
        ("window_rdb", fuzzing_window::rdb, 6),
        ("cuckoo_header", fuzzing_cuckoo::header, 23),
        ("cuckoo_chunk", fuzzing_cuckoo::chunk, 15),
        ("cuckoo_rdb", fuzzing_cuckoo::rdb, 25),
        // The round-trip targets start from the same payload bodies.
        ("rdb", fuzzing::round_trips, 10),
        ("window_rdb", fuzzing_window::round_trips, 6),
        ("cuckoo_rdb", fuzzing_cuckoo::round_trips, 25),
        ("cuckoo_roundtrip", fuzzing_cuckoo::round_trips, 1),
    ] {
        let replayed = replay_dir(target, run);
        eprintln!("replayed {replayed} committed {target} inputs");
        assert!(
            replayed >= at_least,
            "the {target} corpus holds {replayed} inputs, fewer than the {at_least} committed"
        );
    }
    assert_allocations_bounded();
}

fn hex_fields(node: &serde_json::Value, key: &str, out: &mut Vec<(String, Vec<u8>)>) {
    match node {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                hex_fields(v, k, out);
            }
        }
        serde_json::Value::Array(items) => {
            for v in items {
                hex_fields(v, key, out);
            }
        }
        serde_json::Value::String(s) if key.ends_with("hex") => {
            if let Ok(bytes) = decode_hex(s) {
                out.push((key.to_string(), bytes));
            }
        }
        _ => {}
    }
}

fn decode_hex(s: &str) -> Result<Vec<u8>, ()> {
    if s.len() % 2 != 0 {
        return Err(());
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).map_err(|_| ()))
        .collect()
}

#[test]
fn seeds_and_their_truncations_are_handled() {
    let text =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/vectors.json"))
            .expect("vectors");
    let vectors: serde_json::Value = serde_json::from_str(&text).expect("json");
    let mut fields = Vec::new();
    hex_fields(&vectors, "", &mut fields);
    let (mut headers, mut dumps) = (0, 0);
    for (key, bytes) in &fields {
        match key.as_str() {
            "header_hex" => {
                headers += 1;
                for cut in 0..=bytes.len() {
                    fuzzing::header(&bytes[..cut]);
                }
            }
            "payload_hex" | "dump_hex" if bytes.len() > 10 => {
                dumps += 1;
                let body = &bytes[..bytes.len() - 10];
                for cut in 0..=body.len() {
                    fuzzing::rdb(&body[..cut]);
                    fuzzing::round_trips(&body[..cut]);
                }
                // Every single-bit flip of the value.
                for i in 0..body.len() * 8 {
                    let mut flipped = body.to_vec();
                    flipped[i / 8] ^= 1 << (i % 8);
                    fuzzing::rdb(&flipped);
                    fuzzing::round_trips(&flipped);
                }
            }
            _ => {}
        }
    }
    assert!(
        headers >= 20 && dumps >= 5,
        "vectors must provide seeds: {headers} {dumps}"
    );
    assert_allocations_bounded();
}

/// Valid windowed filter payload bodies (DUMP minus its 10-byte trailer)
/// of every shape the decoder must accept: item and time windows, both
/// policies, 1 to 5 generations, slots clean, live and partly cleared.
fn window_seeds() -> Vec<Vec<u8>> {
    use ferrobloom_core::alloc_guard::Unguarded;
    use ferrobloom_core::bloom::sizing::Policy;
    use ferrobloom_core::window::{dump, Span, WindowFilter, WindowParams, WindowSpec};
    let mut seeds = Vec::new();
    for (span, generations, policy, adds, clear) in [
        (Span::Items { count: 12 }, 1, Policy::Exact, 0, 0),
        (Span::Items { count: 12 }, 2, Policy::Exact, 30, 0),
        (Span::Items { count: 40 }, 4, Policy::Pow2, 100, 0),
        (Span::Time { ms: 1_000 }, 3, Policy::Exact, 50, 0),
        (Span::Time { ms: 1_000 }, 5, Policy::Pow2, 200, 0),
        (Span::Time { ms: 500 }, 2, Policy::Exact, 80, 8),
    ] {
        let spec = WindowSpec::new(&WindowParams {
            error: 0.1,
            capacity: 20,
            span,
            generations,
            policy,
            scaling: true,
        })
        .unwrap();
        let mut f = WindowFilter::new(spec, 1_000, &Unguarded).unwrap();
        for i in 0..adds {
            f.rotate_to(f.epoch_at(1_000 + i * 13));
            f.add(f.hash(format!("seed:{i}").as_bytes()), &Unguarded)
                .unwrap();
        }
        // A jump retires several generations at once, leaving some of
        // them partly cleared.
        if clear > 0 {
            let e = f.epoch() + 2;
            f.rotate_to(e);
            f.clear_step(clear);
        }
        let payload = dump::dump_payload(&f, ferrobloom_core::dump_format::RDB_VERSION_7_0);
        seeds.push(payload[..payload.len() - 10].to_vec());
    }
    seeds
}

/// Writes [`window_seeds`] into the committed corpus (run by hand when the
/// layout changes: `cargo test -p ferrobloom-core --test fuzz_regressions
/// -- --ignored`).
#[test]
#[ignore]
fn write_window_seeds() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fuzz/window_rdb");
    fs::create_dir_all(&dir).unwrap();
    for (i, seed) in window_seeds().iter().enumerate() {
        fs::write(dir.join(format!("seed-{i}")), seed).unwrap();
    }
}

#[test]
fn window_seeds_their_truncations_and_bit_flips_are_handled() {
    let seeds = window_seeds();
    for seed in &seeds {
        for cut in 0..=seed.len() {
            fuzzing_window::rdb(&seed[..cut]);
            fuzzing_window::round_trips(&seed[..cut]);
        }
        // Every bit of the fields, a sample of the arrays' bits.
        for i in (0..seed.len() * 8).filter(|&i| i < 2048 || i % 61 == 0) {
            let mut flipped = seed.clone();
            flipped[i / 8] ^= 1 << (i % 8);
            fuzzing_window::rdb(&flipped);
            if i % 5 == 0 {
                fuzzing_window::round_trips(&flipped);
            }
        }
    }
    assert_allocations_bounded();
}

/// The Cuckoo filter's decoders on RedisBloom's own output (the headers
/// and payloads of cuckoo-vectors.json), every truncation and every
/// single-bit flip, and on payloads that claim far more than they hold.
#[test]
fn cuckoo_seeds_their_truncations_and_bit_flips_are_handled() {
    use ferrobloom_core::cuckoo::fuzzing as fuzzing_cuckoo;
    let text = fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/cuckoo-vectors.json"),
    )
    .expect("vectors");
    let vectors: serde_json::Value = serde_json::from_str(&text).expect("json");
    let mut fields = Vec::new();
    hex_fields(&vectors, "", &mut fields);
    let (mut headers, mut dumps, mut chunks) = (0, 0, 0);
    for (key, bytes) in &fields {
        let seed = match key.as_str() {
            "header_hex" => {
                headers += 1;
                bytes.clone()
            }
            "payload_hex" | "dump_hex" if bytes.len() > 10 => {
                dumps += 1;
                bytes[..bytes.len() - 10].to_vec()
            }
            "data_hex" => {
                chunks += 1;
                // A chunk record: shape byte, iterator, length, data.
                let mut record = vec![0x41];
                record.extend_from_slice(&(1 + bytes.len() as i64).to_le_bytes());
                record.push(bytes.len().min(255) as u8);
                record.extend_from_slice(bytes);
                fuzzing_cuckoo::chunk(&record);
                continue;
            }
            _ => continue,
        };
        let run: fn(&[u8]) = if key == "header_hex" {
            fuzzing_cuckoo::header
        } else {
            |body| {
                fuzzing_cuckoo::rdb(body);
                fuzzing_cuckoo::round_trips(body);
            }
        };
        for cut in 0..=seed.len() {
            run(&seed[..cut]);
        }
        for i in 0..seed.len() * 8 {
            let mut flipped = seed.clone();
            flipped[i / 8] ^= 1 << (i % 8);
            run(&flipped);
        }
    }
    assert!(
        headers >= 20 && dumps >= 20 && chunks >= 10,
        "vectors must provide seeds: {headers} {dumps} {chunks}"
    );
    // Claims: 65,535 sub-filters of 2^40 buckets, bucket size 255, with
    // 8 bytes of data; and a header asking for 2^55 buckets.
    let id = ferrobloom_core::cuckoo::dump::type_id(4).to_be_bytes();
    let mut body = vec![0x07, 0x81];
    body.extend_from_slice(&id);
    for field in [0xffffu64, 1 << 40, 1, 0, 255, 20, 1, 1 << 40] {
        body.push(0x02);
        body.push(0x81);
        body.extend_from_slice(&field.to_be_bytes());
    }
    body.extend_from_slice(&[0x05, 0x08, 0, 0, 0, 0, 0, 0, 0, 0, 0x00]);
    fuzzing_cuckoo::rdb(&body);
    let mut header = [0u8; 38];
    header[8..16].copy_from_slice(&(1u64 << 55).to_le_bytes());
    header[24] = 1;
    header[32] = 2;
    header[34] = 20;
    header[36] = 1;
    fuzzing_cuckoo::header(&header);
    assert_allocations_bounded();
}
