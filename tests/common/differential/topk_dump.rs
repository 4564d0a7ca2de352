//! Top-K DUMP payloads compared field by field (spec §6.2): the strings
//! decompressed (Redis LZF-compresses those over 20 bytes, and 2.8.2's heap
//! string holds process addresses, so its compressed bytes differ from run
//! to run) and the pointer bytes of each heap record (bytes 8-15 of each
//! 24-byte record) taken out: a live address in what 2.8.2 writes, zero in
//! what FerroBloom writes. Everything else must be equal byte for byte,
//! except where docs/topk.md documents a difference (`nul_cut`).

use crate::common::dump_parts;
use ferrobloom_core::dump_format::DumpReader;
use ferrobloom_core::rdb_io::RdbInput;
use ferrobloom_core::topk::dump::type_id;

/// Bytes of one heap record and where its pointer lies in it.
pub const RECORD: usize = 24;
const POINTER: std::ops::Range<usize> = 8..16;

/// A Top-K value as saved, strings decompressed, pointers masked.
#[derive(Clone, Debug, PartialEq)]
pub struct TopkFields {
    pub k: u64,
    pub width: u64,
    pub depth: u64,
    pub decay_bits: u64,
    pub buckets: Vec<u8>,
    /// The heap records with their pointer bytes zero.
    pub heap: Vec<u8>,
    /// Each slot's saved string (its item and a NUL).
    pub items: Vec<Vec<u8>>,
}

/// The fields of a Top-K payload, and the pointers that were masked.
#[derive(Clone, Debug, PartialEq)]
pub struct TopkDump {
    pub fields: TopkFields,
    pub pointers: Vec<[u8; 8]>,
}

/// Reads a Top-K DUMP payload as written, every field checked against the
/// encoding's layout; Err says what does not fit.
pub fn topk_dump(payload: &[u8]) -> Result<TopkDump, String> {
    let e = |what: &str| format!("Top-K payload: {what}");
    let mut r = DumpReader::new(payload).map_err(|x| e(&format!("{x:?}")))?;
    if r.type_id != type_id(0) {
        return Err(e(&format!("module id {:#x}", r.type_id)));
    }
    let k = r.read_unsigned().map_err(|_| e("k"))?;
    let width = r.read_unsigned().map_err(|_| e("width"))?;
    let depth = r.read_unsigned().map_err(|_| e("depth"))?;
    let decay_bits = r.read_double().map_err(|_| e("decay"))?.to_bits();
    let buckets = r.read_bit_array().map_err(|_| e("buckets"))?;
    let mut heap = r
        .read_bit_array()
        .map_err(|_| e("heap"))?
        .as_bytes()
        .to_vec();
    if heap.len() as u64 != k * RECORD as u64 {
        return Err(e(&format!("heap of {} bytes for k {k}", heap.len())));
    }
    let mut pointers = Vec::with_capacity(k as usize);
    for record in heap.chunks_exact_mut(RECORD) {
        let mut p = [0; 8];
        p.copy_from_slice(&record[POINTER]);
        pointers.push(p);
        record[POINTER].fill(0);
    }
    let mut items = Vec::with_capacity(k as usize);
    for i in 0..k {
        let s = r.read_bit_array().map_err(|_| e(&format!("item {i}")))?;
        items.push(s.as_bytes().to_vec());
    }
    if !r.at_eof() {
        return Err(e("data after the last item"));
    }
    Ok(TopkDump {
        fields: TopkFields {
            k,
            width,
            depth,
            decay_bits,
            buckets: buckets.as_bytes().to_vec(),
            heap,
            items,
        },
        pointers,
    })
}

/// The fields 2.8.2 saves for an item string FerroBloom saved: the bytes
/// up to the first NUL and a NUL (2.8.2 keeps C strings; FerroBloom's
/// items are whole, docs/topk.md).
pub fn nul_cut(saved: &[u8]) -> Vec<u8> {
    let end = saved.iter().position(|&c| c == 0).unwrap_or(saved.len());
    let mut out = saved[..end].to_vec();
    out.push(0);
    out
}

/// How FerroBloom's payload `fb` relates to 2.8.2's `rb` for the same
/// sketch: Ok(true) when they are equal once masked, Ok(false) when they
/// differ only where FerroBloom saves an item with a NUL inside whole,
/// Err(why) otherwise (FerroBloom's pointer bytes must be zero, too).
pub fn topk_payloads_agree(rb: &[u8], fb: &[u8]) -> Result<bool, String> {
    let rb = topk_dump(rb)?;
    let fb = topk_dump(fb)?;
    if fb.pointers.iter().any(|p| *p != [0; 8]) {
        return Err("FerroBloom's heap records hold non-zero pointer bytes".into());
    }
    if rb.fields == fb.fields {
        return Ok(true);
    }
    let cut: Vec<Vec<u8>> = fb.fields.items.iter().map(|s| nul_cut(s)).collect();
    let same_but_items = TopkFields {
        items: rb.fields.items.clone(),
        ..fb.fields.clone()
    } == rb.fields;
    if same_but_items && cut == rb.fields.items {
        return Ok(false);
    }
    Err(format!(
        "masked fields differ:\n    2.8.2:      {:?}\n    FerroBloom: {:?}",
        rb.fields, fb.fields
    ))
}

/// The value bytes of a DUMP payload (no RDB version, no CRC), and for a
/// Top-K payload its masked fields instead, printed: the form two modules'
/// payloads are compared in.
pub fn comparable_value(payload: &[u8]) -> Vec<u8> {
    match topk_dump(payload) {
        Ok(d) => format!("{:?}", d.fields).into_bytes(),
        Err(_) => dump_parts(payload).0.to_vec(),
    }
}
