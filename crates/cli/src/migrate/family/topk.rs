//! Top-K sketches (TopK-TYPE): they have no SCANDUMP, so one is copied
//! whole with DUMP and RESTORE into the temporary key, verified, and
//! renamed into place. RedisBloom 2.8.2 and FerroBloom write the same
//! encoding, so sketches move both ways, with one exception: an item
//! holding a NUL byte, which FerroBloom keeps whole and 2.8.2 cuts at the
//! NUL (it would list `a` for `a\0b`, and count it apart). A sketch
//! holding one is refused before anything is copied where the destination
//! cuts items (a one-item sketch is RESTOREd there as a probe and listed).
//!
//! Verified three ways: both DUMP payloads decoded here hold the same k,
//! width, depth, decay, buckets and heap records (the heap's pointer
//! bytes, a process address in 2.8.2's payloads, are not part of the
//! decoded value); TOPK.INFO agrees; and TOPK.LIST WITHCOUNT answers the
//! same items with the same counts on both servers.

use ferrobloom_core::dump_format::RDB_VERSION_7_0;
use ferrobloom_core::topk::{dump, Params, TopK};
use ferrobloom_core::Unguarded;

use super::super::copy::Ends;
use super::super::protocol::{into_place, is_connection_problem, server_error, show, unlink};
use super::super::state::{hex, Event};
use super::whole::{self, ask, double, failed};
use super::{Family, Job, Prepared};
use crate::conn::{Server, TOPK_TYPE};
use crate::fmt;
use crate::reply;
use crate::slot;
use crate::{Failure, Result};

pub struct TopKFamily;

impl Family for TopKFamily {
    fn type_name(&self) -> &'static str {
        TOPK_TYPE
    }

    fn name(&self) -> &'static str {
        "Top-K sketches"
    }

    fn noun(&self) -> &'static str {
        "Top-K sketch"
    }

    fn data(&self) -> &'static str {
        "buckets"
    }

    fn prepare(&self, src: &mut Server, key: &[u8]) -> Result<Option<Prepared>> {
        let Some(info) = topk_info(src, key)? else {
            return Ok(None);
        };
        // The items, to refuse up front what a destination would cut.
        let payload: Option<Vec<u8>> = src
            .query(redis::cmd("DUMP").arg(key))
            .map_err(|e| server_error(src, &format!("DUMP {}", show(key)), &e))?;
        let nul_item = payload
            .as_deref()
            .and_then(|p| dump::load_payload(p).ok())
            .and_then(|s| first_nul_item(&s));
        Ok(Some(Prepared {
            header: Vec::new(),
            data_bytes: (info.width * info.depth * 8).saturating_add(info.k * 24),
            recreate: None,
            cell_size: None,
            nul_item,
        }))
    }

    fn refused_by(&self, dst: &Server) -> Result<Option<String>> {
        Ok(whole::lacking(dst, "TOPK.INFO")?.map(|node| {
            format!(
                "{} cannot hold Top-K sketches: {node} has no TOPK.INFO (its module has no \
                 TopK-TYPE); load FerroBloom or RedisBloom there",
                dst.label
            )
        }))
    }

    fn refused_jobs(&self, dst: &mut Server, jobs: &[&Job]) -> Result<Vec<Option<String>>> {
        // One probe answers for every master (they run one module).
        let mut cuts: Option<Option<String>> = None;
        let mut out = Vec::with_capacity(jobs.len());
        for job in jobs {
            let Some(item) = &job.nul_item else {
                out.push(None);
                continue;
            };
            if cuts.is_none() {
                cuts = Some(cuts_items(dst, &job.dest)?);
            }
            out.push(cuts.as_ref().expect("probed").as_ref().map(|listed| {
                format!(
                    "a Top-K sketch with an item holding a NUL byte ({}), which {} cannot hold: \
                     it cuts items at the first NUL (a probe sketch holding \"a\\x00b\" lists \
                     {listed} there; RedisBloom 2.8.2 does this), so the copy would list and \
                     count other items. It was not copied; copy it to a FerroBloom server",
                    fmt::key(item),
                    dst.label
                )
            }));
        }
        Ok(out)
    }

    fn copy(&self, ends: &mut Ends<'_>, job: &Job) -> Result<std::result::Result<String, String>> {
        copy_topk(ends, job)
    }
}

/// TOPK.INFO's dimensions.
#[derive(Debug, PartialEq)]
struct Info {
    k: u64,
    width: u64,
    depth: u64,
    decay: f64,
}

/// TOPK.INFO of a key, or None when it is gone.
fn topk_info(server: &mut Server, key: &[u8]) -> Result<Option<Info>> {
    let what = format!("TOPK.INFO {}", show(key));
    let reply: redis::Value = match server.query(redis::cmd("TOPK.INFO").arg(key)) {
        Ok(v) => v,
        Err(e) if reply::is_not_found(&e) => return Ok(None),
        Err(e) => return Err(server_error(server, &what, &e)),
    };
    let bad = || Failure::new(format!("{what} on {}: unexpected reply", server.label));
    let pairs = reply::pairs(reply).ok_or_else(bad)?;
    let get = |name: &str| reply::field(&pairs, name).and_then(reply::uint);
    let (Some(k), Some(width), Some(depth)) = (get("k"), get("width"), get("depth")) else {
        return Err(bad());
    };
    let decay = reply::field(&pairs, "decay")
        .and_then(double)
        .ok_or_else(bad)?;
    Ok(Some(Info {
        k,
        width,
        depth,
        decay,
    }))
}

/// The first listed or stored item holding a NUL byte.
fn first_nul_item(s: &TopK) -> Option<Vec<u8>> {
    s.heap()
        .iter()
        .filter_map(|h| h.item())
        .find(|item| item.contains(&0))
        .map(<[u8]>::to_vec)
}

/// The item the probe holds.
const PROBE_ITEM: &[u8] = b"a\0b";

/// Whether the master of `dest` cuts items at a NUL byte: a one-item
/// sketch holding `a\0b` is RESTOREd into the temporary key, listed and
/// deleted. What it lists when it cuts, or None when it keeps the item.
fn cuts_items(dst: &mut Server, dest: &[u8]) -> Result<Option<String>> {
    let params = Params {
        k: 1,
        width: 1,
        depth: 1,
        decay: 1.0,
    };
    let mut probe = TopK::new(params, &Unguarded).expect("a 1x1 sketch");
    probe.add(PROBE_ITEM).expect("an add");
    let payload = dump::dump_payload(&probe, RDB_VERSION_7_0);
    let temp = slot::temp_key(dest);
    unlink(dst, &temp)?;
    let restored = dst.query::<()>(redis::cmd("RESTORE").arg(&temp).arg(0).arg(&payload[..]));
    if let Err(e) = restored {
        let _ = unlink(dst, &temp);
        if is_connection_problem(&e) {
            return Err(server_error(dst, "RESTORE", &e));
        }
        return Ok(Some(format!(
            "nothing (RESTORE answers {})",
            reply::describe_error(&e)
        )));
    }
    let listed = dst.query::<Vec<redis::Value>>(redis::cmd("TOPK.LIST").arg(&temp));
    unlink(dst, &temp)?;
    let listed = listed.map_err(|e| server_error(dst, "TOPK.LIST", &e))?;
    let items: Vec<Vec<u8>> = listed.into_iter().filter_map(reply::bytes).collect();
    if items == [PROBE_ITEM.to_vec()] {
        Ok(None)
    } else {
        Ok(Some(
            items
                .iter()
                .map(|i| format!("\"{}\"", fmt::key(i)))
                .collect::<Vec<_>>()
                .join(", "),
        ))
    }
}

/// A sketch's whole value as decoded: the heap records without their
/// pointer bytes, the draw counter (saved in padding 2.8.2 does not
/// read) left out.
fn same_value(a: &TopK, b: &TopK) -> bool {
    a.params() == b.params() && a.bucket_bytes() == b.bucket_bytes() && a.heap() == b.heap()
}

fn describe(s: &TopK) -> String {
    format!(
        "k {}, {}x{}, decay {}, {} listed, buckets xxh3-128 {:032x}",
        s.k(),
        s.width(),
        s.depth(),
        s.decay(),
        s.list().len(),
        xxhash_rust::xxh3::xxh3_128(s.bucket_bytes())
    )
}

/// TOPK.LIST WITHCOUNT as (item, count) pairs; a nil item (2.8.2's empty
/// item after a reload) as the empty item FerroBloom lists.
fn list(server: &mut Server, key: &[u8]) -> Result<Vec<(Vec<u8>, i64)>> {
    let reply = ask(
        server,
        redis::cmd("TOPK.LIST").arg(key).arg("WITHCOUNT"),
        "TOPK.LIST",
    )?;
    let bad = || Failure::new(format!("TOPK.LIST on {}: unexpected reply", server.label));
    let redis::Value::Array(items) = reply else {
        return Err(bad());
    };
    items
        .chunks(2)
        .map(|pair| match pair {
            [item, count] => Ok((
                reply::bytes(item.clone()).ok_or_else(bad)?,
                reply::int(count).ok_or_else(bad)?,
            )),
            _ => Err(bad()),
        })
        .collect()
}

/// Copies one sketch: DUMP at the source, RESTORE into the temporary key,
/// verify, rename into place.
fn copy_topk(ends: &mut Ends<'_>, job: &Job) -> Result<std::result::Result<String, String>> {
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
                "{}: its DUMP payload does not decode as a Top-K sketch here ({e:?}); nothing \
                 copied",
                show(key)
            )))
        }
    };
    if let Err(why) = whole::restore(ends, job, &temp, &payload)? {
        return Ok(Err(why));
    }
    ends.bars.copy.inc(job.data_bytes);

    // The value: the copy's own DUMP decodes to the same sketch.
    let copied = whole::dump_copy(ends.dst, &temp)?;
    match copied.as_deref().map(dump::load_payload) {
        Some(Ok(c)) if same_value(&source, &c) => {}
        Some(Ok(c)) => {
            let what = format!("source {}; copy {}", describe(&source), describe(&c));
            return Err(failed(ends.dst, job, &temp, what));
        }
        Some(Err(e)) => {
            let what = format!("the copy's DUMP does not decode ({e:?})");
            return Err(failed(ends.dst, job, &temp, what));
        }
        None => return Err(failed(ends.dst, job, &temp, "the copy is gone".into())),
    }
    // TOPK.INFO: the decay compared as a number (Redis 7.0 prints
    // 0.90000000000000002, 7.2 0.9).
    let (src_info, dst_info) = (topk_info(ends.src, key)?, topk_info(ends.dst, &temp)?);
    if src_info.is_none() || src_info != dst_info {
        let what = format!(
            "TOPK.INFO differs (source: {src_info:?}; copy: {dst_info:?}); was the source \
             written to during the copy?"
        );
        return Err(failed(ends.dst, job, &temp, what));
    }
    // The answers: the same items with the same counts, in the same order.
    let (a, b) = (list(ends.src, key)?, list(ends.dst, &temp)?);
    if a != b {
        let show_list = |l: &[(Vec<u8>, i64)]| {
            l.iter()
                .map(|(i, n)| format!("{} {n}", fmt::key(i)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let what = format!(
            "TOPK.LIST WITHCOUNT: source [{}], copy [{}]",
            show_list(&a),
            show_list(&b)
        );
        return Err(failed(ends.dst, job, &temp, what));
    }
    into_place(ends.dst, &temp, dest, ends.run)?;
    ends.run.record(Event::Done { key: hex(key) })?;
    Ok(Ok(format!(
        "{} -> {}: Top-K sketch k {}, {}x{}, decay {}, {} bytes, {} listed, DUMP/RESTORE of {} \
         bytes; verified (xxh3-128 {:032x} of the buckets; k, width, depth, decay, buckets \
         and heap equal, TOPK.INFO and TOPK.LIST WITHCOUNT equal)",
        show(key),
        show(dest),
        source.k(),
        source.width(),
        source.depth(),
        source.decay(),
        fmt::int(job.data_bytes),
        fmt::count(a.len() as u64, "item"),
        fmt::int(payload.len() as u64),
        xxhash_rust::xxh3::xxh3_128(source.bucket_bytes()),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nul_items_are_found() {
        let params = Params {
            k: 4,
            width: 50,
            depth: 3,
            decay: 0.9,
        };
        let mut s = TopK::new(params, &Unguarded).unwrap();
        for item in [&b"plain"[..], b"other"] {
            s.add(item).unwrap();
        }
        assert_eq!(first_nul_item(&s), None);
        s.add(b"x\0y").unwrap();
        assert_eq!(first_nul_item(&s).as_deref(), Some(&b"x\0y"[..]));
        let back = dump::load_payload(&dump::dump_payload(&s, RDB_VERSION_7_0)).unwrap();
        assert!(same_value(&s, &back));
    }
}
