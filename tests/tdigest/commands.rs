//! The TDIGEST.* commands against 2.8.2's replies (`tdigest_scenarios`):
//! the doubles as the running server prints them, RESP2 and RESP3, and the
//! errors.

use super::common::{ModuleKind, RawClient, Server, ServerOpts};
use super::{printed, vectors, OK};

fn bulk(text: &str) -> String {
    format!("${}\r\n{text}\r\n", text.len())
}

fn doubles(texts: &[serde_json::Value], redis_70: bool) -> Vec<u8> {
    let mut out = format!("*{}\r\n", texts.len());
    for t in texts {
        out += &bulk(&printed(t.as_str().expect("a string"), redis_70));
    }
    out.into_bytes()
}

fn integers(values: &[serde_json::Value]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", values.len());
    for v in values {
        out += &format!(":{}\r\n", v.as_i64().expect("an integer"));
    }
    out.into_bytes()
}

fn strs(values: &serde_json::Value) -> Vec<&str> {
    values
        .as_array()
        .expect("an array")
        .iter()
        .map(|v| v.as_str().expect("a string"))
        .collect()
}

fn cmd(r: &mut RawClient, name: &str, key: &str, args: &[&str]) -> Vec<u8> {
    let mut all = vec![name, key];
    all.extend_from_slice(args);
    r.cmd(&all)
}

#[test]
fn the_vectors_replies_in_resp2() {
    let fb = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let mut r = fb.raw();
    let v70 = fb.version().is_redis_70();
    for v in vectors() {
        let name = v["name"].as_str().unwrap();
        let key = format!("td:{name}");
        let create = strs(&v["create"]);
        assert_eq!(cmd(&mut r, create[0], &key, &create[2..]), OK, "{name}");
        for batch in v["add_batches"].as_array().unwrap() {
            assert_eq!(cmd(&mut r, "TDIGEST.ADD", &key, &strs(batch)), OK, "{name}");
        }
        assert_eq!(
            String::from_utf8_lossy(&r.cmd(&["TDIGEST.INFO", &key])),
            v["info_after_adds"].as_str().unwrap(),
            "INFO {name}"
        );
        let min = bulk(&printed(v["min"].as_str().unwrap(), v70));
        assert_eq!(r.cmd(&["TDIGEST.MIN", &key]), min.as_bytes(), "{name}");
        let max = bulk(&printed(v["max"].as_str().unwrap(), v70));
        assert_eq!(r.cmd(&["TDIGEST.MAX", &key]), max.as_bytes(), "{name}");
        if name == "single" {
            // 2.8.2 answers nan for one observation; FerroBloom its value
            // (spec §9.2).
            assert_eq!(
                r.cmd(&["TDIGEST.QUANTILE", &key, "0.5"]),
                format!("*1\r\n{}", bulk("5")).as_bytes()
            );
            assert_eq!(r.cmd(&["TDIGEST.RANK", &key, "5"]), b"*1\r\n:0\r\n");
            continue;
        }
        let args = |field: &str| strs(&v[field]);
        let want = |field: &str| v[field].as_array().unwrap().clone();
        for (reads, argf, wantf) in [
            ("TDIGEST.QUANTILE", "quantile_args", "quantile"),
            (
                "TDIGEST.QUANTILE",
                "quantile_unsorted_args",
                "quantile_unsorted",
            ),
            ("TDIGEST.CDF", "cdf_args", "cdf"),
            ("TDIGEST.BYRANK", "byrank_args", "byrank"),
            ("TDIGEST.BYREVRANK", "byrank_args", "byrevrank"),
        ] {
            assert_eq!(
                String::from_utf8_lossy(&cmd(&mut r, reads, &key, &args(argf))),
                String::from_utf8_lossy(&doubles(&want(wantf), v70)),
                "{reads} {name}"
            );
        }
        for (reads, wantf) in [("TDIGEST.RANK", "rank"), ("TDIGEST.REVRANK", "revrank")] {
            assert_eq!(
                String::from_utf8_lossy(&cmd(&mut r, reads, &key, &args("cdf_args"))),
                String::from_utf8_lossy(&integers(&want(wantf))),
                "{reads} {name}"
            );
        }
        for (cuts, mean) in v["trimmed_mean"].as_object().unwrap() {
            let cuts: Vec<&str> = cuts.split(' ').collect();
            assert_eq!(
                String::from_utf8_lossy(&cmd(&mut r, "TDIGEST.TRIMMED_MEAN", &key, &cuts)),
                bulk(&printed(mean.as_str().unwrap(), v70)),
                "TRIMMED_MEAN {cuts:?} {name}"
            );
        }
        // Reads leave the stored digest as it was.
        assert_eq!(
            String::from_utf8_lossy(&r.cmd(&["TDIGEST.INFO", &key])),
            v["info_after_adds"].as_str().unwrap(),
            "INFO after reads {name}"
        );
    }
}

#[test]
fn resp3_doubles_and_info_map() {
    let fb = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let mut r = fb.raw();
    assert!(r.cmd(&["HELLO", "3"]).starts_with(b"%"));
    assert_eq!(r.cmd(&["TDIGEST.CREATE", "t", "COMPRESSION", "100"]), OK);
    assert_eq!(r.cmd(&["TDIGEST.ADD", "t", "1", "2", "3", "4"]), OK);
    assert_eq!(r.cmd(&["TDIGEST.MIN", "t"]), b",1\r\n");
    assert_eq!(r.cmd(&["TDIGEST.QUANTILE", "t", "1"]), b"*1\r\n,4\r\n");
    assert_eq!(r.cmd(&["TDIGEST.BYRANK", "t", "9"]), b"*1\r\n,inf\r\n");
    let info = r.cmd(&["TDIGEST.INFO", "t"]);
    assert!(
        info.starts_with(b"%9\r\n+Compression\r\n:100\r\n"),
        "{}",
        String::from_utf8_lossy(&info)
    );
}

#[test]
fn errors_are_2_8_2s() {
    let fb = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let mut r = fb.raw();
    let cases: &[(&[&str], &str)] = &[
        (
            &["TDIGEST.CREATE", "t", "COMPRESSION"],
            "-ERR wrong number of arguments for 'tdigest.create' command",
        ),
        (
            &["TDIGEST.CREATE", "t", "X", "100"],
            "-ERR T-Digest: wrong keyword",
        ),
        (
            &["TDIGEST.CREATE", "t", "100", "COMPRESSION"],
            "-ERR T-Digest: error parsing compression parameter",
        ),
        (
            &["TDIGEST.CREATE", "t", "COMPRESSION", "0"],
            "-ERR T-Digest: compression parameter needs to be a positive integer",
        ),
        (
            &["TDIGEST.CREATE", "t", "COMPRESSION", "1000000000"],
            "-ERR T-Digest: allocation failed",
        ),
        (
            &["TDIGEST.ADD", "missing", "1"],
            "-ERR T-Digest: key does not exist",
        ),
        (
            &["TDIGEST.QUANTILE", "missing", "x"],
            "-ERR T-Digest: key does not exist",
        ),
        (&["TDIGEST.CREATE", "t"], "+OK"),
        (
            &["TDIGEST.CREATE", "t"],
            "-ERR T-Digest: key already exists",
        ),
        (
            &["TDIGEST.ADD", "t", "1", "nan"],
            "-ERR T-Digest: error parsing val parameter",
        ),
        (
            &["TDIGEST.ADD", "t", "1", "inf"],
            "-ERR T-Digest: val parameter needs to be a finite number",
        ),
        (
            &["TDIGEST.QUANTILE", "t", "2", "x"],
            "-ERR T-Digest: quantile should be in [0,1]",
        ),
        (
            &["TDIGEST.QUANTILE", "t", "x", "2"],
            "-ERR T-Digest: error parsing quantile",
        ),
        (
            &["TDIGEST.CDF", "t", "x"],
            "-ERR T-Digest: error parsing cdf",
        ),
        (
            &["TDIGEST.RANK", "t", "x"],
            "-ERR T-Digest: error parsing value",
        ),
        (
            &["TDIGEST.BYRANK", "t", "1.5"],
            "-ERR T-Digest: error parsing rank",
        ),
        (
            &["TDIGEST.BYREVRANK", "t", "-1"],
            "-ERR T-Digest: rank needs to be non negative",
        ),
        (
            &["TDIGEST.TRIMMED_MEAN", "t", "x", "1"],
            "-ERR T-Digest: error parsing low_cut_percentile",
        ),
        (
            &["TDIGEST.TRIMMED_MEAN", "t", "0", "y"],
            "-ERR T-Digest: error parsing high_cut_percentile",
        ),
        (
            &["TDIGEST.TRIMMED_MEAN", "t", "0", "2"],
            "-ERR T-Digest: low_cut_percentile and high_cut_percentile should be in [0,1]",
        ),
        (
            &["TDIGEST.TRIMMED_MEAN", "t", "0.5", "0.5"],
            "-ERR T-Digest: low_cut_percentile should be lower than high_cut_percentile",
        ),
        (&["TDIGEST.RANK", "t", "1"], "*1\r\n:-2"),
        (&["TDIGEST.ADD", "t", "1", "2"], "+OK"),
        (&["TDIGEST.RESET", "t"], "+OK"),
        (&["TDIGEST.RANK", "t", "1"], "*1\r\n:-2"),
    ];
    for (args, want) in cases {
        let got = r.cmd(args);
        assert_eq!(
            String::from_utf8_lossy(&got),
            format!("{want}\r\n"),
            "{args:?}"
        );
    }
    assert_eq!(r.cmd(&["SET", "s", "x"]), OK);
    assert!(r.cmd(&["TDIGEST.MIN", "s"]).starts_with(b"-WRONGTYPE"));
    assert!(r.cmd(&["TDIGEST.CREATE", "s"]).starts_with(b"-WRONGTYPE"));
    assert!(r.cmd(&["TDIGEST.ADD", "s", "1"]).starts_with(b"-WRONGTYPE"));
}
