//! The envelope of a DUMP payload between servers of different RDB
//! versions: the value copied whole (windowed filters, Count-Min and Top-K
//! sketches, t-digests) is DUMPed at the source, whose RDB version ends the
//! payload, and RESTOREd at the destination, which refuses a version it
//! does not read ("ERR DUMP payload version or checksum are wrong"): a
//! newer one (Valkey 9 or Redis 7.4 to Redis 7.0), and on Valkey 9, which
//! numbers its versions from 80, also Redis 7.4's 12 (the versions 12 to 79
//! are Redis's, refused while `rdb-version-check` is `strict`, its
//! default). Every server reads its own version, so a payload whose
//! version is not the destination's gets the destination's, when it holds
//! a module value (`dump_format::restamp` says why that is safe, and
//! refuses anything else).

use std::borrow::Cow;

use ferrobloom_core::dump_format::{self, DumpError};

use super::protocol::is_connection_problem;
use crate::conn::Server;
use crate::reply;

/// The RDB version the destination reads, learned from its own DUMP of
/// a throwaway string (`SET` then `DUMP` at the copy's temporary key,
/// which the RESTORE that follows empties anyway): the version a server
/// writes is one it reads, whatever its numbering, so there is no table of
/// server versions to keep up to date (INFO's `redis_version` would need
/// one: Valkey reports 7.2.4 there whatever its own version, Valkey 9
/// writes 80, a server released later something else), and no guess when
/// `rdb-version-check` or a fork changes what is accepted.
///
/// A standalone destination is asked once. In a cluster the temporary key
/// lives on the master that takes the RESTORE, so each copy asks that
/// master: during a rolling upgrade the masters' versions differ.
#[derive(Default)]
pub struct DestinationRdb {
    standalone: Option<u16>,
    /// Why the last attempt to learn the version failed (the server's
    /// answer), for the message of a RESTORE refused for its version.
    unknown_because: Option<String>,
    /// Whether the run already said that payloads are restamped.
    said: bool,
}

impl DestinationRdb {
    /// The RDB version of the master that takes a RESTORE into `temp`, or
    /// None when it cannot be learned (SET or DUMP refused by ACLs, out of
    /// memory...): the payload then goes as it is, and the RESTORE says
    /// what the destination makes of it. The error is a lost connection
    /// (or a timeout), which stops the run as any other would.
    pub fn at(&mut self, dst: &mut Server, temp: &[u8]) -> redis::RedisResult<Option<u16>> {
        if let Some(v) = self.standalone {
            return Ok(Some(v));
        }
        let learned = match learn(dst, temp)? {
            Ok(version) => Some(version),
            Err(why) => {
                self.unknown_because = Some(why);
                None
            }
        };
        if !dst.cluster {
            self.standalone = learned;
        }
        Ok(learned)
    }

    /// Why the destination's RDB version is not known, when it is not:
    /// said with a RESTORE refused for its payload's version.
    pub fn unknown_because(&self) -> Option<&str> {
        match self.standalone {
            Some(_) => None,
            None => self.unknown_because.as_deref(),
        }
    }

    /// The notice for the first restamped payload of the run, then None.
    pub fn notice(&mut self, from: u16, to: u16) -> Option<String> {
        if std::mem::replace(&mut self.said, true) {
            return None;
        }
        Some(format!(
            "DUMP payloads of RDB version {from} are restamped to the destination's RDB version \
             {to} (version bytes and CRC rewritten; a module value's bytes do not depend on \
             the RDB version)"
        ))
    }
}

/// What the probe string holds (any short value).
const PROBE_VALUE: &str = "ferrobloom-migrate RDB version probe";

/// The RDB version of the DUMP of a probe string at `temp`, or why there
/// is none (the server's answer); the error is a connection problem.
fn learn(dst: &mut Server, temp: &[u8]) -> redis::RedisResult<std::result::Result<u16, String>> {
    let set = dst.query::<()>(redis::cmd("SET").arg(temp).arg(PROBE_VALUE));
    let dumped = match set.and_then(|()| dst.query::<Option<Vec<u8>>>(redis::cmd("DUMP").arg(temp)))
    {
        Err(e) if is_connection_problem(&e) => return Err(e),
        other => other,
    };
    // Another refusal of UNLINK is the RESTORE's to report: it empties the
    // temporary key first.
    match dst.query::<i64>(redis::cmd("UNLINK").arg(temp)) {
        Err(e) if is_connection_problem(&e) => return Err(e),
        _ => {}
    }
    Ok(match dumped {
        Ok(payload) => payload
            .as_deref()
            .and_then(dump_format::unchecked_parts)
            .map(|(_, version)| version)
            .ok_or_else(|| "the DUMP of a probe string was no payload".to_string()),
        Err(e) => Err(format!(
            "SET and DUMP of a probe string at the temporary key: {}",
            reply::describe_error(&e)
        )),
    })
}

/// `payload` in the envelope a destination of RDB version `to` reads:
/// itself when its version is `to` (or `to` is unknown), else restamped,
/// with the version it had. The error says why it cannot be (said after
/// the key's name).
pub fn for_destination(
    payload: &[u8],
    to: Option<u16>,
) -> std::result::Result<(Cow<'_, [u8]>, Option<u16>), String> {
    let Some(to) = to else {
        return Ok((Cow::Borrowed(payload), None));
    };
    // The version bytes alone, without the CRC's pass over a payload that
    // may be large: a payload in the destination's version goes unchanged
    // (and unchecked, as before: the RESTORE checks it).
    let Some((_, from)) = dump_format::unchecked_parts(payload) else {
        return Err(format!(
            "its DUMP payload is not one ({})",
            describe(DumpError::TooShort)
        ));
    };
    if from == to {
        return Ok((Cow::Borrowed(payload), None));
    }
    match dump_format::restamp(payload, to) {
        Ok(p) => Ok((Cow::Owned(p), Some(from))),
        Err(DumpError::NotAModuleValue) => Err(format!(
            "its DUMP payload, of RDB version {from}, is not a module value (RDB type {}), and \
             only a module value can be restamped to the destination's RDB version {to}: was \
             the key replaced at the source since the scan? Nothing copied",
            payload[0]
        )),
        Err(e) => Err(format!("its DUMP payload is not one ({})", describe(e))),
    }
}

fn describe(e: DumpError) -> &'static str {
    match e {
        DumpError::TooShort => "too short",
        DumpError::BadChecksum => "its CRC is wrong",
        DumpError::NotAModuleValue => "not a module value",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrobloom_core::dump_format::{module_type_id, DumpWriter, RDB_VERSION_7_0};
    use ferrobloom_core::rdb_io::RdbOutput;

    fn module_payload(version: u16) -> Vec<u8> {
        let mut w = DumpWriter::new(module_type_id(b"TopK-TYPE", 0).unwrap());
        w.write_unsigned(10);
        w.finish(version)
    }

    #[test]
    fn a_payload_gets_the_destination_version() {
        let valkey9 = module_payload(80);
        // Unknown destination version, or the same: unchanged.
        for to in [None, Some(80)] {
            let (same, from) = for_destination(&valkey9, to).unwrap();
            assert!(matches!(same, Cow::Borrowed(_)) && from.is_none(), "{to:?}");
        }
        // Older (Redis 7.0), or Valkey 9 taking Redis 7.4's 12: restamped.
        let (to_70, from) = for_destination(&valkey9, Some(RDB_VERSION_7_0)).unwrap();
        assert_eq!(&to_70[..], &module_payload(RDB_VERSION_7_0)[..]);
        assert_eq!(from, Some(80));
        let redis74 = module_payload(12);
        let (to_v9, from) = for_destination(&redis74, Some(80)).unwrap();
        assert_eq!(&to_v9[..], &valkey9[..]);
        assert_eq!(from, Some(12));
    }

    #[test]
    fn only_module_values_are_restamped() {
        // `SET probe x` dumped by Redis 7.0 (RDB version 10).
        let string = [
            0x00, 0x01, b'x', 0x0a, 0x00, 0x22, 0x80, 0x86, 0x5f, 0xbd, 0xe8, 0x48, 0xd0,
        ];
        // Its own version: as it is (the RESTORE and the verification
        // that follows judge it).
        assert!(matches!(
            for_destination(&string, Some(10)),
            Ok((Cow::Borrowed(_), None))
        ));
        let why = for_destination(&string, Some(11)).unwrap_err();
        assert!(
            why.contains("of RDB version 10, is not a module value (RDB type 0)"),
            "{why}"
        );
        let mut bad = module_payload(12);
        bad[2] ^= 1;
        let why = for_destination(&bad, Some(10)).unwrap_err();
        assert!(why.contains("its CRC is wrong"), "{why}");
        let why = for_destination(&string[..10], Some(10)).unwrap_err();
        assert!(why.contains("too short"), "{why}");
    }

    #[test]
    fn the_notice_is_said_once() {
        let mut rdb = DestinationRdb::default();
        assert!(rdb
            .notice(80, 10)
            .unwrap()
            .contains("RDB version 80 are restamped"));
        assert_eq!(rdb.notice(80, 10), None);
    }
}
