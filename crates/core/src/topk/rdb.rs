//! The RDB value of a Top-K sketch (type `TopK-TYPE`, encoding 0, spec
//! §6.2), over the module API's typed calls ([`crate::rdb_io`]):
//! ```text
//! unsigned  k
//! unsigned  width
//! unsigned  depth
//! double    decay
//! string    buckets: W·D × {fp u32, count u32}, little-endian, row-major
//! string    heap: k × 24-byte records {fp u32, itemlen u32, pointer u64,
//!           count u32, padding u32}
//! string×k  each slot's item followed by one NUL byte (`00` alone for an
//!           empty slot)
//! ```
//! Written as 2.8.2 writes it, with three choices: the pointer bytes are
//! zero (2.8.2 writes a live address, so its DUMP is not reproducible);
//! items are whole, NULs included (2.8.2 writes the bytes before the
//! first NUL; its loader keeps the string as given and its lookup reads
//! `itemlen` bytes of it, so it loads ours and finds the same item); the
//! padding of record 0 carries the sketch's decay draw counter (see
//! [`super::decay`]) and the others are zero. 2.8.2 never reads padding.
//!
//! Read: everything 2.8.2 writes. The pointer is ignored; the padding of
//! record 0 is the draw counter (0 in what 2.8.2 writes), the rest are
//! ignored. An item string of one byte is the empty item in a record
//! that holds one (fingerprint or count not 0, itemlen 0), and no bytes
//! otherwise: an empty slot, or 2.8.2's cut of an item beginning with NUL
//! (`itemlen` kept). 2.8.2 loads its empty item as no bytes and lists it
//! as null after a reload; here the item stays the empty string it was,
//! so a reload or a full sync never changes a reply. A longer string is
//! the item and its NUL.
//! A string shorter than `itemlen` + 1 is 2.8.2's cut of an item with a
//! NUL inside: the known bytes are kept, `itemlen` too (the item then
//! matches no lookup, as after 2.8.2's own reload). The decay table is
//! recomputed (2.8.2 leaves it zero: its loaded keys never decay again).
//!
//! Refused, where 2.8.2 aborts or misreads (§6.4, §6.5): another encoding
//! version; k, width or depth 0 or above 2^32 − 1; a decay outside
//! (0, 1]; a bucket string of other than W·D·8 bytes or a heap string of
//! other than k·24 (checked after reading the string, which is what the
//! payload holds, and before anything is allocated for it); an empty item
//! string, one not ending in NUL, longer than `itemlen` + 1, or shorter
//! with a NUL before its end (no writer produces those). Truncation is
//! the input's error.

use super::heap::HeapSlot;
use super::sizing::{bytes, Params, RECORD_BYTES};
use super::sketch::TopK;
pub use crate::rdb_io::{RdbError, RdbInput, RdbOutput};

/// The encoding version read and written: 2.8.2's.
pub const ENCODING_VERSION: i32 = 0;
/// The module type's name.
pub const TYPE_NAME: &[u8; 9] = b"TopK-TYPE";

fn invalid(why: &'static str) -> RdbError {
    RdbError::Invalid(why)
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

/// The heap records as saved: pointers zero, padding zero except record
/// 0's, which holds the draw counter.
pub fn heap_image(s: &TopK) -> Vec<u8> {
    let mut image = Vec::with_capacity(s.heap().len() * RECORD_BYTES as usize);
    for (i, slot) in s.heap().iter().enumerate() {
        image.extend_from_slice(&slot.fp().to_le_bytes());
        image.extend_from_slice(&slot.itemlen().to_le_bytes());
        image.extend_from_slice(&[0; 8]);
        image.extend_from_slice(&slot.count().to_le_bytes());
        let pad = if i == 0 { s.draws() } else { 0 };
        image.extend_from_slice(&pad.to_le_bytes());
    }
    image
}

/// The saved string of a slot: its bytes and a NUL.
pub fn item_string(slot: &HeapSlot) -> Vec<u8> {
    let item = slot.item().unwrap_or_default();
    let mut s = Vec::with_capacity(item.len() + 1);
    s.extend_from_slice(item);
    s.push(0);
    s
}

/// Writes `s` as encoding 0 and returns that version.
pub fn save(s: &TopK, out: &mut dyn RdbOutput) -> i32 {
    out.write_unsigned(u64::from(s.k()));
    out.write_unsigned(u64::from(s.width()));
    out.write_unsigned(u64::from(s.depth()));
    out.write_double(s.decay());
    out.write_bytes(s.bucket_bytes());
    out.write_bytes(&heap_image(s));
    for slot in s.heap() {
        out.write_bytes(&item_string(slot));
    }
    ENCODING_VERSION
}

fn dimension(input: &mut dyn RdbInput, why: &'static str) -> Result<u32, RdbError> {
    u32::try_from(input.read_unsigned()?)
        .ok()
        .filter(|&v| v >= 1)
        .ok_or(invalid(why))
}

/// The item of a record from its saved string (see the module doc).
fn item_of(string: &[u8], itemlen: u32, occupied: bool) -> Result<Option<Box<[u8]>>, RdbError> {
    let Some((&0, known)) = string.split_last() else {
        return Err(invalid("item string empty or not ending in NUL"));
    };
    if known.len() > itemlen as usize {
        return Err(invalid("item string longer than its itemlen"));
    }
    if known.len() < itemlen as usize && known.contains(&0) {
        return Err(invalid("item string cut after a NUL"));
    }
    let empty_item = known.is_empty() && itemlen == 0 && occupied;
    Ok((!known.is_empty() || empty_item).then(|| known.into()))
}

/// Reads a value of encoding version `encver` (0 only).
pub fn load(input: &mut dyn RdbInput, encver: i32) -> Result<TopK, RdbError> {
    if encver != ENCODING_VERSION {
        return Err(invalid("unknown encoding version of a Top-K sketch"));
    }
    let k = dimension(input, "k 0 or above 2^32 - 1")?;
    let width = dimension(input, "width 0 or above 2^32 - 1")?;
    let depth = dimension(input, "depth 0 or above 2^32 - 1")?;
    let decay = input.read_double()?;
    if !(decay > 0.0 && decay <= 1.0) {
        return Err(invalid("decay outside (0, 1]"));
    }
    let sizes = bytes(k, width, depth).map_err(|_| invalid("buckets beyond the address space"))?;
    let buckets = input.read_bit_array()?;
    if buckets.len() as u64 != sizes.buckets {
        return Err(invalid("bucket string is not width x depth x 8 bytes"));
    }
    let image = input.read_bit_array()?;
    if image.len() as u64 != sizes.heap {
        return Err(invalid("heap string is not k x 24 bytes"));
    }
    let image = image.as_bytes();
    let mut heap = Vec::new();
    heap.try_reserve_exact(k as usize)
        .map_err(|_| invalid("heap beyond this machine's memory"))?;
    for record in image.chunks_exact(RECORD_BYTES as usize) {
        let (fp, itemlen, count) = (u32_at(record, 0), u32_at(record, 4), u32_at(record, 16));
        let string = input.read_bit_array()?;
        heap.push(HeapSlot {
            fp,
            itemlen,
            count,
            item: item_of(string.as_bytes(), itemlen, fp != 0 || count != 0)?,
        });
    }
    let draws = u32_at(image, 20);
    let params = Params {
        k,
        width,
        depth,
        decay,
    };
    Ok(TopK::from_parts(params, buckets, heap, draws))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item_strings() {
        assert_eq!(item_of(b"\0", 0, false), Ok(None), "an empty slot");
        assert_eq!(
            item_of(b"\0", 0, true),
            Ok(Some(b"".as_slice().into())),
            "the empty item"
        );
        assert_eq!(item_of(b"\0", 3, true), Ok(None), "2.8.2's cut of \\0ab");
        assert_eq!(
            item_of(b"foo\0", 3, true),
            Ok(Some(b"foo".as_slice().into()))
        );
        assert_eq!(
            item_of(b"a\0b\0", 3, true),
            Ok(Some(b"a\0b".as_slice().into()))
        );
        assert_eq!(item_of(b"q\0", 3, true), Ok(Some(b"q".as_slice().into())));
        assert!(item_of(b"", 0, true).is_err());
        assert!(item_of(b"foo", 3, true).is_err());
        assert!(item_of(b"foo\0", 2, true).is_err());
        assert!(item_of(b"a\0b\0", 5, true).is_err());
    }

    /// The empty item (and INCRBY "" 0, which enters with count 0)
    /// survives a reload as the empty string, not as 2.8.2's null.
    #[test]
    fn empty_item_survives_a_reload() {
        use crate::alloc_guard::Unguarded;
        use crate::topk::dump::{dump_payload, load_payload};
        use crate::topk::sketch::fingerprint;
        assert_ne!(fingerprint(b""), 0, "an occupied slot is told apart");
        let mut s = TopK::new(Params::with_defaults(3), &Unguarded).unwrap();
        s.add(b"").unwrap();
        s.incrby(b"z", 0).unwrap();
        let back = load_payload(&dump_payload(&s, 10)).unwrap();
        assert_eq!(back.heap(), s.heap());
        assert_eq!(back.list()[0].item(), Some(b"".as_slice()));
        assert!(back.query(b""));
    }
}
