//! The RDB value of a Cuckoo filter (type `MBbloomCF`), over the module
//! API's typed calls ([`crate::rdb_io`]) so it runs without a server.
//!
//! Encoding version 4 (written, and read):
//! ```text
//! unsigned  sub-filter count
//! unsigned  base bucket count N0
//! unsigned  item counter, unsigned delete counter
//! unsigned  bucket size, unsigned max iterations, unsigned stored expansion
//! per sub-filter, oldest first: unsigned N_i, string of N_i × bs bytes
//! ```
//! Versions 0–3 (RedisBloom ≤ 2.0): count, N, item counter, then one string
//! per sub-filter; bucket size 2, max iterations 20, expansion 1, every
//! sub-filter N buckets. Their bytes were placed by an older hash, so their
//! items are not found again; they load as 2.8.2 loads them.
//!
//! 2.8.2 truncates fields to their C widths and asserts on the string length
//! (aborting the server). Here every field is checked before anything is
//! allocated, and refused values fail the load: a count of 0 or above
//! 65,535, a bucket size of 0 or above 255, max iterations above 65,535,
//! a bucket count of 0, above 2^56 − 1 or not a power of two, an expansion
//! neither 0 nor a power of two, a string of the wrong length, a sub-filter
//! with fewer buckets than an older one (2.8.2 never writes one; its
//! compaction would then misplace fingerprints).
//!
//! A value must also be one the AOF can rebuild: the rewrite writes a
//! filter as a CF.LOADCHUNK header (base bucket count, sub-filter count,
//! expansion, max iterations) and its bytes, and the header makes sub-filter
//! `i` of `N0 × E^i` buckets. So these are refused too, although 2.8.2's
//! RESTORE takes them (and its own AOF then loses or alters them): a
//! sub-filter whose bucket count is not `N0 × E^i` (e.g. a 63-byte payload
//! declaring 2^48 base buckets beside a small sub-filter, whose rewrite
//! would allocate 2^48 buckets), more sub-filters than the shape can reach
//! ([`max_sub_filters`]: with EXPANSION 0 only one), and max iterations 0
//! (CF.RESERVE and the header refuse it). Commands never make any of them.
//! Counters that do not match the data are accepted, as 2.8.2 accepts
//! them: the header carries them as they are.
//!
//! A filter whose CF.LOADCHUNK sequence is incomplete (FerroBloom's own
//! state, see [`super::load_progress`]) is written with [`LOADING_MARK`] in
//! the sub-filter count and two more fields after the last sub-filter: the
//! stream's total bytes and the received ranges. A complete filter is
//! written exactly as RedisBloom 2.8.2 writes it.

use super::filter::{CuckooFilter, Parts, SubFilter};
use super::sizing::{
    max_sub_filters, sub_filter_buckets, sub_filter_bytes, MAX_BUCKETS, MAX_SUB_FILTERS,
};
pub use crate::rdb_io::{RdbError, RdbInput, RdbOutput};
use crate::received::LoadProgress;

/// The encoding version written; versions up to it are read.
pub const ENCODING_VERSION: i32 = 4;
/// The module type's name.
pub const TYPE_NAME: &[u8; 9] = b"MBbloomCF";

fn invalid(why: &'static str) -> RdbError {
    RdbError::Invalid(why)
}

/// Writes `f` in encoding version 4, in RedisBloom's order of calls, so a
/// DUMP is byte-identical.
pub fn save(f: &CuckooFilter, out: &mut dyn RdbOutput) {
    save_with_progress(f, None, out);
}

/// Set in the saved sub-filter count of a filter still loading: beyond
/// the 16 bits RedisBloom keeps the count in, so no RedisBloom value has
/// it.
pub const LOADING_MARK: u64 = 1 << 32;

/// [`save`], plus the progress of a LOADCHUNK sequence not yet complete.
pub fn save_with_progress(
    f: &CuckooFilter,
    loading: Option<&LoadProgress>,
    out: &mut dyn RdbOutput,
) {
    let mark = if loading.is_some() { LOADING_MARK } else { 0 };
    out.write_unsigned(f.sub_filter_count() | mark);
    out.write_unsigned(f.base_buckets());
    out.write_unsigned(f.items());
    out.write_unsigned(f.deletes());
    out.write_unsigned(u64::from(f.bucket_size()));
    out.write_unsigned(u64::from(f.max_iterations()));
    out.write_unsigned(u64::from(f.expansion()));
    for sub in f.sub_filters() {
        out.write_unsigned(sub.buckets());
        out.write_bytes(sub.as_bytes());
    }
    if let Some(progress) = loading {
        out.write_unsigned(progress.total());
        out.write_bytes(&progress.encode());
    }
}

fn check_buckets(n: u64, bucket_size: u8) -> Result<u64, RdbError> {
    if !n.is_power_of_two() || n > MAX_BUCKETS {
        return Err(invalid("bucket count not a power of two up to 2^56 - 1"));
    }
    sub_filter_bytes(n, bucket_size).ok_or(invalid("sub-filter larger than the address space"))
}

fn read_sub_filter(
    input: &mut dyn RdbInput,
    buckets: u64,
    bucket_size: u8,
) -> Result<SubFilter, RdbError> {
    let bytes = check_buckets(buckets, bucket_size)?;
    let data = input.read_bit_array()?;
    if data.len() as u64 != bytes {
        return Err(invalid("sub-filter length is not buckets x bucket size"));
    }
    Ok(SubFilter::with_data(buckets, data))
}

/// More sub-filters than a filter of this shape can reach cannot be
/// rebuilt by the AOF's CF.LOADCHUNK header.
fn check_reachable(count: u64, base: u64, expansion: u16, bucket_size: u8) -> Result<(), RdbError> {
    if count > max_sub_filters(base, expansion, bucket_size) {
        return Err(invalid(
            "more sub-filters than the filter's shape can reach",
        ));
    }
    Ok(())
}

/// The sub-filter count, and whether the value carries load progress.
fn read_count(input: &mut dyn RdbInput, encver: i32) -> Result<(u64, bool), RdbError> {
    let raw = input.read_unsigned()?;
    let loading = encver == ENCODING_VERSION && raw & LOADING_MARK != 0;
    match raw & !if loading { LOADING_MARK } else { 0 } {
        n if (1..=MAX_SUB_FILTERS).contains(&n) => Ok((n, loading)),
        _ => Err(invalid("sub-filter count not in 1..=65535")),
    }
}

/// Reads a value of encoding version `encver` (0–4).
pub fn load(input: &mut dyn RdbInput, encver: i32) -> Result<CuckooFilter, RdbError> {
    load_with_progress(input, encver).map(|(f, _)| f)
}

/// [`load`], with the progress of a LOADCHUNK sequence when the value was
/// saved before it completed.
pub fn load_with_progress(
    input: &mut dyn RdbInput,
    encver: i32,
) -> Result<(CuckooFilter, Option<LoadProgress>), RdbError> {
    if !(0..=ENCODING_VERSION).contains(&encver) {
        return Err(invalid("unknown encoding version of a Cuckoo filter"));
    }
    let (count, loading) = read_count(input, encver)?;
    let base_buckets = input.read_unsigned()?;
    let items = input.read_unsigned()?;
    // Never more than a handful up front: the count is not trusted until
    // that many sub-filters were actually read.
    let mut subs = Vec::with_capacity(count.min(64) as usize);
    if encver < ENCODING_VERSION {
        const BUCKET_SIZE: u8 = 2;
        check_buckets(base_buckets, BUCKET_SIZE)?;
        check_reachable(count, base_buckets, 1, BUCKET_SIZE)?;
        for _ in 0..count {
            subs.push(read_sub_filter(input, base_buckets, BUCKET_SIZE)?);
        }
        let f = CuckooFilter::from_parts(Parts {
            bucket_size: BUCKET_SIZE,
            max_iterations: super::sizing::DEFAULT_MAX_ITERATIONS,
            expansion: 1,
            base_buckets,
            items,
            deletes: 0,
            subs,
        });
        return Ok((f, None));
    }
    let deletes = input.read_unsigned()?;
    let bucket_size = match input.read_unsigned()? {
        bs @ 1..=255 => bs as u8,
        _ => return Err(invalid("bucket size not in 1..=255")),
    };
    check_buckets(base_buckets, bucket_size)?;
    let max_iterations = u16::try_from(input.read_unsigned()?)
        .ok()
        .filter(|&mi| mi > 0)
        .ok_or(invalid("max iterations not in 1..=65535"))?;
    let expansion = u16::try_from(input.read_unsigned()?)
        .ok()
        .filter(|&e| e == 0 || e.is_power_of_two())
        .ok_or(invalid("expansion neither 0 nor a power of two"))?;
    check_reachable(count, base_buckets, expansion, bucket_size)?;
    for i in 0..count {
        let buckets = input.read_unsigned()?;
        // What the AOF's CF.LOADCHUNK header rebuilds (and what growth
        // makes); compaction also relies on sizes that never decrease.
        if sub_filter_buckets(base_buckets, expansion, i as u32) != Some(buckets) {
            return Err(invalid("sub-filter size is not base buckets x expansion^i"));
        }
        subs.push(read_sub_filter(input, buckets, bucket_size)?);
    }
    let f = CuckooFilter::from_parts(Parts {
        bucket_size,
        max_iterations,
        expansion,
        base_buckets,
        items,
        deletes,
        subs,
    });
    let progress = if loading {
        let total = input.read_unsigned()?;
        // The stream is the header's sub-filters; adds since may have grown
        // the filter past it (compaction that takes bytes of the stream
        // away ends those bytes' wait: `load_progress::clip`).
        if total > f.total_bytes() {
            return Err(invalid("load progress larger than the filter"));
        }
        let ranges = input.read_bit_array()?;
        let progress = LoadProgress::decode(total, ranges.as_bytes())
            .map_err(|_| invalid("load progress ranges out of order or out of range"))?;
        (!progress.is_complete()).then_some(progress)
    } else {
        None
    };
    Ok((f, progress))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cuckoo::dump::{load_payload, type_id};
    use crate::dump_format::{DumpWriter, RDB_VERSION_7_0};

    /// An encoding-4 payload: the seven fields, then (N_i, bytes) pairs.
    fn payload(fields: [u64; 7], subs: &[(u64, usize)]) -> Vec<u8> {
        let mut w = DumpWriter::new(type_id(4));
        for f in fields {
            w.write_unsigned(f);
        }
        for &(n, len) in subs {
            w.write_unsigned(n);
            w.write_bytes(&vec![0; len]);
        }
        w.finish(RDB_VERSION_7_0)
    }

    #[test]
    fn fields_are_validated() {
        let ok = [1, 4, 0, 0, 2, 20, 1];
        assert!(load_payload(&payload(ok, &[(4, 8)])).is_ok());
        let refused = |fields: [u64; 7], subs: &[(u64, usize)], why: &str| {
            assert!(load_payload(&payload(fields, subs)).is_err(), "{why}");
        };
        refused([1, 4, 0, 0, 2, 20, 1], &[(4, 7)], "length");
        refused([0, 4, 0, 0, 2, 20, 1], &[], "no sub-filter");
        refused([65536, 4, 0, 0, 2, 20, 1], &[(4, 8)], "count");
        refused([1, 4, 0, 0, 0, 20, 1], &[(4, 0)], "bucket size 0");
        refused([1, 4, 0, 0, 256, 20, 1], &[(4, 1024)], "bucket size 256");
        refused([1, 4, 0, 0, 2, 65536, 1], &[(4, 8)], "max iterations");
        refused([1, 4, 0, 0, 2, 20, 3], &[(4, 8)], "expansion 3");
        refused([1, 3, 0, 0, 2, 20, 1], &[(4, 8)], "base 3");
        refused([1, 4, 0, 0, 2, 20, 1], &[(0, 0)], "no buckets");
        refused([1, 4, 0, 0, 2, 20, 1], &[(1 << 56, 0)], "2^56 buckets");
        refused([2, 4, 0, 0, 2, 20, 1], &[(8, 16), (4, 8)], "shrinking");
        // Accepted as 2.8.2 accepts them: counters unrelated to the data.
        let f = load_payload(&payload([2, 4, 9, 3, 2, 5, 2], &[(4, 8), (8, 16)])).unwrap();
        assert_eq!((f.items(), f.deletes(), f.max_iterations()), (9, 3, 5));
    }

    /// What 2.8.2's RESTORE takes but its AOF rewrite (a CF.LOADCHUNK
    /// header, then the bytes) cannot rebuild.
    #[test]
    fn values_the_aof_cannot_rebuild_are_refused() {
        let refused = |fields: [u64; 7], subs: &[(u64, usize)], why: &str| {
            assert!(load_payload(&payload(fields, subs)).is_err(), "{why}");
        };
        refused([1, 4, 0, 0, 2, 20, 1], &[(16, 32)], "size is not N0");
        refused(
            [2, 4, 0, 0, 2, 20, 2],
            &[(4, 8), (16, 32)],
            "size is not N0 x E",
        );
        refused([2, 4, 0, 0, 2, 20, 1], &[(4, 8), (8, 16)], "E 1 grew");
        refused([1, 1 << 48, 0, 0, 2, 20, 1], &[(4, 8)], "2^48 base buckets");
        refused([1, 4, 0, 0, 2, 0, 1], &[(4, 8)], "max iterations 0");
        refused(
            [2, 4, 0, 0, 2, 20, 0],
            &[(4, 8), (4, 8)],
            "E 0, two sub-filters",
        );
        refused(
            [2, 1 << 55, 0, 0, 1, 20, 2],
            &[(1 << 55, 0)],
            "past 2^56 - 1 buckets",
        );
        // EXPANSION 32768 reaches 4 sub-filters from 4 buckets.
        refused([5, 4, 0, 0, 1, 20, 32768], &[(4, 4)], "a fifth sub-filter");
        assert!(load_payload(&payload([1, 4, 0, 0, 2, 20, 0], &[(4, 8)])).is_ok());
    }
}
