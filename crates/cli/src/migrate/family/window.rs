//! Windowed filters (FBwindows): they have no SCANDUMP, so one is copied
//! whole with DUMP and RESTORE into the temporary key, verified (the
//! copy's own DUMP holds the same value, DEBUG DIGEST-VALUE agrees where
//! both servers allow DEBUG, BF.INFO and BF.CARD are equal), and renamed
//! into place. A destination that cannot RESTORE it (an older RDB format,
//! a module without windows) is reported for that filter; the others are
//! still copied.

use ferrobloom_core::dump_format;

use super::super::copy::Ends;
use super::super::progress::Stop;
use super::super::protocol::{
    bloom_counters, describe_info, into_place, is_connection_problem, server_error, show, unlink,
};
use super::super::state::{hex, Event};
use super::{whole, Family, Job, Prepared};
use crate::conn::{Server, WINDOW_TYPE};
use crate::fmt;
use crate::reply;
use crate::slot;
use crate::{Failure, Result};

pub struct Window;

impl Family for Window {
    fn type_name(&self) -> &'static str {
        WINDOW_TYPE
    }

    fn name(&self) -> &'static str {
        "windowed filters"
    }

    fn prepare(&self, src: &mut Server, key: &[u8]) -> Result<Option<Prepared>> {
        Ok(window_size(src, key)?.map(|data_bytes| Prepared {
            header: Vec::new(),
            data_bytes,
            recreate: None,
            cell_size: None,
            nul_item: None,
        }))
    }

    fn refused_by(&self, dst: &Server) -> Result<Option<String>> {
        Ok(lacks_windows(dst)?.map(|node| {
            format!(
                "{} cannot hold windowed filters: {node} has no FBwindows type (BF.PLAN ... \
                 WINDOW is refused there: RedisBloom, or a FerroBloom without windows); load \
                 a FerroBloom with windowed filters there, or recreate the window with \
                 BF.RESERVE ... WINDOW",
                dst.label
            )
        }))
    }

    fn copy(&self, ends: &mut Ends<'_>, job: &Job) -> Result<std::result::Result<String, String>> {
        copy_window(ends, job)
    }
}

/// A windowed filter's size (BF.INFO key SIZE: its bit arrays), or None
/// when the key is gone.
fn window_size(server: &mut Server, key: &[u8]) -> Result<Option<u64>> {
    match server.query::<redis::Value>(redis::cmd("BF.INFO").arg(key).arg("SIZE")) {
        Ok(v) => {
            let size = match &v {
                redis::Value::Array(a) => a.first().and_then(reply::uint),
                redis::Value::Map(m) => m.first().and_then(|(_, v)| reply::uint(v)),
                other => reply::uint(other),
            };
            size.map(Some).ok_or_else(|| {
                Failure::new(format!(
                    "BF.INFO {} SIZE on {}: unexpected reply",
                    show(key),
                    server.label
                ))
            })
        }
        Err(e) if reply::is_not_found(&e) => Ok(None),
        Err(e) => Err(server_error(
            server,
            &format!("BF.INFO {} SIZE", show(key)),
            &e,
        )),
    }
}

/// The first master of `server` whose module has no windowed filters
/// (`BF.PLAN 1000 0.01 WINDOW 1000`, which allocates nothing, is refused
/// there), or None when all have them.
fn lacks_windows(server: &Server) -> Result<Option<String>> {
    for (name, mut conn) in server.node_connections()? {
        let probe = redis::cmd("BF.PLAN")
            .arg(1000)
            .arg(0.01)
            .arg("WINDOW")
            .arg(1000)
            .query::<redis::Value>(&mut conn);
        match probe {
            Ok(_) => {}
            Err(e) if is_connection_problem(&e) => {
                return Err(server_error(server, "BF.PLAN", &e));
            }
            Err(_) => return Ok(Some(name)),
        }
    }
    Ok(None)
}

/// The RDB format version a DUMP payload was written in (the two bytes
/// before its CRC).
fn payload_rdb_version(payload: &[u8]) -> Option<u16> {
    dump_format::unchecked_parts(payload).map(|(_, version)| version)
}

/// A DUMP payload without its RDB version and CRC: the value itself, the
/// same whatever server wrote it.
fn payload_value(payload: &[u8]) -> &[u8] {
    dump_format::unchecked_parts(payload).map_or(&[], |(value, _)| value)
}

/// `Redis 7.0.15`, `Valkey 9.1.0`: the first master's server and version.
fn server_version(server: &Server) -> String {
    let Ok(nodes) = server.node_connections() else {
        return "version unknown".into();
    };
    let Some((_, mut conn)) = nodes.into_iter().next() else {
        return "version unknown".into();
    };
    let text: String = redis::cmd("INFO")
        .arg("server")
        .query(&mut conn)
        .unwrap_or_default();
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .map(|v| v.trim().to_string())
    };
    match (field("valkey_version"), field("redis_version")) {
        (Some(v), _) => format!("Valkey {v}"),
        (None, Some(v)) => format!("Redis {v}"),
        _ => "version unknown".into(),
    }
}

/// DEBUG DIGEST-VALUE of a key, or None where DEBUG is not allowed.
fn digest_value(server: &mut Server, key: &[u8]) -> Result<Option<String>> {
    match server.query::<Vec<String>>(redis::cmd("DEBUG").arg("DIGEST-VALUE").arg(key)) {
        Ok(mut v) if v.len() == 1 => Ok(v.pop()),
        Ok(_) => Ok(None),
        Err(e) if is_connection_problem(&e) => Err(server_error(server, "DEBUG DIGEST-VALUE", &e)),
        Err(_) => Ok(None),
    }
}

/// Copies one windowed filter: DUMP at the source, RESTORE into the
/// temporary key, verify, rename into place. `Ok(Err(why))` when the
/// destination cannot take it (the others are still copied).
fn copy_window(ends: &mut Ends<'_>, job: &Job) -> Result<std::result::Result<String, String>> {
    let (key, dest) = (&job.key[..], &job.dest[..]);
    let temp = slot::temp_key(dest);
    ends.bars.copy.set_message(show(key));
    let payload: Option<Vec<u8>> = match ends.src.query(redis::cmd("DUMP").arg(key)) {
        Ok(p) => p,
        Err(e) if is_connection_problem(&e) => {
            return Err(ends
                .run
                .stopped(Stop::Connection(server_error(ends.src, "DUMP", &e).message)))
        }
        Err(e) => return Err(server_error(ends.src, &format!("DUMP {}", show(key)), &e)),
    };
    let Some(payload) = payload else {
        ends.bars.copy.inc(job.data_bytes);
        return Ok(Ok(format!(
            "{}: deleted at the source since the scan; nothing copied",
            show(key)
        )));
    };
    // The payload arrives whole in one argument.
    if let Some(limit) = ends
        .dst
        .config_get("proto-max-bulk-len")?
        .and_then(|v| v.trim().parse::<u64>().ok())
    {
        if payload.len() as u64 > limit {
            return Ok(Err(format!(
                "{}: its DUMP payload is {} bytes ({}), over the proto-max-bulk-len of {} ({}); \
                 raise it there (CONFIG SET proto-max-bulk-len) to copy this filter",
                show(key),
                fmt::int(payload.len() as u64),
                fmt::bytes(payload.len() as u64),
                ends.dst.label,
                fmt::bytes(limit)
            )));
        }
    }
    let restamped = match whole::for_destination(ends, job, &temp, &payload)? {
        Ok(p) => p,
        Err(why) => return Ok(Err(why)),
    };
    unlink(ends.dst, &temp)?;
    let restored = ends
        .dst
        .query::<()>(redis::cmd("RESTORE").arg(&temp).arg(0).arg(&restamped[..]));
    if let Err(e) = restored {
        if is_connection_problem(&e) {
            return Err(ends.run.stopped(Stop::Connection(
                server_error(ends.dst, "RESTORE", &e).message,
            )));
        }
        let _ = unlink(ends.dst, &temp);
        let said = reply::describe_error(&e);
        let why = if said.contains("payload version or checksum") {
            format!(
                "{}: {} refused RESTORE ({said}): the payload is in RDB format {} ({}, {}), \
                 which {} ({}) does not read{}. Recreate the window there with BF.RESERVE ... \
                 WINDOW, or copy it to a server that reads that format",
                show(key),
                ends.dst.label,
                payload_rdb_version(&restamped).map_or("?".into(), |v| v.to_string()),
                ends.src.label,
                server_version(ends.src),
                ends.dst.label,
                server_version(ends.dst),
                whole::not_restamped(ends, &e)
            )
        } else if said.contains("Bad data format") {
            format!(
                "{}: {} refused RESTORE ({said}): its module cannot load a windowed filter \
                 (FBwindows); load a FerroBloom with windowed filters there",
                show(key),
                ends.dst.label
            )
        } else {
            format!("{}: {} refused RESTORE: {said}", show(key), ends.dst.label)
        };
        return Ok(Err(why));
    }
    ends.bars.copy.inc(job.data_bytes);

    // Verify: the copy's own DUMP holds the same value, byte for byte;
    // DEBUG DIGEST-VALUE agrees where both servers allow DEBUG; BF.INFO and
    // BF.CARD are equal.
    let fail = |dst: &mut Server, what: String| -> Failure {
        let _ = unlink(dst, &temp);
        Failure::new(format!(
            "VERIFICATION FAILED for {} -> {}: {what}. The copy was deleted and {} left as it \
             was; run the command again to copy it again",
            show(key),
            show(dest),
            show(dest)
        ))
    };
    let copy: Option<Vec<u8>> = ends
        .dst
        .query(redis::cmd("DUMP").arg(&temp))
        .map_err(|e| server_error(ends.dst, "DUMP", &e))?;
    let source_digest = xxhash_rust::xxh3::xxh3_128(payload_value(&payload));
    let copy_digest = copy
        .as_deref()
        .map(|c| xxhash_rust::xxh3::xxh3_128(payload_value(c)));
    if copy_digest != Some(source_digest) {
        return Err(fail(
            ends.dst,
            format!(
                "xxh3-128 of the source's DUMP value {source_digest:032x}, of the copy's {}",
                copy_digest.map_or("(gone)".into(), |d| format!("{d:032x}"))
            ),
        ));
    }
    let digests = (digest_value(ends.src, key)?, digest_value(ends.dst, &temp)?);
    let digest_note = match &digests {
        (Some(a), Some(b)) if a != b => {
            return Err(fail(
                ends.dst,
                format!("DEBUG DIGEST-VALUE {a} at the source, {b} for the copy"),
            ))
        }
        (Some(a), Some(_)) => format!("DEBUG DIGEST-VALUE {a}, "),
        _ => String::new(),
    };
    let (src_info, src_card) = bloom_counters(ends.src, key)?;
    let (dst_info, dst_card) = bloom_counters(ends.dst, &temp)?;
    if src_info != dst_info || src_card != dst_card {
        return Err(fail(
            ends.dst,
            format!(
                "BF.INFO/BF.CARD differ (source: {}, BF.CARD {src_card}; copy: {}, BF.CARD \
                 {dst_card}); was the source written to during the copy?",
                describe_info(&src_info),
                describe_info(&dst_info)
            ),
        ));
    }
    into_place(ends.dst, &temp, dest, ends.run)?;
    ends.run.record(Event::Done { key: hex(key) })?;
    Ok(Ok(format!(
        "{} -> {}: windowed filter, {} bytes, {}, DUMP/RESTORE of {} bytes; verified \
         (xxh3-128 {source_digest:032x} of the value, {digest_note}BF.CARD and BF.INFO equal)",
        show(key),
        show(dest),
        fmt::int(job.data_bytes),
        fmt::count(src_card, "item"),
        fmt::int(payload.len() as u64),
    )))
}
