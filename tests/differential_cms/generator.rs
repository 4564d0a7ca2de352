//! The random CMS.* command generator: valid and malformed commands, on
//! sketches of a few shapes (so that merges meet equal dimensions), keys of
//! other types and missing keys, alone, in MULTI/EXEC, EVAL, under
//! maxmemory and around WATCH.

use super::{Diff, BAD_DOUBLES, BAD_INTS, EDGE_INTS};
use crate::common::differential::{args, b, parse_int, Args, LUA_PCALL, LUA_RESP3};
use crate::common::{decode, Resp};

/// Largest sketch (cells) a generated command may create: 1 MiB of cells.
pub const MAX_CELLS: u64 = 1 << 18;
/// 2.8.2's limits before it allocates (§3.3 rows 5-6).
const INIT_LIMIT: u64 = 9_223_372_036_854_775_807;
const CELLS_LIMIT: u64 = 4_611_686_018_427_387_903;

/// What INITBYDIM would do with these dimensions once the key is free:
/// Some(cells) when it creates a sketch, None when it refuses them.
/// Sketches larger than `MAX_CELLS` are never asked for: past 2.8.2's
/// checks it allocates, and a failed allocation aborts Redis 7.0 (§3.3 row 7).
pub fn dim_cells(width: &[u8], depth: &[u8]) -> Option<u64> {
    let (w, d) = (parse_int(width)?, parse_int(depth)?);
    if w < 1 || d < 1 {
        return None;
    }
    let (w, d) = (w as u64, d as u64);
    if w > INIT_LIMIT / d || w * d > CELLS_LIMIT {
        return None;
    }
    Some(w * d)
}

/// (error, probability) pairs of INITBYPROB: valid ones with the sketch
/// they make (§3.3, vectors `cms_dims_from_prob`; at most 1000 × 149
/// cells), and refused ones.
const PROB_ERRORS: &[&str] = &[
    "0.5", "0.1", "0.01", "0.3", "0.2", "0.7", "0.99", "0.002", "0.05", "2e-1", "0x1p-7",
];
const PROB_PROBS: &[&str] = &[
    "0.5", "0.25", "0.125", "0.1", "0.01", "0.001", "1e-5", "0.2", "0.9", "0.999999", "1e-30",
    "1e-45", "0.05",
];
/// Refused by 2.8.2's checks before anything is allocated.
const PROB_BAD_ERRORS: &[&str] = &[
    "0", "1", "1.5", "-0.1", "nan", "inf", "-inf", "abc", "", "1e309", "0x10", "1e-300", "0x1p0",
    " 0.1", "0.1 ",
];
const PROB_BAD_PROBS: &[&str] = &[
    "0",
    "1",
    "0.99999999",
    "1e-46",
    "5e-324",
    "nan",
    "inf",
    "-inf",
    "-1",
    "x",
    "0x10",
    "",
];

impl Diff {
    fn fresh_item(&mut self) -> Vec<u8> {
        match self.rng.weighted(&[30, 20, 5, 10, 20, 4]) {
            0 => self.rng.below(300).to_string().into_bytes(),
            1 => {
                let n = self.rng.index(17);
                self.rng.bytes(n)
            }
            2 => Vec::new(),
            3 => {
                let specials: &[&[u8]] = &[
                    b"foo",
                    b"bar",
                    b"baz",
                    b"a",
                    b"b",
                    b"\x00",
                    b"\xff\x80",
                    b"WEIGHTS",
                    b"abcd",
                    b"abcde",
                    b"\r\n",
                ];
                b(self.rng.pick(specials))
            }
            4 => format!("item:{}", self.rng.below(5_000)).into_bytes(),
            _ => {
                let n = self.rng.range(20, 400) as usize;
                self.rng.bytes(n)
            }
        }
    }

    pub fn item(&mut self) -> Vec<u8> {
        if !self.pool.is_empty() && self.rng.chance(2, 3) {
            let i = self.rng.index(self.pool.len());
            return self.pool[i].clone();
        }
        let it = self.fresh_item();
        if self.pool.len() < 1000 {
            self.pool.push(it.clone());
        } else {
            let i = self.rng.index(self.pool.len());
            self.pool[i] = it.clone();
        }
        it
    }

    fn item_count(&mut self) -> usize {
        match self.rng.weighted(&[60, 30, 10]) {
            0 => self.rng.range(1, 4) as usize,
            1 => self.rng.range(4, 20) as usize,
            _ => self.rng.range(20, 100) as usize,
        }
    }

    fn int_tok(&mut self) -> Vec<u8> {
        if self.rng.chance(1, 2) {
            self.pick_str(EDGE_INTS)
        } else {
            self.pick_str(BAD_INTS)
        }
    }

    /// The dimensions the key's group is created with (merges within a
    /// group usually find equal dimensions).
    fn group_dims(key: &[u8]) -> (u64, u64) {
        match key.first() {
            Some(b'a' | b'w' | b'W') => (10, 3),
            Some(b'b') => (5, 2),
            Some(b'c') => (1, 1),
            Some(b'd') => (200, 7),
            _ => (3, 2),
        }
    }

    // -- creation ------------------------------------------------------------

    /// CMS.INITBYDIM: the group's shape, small random ones, malformed and
    /// refused dimensions; now and then the 8.12 form with CELL_SIZE.
    pub fn op_init_dim(&mut self) {
        let key = self.key();
        let (w, d) = match self.rng.weighted(&[60, 15, 15, 10]) {
            0 => {
                let (w, d) = Self::group_dims(&key);
                (w.to_string().into_bytes(), d.to_string().into_bytes())
            }
            1 => (
                self.rng.range(1, 60).to_string().into_bytes(),
                self.rng.range(1, 9).to_string().into_bytes(),
            ),
            2 => {
                let w = if self.rng.chance(1, 2) {
                    self.int_tok()
                } else {
                    self.rng.range(1, 30).to_string().into_bytes()
                };
                let d = if self.rng.chance(1, 2) {
                    self.int_tok()
                } else {
                    self.rng.range(1, 5).to_string().into_bytes()
                };
                (w, d)
            }
            _ => {
                let refused: &[(&str, &str)] = &[
                    ("8589934592", "8589934592"),
                    ("4611686018427387904", "1"),
                    ("2305843009213693952", "2"),
                    ("9223372036854775807", "2"),
                    ("9223372036854775807", "9223372036854775807"),
                    ("3", "9223372036854775807"),
                    ("4294967296", "1073741824"),
                    ("0", "0"),
                    ("-1", "5"),
                ];
                let (w, d) = *self.rng.pick(refused);
                (b(w), b(d))
            }
        };
        if dim_cells(&w, &d).is_some_and(|c| c > MAX_CELLS) {
            return;
        }
        let name = self.name("CMS.INITBYDIM");
        let mut a = vec![name, key, w, d];
        self.vary_initby_arity(&mut a);
        self.send(&a);
    }

    /// CMS.INITBYPROB with the dimensions of the vectors, refused values.
    pub fn op_init_prob(&mut self) {
        let key = self.key();
        let (e, p) = if key.first() == Some(&b'd') && self.rng.chance(2, 3) {
            (b("0.01"), b("0.01"))
        } else {
            let e = if self.rng.chance(4, 5) {
                self.pick_str(PROB_ERRORS)
            } else {
                self.pick_str(PROB_BAD_ERRORS)
            };
            let p = if self.rng.chance(4, 5) {
                self.pick_str(PROB_PROBS)
            } else {
                self.pick_str(PROB_BAD_PROBS)
            };
            (e, p)
        };
        let name = self.name("CMS.INITBYPROB");
        let mut a = vec![name, key, e, p];
        self.vary_initby_arity(&mut a);
        self.send(&a);
    }

    /// Arity errors (2, 3, 5 or 7 arguments) now and then, and the 6
    /// arguments of 8.12's CELL_SIZE (a §3.9 case).
    fn vary_initby_arity(&mut self, a: &mut Args) {
        match self.rng.weighted(&[90, 4, 3, 3]) {
            0 => {}
            1 => a.truncate(self.rng.range(1, 3) as usize),
            2 => {
                let extra = self.rng.range(1, 3);
                for _ in 0..extra {
                    a.push(self.pick_str(&["CELL_SIZE", "4", "x", ""]));
                }
                if a.len() == 6 {
                    a.push(b("4"));
                }
            }
            _ => {
                let word = self.pick_str(&["CELL_SIZE", "cell_size", "CELL_SIZ", "FOO"]);
                let n = self.pick_str(&["1", "2", "4", "8", "3", "0", "-1", "x", "4.5"]);
                a.push(word);
                a.push(n);
            }
        }
    }

    // -- counting -------------------------------------------------------------

    /// A valid increment: small, so that no cell reaches 2^32 − 1 through
    /// increments alone.
    fn increment(&mut self) -> Vec<u8> {
        match self.rng.weighted(&[75, 15, 10]) {
            0 => self.rng.range(0, 20).to_string().into_bytes(),
            1 => self.rng.range(21, 100_000).to_string().into_bytes(),
            _ => b("1"),
        }
    }

    /// CMS.INCRBY: pairs of pool items and valid increments; in one
    /// command in six an increment that does not parse, in one in thirty
    /// a negative one (a §3.9 case); odd arities now and then.
    pub fn op_incrby(&mut self) {
        let key = self.key();
        let n = self.item_count();
        let name = self.name("CMS.INCRBY");
        let mut a = vec![name, key];
        for _ in 0..n {
            let it = self.item();
            a.push(it);
            let inc = self.increment();
            a.push(inc);
        }
        let at = 3 + 2 * self.rng.index(n);
        match self.rng.weighted(&[140, 20, 8, 7]) {
            0 => {}
            1 => a[at] = self.pick_str(BAD_INTS),
            2 => a[at] = self.pick_str(&["00", "-0", "4294967296x", "1e3", "1.0", "0x10", "nan"]),
            _ => a[at] = self.pick_str(&["-1", "-5", "-9223372036854775808"]),
        }
        if self.rng.chance(1, 40) {
            let cut = self.rng.range(2, a.len() as i64 - 1) as usize;
            a.truncate(cut);
        }
        self.send(&a);
    }

    pub fn op_query(&mut self) {
        let key = self.key();
        let n = if self.rng.chance(1, 30) {
            0
        } else {
            self.item_count()
        };
        let name = self.name("CMS.QUERY");
        let mut a = vec![name, key];
        for _ in 0..n {
            let it = self.item();
            a.push(it);
        }
        self.send(&a);
    }

    pub fn op_info(&mut self) {
        let key = self.key();
        let name = self.name("CMS.INFO");
        let mut a = vec![name, key];
        match self.rng.weighted(&[92, 4, 4]) {
            0 => {}
            1 => a.truncate(1),
            _ => a.push(b("extra")),
        }
        self.send(&a);
    }

    // -- merging --------------------------------------------------------------

    fn weight(&mut self) -> Vec<u8> {
        match self.rng.weighted(&[70, 12, 10, 8]) {
            0 => self.rng.range(-2, 4).to_string().into_bytes(),
            1 => self.pick_str(&[
                "429496729",
                "429496730",
                "4000000000",
                "9223372036854775807",
                "-9223372036854775808",
                "-922337203685477500",
                "922337203685477502",
                "100000",
            ]),
            2 => self.pick_str(BAD_INTS),
            _ => self.pick_str(&["nan", "inf", "0x10", "1.5", "x", "", "-"]),
        }
    }

    /// CMS.INITBYDIM of `key` in its group's shape.
    fn ensure_sketch(&mut self, key: &[u8]) {
        let (w, d) = Self::group_dims(key);
        self.send(&args!["CMS.INITBYDIM", key, w.to_string(), d.to_string()]);
    }

    /// A source key: from the destination's group mostly.
    fn source_for(&mut self, dest: &[u8]) -> Vec<u8> {
        if self.rng.chance(1, 4) {
            return self.key();
        }
        let group: Vec<Vec<u8>> = self
            .keys
            .iter()
            .filter(|k| Self::group_dims(k) == Self::group_dims(dest))
            .cloned()
            .collect();
        self.rng.pick(&group).clone()
    }

    /// CMS.MERGE with well-formed and malformed numkeys, sources and
    /// WEIGHTS (§3.6's scanning quirks: the word found among the keys, in
    /// another case, at the wrong place, with too few or many weights).
    pub fn op_merge(&mut self) {
        let dest = self.key();
        // Most merges find their keys: a creation in the group's shape
        // first (usually `key already exists`, itself compared).
        if self.rng.chance(1, 2) {
            self.ensure_sketch(&dest);
        }
        let count = self.rng.range(1, 4) as usize;
        let numkeys = match self.rng.weighted(&[85, 15]) {
            0 => count.to_string().into_bytes(),
            _ => self.pick_str(&["0", "-1", "x", "1.5", "", "9223372036854775807", "5", "00"]),
        };
        let name = self.name("CMS.MERGE");
        let mut a = vec![name, dest.clone(), numkeys];
        for _ in 0..count {
            let src = if self.rng.chance(1, 10) {
                dest.clone()
            } else {
                self.source_for(&dest)
            };
            if self.rng.chance(1, 3) {
                self.ensure_sketch(&src);
            }
            a.push(src);
        }
        match self.rng.weighted(&[45, 35, 20]) {
            0 => {}
            1 => {
                let word = self.pick_str(&["WEIGHTS", "WEIGHTS", "weights", "Weights"]);
                a.push(word);
                for _ in 0..count {
                    let w = self.weight();
                    a.push(w);
                }
            }
            _ => {
                let word = self.pick_str(&["WEIGHTS", "weights", "WEIGHT", "WEIGHTSS"]);
                let at = self.rng.range(3, a.len() as i64) as usize;
                a.insert(at, word);
                let n = self.rng.range(0, count as i64 + 2);
                for _ in 0..n {
                    let w = self.weight();
                    a.push(w);
                }
            }
        }
        if self.rng.chance(1, 40) {
            a.truncate(self.rng.range(1, 3) as usize);
        }
        self.send(&a);
    }

    // -- arity, keys, other commands ---------------------------------------------

    /// Each command with 0 to 3 arguments.
    pub fn op_arity(&mut self) {
        let name = self.pick_str(&[
            "CMS.INITBYDIM",
            "CMS.INITBYPROB",
            "CMS.INCRBY",
            "CMS.QUERY",
            "CMS.MERGE",
            "CMS.INFO",
        ]);
        let name = self.name(&String::from_utf8(name).unwrap());
        let mut a = vec![name];
        for _ in 0..self.rng.range(0, 3) {
            let it = if self.rng.chance(1, 2) {
                self.key()
            } else {
                self.pick_str(&["1", "0", "x", "WEIGHTS"])
            };
            a.push(it);
        }
        self.send(&a);
    }

    pub fn op_keydel(&mut self) {
        let key = self.key();
        let cmd = self.pick_str(&["DEL", "UNLINK"]);
        self.send(&[cmd, key]);
    }

    pub fn op_generic(&mut self) {
        let key = self.key();
        let a = match self.rng.below(7) {
            0 => args!["TYPE", &key],
            1 => args!["EXISTS", &key],
            2 => args!["MEMORY", "USAGE", &key],
            3 => args!["OBJECT", "ENCODING", &key],
            // EXPIRE is left out: it propagates as PEXPIREAT with each
            // server's own clock.
            4 => args!["PERSIST", &key],
            5 => args!["TOUCH", &key],
            _ => args!["DUMP", &key],
        };
        self.send(&a);
    }

    pub fn op_rename(&mut self) {
        let (src, dst) = (self.key(), self.key());
        self.send(&args!["RENAME", &src, &dst]);
    }

    /// DUMP, then RESTORE of each server's payload on the other (REPLACE,
    /// or after DEL), and RESTORE of a payload with a broken checksum.
    pub fn op_dump_restore(&mut self) {
        let src = self.key();
        let r = self.send(&args!["DUMP", &src]);
        let (Resp::Bulk(rbp), Resp::Bulk(fbp)) = (decode(&r.rb), decode(&r.fb)) else {
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
        // FerroBloom's reply was restamped for the oracle's server, which
        // every server takes.
        let mut rb_args = args!["RESTORE", &dst, "0", fbp];
        let mut fb_args = args!["RESTORE", &dst, "0", rbp];
        rb_args.extend(tail.iter().cloned());
        fb_args.extend(tail);
        let proto = self.rng.index(2);
        self.send_split(proto, &rb_args, &fb_args, true);
    }

    /// A command of the kinds a transaction or script carries: no §3.9
    /// case by construction (no CELL_SIZE, no negative increment; an
    /// overflow reached through earlier merges is recognised in the reply).
    fn batch_command(&mut self) -> Args {
        let key = self.key();
        match self.rng.below(6) {
            0 => {
                let (w, d) = Self::group_dims(&key);
                args!["CMS.INITBYDIM", &key, w.to_string(), d.to_string()]
            }
            1 => {
                let mut a = args!["CMS.INCRBY", &key];
                for _ in 0..self.rng.range(1, 4) {
                    let it = self.item();
                    a.push(it);
                    a.push(self.rng.range(0, 50).to_string().into_bytes());
                }
                a
            }
            2 => {
                let it = self.item();
                args!["CMS.QUERY", &key, it]
            }
            3 => args!["CMS.INFO", &key],
            4 => {
                let src = self.source_for(&key);
                args!["CMS.MERGE", &key, "2", &key, src, "WEIGHTS", "1", "1"]
            }
            _ => args!["CMS.INCRBY", &key, "x", "1.5"],
        }
    }

    pub fn op_multi(&mut self) {
        let proto = self.rng.index(2);
        let commands = (0..self.rng.range(1, 4))
            .map(|_| self.batch_command())
            .collect();
        self.transaction(proto, commands);
    }

    /// WATCH around the commands that touch a key in both modules: the
    /// creations and MERGE invalidate WATCH even when they fail after the
    /// key lookup (§2.1); reads never do. CMS.INCRBY is left out: 2.8.2
    /// opens its key read-only and so never invalidates WATCH, which
    /// FerroBloom fixes (§9.2, issue 28).
    pub fn op_watch(&mut self) {
        let proto = self.rng.index(2);
        let key = self.key();
        let c = match self.rng.below(5) {
            0 => args!["CMS.INITBYDIM", &key, "10", "3"],
            1 => args!["CMS.INITBYPROB", &key, "0.5", "x"],
            2 => {
                let src = self.source_for(&key);
                args!["CMS.MERGE", &key, "1", src]
            }
            3 => args!["CMS.QUERY", &key, "a"],
            _ => args!["CMS.INFO", &key],
        };
        self.watched(proto, proto, &key, &c);
    }

    pub fn op_eval(&mut self) {
        let c = self.batch_command();
        self.eval_through(&[LUA_PCALL, LUA_RESP3], c);
    }

    /// maxmemory exceeded: the deny-oom commands (INITBY*, INCRBY, MERGE)
    /// are refused, QUERY and INFO run.
    pub fn op_oom(&mut self) {
        let commands = (0..self.rng.range(1, 4))
            .map(|_| self.batch_command())
            .collect();
        self.over_maxmemory(commands);
    }

    /// Double precision words where INITBYPROB wants its numbers, to
    /// exercise the parser on both sides.
    pub fn op_prob_words(&mut self) {
        let key = self.key();
        let e = self.pick_str(BAD_DOUBLES);
        let p = self.pick_str(BAD_DOUBLES);
        self.send(&args!["CMS.INITBYPROB", key, e, p]);
    }
}
