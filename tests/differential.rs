//! Differential tests: FerroBloom against RedisBloom 2.8.2, reply byte for
//! reply byte, on the same `redis-server` binary.
//!
//! * `random_command_sequences` starts one server with each module and sends
//!   both the same seeded random command sequences, over a RESP2 and a RESP3
//!   connection chosen at random per command, requiring identical raw reply
//!   bytes for every command, and identical commands propagated to replicas
//!   (each server's replication stream is read through SYNC). Every few
//!   hundred commands, and at the end of each seed, every key is audited on
//!   both servers: sorted KEYS, TYPE, BF.DEBUG, BF.INFO, BF.CARD, MEMORY
//!   USAGE, DUMP bytes and the whole SCANDUMP stream; at the end of each seed
//!   an AOF rewrite (no RDB preamble) must produce the same commands per key.
//!   One deliberate difference is accepted there: an add that creates its
//!   filter from the module settings (BF.ADD, BF.MADD, BF.INSERT without
//!   CAPACITY/ERROR) is propagated by FerroBloom as `BF.INSERT key CAPACITY c
//!   ERROR e EXPANSION x [NONSCALING] ITEMS …` with the same items, so that
//!   replicas with other settings create the same filter; the test checks
//!   that FerroBloom's filter has exactly those parameters.
//! * `random_command_sequences_with_module_args`: the same with the module
//!   loaded with `error_rate 0.25 INITIAL_SIZE 7`.
//! * `large_filter`: a 25 MB filter, beyond the 16 MiB SCANDUMP chunk cap.
//! * `recorded_replies` replays tests/data/replies.json (the `replies`
//!   vectors of the compatibility specification, recorded from 2.8.2) against
//!   both modules and requires the recorded RESP2 and RESP3 bytes.
//! * `command_metadata` compares COMMAND INFO, COMMAND DOCS and COMMAND
//!   GETKEYS of the 11 commands; in COMMAND INFO the ACL categories and the
//!   key spec flags are FerroBloom's own (`RO access` for the read
//!   commands, where 2.8.2 declares `RW access update`).
//!
//! Seeds: `FIXED_SEEDS` plus one derived from the clock, all printed at the
//! start; a failure names its seed, the command's index in that seed and the
//! commands before it (arguments quoted as redis-cli's prompt reads them).
//! Environment: `DIFF_SEED=<n>` runs that seed alone (reproduces a failure),
//! `DIFF_COMMANDS=<n>` sets the commands per seed (default
//! `COMMANDS_PER_SEED`), `DIFF_KEEP_GOING=1` reports every mismatch at the
//! end instead of stopping at the first, `DIFF_STATS=1` prints how often
//! each command got each kind of reply.
//!
//! Exclusions. The generator never produces the following: areas where the
//! specification (§9.2, [FREE]) lets FerroBloom differ from 2.8.2, or where
//! 2.8.2 itself crashes or behaves undefinedly.
//! * Filters with an enormous capacity: a command that could create a filter
//!   never carries a capacity above `MAX_CREATE_CAPACITY` (2.8.2 turns
//!   capacity × bits-per-entry ≥ 2^64 into an 8-byte filter and aborts on
//!   huge allocations). Larger values are only sent where an argument error
//!   makes the command fail before anything is created.
//! * EXPANSION values ≡ 0 (mod 2^32) (4294967296, 8589934592, …: FerroBloom
//!   rejects them before looking at the key), and, on a filter that can
//!   scale, expansions above `MAX_SCALING_GROWTH` after the mod-2^32 wrap
//!   (entries × growth overflow, multi-gigabyte links). Huge expansions are
//!   sent on NONSCALING filters (BF.INSERT … NONSCALING), where they are only
//!   stored, and on commands that fail anyway.
//! * Error rates below 1e-12 (no denormals, so the per-link error halving
//!   never underflows; chains are deleted once they pass `MAX_LINKS` links).
//! * BF.LOADCHUNK headers that 2.8.2 accepts but FerroBloom rejects: NaN
//!   error, hashes 0 with bpe ≤ 0, n2 ≥ 64, entries 0, huge
//!   `bytes`, bpe above 200 (FerroBloom caps hashes at 2048; no 2.8.2 filter
//!   can have more than 1,075); more links than scaling can make (1,075;
//!   the generator's chains stay far below); a link whose array is larger
//!   than the 64-bit words its modulus addresses plus 4 KiB (a small n2 under
//!   bits = bytes × 8, as mutation 12 makes, or an array grown under a
//!   fixed n2: FerroBloom refuses such arrays as bad data, no RedisBloom
//!   link has them); 20-byte headers with nfilters 0 *and* chain
//!   size 0 (2.8.2 accepts that empty chain, then crashes on the first add);
//!   and the ENTS_IS_BITS option bit (2) on a filter that can scale (2.8.2
//!   would size new links as 2^entries bits).
//! * BF.LOADCHUNK headers that FerroBloom accepts but 2.8.2 rejects: links
//!   whose stored bit count is not bytes × 8 but whose modulus fits the
//!   array (bits 0 with the modulus in n2, the unrounded entries × bpe of old
//!   RDB files, …): FerroBloom's header check is its RDB loader's, so that
//!   every filter it holds survives SCANDUMP/LOADCHUNK and AOF rewrite
//!   (§9.2).
//!   Mutated headers with any of these fields are clamped or made
//!   non-scaling before they are sent.
//! * Commands on a filter whose LOADCHUNK sequence is incomplete, after the
//!   operation that loaded it: FerroBloom merges later chunks into the bits
//!   that adds set meanwhile, where 2.8.2 overwrites them, and saves the
//!   loading state with the value (DUMP, RDB, AOF rewrite), so such a filter
//!   is deleted on both servers after that operation (`drop_loading_keys`).
//! * RESTORE of payloads with a valid checksum but corrupted content (2.8.2
//!   crashes); payloads with a broken checksum (refused by Redis itself) are
//!   sent.
//! * COPY (2.8.2 refuses it, FerroBloom implements it); in
//!   `recorded_replies` the COPY vector is checked against 2.8.2 only and
//!   FerroBloom must perform the copy instead.
//! * The word POLICY (a FerroBloom-only option), in any position.
//! * COMMAND COUNT / COMMAND LIST / MODULE LIST / INFO modules (2.8.2 also
//!   registers CF, CMS, TOPK and TDIGEST commands; paths and options differ),
//!   DEBUG DIGEST(-VALUE) and keyspace notifications ([FREE]).

mod common;

use common::differential::{
    args, b, compare_command_metadata, env_u64, eq_ic, parse_int, run_random, seeds, show_cmd,
    show_reply, show_stream, Args, Chunk, DiffType, Metadata, Op, Runner, LUA_PCALL, LUA_RESP3,
};
use common::{decode, ModuleKind, Resp, Server, ServerOpts};
use ferrobloom_core::bloom::sizing::{bits_per_entry, hash_count};
use std::collections::HashMap;

/// Seeds run on every `cargo test`, before the clock-derived one.
const FIXED_SEEDS: &[u64] = &[1, 2, 3, 20802, 0x0B10_0F11, 0xDEAD_BEEF, 7_777_777];
/// Commands (each sent to both servers and compared) per seed.
const COMMANDS_PER_SEED: usize = 8_000;
/// Commands between two audits of the whole key space.
const AUDIT_EVERY: usize = 700;
/// Largest capacity of a filter the generator lets a command create.
const MAX_CREATE_CAPACITY: i64 = 200_000;
/// Largest growth (after the mod-2^32 wrap) of a filter that can scale.
const MAX_SCALING_GROWTH: u64 = 16;
/// Chains with more links, or a larger BF.INFO Size, are deleted.
const MAX_LINKS: i64 = 100;
const MAX_SIZE: i64 = 1 << 20;
/// Items added to a key between two size checks of it.
const CHECK_AFTER_ITEMS: usize = 200;

const ARITY_NAMES: &[&str] = &[
    "BF.RESERVE",
    "BF.ADD",
    "BF.MADD",
    "BF.INSERT",
    "BF.EXISTS",
    "BF.MEXISTS",
    "BF.INFO",
    "BF.CARD",
    "BF.DEBUG",
    "BF.SCANDUMP",
    "BF.LOADCHUNK",
];

/// Integers rejected by Redis' string-to-integer parser.
const BAD_INTS: &[&str] = &[
    "+5",
    "05",
    "-0",
    " 5",
    "5 ",
    "1.5",
    "1e3",
    "0x10",
    "9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "",
    "abc",
    "inf",
    "nan",
    "5\0",
    "00",
    "--5",
    "1_000",
    "\u{663}",
    "5\r\n",
];
/// Integers that parse but sit at the edges of the checks.
const EDGE_INTS: &[&str] = &[
    "0",
    "-1",
    "-5",
    "9223372036854775807",
    "-9223372036854775808",
    "4294967295",
    "4294967297",
    "4294967298",
    "4294967299",
    "10000000",
];
/// Error rates in (0, 1) (hex floats, `.5`, `1.` and friends included).
const GOOD_ERRORS: &[&str] = &[
    "0.01",
    "0.001",
    "0.1",
    "0.05",
    "0.5",
    "0.25",
    "0.125",
    "0.0078125",
    "1e-5",
    "0.00001",
    "1E-2",
    ".5",
    "+0.01",
    "5e-1",
    "0x1p-7",
    "0X1P-7",
    "0.9",
    "0.999",
    "1e-3",
    "2.5e-4",
    "0.3333333333333333",
    "9.9e-1",
    "1e-05",
    "0.0001",
];
/// Doubles that parse but are outside (0, 1).
const RANGE_ERRORS: &[&str] = &[
    "0",
    "1",
    "-0.5",
    "1.5",
    "inf",
    "-inf",
    "Infinity",
    "-Infinity",
    "2",
    "-0",
    "0.0",
    "1e0",
    "1.",
    "0x1p0",
    "1.0000000000000002",
];
/// Strings rejected by Redis' string-to-double parser.
const BAD_ERRORS: &[&str] = &[
    "nan", "-nan", "NaN", " 0.01", "0.01 ", "0.01f", "0,01", "", "1e500", "1e-400", "abc", "0x",
    "1e", "--1", "0.01\0", "\t0.1", "0.01\r\n",
];
const EXP_WORDS: &[&str] = &["EXPANSION", "expansion", "Expansion", "eXpAnSiOn"];
const NONSCALING_WORDS: &[&str] = &["NONSCALING", "nonscaling", "NonScaling", "nOnScAlInG"];
const RESERVE_JUNK: &[&str] = &[
    "EXPANSIONS",
    "EXPANSIO",
    "NONSCALIN",
    "NON-SCALING",
    "NONSCALING ",
    "foo",
    "ITEMS",
    "CAPACITY",
    "ERROR",
    "0.01",
    "100",
    "",
    "a",
];
const INSERT_CAP: &[&str] = &["CAPACITY", "capacity", "C", "c", "Cap", "cXYZ"];
const INSERT_ERR: &[&str] = &["ERROR", "error", "ER", "er", "Err", "eRx", "ERRORS"];
const INSERT_EXP: &[&str] = &["EXPANSION", "expansion", "E", "e", "EX", "ex", "Exp"];
const INSERT_NOCREATE: &[&str] = &["NOCREATE", "nocreate", "NOC", "noc", "nOcReAtE", "NOCX"];
const INSERT_NONSCALING: &[&str] = &[
    "NONSCALING",
    "nonscaling",
    "N",
    "n",
    "NX",
    "no",
    "NOSCALING",
    "nonsense",
];
const INSERT_ITEMS: &[&str] = &["ITEMS", "items", "Items", "I", "i", "iXYZ", "itemz"];
const INSERT_JUNK: &[&str] = &["foo", "", "x", "ZZ", "1", "-", "_", "\u{e9}", "CAPACITY"];
const INFO_FIELDS: &[&str] = &["CAPACITY", "SIZE", "FILTERS", "ITEMS", "EXPANSION"];
const INFO_BAD_FIELDS: &[&str] = &[
    "foo",
    "Capacity ",
    "capacit",
    "",
    "CAPACITYX",
    "items\0",
    "size ",
    "FILTER",
    "expansion rate",
    "Number of filters",
];
/// Key names with a meaning for BF.RESERVE's whole-argv option scan.
const OPTION_KEYS: &[&str] = &["nonscaling", "NonScaling", "expansion", "EXPANSION"];

// ---------------------------------------------------------------------------
// Models of the 2.8.2 argument parsers, used only to keep generated commands
// out of the excluded areas (never to predict replies).

/// Approximation of Redis' strtod-based parser for the tokens generated
/// here. When unsure it answers "valid" (the conservative side).
fn parse_double(s: &[u8]) -> Option<f64> {
    match s {
        b"0x1p-7" | b"0X1P-7" => return Some(0.0078125),
        b"0x1p0" => return Some(1.0),
        b"0.01\0" => return Some(0.01),
        _ => {}
    }
    let t = std::str::from_utf8(s).ok()?;
    if t.is_empty() || t.starts_with(char::is_whitespace) || t.ends_with(char::is_whitespace) {
        return None;
    }
    let v: f64 = t.parse().ok()?;
    if v.is_nan() {
        return None;
    }
    if v.is_infinite() && !t.to_ascii_lowercase().contains("inf") {
        return None;
    }
    if v == 0.0 && t.bytes().any(|c| (b'1'..=b'9').contains(&c)) {
        return None;
    }
    Some(v)
}

/// What a creating command would create: (capacity, growth mod 2^32, nonscaling).
type Creation = (i64, u64, bool);

/// BF.RESERVE argument checks (§2.1); Some when all of them pass.
fn reserve_creation(a: &[Vec<u8>]) -> Option<Creation> {
    if !(4..=7).contains(&a.len()) {
        return None;
    }
    let err = parse_double(&a[2])?;
    if !(err > 0.0 && err < 1.0) {
        return None;
    }
    let cap = parse_int(&a[3])?;
    if cap <= 0 {
        return None;
    }
    let nonscaling = a.iter().any(|x| eq_ic(x, "NONSCALING"));
    let mut growth = 2;
    if let Some(pos) = a.iter().position(|x| eq_ic(x, "EXPANSION")) {
        if pos + 1 == a.len() || nonscaling {
            return None;
        }
        let exp = parse_int(&a[pos + 1])?;
        if exp < 1 {
            return None;
        }
        growth = exp as u64 & 0xffff_ffff;
    }
    Some((cap, growth, nonscaling))
}

/// BF.INSERT option loop and checks (§2.3); Some when it may create a filter.
fn insert_creation(a: &[Vec<u8>]) -> Option<Creation> {
    if a.len() < 4 {
        return None;
    }
    let (mut cap, mut err, mut exp) = (100i64, 0.01f64, 2i64);
    let (mut nocreate, mut nonscaling, mut items) = (false, false, None);
    let lower = |t: &[u8], i: usize| t.get(i).map(u8::to_ascii_lowercase);
    let mut i = 2;
    while i < a.len() {
        let t = &a[i];
        match lower(t, 0) {
            Some(b'i') => {
                items = Some(i + 1);
                break;
            }
            Some(b'c') => {
                cap = parse_int(a.get(i + 1)?)?;
                i += 2;
            }
            Some(b'e') => {
                let v = a.get(i + 1)?;
                if lower(t, 1) == Some(b'r') {
                    err = parse_double(v)?;
                } else {
                    exp = parse_int(v)?;
                }
                i += 2;
            }
            Some(b'n') => {
                if lower(t, 2) == Some(b'c') {
                    nocreate = true;
                } else {
                    nonscaling = true;
                }
                i += 1;
            }
            _ => return None,
        }
    }
    let items = items?;
    if items >= a.len() || err <= 0.0 || err >= 1.0 || cap < 1 || exp < 1 || nocreate {
        return None;
    }
    Some((cap, exp as u64 & 0xffff_ffff, nonscaling))
}

fn creation_is_safe(c: Option<Creation>) -> bool {
    match c {
        None => true,
        Some((cap, growth, nonscaling)) => {
            cap <= MAX_CREATE_CAPACITY
                && growth != 0
                && (nonscaling || growth <= MAX_SCALING_GROWTH)
        }
    }
}

// ---------------------------------------------------------------------------
// SCANDUMP header (§5.2).

#[derive(Clone, Debug)]
struct LinkHeader {
    bytes: u64,
    bits: u64,
    size: u64,
    error: f64,
    bpe: f64,
    hashes: u32,
    entries: u64,
    n2: u8,
}

#[derive(Clone, Debug)]
struct Header {
    size: u64,
    nfilters: u32,
    options: u32,
    growth: u32,
    links: Vec<LinkHeader>,
}

impl Header {
    fn parse(h: &[u8]) -> Option<Header> {
        let u64_at = |o: usize| u64::from_le_bytes(h[o..o + 8].try_into().unwrap());
        let u32_at = |o: usize| u32::from_le_bytes(h[o..o + 4].try_into().unwrap());
        if h.len() < 20 {
            return None;
        }
        let nfilters = u32_at(8);
        if nfilters == 0 || h.len() != 20 + 53 * nfilters as usize {
            return None;
        }
        let links = (0..nfilters as usize)
            .map(|i| {
                let o = 20 + 53 * i;
                LinkHeader {
                    bytes: u64_at(o),
                    bits: u64_at(o + 8),
                    size: u64_at(o + 16),
                    error: f64::from_bits(u64_at(o + 24)),
                    bpe: f64::from_bits(u64_at(o + 32)),
                    hashes: u32_at(o + 40),
                    entries: u64_at(o + 44),
                    n2: h[o + 52],
                }
            })
            .collect();
        Some(Header {
            size: u64_at(0),
            nfilters,
            options: u32_at(12),
            growth: u32_at(16),
            links,
        })
    }

    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(20 + 53 * self.links.len());
        out.extend_from_slice(&self.size.to_le_bytes());
        out.extend_from_slice(&self.nfilters.to_le_bytes());
        out.extend_from_slice(&self.options.to_le_bytes());
        out.extend_from_slice(&self.growth.to_le_bytes());
        for l in &self.links {
            out.extend_from_slice(&l.bytes.to_le_bytes());
            out.extend_from_slice(&l.bits.to_le_bytes());
            out.extend_from_slice(&l.size.to_le_bytes());
            out.extend_from_slice(&l.error.to_bits().to_le_bytes());
            out.extend_from_slice(&l.bpe.to_bits().to_le_bytes());
            out.extend_from_slice(&l.hashes.to_le_bytes());
            out.extend_from_slice(&l.entries.to_le_bytes());
            out.push(l.n2);
        }
        out
    }

    /// The header of an empty exact-mode filter (§3.1).
    fn fresh(capacity: u64, error: f64, nonscaling: bool) -> Header {
        let ratio = if nonscaling { error } else { error * 0.5 };
        let bpe = bits_per_entry(ratio);
        let raw = ((capacity as f64 * bpe) as u64).max(1);
        let bytes = raw.div_ceil(64) * 8;
        Header {
            size: 0,
            nfilters: 1,
            options: if nonscaling { 13 } else { 5 },
            growth: 2,
            links: vec![LinkHeader {
                bytes,
                bits: bytes * 8,
                size: 0,
                error: ratio,
                bpe,
                hashes: hash_count(bpe),
                entries: capacity,
                n2: 0,
            }],
        }
    }
}

// ---------------------------------------------------------------------------
// Output helpers.

fn bulk(reply: &[u8]) -> Option<Vec<u8>> {
    match decode(reply) {
        Resp::Bulk(b) => Some(b),
        _ => None,
    }
}

/// Link byte sizes from a BF.DEBUG reply.
fn debug_link_bytes(reply: &[u8]) -> Option<Vec<u64>> {
    let Resp::Array(lines) = decode(reply) else {
        return None;
    };
    lines
        .iter()
        .skip(1)
        .map(|l| {
            let s = l.as_str()?;
            s.strip_prefix("bytes:")?.split(' ').next()?.parse().ok()
        })
        .collect()
}

/// (Number of filters, Size) from a RESP2 or RESP3 BF.INFO reply.
fn info_filters_size(reply: &[u8]) -> Option<(i64, i64)> {
    let pairs: Vec<(Resp, Resp)> = match decode(reply) {
        Resp::Map(m) => m,
        Resp::Array(a) => a
            .chunks(2)
            .filter(|c| c.len() == 2)
            .map(|c| (c[0].clone(), c[1].clone()))
            .collect(),
        _ => return None,
    };
    let get = |name: &str| {
        pairs.iter().find_map(|(k, v)| match (k.as_str(), v) {
            (Some(k), Resp::Int(n)) if k == name => Some(*n),
            _ => None,
        })
    };
    Some((get("Number of filters")?, get("Size")?))
}

// ---------------------------------------------------------------------------
// The two servers.

impl Diff {
    fn fresh_item(&mut self) -> Vec<u8> {
        match self.rng.weighted(&[25, 20, 12, 5, 5, 5, 4, 1]) {
            0 => self.rng.below(400).to_string().into_bytes(),
            1 => {
                let n = self.rng.index(17);
                self.rng.bytes(n)
            }
            2 => {
                let n = *self.rng.pick(&[4usize, 5, 7, 8, 9, 15, 16, 17]);
                self.rng.bytes(n)
            }
            3 => Vec::new(),
            4 => {
                let n = self.rng.range(40, 300) as usize;
                self.rng.bytes(n)
            }
            5 => {
                let specials: &[&[u8]] = &[
                    b"\x00",
                    b"\xff",
                    b"\xff\x80",
                    b"foo",
                    b"hello",
                    b"item",
                    b"abcdefghi",
                    b"\x00\x00\x00\x00\x00\x00\x00\x00",
                    b"\r\n",
                ];
                b(self.rng.pick(specials))
            }
            6 => format!("item:{}", self.rng.below(100_000)).into_bytes(),
            _ => {
                let n = self.rng.range(1000, 20_000) as usize;
                self.rng.bytes(n)
            }
        }
    }

    fn item(&mut self) -> Vec<u8> {
        if !self.pool.is_empty() && self.rng.chance(2, 5) {
            let i = self.rng.index(self.pool.len());
            return self.pool[i].clone();
        }
        self.fresh_item()
    }

    fn remember(&mut self, item: &[u8]) {
        if self.pool.len() < 3000 {
            self.pool.push(item.to_vec());
        } else {
            let i = self.rng.index(self.pool.len());
            self.pool[i] = item.to_vec();
        }
    }

    /// 1..=200 items, mostly few; duplicates within the list now and then.
    fn items(&mut self) -> Args {
        let n = match self.rng.weighted(&[50, 35, 15]) {
            0 => self.rng.range(1, 5),
            1 => self.rng.range(5, 50),
            _ => self.rng.range(50, 200),
        } as usize;
        let mut v: Args = Vec::with_capacity(n);
        for _ in 0..n {
            if !v.is_empty() && self.rng.chance(1, 12) {
                let i = self.rng.index(v.len());
                v.push(v[i].clone());
            } else {
                v.push(self.item());
            }
        }
        v
    }

    fn cap_tok(&mut self) -> Vec<u8> {
        match self.rng.weighted(&[30, 28, 17, 3, 8, 14]) {
            0 => self.rng.range(1, 10).to_string().into_bytes(),
            1 => self.rng.range(10, 100).to_string().into_bytes(),
            2 => self.rng.range(100, 2000).to_string().into_bytes(),
            3 => self.rng.range(2000, 100_000).to_string().into_bytes(),
            4 => self.pick_str(EDGE_INTS),
            _ => self.pick_str(BAD_INTS),
        }
    }

    fn exp_tok(&mut self) -> Vec<u8> {
        match self.rng.weighted(&[60, 12, 13, 15]) {
            0 => self.rng.range(1, 4).to_string().into_bytes(),
            1 => self.rng.range(5, 16).to_string().into_bytes(),
            2 => self.pick_str(EDGE_INTS),
            _ => self.pick_str(BAD_INTS),
        }
    }

    fn err_tok(&mut self) -> Vec<u8> {
        match self.rng.weighted(&[55, 25, 10, 10]) {
            0 => self.pick_str(GOOD_ERRORS),
            1 => {
                // log-uniform in [1e-5, 0.99] (now and then down to 1e-12),
                // printed in several styles
                let low = if self.rng.chance(1, 10) { -12.0 } else { -5.0 };
                let v = 10f64.powf(low + (-0.005 - low) * self.rng.unit());
                let s = match self.rng.below(5) {
                    0 => format!("{v}"),
                    1 => format!("{v:.4}"),
                    2 => format!("{v:e}"),
                    3 => format!("{v:.3E}"),
                    _ => format!("{v:.12}"),
                };
                s.into_bytes()
            }
            2 => self.pick_str(RANGE_ERRORS),
            _ => self.pick_str(BAD_ERRORS),
        }
    }

    fn iter_tok(&mut self) -> Vec<u8> {
        match self.rng.weighted(&[4, 6, 3, 3]) {
            0 => self.pick_str(BAD_INTS),
            1 => self.rng.range(-3, 400).to_string().into_bytes(),
            2 => self.pick_str(EDGE_INTS),
            _ => self.rng.range(400, 100_000).to_string().into_bytes(),
        }
    }

    // -- bookkeeping around writes ------------------------------------------------

    /// Called after a write to `key` with `n` items: BF.DEBUG now and then,
    /// and a size check (deleting runaway chains) every few hundred items.
    fn wrote(&mut self, key: &[u8], n: usize) {
        let p = self.ty.pending.entry(key.to_vec()).or_insert(0);
        *p += n;
        if *p >= CHECK_AFTER_ITEMS {
            self.check_size(key);
        }
        if self.rng.chance(1, 3) {
            let name = self.name("BF.DEBUG");
            self.send(&[name, b(key)]);
        }
    }

    fn check_size(&mut self, key: &[u8]) {
        self.ty.pending.insert(key.to_vec(), 0);
        let r = self.send(&args!["BF.INFO", key]);
        if r.rb.starts_with(b"-") {
            return;
        }
        match info_filters_size(&r.rb) {
            Some((filters, size)) if filters <= MAX_LINKS && size <= MAX_SIZE => {}
            _ => {
                self.send(&args!["DEL", key]);
            }
        }
    }

    /// BF.DEBUG (a compared command) parsed into link byte sizes.
    fn layout(&mut self, key: &[u8]) -> Option<Vec<u64>> {
        let name = self.name("BF.DEBUG");
        let r = self.send(&[name, b(key)]);
        debug_link_bytes(&r.rb)
    }

    // -- operations -----------------------------------------------------------------

    fn op_add(&mut self) {
        let key = self.key();
        let item = self.item();
        let name = self.name("BF.ADD");
        self.send(&[name, key.clone(), item.clone()]);
        self.remember(&item);
        self.wrote(&key, 1);
    }

    fn op_madd(&mut self) {
        let key = self.key();
        let items = self.items();
        let mut a = vec![self.name("BF.MADD"), key.clone()];
        a.extend(items.iter().cloned());
        self.send(&a);
        for it in &items {
            self.remember(it);
        }
        self.wrote(&key, items.len());
    }

    fn op_exists(&mut self) {
        let key = self.key();
        let item = self.item();
        let name = self.name("BF.EXISTS");
        self.send(&[name, key, item]);
    }

    fn op_mexists(&mut self) {
        let key = self.key();
        let n = self.rng.range(1, 50);
        let mut a = vec![self.name("BF.MEXISTS"), key];
        for _ in 0..n {
            a.push(self.item());
        }
        self.send(&a);
    }

    fn gen_reserve(&mut self) -> Args {
        let key = if self.rng.chance(1, 6) {
            self.pick_str(OPTION_KEYS)
        } else {
            self.key()
        };
        let mut a = vec![self.name("BF.RESERVE"), key, self.err_tok(), self.cap_tok()];
        let extra = self.rng.weighted(&[45, 30, 15, 10]);
        for _ in 0..extra {
            match self.rng.weighted(&[40, 25, 8, 17, 10]) {
                0 => {
                    a.push(self.pick_str(EXP_WORDS));
                    a.push(self.exp_tok());
                }
                1 => a.push(self.pick_str(NONSCALING_WORDS)),
                2 => a.push(self.pick_str(EXP_WORDS)),
                3 => a.push(self.pick_str(RESERVE_JUNK)),
                _ => a.push(self.exp_tok()),
            }
        }
        if self.rng.chance(1, 25) {
            let n = self.rng.range(1, 3) as usize;
            a.truncate(n);
        }
        a
    }

    fn op_reserve(&mut self) {
        for _ in 0..100 {
            let a = self.gen_reserve();
            if creation_is_safe(reserve_creation(&a)) {
                let r = self.send(&a);
                if r.rb == b"+OK\r\n" {
                    self.ty.pending.insert(a[1].clone(), 0);
                    self.wrote(&a[1].clone(), 0);
                }
                return;
            }
        }
    }

    fn gen_insert(&mut self) -> Args {
        let key = self.key();
        let mut a = vec![self.name("BF.INSERT"), key];
        let nopts = self.rng.weighted(&[30, 30, 20, 12, 8]);
        for _ in 0..nopts {
            match self.rng.weighted(&[25, 25, 20, 10, 15, 5]) {
                0 => {
                    a.push(self.pick_str(INSERT_CAP));
                    a.push(self.cap_tok());
                }
                1 => {
                    a.push(self.pick_str(INSERT_ERR));
                    a.push(self.err_tok());
                }
                2 => {
                    a.push(self.pick_str(INSERT_EXP));
                    a.push(self.exp_tok());
                }
                3 => a.push(self.pick_str(INSERT_NOCREATE)),
                4 => a.push(self.pick_str(INSERT_NONSCALING)),
                _ => a.push(self.pick_str(INSERT_JUNK)),
            }
        }
        if !self.rng.chance(1, 30) {
            a.push(self.pick_str(INSERT_ITEMS));
        }
        if !self.rng.chance(1, 30) {
            let items = self.items();
            a.extend(items);
        }
        if self.rng.chance(1, 40) {
            let n = self.rng.range(1, a.len() as i64) as usize;
            a.truncate(n);
        }
        a
    }

    fn op_insert(&mut self) {
        for _ in 0..100 {
            let a = self.gen_insert();
            if creation_is_safe(insert_creation(&a)) {
                self.send(&a);
                if let Some(key) = a.get(1).cloned() {
                    for it in a.iter().skip(2) {
                        self.remember(it);
                    }
                    self.wrote(&key, a.len());
                }
                return;
            }
        }
    }

    fn op_info(&mut self) {
        let key = self.key();
        let mut a = vec![self.name("BF.INFO"), key];
        match self.rng.weighted(&[35, 45, 20]) {
            0 => {}
            1 => {
                let f = self.rng.pick(INFO_FIELDS).to_string();
                let f: Vec<u8> = match self.rng.below(3) {
                    0 => b(&f),
                    1 => b(f.to_ascii_lowercase()),
                    _ => f
                        .bytes()
                        .map(|c| {
                            if self.rng.chance(1, 2) {
                                c.to_ascii_lowercase()
                            } else {
                                c
                            }
                        })
                        .collect(),
                };
                a.push(f);
            }
            _ => a.push(self.pick_str(INFO_BAD_FIELDS)),
        }
        self.send(&a);
    }

    fn op_card(&mut self) {
        let key = self.key();
        let name = self.name("BF.CARD");
        self.send(&[name, key]);
    }

    fn op_debug(&mut self) {
        let key = self.key();
        self.layout(&key);
    }

    fn op_scandump(&mut self) {
        let key = self.key();
        let iter = if self.rng.chance(1, 2) {
            match self.layout(&key) {
                Some(links) if !links.is_empty() => {
                    // near a link boundary or inside a link
                    let i = self.rng.index(links.len());
                    let start: u64 = links[..i].iter().sum();
                    let off = match self.rng.below(3) {
                        0 => 0,
                        1 => links[i].saturating_sub(1),
                        _ => self.rng.below(links[i] + 1),
                    };
                    let delta = self.rng.range(-1, 2);
                    (start as i64 + off as i64 + 1 + delta)
                        .to_string()
                        .into_bytes()
                }
                _ => self.iter_tok(),
            }
        } else if self.rng.chance(1, 4) {
            b("0")
        } else {
            self.iter_tok()
        };
        let name = self.name("BF.SCANDUMP");
        self.send(&[name, key, iter]);
    }

    fn op_scandump_walk(&mut self) {
        let key = self.key();
        self.walk(&key);
    }

    /// SCANDUMP of one key, LOADCHUNK into another: header first, then the
    /// data chunks in order, reversed, shuffled or cut into smaller pieces.
    fn op_loadchunk_copy(&mut self) {
        let src = self.key();
        let dst = self.key();
        let Some(chunks) = self.walk(&src) else {
            return;
        };
        if chunks.is_empty() {
            return;
        }
        if self.rng.chance(9, 10) {
            self.send(&args!["DEL", &dst]);
        }
        let header = chunks[0].clone();
        let mut data: Vec<Chunk> = chunks[1..].to_vec();
        match self.rng.weighted(&[35, 15, 25, 25]) {
            0 => {}
            1 => data.reverse(),
            2 => self.rng.shuffle(&mut data),
            _ => {
                let mut pieces = Vec::new();
                for (it, rbd, fbd) in &data {
                    let start = it - rbd.len() as i64 - 1;
                    let mut off = 0usize;
                    while off < rbd.len() {
                        let len = (self.rng.range(1, 64) as usize).min(rbd.len() - off);
                        let fb_piece = fbd
                            .get(off..(off + len).min(fbd.len()))
                            .unwrap_or_default()
                            .to_vec();
                        pieces.push((
                            start + (off + len) as i64 + 1,
                            rbd[off..off + len].to_vec(),
                            fb_piece,
                        ));
                        off += len;
                    }
                }
                if self.rng.chance(1, 2) {
                    self.rng.shuffle(&mut pieces);
                }
                data = pieces;
            }
        }
        if !data.is_empty() && self.rng.chance(1, 10) {
            let i = self.rng.index(data.len());
            data.remove(i);
        }
        if !data.is_empty() && self.rng.chance(1, 10) {
            let i = self.rng.index(data.len());
            let c = data[i].clone();
            data.push(c);
        }
        if !data.is_empty() && self.rng.chance(1, 10) {
            // truncated data, same iterator: lands earlier in the stream
            let i = self.rng.index(data.len());
            let keep = self.rng.index(data[i].1.len() + 1);
            data[i].1.truncate(keep);
            data[i].2.truncate(keep);
        }
        let mut sequence = vec![header];
        if !data.is_empty() && self.rng.chance(1, 12) {
            sequence.insert(0, data[0].clone());
        }
        sequence.extend(data);
        for (it, rbd, fbd) in sequence {
            let name = self.name("BF.LOADCHUNK");
            let it = it.to_string().into_bytes();
            let rb_args = vec![name.clone(), dst.clone(), it.clone(), rbd];
            let fb_args = vec![name, dst.clone(), it, fbd];
            let proto = self.rng.index(2);
            self.send_split(proto, &rb_args, &fb_args, true);
        }
        self.ty.pending.insert(dst.clone(), 0);
        if self.rng.chance(1, 2) {
            let n = self.rng.range(1, 30);
            let mut a = vec![self.name("BF.MEXISTS"), dst.clone()];
            for _ in 0..n {
                a.push(self.item());
            }
            self.send(&a);
        }
        self.wrote(&dst, 0);
    }

    /// Keeps a mutated header inside the range where 2.8.2 is defined and
    /// agrees with FerroBloom (see the exclusions at the top).
    fn make_header_safe(h: &mut Header) {
        for l in &mut h.links {
            l.entries = l.entries.max(1);
            l.n2 = l.n2.min(63);
            if l.error.is_nan() {
                l.error = 0.01;
            }
            if l.hashes == 0 {
                l.hashes = 1;
            }
            // 2.8.2 wants bits == bytes × 8; FerroBloom accepts any link its
            // RDB loader accepts (modulus within the array), which includes
            // old RedisBloom shapes (§9.2). Where only 2.8.2 would refuse,
            // make the link refused by both: no n2, bits beyond the array.
            if let Some(capacity) = l.bytes.checked_mul(8) {
                if l.bits != capacity && capacity < u64::MAX - 8 {
                    l.n2 = 0;
                    l.bits = capacity + 8;
                }
            }
            // FerroBloom refuses an array beyond the words its modulus
            // addresses plus 4 KiB; 2.8.2 takes it whenever 2^n2 <= bits.
            // Dropping n2 makes the stored bits (= bytes × 8 here, or
            // refused by both above) the modulus again: accepted by both.
            let modulus = if l.n2 > 0 { 1u64 << l.n2 } else { l.bits };
            if l.n2 > 0 && l.bytes > ferrobloom_core::bloom::link::max_array_bytes(modulus) {
                l.n2 = 0;
            }
        }
        if h.growth == 0 {
            h.growth = 1;
        }
        if h.options & 8 == 0 && (h.growth as u64 > MAX_SCALING_GROWTH || h.options & 2 != 0) {
            h.options |= 8;
        }
    }

    fn mutate_link(&mut self, l: &mut LinkHeader, which: u64) {
        match which {
            7 => {
                l.error =
                    *self
                        .rng
                        .pick(&[0.0, 1.0, -0.5, 1.5, f64::INFINITY, f64::NEG_INFINITY, -0.0])
            }
            8 => l.error = 10f64.powf(-10.0 + 9.99 * self.rng.unit()),
            9 => {
                l.bits = match self.rng.below(5) {
                    0 => 0,
                    1 => l.bits.wrapping_sub(1),
                    2 => l.bits + 1,
                    3 => l.bits * 2,
                    _ => l.bits + 8,
                }
            }
            10 => {
                l.bytes = if self.rng.chance(1, 2) {
                    l.bytes + 1
                } else {
                    l.bytes.wrapping_sub(1)
                }
            }
            11 => {
                l.bytes = self.rng.below(l.bytes + 65);
                l.bits = l.bytes * 8;
            }
            12 => l.n2 = self.rng.range(1, 63) as u8,
            13 => {
                l.hashes = if self.rng.chance(1, 2) {
                    l.hashes + 1
                } else {
                    l.hashes.saturating_sub(1)
                }
            }
            14 => {
                l.bpe = 0.1 + 200.0 * self.rng.unit();
                l.hashes = hash_count(l.bpe);
            }
            15 => l.bpe = *self.rng.pick(&[0.0, -1.0, f64::NAN, l.bpe * 2.0 + 2.0]),
            _ => l.entries = self.rng.range(1, 5000) as u64,
        }
    }

    fn mutate_header(&mut self, raw: &[u8]) -> Vec<u8> {
        let Some(mut h) = Header::parse(raw) else {
            return raw.to_vec();
        };
        let mut tail: Option<u8> = None;
        let mut cut: Option<usize> = None;
        let rounds = 1 + self.rng.index(2);
        for _ in 0..rounds {
            let li = self.rng.index(h.links.len());
            match self.rng.below(21) {
                0 => cut = Some(self.rng.index(raw.len())),
                1 => tail = Some(self.rng.next() as u8),
                2 => {
                    h.nfilters = 0;
                    h.links.clear();
                    break;
                }
                3 => {
                    h.nfilters = if self.rng.chance(1, 2) {
                        h.nfilters + 1
                    } else {
                        h.nfilters - 1
                    };
                }
                4 => h.options |= *self.rng.pick(&[16u32, 32, 0x100, 0x8000_0000]),
                5 => h.options = *self.rng.pick(&[0u32, 1, 4, 5, 8, 9, 12, 13, 10, 15]),
                6 => {
                    h.size = if self.rng.chance(1, 2) {
                        h.size.wrapping_add(1)
                    } else {
                        h.size.wrapping_sub(1)
                    }
                }
                17 => {
                    let l = &mut h.links[li];
                    let new = self.rng.below(l.entries + 6);
                    h.size = h.size.wrapping_sub(l.size).wrapping_add(new);
                    l.size = new;
                }
                18 => h.growth = self.rng.range(1, 16) as u32,
                19 => h.growth = self.rng.range(17, u32::MAX as i64) as u32,
                20 => h.options ^= 8,
                m => self.mutate_link(&mut h.links[li], m),
            }
        }
        Self::make_header_safe(&mut h);
        let mut out = h.encode();
        if let Some(c) = cut {
            out.truncate(c.min(out.len().saturating_sub(1)));
        }
        if let Some(t) = tail {
            out.push(t);
        }
        // A cut of the last byte and a random byte appended make a header
        // of the right length again, whose last n2 is that byte: kept in
        // the agreed range like every other field.
        if let Some(mut whole) = Header::parse(&out) {
            Self::make_header_safe(&mut whole);
            out = whole.encode();
        }
        if out.len() == 20 && out[8..12] == [0; 4] && out[..8] == [0; 8] {
            // 2.8.2 accepts this empty chain and crashes on the next add
            out[0] = 1;
        }
        out
    }

    /// A mutated header (valid or not) into a fresh key, then some use of it.
    fn op_loadchunk_header(&mut self) {
        let src = self.key();
        let name = self.name("BF.SCANDUMP");
        let r = self.send(&[name, src.clone(), b("0")]);
        let header = match decode(&r.rb) {
            Resp::Array(v) => match v.as_slice() {
                [Resp::Int(1), Resp::Bulk(h)] => h.clone(),
                _ => Vec::new(),
            },
            _ => Vec::new(),
        };
        let header = if header.is_empty() {
            let cap = self.rng.range(1, 300) as u64;
            let err = parse_double(self.rng.pick(GOOD_ERRORS).as_bytes()).unwrap();
            let nonscaling = self.rng.chance(1, 3);
            Header::fresh(cap, err, nonscaling).encode()
        } else {
            header
        };
        let dst = self.key();
        if self.rng.chance(9, 10) {
            self.send(&args!["DEL", &dst]);
        }
        let mutated = if self.rng.chance(1, 8) {
            header
        } else {
            self.mutate_header(&header)
        };
        let name = self.name("BF.LOADCHUNK");
        let r = self.send(&[name, dst.clone(), b("1"), mutated]);
        if r.rb != b"+OK\r\n" {
            return;
        }
        self.ty.pending.insert(dst.clone(), 0);
        match self.rng.below(4) {
            0 => {
                // the source's data chunks, whatever the new layout
                if let Some(chunks) = self.walk(&src) {
                    for (it, rbd, fbd) in chunks.into_iter().skip(1) {
                        let it = it.to_string().into_bytes();
                        let rb_args = args!["BF.LOADCHUNK", &dst, &it, rbd];
                        let fb_args = args!["BF.LOADCHUNK", &dst, &it, fbd];
                        let proto = self.rng.index(2);
                        self.send_split(proto, &rb_args, &fb_args, true);
                    }
                }
            }
            1 => {
                let items = self.items();
                let mut a = vec![self.name("BF.MADD"), dst.clone()];
                a.extend(items.iter().cloned());
                self.send(&a);
                self.wrote(&dst, items.len());
            }
            2 => {
                self.walk(&dst);
            }
            _ => {
                self.send(&args!["BF.INFO", &dst]);
            }
        }
        self.wrote(&dst, 0);
    }

    /// A data chunk with a chosen or random iterator and content.
    fn op_loadchunk_data(&mut self) {
        let key = self.key();
        let layout = if self.rng.chance(7, 10) {
            self.layout(&key)
        } else {
            None
        };
        let (iter, data) = match (self.rng.weighted(&[15, 10, 75]), layout) {
            (0, _) => {
                let n = self.rng.index(10);
                (self.pick_str(BAD_INTS), self.rng.bytes(n))
            }
            (1, _) | (_, None) => {
                let n = self.rng.index(12);
                (self.iter_tok(), self.rng.bytes(n))
            }
            (_, Some(links)) if !links.is_empty() => {
                let i = self.rng.index(links.len());
                let start: u64 = links[..i].iter().sum();
                let size = links[i];
                let off = match self.rng.below(4) {
                    0 => 0,
                    1 => size,
                    _ => self.rng.below(size + 1),
                };
                let room = size - off;
                let len = match self.rng.below(5) {
                    0 => 0,
                    1 => room,
                    2 => room + self.rng.range(1, 3) as u64,
                    _ => self.rng.below(room.min(16) + 1),
                } as usize;
                let delta = if self.rng.chance(1, 8) {
                    self.rng.range(-2, 2)
                } else {
                    0
                };
                let iter = (start + off) as i64 + len as i64 + 1 + delta;
                let data = match self.rng.below(4) {
                    0 => vec![0u8; len],
                    1 => vec![0xffu8; len],
                    _ => self.rng.bytes(len),
                };
                (iter.to_string().into_bytes(), data)
            }
            _ => (b("1"), Vec::new()),
        };
        let name = self.name("BF.LOADCHUNK");
        self.send(&[name, key.clone(), iter, data]);
        self.wrote(&key, 0);
    }

    /// Wrong argument counts for every command.
    fn op_arity(&mut self) {
        let cmd = *self.rng.pick(ARITY_NAMES);
        let bad_counts: &[usize] = match cmd {
            "BF.RESERVE" => &[1, 2, 3, 8, 9],
            "BF.ADD" => &[1, 2, 4, 5],
            "BF.MADD" | "BF.MEXISTS" => &[1, 2],
            "BF.INSERT" => &[1, 2, 3],
            "BF.EXISTS" => &[1, 2, 4],
            "BF.INFO" => &[1, 4, 5],
            "BF.CARD" | "BF.DEBUG" => &[1, 3, 4],
            "BF.SCANDUMP" => &[1, 2, 4],
            _ => &[1, 2, 3, 5],
        };
        let n = *self.rng.pick(bad_counts);
        let mut a = vec![self.name(cmd)];
        if n > 1 {
            a.push(self.key());
        }
        while a.len() < n {
            let t = match self.rng.below(4) {
                0 => self.item(),
                1 => self.err_tok(),
                2 => self.pick_str(&["ITEMS", "EXPANSION", "NONSCALING", "1", "0"]),
                _ => self.cap_tok(),
            };
            a.push(t);
        }
        self.send(&a);
    }

    /// A key of another type, then BF commands on it.
    fn op_wrongtype(&mut self) {
        let key = self.key();
        match self.rng.below(5) {
            0 | 1 => {
                self.send(&args!["SET", &key, "v"]);
            }
            2 => {
                self.send(&args!["SET", &key, "12345"]);
            }
            3 => {
                self.send(&args!["DEL", &key]);
                self.send(&args!["LPUSH", &key, "x"]);
            }
            _ => {
                self.send(&args!["DEL", &key]);
                self.send(&args!["HSET", &key, "f", "v"]);
            }
        }
        self.ty.pending.insert(key.clone(), 0);
        for _ in 0..self.rng.range(1, 4) {
            let item = self.item();
            let a = match self.rng.below(12) {
                0 => args!["BF.EXISTS", &key, &item],
                1 => args!["BF.MEXISTS", &key, &item, "x", ""],
                2 => args!["BF.ADD", &key, &item],
                3 => args!["BF.MADD", &key, &item, "y"],
                4 => args!["BF.INSERT", &key, "ITEMS", &item],
                5 => args!["BF.INSERT", &key, "NOCREATE", "ITEMS", &item],
                6 => args!["BF.RESERVE", &key, "0.01", "100"],
                7 => args!["BF.INFO", &key],
                8 => args!["BF.CARD", &key],
                9 => args!["BF.DEBUG", &key],
                10 => args!["BF.SCANDUMP", &key, "0"],
                _ => {
                    let h = Header::fresh(10, 0.01, false).encode();
                    if self.rng.chance(1, 2) {
                        args!["BF.LOADCHUNK", &key, "1", h]
                    } else {
                        args!["BF.LOADCHUNK", &key, "9", "12345678"]
                    }
                }
            };
            self.send(&a);
        }
    }

    fn op_del(&mut self) {
        let key = self.key();
        let cmd = if self.rng.chance(1, 3) {
            "UNLINK"
        } else {
            "DEL"
        };
        let mut a = args![cmd, &key];
        if self.rng.chance(1, 5) {
            a.push(self.key());
        }
        self.send(&a);
    }

    /// DUMP on both servers, RESTORE of the other server's payload.
    fn op_dump_restore(&mut self) {
        let src = self.key();
        let r = self.send(&args!["DUMP", &src]);
        let (Some(rb_payload), Some(fb_payload)) = (bulk(&r.rb), bulk(&r.fb)) else {
            return;
        };
        let dst = self.key();
        let mut tail: Args = Vec::new();
        match self.rng.below(3) {
            0 => {
                self.send(&args!["DEL", &dst]);
            }
            1 => tail.push(b("REPLACE")),
            _ => {}
        }
        let (mut rbp, mut fbp) = (fb_payload, rb_payload);
        if self.rng.chance(1, 12) {
            // a broken checksum: refused by Redis before the module sees it
            let i = rbp.len() - 1 - self.rng.index(8);
            let x = 1 + self.rng.below(255) as u8;
            rbp[i] ^= x;
            if let Some(c) = fbp.get_mut(i) {
                *c ^= x;
            }
        }
        let mut rb_args = args!["RESTORE", &dst, "0", rbp];
        let mut fb_args = args!["RESTORE", &dst, "0", fbp];
        rb_args.extend(tail.iter().cloned());
        fb_args.extend(tail);
        let proto = self.rng.index(2);
        let r = self.send_split(proto, &rb_args, &fb_args, true);
        if r.rb == b"+OK\r\n" {
            self.ty.pending.insert(dst.clone(), CHECK_AFTER_ITEMS);
            if self.rng.chance(1, 2) {
                self.send(&args!["DUMP", &dst]);
            }
            self.wrote(&dst, 0);
        }
    }

    fn op_generic(&mut self) {
        let key = self.key();
        let a = match self.rng.below(6) {
            0 => args!["TYPE", &key],
            1 => args!["EXISTS", &key, self.key(), self.key()],
            2 => args!["MEMORY", "USAGE", &key],
            3 => args!["MEMORY", "USAGE", &key, "SAMPLES", "0"],
            4 => args!["OBJECT", "ENCODING", &key],
            _ => args!["DUMP", &key],
        };
        self.send(&a);
    }

    fn op_rename(&mut self) {
        let src = self.key();
        let dst = self.key();
        let cmd = if self.rng.chance(1, 4) {
            "RENAMENX"
        } else {
            "RENAME"
        };
        self.send(&args![cmd, &src, &dst]);
        self.ty.pending.insert(src, 0);
        self.ty.pending.insert(dst.clone(), CHECK_AFTER_ITEMS);
        self.wrote(&dst, 0);
    }

    fn op_reload(&mut self) {
        self.send(&args!["DEBUG", "RELOAD"]);
        let key = self.key();
        self.layout(&key);
    }

    /// A fresh small filter (NONSCALING, or EXPANSION 1..4) filled well past
    /// its capacity: NONSCALING MADD stopping at the error, multi-link chains.
    fn op_fill(&mut self) {
        let key = self.key();
        self.send(&args!["DEL", &key]);
        let cap = self.rng.range(1, 20).to_string();
        let err = self.pick_str(GOOD_ERRORS);
        let exp = self.rng.range(1, 4).to_string();
        let a = match self.rng.below(5) {
            0 => args!["BF.RESERVE", &key, &err, &cap, "NONSCALING"],
            1 | 2 => args!["BF.RESERVE", &key, &err, &cap, "EXPANSION", &exp],
            3 => args![
                "BF.INSERT",
                &key,
                "CAPACITY",
                &cap,
                "ERROR",
                &err,
                "EXPANSION",
                &exp,
                "NONSCALING",
                "ITEMS",
                "x"
            ],
            _ => args![
                "BF.INSERT",
                &key,
                "EXPANSION",
                &exp,
                "CAPACITY",
                &cap,
                "ITEMS",
                "x",
                "y"
            ],
        };
        self.send(&a);
        self.ty.pending.insert(key.clone(), 0);
        for _ in 0..self.rng.range(1, 3) {
            let items = self.items();
            let mut a = vec![self.name("BF.MADD"), key.clone()];
            a.extend(items.iter().cloned());
            self.send(&a);
            for it in &items {
                self.remember(it);
            }
            self.wrote(&key, items.len());
        }
        self.layout(&key);
        self.send(&args!["BF.INFO", &key]);
    }

    /// One BF command (valid or not) on `key`, for WATCH, MULTI, EVAL and OOM.
    fn bf_command(&mut self, key: &[u8]) -> Args {
        let item = self.item();
        match self.rng.below(16) {
            0 | 1 => args!["BF.ADD", key, &item],
            2 => {
                let mut a = args!["BF.MADD", key, &item];
                for _ in 0..self.rng.range(0, 5) {
                    a.push(self.item());
                }
                a
            }
            3 => args!["BF.EXISTS", key, &item],
            4 => args!["BF.MEXISTS", key, &item, "x"],
            5 => args!["BF.RESERVE", key, "0.01", "100"],
            6 => args!["BF.RESERVE", key, "0.01", "100", "EXPANSION", "0"],
            7 => args!["BF.INSERT", key, "NOCREATE", "ITEMS", &item],
            8 => args!["BF.INSERT", key, "CAPACITY", "5", "ITEMS", &item, "y"],
            9 => args!["BF.INFO", key, "ITEMS"],
            10 => args!["BF.CARD", key],
            11 => args!["BF.DEBUG", key],
            12 => args!["BF.SCANDUMP", key, "0"],
            13 => args!["BF.LOADCHUNK", key, "999999", "x"],
            14 => args![
                "BF.LOADCHUNK",
                key,
                "1",
                Header::fresh(10, 0.01, false).encode()
            ],
            _ => args!["BF.ADD", key],
        }
    }

    /// WATCH on one connection, a BF command on the other, then EXEC:
    /// every write that reaches the key lookup invalidates the WATCH (§7.4).
    fn op_watch(&mut self) {
        let key = self.key();
        let a = self.bf_command(&key);
        self.watched(0, 1, &key, &a);
        self.wrote(&key, 0);
    }

    fn op_multi(&mut self) {
        let proto = self.rng.index(2);
        let mut keys = Vec::new();
        let commands = (0..self.rng.range(1, 5))
            .map(|_| {
                let key = self.key();
                let a = self.bf_command(&key);
                keys.push(key);
                a
            })
            .collect();
        self.transaction(proto, commands);
        for key in keys {
            self.wrote(&key, 0);
        }
    }

    /// BF commands called from Lua, with RESP2 and RESP3 script replies.
    fn op_eval(&mut self) {
        let key = self.key();
        let a = self.bf_command(&key);
        let scripts = [
            LUA_PCALL,
            "redis.setresp(3); return redis.pcall(unpack(ARGV))",
            "local r = redis.pcall(unpack(ARGV)); \
             if type(r) == 'table' and r.err then return 'caught: ' .. r.err end; return r",
            LUA_RESP3,
        ];
        self.eval_through(&scripts, a);
        self.wrote(&key, 0);
    }

    /// maxmemory exceeded: write commands (deny-oom) are refused, reads work.
    fn op_oom(&mut self) {
        // Each command is made just before it is sent (the seeds' sequences
        // depend on this order), so not through `over_maxmemory`.
        self.send_proto(0, &args!["CONFIG", "SET", "maxmemory", "1"]);
        for _ in 0..self.rng.range(1, 3) {
            let key = self.key();
            let a = self.bf_command(&key);
            self.send(&a);
        }
        self.send_proto(0, &args!["CONFIG", "SET", "maxmemory", "0"]);
    }
}

// ---------------------------------------------------------------------------
// Bloom filters in the generic differential runner.

/// The Bloom generator's own state.
struct Bloom {
    /// Items written to each key since its last size check.
    pending: HashMap<Vec<u8>, usize>,
}

type Diff = Runner<Bloom>;

impl DiffType for Bloom {
    const LABEL: &'static str = "differential";
    const TYPE_REPLY: &'static [u8] = b"+MBbloom--\r\n";
    const FILTER_TYPES: &'static [&'static [u8]] = &[b"+MBbloom--\r\n"];
    const LOADCHUNK: &'static str = "BF.LOADCHUNK";
    const STATS: &'static str = "BF.STATS";
    const SCANDUMP: &'static str = "BF.SCANDUMP";
    const SCANDUMP_MAX_CHUNKS: usize = 100_000;
    const NAME_CASE_ONE_IN: u64 = 12;
    const AUDIT_EVERY: usize = AUDIT_EVERY;
    const RELOAD_ONE_IN: u64 = 1500;

    fn new(_module_args: &[&str]) -> Bloom {
        Bloom {
            pending: HashMap::new(),
        }
    }

    fn keys() -> Vec<Vec<u8>> {
        let mut keys: Vec<Vec<u8>> = (0..24).map(|i| format!("k{i}").into_bytes()).collect();
        keys.extend(OPTION_KEYS.iter().map(b));
        keys.push(b("ITEMS"));
        keys.push(Vec::new());
        keys.push(b(b"bin\x00\xff key"));
        keys.push(b("a-forty-character-key-name-for-mem-usage"));
        keys
    }

    fn ops() -> Vec<(u64, Op<Bloom>)> {
        vec![
            (12, Diff::op_add),
            (10, Diff::op_madd),
            (8, Diff::op_exists),
            (6, Diff::op_mexists),
            (9, Diff::op_reserve),
            (9, Diff::op_insert),
            (4, Diff::op_info),
            (3, Diff::op_card),
            (3, Diff::op_debug),
            (3, Diff::op_scandump),
            (1, Diff::op_scandump_walk),
            (2, Diff::op_loadchunk_copy),
            (3, Diff::op_loadchunk_header),
            (3, Diff::op_loadchunk_data),
            (3, Diff::op_arity),
            (1, Diff::op_wrongtype),
            (2, Diff::op_del),
            (2, Diff::op_dump_restore),
            (2, Diff::op_generic),
            (1, Diff::op_rename),
            (2, Diff::op_fill),
            (1, Diff::op_watch),
            (1, Diff::op_multi),
            (1, Diff::op_eval),
            (1, Diff::op_oom),
        ]
    }

    /// A short description of a reply for DIFF_STATS: errors and simple
    /// strings in full, arrays by their first element's kind.
    fn reply_class(r: &[u8]) -> String {
        let first = r.split(|&c| c == b'\n').next().unwrap_or_default();
        match r.first() {
            Some(b'-' | b'+') => String::from_utf8_lossy(first).trim_end().to_string(),
            Some(b'*' | b'%') => match decode(r) {
                Resp::Array(v) if v.iter().any(Resp::is_error) => "array with error".into(),
                Resp::Array(v) if v.is_empty() => "empty array".into(),
                Resp::Array(v) => match v[0] {
                    Resp::Int(1) | Resp::Bool(true) => "array starting with 1".into(),
                    Resp::Int(0) | Resp::Bool(false) => "array starting with 0".into(),
                    _ => "array".into(),
                },
                Resp::Nil => "nil".into(),
                _ => "map".into(),
            },
            Some(b':') if first.len() > 4 => ":<n>".into(),
            Some(b':' | b'#') => String::from_utf8_lossy(first).trim_end().to_string(),
            Some(c) => format!("type {}", *c as char),
            None => "empty".into(),
        }
    }

    fn start_seed(run: &mut Diff) {
        run.ty.pending.clear();
        run.send(&args!["SET", "k22", "string"]);
        run.send(&args!["SET", "k23", "12345"]);
        run.send(&args!["HSET", "k21", "f", "v"]);
    }

    fn reload(run: &mut Diff) {
        run.op_reload();
    }

    /// DEBUG, CARD, MEMORY USAGE, INFO and the SCANDUMP stream; a filter
    /// grown past what the generator keeps is deleted.
    fn audit_key(run: &mut Diff, key: &[u8]) {
        run.send(&args!["BF.DEBUG", key]);
        run.send(&args!["BF.CARD", key]);
        run.send(&args!["MEMORY", "USAGE", key]);
        let proto = run.rng.index(2);
        let info = run.send_proto(proto, &args!["BF.INFO", key]);
        run.walk(key);
        match info_filters_size(&info.rb) {
            Some((filters, size)) if filters <= MAX_LINKS && size <= MAX_SIZE => {}
            _ => {
                run.send(&args!["DEL", key]);
            }
        }
    }

    /// Valkey 9's scripts turn a reply holding an error into the error, and
    /// OBJECT ENCODING of core types is the server's.
    fn frame(run: &mut Diff, args: &[Vec<u8>], rb: &[u8], fb: Vec<u8>) -> Vec<u8> {
        let name = args.first().map(|a| a.to_ascii_uppercase());
        match (name.as_deref(), decode(&fb)) {
            // The script saw the error itself (and may have wrapped it, as
            // in `caught: ...`); 2.8.2 on Redis 7.0 returns the array.
            (Some(b"EVAL" | b"EVALSHA" | b"FCALL"), _)
                if run.fb_version.scripts_lift_nested_errors() =>
            {
                let nested = match decode(rb) {
                    Resp::Array(items) => items.iter().find_map(|i| match i {
                        Resp::Error(e) => Some(e.clone()),
                        _ => None,
                    }),
                    _ => None,
                };
                match nested {
                    Some(e) if String::from_utf8_lossy(&fb).contains(&e) => rb.to_vec(),
                    _ => fb,
                }
            }
            // Encodings of the core types are the server's (Redis 7.0's small
            // lists are quicklists, later servers' listpacks); a filter's is
            // compared.
            (Some(b"OBJECT"), Resp::Bulk(_)) => {
                let filter =
                    run.fb.control.cmd(&[b"TYPE".as_slice(), &args[2]]) == b"+MBbloom--\r\n";
                if filter || !rb.starts_with(b"$") {
                    fb
                } else {
                    rb.to_vec()
                }
            }
            _ => fb,
        }
    }

    /// Requires both servers to have propagated the same commands (§7.2),
    /// but for adds the filter refused.
    fn compare_propagation(
        run: &mut Diff,
        line: &str,
        _fb_args: &[Vec<u8>],
        fb_reply: &[u8],
        rb: Vec<Args>,
        fb: Vec<Args>,
    ) {
        // An add refused by the filter (full, or a scale-out that failed)
        // replies an error on its own or inside the array, or, run by
        // the EVAL wrapper of `op_eval`, the error caught by its pcall.
        let refused = fb_reply.starts_with(b"-")
            || fb_reply.windows(3).any(|w| w == b"\r\n-")
            || fb_reply.starts_with(b"$") && fb_reply.windows(10).any(|w| w == b"\r\ncaught: ");
        // RedisBloom propagates a refused add verbatim; FerroBloom only what
        // the filter applied (docs/operations.md, Replication): nothing, or
        // BF.MADD of the applied items, or the creation spelled out with them.
        // Walks both streams together (a MULTI propagates several commands,
        // wrapped in MULTI/EXEC only when there are two or more).
        let mut fb_rest = fb.iter().peekable();
        let mut explained = true;
        for r in &rb {
            let matched = match fb_rest.peek() {
                Some(f) => {
                    *f == r
                        || run.is_explicit_creation(r, f, refused)
                        || refused && is_trimmed_add(r, f)
                }
                None => false,
            };
            if matched {
                fb_rest.next();
            } else if !(refused && (add_items(r).is_some() || is_multi_wrapper(r))) {
                explained = false;
                break;
            }
        }
        let explained = explained && fb_rest.next().is_none();
        if !explained {
            let what = format!("{line}   -- propagated to replicas");
            run.mismatch(&what, &show_stream(&rb), &show_stream(&fb));
        }
    }
}

impl Diff {
    /// Whether FerroBloom's `f` is the spelled-out form of 2.8.2's `r`: an
    /// add that created its filter from the module settings is propagated as
    /// `BF.INSERT key CAPACITY c ERROR e EXPANSION x [NONSCALING] ITEMS …`
    /// (same items), so that replicas with other settings create the same
    /// filter. The filter FerroBloom now holds must have exactly those
    /// parameters (the audits then compare it with 2.8.2's).
    fn is_explicit_creation(&mut self, r: &Args, f: &Args, refused: bool) -> bool {
        let adds = ["BF.ADD", "BF.MADD", "BF.INSERT"];
        if r.len() < 3 || f.len() < 9 || !adds.iter().any(|a| eq_ic(&r[0], a)) {
            return false;
        }
        if f[0] != b"BF.INSERT"
            || f[1] != r[1]
            || f[2] != b"CAPACITY"
            || f[4] != b"ERROR"
            || f[6] != b"EXPANSION"
        {
            return false;
        }
        let nonscaling = f[8] == b"NONSCALING";
        let items_at = if nonscaling { 9 } else { 8 };
        if f.get(items_at).map(Vec::as_slice) != Some(b"ITEMS".as_slice()) {
            return false;
        }
        let items = &f[items_at + 1..];
        let Some(r_items) = add_items(r) else {
            return false;
        };
        let items_match = if refused {
            is_subsequence(items, r_items)
        } else {
            items == r_items
        };
        if items.is_empty() || !items_match {
            return false;
        }
        let (Some(capacity), Some(error), Some(growth)) =
            (parse_int(&f[3]), parse_double(&f[5]), parse_int(&f[7]))
        else {
            return false;
        };
        let key = f[1].clone();
        let debug = self.fb.control.cmd(&[b"BF.DEBUG".to_vec(), key.clone()]);
        let first_link_error = if nonscaling { error } else { error * 0.5 };
        let expected = format!("capacity:{capacity} size:",);
        let ratio = format!(
            "ratio:{}",
            ferrobloom_core::format::printf_g(first_link_error)
        );
        let first = match decode(&debug) {
            Resp::Array(lines) if lines.len() >= 2 => lines[1].as_str().unwrap_or_default(),
            _ => return false,
        };
        if !first.contains(&expected) || !first.ends_with(&ratio) {
            return false;
        }
        let info = self
            .fb
            .control
            .cmd(&[b"BF.INFO".to_vec(), key, b"EXPANSION".to_vec()]);
        let want = if nonscaling {
            b"*1\r\n$-1\r\n".to_vec()
        } else {
            format!("*1\r\n:{growth}\r\n").into_bytes()
        };
        info == want
    }
}

#[test]
fn random_command_sequences() {
    let per_seed = env_u64("DIFF_COMMANDS").map_or(COMMANDS_PER_SEED, |n| n as usize);
    let total = run_random::<Bloom>("", &[], &seeds(FIXED_SEEDS), per_seed).total;
    // A seed or a length chosen to reproduce a run sends fewer commands.
    let chosen = env_u64("DIFF_COMMANDS").is_some() || env_u64("DIFF_SEED").is_some();
    assert!(total >= 10_000 || chosen, "{total} commands");
}

/// The same generator with module arguments, which change the filters that
/// BF.ADD, BF.MADD and BF.INSERT create on missing keys (names are
/// case-insensitive).
#[test]
fn random_command_sequences_with_module_args() {
    let per_seed = env_u64("DIFF_COMMANDS").map_or(COMMANDS_PER_SEED / 2, |n| n as usize);
    run_random::<Bloom>(
        " (error_rate 0.25 INITIAL_SIZE 7)",
        &["error_rate", "0.25", "INITIAL_SIZE", "7"],
        &seeds(&[11]),
        per_seed,
    );
}

/// A filter larger than the 16 MiB SCANDUMP chunk cap: SCANDUMP chunking,
/// LOADCHUNK of those chunks, DUMP, MEMORY USAGE, DEBUG RELOAD, AOF.
#[test]
fn large_filter() {
    let mut d = Diff::new(&[]);
    d.seed = 0;
    d.send(&args!["BF.RESERVE", "big", "0.0001", "10000000"]);
    let items: Args = (0..2000)
        .map(|i| format!("item:{i}").into_bytes())
        .collect();
    let mut a = args!["BF.MADD", "big"];
    a.extend(items.iter().cloned());
    d.send(&a);
    d.send(&args!["BF.DEBUG", "big"]);
    for it in [
        "0", "1", "5", "16777216", "16777217", "25766016", "25766017", "-1",
    ] {
        d.send(&args!["BF.SCANDUMP", "big", it]);
    }
    let chunks = d.walk(b"big").expect("SCANDUMP big");
    assert_eq!(chunks.len(), 3, "header + 16 MiB + rest");
    for (it, rbd, fbd) in chunks {
        let it = it.to_string().into_bytes();
        let proto = d.rng.index(2);
        d.send_split(
            proto,
            &args!["BF.LOADCHUNK", "copy", &it, rbd],
            &args!["BF.LOADCHUNK", "copy", &it, fbd],
            true,
        );
    }
    let mut a = args!["BF.MEXISTS", "copy"];
    a.extend(items[..100].iter().cloned());
    a.push(b("absent"));
    d.send(&a);
    d.send(&args!["BF.DEBUG", "copy"]);
    d.send(&args!["MEMORY", "USAGE", "big"]);
    d.send(&args!["DEBUG", "RELOAD"]);
    d.audit();
    d.compare_aof_rewrite();
    assert!(d.mismatches.is_empty(), "{}", d.mismatches.join("\n"));
}

// ---------------------------------------------------------------------------
// Recorded 2.8.2 replies.

fn json_args(v: &serde_json::Value) -> Args {
    v.as_array()
        .expect("command is an array")
        .iter()
        .map(|a| b(a.as_str().expect("argument is a string")))
        .collect()
}

#[test]
fn recorded_replies() {
    let doc: serde_json::Value =
        serde_json::from_str(include_str!("data/replies.json")).expect("replies.json");
    let setup: Vec<Args> = doc["setup"]
        .as_array()
        .expect("setup")
        .iter()
        .map(json_args)
        .collect();
    let vectors = doc["vectors"].as_array().expect("vectors");
    assert_eq!(vectors.len(), 68);
    let mut failures = Vec::new();
    for (kind, label) in [
        (ModuleKind::RedisBloom, "RedisBloom 2.8.2"),
        (ModuleKind::FerroBloom, "FerroBloom"),
    ] {
        let ferro = matches!(kind, ModuleKind::FerroBloom);
        let server = Server::start(ServerOpts::new(kind));
        let mut c2 = server.raw();
        let mut c3 = server.raw();
        c3.hello3();
        for cmd in &setup {
            let r = c2.cmd(cmd);
            assert!(!r.starts_with(b"-"), "{label}: setup {cmd:?} failed");
        }
        for v in vectors {
            let cmd = json_args(&v["command"]);
            for (proto, conn) in [("resp2", &mut c2), ("resp3", &mut c3)] {
                let want = v[proto].as_str().expect("reply").as_bytes();
                let got = conn.cmd(&cmd);
                if ferro && eq_ic(&cmd[0], "COPY") {
                    // [FREE]: FerroBloom implements COPY; it must really copy.
                    let ok = got == b":1\r\n"
                        && conn.cmd(&args!["BF.DEBUG", &cmd[2]])
                            == conn.cmd(&args!["BF.DEBUG", &cmd[1]]);
                    if !ok {
                        failures.push(format!(
                            "{label} {proto} {}: COPY should copy, got {}",
                            show_cmd(&cmd),
                            show_reply(&got)
                        ));
                    }
                    conn.cmd(&args!["DEL", &cmd[2]]);
                    continue;
                }
                if got != want {
                    failures.push(format!(
                        "{label} {proto} {}:\n    want {}\n    got  {}",
                        show_cmd(&cmd),
                        show_reply(want),
                        show_reply(&got)
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} recorded replies differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

// ---------------------------------------------------------------------------
// Command metadata.

#[test]
fn command_metadata() {
    compare_command_metadata(&Metadata {
        names: ARITY_NAMES,
        getkeys: vec![
            args!["BF.ADD", "k", "x"],
            args!["BF.INSERT", "k", "ITEMS", "x"],
        ],
        variadic: false,
        acl_categories: |v, name| v.bf_acl_categories(name),
        key_spec_flags: common::bf_key_spec_flags,
    });
}

/// The items of an add command (BF.ADD, BF.MADD, or BF.INSERT after its
/// ITEMS token), or None for any other command or a BF.INSERT without items.
fn add_items(cmd: &Args) -> Option<&[Vec<u8>]> {
    if cmd.len() < 3 {
        return None;
    }
    if eq_ic(&cmd[0], "BF.ADD") || eq_ic(&cmd[0], "BF.MADD") {
        return Some(&cmd[2..]);
    }
    if eq_ic(&cmd[0], "BF.INSERT") {
        // Options are recognised by their first letter; CAPACITY, ERROR,
        // EXPANSION (and POLICY) take a value, which may itself start with
        // an i (`ERROR Infinity`): the first option token that does is
        // ITEMS.
        let mut at = 2;
        while at < cmd.len() {
            match cmd[at].first().map(u8::to_ascii_lowercase) {
                Some(b'i') => return Some(&cmd[at + 1..]),
                Some(b'c' | b'e' | b'p') => at += 2,
                _ => at += 1,
            }
        }
        return None;
    }
    None
}

/// Whether `part` is `whole` with some elements left out, order kept.
fn is_subsequence(part: &[Vec<u8>], whole: &[Vec<u8>]) -> bool {
    let mut rest = whole.iter();
    part.iter().all(|p| rest.any(|w| w == p))
}

/// FerroBloom's propagation of an add that was refused part-way: BF.MADD of
/// the same key with a non-empty subsequence of the items.
fn is_trimmed_add(r: &Args, f: &Args) -> bool {
    match add_items(r) {
        Some(items) => {
            f.len() >= 3 && f[0] == b"BF.MADD" && f[1] == r[1] && is_subsequence(&f[2..], items)
        }
        None => false,
    }
}

fn is_multi_wrapper(cmd: &Args) -> bool {
    cmd.len() == 1 && (eq_ic(&cmd[0], "MULTI") || eq_ic(&cmd[0], "EXEC"))
}
