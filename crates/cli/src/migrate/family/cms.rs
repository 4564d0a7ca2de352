//! Count-Min sketches (CMSk-TYPE): they have no SCANDUMP, so one is copied
//! whole with DUMP and RESTORE into the temporary key, verified, and
//! renamed into place. A sketch with 4-byte cells has the same DUMP on
//! RedisBloom 2.8.2 and FerroBloom, so it moves both ways; one with 1-, 2-
//! or 8-byte cells (RedisBloom 8.12's CELL_SIZE) loads on FerroBloom only,
//! and is refused before anything is copied where the destination cannot
//! load it (a 1×1 sketch with 8-byte cells is RESTOREd there as a probe).
//!
//! Verified three ways: both DUMP payloads decoded here hold the same
//! width, depth, cell size, count and cells; CMS.INFO agrees; and CMS.QUERY
//! of a few probe items gives the same estimates on both servers (the
//! destination reads the cells as the source does).

use ferrobloom_core::cms::{dump, CellSize, CountMinSketch};
use ferrobloom_core::dump_format::RDB_VERSION_7_0;
use ferrobloom_core::Unguarded;

use super::super::copy::Ends;
use super::super::protocol::{into_place, is_connection_problem, server_error, show, unlink};
use super::super::state::{hex, Event};
use super::whole::{self, failed};
use super::{Family, Job, Prepared};
use crate::conn::{Server, CMS_TYPE};
use crate::fmt;
use crate::reply;
use crate::slot;
use crate::{Failure, Result};

pub struct Cms;

impl Family for Cms {
    fn type_name(&self) -> &'static str {
        CMS_TYPE
    }

    fn name(&self) -> &'static str {
        "Count-Min sketches"
    }

    fn noun(&self) -> &'static str {
        "Count-Min sketch"
    }

    fn data(&self) -> &'static str {
        "cells"
    }

    fn prepare(&self, src: &mut Server, key: &[u8]) -> Result<Option<Prepared>> {
        let Some(info) = cms_info(src, key)? else {
            return Ok(None);
        };
        let cell_size = info.cell_size.unwrap_or(CellSize::DEFAULT.bytes());
        Ok(Some(Prepared {
            header: Vec::new(),
            data_bytes: info
                .width
                .saturating_mul(info.depth)
                .saturating_mul(cell_size),
            recreate: None,
            cell_size: Some(cell_size),
            nul_item: None,
        }))
    }

    fn refused_by(&self, dst: &Server) -> Result<Option<String>> {
        Ok(lacks_sketches(dst)?.map(|node| {
            format!(
                "{} cannot hold Count-Min sketches: {node} has no CMS.INFO (its module has no \
                 CMSk-TYPE); load FerroBloom or RedisBloom there",
                dst.label
            )
        }))
    }

    fn refused_jobs(&self, dst: &mut Server, jobs: &[&Job]) -> Result<Vec<Option<String>>> {
        jobs.iter()
            .map(|job| match job.cell_size.and_then(CellSize::from_bytes) {
                Some(size) if size != CellSize::DEFAULT => loads_cell_size(dst, &job.dest, size),
                _ => Ok(None),
            })
            .collect()
    }

    fn copy(&self, ends: &mut Ends<'_>, job: &Job) -> Result<std::result::Result<String, String>> {
        copy_sketch(ends, job)
    }
}

/// CMS.INFO's numbers: 2.8.2 has width, depth and count; FerroBloom and
/// RedisBloom 8.12 add cell_size.
#[derive(Debug, PartialEq)]
struct Info {
    width: u64,
    depth: u64,
    /// As the server prints it: 2.8.2 signed, 8.12 capped at 2^63 − 1.
    count: i64,
    cell_size: Option<u64>,
}

/// CMS.INFO of a key, or None when it is gone.
fn cms_info(server: &mut Server, key: &[u8]) -> Result<Option<Info>> {
    let what = format!("CMS.INFO {}", show(key));
    let reply: redis::Value = match server.query(redis::cmd("CMS.INFO").arg(key)) {
        Ok(v) => v,
        Err(e) if reply::is_not_found(&e) => return Ok(None),
        Err(e) => return Err(server_error(server, &what, &e)),
    };
    let bad = || Failure::new(format!("{what} on {}: unexpected reply", server.label));
    let pairs = reply::pairs(reply).ok_or_else(bad)?;
    let get = |name: &str| reply::field(&pairs, name).and_then(reply::int);
    let (Some(width), Some(depth), Some(count)) = (get("width"), get("depth"), get("count")) else {
        return Err(bad());
    };
    Ok(Some(Info {
        width: u64::try_from(width).map_err(|_| bad())?,
        depth: u64::try_from(depth).map_err(|_| bad())?,
        count,
        cell_size: get("cell_size").and_then(|n| u64::try_from(n).ok()),
    }))
}

/// The first master of `server` without Count-Min sketches (`CMS.INFO`
/// is an unknown command there), or None when all have them.
fn lacks_sketches(server: &Server) -> Result<Option<String>> {
    for (name, mut conn) in server.node_connections()? {
        // Without arguments: an arity error where the command exists.
        match redis::cmd("CMS.INFO").query::<redis::Value>(&mut conn) {
            Err(e) if is_connection_problem(&e) => {
                return Err(server_error(server, "CMS.INFO", &e));
            }
            Err(e) if reply::is_unknown_command(&e) => return Ok(Some(name)),
            _ => {}
        }
    }
    Ok(None)
}

/// Whether the master of `dest` loads a sketch with `size` cells: a 1×1
/// sketch with 8-byte cells is RESTOREd into the temporary key and
/// deleted (a module that reads one size other than 4 reads them all, and
/// 8-byte cells are never shorter than a module reading 4-byte cells
/// expects). Why not, or None when it does.
fn loads_cell_size(dst: &mut Server, dest: &[u8], size: CellSize) -> Result<Option<String>> {
    let probe = CountMinSketch::new(1, 1, CellSize::Eight, &Unguarded).expect("a 1x1 sketch");
    // An old RDB version, which every server reads.
    let payload = dump::dump_payload(&probe, RDB_VERSION_7_0);
    let temp = slot::temp_key(dest);
    unlink(dst, &temp)?;
    match dst.query::<()>(redis::cmd("RESTORE").arg(&temp).arg(0).arg(&payload[..])) {
        Ok(()) => {
            unlink(dst, &temp)?;
            Ok(None)
        }
        Err(e) if is_connection_problem(&e) => Err(server_error(dst, "RESTORE", &e)),
        Err(e) => {
            let _ = unlink(dst, &temp);
            Ok(Some(format!(
                "a sketch with {n}-byte cells (CELL_SIZE {n}), which {} cannot load (RESTORE \
                 of a sketch with 8-byte cells answers {} there): RedisBloom reads 4-byte cells \
                 only (2.8.2 has no CELL_SIZE, and 8.12 cannot read FerroBloom's layout of the \
                 other sizes). It was not copied; copy it to a FerroBloom server",
                dst.label,
                reply::describe_error(&e),
                n = size.bytes(),
            )))
        }
    }
}

/// Items whose estimates both servers must give alike.
const PROBES: usize = 16;

fn probe_items() -> Vec<String> {
    (0..PROBES)
        .map(|i| format!("ferrobloom-migrate-probe-{i}"))
        .collect()
}

/// A sketch's whole value, as decoded from a DUMP payload.
fn same_value(a: &CountMinSketch, b: &CountMinSketch) -> bool {
    (a.width(), a.depth(), a.cell_size(), a.count())
        == (b.width(), b.depth(), b.cell_size(), b.count())
        && a.cell_bytes() == b.cell_bytes()
}

fn describe(s: &CountMinSketch) -> String {
    format!(
        "{}x{}, {}-byte cells, count {}, cells xxh3-128 {:032x}",
        s.width(),
        s.depth(),
        s.cell_size().bytes(),
        s.count(),
        xxhash_rust::xxh3::xxh3_128(s.cell_bytes())
    )
}

/// Copies one sketch: DUMP at the source, RESTORE into the temporary key,
/// verify, rename into place. `Ok(Err(why))` when the destination cannot
/// take it (the others are still copied).
fn copy_sketch(ends: &mut Ends<'_>, job: &Job) -> Result<std::result::Result<String, String>> {
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
    let source = match dump::load_payload(&payload) {
        Ok(s) => s,
        Err(e) => {
            return Ok(Err(format!(
                "{}: its DUMP payload does not decode as a Count-Min sketch here ({e:?}); \
                 nothing copied",
                show(key)
            )))
        }
    };
    if let Err(why) = whole::restore(ends, job, &temp, &payload)? {
        return Ok(Err(why));
    }
    ends.bars.copy.inc(job.data_bytes);

    let fail = |dst: &mut Server, what: String| failed(dst, job, &temp, what);
    // The value: the copy's own DUMP decodes to the same sketch.
    let copy = whole::dump_copy(ends.dst, &temp)?;
    let copied = copy.as_deref().map(dump::load_payload);
    match &copied {
        Some(Ok(c)) if same_value(&source, c) => {}
        Some(Ok(c)) => {
            return Err(fail(
                ends.dst,
                format!("source {}; copy {}", describe(&source), describe(c)),
            ))
        }
        Some(Err(e)) => {
            return Err(fail(
                ends.dst,
                format!("the copy's DUMP does not decode ({e:?})"),
            ))
        }
        None => return Err(fail(ends.dst, "the copy is gone".into())),
    }
    // CMS.INFO: the fields both servers print (2.8.2 prints a count past
    // 2^63 − 1 negative, 8.12 caps it: compared below that only).
    let (src_info, dst_info) = (cms_info(ends.src, key)?, cms_info(ends.dst, &temp)?);
    let agree = match (&src_info, &dst_info) {
        (Some(a), Some(b)) => {
            (a.width, a.depth) == (b.width, b.depth)
                && (source.count() > i64::MAX as u64 || a.count == b.count)
                && (a.cell_size.is_none() || b.cell_size.is_none() || a.cell_size == b.cell_size)
        }
        _ => false,
    };
    if !agree {
        return Err(fail(
            ends.dst,
            format!(
                "CMS.INFO differs (source: {src_info:?}; copy: {dst_info:?}); was the source \
                 written to during the copy?"
            ),
        ));
    }
    // The estimates: both modules place items in the same cells.
    let items = probe_items();
    let query = |server: &mut Server, k: &[u8]| -> Result<Vec<u64>> {
        server
            .query(redis::cmd("CMS.QUERY").arg(k).arg(&items))
            .map_err(|e| server_error(server, "CMS.QUERY", &e))
    };
    let (a, b) = (query(ends.src, key)?, query(ends.dst, &temp)?);
    if a != b {
        return Err(fail(
            ends.dst,
            format!("CMS.QUERY of {PROBES} probe items: source {a:?}, copy {b:?}"),
        ));
    }
    into_place(ends.dst, &temp, dest, ends.run)?;
    ends.run.record(Event::Done { key: hex(key) })?;
    Ok(Ok(format!(
        "{} -> {}: Count-Min sketch {}x{}, {}-byte cells, {} bytes, count {}, DUMP/RESTORE of {} \
         bytes; verified (xxh3-128 {:032x} of the cells; width, depth, count and cells equal, \
         CMS.INFO and CMS.QUERY equal)",
        show(key),
        show(dest),
        source.width(),
        source.depth(),
        source.cell_size().bytes(),
        fmt::int(job.data_bytes),
        fmt::int(source.count()),
        fmt::int(payload.len() as u64),
        xxhash_rust::xxh3::xxh3_128(source.cell_bytes()),
    )))
}
