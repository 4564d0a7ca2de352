//! Every legacy RDB encoding RedisBloom ever wrote (encoding versions 0 to
//! 4, spec §6.3), loaded by FerroBloom exactly as RedisBloom 2.8.2 loads it.
//!
//! The filters come from the spec's vectors (`tests/data/legacy_rdb.json`,
//! `rdb_legacy_restore`) and are also built here, field by field with
//! `DumpWriter`, in every shape old releases produced: 32-bit MurmurHash2
//! filters (options without FORCE64), power-of-two links stored with
//! `bits = 0` and the modulus in `n2`, power-of-two links with the bits
//! stored, unrounded encoding-0 links, non-scaling and growth-1/3 chains.
//! Each is RESTOREd into both FerroBloom and RedisBloom 2.8.2; BF.DEBUG and
//! lookups must agree, then the same new items (enough to force scale-outs,
//! in power-of-two mode where the options lack NOROUND) must give the same
//! replies, BF.DEBUG, BF.INFO, DUMP bytes and SCANDUMP streams.
//!
//! FerroBloom also keeps them through DEBUG RELOAD, a SCANDUMP → LOADCHUNK
//! copy and an AOF rewrite without RDB preamble (`BF.LOADCHUNK` commands)
//! followed by a restart — which RedisBloom 2.8.2 cannot do for `bits = 0`
//! and encoding-0 links, whose SCANDUMP header its own LOADCHUNK refuses
//! (spec §7.1; asserted below). Filters FerroBloom makes with `POLICY pow2`
//! use the pre-2.2 layout, and RedisBloom reads and extends them the same.

mod common;

use std::fs;
use std::time::Duration;

use common::client::{ferrobloom, show};
use common::replication::rewrite_aof;
use common::{decode, ModuleKind, RawClient, Resp, Server, ServerOpts};
use ferrobloom_core::bloom::sizing::{bits_per_entry, hash_count};
use ferrobloom_core::dump_format::{crc64_jones, module_type_id, DumpWriter, RDB_VERSION_7_0};
use ferrobloom_core::hash::{murmur2, murmur64a};
use ferrobloom_core::rdb_io::RdbOutput;
use ferrobloom_core::{LinkSpec, Policy};

const OK: &[u8] = b"+OK\r\n";

fn redisbloom() -> ServerOpts {
    ServerOpts::new(ModuleKind::RedisBloom)
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
        .collect()
}

fn numbered(prefix: &str, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| format!("{prefix}{i}").into_bytes())
        .collect()
}

fn command(name: &str, key: &str, rest: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut cmd = vec![name.as_bytes().to_vec(), key.as_bytes().to_vec()];
    cmd.extend(rest.iter().cloned());
    cmd
}

fn dump(raw: &mut RawClient, key: &str) -> Vec<u8> {
    match decode(&raw.cmd(&["DUMP", key])) {
        Resp::Bulk(payload) => payload,
        other => panic!("DUMP {key}: {other:?}"),
    }
}

fn scandump_all(raw: &mut RawClient, key: &str) -> Vec<(i64, Vec<u8>)> {
    let mut chunks = Vec::new();
    let mut iter = 0i64;
    loop {
        let reply = raw.cmd(&["BF.SCANDUMP", key, &iter.to_string()]);
        let Resp::Array(items) = decode(&reply) else {
            panic!("BF.SCANDUMP {key} {iter}: {}", show(&reply))
        };
        let (Resp::Int(next), Resp::Bulk(data)) = (&items[0], &items[1]) else {
            panic!("BF.SCANDUMP {key} {iter}: {}", show(&reply))
        };
        if *next == 0 {
            return chunks;
        }
        chunks.push((*next, data.clone()));
        iter = *next;
    }
}

fn debug_lines(raw: &mut RawClient, key: &str) -> Vec<String> {
    match decode(&raw.cmd(&["BF.DEBUG", key])) {
        Resp::Array(lines) => lines
            .iter()
            .map(|l| l.as_str().expect("BF.DEBUG line"))
            .collect(),
        other => panic!("BF.DEBUG {key}: {other:?}"),
    }
}

/// What a filter looks like to clients.
#[derive(Debug, PartialEq)]
struct Snapshot {
    debug: Vec<u8>,
    info: Vec<u8>,
    card: Vec<u8>,
    dump: Vec<u8>,
    scandump: Vec<(i64, Vec<u8>)>,
}

fn snapshot(raw: &mut RawClient, key: &str) -> Snapshot {
    Snapshot {
        debug: raw.cmd(&["BF.DEBUG", key]),
        info: raw.cmd(&["BF.INFO", key]),
        card: raw.cmd(&["BF.CARD", key]),
        dump: dump(raw, key),
        scandump: scandump_all(raw, key),
    }
}

/// Two DUMP payloads hold the same value: byte for byte when both servers
/// write the same RDB version, else all but the trailer (RDB version and
/// CRC), which is the server's (the suite may run FerroBloom on a newer
/// server than the oracle's Redis 7.0).
fn same_payload(a: &[u8], b: &[u8]) -> bool {
    if a.len() < 10 || b.len() < 10 {
        return a == b;
    }
    let (a_body, a_trailer) = a.split_at(a.len() - 10);
    let (b_body, b_trailer) = b.split_at(b.len() - 10);
    if a_trailer[..2] == b_trailer[..2] {
        a == b
    } else {
        a_body == b_body
    }
}

/// A payload with Redis 7.0's trailer (where the oracle runs); the value
/// inside does not depend on the server's RDB version.
fn with_redis70_trailer(payload: &[u8]) -> Vec<u8> {
    let mut out = payload[..payload.len() - 10].to_vec();
    out.extend_from_slice(&RDB_VERSION_7_0.to_le_bytes());
    let crc = crc64_jones(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

#[track_caller]
fn assert_same(got: &Snapshot, want: &Snapshot, context: &str) {
    assert_eq!(show(&got.debug), show(&want.debug), "{context}: BF.DEBUG");
    assert_eq!(show(&got.info), show(&want.info), "{context}: BF.INFO");
    assert_eq!(show(&got.card), show(&want.card), "{context}: BF.CARD");
    assert!(
        same_payload(&got.dump, &want.dump),
        "{context}: DUMP bytes differ"
    );
    assert_eq!(
        got.scandump.len(),
        want.scandump.len(),
        "{context}: SCANDUMP chunk count"
    );
    for (i, (g, w)) in got.scandump.iter().zip(&want.scandump).enumerate() {
        assert!(g == w, "{context}: SCANDUMP chunk {i} differs");
    }
    assert!(
        !got.debug.starts_with(b"-"),
        "{context}: {}",
        show(&got.debug)
    );
}

/// Every item answers 1.
#[track_caller]
fn assert_present(raw: &mut RawClient, key: &str, items: &[Vec<u8>], context: &str) {
    let reply = raw.cmd(&command("BF.MEXISTS", key, items));
    let mut want = format!("*{}\r\n", items.len()).into_bytes();
    for _ in items {
        want.extend_from_slice(b":1\r\n");
    }
    assert_eq!(show(&reply), show(&want), "{context}: BF.MEXISTS {key}");
}

// ---------------------------------------------------------------------------
// Building legacy payloads field by field
// ---------------------------------------------------------------------------

/// How an old release sized a link.
#[derive(Clone, Copy, Debug)]
enum Sizing {
    /// Encoding 0 (and v2.2.0-v2.2.4): bits = trunc(entries x bpe), unrounded;
    /// the array holds ceil(bits / 8) bytes.
    Unrounded,
    /// Before v2.2: a power-of-two modulus 2^n2 and inflated capacity; the
    /// bits field stored as 0 (`store_bits: false`) or as bytes x 8.
    Pow2 { store_bits: bool },
    /// v2.2.5 and later: bits rounded up to whole 64-bit words.
    Exact,
}

#[derive(Clone, Debug)]
struct LegacyLink {
    entries: u64,
    error: f64,
    bpe: f64,
    hashes: u32,
    /// As stored.
    bits: u64,
    n2: u8,
    data: Vec<u8>,
    items: u64,
}

impl LegacyLink {
    fn new(entries: u64, error: f64, sizing: Sizing) -> LegacyLink {
        match sizing {
            Sizing::Unrounded => {
                let bpe = bits_per_entry(error);
                let bits = (entries as f64 * bpe) as u64;
                LegacyLink {
                    entries,
                    error,
                    bpe,
                    hashes: hash_count(bpe),
                    bits,
                    n2: 0,
                    data: vec![0; bits.div_ceil(8) as usize],
                    items: 0,
                }
            }
            Sizing::Pow2 { store_bits } => {
                let s = LinkSpec::new(entries, error, Policy::Pow2).expect("pow2 link");
                LegacyLink {
                    entries: s.entries,
                    error,
                    bpe: s.bpe,
                    hashes: s.hashes,
                    bits: if store_bits { s.bits } else { 0 },
                    n2: s.n2,
                    data: vec![0; s.bytes as usize],
                    items: 0,
                }
            }
            Sizing::Exact => {
                let s = LinkSpec::new(entries, error, Policy::Exact).expect("exact link");
                LegacyLink {
                    entries,
                    error,
                    bpe: s.bpe,
                    hashes: s.hashes,
                    bits: s.bits,
                    n2: 0,
                    data: vec![0; s.bytes as usize],
                    items: 0,
                }
            }
        }
    }

    /// Spec §4.3: 2^n2 when n2 > 0, else the stored bits.
    fn modulus(&self) -> u64 {
        if self.n2 > 0 {
            1 << self.n2
        } else {
            self.bits
        }
    }

    fn positions(&self, (a, b): (u64, u64)) -> Vec<u64> {
        (0..u64::from(self.hashes))
            .map(|i| a.wrapping_add(i.wrapping_mul(b)) % self.modulus())
            .collect()
    }

    fn contains(&self, h: (u64, u64)) -> bool {
        self.positions(h)
            .iter()
            .all(|&x| self.data[(x >> 3) as usize] & (1 << (x & 7)) != 0)
    }

    /// Sets the item's bits; true if one of them was 0.
    fn insert(&mut self, h: (u64, u64)) -> bool {
        let mut changed = false;
        for x in self.positions(h) {
            let byte = &mut self.data[(x >> 3) as usize];
            changed |= *byte & (1 << (x & 7)) == 0;
            *byte |= 1 << (x & 7);
        }
        changed
    }
}

/// A chain as an old release saved it.
#[derive(Clone, Debug)]
struct LegacyFilter {
    name: String,
    encver: u16,
    options: u32,
    growth: u32,
    links: Vec<LegacyLink>,
    /// Every item given to the chain (all answer 1).
    items: Vec<Vec<u8>>,
}

impl LegacyFilter {
    fn new(name: &str, encver: u16, options: u32, growth: u32) -> LegacyFilter {
        LegacyFilter {
            name: name.to_string(),
            encver,
            options,
            growth,
            links: Vec::new(),
            items: Vec::new(),
        }
    }

    /// Spec §4.1-4.2: MurmurHash64A with FORCE64, else MurmurHash2
    /// zero-extended.
    fn hash(&self, item: &[u8]) -> (u64, u64) {
        if self.options & 4 != 0 {
            let a = murmur64a(item, 0xc6a4_a793_5bd1_e995);
            (a, murmur64a(item, a))
        } else {
            let a = murmur2(item, 0x9747_b28c);
            (u64::from(a), u64::from(murmur2(item, a)))
        }
    }

    /// Appends a link and adds new items to it the way RedisBloom adds
    /// (an item some link already holds is skipped), until the link's count
    /// is `free` short of its (stored) capacity.
    fn link(mut self, entries: u64, error: f64, sizing: Sizing, free: u64) -> Self {
        self.links.push(LegacyLink::new(entries, error, sizing));
        let newest = self.links.len() - 1;
        let target = self.links[newest].entries.saturating_sub(free);
        let mut n = 0;
        while self.links[newest].items < target {
            let item = format!("{}-{newest}-{n}", self.name).into_bytes();
            n += 1;
            let h = self.hash(&item);
            self.items.push(item);
            if self.links.iter().any(|l| l.contains(h)) {
                continue;
            }
            if self.links[newest].insert(h) {
                self.links[newest].items += 1;
            }
        }
        self
    }

    fn payload(&self) -> Vec<u8> {
        let id = module_type_id(b"MBbloom--", self.encver).expect("type id");
        let mut w = DumpWriter::new(id);
        w.write_unsigned(self.links.iter().map(|l| l.items).sum());
        w.write_unsigned(self.links.len() as u64);
        if self.encver >= 2 {
            w.write_unsigned(u64::from(self.options));
        }
        if self.encver >= 4 {
            w.write_unsigned(u64::from(self.growth));
        }
        for l in &self.links {
            w.write_unsigned(l.entries);
            w.write_double(l.error);
            w.write_unsigned(u64::from(l.hashes));
            w.write_double(l.bpe);
            if self.encver >= 1 {
                w.write_unsigned(l.bits);
                w.write_unsigned(u64::from(l.n2));
            }
            w.write_bytes(&l.data);
            w.write_unsigned(l.items);
        }
        w.finish(RDB_VERSION_7_0)
    }

    /// Whether RedisBloom 2.8.2's LOADCHUNK takes this chain's SCANDUMP
    /// header (spec §5.3): bits != 0, bits == bytes x 8, 2^n2 <= bits.
    fn redisbloom_can_loadchunk(&self) -> bool {
        self.links.iter().all(|l| {
            l.bits != 0 && l.bits == l.data.len() as u64 * 8 && (l.n2 == 0 || 1 << l.n2 <= l.bits)
        })
    }
}

/// One legacy case: its payload, the items it holds, and (for the spec's
/// vectors) the BF.DEBUG lines 2.8.2 showed.
struct Case {
    name: String,
    payload: Vec<u8>,
    items: Vec<Vec<u8>>,
    loadchunk_in_redisbloom: bool,
    debug_after_restore: Option<Vec<String>>,
    debug_after_x0_x39: Option<Vec<String>>,
}

fn legacy_json() -> serde_json::Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/legacy_rdb.json");
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).expect("legacy_rdb.json")
}

fn strings(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|s| s.as_str().expect("string").to_string())
        .collect()
}

/// The vectors' filters (a, b, c in one link of capacity 3, error 0.01),
/// rebuilt field by field: the builder must reproduce them byte for byte.
fn vector_rebuilds() -> Vec<LegacyFilter> {
    let abc = |f: LegacyFilter, sizing: Sizing| {
        let mut f = f;
        f.links.push(LegacyLink::new(3, 0.01, sizing));
        for item in [b"a", b"b", b"c"] {
            let h = f.hash(item);
            assert!(f.links[0].insert(h));
            f.links[0].items += 1;
            f.items.push(item.to_vec());
        }
        f
    };
    vec![
        abc(LegacyFilter::new("v0", 0, 0, 2), Sizing::Unrounded),
        abc(
            LegacyFilter::new("v1", 1, 0, 2),
            Sizing::Pow2 { store_bits: false },
        ),
        abc(
            LegacyFilter::new("v2", 2, 4, 2),
            Sizing::Pow2 { store_bits: false },
        ),
        abc(
            LegacyFilter::new("v3", 3, 4, 2),
            Sizing::Pow2 { store_bits: true },
        ),
        abc(LegacyFilter::new("v3m", 3, 5, 2), Sizing::Exact),
        abc(LegacyFilter::new("v4", 4, 5, 2), Sizing::Exact),
    ]
}

/// Multi-link legacy chains in every shape old releases wrote. Older links
/// are full; the newest has a few free places, so that the new items of the
/// tests force scale-outs (non-scaling ones fill up instead).
fn built_filters() -> Vec<LegacyFilter> {
    let bits0 = Sizing::Pow2 { store_bits: false };
    let bits_set = Sizing::Pow2 { store_bits: true };
    // A new link is asked for the previous link's stored (for power-of-two
    // links, inflated) capacity times the growth.
    let next = |f: &LegacyFilter| f.links.last().expect("a link").entries * u64::from(f.growth);
    let mut out = Vec::new();

    out.push(
        LegacyFilter::new("enc0-unrounded-32bit", 0, 0, 2)
            .link(50, 0.005, Sizing::Unrounded, 0)
            .link(100, 0.0025, Sizing::Unrounded, 5),
    );

    let f = LegacyFilter::new("enc1-pow2-bits0-32bit", 1, 0, 2).link(100, 0.005, bits0, 0);
    let n = next(&f);
    out.push(f.link(n, 0.0025, bits0, 4));

    let f = LegacyFilter::new("enc2-pow2-bits0-64bit", 2, 4, 2).link(20, 0.005, bits0, 0);
    let n = next(&f);
    let f = f.link(n, 0.0025, bits0, 0);
    let n = next(&f);
    out.push(f.link(n, 0.00125, bits0, 3));

    out.push(
        LegacyFilter::new("enc2-pow2-bits0-nonscaling-32bit", 2, 8, 2).link(60, 0.01, bits0, 20),
    );

    let f = LegacyFilter::new("enc3-pow2-bits-set-32bit", 3, 0, 2).link(30, 0.005, bits_set, 0);
    let n = next(&f);
    out.push(f.link(n, 0.0025, bits_set, 2));

    out.push(
        LegacyFilter::new("enc3-exact-32bit", 3, 1, 2)
            .link(25, 0.005, Sizing::Exact, 0)
            .link(50, 0.0025, Sizing::Exact, 4),
    );

    let f = LegacyFilter::new("enc4-pow2-bits0-32bit-growth3", 4, 0, 3).link(20, 0.005, bits0, 0);
    let n = next(&f);
    out.push(f.link(n, 0.0025, bits0, 5));

    out.push(
        LegacyFilter::new("enc4-exact-32bit-growth1", 4, 1, 1)
            .link(16, 0.005, Sizing::Exact, 0)
            .link(16, 0.0025, Sizing::Exact, 0)
            .link(16, 0.00125, Sizing::Exact, 2),
    );

    out.push(
        LegacyFilter::new("enc4-pow2-bits0-nonscaling-64bit", 4, 12, 2).link(64, 0.01, bits0, 24),
    );

    out.push(LegacyFilter::new("enc4-unrounded-64bit", 4, 5, 2).link(
        100,
        0.005,
        Sizing::Unrounded,
        5,
    ));

    let f = LegacyFilter::new("enc4-pow2-bits0-64bit", 4, 4, 2).link(40, 0.005, bits0, 0);
    let n = next(&f);
    out.push(f.link(n, 0.0025, bits0, 1));
    out
}

/// The spec's vectors plus the built chains.
fn cases() -> Vec<Case> {
    let json = legacy_json();
    let vectors = json["rdb_legacy_restore"]["vectors"]
        .as_array()
        .expect("vectors");
    let rebuilds = vector_rebuilds();
    assert_eq!(vectors.len(), rebuilds.len());
    let mut cases = Vec::new();
    for (v, rebuilt) in vectors.iter().zip(&rebuilds) {
        let payload = unhex(v["payload_hex"].as_str().expect("payload_hex"));
        assert_eq!(
            v["encver"].as_u64(),
            Some(u64::from(rebuilt.encver)),
            "{}",
            rebuilt.name
        );
        assert!(
            rebuilt.payload() == payload,
            "{}: built {} vs vector {}",
            rebuilt.name,
            show(&rebuilt.payload()),
            show(&payload)
        );
        cases.push(Case {
            name: format!("vector-{}", rebuilt.name),
            payload,
            items: rebuilt.items.clone(),
            loadchunk_in_redisbloom: rebuilt.redisbloom_can_loadchunk(),
            debug_after_restore: Some(strings(&v["bf_debug_after_restore"])),
            debug_after_x0_x39: Some(strings(&v["bf_debug_after_adding_x0_to_x39"])),
        });
    }
    for f in built_filters() {
        cases.push(Case {
            name: f.name.clone(),
            payload: f.payload(),
            items: f.items.clone(),
            loadchunk_in_redisbloom: f.redisbloom_can_loadchunk(),
            debug_after_restore: None,
            debug_after_x0_x39: None,
        });
    }
    cases
}

/// The new items every case gets: x0..x39 in one BF.MADD, then y0..y11 one
/// BF.ADD at a time.
fn new_items() -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    (numbered("x", 40), numbered("y", 12))
}

// ---------------------------------------------------------------------------
// FerroBloom and RedisBloom 2.8.2 side by side
// ---------------------------------------------------------------------------

#[test]
fn legacy_encodings_restore_and_grow_like_redisbloom() {
    let ferro = Server::start(ferrobloom());
    let oracle = Server::start(redisbloom());
    let mut f = ferro.raw();
    let mut o = oracle.raw();
    let (x, y) = new_items();
    let cases = cases();
    assert!(cases.len() >= 16);
    let mut scaled = 0;
    for case in &cases {
        let key = format!("lg:{}", case.name);
        let ctx = case.name.as_str();
        for raw in [&mut f, &mut o] {
            let reply = raw.cmd(&[b"RESTORE".as_slice(), key.as_bytes(), b"0", &case.payload]);
            assert_eq!(show(&reply), "+OK\\r\\n", "{ctx}: RESTORE");
        }

        // As restored.
        let debug = debug_lines(&mut f, &key);
        assert_eq!(
            debug,
            debug_lines(&mut o, &key),
            "{ctx}: BF.DEBUG after RESTORE"
        );
        if let Some(want) = &case.debug_after_restore {
            assert_eq!(&debug, want, "{ctx}: BF.DEBUG vs the vector");
        }
        assert_present(&mut f, &key, &case.items, ctx);
        let mut probe = case.items.clone();
        probe.extend(numbered("absent", 20));
        let probe_cmd = command("BF.MEXISTS", &key, &probe);
        assert_eq!(
            show(&f.cmd(&probe_cmd)),
            show(&o.cmd(&probe_cmd)),
            "{ctx}: BF.MEXISTS after RESTORE"
        );
        assert_same(&snapshot(&mut f, &key), &snapshot(&mut o, &key), ctx);

        // The same new items: replies, then the whole filter, agree.
        let links_before = debug.len();
        let madd = command("BF.MADD", &key, &x);
        assert_eq!(
            show(&f.cmd(&madd)),
            show(&o.cmd(&madd)),
            "{ctx}: BF.MADD x0..x39"
        );
        if let Some(want) = &case.debug_after_x0_x39 {
            assert_eq!(
                &debug_lines(&mut f, &key),
                want,
                "{ctx}: BF.DEBUG vs the vector"
            );
        }
        for item in &y {
            let add = command("BF.ADD", &key, std::slice::from_ref(item));
            assert_eq!(show(&f.cmd(&add)), show(&o.cmd(&add)), "{ctx}: BF.ADD");
        }
        let after = snapshot(&mut f, &key);
        let theirs = snapshot(&mut o, &key);
        assert_same(&after, &theirs, &format!("{ctx} after adds"));
        // RedisBloom's SCANDUMP stream (its AOF rewrite without preamble)
        // loads in FerroBloom, even where RedisBloom's own LOADCHUNK
        // refuses it (bits-0 and unrounded links).
        let copy = format!("{key}:from-redisbloom");
        for (iter, data) in &theirs.scandump {
            let reply = f.cmd(&[
                b"BF.LOADCHUNK".as_slice(),
                copy.as_bytes(),
                iter.to_string().as_bytes(),
                data,
            ]);
            assert_eq!(
                show(&reply),
                "+OK\\r\\n",
                "{ctx}: RedisBloom's chunk {iter} into FerroBloom"
            );
        }
        assert!(
            dump(&mut f, &copy) == after.dump,
            "{ctx}: RedisBloom's stream makes another filter"
        );
        let mut all = probe.clone();
        all.extend(x.iter().cloned());
        all.extend(y.iter().cloned());
        let all_cmd = command("BF.MEXISTS", &key, &all);
        assert_eq!(
            show(&f.cmd(&all_cmd)),
            show(&o.cmd(&all_cmd)),
            "{ctx}: BF.MEXISTS after adds"
        );
        assert_present(&mut f, &key, &case.items, ctx);
        if debug_lines(&mut f, &key).len() > links_before {
            scaled += 1;
        }
    }
    // All but the two non-scaling cases scaled out.
    assert_eq!(scaled, cases.len() - 2, "cases that scaled out");
    assert!(!ferro.log().contains("panicked"));
}

/// Filters FerroBloom makes with `POLICY pow2` are RedisBloom's pre-2.2
/// layout (options 4 or 12, power-of-two links): RedisBloom loads them by
/// DUMP/RESTORE and by SCANDUMP/LOADCHUNK, and extends them identically.
#[test]
fn pow2_filters_made_by_ferrobloom_move_to_redisbloom() {
    let ferro = Server::start(ferrobloom());
    let oracle = Server::start(redisbloom());
    let mut f = ferro.raw();
    let mut o = oracle.raw();
    let setups = [
        (
            "p:scaling",
            "BF.RESERVE p:scaling 0.01 100 POLICY pow2",
            150,
        ),
        (
            "p:growth3",
            "BF.RESERVE p:growth3 0.001 20 EXPANSION 3 POLICY pow2",
            100,
        ),
        (
            "p:nonscaling",
            "BF.RESERVE p:nonscaling 0.01 50 NONSCALING POLICY pow2",
            40,
        ),
    ];
    for (key, reserve, n) in setups {
        assert_eq!(f.line(reserve), OK, "{reserve}");
        let items = numbered("i", n);
        assert!(f.cmd(&command("BF.MADD", key, &items)).starts_with(b"*"));
        let header = &scandump_all(&mut f, key)[0].1;
        let options = u32::from_le_bytes(header[12..16].try_into().unwrap());
        assert_eq!(options & 1, 0, "{key}: NOROUND set, options {options}");
        assert_ne!(header[20 + 52], 0, "{key}: first link has no n2");

        // By DUMP / RESTORE and by SCANDUMP / LOADCHUNK.
        let payload = with_redis70_trailer(&dump(&mut f, key));
        assert_eq!(
            o.cmd(&[b"RESTORE".as_slice(), key.as_bytes(), b"0", &payload]),
            OK
        );
        let copy = format!("{key}:chunks");
        for (iter, data) in scandump_all(&mut f, key) {
            let reply = o.cmd(&[
                b"BF.LOADCHUNK".as_slice(),
                copy.as_bytes(),
                iter.to_string().as_bytes(),
                &data,
            ]);
            assert_eq!(
                show(&reply),
                "+OK\\r\\n",
                "{key}: LOADCHUNK into RedisBloom"
            );
        }
        let before = snapshot(&mut f, key);
        assert_same(&snapshot(&mut o, key), &before, key);
        assert_same(&snapshot(&mut o, &copy), &before, &copy);
        assert_present(&mut o, key, &items, key);

        // Extended the same way (power-of-two scale-outs).
        let more = numbered("more", 300);
        let madd = command("BF.MADD", key, &more);
        assert_eq!(show(&f.cmd(&madd)), show(&o.cmd(&madd)), "{key}: BF.MADD");
        assert_same(
            &snapshot(&mut o, key),
            &snapshot(&mut f, key),
            &format!("{key} after adds"),
        );
    }
}

// ---------------------------------------------------------------------------
// Persistence of legacy filters in FerroBloom
// ---------------------------------------------------------------------------

/// The BF.LOADCHUNK commands of the base AOF (which must have no RDB
/// preamble), as (key, iterator, data).
fn base_aof_loadchunks(server: &Server) -> Vec<(Vec<u8>, Vec<u8>, Vec<u8>)> {
    let dir = server.dir().join("appendonlydir");
    let manifest = fs::read_dir(&dir)
        .expect("appendonlydir")
        .map(|e| e.expect("entry").path())
        .find(|p| p.extension().is_some_and(|e| e == "manifest"))
        .expect("AOF manifest");
    let manifest = fs::read_to_string(manifest).expect("manifest");
    let base = manifest
        .lines()
        .find(|l| l.ends_with(" type b"))
        .and_then(|l| l.split_whitespace().nth(1))
        .expect("base file in the manifest");
    assert!(base.ends_with(".base.aof"), "{base}: RDB preamble?");
    let data = fs::read(dir.join(base)).expect("base AOF");
    assert!(
        data.starts_with(b"*"),
        "base AOF starts with {}",
        show(&data[..data.len().min(16)])
    );
    // RESP arrays of bulk strings.
    let mut out = Vec::new();
    let mut rest = data.as_slice();
    let line = |rest: &mut &[u8]| -> usize {
        let end = rest.windows(2).position(|w| w == b"\r\n").expect("CRLF");
        let n = std::str::from_utf8(&rest[1..end])
            .unwrap()
            .parse()
            .expect("length");
        *rest = &rest[end + 2..];
        n
    };
    while !rest.is_empty() {
        let argc = line(&mut rest);
        let mut args = Vec::new();
        for _ in 0..argc {
            let len = line(&mut rest);
            args.push(rest[..len].to_vec());
            rest = &rest[len + 2..];
        }
        if args[0].eq_ignore_ascii_case(b"BF.LOADCHUNK") {
            out.push((args[1].clone(), args[2].clone(), args[3].clone()));
        }
    }
    out
}

#[test]
fn legacy_filters_survive_reload_loadchunk_copy_and_aof_rewrite() {
    let mut server = Server::start(
        ferrobloom()
            .config("appendonly", "yes")
            .config("aof-use-rdb-preamble", "no"),
    );
    let oracle = Server::start(redisbloom());
    let mut raw = server.raw();
    let mut o = oracle.raw();
    let (x, _) = new_items();
    let cases = cases();
    let mut keys = Vec::new();
    for case in &cases {
        let key = format!("lg:{}", case.name);
        assert_eq!(
            raw.cmd(&[b"RESTORE".as_slice(), key.as_bytes(), b"0", &case.payload]),
            OK
        );
        // Half of them grown after loading (power-of-two or 32-bit links
        // made by FerroBloom).
        if keys.len() % 2 == 1 {
            assert!(raw.cmd(&command("BF.MADD", &key, &x)).starts_with(b"*"));
        }
        keys.push(key);
    }
    let before: Vec<Snapshot> = keys.iter().map(|k| snapshot(&mut raw, k)).collect();
    let check = |raw: &mut RawClient, context: &str| {
        for ((key, case), want) in keys.iter().zip(&cases).zip(&before) {
            assert_same(
                &snapshot(raw, key),
                want,
                &format!("{}: {context}", case.name),
            );
            assert_present(raw, key, &case.items, &format!("{}: {context}", case.name));
        }
    };

    // SCANDUMP -> LOADCHUNK within FerroBloom gives the same filter. In
    // RedisBloom 2.8.2 the same round trip fails for bits-0 and
    // unrounded links (its AOF rewrite of them cannot be loaded back).
    let mut refused_by_redisbloom = 0;
    for ((key, case), want) in keys.iter().zip(&cases).zip(&before) {
        let copy = format!("{key}:copy");
        for (iter, data) in &want.scandump {
            let reply = raw.cmd(&[
                b"BF.LOADCHUNK".as_slice(),
                copy.as_bytes(),
                iter.to_string().as_bytes(),
                data,
            ]);
            assert_eq!(
                show(&reply),
                "+OK\\r\\n",
                "{}: LOADCHUNK of its own stream",
                case.name
            );
        }
        assert!(
            dump(&mut raw, &copy) == want.dump,
            "{}: copy differs",
            case.name
        );
        assert_eq!(raw.cmd(&["DEL", &copy]), b":1\r\n");

        assert_eq!(
            o.cmd(&[b"RESTORE".as_slice(), key.as_bytes(), b"0", &case.payload]),
            OK
        );
        let stream = scandump_all(&mut o, key);
        let reply = o.cmd(&[
            b"BF.LOADCHUNK".as_slice(),
            copy.as_bytes(),
            b"1",
            &stream[0].1,
        ]);
        let want_reply: &[u8] = if case.loadchunk_in_redisbloom {
            OK
        } else {
            refused_by_redisbloom += 1;
            b"-ERR received bad data\r\n"
        };
        assert_eq!(
            show(&reply),
            show(want_reply),
            "{}: RedisBloom LOADCHUNK of its own header",
            case.name
        );
    }
    assert!(refused_by_redisbloom >= 6, "{refused_by_redisbloom}");

    // DEBUG RELOAD.
    assert_eq!(raw.cmd(&["DEBUG", "RELOAD"]), OK);
    check(&mut raw, "after DEBUG RELOAD");

    // AOF rewrite without preamble: every key becomes its SCANDUMP stream
    // as BF.LOADCHUNK commands, and a restart loads them back.
    rewrite_aof(&mut raw, Duration::from_secs(30));
    let loadchunks = base_aof_loadchunks(&server);
    for (key, want) in keys.iter().zip(&before) {
        let emitted: Vec<(i64, Vec<u8>)> = loadchunks
            .iter()
            .filter(|(k, _, _)| k == key.as_bytes())
            .map(|(_, iter, data)| {
                (
                    std::str::from_utf8(iter)
                        .unwrap()
                        .parse()
                        .expect("iterator"),
                    data.clone(),
                )
            })
            .collect();
        assert!(
            emitted == want.scandump,
            "{key}: AOF rewrite is not its SCANDUMP stream"
        );
    }
    server.restart();
    let mut raw = server.raw();
    assert_eq!(
        raw.cmd(&["DBSIZE"]),
        format!(":{}\r\n", keys.len()).into_bytes()
    );
    check(&mut raw, "after AOF rewrite + restart");

    // Still working: grown once more, then reloaded from the AOF again.
    for key in &keys {
        let reply = raw.cmd(&command("BF.MADD", key, &numbered("z", 30)));
        assert!(
            reply.starts_with(b"*30\r\n") || reply.contains(&b'-'),
            "{key}: {}",
            show(&reply)
        );
    }
    let grown: Vec<Snapshot> = keys.iter().map(|k| snapshot(&mut raw, k)).collect();
    server.restart();
    let mut raw = server.raw();
    for (key, want) in keys.iter().zip(&grown) {
        assert_same(
            &snapshot(&mut raw, key),
            want,
            &format!("{key}: AOF replay after growth"),
        );
    }
    let log = server.log();
    assert!(!log.contains("panicked"), "panic in the log");
    assert!(
        !log.contains("refusing"),
        "a filter was refused while loading:\n{log}"
    );
}

/// 2.8.2's own DUMP of a chain carrying the all-zero link it leaves after a
/// failed scale-out (spec §6.5, vector `rdb_dead_link`; its growth is 0):
/// legitimate RedisBloom output, so FerroBloom must keep it through every
/// persistence path, AOF rewrite included.
#[test]
fn dead_link_filter_survives_reload_and_aof_rewrite() {
    let json = legacy_json();
    let payload = unhex(
        json["rdb_dead_link"]["dump_hex"]
            .as_str()
            .expect("dump_hex"),
    );
    let mut server = Server::start(
        ferrobloom()
            .config("appendonly", "yes")
            .config("aof-use-rdb-preamble", "no"),
    );
    let mut raw = server.raw();
    assert_eq!(raw.cmd(&[b"RESTORE".as_slice(), b"dl", b"0", &payload]), OK);
    // The dead link is dropped; a and b stay.
    assert_eq!(
        debug_lines(&mut raw, "dl"),
        vec![
            "size:2".to_string(),
            "bytes:8 bits:64 hashes:8 hashwidth:64 capacity:2 size:2 ratio:0.005".to_string()
        ]
    );
    let items = vec![b"a".to_vec(), b"b".to_vec()];
    assert_present(&mut raw, "dl", &items, "dead link");
    let before = snapshot(&mut raw, "dl");

    assert_eq!(raw.cmd(&["DEBUG", "RELOAD"]), OK);
    assert_same(
        &snapshot(&mut raw, "dl"),
        &before,
        "dead link after DEBUG RELOAD",
    );

    // AOF rewrite without preamble, restart: the key must still be there.
    rewrite_aof(&mut raw, Duration::from_secs(30));
    server.restart();
    let mut raw = server.raw();
    assert_eq!(
        show(&raw.cmd(&["DBSIZE"])),
        ":1\\r\\n",
        "the AOF rewrite lost the key; log:\n{}",
        server.log()
    );
    assert_same(
        &snapshot(&mut raw, "dl"),
        &before,
        "dead link after AOF rewrite + restart",
    );

    // The cause, if it fails: its SCANDUMP stream (growth 0 in the header)
    // must load back with LOADCHUNK.
    for (iter, data) in &before.scandump {
        let reply = raw.cmd(&[
            b"BF.LOADCHUNK".as_slice(),
            b"dl:copy",
            iter.to_string().as_bytes(),
            data,
        ]);
        assert_eq!(
            show(&reply),
            "+OK\\r\\n",
            "LOADCHUNK of the dead-link filter's own SCANDUMP chunk {iter} ({})",
            show(data)
        );
    }
    assert!(dump(&mut raw, "dl:copy") == before.dump);
}
