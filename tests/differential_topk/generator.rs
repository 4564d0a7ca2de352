//! The random TOPK.* command generator: valid and malformed commands on
//! sketches of a few shapes (small widths, so buckets collide; decay 1),
//! items that share prefixes, the empty item, long items and items with
//! NUL bytes, keys of other types and missing keys, alone, in MULTI/EXEC,
//! EVAL, under maxmemory and around WATCH.

use super::known::{self, first_bad_pair};
use super::{Diff, Model};
use crate::common::differential::{args, b, topk_payloads_agree, Args, LUA_PCALL, LUA_RESP3};
use crate::common::{decode, restamp_dump, Resp};
use ferrobloom_core::topk::dump::load_payload;

/// The items with NUL bytes the generator sends (and `known::whole_items`
/// finds again from 2.8.2's cut of them).
pub const NUL_ITEMS: &[&[u8]] = &[
    b"a\x00b",
    b"a\x00c",
    b"\x00",
    b"\x00z",
    b"q\x00",
    b"ab\x00\x00",
    b"\x00\x00\x00x",
    b"foo\x00bar",
];
/// Decays equal to 1, as words.
const ONE: &[&str] = &["1", "1", "1", "1.0", "1e0", "0.1e1"];
const BAD_K: &[&str] = &["0", "-1", "x", "1.5", "", "+3", "03", "nan", "-4294967296"];
const BAD_DIM: &[&str] = &[
    "0",
    "-1",
    "x",
    "4294967296",
    "1.5",
    "",
    "9223372036854775807",
    "nan",
];
const BAD_DECAY: &[&str] = &[
    "0",
    "-0.5",
    "1.0000001",
    "2",
    "nan",
    "inf",
    "-inf",
    "x",
    "",
    "1e309",
    " 1",
    "1 ",
];
const BAD_INCREMENTS: &[&str] = &[
    "x",
    "-1",
    "100001",
    "1.5",
    "",
    "4294967297",
    "-0",
    "+5",
    "1e3",
    "0x10",
    " 1",
    "9223372036854775808",
];
/// Creations that abort 2.8.2 (`known::fb_only_case`), on a key never
/// created.
const FB_ONLY: &[&[&str]] = &[
    &["TOPK.RESERVE", "huge", "4294967296"],
    &["TOPK.RESERVE", "huge", "8589934592", "8", "7", "1"],
    &["TOPK.RESERVE", "huge", "12884901888", "3", "3", "0.5"],
    &["TOPK.RESERVE", "huge", "4294967295"],
    &["TOPK.RESERVE", "huge", "200000000"],
    &["TOPK.RESERVE", "huge", "1", "4294967295", "2", "1"],
    &["TOPK.RESERVE", "huge", "5", "100000000", "100", "1"],
];

/// k, width and depth of a key's group (see `Topk::keys`).
pub fn group_params(key: &[u8]) -> (u32, u32, u32) {
    match key.first() {
        Some(b't') => (3, 4, 2),
        Some(b'w') => (10, 100, 4),
        Some(b'e') => (2, 1, 3),
        _ => (4, 8, 3),
    }
}

impl Diff {
    fn fresh_item(&mut self) -> Vec<u8> {
        match self.rng.weighted(&[30, 20, 15, 4, 6, 10]) {
            0 => self.rng.below(30).to_string().into_bytes(),
            1 => {
                let family: &[&str] = &[
                    "a", "ab", "abc", "abcd", "abcde", "foo", "fo", "foobar", "x", "xy",
                ];
                self.pick_str(family)
            }
            2 => format!("item:{}", self.rng.below(200)).into_bytes(),
            3 => Vec::new(),
            4 => {
                // Long items sharing a long prefix.
                let mut it = vec![b'L'; self.rng.range(50, 600) as usize];
                it.extend(self.rng.below(3).to_string().into_bytes());
                it
            }
            _ => {
                let n = self.rng.range(1, 12) as usize;
                self.rng.bytes(n).into_iter().map(|c| c.max(1)).collect()
            }
        }
    }

    /// An item without NUL bytes, from the pool two times in three.
    pub fn item(&mut self) -> Vec<u8> {
        if !self.pool.is_empty() && self.rng.chance(2, 3) {
            let i = self.rng.index(self.pool.len());
            return self.pool[i].clone();
        }
        let it = self.fresh_item();
        if self.pool.len() < 300 {
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
            _ => self.rng.range(20, 60) as usize,
        }
    }

    fn increment(&mut self) -> Vec<u8> {
        match self.rng.weighted(&[70, 20, 10]) {
            0 => self.rng.range(0, 20).to_string().into_bytes(),
            1 => self.rng.range(20, 1000).to_string().into_bytes(),
            _ => self.pick_str(&["0", "100000", "99999"]),
        }
    }

    fn is_topk(&mut self, key: &[u8]) -> bool {
        self.rb.control.cmd(&[b"TYPE".as_slice(), key]) == super::TYPE_REPLY
    }

    /// The sketches FerroBloom's server holds.
    pub fn topk_keys(&mut self) -> Vec<Vec<u8>> {
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

    /// How many elements fewer than announced 2.8.2 writes for `args`: a
    /// TOPK.INCRBY on a sketch stops after its first bad pair (§4.5).
    pub fn short_by(&mut self, args: &[Vec<u8>]) -> usize {
        let incrby = args[0].eq_ignore_ascii_case(b"TOPK.INCRBY");
        if !incrby || args.len() < 4 || args.len() % 2 != 0 {
            return 0;
        }
        let Some(bad) = first_bad_pair(args) else {
            return 0;
        };
        if !self.is_topk(&args[1]) {
            return 0;
        }
        (args.len() - 2) / 2 - bad - 1
    }

    /// Before an add to a key 2.8.2 may hold as loaded: FerroBloom's
    /// sketch, for `known::loaded` to run the command on.
    fn prepare_model(&mut self, key: &[u8]) {
        if !self.ty.loaded.contains(key) {
            return;
        }
        let Some(payload) = known::dump_of(&mut self.fb.control, key) else {
            return;
        };
        if let Ok(sketch) = load_payload(&payload) {
            self.ty.model = Some(Model {
                key: key.to_vec(),
                sketch,
            });
        }
    }

    /// Sends a generated command, 2.8.2's short INCRBY reply completed; a
    /// sketch made with a decay below 1 is read and deleted at once.
    fn send_topk(&mut self, a: &[Vec<u8>]) {
        assert!(known::fb_only_case(a).is_none(), "generated for 2.8.2");
        let missing = self.short_by(a);
        let proto = self.rng.index(2);
        let r = self.send_short_reply(proto, a, missing);
        let reserve = a[0].eq_ignore_ascii_case(b"TOPK.RESERVE");
        if reserve && r.rb == b"+OK\r\n" {
            self.ty.loaded.remove(&a[1]);
            if !(a.len() == 6 && ONE.contains(&String::from_utf8_lossy(&a[5]).as_ref())) {
                self.send(&args!["TOPK.INFO", &a[1]]);
                self.send(&args!["DEL", &a[1]]);
            }
        }
    }

    // -- creation ------------------------------------------------------------

    /// TOPK.RESERVE: the group's shape or small random ones with decay 1,
    /// the defaults (decay 0.9), malformed values, arity errors.
    pub fn op_reserve(&mut self) {
        let key = self.key();
        let (k, w, d) = group_params(&key);
        let mut a = if self.rng.chance(3, 10) {
            args![
                "TOPK.RESERVE",
                &key,
                self.rng.range(1, 6).to_string(),
                self.rng.range(1, 8).to_string(),
                self.rng.range(1, 4).to_string(),
                self.pick_str(ONE)
            ]
        } else {
            args![
                "TOPK.RESERVE",
                &key,
                k.to_string(),
                w.to_string(),
                d.to_string(),
                self.pick_str(ONE)
            ]
        };
        a[0] = self.name("TOPK.RESERVE");
        match self.rng.weighted(&[55, 10, 7, 7, 7, 6, 4, 4]) {
            0 => {}
            1 => a.truncate(3),
            2 => a[2] = self.pick_str(BAD_K),
            3 => a[3] = self.pick_str(BAD_DIM),
            4 => a[4] = self.pick_str(BAD_DIM),
            5 => a[5] = self.pick_str(BAD_DECAY),
            6 => {
                let n = self.rng.range(1, 5) as usize;
                a.truncate(n);
                if n == 3 {
                    a.push(b("8"));
                }
            }
            _ => a[5] = self.pick_str(&["0.9", "0.5", "0.999"]),
        }
        if self.rng.chance(1, 50) {
            a = args!["TOPK.RESERVE", &key, "3", "4294967295", "4294967295", "0.9"];
        }
        self.send_topk(&a);
    }

    // -- counting -------------------------------------------------------------

    /// Most adds find a sketch: a missing key is reserved first (in its
    /// group's shape, decay 1) three times in four.
    fn ensure_sketch(&mut self, key: &[u8]) {
        let missing = self.rb.control.cmd(&[b"EXISTS".as_slice(), key]) == b":0\r\n";
        if missing && self.rng.chance(3, 4) {
            let (k, w, d) = group_params(key);
            let a = args![
                "TOPK.RESERVE",
                key,
                k.to_string(),
                w.to_string(),
                d.to_string(),
                "1"
            ];
            self.send_topk(&a);
        }
    }

    pub fn op_add(&mut self) {
        let key = self.key();
        self.ensure_sketch(&key);
        let n = if self.rng.chance(1, 40) {
            0
        } else {
            self.item_count()
        };
        let mut a = vec![self.name("TOPK.ADD"), key.clone()];
        for _ in 0..n {
            let it = self.item();
            a.push(it);
        }
        self.prepare_model(&key);
        self.send_topk(&a);
    }

    pub fn op_incrby(&mut self) {
        let key = self.key();
        self.ensure_sketch(&key);
        let n = self.item_count();
        let mut a = vec![self.name("TOPK.INCRBY"), key.clone()];
        for _ in 0..n {
            let it = self.item();
            a.push(it);
            let inc = self.increment();
            a.push(inc);
        }
        if self.rng.chance(1, 40) {
            let cut = self.rng.range(2, a.len() as i64 - 1) as usize;
            a.truncate(cut);
        }
        self.prepare_model(&key);
        self.send_topk(&a);
    }

    /// TOPK.INCRBY with one or two bad increments (a documented
    /// difference), on a key 2.8.2 did not load.
    pub fn op_bad_incrby(&mut self) {
        let key = self.key();
        if self.ty.loaded.contains(&key) {
            return self.op_incrby();
        }
        self.ensure_sketch(&key);
        let n = self.rng.range(1, 6) as usize;
        let mut a = vec![self.name("TOPK.INCRBY"), key];
        for _ in 0..n {
            let it = self.item();
            a.push(it);
            let inc = self.increment();
            a.push(inc);
        }
        for _ in 0..self.rng.range(1, 3) {
            let at = 3 + 2 * self.rng.index(n);
            a[at] = self.pick_str(BAD_INCREMENTS);
        }
        self.send_topk(&a);
    }

    fn read_items(&mut self, name: &str) {
        let key = self.key();
        let n = if self.rng.chance(1, 30) {
            0
        } else {
            self.item_count()
        };
        let mut a = vec![self.name(name), key];
        for _ in 0..n {
            let it = self.item();
            a.push(it);
        }
        self.send_topk(&a);
    }

    pub fn op_query(&mut self) {
        self.read_items("TOPK.QUERY");
    }

    pub fn op_count(&mut self) {
        self.read_items("TOPK.COUNT");
    }

    /// TOPK.LIST with WITHCOUNT, its prefixes (accepted) and other words.
    pub fn op_list(&mut self) {
        let key = self.key();
        let mut a = vec![self.name("TOPK.LIST"), key];
        match self.rng.weighted(&[40, 30, 25, 5]) {
            0 => {}
            1 => a.push(b("WITHCOUNT")),
            2 => a.push(self.pick_str(&[
                "withcount",
                "w",
                "With",
                "",
                "WITHCOUN",
                "WITHCOUNTS",
                "foo",
                "COUNT",
                "WITHCOUNT ",
            ])),
            _ => {
                a.push(b("WITHCOUNT"));
                a.push(b("x"));
            }
        }
        self.send_topk(&a);
    }

    pub fn op_info(&mut self) {
        let key = self.key();
        let mut a = vec![self.name("TOPK.INFO"), key];
        match self.rng.weighted(&[92, 4, 4]) {
            0 => {}
            1 => a.truncate(1),
            _ => a.push(b("extra")),
        }
        self.send_topk(&a);
    }

    /// Items with NUL bytes: added, counted, queried, listed (a documented
    /// difference in replies and in DUMP).
    pub fn op_nul(&mut self) {
        let key = self.key();
        self.ensure_sketch(&key);
        let nul = |d: &mut Diff| b(d.rng.pick(NUL_ITEMS));
        let a = match self.rng.below(5) {
            0 | 1 => {
                let mut a = args!["TOPK.ADD", &key];
                for _ in 0..self.rng.range(1, 6) {
                    let it = if self.rng.chance(1, 2) {
                        nul(self)
                    } else {
                        self.item()
                    };
                    a.push(it);
                }
                a
            }
            2 => {
                let it = nul(self);
                let inc = self.increment();
                args!["TOPK.INCRBY", &key, it, inc]
            }
            3 => {
                let name = self.pick_str(&["TOPK.QUERY", "TOPK.COUNT"]);
                let (x, y) = (nul(self), nul(self));
                vec![name, key.clone(), x, y]
            }
            _ => args!["TOPK.LIST", &key, "WITHCOUNT"],
        };
        if a[0] == b"TOPK.ADD" || a[0] == b"TOPK.INCRBY" {
            self.prepare_model(&key);
        }
        self.send_topk(&a);
    }

    // -- arity, keys, other commands ---------------------------------------------

    /// Each command with 0 to 3 arguments.
    pub fn op_arity(&mut self) {
        let name = self.pick_str(&[
            "TOPK.RESERVE",
            "TOPK.ADD",
            "TOPK.INCRBY",
            "TOPK.QUERY",
            "TOPK.COUNT",
            "TOPK.LIST",
            "TOPK.INFO",
        ]);
        let name = self.name(&String::from_utf8(name).unwrap());
        let mut a = vec![name];
        for _ in 0..self.rng.range(0, 3) {
            let it = if self.rng.chance(1, 2) {
                self.key()
            } else {
                self.pick_str(&["1", "0", "x", "WITHCOUNT"])
            };
            a.push(it);
        }
        let add =
            a[0].eq_ignore_ascii_case(b"TOPK.ADD") || a[0].eq_ignore_ascii_case(b"TOPK.INCRBY");
        if add && a.len() > 1 {
            let key = a[1].clone();
            self.prepare_model(&key);
        }
        self.send_topk(&a);
    }

    /// DEL or UNLINK, of a sketch 2.8.2 loaded two times in three (so
    /// that a new one is made, whose adds 2.8.2 answers as FerroBloom).
    pub fn op_keydel(&mut self) {
        let loaded: Vec<Vec<u8>> = self.ty.loaded.iter().cloned().collect();
        let key = if !loaded.is_empty() && self.rng.chance(2, 3) {
            self.rng.pick(&loaded).clone()
        } else {
            self.key()
        };
        let cmd = self.pick_str(&["DEL", "UNLINK"]);
        self.send(&[cmd, key.clone()]);
        self.ty.loaded.remove(&key);
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

    /// RENAME: the destination takes the source's loaded state.
    pub fn op_rename(&mut self) {
        let (src, dst) = (self.key(), self.key());
        let r = self.send(&args!["RENAME", &src, &dst]);
        if r.rb == b"+OK\r\n" && src != dst {
            if self.ty.loaded.remove(&src) {
                self.ty.loaded.insert(dst);
            } else {
                self.ty.loaded.remove(&dst);
            }
        }
    }

    /// DUMP, then RESTORE of each server's payload on the other (REPLACE,
    /// or after DEL), and RESTORE of a payload with a broken checksum. A
    /// sketch holding an item with a NUL goes to both as FerroBloom saved
    /// it (2.8.2's payload cuts the item, and both would then hold
    /// different items; 2.8.2 loads FerroBloom's whole).
    pub fn op_dump_restore(&mut self) {
        let src = self.key();
        let r = self.send(&args!["DUMP", &src]);
        // The pair holds FerroBloom's reply as 2.8.2 gives it (a sketch's
        // payload with 2.8.2's pointers): FerroBloom's own is read again.
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
        let topk = topk_payloads_agree(&rbp, &fbp);
        let rb_payload = restamp_dump(&fbp, self.rb_version.rdb_version());
        let fb_payload = match topk {
            Ok(false) => restamp_dump(&fbp, self.fb_version.rdb_version()),
            _ => restamp_dump(&rbp, self.fb_version.rdb_version()),
        };
        let mut rb_args = args!["RESTORE", &dst, "0", rb_payload];
        let mut fb_args = args!["RESTORE", &dst, "0", fb_payload];
        rb_args.extend(tail.iter().cloned());
        fb_args.extend(tail);
        let proto = self.rng.index(2);
        let r = self.send_split(proto, &rb_args, &fb_args, true);
        if r.rb == b"+OK\r\n" {
            if topk.is_ok() {
                self.ty.loaded.insert(dst);
            } else {
                self.ty.loaded.remove(&dst);
            }
        }
    }

    /// After 2.8.2 loaded `key` from its own RDB: where it cut an item at
    /// a NUL, it is given FerroBloom's payload, which it loads whole.
    pub fn restore_whole_items_on_2_8_2(&mut self, key: &[u8]) {
        let rb = known::dump_of(&mut self.rb.control, key);
        let fb = known::dump_of(&mut self.fb.control, key);
        let (Some(rbp), Some(fbp)) = (rb, fb) else {
            return;
        };
        match topk_payloads_agree(&rbp, &fbp) {
            Ok(true) => {}
            Ok(false) => {
                let p = restamp_dump(&fbp, self.rb_version.rdb_version());
                let reply = self
                    .rb
                    .control
                    .cmd(&args!["RESTORE", key, "0", p, "REPLACE"]);
                assert_eq!(reply, b"+OK\r\n", "RESTORE on 2.8.2");
            }
            Err(why) => {
                let line = self.history.back().cloned().unwrap_or_default();
                self.mismatch(&format!("{line}   -- after DEBUG RELOAD: {why}"), "", "");
            }
        }
    }

    /// A command of the kinds a transaction or script carries: decay 1,
    /// no bad increment, no NUL item, no add to a loaded sketch (a read
    /// instead).
    fn batch_command(&mut self) -> Args {
        let key = self.key();
        let loaded = self.ty.loaded.contains(&key);
        match self.rng.below(7) {
            0 => {
                let (k, w, d) = group_params(&key);
                args![
                    "TOPK.RESERVE",
                    &key,
                    k.to_string(),
                    w.to_string(),
                    d.to_string(),
                    "1"
                ]
            }
            1 if !loaded => {
                let mut a = args!["TOPK.ADD", &key];
                for _ in 0..self.rng.range(1, 5) {
                    let it = self.item();
                    a.push(it);
                }
                a
            }
            2 if !loaded => {
                let mut a = args!["TOPK.INCRBY", &key];
                for _ in 0..self.rng.range(1, 4) {
                    let it = self.item();
                    a.push(it);
                    let inc = self.increment();
                    a.push(inc);
                }
                a
            }
            3 => {
                let it = self.item();
                args!["TOPK.QUERY", &key, it]
            }
            5 => args!["TOPK.INFO", &key],
            6 => {
                let it = self.item();
                args!["TOPK.COUNT", &key, it]
            }
            _ => args!["TOPK.LIST", &key, "WITHCOUNT"],
        }
    }

    pub fn op_multi(&mut self) {
        let proto = self.rng.index(2);
        let commands = (0..self.rng.range(1, 4))
            .map(|_| self.batch_command())
            .collect();
        self.transaction(proto, commands);
    }

    /// WATCH around a command on the key: writes invalidate it in both
    /// modules, reads never do.
    pub fn op_watch(&mut self) {
        let proto = self.rng.index(2);
        let key = self.key();
        let c = self.batch_command_on(&key);
        self.watched(proto, proto, &key, &c);
    }

    fn batch_command_on(&mut self, key: &[u8]) -> Args {
        loop {
            let mut c = self.batch_command();
            if c.len() > 1 {
                c[1] = key.to_vec();
                if !(self.ty.loaded.contains(key)
                    && (c[0] == b"TOPK.ADD" || c[0] == b"TOPK.INCRBY"))
                {
                    return c;
                }
            }
        }
    }

    pub fn op_eval(&mut self) {
        let c = self.batch_command();
        self.eval_through(&[LUA_PCALL, LUA_RESP3], c);
    }

    /// maxmemory exceeded: the deny-oom commands (RESERVE, ADD, INCRBY)
    /// are refused, the reads run.
    pub fn op_oom(&mut self) {
        let commands = (0..self.rng.range(1, 4))
            .map(|_| self.batch_command())
            .collect();
        self.over_maxmemory(commands);
    }

    /// A creation that aborts 2.8.2, to FerroBloom alone.
    pub fn op_fb_only(&mut self) {
        let words = *self.rng.pick(FB_ONLY);
        let a: Args = words.iter().map(b).collect();
        let case = known::fb_only_case(&a).expect("a command 2.8.2 cannot take");
        let proto = self.rng.index(2);
        let (reply, propagated) = self.send_fb_only(proto, &a);
        known::check_fb_only(self, case, &reply, &propagated);
    }
}
