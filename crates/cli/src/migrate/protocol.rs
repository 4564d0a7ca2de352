//! The server commands a migration sends, and the errors they turn into:
//! SCANDUMP and LOADCHUNK of a type (by its prefix, BF or CF), INFO, TYPE,
//! UNLINK, putting a verified copy in place, and a refused copy.

use super::progress::{Run, Stop};
use super::state::{hex, Event};
use crate::conn::Server;
use crate::reply;
use crate::{Failure, Result};

/// A key as text for messages.
pub fn show(key: &[u8]) -> String {
    crate::fmt::key(key)
}

/// `BF.SCANDUMP`: a command of the type whose commands start with `prefix`.
pub fn cmd(prefix: &str, name: &str) -> String {
    format!("{prefix}.{name}")
}

pub fn server_error(server: &Server, what: &str, e: &redis::RedisError) -> Failure {
    Failure::new(format!(
        "{what} on {}: {}",
        server.label,
        reply::describe_error(e)
    ))
}

/// BF.SCANDUMP (CF.SCANDUMP) key it, with the error as the server gave it.
pub fn scandump_raw(
    server: &mut Server,
    prefix: &str,
    key: &[u8],
    it: i64,
) -> redis::RedisResult<(i64, Vec<u8>)> {
    let (next, data): (i64, redis::Value) =
        server.query(redis::cmd(&cmd(prefix, "SCANDUMP")).arg(key).arg(it))?;
    // CF.SCANDUMP ends with [0, nil].
    if next == 0 {
        return Ok((0, Vec::new()));
    }
    let data = reply::bytes(data).ok_or_else(|| {
        redis::RedisError::from((redis::ErrorKind::TypeError, "bad BF.SCANDUMP reply"))
    })?;
    Ok((next, data))
}

/// BF.SCANDUMP (CF.SCANDUMP) key it: (next iterator, data).
pub fn scandump(server: &mut Server, prefix: &str, key: &[u8], it: i64) -> Result<(i64, Vec<u8>)> {
    let what = cmd(prefix, "SCANDUMP");
    let (next, data): (i64, redis::Value) = server
        .query(redis::cmd(&what).arg(key).arg(it))
        .map_err(|e| server_error(server, &format!("{what} {} {it}", show(key)), &e))?;
    if next == 0 {
        return Ok((0, Vec::new()));
    }
    let data = reply::bytes(data)
        .ok_or_else(|| Failure::new(format!("{what} on {}: bad reply", server.label)))?;
    Ok((next, data))
}

/// The header of a filter, or None when the key does not exist (or, for
/// a Cuckoo filter, holds no item: CF.SCANDUMP then exports nothing).
pub fn header_of(server: &mut Server, prefix: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
    let what = cmd(prefix, "SCANDUMP");
    match server.query::<(i64, redis::Value)>(redis::cmd(&what).arg(key).arg(0)) {
        Ok((0, _)) => Ok(None),
        Ok((_, data)) => Ok(reply::bytes(data)),
        Err(e) if reply::is_not_found(&e) => Ok(None),
        Err(e) => Err(server_error(server, &format!("{what} {} 0", show(key)), &e)),
    }
}

pub fn loadchunk(
    server: &mut Server,
    prefix: &str,
    key: &[u8],
    it: i64,
    data: &[u8],
) -> redis::RedisResult<()> {
    server.query::<()>(
        redis::cmd(&cmd(prefix, "LOADCHUNK"))
            .arg(key)
            .arg(it)
            .arg(data),
    )
}

pub fn key_type(server: &mut Server, key: &[u8]) -> Result<String> {
    server
        .query::<String>(redis::cmd("TYPE").arg(key))
        .map_err(|e| server_error(server, "TYPE", &e))
}

pub fn is_connection_problem(e: &redis::RedisError) -> bool {
    e.is_io_error() || e.is_timeout() || e.is_connection_dropped() || e.is_connection_refusal()
}

/// Whether source and destination are the same database of the same
/// server, recognised by `run_id` and database number, not by the URL
/// (a trailing slash, `localhost` for `127.0.0.1` or a unix socket must not
/// hide it): there a filter copied under its own name would first be
/// replaced with an empty one.
pub fn same_database(src: &Server, dst: &Server) -> Result<bool> {
    let dst_ids = dst.identities()?;
    Ok(src.identities()?.iter().any(|id| dst_ids.contains(id)))
}

/// Puts a verified copy in place, in one step: RENAME replaces what
/// --force allowed to replace; RENAMENX refuses a key created at the
/// destination meanwhile.
pub fn into_place(dst: &mut Server, temp: &[u8], dest: &[u8], run: &Run) -> Result<()> {
    if run.force {
        dst.query::<()>(redis::cmd("RENAME").arg(temp).arg(dest))
            .map_err(|e| server_error(dst, "RENAME", &e))?;
    } else {
        let renamed: i64 = dst
            .query(redis::cmd("RENAMENX").arg(temp).arg(dest))
            .map_err(|e| server_error(dst, "RENAMENX", &e))?;
        if renamed == 0 {
            return Err(Failure::new(format!(
                "{} was created at {} during the copy; the verified copy is kept as {} \
                 (rename it yourself, or rerun with --force to replace {})",
                show(dest),
                dst.label,
                show(temp),
                show(dest)
            )));
        }
    }
    Ok(())
}

pub fn unlink(server: &mut Server, key: &[u8]) -> Result<()> {
    server
        .query::<i64>(redis::cmd("UNLINK").arg(key))
        .map(|_| ())
        .map_err(|e| server_error(server, "UNLINK", &e))
}

/// A LOADCHUNK that failed. A lost connection or a timeout is an
/// interruption (the partial copy is kept for a resume); a refusal by the
/// destination (out of memory, bad data) deletes the partial copy, so that
/// it holds no memory, and abandons this filter.
pub fn refused(
    dst: &mut Server,
    key: &[u8],
    temp: &[u8],
    run: &mut Run,
    e: redis::RedisError,
) -> Failure {
    if is_connection_problem(&e) {
        return run.stopped(Stop::Connection(server_error(dst, "the copy", &e).message));
    }
    let cleanup = unlink(dst, temp);
    let abandon = run.record(Event::Abandon { key: hex(key) });
    let mut message = format!(
        "{} refused the copy (LOADCHUNK or RESERVE) of {}: {}; ",
        dst.label,
        show(key),
        reply::describe_error(&e)
    );
    match cleanup {
        Ok(()) => message.push_str(&format!("the partial copy {} was deleted", show(temp))),
        Err(f) => message.push_str(&format!(
            "deleting the partial copy {} failed too ({}): delete it by hand",
            show(temp),
            f.message
        )),
    }
    if let Err(f) = abandon {
        message.push_str(&format!("; {}", f.message));
    }
    Failure::new(message)
}

/// BF.INFO as `Capacity 1000, Size 1704, …`.
pub fn describe_info(info: &Info) -> String {
    info.iter()
        .map(|(k, v)| match v {
            Some(n) => format!("{k} {n}"),
            None => format!("{k} ?"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// BF.INFO as (label, value) pairs.
pub type Info = Vec<(String, Option<i64>)>;

/// An INFO command's reply (`what`: BF.INFO, CF.INFO) as (label, value)
/// pairs.
pub fn info(server: &mut Server, what: &str, key: &[u8]) -> Result<Info> {
    let info: redis::Value = server
        .query(redis::cmd(what).arg(key))
        .map_err(|e| server_error(server, what, &e))?;
    Ok(reply::pairs(info)
        .ok_or_else(|| Failure::new(format!("{what} on {}: bad reply", server.label)))?
        .into_iter()
        .map(|(k, v)| (k, reply::int(&v)))
        .collect())
}

/// BF.INFO and BF.CARD, which a copied Bloom or windowed filter keeps.
pub fn bloom_counters(server: &mut Server, key: &[u8]) -> Result<(Info, u64)> {
    let pairs = info(server, "BF.INFO", key)?;
    let card: u64 = server
        .query(redis::cmd("BF.CARD").arg(key))
        .map_err(|e| server_error(server, "BF.CARD", &e))?;
    Ok((pairs, card))
}
