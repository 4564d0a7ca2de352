//! t-digests (TDIS-TYPE): they have no SCANDUMP, so one is copied whole
//! with DUMP and RESTORE into the temporary key, verified, and renamed
//! into place. RedisBloom 2.8.2 and FerroBloom write the same encoding,
//! so digests move both ways.
//!
//! A DUMP is the compressed digest. RedisBloom 2.8.2 compresses the stored
//! digest itself to write it (as it does on every read), FerroBloom a
//! scratch copy: after a copy, TDIGEST.INFO's merged and unmerged nodes
//! and its compression count may differ between source and copy while
//! every answer is the same. So the copy is verified by what both mean:
//! both DUMP payloads decoded here and compressed hold the same
//! compression, capacity, range, observations and centroids; TDIGEST.INFO
//! agrees on compression, capacity, observations and memory; and MIN,
//! MAX, QUANTILE at fixed fractions and CDF at the answered values give
//! the same doubles on both servers (compared as numbers: Redis 7.0 and
//! 7.2 print them differently). One exception, documented in
//! docs/tdigest.md: a digest of one observation answers `nan` on 2.8.2
//! and its value on FerroBloom; there only MIN and MAX are compared.

use ferrobloom_core::tdigest::{dump, TDigest};
use ferrobloom_core::Unguarded;

use super::super::copy::Ends;
use super::super::protocol::{into_place, server_error, show};
use super::super::state::{hex, Event};
use super::whole::{self, ask, double, failed, same_double};
use super::{Family, Job, Prepared};
use crate::conn::{Server, TDIGEST_TYPE};
use crate::fmt;
use crate::reply;
use crate::slot;
use crate::{Failure, Result};

pub struct TDigestFamily;

impl Family for TDigestFamily {
    fn type_name(&self) -> &'static str {
        TDIGEST_TYPE
    }

    fn name(&self) -> &'static str {
        "t-digests"
    }

    fn noun(&self) -> &'static str {
        "t-digest"
    }

    fn data(&self) -> &'static str {
        "nodes"
    }

    fn prepare(&self, src: &mut Server, key: &[u8]) -> Result<Option<Prepared>> {
        Ok(tdigest_info(src, key)?.map(|info| Prepared {
            header: Vec::new(),
            data_bytes: 16 * info.capacity,
            recreate: None,
            cell_size: None,
            nul_item: None,
        }))
    }

    fn refused_by(&self, dst: &Server) -> Result<Option<String>> {
        Ok(whole::lacking(dst, "TDIGEST.INFO")?.map(|node| {
            format!(
                "{} cannot hold t-digests: {node} has no TDIGEST.INFO (its module has no \
                 TDIS-TYPE); load FerroBloom or RedisBloom there",
                dst.label
            )
        }))
    }

    fn copy(&self, ends: &mut Ends<'_>, job: &Job) -> Result<std::result::Result<String, String>> {
        copy_tdigest(ends, job)
    }
}

/// The TDIGEST.INFO numbers a copy keeps whatever either server compressed.
#[derive(Debug, PartialEq)]
struct Info {
    compression: u64,
    capacity: u64,
    observations: u64,
    memory_usage: u64,
}

/// TDIGEST.INFO of a key, or None when it is gone.
fn tdigest_info(server: &mut Server, key: &[u8]) -> Result<Option<Info>> {
    let what = format!("TDIGEST.INFO {}", show(key));
    let reply: redis::Value = match server.query(redis::cmd("TDIGEST.INFO").arg(key)) {
        Ok(v) => v,
        Err(e) if reply::is_not_found(&e) => return Ok(None),
        Err(e) => return Err(server_error(server, &what, &e)),
    };
    let bad = || Failure::new(format!("{what} on {}: unexpected reply", server.label));
    let pairs = reply::pairs(reply).ok_or_else(bad)?;
    let get = |name: &str| {
        reply::field(&pairs, name)
            .and_then(reply::uint)
            .ok_or_else(bad)
    };
    Ok(Some(Info {
        compression: get("Compression")?,
        capacity: get("Capacity")?,
        observations: get("Observations")?,
        memory_usage: get("Memory usage")?,
    }))
}

/// The digest compressed (as every read and DUMP sees it), without the
/// counts of compressions done.
struct Meaning {
    compression: u64,
    capacity: i64,
    min: u64,
    max: u64,
    observations: i64,
    /// Each centroid's mean (bits) and weight.
    centroids: Vec<(u64, i64)>,
}

fn meaning(td: &TDigest) -> std::result::Result<Meaning, String> {
    td.with_compressed(&Unguarded, |c| {
        let d = c.digest();
        Meaning {
            compression: d.compression().to_bits(),
            capacity: d.capacity(),
            min: d.min_raw().to_bits(),
            max: d.max_raw().to_bits(),
            observations: d.total_weight(),
            centroids: d.nodes()[..d.merged_nodes()]
                .iter()
                .map(|n| (n.mean.to_bits(), n.weight))
                .collect(),
        }
    })
    .map_err(|e| format!("{e:?}"))
}

fn same_value(a: &TDigest, b: &TDigest) -> std::result::Result<bool, String> {
    let (a, b) = (meaning(a)?, meaning(b)?);
    Ok((a.compression, a.capacity, a.min, a.max, a.observations)
        == (b.compression, b.capacity, b.min, b.max, b.observations)
        && a.centroids == b.centroids)
}

fn describe(td: &TDigest) -> String {
    format!(
        "compression {}, {} observations, {} merged and {} unmerged nodes, range {} to {}",
        td.compression(),
        td.total_weight(),
        td.merged_nodes(),
        td.unmerged_nodes(),
        td.min_raw(),
        td.max_raw()
    )
}

/// The fractions QUANTILE is asked at.
const FRACTIONS: [f64; 9] = [0.0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0];

/// A command's reply as doubles (an array, or one double).
fn doubles(server: &mut Server, cmd: &redis::Cmd, what: &str) -> Result<Vec<f64>> {
    let reply = ask(server, cmd, what)?;
    let bad = || Failure::new(format!("{what} on {}: unexpected reply", server.label));
    match reply {
        redis::Value::Array(items) => items.iter().map(|v| double(v).ok_or_else(bad)).collect(),
        one => Ok(vec![double(&one).ok_or_else(bad)?]),
    }
}

/// MIN, MAX, QUANTILE at [`FRACTIONS`], and (`all`) CDF at `at`.
fn answers(server: &mut Server, key: &[u8], at: &[f64], all: bool) -> Result<Vec<f64>> {
    let mut out = doubles(server, redis::cmd("TDIGEST.MIN").arg(key), "TDIGEST.MIN")?;
    out.extend(doubles(
        server,
        redis::cmd("TDIGEST.MAX").arg(key),
        "TDIGEST.MAX",
    )?);
    if !all {
        return Ok(out);
    }
    out.extend(doubles(
        server,
        redis::cmd("TDIGEST.QUANTILE").arg(key).arg(&FRACTIONS[..]),
        "TDIGEST.QUANTILE",
    )?);
    if !at.is_empty() {
        // Values as `{:?}` prints them: the shortest text that reads back
        // as the same double.
        let values: Vec<String> = at.iter().map(|v| format!("{v:?}")).collect();
        out.extend(doubles(
            server,
            redis::cmd("TDIGEST.CDF").arg(key).arg(&values),
            "TDIGEST.CDF",
        )?);
    }
    Ok(out)
}

/// Copies one digest: DUMP at the source, RESTORE into the temporary key,
/// verify, rename into place.
fn copy_tdigest(ends: &mut Ends<'_>, job: &Job) -> Result<std::result::Result<String, String>> {
    let (key, dest) = (&job.key[..], &job.dest[..]);
    let temp = slot::temp_key(dest);
    ends.bars.copy.set_message(show(key));
    let Some(payload) = whole::dump_source(ends, job)? else {
        ends.bars.copy.inc(job.data_bytes);
        return Ok(Ok(format!(
            "{}: deleted at the source since the scan; nothing copied",
            show(key)
        )));
    };
    let source = match dump::load_payload(&payload, &Unguarded) {
        Ok(s) => s,
        Err(e) => {
            return Ok(Err(format!(
                "{}: its DUMP payload does not decode as a t-digest here ({e:?}); nothing copied",
                show(key)
            )))
        }
    };
    if let Err(why) = whole::restore(ends, job, &temp, &payload)? {
        return Ok(Err(why));
    }
    ends.bars.copy.inc(job.data_bytes);

    // The value: the copy's own DUMP decodes to the same digest.
    let copied = whole::dump_copy(ends.dst, &temp)?;
    let verdict = match copied.as_deref().map(|p| dump::load_payload(p, &Unguarded)) {
        Some(Ok(c)) => same_value(&source, &c).map(|same| (same, describe(&c))),
        Some(Err(e)) => Err(format!("the copy's DUMP does not decode ({e:?})")),
        None => Err("the copy is gone".into()),
    };
    match verdict {
        Ok((true, _)) => {}
        Ok((false, copy)) => {
            let what = format!("source {}; copy {copy}", describe(&source));
            return Err(failed(ends.dst, job, &temp, what));
        }
        Err(what) => return Err(failed(ends.dst, job, &temp, what)),
    }
    let (src_info, dst_info) = (tdigest_info(ends.src, key)?, tdigest_info(ends.dst, &temp)?);
    if src_info.is_none() || src_info != dst_info {
        let what = format!(
            "TDIGEST.INFO differs (source: {src_info:?}; copy: {dst_info:?}); was the source \
             written to during the copy?"
        );
        return Err(failed(ends.dst, job, &temp, what));
    }
    // The answers. One observation is 2.8.2's `nan` and FerroBloom's value
    // (a documented fix): MIN and MAX only, then.
    let single = source.total_weight() == 1;
    let quantiles = answers(ends.src, key, &[], !single)?;
    let at: Vec<f64> = quantiles
        .iter()
        .copied()
        .filter(|x| x.is_finite())
        .collect();
    let (a, b) = (
        answers(ends.src, key, &at, !single)?,
        answers(ends.dst, &temp, &at, !single)?,
    );
    if a.len() != b.len() || !a.iter().zip(&b).all(|(x, y)| same_double(*x, *y)) {
        let what = format!(
            "MIN, MAX, QUANTILE and CDF answers: source {a:?}, copy {b:?} (QUANTILE at \
             {FRACTIONS:?}, CDF at {at:?})"
        );
        return Err(failed(ends.dst, job, &temp, what));
    }
    into_place(ends.dst, &temp, dest, ends.run)?;
    ends.run.record(Event::Done { key: hex(key) })?;
    Ok(Ok(format!(
        "{} -> {}: t-digest compression {}, {}, {} bytes, DUMP/RESTORE of {} bytes; verified \
         (compression, range, observations and centroids equal, TDIGEST.INFO equal, {})",
        show(key),
        show(dest),
        source.compression(),
        fmt::count(source.total_weight().max(0) as u64, "observation"),
        fmt::int(job.data_bytes),
        fmt::int(payload.len() as u64),
        if single {
            "MIN and MAX equal (one observation: RedisBloom 2.8.2 answers nan to the rest)"
        } else {
            "MIN, MAX, QUANTILE and CDF equal"
        }
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrobloom_core::dump_format::RDB_VERSION_7_0;

    #[test]
    fn compressed_and_uncompressed_mean_the_same() {
        let mut td = TDigest::new(20.0, &Unguarded).unwrap();
        for i in 0..300 {
            td.add(f64::from(i % 37)).unwrap();
        }
        let payload = dump::dump_payload(&td, RDB_VERSION_7_0);
        let back = dump::load_payload(&payload, &Unguarded).unwrap();
        assert!(td.has_unmerged() && !back.has_unmerged());
        assert_eq!(same_value(&td, &back), Ok(true));
        let mut other = back.clone();
        other.add(5.0).unwrap();
        assert_eq!(same_value(&td, &other), Ok(false));
    }
}
