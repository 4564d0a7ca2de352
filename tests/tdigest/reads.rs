//! Reads on a master answer what RedisBloom 2.8.2 answers, including what
//! its reads compress: sequences of adds, reads, INFO, more adds, reads,
//! MERGE of sources read before, and DUMP after a read, sent to both, give
//! the same replies and DUMP bytes. A DUMP right after adds (no read)
//! differs by design: 2.8.2's DUMP compresses the stored digest, while
//! FerroBloom's writes the digest as held (with its unmerged points), which
//! compresses to 2.8.2's.

use ferrobloom_core::tdigest::dump;
use ferrobloom_core::Unguarded;

use super::common::{dump_parts, restamp_dump, ModuleKind, RawClient, Server, ServerOpts};
use super::{as_printed_by, bulk, dumped, OK};

/// A small deterministic generator (the sequences must be the same on
/// both servers and from run to run).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// A value with ties and a spread of magnitudes.
    fn value(&mut self) -> String {
        match self.below(4) {
            0 => (self.below(10)).to_string(),
            1 => format!("{}.5", self.below(200) as i64 - 100),
            2 => format!("{}", (self.below(1_000_000) as f64) / 7.0),
            _ => format!("-{}", self.below(50)),
        }
    }
}

struct Pair {
    r: RawClient,
    f: RawClient,
    redis_70: bool,
}

impl Pair {
    /// Sends `args` to both and checks the replies are the same (2.8.2's
    /// doubles reprinted as FerroBloom's server prints them).
    fn same(&mut self, args: &[&str]) -> Vec<u8> {
        let theirs = as_printed_by(&self.r.cmd(args), self.redis_70);
        let ours = self.f.cmd(args);
        assert_eq!(
            String::from_utf8_lossy(&ours),
            String::from_utf8_lossy(&theirs),
            "{args:?}"
        );
        ours
    }

    fn ok(&mut self, args: &[&str]) {
        assert_eq!(self.same(args), OK, "{args:?}");
    }
}

fn start() -> (Server, Server, Pair) {
    let rb = Server::start(ServerOpts::new(ModuleKind::RedisBloom));
    let fb = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let pair = Pair {
        r: rb.raw(),
        f: fb.raw(),
        redis_70: fb.version().is_redis_70(),
    };
    (rb, fb, pair)
}

const READS: &[&[&str]] = &[
    &[
        "TDIGEST.QUANTILE",
        "",
        "0",
        "0.01",
        "0.25",
        "0.5",
        "0.75",
        "0.99",
        "1",
    ],
    &["TDIGEST.CDF", "", "-10", "0", "3", "5.5", "50"],
    &["TDIGEST.RANK", "", "-1", "0", "4", "90"],
    &["TDIGEST.REVRANK", "", "-1", "0", "4", "90"],
    &["TDIGEST.BYRANK", "", "0", "1", "7", "30", "1000"],
    &["TDIGEST.BYREVRANK", "", "0", "1", "7", "30", "1000"],
    &["TDIGEST.TRIMMED_MEAN", "", "0.1", "0.9"],
    &["TDIGEST.MIN", ""],
    &["TDIGEST.MAX", ""],
    &["TDIGEST.INFO", ""],
];

fn read(p: &mut Pair, which: usize, key: &str) {
    let mut args = READS[which].to_vec();
    args[1] = key;
    p.same(&args);
}

fn add(p: &mut Pair, g: &mut Lcg, key: &str, n: usize) {
    let values: Vec<String> = (0..n).map(|_| g.value()).collect();
    let mut args = vec!["TDIGEST.ADD", key];
    args.extend(values.iter().map(String::as_str));
    p.ok(&args);
}

#[test]
fn fixed_sequences_answer_and_dump_as_2_8_2() {
    let (_rb, _fb, mut p) = start();
    let mut g = Lcg(7);
    p.ok(&["TDIGEST.CREATE", "a", "COMPRESSION", "10"]);
    p.ok(&["TDIGEST.CREATE", "b", "COMPRESSION", "30"]);
    for round in 0..12 {
        add(&mut p, &mut g, "a", 5 + round * 3);
        add(&mut p, &mut g, "b", 11);
        read(&mut p, 9, "a"); // INFO before the read
        read(&mut p, round % 7, "a");
        read(&mut p, 9, "a"); // and after: compressed in both
        read(&mut p, (round + 3) % 9, "b");
        read(&mut p, round % 9, "a");
    }
    // MERGE of sources read before (and not): sources compressed in both.
    read(&mut p, 0, "a");
    add(&mut p, &mut g, "b", 13);
    p.ok(&["TDIGEST.MERGE", "m", "2", "a", "b"]);
    for key in ["a", "b", "m"] {
        read(&mut p, 9, key);
    }
    for (i, key) in ["m", "a", "b"].iter().enumerate() {
        read(&mut p, i, key);
        assert_eq!(
            dumped(&mut p.f, key),
            dumped(&mut p.r, key),
            "DUMP {key} after a read"
        );
    }
    // More adds after the DUMPs: the stored digests are still the same.
    add(&mut p, &mut g, "a", 40);
    read(&mut p, 9, "a");
    read(&mut p, 0, "a");
    assert_eq!(dumped(&mut p.f, "a"), dumped(&mut p.r, "a"));
}

#[test]
fn a_dump_right_after_adds_is_2_8_2s_and_changes_nothing() {
    let (_rb, _fb, mut p) = start();
    let mut g = Lcg(11);
    p.ok(&["TDIGEST.CREATE", "a", "COMPRESSION", "10"]);
    add(&mut p, &mut g, "a", 30);
    read(&mut p, 1, "a");
    add(&mut p, &mut g, "a", 17);
    let info_before = p.f.cmd(&["TDIGEST.INFO", "a"]);
    let theirs = bulk(&p.r.cmd(&["DUMP", "a"]));
    // As the oracle's server (Redis 7.0) frames it, whatever server
    // FerroBloom runs on.
    let ours = restamp_dump(&bulk(&p.f.cmd(&["DUMP", "a"])), dump_parts(&theirs).1);
    // The same bytes: compress(S) in 2.8.2's encoding, which 2.8.2 loads.
    assert_eq!(ours, theirs);
    let held = dump::load_payload(&ours, &Unguarded).expect("our payload");
    assert_eq!(held.unmerged_nodes(), 0, "saved compressed");
    // 2.8.2's DUMP compressed its stored digest; FerroBloom's changed
    // nothing (INFO as before: documented in docs/tdigest.md).
    assert_eq!(p.f.cmd(&["TDIGEST.INFO", "a"]), info_before);
    // RESTORE of the payload on either module loads the same digest.
    assert_eq!(p.f.cmd(&[b"RESTORE".as_slice(), b"c", b"0", &theirs]), OK);
    assert_eq!(p.r.cmd(&[b"RESTORE".as_slice(), b"c", b"0", &ours]), OK);
    assert_eq!(
        p.f.cmd(&["TDIGEST.INFO", "c"]),
        p.r.cmd(&["TDIGEST.INFO", "c"])
    );
    // A read then answers alike on both, and INFO after it too.
    read(&mut p, 0, "a");
    read(&mut p, 9, "a");
}

#[test]
fn random_sequences_answer_as_2_8_2() {
    let (_rb, _fb, mut p) = start();
    for seed in 1..=6u64 {
        let mut g = Lcg(seed * 0x9e37_79b9);
        let key = format!("r{seed}");
        let compression = (5 + g.below(60)).to_string();
        p.ok(&["TDIGEST.CREATE", &key, "COMPRESSION", &compression]);
        for _ in 0..120 {
            match g.below(10) {
                0..=4 => {
                    let n = 1 + g.below(40) as usize;
                    add(&mut p, &mut g, &key, n);
                }
                5 => {
                    let src = format!("s{seed}");
                    p.same(&["DEL", &src]);
                    p.ok(&["TDIGEST.CREATE", &src, "COMPRESSION", "20"]);
                    add(&mut p, &mut g, &src, 25);
                    if g.below(2) == 0 {
                        read(&mut p, 0, &src);
                    }
                    p.ok(&["TDIGEST.MERGE", &key, "2", &key, &src, "OVERRIDE"]);
                    read(&mut p, 9, &src);
                }
                _ => {
                    let which = g.below(READS.len() as u64) as usize;
                    read(&mut p, which, &key);
                }
            }
        }
        read(&mut p, 0, &key);
        assert_eq!(dumped(&mut p.f, &key), dumped(&mut p.r, &key), "{key}");
    }
}
