//! Replays inputs through the fuzz target bodies: every crash input ever
//! found (tests/data/fuzz/<target>/, kept as regressions) and the seeds the
//! corpora start from (the real RedisBloom output in vectors.json).

use std::fs;
use std::path::Path;

use ferrobloom_core::fuzzing;

fn replay_dir(target: &str, run: fn(&[u8])) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/fuzz")
        .join(target);
    let Ok(entries) = fs::read_dir(&dir) else {
        return 0;
    };
    let mut n = 0;
    for entry in entries {
        let path = entry.expect("readable directory").path();
        run(&fs::read(&path).expect("readable input"));
        n += 1;
    }
    n
}

#[test]
fn saved_crash_inputs_no_longer_crash() {
    let replayed = replay_dir("header", fuzzing::header)
        + replay_dir("chunk", fuzzing::chunk)
        + replay_dir("rdb", fuzzing::rdb);
    eprintln!("replayed {replayed} saved fuzz inputs");
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
                }
                // Every single-bit flip of the value.
                for i in 0..body.len() * 8 {
                    let mut flipped = body.to_vec();
                    flipped[i / 8] ^= 1 << (i % 8);
                    fuzzing::rdb(&flipped);
                }
            }
            _ => {}
        }
    }
    assert!(
        headers >= 20 && dumps >= 5,
        "vectors must provide seeds: {headers} {dumps}"
    );
}
