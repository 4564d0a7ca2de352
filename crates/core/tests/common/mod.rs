//! Shared helpers of the core integration tests: access to the live-verified
//! vectors (`tests/data/vectors.json`), hex, chain construction from
//! BF.RESERVE arguments, the SCANDUMP/LOADCHUNK client loops, and a
//! field-level builder and walker for DUMP payloads.

#![allow(dead_code)]

use std::sync::OnceLock;

use ferrobloom_core::alloc_guard::Unguarded;
use ferrobloom_core::bloom::chain::{AddOutcome, Chain, ChainParams};
use ferrobloom_core::bloom::dump::TYPE_ID_BASE;
use ferrobloom_core::bloom::scandump::{self, LoadError};
use ferrobloom_core::bloom::sizing::Policy;
use ferrobloom_core::dump_format;
use ferrobloom_core::dump_format::DumpWriter;
use ferrobloom_core::rdb_io::RdbOutput;
use serde_json::Value;

pub mod recording;

/// The vectors file, parsed once per test binary.
pub fn vectors() -> &'static Value {
    static V: OnceLock<Value> = OnceLock::new();
    V.get_or_init(|| {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/vectors.json");
        let text = std::fs::read_to_string(path).expect("tests/data/vectors.json is readable");
        serde_json::from_str(&text).expect("vectors.json is valid JSON")
    })
}

/// `vectors.json[name]`.
pub fn group(name: &str) -> &'static Value {
    let g = &vectors()[name];
    assert!(!g.is_null(), "vector group {name} missing");
    g
}

/// `vectors.json[name].vectors`, never empty.
pub fn group_vectors(name: &str) -> &'static [Value] {
    let list = group(name)["vectors"]
        .as_array()
        .unwrap_or_else(|| panic!("{name}.vectors is not an array"));
    assert!(!list.is_empty(), "{name}.vectors is empty");
    list
}

/// The sketches' vectors file (`tests/data/sketches-vectors.json`:
/// Count-Min, Top-K, t-digest), parsed once per test binary.
pub fn sketch_vectors() -> &'static Value {
    static V: OnceLock<Value> = OnceLock::new();
    V.get_or_init(|| {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/sketches-vectors.json"
        );
        let text = std::fs::read_to_string(path).expect("sketches-vectors.json is readable");
        serde_json::from_str(&text).expect("sketches-vectors.json is valid JSON")
    })
}

/// `sketches-vectors.json[group].vectors`, never empty.
pub fn sketch_group(group: &str) -> &'static [Value] {
    let list = sketch_vectors()[group]["vectors"]
        .as_array()
        .unwrap_or_else(|| panic!("{group}.vectors is not an array"));
    assert!(!list.is_empty(), "{group}.vectors is empty");
    list
}

pub fn s(v: &Value) -> &str {
    v.as_str().unwrap_or_else(|| panic!("not a string: {v}"))
}

pub fn u(v: &Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("not an unsigned integer: {v}"))
}

pub fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

pub fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|x| s(x).to_string())
        .collect()
}

pub fn u64s(v: &Value) -> Vec<u64> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(u)
        .collect()
}

pub fn hex(text: &str) -> Vec<u8> {
    assert!(text.len() % 2 == 0, "odd hex length: {text}");
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex digit"))
        .collect()
}

pub fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A u64 written as unsigned hex (hash pairs).
pub fn hex_u64(v: &Value) -> u64 {
    u64::from_str_radix(s(v), 16).expect("hex number")
}

/// Items given as a list of hex strings.
pub fn items_hex(v: &Value) -> Vec<Vec<u8>> {
    strings(v).iter().map(|h| hex(h)).collect()
}

/// The parameters `BF.RESERVE key <args>` gives a filter: error, capacity,
/// then `EXPANSION n` and/or `NONSCALING` (§2.1; growth 2 by default, also
/// stored for non-scaling filters).
pub fn reserve_params(args: &[String]) -> ChainParams {
    assert!(args.len() >= 2, "reserve args {args:?}");
    let error: f64 = args[0].parse().expect("error rate");
    let capacity: u64 = args[1].parse().expect("capacity");
    let mut growth = 2u32;
    let mut nonscaling = false;
    let mut i = 2;
    while i < args.len() {
        if args[i].eq_ignore_ascii_case("NONSCALING") {
            nonscaling = true;
            i += 1;
        } else if args[i].eq_ignore_ascii_case("EXPANSION") {
            let g: u64 = args[i + 1].parse().expect("expansion");
            growth = g as u32;
            i += 2;
        } else {
            panic!("unexpected reserve argument {}", args[i]);
        }
    }
    ChainParams {
        capacity,
        error,
        growth,
        nonscaling,
        policy: Policy::Exact,
    }
}

pub fn reserve(args: &[&str]) -> Chain {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    new_chain(&reserve_params(&args))
}

pub fn new_chain(params: &ChainParams) -> Chain {
    Chain::new(params, &Unguarded).expect("chain creation")
}

pub fn add(chain: &mut Chain, item: &[u8]) -> AddOutcome {
    let h = chain.hash(item);
    chain.add(h, &Unguarded)
}

pub fn contains(chain: &Chain, item: &[u8]) -> bool {
    chain.contains(chain.hash(item))
}

/// One element of a BF.MADD reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    Int(i64),
    Err(String),
}

/// BF.MADD's per-item loop (§2.2): 1 / 0 per item, the non-scaling error
/// ends the array, a failed scale-out is reported and the loop goes on.
pub fn madd(chain: &mut Chain, items: &[Vec<u8>]) -> Vec<Reply> {
    let mut out = Vec::new();
    for item in items {
        match add(chain, item) {
            AddOutcome::Added => out.push(Reply::Int(1)),
            AddOutcome::Present => out.push(Reply::Int(0)),
            AddOutcome::Full => {
                out.push(Reply::Err("ERR non scaling filter is full".into()));
                break;
            }
            AddOutcome::ScaleFailed | AddOutcome::ScaleRefused(_) => {
                out.push(Reply::Err("ERR problem inserting into filter".into()))
            }
        }
    }
    out
}

/// Sorted positions of the set bits of an LSB-first byte array.
pub fn set_bits(bytes: &[u8]) -> Vec<u64> {
    let mut out = Vec::new();
    for (i, &b) in bytes.iter().enumerate() {
        for j in 0..8 {
            if b & (1 << j) != 0 {
                out.push(i as u64 * 8 + j);
            }
        }
    }
    out
}

/// A byte array of `len` bytes with exactly `bits` set.
pub fn bytes_with_bits(len: usize, bits: &[u64]) -> Vec<u8> {
    let mut out = vec![0u8; len];
    for &x in bits {
        out[(x >> 3) as usize] |= 1 << (x & 7);
    }
    out
}

/// The data stream: every link's array, oldest first.
pub fn chain_bytes(chain: &Chain) -> Vec<u8> {
    let mut out = Vec::new();
    for l in chain.links() {
        out.extend_from_slice(l.data().as_bytes());
    }
    out
}

/// The SCANDUMP client loop (§5.1): `(iterator returned, data)` pairs, the
/// header first, until the reply `(0, "")`.
pub fn scandump(chain: &Chain) -> Vec<(i64, Vec<u8>)> {
    let mut out = vec![(1, scandump::encode_header(chain))];
    let mut iter = 1i64;
    loop {
        let (next, data) = scandump::data_chunk(chain, iter);
        if next == 0 {
            assert!(data.is_empty(), "the end reply carries no data");
            break;
        }
        out.push((next, data.to_vec()));
        iter = next;
    }
    out
}

/// The LOADCHUNK client loop on a missing key: the header, then the data
/// chunks in the order given by `order` (indexes into `chunks[1..]`).
pub fn loadchunks(chunks: &[(i64, Vec<u8>)], order: &[usize]) -> Result<Chain, LoadError> {
    assert_eq!(chunks[0].0, 1, "the first pair is the header");
    let header = scandump::decode_header(&chunks[0].1)?;
    let mut chain = header.instantiate(&Unguarded)?;
    for &i in order {
        let (iter, data) = &chunks[1 + i];
        scandump::load_chunk(&mut chain, *iter, data)?;
    }
    Ok(chain)
}

pub fn in_order(chunks: &[(i64, Vec<u8>)]) -> Vec<usize> {
    (0..chunks.len() - 1).collect()
}

pub fn reversed(chunks: &[(i64, Vec<u8>)]) -> Vec<usize> {
    (0..chunks.len() - 1).rev().collect()
}

/// Everything observable about a chain: BF.DEBUG, header, options, growth,
/// counts, bytes and per-link fill.
pub fn assert_same_chain(a: &Chain, b: &Chain, what: &str) {
    assert_eq!(a.debug_lines(), b.debug_lines(), "{what}: BF.DEBUG");
    assert_eq!(
        scandump::encode_header(a),
        scandump::encode_header(b),
        "{what}: header"
    );
    assert_eq!(a.items(), b.items(), "{what}: items");
    assert_eq!(a.options(), b.options(), "{what}: options");
    assert_eq!(a.growth(), b.growth(), "{what}: growth");
    assert_eq!(a.links().len(), b.links().len(), "{what}: links");
    for (i, (x, y)) in a.links().iter().zip(b.links()).enumerate() {
        assert_eq!(
            x.data().as_bytes(),
            y.data().as_bytes(),
            "{what}: link {i} bytes"
        );
        assert_eq!(x.ones(), y.ones(), "{what}: link {i} ones");
        assert_eq!(x.modulus(), y.modulus(), "{what}: link {i} modulus");
        assert_eq!(x.bits, y.bits, "{what}: link {i} bits");
        assert_eq!(x.n2, y.n2, "{what}: link {i} n2");
        assert_eq!(x.entries, y.entries, "{what}: link {i} entries");
        assert_eq!(x.items, y.items, "{what}: link {i} items");
        assert_eq!(x.hashes, y.hashes, "{what}: link {i} hashes");
        assert_eq!(
            x.error.to_bits(),
            y.error.to_bits(),
            "{what}: link {i} error"
        );
        assert_eq!(x.bpe.to_bits(), y.bpe.to_bits(), "{what}: link {i} bpe");
    }
    assert_eq!(a.reported_size(), b.reported_size(), "{what}: size");
    assert_eq!(a.capacity(), b.capacity(), "{what}: capacity");
}

/// Every link's fill counter equals the popcount of its array.
pub fn assert_ones_exact(chain: &Chain) {
    for (i, l) in chain.links().iter().enumerate() {
        assert_eq!(
            l.ones(),
            set_bits(l.data().as_bytes()).len() as u64,
            "link {i}: ones() is not the popcount"
        );
    }
}

/// One typed field of a module value.
#[derive(Clone, Debug, PartialEq)]
pub enum Field {
    U(u64),
    D(f64),
    S(Vec<u8>),
}

/// A DUMP payload of `MBbloom--` with encoding version `encver`, holding
/// exactly `fields`, RDB version 10 in the trailer.
pub fn payload(encver: u16, fields: &[Field]) -> Vec<u8> {
    payload_with_id(TYPE_ID_BASE | u64::from(encver), fields)
}

pub fn payload_with_id(type_id: u64, fields: &[Field]) -> Vec<u8> {
    let mut w = DumpWriter::new(type_id);
    for field in fields {
        match field {
            Field::U(v) => w.write_unsigned(*v),
            Field::D(v) => w.write_double(*v),
            Field::S(v) => w.write_bytes(v),
        }
    }
    w.finish(dump_format::RDB_VERSION_7_0)
}

/// The module fields of a DUMP payload as Redis stores them.
#[derive(Debug)]
pub struct Walked {
    pub type_id: u64,
    pub fields: Vec<Field>,
    /// Whether some string was stored LZF-compressed or integer-encoded.
    pub special_strings: bool,
    /// The bytes from the first field to the end of the value (before EOF).
    pub field_bytes: Vec<u8>,
    pub rdb_version: u16,
}

/// Walks a DUMP payload independently of the loader under test (Redis'
/// length and string encodings, §6.2). Panics on anything malformed.
pub fn walk_payload(p: &[u8]) -> Walked {
    assert!(p.len() >= 11);
    let crc = u64::from_le_bytes(p[p.len() - 8..].try_into().unwrap());
    assert_eq!(
        dump_format::crc64_jones(&p[..p.len() - 8]),
        crc,
        "payload CRC"
    );
    let body = &p[..p.len() - 10];
    let rdb_version = u16::from_le_bytes([p[p.len() - 10], p[p.len() - 9]]);
    assert_eq!(body[0], 7, "module value");
    let mut pos = 1;
    fn len(b: &[u8], pos: &mut usize) -> u64 {
        let first = b[*pos];
        *pos += 1;
        match first >> 6 {
            0 => u64::from(first & 0x3f),
            1 => {
                let v = (u64::from(first & 0x3f) << 8) | u64::from(b[*pos]);
                *pos += 1;
                v
            }
            _ if first == 0x80 => {
                let v = u32::from_be_bytes(b[*pos..*pos + 4].try_into().unwrap());
                *pos += 4;
                u64::from(v)
            }
            _ if first == 0x81 => {
                let v = u64::from_be_bytes(b[*pos..*pos + 8].try_into().unwrap());
                *pos += 8;
                v
            }
            _ => panic!("bad length byte {first:#x}"),
        }
    }
    let type_id = len(body, &mut pos);
    let start = pos;
    let mut fields = Vec::new();
    let mut special = false;
    loop {
        let op = len(body, &mut pos);
        match op {
            0 => break,
            2 => fields.push(Field::U(len(body, &mut pos))),
            4 => {
                let v = f64::from_le_bytes(body[pos..pos + 8].try_into().unwrap());
                pos += 8;
                fields.push(Field::D(v));
            }
            5 => {
                let first = body[pos];
                if first >> 6 == 3 {
                    special = true;
                    pos += 1;
                    let text = match first & 0x3f {
                        0 => {
                            let v = body[pos] as i8;
                            pos += 1;
                            v.to_string().into_bytes()
                        }
                        1 => {
                            let v = i16::from_le_bytes(body[pos..pos + 2].try_into().unwrap());
                            pos += 2;
                            v.to_string().into_bytes()
                        }
                        2 => {
                            let v = i32::from_le_bytes(body[pos..pos + 4].try_into().unwrap());
                            pos += 4;
                            v.to_string().into_bytes()
                        }
                        3 => {
                            let clen = len(body, &mut pos) as usize;
                            let ulen = len(body, &mut pos) as usize;
                            let out = dump_format::lzf_decompress(&body[pos..pos + clen], ulen)
                                .expect("valid LZF");
                            pos += clen;
                            out
                        }
                        other => panic!("bad string encoding {other}"),
                    };
                    fields.push(Field::S(text));
                } else {
                    let n = len(body, &mut pos) as usize;
                    fields.push(Field::S(body[pos..pos + n].to_vec()));
                    pos += n;
                }
            }
            other => panic!("unexpected opcode {other}"),
        }
    }
    assert_eq!(pos, body.len(), "EOF is the last opcode");
    Walked {
        type_id,
        fields,
        special_strings: special,
        field_bytes: body[start..body.len() - 1].to_vec(),
        rdb_version,
    }
}

/// The fields `rdb::save` writes for a one-link chain, in order (§6.2):
/// a convenient base for crafted payloads.
#[allow(clippy::too_many_arguments)]
pub fn one_link_fields(
    items: u64,
    options: u64,
    growth: u64,
    entries: u64,
    error: f64,
    hashes: u64,
    bpe: f64,
    bits: u64,
    n2: u64,
    data: Vec<u8>,
    link_items: u64,
) -> Vec<Field> {
    vec![
        Field::U(items),
        Field::U(1),
        Field::U(options),
        Field::U(growth),
        Field::U(entries),
        Field::D(error),
        Field::U(hashes),
        Field::D(bpe),
        Field::U(bits),
        Field::U(n2),
        Field::S(data),
        Field::U(link_items),
    ]
}

/// The longest chain scaling can make: a first link of capacity 1 at the
/// largest error below 1, growth 1, filled with distinct items until a
/// scale-out fails. It has exactly `MAX_LINKS` links (chain.rs proves it).
pub fn longest_chain() -> Chain {
    use ferrobloom_core::bloom::chain::{options, MAX_LINKS};
    use ferrobloom_core::bloom::link::Link;
    use ferrobloom_core::bloom::sizing::LinkSpec;
    let spec = LinkSpec::new(1, f64::from_bits(1.0f64.to_bits() - 1), Policy::Exact).expect("spec");
    let first = Link::new(&spec).expect("link");
    let mut chain =
        Chain::from_parts(0, options::FORCE64 | options::NOROUND, 1, vec![first]).expect("chain");
    for i in 0u64.. {
        match add(&mut chain, &i.to_le_bytes()) {
            AddOutcome::ScaleFailed => break,
            AddOutcome::Added | AddOutcome::Present => {}
            other => panic!("item {i}: {other:?}"),
        }
    }
    assert_eq!(chain.links().len(), MAX_LINKS);
    chain
}

/// `chain` with a copy of its newest link appended (empty, so the item
/// counts still add up): one link longer than scaling could make it.
pub fn one_link_longer(chain: &Chain) -> Chain {
    let mut links: Vec<_> = chain
        .links()
        .iter()
        .map(|l| l.try_clone().expect("clone"))
        .collect();
    let mut extra = links.last().expect("a link").try_clone().expect("clone");
    extra.items = 0;
    links.push(extra);
    Chain::from_parts(chain.items(), chain.options(), chain.growth(), links).expect("chain")
}
