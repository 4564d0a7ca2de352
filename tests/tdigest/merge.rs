//! TDIGEST.MERGE against RedisBloom 2.8.2 run side by side: the same
//! digests (DUMP bytes) and answers, its errors, and the two documented
//! differences (TTL kept, a listed destination merged once).

use super::common::{ModuleKind, RawClient, Server, ServerOpts};
use super::{as_printed_by, dumped, OK};

fn setup(r: &mut RawClient) {
    assert_eq!(r.line("TDIGEST.CREATE a COMPRESSION 50"), OK);
    assert_eq!(r.line("TDIGEST.CREATE b COMPRESSION 200"), OK);
    assert_eq!(r.line("TDIGEST.CREATE d COMPRESSION 20"), OK);
    for i in 0..400 {
        let x = ((i * 7919) % 1000) as f64 / 13.0;
        let x = x.to_string();
        let y = (x.parse::<f64>().unwrap() * -1.5).to_string();
        r.cmd(&["TDIGEST.ADD", "a", &x]);
        r.cmd(&["TDIGEST.ADD", "b", &y, &x]);
        if i % 3 == 0 {
            r.cmd(&["TDIGEST.ADD", "d", &x]);
        }
    }
}

/// The merges whose results both modules must build alike.
const MERGES: &[&[&str]] = &[
    &["TDIGEST.MERGE", "new", "2", "a", "b"],
    &["TDIGEST.MERGE", "new2", "1", "a", "COMPRESSION", "30"],
    &["TDIGEST.MERGE", "d", "2", "a", "b"],
    &["TDIGEST.MERGE", "d", "1", "b", "OVERRIDE"],
    &[
        "TDIGEST.MERGE",
        "d",
        "2",
        "a",
        "b",
        "compression",
        "70",
        "override",
    ],
    &["TDIGEST.MERGE", "d", "1", "a", "COMPRESSION", "100", "foo"],
    // With OVERRIDE, the destination listed twice is merged twice, as any
    // source listed twice.
    &["TDIGEST.MERGE", "d", "3", "a", "d", "d", "OVERRIDE"],
    &[
        "TDIGEST.MERGE",
        "d",
        "3",
        "d",
        "b",
        "d",
        "OVERRIDE",
        "COMPRESSION",
        "30",
    ],
];

/// INFO first: 2.8.2's other reads compress the stored digest, which
/// INFO then shows (FerroBloom's do not).
const READS: &[&[&str]] = &[
    &["TDIGEST.INFO", ""],
    &["TDIGEST.QUANTILE", "", "0", "0.1", "0.5", "0.99", "1"],
    &["TDIGEST.CDF", "", "-10", "0", "5.5", "40"],
];

#[test]
fn merges_build_2_8_2s_digests() {
    let rb = Server::start(ServerOpts::new(ModuleKind::RedisBloom));
    let fb = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let (mut r, mut f) = (rb.raw(), fb.raw());
    let redis_70 = fb.version().is_redis_70();
    setup(&mut r);
    setup(&mut f);
    for merge in MERGES {
        assert_eq!(r.cmd(merge), OK, "{merge:?}");
        assert_eq!(f.cmd(merge), OK, "{merge:?}");
        let dest = merge[1];
        for read in READS {
            let mut read = read.to_vec();
            read[1] = dest;
            assert_eq!(
                String::from_utf8_lossy(&f.cmd(&read)),
                String::from_utf8_lossy(&as_printed_by(&r.cmd(&read), redis_70)),
                "{read:?} after {merge:?}"
            );
        }
        assert_eq!(
            dumped(&mut f, dest),
            dumped(&mut r, dest),
            "DUMP after {merge:?}"
        );
    }
}

#[test]
fn merge_errors_are_2_8_2s() {
    let rb = Server::start(ServerOpts::new(ModuleKind::RedisBloom));
    let fb = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let (mut r, mut f) = (rb.raw(), fb.raw());
    for c in [&mut r, &mut f] {
        assert_eq!(c.line("TDIGEST.CREATE a"), OK);
        assert_eq!(c.line("SET s x"), OK);
    }
    let cases: &[&[&str]] = &[
        &["TDIGEST.MERGE", "d", "1"],
        &["TDIGEST.MERGE", "s", "1", "a"],
        &["TDIGEST.MERGE", "d", "x", "a"],
        &["TDIGEST.MERGE", "d", "0", "a"],
        &["TDIGEST.MERGE", "d", "-1", "a"],
        &["TDIGEST.MERGE", "d", "3", "a"],
        &["TDIGEST.MERGE", "d", "1", "a", "COMPRESSION"],
        &["TDIGEST.MERGE", "d", "1", "a", "COMPRESSION", "x"],
        &["TDIGEST.MERGE", "d", "1", "a", "COMPRESSION", "0"],
        &["TDIGEST.MERGE", "d", "1", "a", "foo"],
        &["TDIGEST.MERGE", "d", "2", "a", "missing"],
        &["TDIGEST.MERGE", "d", "2", "a", "s"],
        &["TDIGEST.MERGE", "d", "2", "a", "d"],
    ];
    for case in cases {
        let want = r.cmd(case);
        assert!(want.starts_with(b"-"), "{case:?}");
        assert_eq!(
            String::from_utf8_lossy(&f.cmd(case)),
            String::from_utf8_lossy(&want),
            "{case:?}"
        );
    }
    assert_eq!(f.cmd(&["EXISTS", "d"]), b":0\r\n");
}

#[test]
fn the_destination_keeps_its_ttl_and_counts_once() {
    let fb = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let mut f = fb.raw();
    assert_eq!(f.line("TDIGEST.CREATE d"), OK);
    assert_eq!(f.line("TDIGEST.ADD d 1 2 3"), OK);
    assert_eq!(f.line("TDIGEST.CREATE a"), OK);
    assert_eq!(f.line("TDIGEST.ADD a 10"), OK);
    assert_eq!(f.line("EXPIRE d 1000"), b":1\r\n");
    assert_eq!(f.line("TDIGEST.MERGE d 2 d a"), OK);
    let ttl = f.line("TTL d");
    assert!(
        ttl.starts_with(b":") && ttl != b":-1\r\n",
        "{}",
        String::from_utf8_lossy(&ttl)
    );
    let info = String::from_utf8_lossy(&f.line("TDIGEST.INFO d")).to_string();
    assert!(info.contains("+Observations\r\n:4\r\n"), "{info}");
}

/// A WATCH on the destination sees a MERGE that merged and only that one:
/// a refused MERGE (missing or wrong-typed source, bad numbers, a
/// destination of another type, a result too large to allocate) touches
/// no key, as in 2.8.2, which opens the destination for writing only to
/// store the result; a source is never touched. Both modules give the
/// same EXEC answers.
#[test]
fn a_refused_merge_leaves_a_watch_on_its_destination() {
    let rb = Server::start(ServerOpts::new(ModuleKind::RedisBloom));
    let fb = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    // (what d holds, the MERGE, the key watched, whether EXEC runs); the
    // MERGE succeeds where EXEC does not run, and in the last case.
    let cases: &[(&str, &str, &str, bool)] = &[
        ("", "TDIGEST.MERGE d 1 nokey", "d", true),
        ("digest", "TDIGEST.MERGE d 1 nokey", "d", true),
        ("string", "TDIGEST.MERGE d 1 nokey", "d", true),
        ("digest", "TDIGEST.MERGE d 2 s str", "d", true),
        ("", "TDIGEST.MERGE d 0 s", "d", true),
        ("digest", "TDIGEST.MERGE d 2 s", "d", true),
        ("digest", "TDIGEST.MERGE d 1 s FOO", "d", true),
        ("digest", "TDIGEST.MERGE d 1 s COMPRESSION 0", "d", true),
        (
            "digest",
            "TDIGEST.MERGE d 1 s COMPRESSION 1000000000000",
            "d",
            true,
        ),
        ("string", "TDIGEST.MERGE d 1 s", "d", true),
        ("", "TDIGEST.MERGE d 1 d", "d", true),
        ("", "TDIGEST.MERGE d 1 s", "d", false),
        ("digest", "TDIGEST.MERGE d 1 s", "d", false),
        ("digest", "TDIGEST.MERGE d 1 d", "d", false),
        ("digest", "TDIGEST.MERGE d 1 s", "s", true),
    ];
    for (name, server) in [("2.8.2", &rb), ("FerroBloom", &fb)] {
        let mut c = server.raw();
        for (i, &(setup, merge, watched, runs)) in cases.iter().enumerate() {
            assert_eq!(c.line("FLUSHALL"), OK);
            assert_eq!(c.line("TDIGEST.CREATE s"), OK);
            assert_eq!(c.line("TDIGEST.ADD s 1 2 3"), OK);
            assert_eq!(c.line("SET str v"), OK);
            match setup {
                "digest" => assert_eq!(c.line("TDIGEST.CREATE d"), OK),
                "string" => assert_eq!(c.line("SET d v"), OK),
                _ => {}
            }
            assert_eq!(c.cmd(&["WATCH", watched]), OK);
            let merged = c.line(merge) == OK;
            let last = i + 1 == cases.len();
            assert_eq!(merged, !runs || last, "{name}: {merge} ({setup:?} d)");
            assert_eq!(c.line("MULTI"), OK);
            assert_eq!(c.line("PING"), b"+QUEUED\r\n");
            let exec = c.line("EXEC");
            let want: &[u8] = if runs { b"*1\r\n+PONG\r\n" } else { b"*-1\r\n" };
            assert_eq!(
                String::from_utf8_lossy(&exec),
                String::from_utf8_lossy(want),
                "{name}: EXEC after WATCH {watched} and {merge} ({setup:?} d)"
            );
        }
    }
}
