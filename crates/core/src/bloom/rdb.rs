//! The RDB value of a filter (type `MBbloom--`), abstracted over the
//! module API's typed save/load calls so it is testable without a server.
//!
//! Encoding version 4 writes: items, nfilters, options, growth, then per
//! link entries, error, hashes, bpe, bits, n2, the bit array, items.
//! Versions 0 to 3 (older RedisBloom) omit some fields; all are loaded.
//!
//! A filter whose LOADCHUNK sequence is incomplete (FerroBloom's own state,
//! see [`crate::load_progress`]) is written with [`LOADING_MARK`] in the
//! options and two more fields after the last link: the stream's total
//! bytes and the received ranges ([`LoadProgress::encode`]). A complete
//! filter is written exactly as RedisBloom 2.8.2 writes it.

use super::chain::{options, Chain, MAX_LINKS};
use super::link::{max_array_bytes, modulus_of, Link};
use super::scandump::MAX_HASHES;
use crate::bitarray::BitArray;
pub use crate::rdb_io::{RdbError, RdbInput, RdbOutput};
use crate::received::LoadProgress;

/// The encoding version written.
pub const ENCODING_VERSION: i32 = 4;

/// Set in the saved options of a filter still loading: beyond the 32 bits
/// RedisBloom keeps its options in, so no RedisBloom value has it.
pub const LOADING_MARK: u64 = 1 << 32;

/// Writes `chain` in encoding version 4, in RedisBloom's field order, so
/// DUMP output is byte-identical.
pub fn save(chain: &Chain, out: &mut dyn RdbOutput) {
    save_with_progress(chain, None, out);
}

/// [`save`], plus the progress of a LOADCHUNK sequence not yet complete.
pub fn save_with_progress(chain: &Chain, loading: Option<&LoadProgress>, out: &mut dyn RdbOutput) {
    out.write_unsigned(chain.items());
    out.write_unsigned(chain.links().len() as u64);
    let mark = if loading.is_some() { LOADING_MARK } else { 0 };
    out.write_unsigned(u64::from(chain.options()) | mark);
    out.write_unsigned(u64::from(chain.growth()));
    for l in chain.links() {
        out.write_unsigned(l.entries);
        out.write_double(l.error);
        out.write_unsigned(u64::from(l.hashes));
        out.write_double(l.bpe);
        out.write_unsigned(l.bits);
        out.write_unsigned(u64::from(l.n2));
        out.write_bytes(l.data().as_bytes());
        out.write_unsigned(l.items);
    }
    if let Some(progress) = loading {
        out.write_unsigned(progress.total());
        out.write_bytes(&progress.encode());
    }
}

fn invalid(what: &'static str) -> RdbError {
    RdbError::Invalid(what)
}

/// One link as read, before it is checked.
struct RawLink {
    entries: u64,
    error: f64,
    hashes: u64,
    bpe: f64,
    bits: u64,
    n2: u64,
    data: BitArray,
    items: u64,
}

impl RawLink {
    /// The all-zero link RedisBloom 2.8.2 leaves behind after a failed
    /// scale-out; it saves it, so its RDB files may carry one.
    fn is_dead(&self) -> bool {
        self.entries == 0
            && self.error == 0.0
            && self.hashes == 0
            && self.bpe == 0.0
            && self.bits == 0
            && self.n2 == 0
            && self.data.is_empty()
            && self.items == 0
    }

    fn into_link(self) -> Result<Link, RdbError> {
        if !(self.error > 0.0 && self.error < 1.0) {
            return Err(invalid("link error rate not in (0, 1)"));
        }
        if !(self.bpe.is_finite() && self.bpe > 0.0) {
            return Err(invalid("link bits per entry not positive"));
        }
        let hashes = u32::try_from(self.hashes).map_err(|_| invalid("hash count"))?;
        if hashes == 0
            || hashes > MAX_HASHES
            || hashes != crate::bloom::sizing::hash_count(self.bpe)
        {
            return Err(invalid("hash count does not match bits per entry"));
        }
        if self.n2 > 63 {
            return Err(invalid("n2 above 63"));
        }
        if self.data.is_empty() {
            return Err(invalid("empty bit array"));
        }
        if self.entries == 0 {
            return Err(invalid("link capacity 0"));
        }
        // The LOADCHUNK header rule (see `max_array_bytes`), so that every
        // filter loaded here can be exported and loaded back (AOF rewrite,
        // migration).
        if let Some(m) = modulus_of(self.bits, self.n2 as u8) {
            if self.data.len() as u64 > max_array_bytes(m) {
                return Err(invalid("bit array far larger than its modulus"));
            }
        }
        Link::from_parts(
            self.entries,
            self.error,
            self.bpe,
            hashes,
            self.bits,
            self.n2 as u8,
            self.items,
            self.data,
        )
        .map_err(|_| invalid("modulus outside the bit array"))
    }
}

/// Reads a filter written with encoding version `encver` (0 to 4),
/// validating every field before trusting it. Trailing all-zero links
/// (2.8.2's failed scale-outs) are dropped; at most [`MAX_LINKS`] links
/// may remain.
pub fn load(input: &mut dyn RdbInput, encver: i32) -> Result<Chain, RdbError> {
    load_with_progress(input, encver).map(|(chain, _)| chain)
}

/// [`load`], with the progress of a LOADCHUNK sequence when the value was
/// saved before it completed.
pub fn load_with_progress(
    input: &mut dyn RdbInput,
    encver: i32,
) -> Result<(Chain, Option<LoadProgress>), RdbError> {
    if !(0..=ENCODING_VERSION).contains(&encver) {
        return Err(invalid("unknown encoding version"));
    }
    let items = input.read_unsigned()?;
    let nfilters = input.read_unsigned()?;
    if nfilters == 0 {
        return Err(invalid("no links"));
    }
    // No chain scales past MAX_LINKS; RedisBloom 2.8.2 may have saved one
    // dead link after that (its failed scale-out), so one more is read.
    if nfilters > MAX_LINKS as u64 + 1 {
        return Err(invalid("more links than a chain can have"));
    }
    let options = if encver >= 2 {
        input.read_unsigned()?
    } else {
        0
    };
    let loading = encver == ENCODING_VERSION && options & LOADING_MARK != 0;
    let options = if loading {
        options & !LOADING_MARK
    } else {
        options
    };
    if options & !u64::from(options::ALL) != 0 {
        return Err(invalid("unknown option bits"));
    }
    let growth = if encver >= 4 {
        input.read_unsigned()?
    } else {
        2
    };
    // RedisBloom holds the growth in 32 bits.
    let growth = growth as u32;

    // Links are read one by one; nothing is reserved from the claimed count,
    // so a false nfilters fails at the first missing field, not in malloc.
    let mut raw_links: Vec<RawLink> = Vec::new();
    for _ in 0..nfilters {
        let entries = input.read_unsigned()?;
        let error = input.read_double()?;
        let hashes = input.read_unsigned()?;
        let bpe = input.read_double()?;
        let (bits, n2) = if encver >= 1 {
            (input.read_unsigned()?, input.read_unsigned()?)
        } else {
            // Encoding 0 stored neither: the modulus was the unrounded
            // bit count.
            let bits = entries as f64 * bpe;
            if !(0.0..18_446_744_073_709_551_616.0).contains(&bits) {
                return Err(invalid("encoding-0 bit count out of range"));
            }
            (bits as u64, 0)
        };
        let data = input.read_bit_array()?;
        let link_items = input.read_unsigned()?;
        raw_links.push(RawLink {
            entries,
            error,
            hashes,
            bpe,
            bits,
            n2,
            data,
            items: link_items,
        });
    }
    while raw_links.len() > 1 && raw_links.last().is_some_and(RawLink::is_dead) {
        raw_links.pop();
    }
    if raw_links.len() > MAX_LINKS {
        return Err(invalid("more links than a chain can have"));
    }
    let mut links = Vec::with_capacity(raw_links.len());
    for raw in raw_links {
        links.push(raw.into_link()?);
    }
    let chain = Chain::from_parts(items, options as u32, growth, links).map_err(|e| match e {
        crate::bloom::chain::ChainError::NoLinks => invalid("no links"),
        crate::bloom::chain::ChainError::BadOptions => invalid("unknown option bits"),
        crate::bloom::chain::ChainError::ItemCountMismatch => invalid("item counts do not add up"),
    })?;
    let progress = if loading {
        let total = input.read_unsigned()?;
        // The stream is the header's links; adds since may have scaled the
        // chain out (its new links lie past the stream), never shrunk it.
        if total > chain.data_bytes() {
            return Err(invalid("load progress larger than the filter"));
        }
        let ranges = input.read_bit_array()?;
        let progress = LoadProgress::decode(total, ranges.as_bytes())
            .map_err(|_| invalid("load progress ranges out of order or out of range"))?;
        // A complete sequence is not saved as loading.
        (!progress.is_complete()).then_some(progress)
    } else {
        None
    };
    Ok((chain, progress))
}
