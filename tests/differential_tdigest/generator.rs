//! The random TDIGEST.* command generator: valid and malformed commands on
//! digests of small compressions (so compressions happen often), with
//! values that repeat, fractions, negatives, huge and tiny magnitudes and
//! words the double parser refuses; merges of every shape; reads of every
//! kind with arguments in and out of range; keys of other types and
//! missing keys, alone, in MULTI/EXEC, EVAL, under maxmemory and around
//! WATCH. Every DUMP sent to both is followed by a compressing read (2.8.2's
//! DUMP compresses the stored digest, FerroBloom's does not: documented).

use super::known::{self, observations};
use super::Diff;
use crate::common::differential::{args, b, Args, LUA_PCALL};
use crate::common::{decode, restamp_dump, Resp};

/// Values TDIGEST.ADD takes at the edges of the doubles.
const EDGE_VALUES: &[&str] = &[
    "1e300",
    "-1e300",
    "1.7976931348623157e308",
    "-1.7976931348623157e308",
    "1e-300",
    "-1e-300",
    "5e-324",
    "-0",
    "0.0",
    "1e15",
    "-123456789.123456789",
    "3.0000000000000004",
    "9007199254740993",
];
/// Words the double parser refuses or the digest takes no value of.
const BAD_VALUES: &[&str] = &[
    "nan", "NaN", "-nan", "inf", "-inf", "+inf", "infinity", "x", "", "1e309", "-1e309", " 1",
    "1 ", "1.5.5", "--1", "1,5", "1e",
];
const QUANTILES: &[&str] = &[
    "0",
    "1",
    "0.5",
    "0.1",
    "0.9",
    "0.01",
    "0.99",
    "0.25",
    "0.75",
    "1e-9",
    "0.999999",
    "-0",
    "0.3333333333333333",
];
const BAD_QUANTILES: &[&str] = &["1.5", "-0.1", "2", "nan", "x", "inf", "-inf", "1e309", ""];
const BAD_RANKS: &[&str] = &[
    "-1",
    "1.5",
    "x",
    "",
    "nan",
    "inf",
    "9223372036854775808",
    "+1",
];
const CUTS: &[&str] = &[
    "0", "0.1", "0.25", "0.5", "0.75", "0.9", "1", "0.05", "0.95",
];
const BAD_CUTS: &[&str] = &["-0.1", "1.1", "nan", "x", "", "inf"];
const BAD_COMPRESSIONS: &[&str] = &[
    // Refused by both: past 2.8.2's own limit on the compression.
    "9223372036854775807",
    "0",
    "-1",
    "x",
    "1.5",
    "",
    "nan",
    "9223372036854775808",
    "+5",
    "05",
];
/// Creations 2.8.2 is not sent (`known::fb_only_case`), on a key never
/// created.
const FB_ONLY: &[&[&str]] = &[
    &["TDIGEST.CREATE", "huge", "COMPRESSION", "357913940"],
    &["TDIGEST.CREATE", "huge", "COMPRESSION", "400000000"],
    &["TDIGEST.CREATE", "huge", "compression", "1000000000000"],
    &["TDIGEST.CREATE", "huge", "COMPRESSION", "357913939"],
    &["TDIGEST.CREATE", "huge", "COMPRESSION", "50000000"],
];

impl Diff {
    /// A value TDIGEST.ADD takes: repeats, small integers, fractions,
    /// negatives, edge magnitudes.
    pub fn value(&mut self) -> Vec<u8> {
        if !self.pool.is_empty() && self.rng.chance(1, 4) {
            let i = self.rng.index(self.pool.len());
            return self.pool[i].clone();
        }
        let v = match self.rng.weighted(&[30, 15, 20, 15, 4, 16]) {
            0 => self.rng.below(20).to_string(),
            1 => format!("-{}", self.rng.range(1, 30)),
            2 => format!("{}.5", self.rng.range(-50, 50)),
            3 => format!("{}", self.rng.below(1_000_000) as f64 / 7.0),
            4 => self.rng.pick(EDGE_VALUES).to_string(),
            _ => format!("{}", (self.rng.unit() - 0.3) * 1000.0),
        };
        let v = v.into_bytes();
        if self.pool.len() < 200 {
            self.pool.push(v.clone());
        } else {
            let i = self.rng.index(self.pool.len());
            self.pool[i] = v.clone();
        }
        v
    }

    fn is_digest(&mut self, key: &[u8]) -> bool {
        self.rb.control.cmd(&[b"TYPE".as_slice(), key]) == super::TYPE_REPLY
    }

    /// The digests FerroBloom's server holds.
    pub fn digest_keys(&mut self) -> Vec<Vec<u8>> {
        let Resp::Array(keys) = decode(&self.fb.control.cmd(&["KEYS", "*"])) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for k in keys {
            if let Resp::Bulk(k) = k {
                if self.fb.control.cmd(&[b"TYPE".as_slice(), &k]) == super::TYPE_REPLY {
                    out.push(k);
                }
            }
        }
        out.sort();
        out
    }

    /// A compression: small ones mostly, so that compressions happen often.
    fn compression(&mut self) -> Vec<u8> {
        match self.rng.weighted(&[60, 25, 10, 5]) {
            0 => self.rng.range(1, 30).to_string().into_bytes(),
            1 => self.rng.range(30, 200).to_string().into_bytes(),
            2 => b("100"),
            _ => self.pick_str(&["1", "2", "500"]),
        }
    }

    /// Sends a generated command on a random connection (to FerroBloom
    /// alone where `known::fb_only_case` says so).
    fn send_td(&mut self, a: &[Vec<u8>]) {
        let proto = self.rng.index(2);
        if let Some(case) = known::fb_only_case(a) {
            if !self.holds_digest(&a[1])
                && self.rb.control.cmd(&[b"EXISTS".as_slice(), &a[1]]) == b":0\r\n"
            {
                let (reply, propagated) = self.send_fb_only(proto, a);
                known::check_fb_only(self, case, &reply, &propagated);
            }
            return;
        }
        self.send_proto(proto, a);
    }

    /// DUMP of `key` to both, then the compressing read that keeps their
    /// digests comparable (2.8.2's DUMP compressed its stored one).
    pub fn dump_then_read(&mut self, key: &[u8]) -> crate::common::differential::Pair {
        let r = self.send(&args!["DUMP", key]);
        self.send(&args!["TDIGEST.QUANTILE", key, "0"]);
        r
    }

    // -- writes ----------------------------------------------------------------------

    /// TDIGEST.CREATE: with a compression (small), without, malformed.
    pub fn op_create(&mut self) {
        let key = self.key();
        let mut a = vec![self.name("TDIGEST.CREATE"), key];
        match self.rng.weighted(&[55, 15, 8, 5, 5, 4, 4, 4]) {
            0 => {
                let kw =
                    self.pick_str(&["COMPRESSION", "COMPRESSION", "compression", "Compression"]);
                a.push(kw);
                let c = self.compression();
                a.push(c);
            }
            1 => {}
            2 => {
                a.push(b("COMPRESSION"));
                let c = self.pick_str(BAD_COMPRESSIONS);
                a.push(c);
            }
            3 => {
                a.push(self.pick_str(&["COMPRESS", "x", "", "COMPRESSIONS"]));
                a.push(b("100"));
            }
            4 => {
                // `k 100 COMPRESSION` and `k COMPRESSION COMPRESSION`.
                let c = self.compression();
                a.push(c);
                a.push(b("COMPRESSION"));
            }
            5 => a.push(b("COMPRESSION")),
            6 => a.truncate(1),
            _ => {
                a.push(b("COMPRESSION"));
                a.push(b("100"));
                a.push(b("x"));
            }
        }
        self.send_td(&a);
    }

    /// Most writes and reads find a digest: a missing key is created
    /// first (small compression) three times in four.
    fn ensure_digest(&mut self, key: &[u8]) {
        let missing = self.rb.control.cmd(&[b"EXISTS".as_slice(), key]) == b":0\r\n";
        if missing && self.rng.chance(3, 4) {
            let c = self.compression();
            self.send_td(&args!["TDIGEST.CREATE", key, "COMPRESSION", c]);
        }
    }

    pub fn op_add(&mut self) {
        let key = self.key();
        self.ensure_digest(&key);
        let n = match self.rng.weighted(&[25, 45, 25, 5]) {
            0 => 1,
            1 => self.rng.range(2, 12) as usize,
            2 => self.rng.range(12, 50) as usize,
            _ => 0,
        };
        let mut a = vec![self.name("TDIGEST.ADD"), key];
        for _ in 0..n {
            let v = self.value();
            a.push(v);
        }
        if n > 0 && self.rng.chance(1, 12) {
            let at = 2 + self.rng.index(n);
            a[at] = self.pick_str(BAD_VALUES);
        }
        self.send_td(&a);
    }

    pub fn op_reset(&mut self) {
        let key = self.key();
        let mut a = vec![self.name("TDIGEST.RESET"), key];
        if self.rng.chance(1, 10) {
            a.push(b("x"));
        }
        self.send_td(&a);
    }

    /// TDIGEST.MERGE: 1 to 3 sources (missing ones, other types, the
    /// destination among them), with COMPRESSION, OVERRIDE, both, unknown
    /// words, bad numbers.
    pub fn op_merge(&mut self) {
        let dest = self.key();
        let n = self.rng.range(1, 3) as usize;
        let mut a = vec![
            self.name("TDIGEST.MERGE"),
            dest.clone(),
            n.to_string().into_bytes(),
        ];
        for _ in 0..n {
            let src = if self.rng.chance(1, 6) {
                dest.clone()
            } else {
                self.key()
            };
            if self.rng.chance(2, 3) {
                self.ensure_digest(&src);
            }
            a.push(src);
        }
        match self.rng.weighted(&[35, 20, 15, 10, 4, 4, 4, 4, 4]) {
            0 => {}
            1 => {
                a.push(self.pick_str(&["COMPRESSION", "compression"]));
                let c = self.compression();
                a.push(c);
            }
            2 => a.push(self.pick_str(&["OVERRIDE", "override", "Override"])),
            3 => {
                let c = self.compression();
                let mut tail = vec![b("COMPRESSION"), c, b("OVERRIDE")];
                if self.rng.chance(1, 2) {
                    tail.rotate_left(2);
                }
                a.extend(tail);
            }
            4 => a.push(self.pick_str(&["FOO", "", "COMPRESSIONS", "OVERRIDES"])),
            5 => a.push(b("COMPRESSION")),
            6 => {
                a.push(b("COMPRESSION"));
                let c = self.pick_str(BAD_COMPRESSIONS);
                a.push(c);
            }
            7 => {
                a.push(b("COMPRESSION"));
                a.push(b("50"));
                a.push(b("extra"));
            }
            _ => {
                a[2] = self.pick_str(&["0", "-1", "x", "", "4", "1.5", "9223372036854775808"]);
            }
        }
        if self.rng.chance(1, 30) {
            a.truncate(self.rng.range(1, 3) as usize);
        }
        known::before_merge(self, &a);
        self.send_td(&a);
    }

    // -- reads ---------------------------------------------------------------------

    fn read_args(&mut self, name: &str, n: usize, arg: fn(&mut Diff) -> Vec<u8>) {
        let key = self.key();
        if self.rng.chance(3, 4) {
            self.ensure_digest(&key);
        }
        let mut a = vec![self.name(name), key];
        for _ in 0..n {
            let x = arg(self);
            a.push(x);
        }
        self.send_td(&a);
    }

    fn count(&mut self) -> usize {
        match self.rng.weighted(&[5, 60, 35]) {
            0 => 0,
            1 => self.rng.range(1, 4) as usize,
            _ => self.rng.range(4, 12) as usize,
        }
    }

    fn quantile(&mut self) -> Vec<u8> {
        match self.rng.weighted(&[60, 30, 10]) {
            0 => self.pick_str(QUANTILES),
            1 => format!("{}", self.rng.unit()).into_bytes(),
            _ => self.pick_str(BAD_QUANTILES),
        }
    }

    /// A value to look up: one added, ±inf, or a bad word.
    fn probe(&mut self) -> Vec<u8> {
        match self.rng.weighted(&[75, 10, 8, 7]) {
            0 => self.value(),
            1 => self.pick_str(&["inf", "-inf", "+inf"]),
            2 => format!("{}", (self.rng.unit() - 0.5) * 100.0).into_bytes(),
            _ => self.pick_str(&["nan", "x", "", "1e309"]),
        }
    }

    fn rank(&mut self) -> Vec<u8> {
        match self.rng.weighted(&[60, 25, 8, 7]) {
            0 => self.rng.below(20).to_string().into_bytes(),
            1 => self.rng.below(300).to_string().into_bytes(),
            2 => self.pick_str(&["9223372036854775807", "1000000", "0"]),
            _ => self.pick_str(BAD_RANKS),
        }
    }

    pub fn op_quantile(&mut self) {
        let n = self.count();
        self.read_args("TDIGEST.QUANTILE", n, Diff::quantile);
    }

    pub fn op_cdf(&mut self) {
        let n = self.count();
        self.read_args("TDIGEST.CDF", n, Diff::probe);
    }

    pub fn op_rank(&mut self) {
        let n = self.count();
        let name = *self.rng.pick(&["TDIGEST.RANK", "TDIGEST.REVRANK"]);
        self.read_args(name, n, Diff::probe);
    }

    pub fn op_byrank(&mut self) {
        let n = self.count();
        let name = *self.rng.pick(&["TDIGEST.BYRANK", "TDIGEST.BYREVRANK"]);
        self.read_args(name, n, Diff::rank);
    }

    pub fn op_trimmed_mean(&mut self) {
        let n = match self.rng.weighted(&[90, 5, 5]) {
            0 => 2,
            1 => 1,
            _ => 3,
        };
        let cut = |d: &mut Diff| -> Vec<u8> {
            if d.rng.chance(1, 10) {
                d.pick_str(BAD_CUTS)
            } else {
                d.pick_str(CUTS)
            }
        };
        self.read_args("TDIGEST.TRIMMED_MEAN", n, cut);
    }

    /// MIN, MAX, INFO (no compress in either module), with bad arity now
    /// and then.
    pub fn op_min_max_info(&mut self) {
        let name = *self
            .rng
            .pick(&["TDIGEST.MIN", "TDIGEST.MAX", "TDIGEST.INFO"]);
        let key = self.key();
        let mut a = vec![self.name(name), key];
        match self.rng.weighted(&[92, 4, 4]) {
            0 => {}
            1 => a.truncate(1),
            _ => a.push(b("extra")),
        }
        self.send_td(&a);
    }

    // -- arity, keys, other commands ---------------------------------------------

    /// Each command with 0 to 2 arguments.
    pub fn op_arity(&mut self) {
        let name = *self.rng.pick(&[
            "TDIGEST.CREATE",
            "TDIGEST.RESET",
            "TDIGEST.ADD",
            "TDIGEST.MERGE",
            "TDIGEST.MIN",
            "TDIGEST.MAX",
            "TDIGEST.QUANTILE",
            "TDIGEST.CDF",
            "TDIGEST.RANK",
            "TDIGEST.REVRANK",
            "TDIGEST.BYRANK",
            "TDIGEST.BYREVRANK",
            "TDIGEST.TRIMMED_MEAN",
            "TDIGEST.INFO",
        ]);
        let mut a = vec![self.name(name)];
        for _ in 0..self.rng.range(0, 2) {
            let it = if self.rng.chance(1, 2) {
                self.key()
            } else {
                self.pick_str(&["1", "0", "x", "COMPRESSION"])
            };
            a.push(it);
        }
        self.send_td(&a);
    }

    pub fn op_keydel(&mut self) {
        let key = self.key();
        let cmd = self.pick_str(&["DEL", "UNLINK"]);
        self.send(&[cmd, key]);
    }

    pub fn op_generic(&mut self) {
        let key = self.key();
        match self.rng.below(6) {
            0 => self.send(&args!["TYPE", &key]),
            1 => self.send(&args!["EXISTS", &key]),
            2 => self.send(&args!["MEMORY", "USAGE", &key]),
            3 => self.send(&args!["OBJECT", "ENCODING", &key]),
            4 => self.send(&args!["TOUCH", &key]),
            _ => self.dump_then_read(&key),
        };
    }

    /// TTLs as absolute times (PEXPIREAT propagates as sent; EXPIRE would
    /// propagate each server's own clock), read back, removed.
    pub fn op_ttl(&mut self) {
        let key = self.key();
        let a = match self.rng.below(4) {
            0 | 1 => args!["PEXPIREAT", &key, "4102444800000"],
            2 => args!["PEXPIRETIME", &key],
            _ => args!["PERSIST", &key],
        };
        self.send(&a);
    }

    pub fn op_rename(&mut self) {
        let (src, dst) = (self.key(), self.key());
        self.send(&args!["RENAME", &src, &dst]);
    }

    /// DUMP (and the compressing read after it), then RESTORE of each
    /// server's payload on the other (REPLACE, or after DEL), or of a
    /// payload with a broken checksum.
    pub fn op_dump_restore(&mut self) {
        let src = self.key();
        let r = self.dump_then_read(&src);
        // Module values only: a payload is restamped for the other
        // server's RDB version, which only a module value's allows.
        if !self.holds_digest(&src) {
            return;
        }
        let (Resp::Bulk(rbp), Some(fbp)) =
            (decode(&r.rb), known::dump_of(&mut self.fb.control, &src))
        else {
            return;
        };
        let dst = self.key();
        if self.rng.chance(1, 8) {
            let mut broken = rbp.clone();
            let last = broken.len() - 1;
            broken[last] ^= 0x40;
            self.send(&args!["RESTORE", &dst, "0", broken, "REPLACE"]);
            return;
        }
        let mut tail: Args = Vec::new();
        if self.rng.chance(1, 2) {
            self.send(&args!["DEL", &dst]);
        } else {
            tail.push(b("REPLACE"));
        }
        // Crossed: each module loads the other's payload.
        let rb_payload = restamp_dump(&fbp, self.rb_version.rdb_version());
        let fb_payload = restamp_dump(&rbp, self.fb_version.rdb_version());
        let mut rb_args = args!["RESTORE", &dst, "0", rb_payload];
        let mut fb_args = args!["RESTORE", &dst, "0", fb_payload];
        rb_args.extend(tail.iter().cloned());
        fb_args.extend(tail);
        let proto = self.rng.index(2);
        self.send_split(proto, &rb_args, &fb_args, true);
        if known::align_single(self, &dst) {
            known::drain(self);
        }
    }

    /// A command of the kinds a transaction or script carries: no DUMP,
    /// values added two or more at a time, and no compressing read of a
    /// digest of one observation (MIN instead): the checks of the
    /// documented differences need the command alone.
    fn batch_command(&mut self) -> Args {
        let key = self.key();
        match self.rng.below(9) {
            0 => {
                let c = self.compression();
                args!["TDIGEST.CREATE", &key, "COMPRESSION", c]
            }
            1 | 2 => {
                let mut a = args!["TDIGEST.ADD", &key];
                for _ in 0..self.rng.range(2, 6) {
                    let v = self.value();
                    a.push(v);
                }
                a
            }
            3 => args!["TDIGEST.INFO", &key],
            4 => args!["TDIGEST.MAX", &key],
            _ => {
                if observations(&mut self.fb.control, &key) == Some(1) {
                    return args!["TDIGEST.MIN", &key];
                }
                match self.rng.below(4) {
                    0 => {
                        let q = self.quantile();
                        args!["TDIGEST.QUANTILE", &key, q, "0.5"]
                    }
                    1 => {
                        let v = self.probe();
                        args!["TDIGEST.CDF", &key, v]
                    }
                    2 => {
                        let r = self.rank();
                        args!["TDIGEST.BYRANK", &key, r]
                    }
                    _ => args!["TDIGEST.TRIMMED_MEAN", &key, "0.1", "0.9"],
                }
            }
        }
    }

    pub fn op_multi(&mut self) {
        let proto = self.rng.index(2);
        let commands = (0..self.rng.range(1, 4))
            .map(|_| self.batch_command())
            .collect();
        self.transaction(proto, commands);
    }

    /// WATCH around a command on the key: writes that wrote invalidate it
    /// in both modules; reads, refused writes and refused merges never do.
    pub fn op_watch(&mut self) {
        let proto = self.rng.index(2);
        let key = self.key();
        let c = if self.rng.chance(1, 6) {
            // Refused writes: they touch the key in both modules.
            let bad = self.pick_str(&["x", "nan", "inf"]);
            match self.rng.below(3) {
                0 => args!["TDIGEST.ADD", &key, "1", bad],
                1 => args!["TDIGEST.CREATE", &key],
                _ => args!["TDIGEST.CREATE", &key, "COMPRESSION", "0"],
            }
        } else if self.rng.chance(1, 2) {
            // A merge into the watched key: refused (a missing source, a
            // bad number) or made.
            let src = self.key();
            let n = self.pick_str(&["1", "1", "0", "x"]);
            args!["TDIGEST.MERGE", &key, n, src]
        } else {
            let mut c = self.batch_command();
            c[1] = key.clone();
            if c[0] == b"TDIGEST.ADD" || observations(&mut self.fb.control, &key) != Some(1) {
                c
            } else {
                args!["TDIGEST.MIN", &key]
            }
        };
        // 2.8.2's digests are read on the control connection: the WATCH
        // is not touched.
        known::before_merge(self, &c);
        self.watched(proto, proto, &key, &c);
    }

    /// A RESP3 double comes back from Lua as a table: the RESP3 script
    /// returns it as text.
    pub fn op_eval(&mut self) {
        let c = self.batch_command();
        self.eval_through(
            &[
                LUA_PCALL,
                "redis.setresp(3); local r = redis.pcall(unpack(ARGV)); \
                 if type(r) == 'table' and r.map then return 'map' end; \
                 if type(r) == 'table' and r.double then return tostring(r.double) end; \
                 return r",
            ],
            c,
        );
    }

    /// maxmemory exceeded: the deny-oom commands (CREATE, RESET, ADD,
    /// MERGE) are refused, the reads run (FerroBloom's compressing reads
    /// refused where they need a view: `known::Known::ViewRefused`).
    pub fn op_oom(&mut self) {
        let mut cmds: Vec<Args> = (0..self.rng.range(1, 4))
            .map(|_| self.batch_command())
            .collect();
        if self.rng.chance(1, 3) {
            let (d, s) = (self.key(), self.key());
            cmds.push(args!["TDIGEST.MERGE", d, "1", &s]);
            cmds.push(args!["TDIGEST.RESET", s]);
        }
        // Read by `known` on the commands' replies alone (CONFIG SET
        // answers OK either way).
        self.ty.over_maxmemory = true;
        self.over_maxmemory(cmds);
        self.ty.over_maxmemory = false;
        known::owed_reads(self);
    }

    /// A creation 2.8.2 is not sent, to FerroBloom alone.
    pub fn op_fb_only(&mut self) {
        let words = *self.rng.pick(FB_ONLY);
        let a: Args = words.iter().map(b).collect();
        let case = known::fb_only_case(&a).expect("a command 2.8.2 is not sent");
        let proto = self.rng.index(2);
        let (reply, propagated) = self.send_fb_only(proto, &a);
        known::check_fb_only(self, case, &reply, &propagated);
    }

    /// Whether `key` holds a digest on 2.8.2's server.
    fn holds_digest(&mut self, key: &[u8]) -> bool {
        self.is_digest(key)
    }
}

impl Diff {
    /// An AOF rewrite in the middle of a seed, digests with points not
    /// merged yet included: the same commands per key. A fork leaves
    /// FerroBloom's digests owing a compress (docs/tdigest.md, "A save
    /// leaves a compress owed"), which its clients see at once, while
    /// 2.8.2's rewrite compresses only the child's copy: a compressing
    /// read of every digest follows, sent to both.
    pub fn op_aof_rewrite(&mut self) {
        self.compare_aof_rewrite();
        // DIFF_CHECK_STATE looks once every digest was read.
        let check = std::mem::replace(&mut self.ty.check_state, false);
        for key in self.digest_keys() {
            self.send(&args!["TDIGEST.QUANTILE", &key, "0"]);
        }
        self.ty.check_state = check;
        if check {
            known::check_state(self);
        }
    }
}
