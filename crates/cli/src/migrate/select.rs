//! Which keys a migration copies, and what it checks before writing: the
//! keys of the source with their types (the others named with the reason
//! they are left out), and the destination's memory for the copies.

use super::family::{self, Job};
use super::protocol::show;
use crate::conn::Server;
use crate::fmt;
use crate::headroom::{self, Need};
use crate::reply;
use crate::slot;
use crate::{Failure, Result};

/// `MBbloomCF` and the other types a user may meet, in words.
pub fn describe_type(kind: &str) -> String {
    match kind {
        "MBbloomCF" => "a Cuckoo filter (MBbloomCF)".to_string(),
        "CMSk-TYPE" => "a Count-Min sketch (CMSk-TYPE)".to_string(),
        "TopK-TYPE" => "a Top-K (TopK-TYPE)".to_string(),
        "TDIS-TYPE" => "a t-digest (TDIS-TYPE)".to_string(),
        _ => format!("a {kind}"),
    }
}

/// A key and why it is left out (or its type).
pub type KeyNote = (Vec<u8>, String);

/// Every key matching `pattern` on every master, with its type: SCAN, then
/// the TYPE of each batch in one pipeline.
pub fn scan_with_types(server: &Server, pattern: &str) -> Result<Vec<KeyNote>> {
    let mut out = Vec::new();
    server.scan(pattern, None, |name, conn, batch| {
        let mut pipe = redis::pipe();
        for key in &batch {
            pipe.cmd("TYPE").arg(key);
        }
        let kinds: Vec<String> = pipe
            .query(conn)
            .map_err(|e| Failure::new(format!("TYPE on {name}: {}", reply::describe_error(&e))))?;
        out.extend(batch.into_iter().zip(kinds));
        Ok(())
    })?;
    out.sort();
    out.dedup();
    Ok(out)
}

/// The Bloom filters to copy, and the keys left out with the reason.
pub fn split_filters(found: Vec<KeyNote>) -> (Vec<Vec<u8>>, Vec<KeyNote>) {
    let mut filters = Vec::new();
    let mut skipped = Vec::new();
    for (key, kind) in found {
        if kind == "none" {
            // Expired or deleted since the scan.
        } else if !family::is_copied_type(&kind) {
            skipped.push((key, describe_type(&kind)));
        } else if slot::is_temp_key(&key) {
            skipped.push((key, "the unfinished copy of another migration".to_string()));
        } else {
            filters.push(key);
        }
    }
    (filters, skipped)
}

/// How many names a notice lists before it says "and N more".
pub const NOTICE_NAMES: usize = 10;

/// "skipped 3 keys (migrate copies …): a (…), b (…)"; each name says why it
/// was left out (its type, or the unfinished copy of another migration).
pub fn skipped_notice(skipped: &[KeyNote]) -> Option<String> {
    if skipped.is_empty() {
        return None;
    }
    let mut names: Vec<String> = skipped
        .iter()
        .take(NOTICE_NAMES)
        .map(|(k, why)| format!("{} ({why})", show(k)))
        .collect();
    if skipped.len() > NOTICE_NAMES {
        names.push(format!("and {} more", skipped.len() - NOTICE_NAMES));
    }
    Some(format!(
        "skipped {} (migrate copies {} only): {}",
        fmt::count(skipped.len() as u64, "key"),
        family::names(),
        names.join(", ")
    ))
}

/// Refuses, before anything is written, a migration the destination has
/// no memory for (see [`headroom`]).
pub fn check_headroom(
    dst: &Server,
    jobs: &[Job],
    in_place: Option<&[u8]>,
    chunk_size: u64,
) -> Result<()> {
    let mut nodes = dst.node_connections()?;
    let mut needs = vec![Need::default(); nodes.len()];
    let owners = if dst.cluster {
        Some(slot_owners(&mut nodes)?)
    } else {
        None
    };
    for job in jobs.iter().filter(|j| Some(&j.key[..]) != in_place) {
        let node = match &owners {
            Some(owners) => owners[slot::slot(&job.dest) as usize].unwrap_or(0),
            None => 0,
        };
        needs[node].add(show(&job.dest), job.data_bytes);
    }
    for ((name, mut conn), need) in nodes.into_iter().zip(&needs) {
        let memory = headroom::read(&name, &mut conn)?;
        if let Some(why) = headroom::shortfall(&memory, need, chunk_size) {
            return Err(Failure::new(why));
        }
    }
    Ok(())
}

/// For each hash slot, the index (in `nodes`) of the master serving it,
/// matched by node id (`CLUSTER MYID` against `CLUSTER SLOTS`).
pub fn slot_owners(nodes: &mut [(String, redis::Connection)]) -> Result<Vec<Option<usize>>> {
    let fail = |name: &str, what: &str, e: redis::RedisError| {
        Failure::new(format!("{what} on {name}: {}", reply::describe_error(&e)))
    };
    let mut ids = Vec::new();
    for (name, conn) in nodes.iter_mut() {
        let id: String = redis::cmd("CLUSTER")
            .arg("MYID")
            .query(conn)
            .map_err(|e| fail(name, "CLUSTER MYID", e))?;
        ids.push(id);
    }
    let mut owners = vec![None; 16384];
    let Some((name, conn)) = nodes.first_mut() else {
        return Ok(owners);
    };
    let slots: redis::Value = redis::cmd("CLUSTER")
        .arg("SLOTS")
        .query(conn)
        .map_err(|e| fail(name, "CLUSTER SLOTS", e))?;
    let redis::Value::Array(ranges) = slots else {
        return Ok(owners);
    };
    for range in ranges {
        let redis::Value::Array(parts) = range else {
            continue;
        };
        let (Some(start), Some(end)) = (
            parts.first().and_then(reply::int),
            parts.get(1).and_then(reply::int),
        ) else {
            continue;
        };
        let Some(redis::Value::Array(master)) = parts.get(2) else {
            continue;
        };
        let Some(id) = master.get(2).and_then(reply::text) else {
            continue;
        };
        let Some(owner) = ids.iter().position(|i| *i == id) else {
            continue;
        };
        for slot in start.max(0)..=end.min(16383) {
            owners[slot as usize] = Some(owner);
        }
    }
    Ok(owners)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conn::{BLOOM_TYPE, WINDOW_TYPE};

    #[test]
    fn left_out_keys_are_named_with_their_reason() {
        let found = vec![
            (b"a".to_vec(), BLOOM_TYPE.to_string()),
            (b"cf".to_vec(), "MBbloomCF".to_string()),
            (b"cms".to_vec(), "CMSk-TYPE".to_string()),
            (b"gone".to_vec(), "none".to_string()),
            (slot::temp_key(b"x"), BLOOM_TYPE.to_string()),
            (b"s".to_vec(), "string".to_string()),
            (b"w".to_vec(), WINDOW_TYPE.to_string()),
            (slot::temp_key(b"y"), WINDOW_TYPE.to_string()),
        ];
        let (filters, skipped) = split_filters(found);
        assert_eq!(
            filters,
            vec![
                b"a".to_vec(),
                b"cf".to_vec(),
                b"cms".to_vec(),
                b"w".to_vec()
            ]
        );
        let notice = skipped_notice(&skipped).unwrap();
        assert!(
            notice.starts_with(
                "skipped 3 keys (migrate copies Bloom, windowed and Cuckoo filters, Count-Min \
                 and Top-K sketches and t-digests only): "
            ),
            "{notice}"
        );
        let one = skipped_notice(&skipped[..1]).unwrap();
        assert!(one.starts_with("skipped 1 key (migrate copies"), "{one}");
        assert!(!notice.contains("cms ("), "{notice}");
        assert!(notice.contains("(the unfinished copy of another migration)"));
        assert!(notice.contains("s (a string)"));
        assert_eq!(skipped_notice(&[]), None);
        let many: Vec<KeyNote> = (0..12)
            .map(|i| (vec![b'k', i], "a string".into()))
            .collect();
        assert!(skipped_notice(&many).unwrap().ends_with("and 2 more"));
    }
}
