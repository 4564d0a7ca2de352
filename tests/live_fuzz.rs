//! Live fuzzing of the two ways outside data becomes a filter: BF.LOADCHUNK
//! (headers and data chunks) and RESTORE (DUMP payloads), spec §5, §6, §9.2.
//!
//! Seeds are real: SCANDUMP streams and DUMP payloads of filters of several
//! shapes made on the server under test, and RedisBloom's legacy RDB
//! encodings 0 to 4 plus 2.8.2's "dead link" chain
//! (`tests/data/legacy_rdb.json`). They are mutated at two levels:
//! field by field (huge counts, NaN / infinite / negative / zero / denormal
//! doubles, zero links, random options, n2 and hash counts, wrong
//! iterators, extra and dropped links) and byte by byte (bit flips, byte
//! sets, truncations, extensions, lying lengths). RESTORE payloads get their
//! CRC-64 recomputed so that the mutations reach the module; some keep a
//! wrong one, some claim a newer RDB version.
//!
//! Every reply is predicted by a model built on `ferrobloom_core` (header
//! decoder, chunk loader, RDB loader, and the module's memory cap) and must
//! match it exactly; for RESTORE the model reads the payload as Redis does
//! (lengths in the 0xC0-0xFF forms, bytes after the EOF opcode ignored).
//! Only documented replies may appear. Every key the fuzzer creates must
//! hold what the model predicts and be fully usable: adds and lookups,
//! BF.DEBUG / BF.INFO / BF.CARD, its SCANDUMP stream loaded back with
//! LOADCHUNK (what an AOF rewrite without preamble does), its DUMP
//! restored, and DEBUG RELOAD. Filters made before the onslaught must answer
//! exactly as before, and the server log must not show a panic, an internal
//! error or a Redis crash report.
//!
//! The RNG seed is printed; `LIVE_FUZZ_SEED=<n>` repeats a run. The summary
//! (mutation counts, reply histogram) is printed to stdout
//! (`cargo test --test live_fuzz -- --nocapture` shows it).

mod common;

use std::collections::{BTreeMap, HashMap};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use common::client::show;
use common::{decode, ModuleKind, RawClient, Resp, Server, ServerOpts};
use ferrobloom_core::bloom::dump::load_payload;
use ferrobloom_core::bloom::scandump::{
    data_chunk, decode_header, encode_header, load_chunk, LoadError,
};
use ferrobloom_core::bloom::sizing::{bits_per_entry, hash_count};
use ferrobloom_core::dump_format::{
    crc64_jones, lzf_decompress, module_type_id, DumpWriter, RDB_VERSION_7_0,
};
use ferrobloom_core::rdb_io::RdbOutput;
use ferrobloom_core::{AllocGuard, AllocRequest, Chain, Refusal, RefusalKind};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

/// `bf.max-filter-bytes` of the server under test: headers asking for more
/// are refused (`ERR received bad data: ...`, with the numbers) instead of
/// allocated.
const FILTER_CAP: u64 = 8 << 20;
const LOADCHUNK_CASES: usize = 7_000;
const RESTORE_CASES: usize = 12_000;
const CASES_PER_BATCH: usize = 500;
/// Created keys kept until the end, to go through DEBUG RELOAD.
const KEEP_FOR_RELOAD: usize = 400;
const MIN_MUTATED: usize = 20_000;

const OK: &[u8] = b"+OK\r\n";
const BAD_DATA: &[u8] = b"-ERR received bad data\r\n";
const NO_LINK: &[u8] = b"-ERR invalid offset - no link found\r\n";
const TOO_BIG: &[u8] = b"-ERR invalid chunk - Too big for current filter\r\n";
const NOT_FOUND: &[u8] = b"-ERR not found\r\n";
const NOT_NUMERIC: &[u8] = b"-ERR Second argument must be numeric\r\n";
const WRONGTYPE: &[u8] = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
const BAD_FORMAT: &[u8] = b"-ERR Bad data format\r\n";
const BAD_CHECKSUM: &[u8] = b"-ERR DUMP payload version or checksum are wrong\r\n";
const BUSYKEY: &[u8] = b"-BUSYKEY Target key name already exists.\r\n";
const COULD_NOT_CREATE: &str = "-ERR could not create filter";
/// The memory guard's refusals (and allocations that failed) of a creation.
const INSUFFICIENT: &str = "-ERR Insufficient memory to create filter";
/// The same for a LOADCHUNK header: RedisBloom's words, then the numbers.
const HEADER_REFUSED: &str = "-ERR received bad data: ";

// ---------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------

fn hex(bytes: &[u8]) -> String {
    let shown: String = bytes.iter().take(160).map(|b| format!("{b:02x}")).collect();
    if bytes.len() > 160 {
        format!("{shown}... ({} bytes)", bytes.len())
    } else {
        shown
    }
}

fn args(parts: &[&[u8]]) -> Vec<Vec<u8>> {
    parts.iter().map(|p| p.to_vec()).collect()
}

fn words(line: &str) -> Vec<Vec<u8>> {
    line.split_whitespace()
        .map(|w| w.as_bytes().to_vec())
        .collect()
}

fn madd(key: &str, items: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut cmd = vec![b"BF.MADD".to_vec(), key.as_bytes().to_vec()];
    cmd.extend(items.iter().cloned());
    cmd
}

fn numbered(prefix: &str, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| format!("{prefix}{i}").into_bytes())
        .collect()
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
        .collect()
}

/// The legacy payloads of `tests/data/legacy_rdb.json`: (name, payload).
fn legacy_payloads() -> Vec<(String, Vec<u8>)> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/legacy_rdb.json");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let json: serde_json::Value = serde_json::from_str(&text).expect("legacy_rdb.json");
    let mut out = Vec::new();
    for (i, v) in json["rdb_legacy_restore"]["vectors"]
        .as_array()
        .expect("vectors")
        .iter()
        .enumerate()
    {
        let encver = v["encver"].as_u64().expect("encver");
        let payload = unhex(v["payload_hex"].as_str().expect("payload_hex"));
        out.push((format!("legacy{i}-encver{encver}"), payload));
    }
    let dead = unhex(
        json["rdb_dead_link"]["dump_hex"]
            .as_str()
            .expect("dump_hex"),
    );
    out.push(("dead-link".to_string(), dead));
    out
}

/// Redis' strict integer syntax (string2ll), as RedisModule_StringToLongLong
/// applies it to the iterator.
fn parse_iter(text: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(text).ok()?;
    if s == "0" {
        return Some(0);
    }
    let digits = s.strip_prefix('-').unwrap_or(s);
    let first = digits.bytes().next()?;
    if !(b'1'..=b'9').contains(&first) || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

// ---------------------------------------------------------------------------
// DUMP payloads as fields
// ---------------------------------------------------------------------------

/// One typed field of a module value (opcodes 2, 4, 5).
#[derive(Clone, Debug)]
enum Field {
    U(u64),
    D(f64),
    S(Vec<u8>),
}

struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
    /// Read lengths the way Redis' rdbLoadLen does: the "encoded value"
    /// forms 0xC0..0xFF give their low 6 bits (only strings give them a
    /// meaning).
    lenient: bool,
}

impl Cursor<'_> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.data.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let s = self.data.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(s)
    }

    fn len(&mut self) -> Option<u64> {
        let first = self.byte()?;
        match first >> 6 {
            0 => Some(u64::from(first & 0x3f)),
            1 => Some((u64::from(first & 0x3f) << 8) | u64::from(self.byte()?)),
            3 if self.lenient => Some(u64::from(first & 0x3f)),
            _ if first == 0x80 => Some(u64::from(u32::from_be_bytes(
                self.take(4)?.try_into().ok()?,
            ))),
            _ if first == 0x81 => Some(u64::from_be_bytes(self.take(8)?.try_into().ok()?)),
            _ => None,
        }
    }

    /// A Redis string: raw, integer-encoded or LZF-compressed.
    fn string(&mut self) -> Option<Vec<u8>> {
        let first = *self.data.get(self.pos)?;
        if first >> 6 != 3 {
            let n = usize::try_from(self.len()?).ok()?;
            return Some(self.take(n)?.to_vec());
        }
        self.pos += 1;
        match first & 0x3f {
            0 => Some((self.byte()? as i8).to_string().into_bytes()),
            1 => Some(
                i16::from_le_bytes(self.take(2)?.try_into().ok()?)
                    .to_string()
                    .into_bytes(),
            ),
            2 => Some(
                i32::from_le_bytes(self.take(4)?.try_into().ok()?)
                    .to_string()
                    .into_bytes(),
            ),
            3 => {
                let clen = usize::try_from(self.len()?).ok()?;
                let ulen = usize::try_from(self.len()?).ok()?;
                lzf_decompress(self.take(clen)?, ulen)
            }
            _ => None,
        }
    }
}

/// Splits a DUMP payload into its module id and fields (strings
/// decompressed), or None if it is not a well-formed module value. The
/// lenient form reads it as Redis does: lengths in the "encoded value"
/// forms are accepted, and bytes after the EOF opcode are ignored.
fn try_parse_payload(payload: &[u8], lenient: bool) -> Option<(u64, Vec<Field>)> {
    let body = payload.get(..payload.len().checked_sub(10)?)?;
    let mut c = Cursor {
        data: body,
        pos: 0,
        lenient,
    };
    if c.byte()? != 7 {
        return None;
    }
    let id = c.len()?;
    let mut fields = Vec::new();
    loop {
        match c.len()? {
            0 => return (lenient || c.pos == body.len()).then_some((id, fields)),
            2 => fields.push(Field::U(c.len()?)),
            4 => fields.push(Field::D(f64::from_le_bytes(c.take(8)?.try_into().ok()?))),
            5 => fields.push(Field::S(c.string()?)),
            _ => return None,
        }
    }
}

fn parse_payload(payload: &[u8]) -> (u64, Vec<Field>) {
    try_parse_payload(payload, false)
        .unwrap_or_else(|| panic!("not a well-formed module value: {}", hex(payload)))
}

/// The filter Redis + FerroBloom make of a payload, per the model: the
/// fields as Redis reads them, checked by ferrobloom_core's RDB loader.
fn model_restore(payload: &[u8]) -> Option<Chain> {
    if let Ok(chain) = load_payload(payload) {
        return Some(chain);
    }
    let (id, fields) = try_parse_payload(payload, true)?;
    if id & !0x3ff != module_type_id(b"MBbloom--", 0).expect("id") {
        return None;
    }
    load_payload(&build_payload(id, &fields)).ok()
}

/// A payload of `fields` under module id `id`, with Redis 7.0's trailer.
fn build_payload(id: u64, fields: &[Field]) -> Vec<u8> {
    let mut w = DumpWriter::new(id);
    for f in fields {
        match f {
            Field::U(v) => w.write_unsigned(*v),
            Field::D(v) => w.write_double(*v),
            Field::S(v) => w.write_bytes(v),
        }
    }
    w.finish(RDB_VERSION_7_0)
}

/// Replaces the CRC of a payload whose other bytes were changed.
fn with_crc(mut payload: Vec<u8>) -> Vec<u8> {
    let body = payload.len() - 8;
    let crc = crc64_jones(&payload[..body]);
    payload[body..].copy_from_slice(&crc.to_le_bytes());
    payload
}

// ---------------------------------------------------------------------------
// SCANDUMP headers as fields
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
struct LinkFields {
    bytes: u64,
    bits: u64,
    items: u64,
    error: f64,
    bpe: f64,
    hashes: u32,
    entries: u64,
    n2: u8,
}

/// A header's fields; `nfilters` is kept apart from `links` so that the two
/// can disagree.
#[derive(Clone, Debug)]
struct HeaderFields {
    items: u64,
    nfilters: u32,
    options: u32,
    growth: u32,
    links: Vec<LinkFields>,
}

impl HeaderFields {
    fn parse(data: &[u8]) -> HeaderFields {
        let u64_at = |at: usize| u64::from_le_bytes(data[at..at + 8].try_into().unwrap());
        let u32_at = |at: usize| u32::from_le_bytes(data[at..at + 4].try_into().unwrap());
        let f64_at = |at: usize| f64::from_le_bytes(data[at..at + 8].try_into().unwrap());
        let nfilters = u32_at(8);
        assert_eq!(data.len(), 20 + 53 * nfilters as usize, "seed header");
        let links = (0..nfilters as usize)
            .map(|i| {
                let at = 20 + 53 * i;
                LinkFields {
                    bytes: u64_at(at),
                    bits: u64_at(at + 8),
                    items: u64_at(at + 16),
                    error: f64_at(at + 24),
                    bpe: f64_at(at + 32),
                    hashes: u32_at(at + 40),
                    entries: u64_at(at + 44),
                    n2: data[at + 52],
                }
            })
            .collect();
        HeaderFields {
            items: u64_at(0),
            nfilters,
            options: u32_at(12),
            growth: u32_at(16),
            links,
        }
    }

    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&self.items.to_le_bytes());
        out.extend_from_slice(&self.nfilters.to_le_bytes());
        out.extend_from_slice(&self.options.to_le_bytes());
        out.extend_from_slice(&self.growth.to_le_bytes());
        for l in &self.links {
            out.extend_from_slice(&l.bytes.to_le_bytes());
            out.extend_from_slice(&l.bits.to_le_bytes());
            out.extend_from_slice(&l.items.to_le_bytes());
            out.extend_from_slice(&l.error.to_le_bytes());
            out.extend_from_slice(&l.bpe.to_le_bytes());
            out.extend_from_slice(&l.hashes.to_le_bytes());
            out.extend_from_slice(&l.entries.to_le_bytes());
            out.push(l.n2);
        }
        out
    }
}

// ---------------------------------------------------------------------------
// Mutations
// ---------------------------------------------------------------------------

fn special_u64(rng: &mut StdRng, near: u64) -> u64 {
    match rng.gen_range(0..22) {
        0 => 0,
        1 => 1,
        2 => 2,
        3 => near.wrapping_add(1),
        4 => near.wrapping_sub(1),
        5 => near.wrapping_mul(2),
        6 => near / 2,
        7 => near.wrapping_add(8),
        8 => near.wrapping_mul(8),
        9 => near ^ (1 << rng.gen_range(0..64)),
        10 => u64::from(u32::MAX),
        11 => 1 << 32,
        12 => 1 << 40,
        13 => 1 << 53,
        14 => i64::MAX as u64,
        15 => 1 << 63,
        16 => u64::MAX,
        17 => u64::MAX / 8,
        18 => u64::MAX / 8 + 1,
        19 => rng.gen_range(0..1024),
        _ => rng.gen(),
    }
}

fn special_u32(rng: &mut StdRng, near: u32) -> u32 {
    match rng.gen_range(0..12) {
        0 => 0,
        1 => 1,
        2 => near.wrapping_add(1),
        3 => near.wrapping_sub(1),
        4 => near.wrapping_mul(2),
        5 => u32::MAX,
        6 => i32::MAX as u32,
        7 => 1 << 31,
        8 => 2048,
        9 => 2049,
        10 => rng.gen_range(0..100),
        _ => rng.gen(),
    }
}

fn special_f64(rng: &mut StdRng, near: f64) -> f64 {
    let choices = [
        f64::NAN,
        -f64::NAN,
        f64::from_bits(0x7ff0_0000_0000_0001), // signalling NaN
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.0,
        -0.0,
        5e-324,                  // smallest denormal
        f64::MIN_POSITIVE / 2.0, // denormal
        -5e-324,                 // negative denormal
        f64::MIN_POSITIVE,
        -near,
        -1.0,
        1.0,
        1.0 - f64::EPSILON / 2.0,
        1.0 + f64::EPSILON,
        0.5,
        1e-300,
        1e300,
        f64::MAX,
        near * 2.0,
        near / 2.0,
        near * (1.0 + 1e-9),
    ];
    match rng.gen_range(0..10) {
        0 => f64::from_bits(rng.gen()),
        1 => rng.gen(),
        _ => *choices.choose(rng).expect("choices"),
    }
}

/// Bytes of `data` mutated at positions >= `from`: bit flips, byte sets,
/// truncations, extensions, insertions, deletions, special numbers and
/// lying length prefixes.
fn mutate_bytes(rng: &mut StdRng, data: &[u8], from: usize) -> Vec<u8> {
    let mut d = data.to_vec();
    for _ in 0..rng.gen_range(1..=3) {
        let lo = from.min(d.len());
        let has_room = d.len() > lo;
        match rng.gen_range(0..10) {
            0..=2 if has_room => {
                for _ in 0..rng.gen_range(1..=4) {
                    let at = rng.gen_range(lo..d.len());
                    d[at] ^= 1 << rng.gen_range(0..8);
                }
            }
            3 if has_room => {
                let at = rng.gen_range(lo..d.len());
                d[at] = *[0x00, 0xff, 0x7f, 0x80, 0x81, 0xc3, rng.gen()]
                    .choose(rng)
                    .expect("bytes");
            }
            4 if has_room => {
                let keep = rng.gen_range(lo..d.len());
                d.truncate(keep);
            }
            5 => {
                let n = rng.gen_range(1..=64);
                d.extend((0..n).map(|_| rng.gen::<u8>()));
            }
            6 => {
                let at = rng.gen_range(lo..=d.len());
                let n = rng.gen_range(1..=9);
                let bytes: Vec<u8> = (0..n).map(|_| rng.gen()).collect();
                d.splice(at..at, bytes);
            }
            7 if has_room => {
                let at = rng.gen_range(lo..d.len());
                let end = (at + rng.gen_range(1..=9)).min(d.len());
                d.drain(at..end);
            }
            8 if d.len() >= lo + 8 => {
                let at = rng.gen_range(lo..=d.len() - 8);
                let v = if rng.gen_bool(0.5) {
                    special_u64(rng, 0).to_le_bytes()
                } else {
                    special_f64(rng, 0.01).to_le_bytes()
                };
                d[at..at + 8].copy_from_slice(&v);
            }
            _ => {
                // A length that lies: 0x80 / 0x81 forms with a big value.
                let at = rng.gen_range(lo..=d.len());
                let mut lie = vec![0x81];
                lie.extend_from_slice(&special_u64(rng, 1 << 20).to_be_bytes());
                if rng.gen_bool(0.5) {
                    lie = vec![0x80];
                    lie.extend_from_slice(&special_u32(rng, 1 << 20).to_be_bytes());
                }
                let end = (at + lie.len()).min(d.len());
                d.splice(at..end, lie);
            }
        }
    }
    d
}

/// A header with one to three fields changed.
fn mutate_header(rng: &mut StdRng, header: &[u8]) -> Vec<u8> {
    let mut h = HeaderFields::parse(header);
    for _ in 0..rng.gen_range(1..=3) {
        let n = h.links.len();
        let op = rng.gen_range(0..18);
        if n == 0 && (4..=12).contains(&op) {
            continue;
        }
        let li = rng.gen_range(0..n.max(1));
        match op {
            0 => h.items = special_u64(rng, h.items),
            1 => h.nfilters = special_u32(rng, h.nfilters),
            2 => {
                h.options = match rng.gen_range(0..4) {
                    0 => rng.gen_range(0..16),
                    1 => 1 << rng.gen_range(0..32),
                    2 => h.options ^ (1 << rng.gen_range(0..32)),
                    _ => rng.gen(),
                }
            }
            3 => h.growth = special_u32(rng, h.growth),
            4 => h.links[li].bytes = special_u64(rng, h.links[li].bytes),
            5 => {
                let l = &mut h.links[li];
                l.bits = match rng.gen_range(0..6) {
                    0 => 0,
                    1 => l.bytes.wrapping_mul(8).wrapping_add(1),
                    2 => l.bytes.wrapping_mul(8).wrapping_sub(1),
                    3 => 1u64.checked_shl(u32::from(l.n2)).unwrap_or(0),
                    4 => (l.entries as f64 * l.bpe) as u64,
                    _ => special_u64(rng, l.bits),
                }
            }
            6 => {
                h.links[li].items = special_u64(rng, h.links[li].items);
                if rng.gen_bool(0.5) {
                    h.items = h.links.iter().fold(0u64, |a, l| a.wrapping_add(l.items));
                }
            }
            7 => h.links[li].error = special_f64(rng, h.links[li].error),
            8 => {
                let l = &mut h.links[li];
                l.bpe = special_f64(rng, l.bpe);
                if rng.gen_bool(0.6) {
                    l.hashes = hash_count(l.bpe);
                }
            }
            9 => h.links[li].hashes = special_u32(rng, h.links[li].hashes),
            10 => h.links[li].entries = special_u64(rng, h.links[li].entries),
            11 => {
                let l = &mut h.links[li];
                l.n2 = match rng.gen_range(0..3) {
                    0 => rng.gen(),
                    1 => rng.gen_range(0..=70),
                    _ => rng.gen_range(1..=16),
                };
                if rng.gen_bool(0.5) && (1..=20).contains(&l.n2) {
                    // The pre-2.2 power-of-two shape: bits 0, array of 2^n2.
                    l.bytes = ((1u64 << l.n2) / 8).max(8);
                    l.bits = if rng.gen_bool(0.5) { 0 } else { l.bytes * 8 };
                }
            }
            12 => {
                // A consistent link of a huge (or cap-edge) size.
                let others: u64 = h
                    .links
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i != li)
                    .fold(0u64, |a, (_, l)| a.wrapping_add(l.bytes));
                let fixed = 32 + 64 * n as u64 + others;
                let edge = FILTER_CAP.saturating_sub(fixed);
                let l = &mut h.links[li];
                l.bytes = match rng.gen_range(0..8) {
                    0 => edge,
                    1 => edge + 8,
                    2 => edge.saturating_sub(8),
                    3 => 1 << 33,
                    4 => 1 << 40,
                    5 => u64::MAX / 8,
                    6 => u64::MAX / 16,
                    _ => 1 << 62,
                };
                l.bits = l.bytes.wrapping_mul(8);
                l.n2 = 0;
            }
            13 => {
                h.nfilters = 0;
                if rng.gen_bool(0.7) {
                    h.links.clear();
                }
            }
            14 if n > 0 => {
                let copy = h.links[li];
                h.links.insert(li, copy);
                h.nfilters = h.nfilters.wrapping_add(1);
                h.items = h.items.wrapping_add(copy.items);
            }
            15 if n > 0 => {
                let gone = h.links.remove(li);
                h.nfilters = h.nfilters.wrapping_sub(1);
                if rng.gen_bool(0.7) {
                    h.items = h.items.wrapping_sub(gone.items);
                }
            }
            16 if n > 0 => {
                // A coherent but different error rate.
                let l = &mut h.links[li];
                l.error = special_f64(rng, l.error);
                l.bpe = bits_per_entry(l.error);
                l.hashes = hash_count(l.bpe);
            }
            _ => {
                // All link fields zero: RedisBloom's dead link.
                if n > 0 {
                    let l = &mut h.links[li];
                    *l = LinkFields {
                        bytes: 0,
                        bits: 0,
                        items: 0,
                        error: 0.0,
                        bpe: 0.0,
                        hashes: 0,
                        entries: 0,
                        n2: 0,
                    };
                    h.items = h.links.iter().fold(0u64, |a, l| a.wrapping_add(l.items));
                }
            }
        }
    }
    h.encode()
}

/// The fields of a payload with one to three changes.
fn mutate_fields(rng: &mut StdRng, id: u64, fields: &[Field]) -> (u64, Vec<Field>) {
    let mut id = id;
    let mut f = fields.to_vec();
    for _ in 0..rng.gen_range(1..=3) {
        let indices = |f: &[Field], want: fn(&Field) -> bool| -> Vec<usize> {
            (0..f.len()).filter(|&i| want(&f[i])).collect()
        };
        match rng.gen_range(0..16) {
            0 => {
                let encver = *[0u64, 1, 2, 3, 4, 5, 6, 7, 63, 1023]
                    .choose(rng)
                    .expect("encver");
                id = (id & !0x3ff) | encver;
            }
            1..=4 => {
                if let Some(&i) = indices(&f, |x| matches!(x, Field::U(_))).choose(rng) {
                    if let Field::U(v) = f[i] {
                        f[i] = Field::U(special_u64(rng, v));
                    }
                }
            }
            5 | 6 => {
                if let Some(&i) = indices(&f, |x| matches!(x, Field::D(_))).choose(rng) {
                    if let Field::D(v) = f[i] {
                        f[i] = Field::D(special_f64(rng, v));
                    }
                }
            }
            7 => {
                if let Some(&i) = indices(&f, |x| matches!(x, Field::S(_))).choose(rng) {
                    if let Field::S(s) = &mut f[i] {
                        match rng.gen_range(0..6) {
                            0 => s.clear(),
                            1 => {
                                let keep = rng.gen_range(0..=s.len());
                                s.truncate(keep);
                            }
                            2 => {
                                let n = rng.gen_range(1..=64);
                                s.extend((0..n).map(|_| rng.gen::<u8>()));
                            }
                            3 => {
                                let copy = s.clone();
                                s.extend_from_slice(&copy);
                            }
                            4 => s.iter_mut().for_each(|b| *b = 0xff),
                            _ => {
                                let n = rng.gen_range(0..=32);
                                *s = (0..n).map(|_| rng.gen()).collect();
                            }
                        }
                    }
                }
            }
            8 if !f.is_empty() => {
                let i = rng.gen_range(0..f.len());
                f.remove(i);
            }
            9 if !f.is_empty() => {
                let i = rng.gen_range(0..f.len());
                let copy = f[i].clone();
                f.insert(rng.gen_range(0..=f.len()), copy);
            }
            10 => {
                let extra = match rng.gen_range(0..3) {
                    0 => Field::U(special_u64(rng, 1)),
                    1 => Field::D(special_f64(rng, 0.01)),
                    _ => Field::S((0..rng.gen_range(0..16)).map(|_| rng.gen()).collect()),
                };
                f.insert(rng.gen_range(0..=f.len()), extra);
            }
            11 if f.len() >= 2 => {
                let a = rng.gen_range(0..f.len());
                let b = rng.gen_range(0..f.len());
                f.swap(a, b);
            }
            12 if !f.is_empty() => {
                let i = rng.gen_range(0..f.len());
                f[i] = match &f[i] {
                    Field::U(v) => Field::D(f64::from_bits(*v)),
                    Field::D(v) => Field::U(v.to_bits()),
                    Field::S(s) => Field::U(s.len() as u64),
                };
            }
            13 if f.len() > 1 => {
                // nfilters (always the second field): zero, off by one, huge.
                let v = match rng.gen_range(0..4) {
                    0 => 0,
                    1 => match f[1] {
                        Field::U(v) => v.wrapping_add(1),
                        _ => 2,
                    },
                    2 => u64::MAX,
                    _ => special_u64(rng, 1),
                };
                f[1] = Field::U(v);
            }
            14 if f.len() > 1 => {
                // An all-zero (dead) link appended, counted in nfilters.
                if let Field::U(v) = f[1] {
                    f[1] = Field::U(v.wrapping_add(1));
                }
                use Field::{D, S, U};
                f.extend([U(0), D(0.0), U(0), D(0.0), U(0), U(0), S(Vec::new()), U(0)]);
            }
            _ => {
                // Drop the last field (a truncated value).
                f.pop();
            }
        }
    }
    (id, f)
}

fn mutate_iter(rng: &mut StdRng, iter: i64, len: usize, total: i64) -> Vec<u8> {
    if rng.gen_bool(0.04) {
        let junk = [
            "abc",
            "",
            "+1",
            "01",
            "-0",
            "1.0",
            "1e3",
            " 1",
            "1 ",
            "0x10",
            "9223372036854775808",
            "-9223372036854775809",
        ];
        return junk.choose(rng).expect("junk").as_bytes().to_vec();
    }
    let len = len as i64;
    let v = match rng.gen_range(0..16) {
        0 => iter.wrapping_add(1),
        1 => iter.wrapping_sub(1),
        2 => iter.wrapping_sub(len),
        3 => iter.wrapping_add(len),
        4 => 0,
        5 => -1,
        6 => 1,
        7 => i64::MIN,
        8 => i64::MAX,
        9 => total + 1,
        10 => total + 2,
        11 => rng.gen_range(-5..total + 50),
        12 => iter.wrapping_add(16 << 20),
        13 => iter.wrapping_mul(2),
        14 => len,
        _ => rng.gen(),
    };
    v.to_string().into_bytes()
}

fn mutate_chunk_data(rng: &mut StdRng, data: &[u8]) -> Vec<u8> {
    let mut d = data.to_vec();
    match rng.gen_range(0..6) {
        0 => d.truncate(rng.gen_range(0..=d.len())),
        1 => {
            let n = rng.gen_range(1..=20);
            d.extend((0..n).map(|_| rng.gen::<u8>()));
        }
        2 => d.clear(),
        3 if !d.is_empty() => {
            let at = rng.gen_range(0..d.len());
            d[at] ^= 1 << rng.gen_range(0..8);
        }
        4 => {
            let n = rng.gen_range(0..=2 * data.len() + 2);
            d = (0..n).map(|_| rng.gen()).collect();
        }
        _ => d.iter_mut().for_each(|b| *b = 0xff),
    }
    d
}

// ---------------------------------------------------------------------------
// The model: ferrobloom_core's decoders, and the module's memory cap
// ---------------------------------------------------------------------------

/// `bf.max-filter-bytes` as the server's guard applies it.
struct Cap;

impl AllocGuard for Cap {
    fn admit(&self, r: AllocRequest) -> Result<(), Refusal> {
        if r.filter_size_after > FILTER_CAP {
            return Err(Refusal {
                kind: RefusalKind::FilterCap,
                needed: r.filter_size_after,
                limit: FILTER_CAP,
                in_use: 0,
            });
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug)]
enum Expect {
    Exact(&'static [u8]),
    Prefix(&'static str),
}

impl Expect {
    fn matches(self, reply: &[u8]) -> bool {
        match self {
            Expect::Exact(want) => reply == want,
            Expect::Prefix(p) => reply.starts_with(p.as_bytes()) && reply.ends_with(b"\r\n"),
        }
    }
}

fn load_error_reply(e: LoadError) -> Expect {
    match e {
        LoadError::BadData => Expect::Exact(BAD_DATA),
        LoadError::Alloc(_) => Expect::Prefix(HEADER_REFUSED),
        LoadError::NoLink => Expect::Exact(NO_LINK),
        LoadError::TooBig => Expect::Exact(TOO_BIG),
        LoadError::Refused(_) => Expect::Prefix(HEADER_REFUSED),
    }
}

#[derive(Default)]
struct Model {
    /// Filters the fuzzer created, as the model has them.
    chains: HashMap<String, Chain>,
}

impl Model {
    /// The reply BF.LOADCHUNK must give, applying the command to the model.
    fn loadchunk(&mut self, key: &str, iter_text: &[u8], data: &[u8]) -> Expect {
        let Some(iter) = parse_iter(iter_text) else {
            return Expect::Exact(NOT_NUMERIC);
        };
        if let Some(chain) = self.chains.get_mut(key) {
            return match load_chunk(chain, iter, data) {
                Ok(()) => Expect::Exact(OK),
                Err(e) => load_error_reply(e),
            };
        }
        if iter != 1 {
            return Expect::Exact(NOT_FOUND);
        }
        match decode_header(data).and_then(|h| h.instantiate(&Cap)) {
            Ok(chain) => {
                self.chains.insert(key.to_string(), chain);
                Expect::Exact(OK)
            }
            Err(e) => load_error_reply(e),
        }
    }
}

/// The SCANDUMP stream of a chain: (1, header), then (next iterator, chunk).
fn model_stream(chain: &Chain) -> Vec<(i64, Vec<u8>)> {
    let mut out = vec![(1, encode_header(chain))];
    let mut iter = 1;
    loop {
        let (next, chunk) = data_chunk(chain, iter);
        if next == 0 {
            return out;
        }
        out.push((next, chunk.to_vec()));
        iter = next;
    }
}

// ---------------------------------------------------------------------------
// Bookkeeping
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    HeaderIntact,
    HeaderFields,
    HeaderBytes,
    ChunkIntact,
    ChunkMutated,
    ChunkExtra,
    LoadchunkWrongType,
    RestoreIntact,
    RestoreFields,
    RestoreBytes,
    RestoreBadCrc,
    RestoreNewerVersion,
    RestoreBusyKey,
}

impl Kind {
    fn mutated(self) -> bool {
        !matches!(
            self,
            Kind::HeaderIntact | Kind::ChunkIntact | Kind::RestoreIntact | Kind::RestoreBusyKey
        )
    }
}

struct Sent {
    kind: Kind,
    command: Vec<Vec<u8>>,
    expect: Expect,
    /// RESTORE: the key and the model's filter if it loads the payload.
    restored: Option<(String, Option<Chain>)>,
}

/// Categorised failures, with a few examples each.
#[derive(Default)]
struct Problems {
    by_category: BTreeMap<String, (usize, Vec<String>)>,
}

impl Problems {
    fn add(&mut self, category: &str, detail: String) {
        let entry = self.by_category.entry(category.to_string()).or_default();
        entry.0 += 1;
        if entry.1.len() < 4 {
            entry.1.push(detail);
        }
    }

    fn is_empty(&self) -> bool {
        self.by_category.is_empty()
    }

    fn report(&self) -> String {
        let mut out = String::new();
        for (category, (count, examples)) in &self.by_category {
            out.push_str(&format!("{category}: {count} time(s)\n"));
            for e in examples {
                out.push_str(&format!("    {e}\n"));
            }
        }
        out
    }
}

#[derive(Default)]
struct Stats {
    sent: usize,
    mutated: usize,
    per_kind: BTreeMap<Kind, usize>,
    /// (kind, reply) -> count; replies with numbers in them are shortened.
    replies: BTreeMap<(Kind, String), usize>,
    created_by_loadchunk: usize,
    created_by_restore: usize,
    checked_keys: usize,
}

fn reply_label(reply: &[u8]) -> String {
    let text = String::from_utf8_lossy(reply).trim_end().to_string();
    for prefix in [COULD_NOT_CREATE, INSUFFICIENT, HEADER_REFUSED] {
        if text.starts_with(prefix) {
            return format!("{}: ...", prefix.trim_end_matches(": "));
        }
    }
    text
}

fn describe(command: &[Vec<u8>]) -> String {
    let mut parts: Vec<String> = command[..command.len() - 1]
        .iter()
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    parts.push(hex(&command[command.len() - 1]));
    parts.join(" ")
}

// ---------------------------------------------------------------------------
// Server-side filters: sentinels and seeds
// ---------------------------------------------------------------------------

fn scandump_reply(reply: &[u8]) -> Option<(i64, Vec<u8>)> {
    match decode(reply) {
        Resp::Array(items) => match items.as_slice() {
            [Resp::Int(next), Resp::Bulk(data)] => Some((*next, data.clone())),
            _ => None,
        },
        _ => None,
    }
}

type Stream = Vec<(i64, Vec<u8>)>;
/// A payload (or header) and where it comes from.
type Named = (String, Vec<u8>);

/// The SCANDUMP streams of many keys, one pipelined round per chunk depth.
/// An error reply (or a runaway stream) ends that key's stream with the
/// offending reply.
fn scandump_many(raw: &mut RawClient, keys: &[String]) -> Vec<Result<Stream, Vec<u8>>> {
    let mut streams: Vec<Result<Stream, Vec<u8>>> = keys.iter().map(|_| Ok(Vec::new())).collect();
    let mut next: Vec<Option<i64>> = vec![Some(0); keys.len()];
    loop {
        let pending: Vec<usize> = (0..keys.len()).filter(|&i| next[i].is_some()).collect();
        if pending.is_empty() {
            return streams;
        }
        let commands: Vec<Vec<Vec<u8>>> = pending
            .iter()
            .map(|&i| {
                let iter = next[i].expect("pending").to_string();
                args(&[b"BF.SCANDUMP", keys[i].as_bytes(), iter.as_bytes()])
            })
            .collect();
        for (&i, reply) in pending.iter().zip(raw.pipeline(&commands)) {
            match scandump_reply(&reply) {
                Some((0, data)) if data.is_empty() => next[i] = None,
                Some((iter, data)) if iter > 0 => {
                    let stream = streams[i].as_mut().expect("stream");
                    stream.push((iter, data));
                    next[i] = Some(iter);
                    if stream.len() > 100_000 {
                        streams[i] = Err(b"runaway SCANDUMP stream".to_vec());
                        next[i] = None;
                    }
                }
                _ => {
                    streams[i] = Err(reply);
                    next[i] = None;
                }
            }
        }
    }
}

fn scandump(raw: &mut RawClient, key: &str) -> Stream {
    scandump_many(raw, &[key.to_string()])
        .pop()
        .expect("one stream")
        .unwrap_or_else(|reply| panic!("SCANDUMP {key}: {}", show(&reply)))
}

fn dump(raw: &mut RawClient, key: &str) -> Vec<u8> {
    match decode(&raw.cmd(&["DUMP", key])) {
        Resp::Bulk(payload) => payload,
        other => panic!("DUMP {key}: {other:?}"),
    }
}

/// A filter that must come out of the onslaught unchanged.
struct Sentinel {
    key: String,
    items: Vec<Vec<u8>>,
    answers: Vec<Vec<u8>>,
}

impl Sentinel {
    fn answers(raw: &mut RawClient, key: &str, items: &[Vec<u8>]) -> Vec<Vec<u8>> {
        let mut mexists = vec![b"BF.MEXISTS".to_vec(), key.as_bytes().to_vec()];
        mexists.extend(items.iter().cloned());
        let mut out = vec![
            raw.cmd(&["BF.DEBUG", key]),
            raw.cmd(&["BF.INFO", key]),
            raw.cmd(&["BF.CARD", key]),
            raw.cmd(&["DUMP", key]),
            raw.cmd(&mexists),
        ];
        for (iter, data) in scandump(raw, key) {
            out.push(iter.to_string().into_bytes());
            out.push(data);
        }
        out
    }
}

fn create_sentinels(raw: &mut RawClient, legacy: &[(String, Vec<u8>)]) -> Vec<Sentinel> {
    let mut sentinels = Vec::new();
    let mut make =
        |raw: &mut RawClient, key: &str, setup: Vec<Vec<Vec<u8>>>, items: Vec<Vec<u8>>| {
            for reply in raw.pipeline(&setup) {
                assert!(!reply.starts_with(b"-"), "{key}: {}", show(&reply));
            }
            let answers = Sentinel::answers(raw, key, &items);
            let mut all_present = format!("*{}\r\n", items.len()).into_bytes();
            for _ in &items {
                all_present.extend_from_slice(b":1\r\n");
            }
            assert_eq!(show(&answers[4]), show(&all_present), "{key}");
            sentinels.push(Sentinel {
                key: key.to_string(),
                items,
                answers,
            });
        };
    let items = numbered("c", 300);
    make(
        raw,
        "sentinel:chain",
        vec![
            words("BF.RESERVE sentinel:chain 0.01 10"),
            madd("sentinel:chain", &items),
        ],
        items,
    );
    let items = numbered("n", 200);
    make(
        raw,
        "sentinel:nonscaling",
        vec![
            words("BF.RESERVE sentinel:nonscaling 0.001 500 NONSCALING"),
            madd("sentinel:nonscaling", &items),
        ],
        items,
    );
    let items = numbered("e", 100);
    make(
        raw,
        "sentinel:expansion3",
        vec![
            words("BF.RESERVE sentinel:expansion3 0.001 5 EXPANSION 3"),
            madd("sentinel:expansion3", &items),
        ],
        items,
    );
    let items = vec![b"".to_vec(), b"\x00\xff".to_vec(), b"plain".to_vec()];
    make(
        raw,
        "sentinel:auto",
        vec![madd("sentinel:auto", &items)],
        items,
    );
    let items = numbered("p", 80);
    make(
        raw,
        "sentinel:pow2",
        vec![
            words("BF.RESERVE sentinel:pow2 0.01 20 POLICY pow2"),
            madd("sentinel:pow2", &items),
        ],
        items,
    );
    // A legacy encoding-0 filter (32-bit hash, unrounded modulus) that
    // scaled out in power-of-two mode.
    let mut items = vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()];
    let more = numbered("x", 40);
    items.extend(more.iter().cloned());
    make(
        raw,
        "sentinel:legacy",
        vec![
            args(&[b"RESTORE", b"sentinel:legacy", b"0", &legacy[0].1]),
            madd("sentinel:legacy", &more),
        ],
        items,
    );
    assert_eq!(raw.cmd(&["SET", "sentinel:string", "v"]), OK);
    sentinels
}

/// Seed filters made on the server: their SCANDUMP streams and DUMP
/// payloads, plus the legacy payloads as RedisBloom wrote them.
fn collect_seeds(
    raw: &mut RawClient,
    legacy: &[(String, Vec<u8>)],
) -> (Vec<(String, Stream)>, Vec<Named>) {
    let mut setup: Vec<Vec<Vec<u8>>> = vec![
        words("BF.RESERVE seed:tiny 0.1 5"),
        words("BF.MADD seed:tiny a b"),
        words("BF.RESERVE seed:chain3 0.01 2"),
        words("BF.MADD seed:chain3 a b c d e f g"),
        words("BF.RESERVE seed:lzf 0.01 100"),
        words("BF.ADD seed:lzf item"),
        words("BF.RESERVE seed:nonscaling 0.01 20 NONSCALING"),
        words("BF.MADD seed:nonscaling x y z"),
        words("BF.RESERVE seed:expansion3 0.001 5 EXPANSION 3"),
        madd("seed:expansion3", &numbered("", 60)),
        words("BF.RESERVE seed:expansion1 0.01 4 EXPANSION 1"),
        madd("seed:expansion1", &numbered("", 30)),
        words("BF.RESERVE seed:wide 0.001 3000"),
        madd("seed:wide", &numbered("w", 100)),
        words("BF.RESERVE seed:pow2 0.01 30 POLICY pow2"),
        madd("seed:pow2", &numbered("q", 60)),
        words("BF.INSERT seed:inserted CAPACITY 50 ERROR 0.05 EXPANSION 3 NONSCALING ITEMS x y z"),
    ];
    let mut keys: Vec<String> = [
        "seed:tiny",
        "seed:chain3",
        "seed:lzf",
        "seed:nonscaling",
        "seed:expansion3",
        "seed:expansion1",
        "seed:wide",
        "seed:pow2",
        "seed:inserted",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for (i, (name, payload)) in legacy.iter().enumerate() {
        let key = format!("seed:{name}");
        setup.push(args(&[b"RESTORE", key.as_bytes(), b"0", payload]));
        if i % 2 == 1 {
            // Scaled out after loading: power-of-two links for legacy options.
            setup.push(madd(&key, &numbered("x", 40)));
        }
        keys.push(key);
    }
    for (command, reply) in setup.iter().zip(raw.pipeline(&setup)) {
        assert!(
            !reply.starts_with(b"-"),
            "{}: {}",
            describe(command),
            show(&reply)
        );
    }
    let streams = keys.iter().map(|k| (k.clone(), scandump(raw, k))).collect();
    let mut payloads: Vec<(String, Vec<u8>)> =
        keys.iter().map(|k| (k.clone(), dump(raw, k))).collect();
    payloads.extend(legacy.iter().cloned());
    (streams, payloads)
}

// ---------------------------------------------------------------------------
// Case generation
// ---------------------------------------------------------------------------

struct Fuzzer {
    rng: StdRng,
    model: Model,
    next_key: usize,
    streams: Vec<(String, Stream)>,
    payloads: Vec<(String, u64, Vec<Field>, Vec<u8>)>,
    sentinel_keys: Vec<String>,
    /// Byte-mutated payloads only Redis' lenient length reading makes loadable.
    lenient: usize,
}

impl Fuzzer {
    fn key(&mut self, prefix: &str) -> String {
        self.next_key += 1;
        format!("{prefix}:{}", self.next_key)
    }

    fn loadchunk(&mut self, kind: Kind, key: &str, iter: Vec<u8>, data: Vec<u8>) -> Sent {
        let expect = self.model.loadchunk(key, &iter, &data);
        Sent {
            kind,
            command: vec![
                b"BF.LOADCHUNK".to_vec(),
                key.as_bytes().to_vec(),
                iter,
                data,
            ],
            expect,
            restored: None,
        }
    }

    /// One filter loaded from a (mutated) stream.
    fn loadchunk_case(&mut self, out: &mut Vec<Sent>) {
        let rng = &mut self.rng;
        let (_, seed) = self.streams.choose(rng).expect("streams").clone();
        let key = self.key("fz");
        let header = &seed[0].1;
        let (kind, header) = match self.rng.gen_range(0..10) {
            0..=3 => (Kind::HeaderIntact, header.clone()),
            4..=7 => (Kind::HeaderFields, mutate_header(&mut self.rng, header)),
            _ => (Kind::HeaderBytes, mutate_bytes(&mut self.rng, header, 0)),
        };
        let intact_header = kind == Kind::HeaderIntact;
        out.push(self.loadchunk(kind, &key, b"1".to_vec(), header.clone()));

        let mut chunks: Vec<(i64, Vec<u8>)> = seed[1..].to_vec();
        let total: i64 = chunks.iter().map(|(_, d)| d.len() as i64).sum();
        if self.rng.gen_bool(0.2) {
            chunks.shuffle(&mut self.rng);
        }
        if self.rng.gen_bool(0.05) {
            chunks.clear();
        }
        let p_mutate = if intact_header { 0.35 } else { 0.1 };
        for (iter, data) in chunks {
            if self.rng.gen_bool(p_mutate) {
                let (iter_text, data) = match self.rng.gen_range(0..3) {
                    0 => {
                        let t = mutate_iter(&mut self.rng, iter, data.len(), total);
                        (t, data)
                    }
                    1 => {
                        let d = mutate_chunk_data(&mut self.rng, &data);
                        (iter.to_string().into_bytes(), d)
                    }
                    _ => {
                        let t = mutate_iter(&mut self.rng, iter, data.len(), total);
                        let d = mutate_chunk_data(&mut self.rng, &data);
                        (t, d)
                    }
                };
                out.push(self.loadchunk(Kind::ChunkMutated, &key, iter_text, data));
            } else {
                out.push(self.loadchunk(
                    Kind::ChunkIntact,
                    &key,
                    iter.to_string().into_bytes(),
                    data,
                ));
            }
        }
        for _ in 0..self.rng.gen_range(0..=2) {
            let len = *[0usize, 1, 3, 8, 64, 200]
                .choose(&mut self.rng)
                .expect("len");
            let data: Vec<u8> = (0..len).map(|_| self.rng.gen()).collect();
            let around = self.rng.gen_range(1..=total + 1);
            let iter = mutate_iter(&mut self.rng, around, len, total);
            out.push(self.loadchunk(Kind::ChunkExtra, &key, iter, data));
        }
        if self.rng.gen_bool(0.05) {
            // The header again: on an existing key it is a data chunk.
            out.push(self.loadchunk(Kind::ChunkExtra, &key, b"1".to_vec(), header));
        }
        if self.rng.gen_bool(0.02) {
            let iter = self.rng.gen_range(-3..=total + 3).to_string().into_bytes();
            out.push(Sent {
                kind: Kind::LoadchunkWrongType,
                command: vec![
                    b"BF.LOADCHUNK".to_vec(),
                    b"sentinel:string".to_vec(),
                    iter.clone(),
                    seed[0].1.clone(),
                ],
                expect: Expect::Exact(if parse_iter(&iter).is_some() {
                    WRONGTYPE
                } else {
                    NOT_NUMERIC
                }),
                restored: None,
            });
        }
    }

    /// One RESTORE of a (mutated) payload.
    fn restore_case(&mut self, out: &mut Vec<Sent>) {
        let (_, id, fields, raw) = self
            .payloads
            .choose(&mut self.rng)
            .expect("payloads")
            .clone();
        let key = self.key("rs");
        let roll = self.rng.gen_range(0..100);
        let (kind, payload, key) = match roll {
            0..=4 => (Kind::RestoreIntact, raw, key),
            5..=49 => {
                let (id, fields) = mutate_fields(&mut self.rng, id, &fields);
                (Kind::RestoreFields, build_payload(id, &fields), key)
            }
            50..=91 => {
                let body = &raw[..raw.len() - 10];
                let mut p = mutate_bytes(&mut self.rng, body, 1);
                p.extend_from_slice(&raw[raw.len() - 10..]);
                (Kind::RestoreBytes, with_crc(p), key)
            }
            92..=95 => {
                let mut p = if self.rng.gen_bool(0.5) {
                    raw
                } else {
                    let body = &raw[..raw.len() - 10];
                    let mut p = mutate_bytes(&mut self.rng, body, 1);
                    p.extend_from_slice(&raw[raw.len() - 10..]);
                    p
                };
                let at = p.len() - self.rng.gen_range(1..=8);
                p[at] ^= 1 << self.rng.gen_range(0..8);
                (Kind::RestoreBadCrc, p, key)
            }
            96..=97 => {
                let mut p = raw;
                let at = p.len() - 10;
                // Newer than any server's (Redis 7.4 writes 12, Valkey 9 80).
                let version: u16 = self.rng.gen_range(1000..=u16::MAX);
                p[at..at + 2].copy_from_slice(&version.to_le_bytes());
                (Kind::RestoreNewerVersion, with_crc(p), key)
            }
            _ => {
                let target = self
                    .sentinel_keys
                    .choose(&mut self.rng)
                    .expect("sentinels")
                    .clone();
                (Kind::RestoreBusyKey, raw, target)
            }
        };
        let predicted = model_restore(&payload);
        if kind == Kind::RestoreBytes && predicted.is_some() && load_payload(&payload).is_err() {
            self.lenient += 1;
        }
        let expect = match kind {
            Kind::RestoreBadCrc | Kind::RestoreNewerVersion => Expect::Exact(BAD_CHECKSUM),
            Kind::RestoreBusyKey => Expect::Exact(BUSYKEY),
            _ if predicted.is_some() => Expect::Exact(OK),
            _ => Expect::Exact(BAD_FORMAT),
        };
        // A sentinel must never be taken for a created key.
        let restored = (kind != Kind::RestoreBusyKey).then(|| (key.clone(), predicted));
        out.push(Sent {
            kind,
            command: vec![
                b"RESTORE".to_vec(),
                key.as_bytes().to_vec(),
                b"0".to_vec(),
                payload,
            ],
            expect,
            restored,
        });
    }
}

// ---------------------------------------------------------------------------
// Checking created keys
// ---------------------------------------------------------------------------

struct Created {
    key: String,
    model: Option<Chain>,
}

const PROBES: usize = 6;

fn probe(i: usize) -> Vec<u8> {
    match i {
        0 => Vec::new(),
        1 => b"\x00\xff\r\n".to_vec(),
        _ => format!("probe-{i}").into_bytes(),
    }
}

/// A guess at why FerroBloom's LOADCHUNK refuses FerroBloom's own SCANDUMP
/// header, for the report.
fn why_refused(iter: &[u8], data: &[u8]) -> String {
    if iter != b"1" || data.len() < 20 || (data.len() - 20) % 53 != 0 {
        return "data chunk".to_string();
    }
    let h = HeaderFields::parse(data);
    if h.growth == 0 {
        return "header with growth 0".to_string();
    }
    if h.links.iter().any(|l| l.bits != l.bytes.wrapping_mul(8)) {
        return "header with a link whose bits are not bytes x 8".to_string();
    }
    "header".to_string()
}

/// Every created key holds what the model predicts and is fully usable.
/// Keys are deleted afterwards, except the first KEEP_FOR_RELOAD ones,
/// returned with their final DUMP.
fn check_created(
    raw: &mut RawClient,
    created: Vec<Created>,
    kept: &mut Vec<(String, Vec<u8>)>,
    problems: &mut Problems,
    stats: &mut Stats,
) {
    if created.is_empty() {
        return;
    }
    stats.checked_keys += created.len();
    let keys: Vec<String> = created.iter().map(|c| c.key.clone()).collect();

    // 1. The SCANDUMP stream equals the model's.
    let streams = scandump_many(raw, &keys);
    let mut ok_streams: Vec<Option<Stream>> = Vec::new();
    for (c, stream) in created.iter().zip(streams) {
        match stream {
            Err(reply) => {
                problems.add(
                    "SCANDUMP of a created key fails",
                    format!("{}: {}", c.key, show(&reply)),
                );
                ok_streams.push(None);
            }
            Ok(stream) => {
                if let Some(chain) = &c.model {
                    let want = model_stream(chain);
                    if want != stream {
                        problems.add(
                            "created key differs from the model",
                            format!(
                                "{}: header {} vs model {}",
                                c.key,
                                hex(&stream.first().map(|s| s.1.clone()).unwrap_or_default()),
                                hex(&want[0].1)
                            ),
                        );
                    }
                }
                ok_streams.push(Some(stream));
            }
        }
    }

    // 2. The stream loads back with LOADCHUNK into an identical filter.
    let mut commands = Vec::new();
    let mut owners = Vec::new();
    for (i, stream) in ok_streams.iter().enumerate() {
        let Some(stream) = stream else { continue };
        let copy = format!("{}:rt", keys[i]);
        for (iter, data) in stream {
            commands.push(args(&[
                b"BF.LOADCHUNK",
                copy.as_bytes(),
                iter.to_string().as_bytes(),
                data,
            ]));
            owners.push(i);
        }
    }
    let mut reloaded = vec![true; keys.len()];
    for ((i, command), reply) in owners.iter().zip(&commands).zip(raw.pipeline(&commands)) {
        if reply != OK && reloaded[*i] {
            reloaded[*i] = false;
            problems.add(
                &format!(
                    "SCANDUMP stream of a created key is refused by LOADCHUNK ({})",
                    why_refused(&command[2], &command[3])
                ),
                format!("{} -> {}", describe(command), show(&reply)),
            );
        }
    }
    let mut commands = Vec::new();
    for key in &keys {
        commands.push(args(&[b"DUMP", key.as_bytes()]));
        commands.push(args(&[b"DUMP", format!("{key}:rt").as_bytes()]));
    }
    let replies = raw.pipeline(&commands);
    let mut dumps = Vec::new();
    for (i, pair) in replies.chunks(2).enumerate() {
        let payload = match decode(&pair[0]) {
            Resp::Bulk(p) => p,
            other => {
                problems.add(
                    "DUMP of a created key fails",
                    format!("{}: {other:?}", keys[i]),
                );
                Vec::new()
            }
        };
        // A key whose own LOADCHUNK sequence is incomplete saves its
        // loading state (docs/commands.md, BF.LOADCHUNK), which a
        // SCANDUMP stream does not carry: its copy is complete, so their
        // bits are compared instead.
        let same = pair[1] == pair[0]
            || (stats_loading(raw, &keys[i])
                && ok_streams[i].as_ref().is_some_and(|stream| {
                    let copy = format!("{}:rt", keys[i]);
                    scandump_many(raw, &[copy])
                        .pop()
                        .and_then(Result::ok)
                        .as_ref()
                        == Some(stream)
                }));
        if ok_streams[i].is_some() && reloaded[i] && !same {
            problems.add(
                "LOADCHUNK of a created key's stream gives another filter",
                keys[i].clone(),
            );
        }
        dumps.push(payload);
    }

    // 3. Commands work on it; its DUMP restores; the adds are found.
    let mut commands = Vec::new();
    for (key, payload) in keys.iter().zip(&dumps) {
        let k = key.as_bytes();
        let probes: Vec<Vec<u8>> = (0..PROBES).map(probe).collect();
        let mut mexists = args(&[b"BF.MEXISTS", k]);
        mexists.extend(probes.iter().cloned());
        let mut madd_cmd = args(&[b"BF.MADD", k]);
        madd_cmd.extend(probes.iter().cloned());
        commands.push(args(&[b"BF.DEBUG", k]));
        commands.push(args(&[b"BF.INFO", k]));
        commands.push(args(&[b"BF.CARD", k]));
        commands.push(mexists.clone());
        commands.push(madd_cmd);
        commands.push(mexists);
        commands.push(args(&[b"BF.EXISTS", k, b"probe-2"]));
        commands.push(args(&[
            b"RESTORE",
            format!("{key}:cp").as_bytes(),
            b"0",
            payload,
        ]));
        commands.push(args(&[b"DUMP", format!("{key}:cp").as_bytes()]));
        commands.push(args(&[b"DUMP", k]));
    }
    let replies = raw.pipeline(&commands);
    for ((c, before), r) in created.iter().zip(&dumps).zip(replies.chunks(10)) {
        let key = &c.key;
        let mut fail = |what: &str, reply: &[u8]| {
            problems.add(
                &format!("created key: {what}"),
                format!("{key}: {}", show(reply)),
            );
        };
        match decode(&r[0]) {
            Resp::Array(lines)
                if !lines.is_empty()
                    && lines.iter().all(|l| matches!(l, Resp::Bulk(_)))
                    && c.model
                        .as_ref()
                        .is_none_or(|m| m.links().len() + 1 == lines.len()) => {}
            _ => fail("BF.DEBUG", &r[0]),
        }
        if !matches!(decode(&r[1]), Resp::Array(v) if v.len() == 10) {
            fail("BF.INFO", &r[1]);
        }
        // (Item counts near 2^64 are shown negative, as RedisBloom does.)
        if !matches!(decode(&r[2]), Resp::Int(_)) {
            fail("BF.CARD", &r[2]);
        }
        if !matches!(decode(&r[3]), Resp::Array(v) if v.len() == PROBES && v.iter().all(|x| matches!(x, Resp::Int(0 | 1))))
        {
            fail("BF.MEXISTS", &r[3]);
        }
        match decode(&r[4]) {
            Resp::Array(v) if !v.is_empty() && v.len() <= PROBES => {
                let after = match decode(&r[5]) {
                    Resp::Array(a) if a.len() == PROBES => a,
                    _ => {
                        fail("BF.MEXISTS after BF.MADD", &r[5]);
                        Vec::new()
                    }
                };
                for (i, element) in v.iter().enumerate() {
                    match element {
                        Resp::Int(0 | 1) => {
                            if after.get(i).is_some_and(|a| *a != Resp::Int(1)) {
                                fail("an added item is not found", &r[5]);
                            }
                        }
                        Resp::Error(e) if e == "ERR non scaling filter is full" => {
                            if i + 1 != v.len() {
                                fail("BF.MADD goes on after 'full'", &r[4]);
                            }
                        }
                        // A scale-out that failed or that the guard refused.
                        Resp::Error(e) if e.starts_with("ERR problem inserting into filter") => {}
                        _ => fail("BF.MADD", &r[4]),
                    }
                }
                if v.len() < PROBES && !matches!(v.last(), Some(Resp::Error(_))) {
                    fail("BF.MADD reply too short", &r[4]);
                }
            }
            _ => fail("BF.MADD", &r[4]),
        }
        if !matches!(decode(&r[6]), Resp::Int(0 | 1)) {
            fail("BF.EXISTS", &r[6]);
        }
        if !before.is_empty() {
            if r[7] != OK {
                fail("RESTORE of its DUMP", &r[7]);
            } else if !matches!(decode(&r[8]), Resp::Bulk(p) if p == *before) {
                fail("DUMP of the restored copy differs", &r[8]);
            }
        }
        match decode(&r[9]) {
            Resp::Bulk(p) => match load_payload(&p) {
                Ok(_) => {
                    if kept.len() < KEEP_FOR_RELOAD {
                        kept.push((key.clone(), p));
                    }
                }
                Err(e) => fail(&format!("its DUMP does not load ({e:?})"), &p),
            },
            _ => fail("DUMP after adds", &r[9]),
        }
    }

    // 4. Clean up (kept keys stay for DEBUG RELOAD).
    let kept_keys: std::collections::HashSet<&str> = kept.iter().map(|(k, _)| k.as_str()).collect();
    let mut del = vec![b"DEL".to_vec()];
    for key in &keys {
        del.push(format!("{key}:rt").into_bytes());
        del.push(format!("{key}:cp").into_bytes());
        if !kept_keys.contains(key.as_str()) {
            del.push(key.as_bytes().to_vec());
        }
    }
    raw.cmd(&del);
}

// ---------------------------------------------------------------------------
// The test
// ---------------------------------------------------------------------------

fn run_batch(
    raw: &mut RawClient,
    sent: Vec<Sent>,
    fuzzer: &mut Fuzzer,
    stats: &mut Stats,
    problems: &mut Problems,
    kept: &mut Vec<(String, Vec<u8>)>,
) {
    let commands: Vec<&Vec<Vec<u8>>> = sent.iter().map(|s| &s.command).collect();
    let replies = raw.pipeline(&commands);
    let mut created = Vec::new();
    for (s, reply) in sent.into_iter().zip(replies) {
        stats.sent += 1;
        if s.kind.mutated() {
            stats.mutated += 1;
        }
        *stats.per_kind.entry(s.kind).or_default() += 1;
        *stats
            .replies
            .entry((s.kind, reply_label(&reply)))
            .or_default() += 1;
        if !s.expect.matches(&reply) {
            problems.add(
                &format!("{:?}: reply differs from the model", s.kind),
                format!(
                    "{} -> {} (expected {:?})",
                    describe(&s.command),
                    show(&reply),
                    s.expect
                ),
            );
        }
        if let Some((key, predicted)) = s.restored {
            if reply == OK {
                stats.created_by_restore += 1;
                created.push(Created {
                    key,
                    model: predicted,
                });
            }
        }
    }
    for (key, chain) in fuzzer.model.chains.drain() {
        stats.created_by_loadchunk += 1;
        created.push(Created {
            key,
            model: Some(chain),
        });
    }
    check_created(raw, created, kept, problems, stats);
}

#[test]
fn mutated_loadchunk_and_restore_never_hurt_the_server() {
    let started = Instant::now();
    let seed = std::env::var("LIVE_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .expect("clock")
                .as_nanos() as u64
        });
    println!("live_fuzz: seed {seed} (LIVE_FUZZ_SEED={seed} repeats this run)");

    let cap = FILTER_CAP.to_string();
    let mut server = Server::start(
        ServerOpts::new(ModuleKind::FerroBloom).module_args(&["max-filter-bytes", &cap]),
    );
    let mut raw = server.raw();
    let legacy = legacy_payloads();
    let sentinels = create_sentinels(&mut raw, &legacy);
    let (streams, payloads) = collect_seeds(&mut raw, &legacy);
    let payloads = payloads
        .into_iter()
        .map(|(name, p)| {
            let (id, fields) = parse_payload(&p);
            assert_eq!(id & !0x3ff, module_type_id(b"MBbloom--", 0).expect("id"));
            (name, id, fields, p)
        })
        .collect();
    let mut fuzzer = Fuzzer {
        rng: StdRng::seed_from_u64(seed),
        model: Model::default(),
        next_key: 0,
        streams,
        payloads,
        sentinel_keys: sentinels.iter().map(|s| s.key.clone()).collect(),
        lenient: 0,
    };

    let mut stats = Stats::default();
    let mut problems = Problems::default();
    let mut kept: Vec<(String, Vec<u8>)> = Vec::new();
    let mut loadchunk_left = LOADCHUNK_CASES;
    let mut restore_left = RESTORE_CASES;
    while loadchunk_left + restore_left > 0 {
        let mut sent = Vec::new();
        let n = CASES_PER_BATCH.min(loadchunk_left);
        for _ in 0..n {
            fuzzer.loadchunk_case(&mut sent);
        }
        loadchunk_left -= n;
        let n = CASES_PER_BATCH.min(restore_left);
        for _ in 0..n {
            fuzzer.restore_case(&mut sent);
        }
        restore_left -= n;
        run_batch(
            &mut raw,
            sent,
            &mut fuzzer,
            &mut stats,
            &mut problems,
            &mut kept,
        );
        assert!(server.is_running(), "redis-server died:\n{}", server.log());
    }
    let fuzzed = started.elapsed();

    // DEBUG RELOAD: every kept key, sentinel and seed survives it.
    assert_eq!(
        show(&raw.cmd(&["DEBUG", "RELOAD"])),
        "+OK\\r\\n",
        "DEBUG RELOAD with {} fuzzed keys",
        kept.len()
    );
    for (key, before) in &kept {
        let after = raw.cmd(&["DUMP", key]);
        if !matches!(decode(&after), Resp::Bulk(p) if p == *before) {
            problems.add("DEBUG RELOAD changed a fuzzed key", key.clone());
        }
    }

    // The server is fine and the sentinels answer as before.
    assert!(server.is_running(), "redis-server died:\n{}", server.log());
    assert_eq!(raw.cmd(&["PING"]), b"+PONG\r\n");
    for s in &sentinels {
        let now = Sentinel::answers(&mut raw, &s.key, &s.items);
        assert!(
            now == s.answers,
            "sentinel {} answers differently now",
            s.key
        );
    }
    assert_eq!(raw.cmd(&["GET", "sentinel:string"]), b"$1\r\nv\r\n");
    let log = server.log();
    for bad in [
        "panicked",
        "internal error",
        "Guru Meditation",
        "GURU MEDITATION",
    ] {
        let lines: Vec<&str> = log.lines().filter(|l| l.contains(bad)).take(5).collect();
        assert!(
            lines.is_empty(),
            "{bad:?} in the server log:\n{}",
            lines.join("\n")
        );
    }

    // Summary.
    println!(
        "live_fuzz: {} commands, {} mutated, in {:.1} s (+ checks, reload: {:.1} s total)",
        stats.sent,
        stats.mutated,
        fuzzed.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    println!(
        "live_fuzz: keys created by LOADCHUNK {}, by RESTORE {} ({} byte-mutated payloads that \
         only load because Redis reads 0xC0-0xFF lengths or ignores bytes after EOF); \
         {} keys checked, {} through DEBUG RELOAD",
        stats.created_by_loadchunk,
        stats.created_by_restore,
        fuzzer.lenient,
        stats.checked_keys,
        kept.len()
    );
    for (kind, n) in &stats.per_kind {
        println!("  {kind:?}: {n}");
    }
    println!("live_fuzz: replies");
    for ((kind, reply), n) in &stats.replies {
        println!("  {n:>7}  {kind:?}  {reply}");
    }
    let mut by_reply: BTreeMap<&str, usize> = BTreeMap::new();
    for ((_, reply), n) in &stats.replies {
        *by_reply.entry(reply.as_str()).or_default() += n;
    }
    println!("live_fuzz: replies, all commands");
    for (reply, n) in &by_reply {
        println!("  {n:>7}  {reply}");
    }

    // Only the documented replies.
    let allowed = [
        OK,
        BAD_DATA,
        NO_LINK,
        TOO_BIG,
        NOT_FOUND,
        NOT_NUMERIC,
        WRONGTYPE,
        BAD_FORMAT,
        BAD_CHECKSUM,
        BUSYKEY,
    ];
    for reply in by_reply.keys() {
        let wire = format!("{reply}\r\n");
        assert!(
            allowed.contains(&wire.as_bytes())
                || reply.starts_with(COULD_NOT_CREATE)
                || reply.starts_with(INSUFFICIENT)
                || reply.starts_with(HEADER_REFUSED),
            "unexpected reply {reply:?}"
        );
    }
    assert!(
        stats.mutated >= MIN_MUTATED,
        "only {} mutated commands",
        stats.mutated
    );
    assert!(
        problems.is_empty(),
        "live_fuzz seed {seed} found problems:\n{}",
        problems.report()
    );
}

// ---------------------------------------------------------------------------
// Minimal reproductions of what the fuzzer finds
// ---------------------------------------------------------------------------

/// Encoding-4 fields of `BF.RESERVE d 0.1 5` + `BF.MADD d a b` (one 8-byte
/// link), with `change` applied.
fn tiny_fields(change: impl FnOnce(&mut Vec<Field>)) -> Vec<Field> {
    use Field::{D, S, U};
    let mut fields = vec![
        U(2),                                                    // chain items
        U(1),                                                    // nfilters
        U(5),                                                    // options
        U(2),                                                    // growth
        U(5),                                                    // entries
        D(0.05),                                                 // error
        U(5),                                                    // hashes
        D(6.2352242295726885),                                   // bpe
        U(64),                                                   // bits
        U(0),                                                    // n2
        S(vec![0x00, 0x44, 0x20, 0x8c, 0x10, 0x12, 0x00, 0x20]), // bit array
        U(2),                                                    // link items
    ];
    change(&mut fields);
    fields
}

/// RESTOREs `payload` as `key` (must succeed), then copies it with its own
/// SCANDUMP stream through LOADCHUNK, as an AOF rewrite without preamble
/// and a migration do. Returns the LOADCHUNK replies.
fn restore_then_copy_by_chunks(raw: &mut RawClient, key: &str, payload: &[u8]) -> Vec<Vec<u8>> {
    let reply = raw.cmd(&[b"RESTORE".as_slice(), key.as_bytes(), b"0", payload]);
    assert_eq!(show(&reply), "+OK\\r\\n", "RESTORE {key}");
    let copy = format!("{key}:copy");
    scandump(raw, key)
        .into_iter()
        .map(|(iter, data)| {
            raw.cmd(&[
                b"BF.LOADCHUNK".as_slice(),
                copy.as_bytes(),
                iter.to_string().as_bytes(),
                &data,
            ])
        })
        .collect()
}

/// Growth 0 is accepted by the RDB loader (2.8.2 writes it after
/// `EXPANSION 4294967296`, vector `rdb_dead_link`), but the SCANDUMP header
/// FerroBloom then exports is refused by its own LOADCHUNK: an AOF rewrite
/// without preamble silently loses such a key.
#[test]
fn restored_filter_with_growth_0_exports_a_loadable_stream() {
    let server = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let mut raw = server.raw();
    let payload = build_payload(
        module_type_id(b"MBbloom--", 4).expect("id"),
        &tiny_fields(|f| f[3] = Field::U(0)),
    );
    let replies = restore_then_copy_by_chunks(&mut raw, "g0", &payload);
    let shown: Vec<String> = replies.iter().map(|r| show(r)).collect();
    assert!(
        replies.iter().all(|r| r == OK),
        "LOADCHUNK of its own stream: {shown:?}"
    );
}

/// A bit array larger than the stored bits need (bits 64 with 16 bytes,
/// or bits 2 with n2 = 5) is accepted by the RDB loader, but the SCANDUMP
/// header FerroBloom then exports is refused by its own LOADCHUNK.
#[test]
fn restored_filter_with_unusual_bits_exports_a_loadable_stream() {
    let server = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let mut raw = server.raw();
    let id = module_type_id(b"MBbloom--", 4).expect("id");
    let shapes = [
        (
            "bits 64, 16-byte array",
            tiny_fields(|f| {
                if let Field::S(s) = &mut f[10] {
                    s.extend_from_slice(&[0; 8]);
                }
            }),
        ),
        (
            "bits 2, n2 5, 8-byte array",
            tiny_fields(|f| {
                f[8] = Field::U(2);
                f[9] = Field::U(5);
            }),
        ),
    ];
    let mut failures = Vec::new();
    for (i, (name, fields)) in shapes.iter().enumerate() {
        let replies =
            restore_then_copy_by_chunks(&mut raw, &format!("shape{i}"), &build_payload(id, fields));
        if replies.iter().any(|r| r != OK) {
            failures.push(format!(
                "{name}: {:?}",
                replies.iter().map(|r| show(r)).collect::<Vec<_>>()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "LOADCHUNK of its own stream:\n{}",
        failures.join("\n")
    );
}

/// A LOADCHUNK header may carry item counts near 2^64 (2.8.2 accepts them
/// too); the next add wraps the chain's count, and the DUMP / RDB value
/// FerroBloom then writes is refused by its own loader ("item counts do not
/// add up"): RESTORE fails, and a restart from that RDB would fail.
#[test]
fn item_counts_near_2_64_keep_the_dump_loadable() {
    let server = Server::start(ServerOpts::new(ModuleKind::FerroBloom));
    let mut raw = server.raw();
    assert_eq!(raw.cmd(&["BF.RESERVE", "src", "0.1", "5"]), OK);
    let mut h = HeaderFields::parse(&scandump(&mut raw, "src")[0].1);
    h.items = u64::MAX;
    h.links[0].items = u64::MAX;
    assert_eq!(
        raw.cmd(&[b"BF.LOADCHUNK".as_slice(), b"k", b"1", &h.encode()]),
        OK
    );
    // The link counts as full: this add scales out and wraps the count.
    assert_eq!(raw.cmd(&["BF.ADD", "k", "x"]), b":1\r\n");
    let payload = dump(&mut raw, "k");
    let reply = raw.cmd(&[b"RESTORE".as_slice(), b"k2", b"0", &payload]);
    assert_eq!(
        show(&reply),
        "+OK\\r\\n",
        "RESTORE of the DUMP of k (BF.DEBUG {})",
        show(&raw.cmd(&["BF.DEBUG", "k"]))
    );
}

/// Whether BF.STATS says `key` still waits for LOADCHUNK data.
fn stats_loading(raw: &mut RawClient, key: &str) -> bool {
    let Resp::Array(items) = decode(&raw.cmd(&[b"BF.STATS".as_slice(), key.as_bytes()])) else {
        return false;
    };
    items
        .chunks(2)
        .any(|f| f[0].as_str().as_deref() == Some("loading") && f[1] == Resp::Int(1))
}
