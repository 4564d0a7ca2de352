//! The RDB value of a t-digest (type `TDIS-TYPE`, encoding 0; spec §6.3),
//! over the module API's typed calls ([`crate::rdb_io`]):
//! ```text
//! double    compression
//! double    min, double max
//! unsigned  cap, merged_nodes, unmerged_nodes, total_compressions
//!           (signed values as their two's complement)
//! double    merged_weight, unmerged_weight
//! double    × merged_nodes: the centroids' means
//! double    × merged_nodes: their weights
//! ```
//! Saved compressed, as 2.8.2 saves (it compresses the stored digest
//! first; [`save`] compresses a scratch copy when the caller did not, so
//! the bytes are 2.8.2's either way). Unmerged points are never written
//! by [`save`].
//!
//! [`save_exact`] writes a digest as it is held: 2.8.2's bytes when it is
//! compressed, else a FerroBloom extension that keeps the points added
//! since the last compress (a server that keeps its digests uncompressed
//! until a read, so that its replicas and AOF replays compress at the same
//! places, must save them so; a compress on saving would change later
//! answers). The extension sets bit 62 of `total_compressions`
//! ([`EXACT_MARK`]), writes the real `unmerged_nodes` and
//! `unmerged_weight`, and after the centroids the points' means then their
//! weights. RedisBloom 2.8.2 refuses it (the fields after its own are not
//! the end of the value Redis expects), without reading beyond its node
//! array (the points fit the capacity). The module does not write it (its
//! saves must load into 2.8.2: it saves with [`save`] and leaves a compress
//! owed instead); the loader still reads it.
//!
//! Loading checks every field (2.8.2 checks none, §6.4): refused are an
//! encoding other than 0, a compression below 1, not finite or whose
//! capacity overflows 32 bits, a cap other than `6·⌊c⌋ + 10`, merged
//! nodes above the cap, unmerged nodes other than 2.8.2's single
//! observation shape, weights negative, fractional or above 2^63 − 1, a
//! total weight above 2^63 − 1, a NaN minimum or maximum, and truncation.
//! The node array (cap nodes) is reserved through the guard only after the
//! nodes were read, so a payload claiming a huge digest allocates no more
//! than its own size before it is refused or asked for.
//!
//! Accepted as 2.8.2 writes them: centroid weights that do not add up to
//! the merged weight (2.8.2 produces that after reloading its own
//! single-observation payload), and non-finite means (its arithmetic can
//! overflow on values near ±1.8e308); neither can crash an evaluation.
//!
//! The single observation (§6.3): 2.8.2 saves a one-observation digest as
//! merged 0, unmerged 1, unmerged weight 1, without the point, and reloads
//! it as a point (0.0, 0). The point's value is in the saved minimum (equal
//! to the maximum for one observation), so it is restored from there: the
//! value survives a save by 2.8.2 too.

use super::digest::{capacity_for, reserve_nodes, Node, SingleObservation, TDigest};
use crate::alloc_guard::{AllocGuard, Unguarded};
pub use crate::rdb_io::{RdbError, RdbInput, RdbOutput};

/// The encoding written and read (2.8.2's).
pub const ENCODING_VERSION: i32 = 0;
/// The module type's name.
pub const TYPE_NAME: &[u8; 9] = b"TDIS-TYPE";

fn invalid(why: &'static str) -> RdbError {
    RdbError::Invalid(why)
}

/// Bit 62 of the saved `total_compressions`: the value carries its
/// unmerged points (see [`save_exact`]). No count reaches it.
pub const EXACT_MARK: u64 = 1 << 62;

/// Writes the digest as it is held (see the module documentation): 2.8.2's
/// bytes when it is compressed, else the extension with the unmerged
/// points. Returns the encoding version.
pub fn save_exact(td: &TDigest, out: &mut dyn RdbOutput) -> i32 {
    if td.is_compressed() {
        write(td, out);
        return ENCODING_VERSION;
    }
    out.write_double(td.compression);
    out.write_double(td.min);
    out.write_double(td.max);
    out.write_unsigned(td.cap as u64);
    out.write_unsigned(td.merged_nodes as u64);
    out.write_unsigned(td.unmerged_nodes() as u64);
    out.write_unsigned(td.total_compressions as u64 | EXACT_MARK);
    out.write_double(td.merged_weight as f64);
    out.write_double(td.unmerged_weight as f64);
    let (merged, unmerged) = td.nodes.split_at(td.merged_nodes);
    for part in [merged, unmerged] {
        for n in part {
            out.write_double(n.mean);
        }
        for n in part {
            out.write_double(n.weight as f64);
        }
    }
    ENCODING_VERSION
}

/// Writes the compressed digest and returns the encoding version.
pub fn save(td: &TDigest, out: &mut dyn RdbOutput) -> i32 {
    let written = td.with_compressed(&Unguarded, |c| write(c.digest(), out));
    if written.is_err() {
        // Unreachable with 64-bit weights; the state as it is beats no value.
        write(td, out);
    }
    ENCODING_VERSION
}

fn write(td: &TDigest, out: &mut dyn RdbOutput) {
    out.write_double(td.compression);
    out.write_double(td.min);
    out.write_double(td.max);
    out.write_unsigned(td.cap as u64);
    out.write_unsigned(td.merged_nodes as u64);
    out.write_unsigned(td.unmerged_nodes() as u64);
    out.write_unsigned(td.total_compressions as u64);
    out.write_double(td.merged_weight as f64);
    out.write_double(td.unmerged_weight as f64);
    let merged = &td.nodes[..td.merged_nodes];
    for n in merged {
        out.write_double(n.mean);
    }
    for n in merged {
        out.write_double(n.weight as f64);
    }
}

/// A double holding a whole count in [0, 2^63 − 1].
fn count(x: f64, why: &'static str) -> Result<i64, RdbError> {
    if (0.0..9_223_372_036_854_775_808.0).contains(&x) && x.fract() == 0.0 {
        Ok(x as i64)
    } else {
        Err(invalid(why))
    }
}

/// Reads a value of encoding `encver`; the node array is asked of `guard`
/// (pass [`Unguarded`] for persisted data, which is never refused).
pub fn load(
    input: &mut dyn RdbInput,
    encver: i32,
    guard: &dyn AllocGuard,
) -> Result<TDigest, RdbError> {
    load_telling_single(input, encver, guard).map(|(td, _)| td)
}

/// [`load`], telling also whether the value was 2.8.2's single-observation
/// shape (its point restored from the minimum, not merged): a server may
/// compress it at once, as every server loading it does the same.
pub fn load_telling_single(
    input: &mut dyn RdbInput,
    encver: i32,
    guard: &dyn AllocGuard,
) -> Result<(TDigest, bool), RdbError> {
    if encver != ENCODING_VERSION {
        return Err(invalid("unknown encoding version of a t-digest"));
    }
    let compression = input.read_double()?;
    let cap = capacity_for(compression)
        .map_err(|_| invalid("compression below 1, not finite or too large"))?;
    let min = input.read_double()?;
    let max = input.read_double()?;
    if min.is_nan() || max.is_nan() {
        return Err(invalid("NaN minimum or maximum"));
    }
    if input.read_unsigned()? != cap as u64 {
        return Err(invalid("capacity is not 6 x compression + 10"));
    }
    let merged_nodes = input.read_unsigned()?;
    if merged_nodes > cap as u64 {
        return Err(invalid("more merged nodes than the capacity"));
    }
    let unmerged_nodes = input.read_unsigned()?;
    let compressions = input.read_unsigned()?;
    let exact = compressions & EXACT_MARK != 0;
    let total_compressions = (compressions & !EXACT_MARK) as i64;
    let merged_weight = count(input.read_double()?, "merged weight not a count")?;
    let unmerged_weight = count(input.read_double()?, "unmerged weight not a count")?;
    merged_weight
        .checked_add(unmerged_weight)
        .ok_or(invalid("total weight above 2^63 - 1"))?;
    let single = match unmerged_nodes {
        _ if exact => {
            if unmerged_nodes == 0 || unmerged_nodes > cap as u64 - merged_nodes {
                return Err(invalid("unmerged points outside the capacity"));
            }
            false
        }
        0 if unmerged_weight == 0 => false,
        1 if merged_nodes == 0 && unmerged_weight <= 1 => true,
        _ => {
            return Err(invalid(
                "unmerged nodes other than 2.8.2's single observation",
            ))
        }
    };
    // Read before reserving: at most what the payload holds.
    let mut means = Vec::new();
    for _ in 0..merged_nodes {
        means.push(input.read_double()?);
    }
    let mut nodes = reserve_nodes(cap, guard).map_err(|_| invalid("node array refused"))?;
    let mut sum: i64 = 0;
    for mean in means {
        let weight = count(input.read_double()?, "centroid weight not a count")?;
        sum = sum
            .checked_add(weight)
            .ok_or(invalid("centroid weights above 2^63 - 1"))?;
        nodes.push(Node { mean, weight });
    }
    if exact {
        let mut means = Vec::new();
        for _ in 0..unmerged_nodes {
            means.push(input.read_double()?);
        }
        let mut sum: i64 = 0;
        for mean in means {
            let weight = count(input.read_double()?, "point weight not a count")?;
            sum = sum
                .checked_add(weight)
                .ok_or(invalid("point weights above 2^63 - 1"))?;
            nodes.push(Node { mean, weight });
        }
        if sum != unmerged_weight {
            return Err(invalid(
                "point weights do not add up to the unmerged weight",
            ));
        }
    }
    if single {
        let mean = if min == max { min } else { 0.0 };
        nodes.push(Node {
            mean,
            weight: unmerged_weight,
        });
    }
    let td = TDigest {
        compression,
        cap,
        min,
        max,
        nodes,
        merged_nodes: merged_nodes as usize,
        merged_weight,
        unmerged_weight,
        total_compressions,
        single: SingleObservation::default(),
    };
    Ok((td, single))
}
