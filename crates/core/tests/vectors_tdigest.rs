//! The t-digest against the live-verified vectors
//! (`tests/data/sketches-vectors.json`, from RedisBloom 2.8.2 on Redis
//! 7.0.15; the spec is sketches-compat.md, cited as §): every reply of the
//! `tdigest_scenarios` datasets (doubles compared as Redis 7.0 prints them,
//! ranks as integers), INFO before and after the reads, and DUMP bytes; the
//! `tdigest_merge` variants; `double_format`; the crafted payloads of
//! `rdb_crafted`. Then the committed fuzz corpora, replayed through the
//! fuzz target bodies.
//!
//! The scenarios run in 2.8.2's single-observation mode
//! ([`SingleObservation::Lost282`]); the fix's different answers for the
//! one scenario where it matters are checked separately.

mod common;

use std::path::Path;

use common::{sketch_group, sketch_vectors};

use ferrobloom_core::alloc_guard::Unguarded;
use ferrobloom_core::dump_format::{crc64_jones, RDB_VERSION_7_0};
use ferrobloom_core::tdigest::dump::{dump_payload, load_payload, type_id};
use ferrobloom_core::tdigest::format::{format_7_0, format_7_2};
use ferrobloom_core::tdigest::merge::{merge, result_compression};
use ferrobloom_core::tdigest::{fuzzing, Compressed, Info, SingleObservation, TDigest};
use serde_json::Value;

fn strs(v: &Value) -> Vec<&str> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_str().expect("string"))
        .collect()
}

fn nums(v: &Value) -> Vec<f64> {
    strs(v)
        .iter()
        .map(|s| s.parse().expect("a double"))
        .collect()
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

/// TDIGEST.INFO's RESP2 reply for these numbers.
fn info_reply(i: Info) -> String {
    let fields = [
        ("Compression", i.compression),
        ("Capacity", i.capacity),
        ("Merged nodes", i.merged_nodes),
        ("Unmerged nodes", i.unmerged_nodes),
        ("Merged weight", i.merged_weight),
        ("Unmerged weight", i.unmerged_weight),
        ("Observations", i.observations),
        ("Total compressions", i.total_compressions),
        ("Memory usage", i.memory_usage),
    ];
    let mut out = "*18\r\n".to_string();
    for (label, n) in fields {
        out += &format!("+{label}\r\n:{n}\r\n");
    }
    out
}

fn texts(xs: impl IntoIterator<Item = f64>) -> Vec<String> {
    xs.into_iter().map(format_7_0).collect()
}

fn build(v: &Value, mode: SingleObservation) -> TDigest {
    let c: f64 = v["create"][3].as_str().unwrap().parse().unwrap();
    let mut td = TDigest::new(c, &Unguarded).unwrap();
    td.set_single_observation(mode);
    for batch in v["add_batches"].as_array().unwrap() {
        for x in nums(batch) {
            td.add(x).unwrap();
        }
    }
    td
}

/// Every read of a scenario, as reply texts (ranks as numbers).
fn answers(v: &Value, c: Compressed<'_>, td: &TDigest) -> Vec<(String, Vec<String>)> {
    let cdf_args = nums(&v["cdf_args"]);
    let ranks: Vec<i64> = strs(&v["byrank_args"])
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
    let mut out = vec![
        (
            "quantile".into(),
            texts(c.quantiles(&nums(&v["quantile_args"]))),
        ),
        (
            "quantile_unsorted".into(),
            texts(c.quantiles(&nums(&v["quantile_unsorted_args"]))),
        ),
        ("cdf".into(), texts(cdf_args.iter().map(|&x| c.cdf(x)))),
        (
            "rank".into(),
            cdf_args.iter().map(|&x| c.rank(x).to_string()).collect(),
        ),
        (
            "revrank".into(),
            cdf_args
                .iter()
                .map(|&x| c.rev_rank(x).to_string())
                .collect(),
        ),
        ("byrank".into(), texts(ranks.iter().map(|&r| c.by_rank(r)))),
        (
            "byrevrank".into(),
            texts(ranks.iter().map(|&r| c.by_rev_rank(r))),
        ),
        ("min".into(), vec![format_7_0(td.min())]),
        ("max".into(), vec![format_7_0(td.max())]),
    ];
    let mut cuts: Vec<_> = v["trimmed_mean"].as_object().unwrap().keys().collect();
    cuts.sort();
    for cut in cuts {
        let (lo, hi) = cut.split_once(' ').unwrap();
        let t = c.trimmed_mean(lo.parse().unwrap(), hi.parse().unwrap());
        out.push((format!("trimmed_mean {cut}"), vec![format_7_0(t)]));
    }
    out
}

fn expected(v: &Value) -> Vec<(String, Vec<String>)> {
    let ints = |k: &str| -> Vec<String> {
        v[k].as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_i64().unwrap().to_string())
            .collect()
    };
    let mut out = vec![
        ("quantile".into(), own(strs(&v["quantile"]))),
        (
            "quantile_unsorted".into(),
            own(strs(&v["quantile_unsorted"])),
        ),
        ("cdf".into(), own(strs(&v["cdf"]))),
        ("rank".into(), ints("rank")),
        ("revrank".into(), ints("revrank")),
        ("byrank".into(), own(strs(&v["byrank"]))),
        ("byrevrank".into(), own(strs(&v["byrevrank"]))),
        ("min".into(), vec![v["min"].as_str().unwrap().to_string()]),
        ("max".into(), vec![v["max"].as_str().unwrap().to_string()]),
    ];
    let tm = v["trimmed_mean"].as_object().unwrap();
    let mut cuts: Vec<_> = tm.keys().collect();
    cuts.sort();
    for cut in cuts {
        out.push((
            format!("trimmed_mean {cut}"),
            vec![tm[cut].as_str().unwrap().to_string()],
        ));
    }
    out
}

fn own(v: Vec<&str>) -> Vec<String> {
    v.into_iter().map(String::from).collect()
}

#[test]
fn scenarios_reply_and_dump_as_2_8_2() {
    for v in sketch_group("tdigest_scenarios") {
        let name = v["name"].as_str().unwrap();
        let mut td = build(v, SingleObservation::Lost282);
        assert_eq!(
            info_reply(td.info()),
            v["info_after_adds"].as_str().unwrap(),
            "{name}: INFO after adds"
        );
        // A replica's read: a scratch copy, the stored digest unchanged.
        let stored = td.clone();
        let from_scratch = td
            .with_compressed(&Unguarded, |c| answers(v, c, &td))
            .unwrap();
        assert_eq!(td, stored, "{name}: a scratch read changed the digest");
        // A master's read, as 2.8.2: compress the digest itself.
        let snapshot = td.clone();
        let c = td.compressed().unwrap();
        let got = answers(v, c, &snapshot);
        assert_eq!(got, expected(v), "{name}");
        assert_eq!(from_scratch, got, "{name}: scratch and stored answers");
        assert_eq!(
            info_reply(td.info()),
            v["info_after_queries"].as_str().unwrap(),
            "{name}: INFO after reads"
        );
        let dump = hex(v["dump_hex"].as_str().unwrap());
        assert_eq!(
            dump_payload(&td, RDB_VERSION_7_0),
            dump,
            "{name}: DUMP bytes"
        );
        // The same bytes when the DUMP comes first (it compresses a copy).
        assert_eq!(
            dump_payload(&stored, RDB_VERSION_7_0),
            dump,
            "{name}: DUMP of the uncompressed digest"
        );
        let mut back = load_payload(&dump, &Unguarded).unwrap();
        if name == "single" {
            // Loaded, the point is a centroid again (the fix): 2.8.2's
            // bytes come back only in 2.8.2's mode.
            assert_ne!(dump_payload(&back, RDB_VERSION_7_0), dump);
            back.set_single_observation(SingleObservation::Lost282);
        }
        assert_eq!(dump_payload(&back, RDB_VERSION_7_0), dump, "{name}");
        // The fix changes nothing where there is more than one observation.
        if name != "single" {
            let mut kept = build(v, SingleObservation::Kept);
            let snapshot = kept.clone();
            let c = kept.compressed().unwrap();
            assert_eq!(answers(v, c, &snapshot), expected(v), "{name}: fix mode");
            assert_eq!(dump_payload(&kept, RDB_VERSION_7_0), dump, "{name}");
        }
    }
}

#[test]
fn the_single_observation_fix_answers_the_value_and_survives_reload() {
    let v = sketch_group("tdigest_scenarios")
        .iter()
        .find(|v| v["name"] == "single")
        .expect("the single scenario");
    let mut td = build(v, SingleObservation::Kept);
    let value = td.min();
    let c = td.compressed().unwrap();
    assert!(c.quantiles(&[0.0, 0.5, 1.0]).iter().all(|&q| q == value));
    assert_eq!(c.cdf(value), 0.5);
    assert_eq!(c.trimmed_mean(0.1, 0.9), value);
    assert_eq!((c.by_rank(0), c.by_rank(1)), (value, f64::INFINITY));
    assert_eq!((c.rank(value), c.rev_rank(value)), (0, 0));
    let payload = dump_payload(&td, RDB_VERSION_7_0);
    let mut back = load_payload(&payload, &Unguarded).unwrap();
    assert_eq!(back.compressed().unwrap().quantile(0.5), value);
    // 2.8.2's own payload (the point not saved) still gives the value back.
    let mut old = load_payload(&hex(v["dump_hex"].as_str().unwrap()), &Unguarded).unwrap();
    assert_eq!(old.compressed().unwrap().quantile(0.5), value);
    old.add(7.0).unwrap();
    let q = old.compressed().unwrap().quantiles(&[0.0, 0.5, 1.0]);
    assert_eq!(q, [value, 7.0, 7.0], "§6.3: 2.8.2 answers 7 7 7 here");
}

#[test]
fn merges_as_2_8_2() {
    for v in sketch_group("tdigest_merge") {
        let desc = v["desc"].as_str().unwrap();
        let mut keys: Vec<(String, TDigest)> = Vec::new();
        for (key, spec) in v["setup"].as_object().unwrap() {
            if spec.is_null() {
                continue;
            }
            let mut td = TDigest::new(spec["compression"].as_f64().unwrap(), &Unguarded).unwrap();
            td.set_single_observation(SingleObservation::Lost282);
            for x in nums(&spec["values"]) {
                td.add(x).unwrap();
            }
            keys.push((key.clone(), td));
        }
        let cmd = strs(&v["command"]);
        let dest = cmd[1];
        let numkeys: usize = cmd[2].parse().unwrap();
        let sources = &cmd[3..3 + numkeys];
        let tail = &cmd[3 + numkeys..];
        let explicit = tail
            .iter()
            .position(|t| t.eq_ignore_ascii_case("COMPRESSION"))
            .map(|i| tail[i + 1].parse::<f64>().unwrap());
        let override_dest = tail.iter().any(|t| t.eq_ignore_ascii_case("OVERRIDE"));
        // 2.8.2 compresses the destination and every source in place.
        for (key, td) in keys.iter_mut() {
            if key == dest || sources.contains(&key.as_str()) {
                td.compress().unwrap();
            }
        }
        let get = |k: &str| keys.iter().find(|(n, _)| n == k).map(|(_, td)| td);
        let srcs: Vec<&TDigest> = sources.iter().map(|s| get(s).unwrap()).collect();
        let old = get(dest);
        let c = result_compression(explicit, override_dest, old, &srcs);
        let old = if override_dest { None } else { old };
        let mut m = merge(c, old, &srcs, &Unguarded).unwrap();
        assert_eq!(info_reply(m.info()), v["info"].as_str().unwrap(), "{desc}");
        assert_eq!(format_7_0(m.min()), v["min"].as_str().unwrap(), "{desc}");
        assert_eq!(format_7_0(m.max()), v["max"].as_str().unwrap(), "{desc}");
        let q = m
            .compressed()
            .unwrap()
            .quantiles(&[0.0, 0.01, 0.5, 0.99, 1.0]);
        assert_eq!(
            texts(q),
            own(strs(&v["quantile_0_0.01_0.5_0.99_1"])),
            "{desc}"
        );
        assert_eq!(
            dump_payload(&m, RDB_VERSION_7_0),
            hex(v["dump_hex"].as_str().unwrap()),
            "{desc}"
        );
    }
}

#[test]
fn doubles_print_as_redis_prints_them() {
    let g = &sketch_vectors()["double_format"];
    for v in g["vectors"].as_array().unwrap() {
        let x: f64 = v["input"].as_str().unwrap().parse().unwrap();
        assert_eq!(format_7_0(x), v["redis_7_0"].as_str().unwrap(), "{x:e}");
        assert_eq!(format_7_2(x), v["redis_7_4"].as_str().unwrap(), "{x:e}");
    }
    for (style, f) in [
        ("redis_7_0", format_7_0 as fn(f64) -> String),
        ("redis_7_4", format_7_2),
    ] {
        let s = &g["specials"][style];
        assert_eq!(f(f64::NAN), s["nan"].as_str().unwrap());
        assert_eq!(f(-f64::NAN), s["negative_nan"].as_str().unwrap());
        assert_eq!(f(f64::INFINITY), s["inf"].as_str().unwrap());
        assert_eq!(f(f64::NEG_INFINITY), s["-inf"].as_str().unwrap());
    }
    // §5.9: a NaN computed at run time carries the sign bit, as in 2.8.2.
    let ex = &g["negative_nan_example"];
    let cmds = ex["commands"].as_array().unwrap();
    let mut td = TDigest::new(5.0, &Unguarded).unwrap();
    let mut replies = Vec::new();
    for cmd in cmds {
        let args = strs(cmd);
        match args[0] {
            "TDIGEST.ADD" => args[2..]
                .iter()
                .for_each(|a| td.add(a.parse().unwrap()).unwrap()),
            "TDIGEST.QUANTILE" => {
                td.compressed().unwrap().quantile(0.5);
            }
            "TDIGEST.BYRANK" => {
                let c = td.compressed().unwrap();
                replies = args[2..]
                    .iter()
                    .map(|a| c.by_rank(a.parse().unwrap()))
                    .collect();
            }
            _ => {}
        }
    }
    let resp2 = |f: fn(f64) -> String| {
        let mut s = format!("*{}\r\n", replies.len());
        for &r in &replies {
            let t = f(r);
            s += &format!("${}\r\n{t}\r\n", t.len());
        }
        s
    };
    assert_eq!(resp2(format_7_0), ex["redis_7_0_resp2"].as_str().unwrap());
    assert_eq!(resp2(format_7_2), ex["redis_7_4_resp2"].as_str().unwrap());
}

/// A payload with another encoding version and a fresh CRC.
fn with_encver(payload: &[u8], encver: u16) -> Vec<u8> {
    let mut p = payload[..payload.len() - 8].to_vec();
    let id = type_id(encver).to_be_bytes();
    p[2..10].copy_from_slice(&id);
    let crc = crc64_jones(&p);
    p.extend_from_slice(&crc.to_le_bytes());
    p
}

#[test]
fn crafted_payloads() {
    let crafted: Vec<&Value> = sketch_group("rdb_crafted")
        .iter()
        .filter(|v| v["desc"].as_str().unwrap().starts_with("TDigest"))
        .collect();
    assert_eq!(crafted.len(), 2);
    for v in &crafted {
        let desc = v["desc"].as_str().unwrap();
        let p = hex(v["payload_hex"].as_str().unwrap());
        // 2.8.2 accepts both; §6.5 allows refusing them, and they are:
        // an unknown encoding version, and a cap that is not 6c + 10.
        assert!(load_payload(&p, &Unguarded).is_err(), "{desc}");
    }
    // The encver-7 digest itself is sound: as encoding 0 it answers as 2.8.2.
    let v = crafted
        .iter()
        .find(|v| v["desc"].as_str().unwrap().contains("encver 7"))
        .unwrap();
    let p = with_encver(&hex(v["payload_hex"].as_str().unwrap()), 0);
    let mut td = load_payload(&p, &Unguarded).unwrap();
    let info = info_reply(td.info());
    let q = texts(td.compressed().unwrap().quantiles(&[0.0, 0.5, 1.0]));
    assert_eq!(q, ["1", "2", "2"]);
    let after = v["after"].as_array().unwrap();
    assert_eq!(info, after[1][1].as_str().unwrap());

    // §6.4's crashing payloads and the other §6.5 refusals, built from the
    // spec's example (compression 5: cap 40, three centroids).
    let fields = |c: f64, cap: u64, merged: u64, unmerged: u64, mw: f64, uw: f64, w: f64| {
        use ferrobloom_core::dump_format::DumpWriter;
        use ferrobloom_core::rdb_io::RdbOutput;
        let mut d = DumpWriter::new(type_id(0));
        d.write_double(c);
        d.write_double(1.0);
        d.write_double(2.5);
        for x in [cap, merged, unmerged, 1] {
            d.write_unsigned(x);
        }
        d.write_double(mw);
        d.write_double(uw);
        for m in [1.0, 2.0, 2.5] {
            d.write_double(m);
        }
        for _ in 0..3 {
            d.write_double(w);
        }
        d.finish(RDB_VERSION_7_0)
    };
    let good = fields(5.0, 40, 3, 0, 3.0, 0.0, 1.0);
    assert!(load_payload(&good, &Unguarded).is_ok());
    let refused = [
        (
            fields(-5.0, 40, 3, 0, 3.0, 0.0, 1.0),
            "negative compression",
        ),
        (fields(0.0, 10, 3, 0, 3.0, 0.0, 1.0), "compression 0"),
        (fields(f64::NAN, 40, 3, 0, 3.0, 0.0, 1.0), "NaN compression"),
        (
            fields(4e8, 40, 3, 0, 3.0, 0.0, 1.0),
            "cap overflowing 32 bits",
        ),
        (fields(5.0, 16, 3, 0, 3.0, 0.0, 1.0), "cap not 6c + 10"),
        (
            fields(5.0, 40, 4000, 0, 3.0, 0.0, 1.0),
            "merged nodes above cap",
        ),
        (fields(5.0, 40, 3, 2, 3.0, 0.0, 1.0), "unmerged nodes"),
        (
            fields(5.0, 40, 3, u64::MAX, 3.0, 0.0, 1.0),
            "negative unmerged nodes",
        ),
        (fields(5.0, 40, 3, 0, -3.0, 0.0, 1.0), "negative weight"),
        (fields(5.0, 40, 3, 0, 3.5, 0.0, 1.0), "fractional weight"),
        (
            fields(5.0, 40, 3, 0, 3.0, 0.0, -1.0),
            "negative centroid weight",
        ),
        (
            fields(5.0, 40, 3, 0, 3.0, 0.0, f64::NAN),
            "NaN centroid weight",
        ),
        (
            fields(5.0, 40, 3, 0, 9.3e18, 9.3e18, 1.0),
            "weight above 2^63",
        ),
        (
            fields(5.0, 40, 3, 0, 9.2e18, 9.2e18, 1.0),
            "total above 2^63 - 1",
        ),
    ];
    for (p, why) in refused {
        assert!(load_payload(&p, &Unguarded).is_err(), "{why}");
    }
    // Truncated anywhere (the CRC redone): an error, never a panic.
    let body = &good[..good.len() - 10];
    for cut in 10..body.len() {
        let mut p = body[..cut].to_vec();
        p.extend_from_slice(&RDB_VERSION_7_0.to_le_bytes());
        let crc = crc64_jones(&p);
        p.extend_from_slice(&crc.to_le_bytes());
        assert!(load_payload(&p, &Unguarded).is_err(), "cut at {cut}");
    }
}

#[test]
fn committed_fuzz_corpora_replay() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fuzz");
    let mut replayed = 0;
    for (target, run) in [
        ("tdigest_rdb", fuzzing::rdb as fn(&[u8])),
        ("tdigest_roundtrip", fuzzing::round_trips),
    ] {
        let dir = root.join(target);
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|_| panic!("{dir:?}")) {
            run(&std::fs::read(entry.unwrap().path()).unwrap());
            replayed += 1;
        }
    }
    assert!(replayed >= 20, "only {replayed} inputs");
}
