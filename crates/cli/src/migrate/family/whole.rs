//! What the types copied whole with DUMP and RESTORE (windowed filters,
//! Count-Min and Top-K sketches, t-digests) share: the source's DUMP, its
//! envelope for the destination's RDB version, the RESTORE into the
//! temporary key, the copy's own DUMP, a failed verification, a module that lacks the
//! type, and a command's reply read as numbers or doubles.

use std::borrow::Cow;

use super::super::copy::Ends;
use super::super::envelope;
use super::super::progress::Stop;
use super::super::protocol::{is_connection_problem, server_error, show, unlink};
use super::Job;
use crate::conn::Server;
use crate::reply;
use crate::{Failure, Result};

/// The source's DUMP of `job`'s key: None when it was deleted since the
/// scan; a lost connection stops the run (to be resumed).
pub fn dump_source(ends: &mut Ends<'_>, job: &Job) -> Result<Option<Vec<u8>>> {
    match ends.src.query(redis::cmd("DUMP").arg(&job.key)) {
        Ok(p) => Ok(p),
        Err(e) if is_connection_problem(&e) => Err(ends
            .run
            .stopped(Stop::Connection(server_error(ends.src, "DUMP", &e).message))),
        Err(e) => Err(server_error(
            ends.src,
            &format!("DUMP {}", show(&job.key)),
            &e,
        )),
    }
}

/// `payload` in the envelope the master taking a RESTORE into `temp`
/// reads (its RDB version: envelope.rs), said once per run when it is
/// restamped: `Ok(Err(why))` when it cannot be (the others are still
/// copied).
pub fn for_destination<'p>(
    ends: &mut Ends<'_>,
    job: &Job,
    temp: &[u8],
    payload: &'p [u8],
) -> Result<std::result::Result<Cow<'p, [u8]>, String>> {
    let to = match ends.dst_rdb.at(ends.dst, temp) {
        Ok(to) => to,
        Err(e) => {
            let lost = server_error(ends.dst, "SET/DUMP of the RDB version probe", &e);
            return Err(ends.run.stopped(Stop::Connection(lost.message)));
        }
    };
    match envelope::for_destination(payload, to) {
        Ok((payload, from)) => {
            if let (Some(from), Some(to)) = (from, to) {
                if let Some(notice) = ends.dst_rdb.notice(from, to) {
                    ends.bars
                        .multi
                        .suspend(|| eprintln!("ferrobloom: {notice}"));
                }
            }
            Ok(Ok(payload))
        }
        Err(why) => Ok(Err(format!("{}: {why}", show(&job.key)))),
    }
}

/// RESTOREs `payload` (in the destination's envelope: [`for_destination`])
/// into `temp` (emptied first): `Ok(Err(why))` when the destination
/// refuses it (the others are still copied).
pub fn restore(
    ends: &mut Ends<'_>,
    job: &Job,
    temp: &[u8],
    payload: &[u8],
) -> Result<std::result::Result<(), String>> {
    let payload = match for_destination(ends, job, temp, payload)? {
        Ok(p) => p,
        Err(why) => return Ok(Err(why)),
    };
    unlink(ends.dst, temp)?;
    let restored = ends
        .dst
        .query::<()>(redis::cmd("RESTORE").arg(temp).arg(0).arg(&payload[..]));
    match restored {
        Ok(()) => Ok(Ok(())),
        Err(e) if is_connection_problem(&e) => Err(ends.run.stopped(Stop::Connection(
            server_error(ends.dst, "RESTORE", &e).message,
        ))),
        Err(e) => {
            let _ = unlink(ends.dst, temp);
            Ok(Err(format!(
                "{}: {} refused RESTORE: {}{}",
                show(&job.key),
                ends.dst.label,
                reply::describe_error(&e),
                not_restamped(ends, &e)
            )))
        }
    }
}

/// After a RESTORE refused for its payload's version, why the payload was
/// not restamped (the destination's version could not be learned), or
/// nothing.
pub fn not_restamped(ends: &Ends<'_>, e: &redis::RedisError) -> String {
    match ends.dst_rdb.unknown_because() {
        Some(why) if reply::describe_error(e).contains("payload version or checksum") => format!(
            " (not restamped to the destination's RDB version, which could not be learned: \
             {why}; allow SET and DUMP of the temporary keys {}* there)",
            String::from_utf8_lossy(crate::slot::TEMP_PREFIX)
        ),
        _ => String::new(),
    }
}

/// The copy's own DUMP.
pub fn dump_copy(dst: &mut Server, temp: &[u8]) -> Result<Option<Vec<u8>>> {
    dst.query(redis::cmd("DUMP").arg(temp))
        .map_err(|e| server_error(dst, "DUMP", &e))
}

/// A failed verification: the copy is deleted and the destination key
/// left as it was.
pub fn failed(dst: &mut Server, job: &Job, temp: &[u8], what: String) -> Failure {
    let _ = unlink(dst, temp);
    Failure::new(format!(
        "VERIFICATION FAILED for {} -> {}: {what}. The copy was deleted and {} left as it was; \
         run the command again to copy it again",
        show(&job.key),
        show(&job.dest),
        show(&job.dest)
    ))
}

/// The first master of `server` whose module does not know `command`
/// (sent without arguments: an arity error where it exists).
pub fn lacking(server: &Server, command: &str) -> Result<Option<String>> {
    for (name, mut conn) in server.node_connections()? {
        match redis::cmd(command).query::<redis::Value>(&mut conn) {
            Err(e) if is_connection_problem(&e) => {
                return Err(server_error(server, command, &e));
            }
            Err(e) if reply::is_unknown_command(&e) => return Ok(Some(name)),
            _ => {}
        }
    }
    Ok(None)
}

/// Sends `cmd` (named `what` in errors) and returns its reply.
pub fn ask(server: &mut Server, cmd: &redis::Cmd, what: &str) -> Result<redis::Value> {
    server
        .query(cmd)
        .map_err(|e| server_error(server, what, &e))
}

/// A double as a reply carries it: a RESP2 string (`%.17g` on Redis 7.0,
/// shortest on 7.2; `inf`, `nan`, `-nan`) or a RESP3 double.
pub fn double(v: &redis::Value) -> Option<f64> {
    match v {
        redis::Value::Double(x) => Some(*x),
        other => {
            let text = reply::text(other)?;
            match text.trim().to_ascii_lowercase().as_str() {
                "nan" | "-nan" => Some(f64::NAN),
                "inf" | "+inf" => Some(f64::INFINITY),
                "-inf" => Some(f64::NEG_INFINITY),
                t => t.parse().ok(),
            }
        }
    }
}

/// Two answers equal as numbers: the same double, or both NaN (whatever
/// their sign: Redis prints `nan` or `-nan`).
pub fn same_double(a: f64, b: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_as_servers_print_them() {
        let s = |t: &str| redis::Value::BulkString(t.as_bytes().to_vec());
        assert_eq!(double(&s("0.90000000000000002")), Some(0.9));
        assert_eq!(double(&s("0.9")), Some(0.9));
        assert_eq!(double(&s("inf")), Some(f64::INFINITY));
        assert_eq!(double(&s("-inf")), Some(f64::NEG_INFINITY));
        assert!(double(&s("-nan")).unwrap().is_nan());
        assert_eq!(double(&redis::Value::Double(2.5)), Some(2.5));
        assert_eq!(double(&s("x")), None);
        assert!(same_double(f64::NAN, -f64::NAN));
        assert!(!same_double(1.0, f64::NAN));
    }
}
