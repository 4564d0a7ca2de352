//! Cuckoo filters (MBbloomCF): copied as their CF.SCANDUMP stream,
//! verified by the stream and CF.INFO. CF.SCANDUMP exports nothing of a
//! filter without items: such a filter is created again with CF.RESERVE
//! and its shape (CF.INFO), and verified by CF.INFO.

use super::super::copy::{self, Ends, Stream};
use super::super::protocol::{
    describe_info, info, into_place, refused, server_error, show, unlink, Info,
};
use super::super::state::{hex, Event};
use super::{Family, Job, Prepared};
use crate::conn::{Server, CUCKOO_TYPE};
use crate::reply;
use crate::slot;
use crate::{Failure, Result};

pub struct Cuckoo;

impl Stream for Cuckoo {
    fn prefix(&self) -> &'static str {
        "CF"
    }

    fn data_bytes(&self, header: &[u8]) -> Option<u64> {
        cuckoo_header_data_bytes(header)
    }

    /// CF.INFO and its item counter.
    fn counters(&self, server: &mut Server, key: &[u8]) -> Result<(Info, u64)> {
        let pairs = info(server, "CF.INFO", key)?;
        let items = pairs
            .iter()
            .find(|(k, _)| k == "Number of items inserted")
            .and_then(|(_, v)| *v)
            .unwrap_or(0);
        Ok((pairs, items.max(0) as u64))
    }

    fn counter_names(&self) -> &'static str {
        "CF.INFO"
    }

    fn card_name(&self) -> &'static str {
        "items"
    }

    fn verified_with(&self) -> &'static str {
        "CF.INFO"
    }
}

impl Family for Cuckoo {
    fn type_name(&self) -> &'static str {
        CUCKOO_TYPE
    }

    fn name(&self) -> &'static str {
        "Cuckoo filters"
    }

    fn prepare(&self, src: &mut Server, key: &[u8]) -> Result<Option<Prepared>> {
        if let Some(prepared) = copy::prepare(self, src, key)? {
            return Ok(Some(prepared));
        }
        Ok(empty_cuckoo_reserve(src, key)?.map(|reserve| Prepared {
            header: Vec::new(),
            data_bytes: 0,
            recreate: Some(reserve),
            cell_size: None,
            nul_item: None,
        }))
    }

    fn holds_partial(&self, dst: &mut Server, job: &Job) -> Result<bool> {
        copy::holds_partial(self, dst, job)
    }

    fn copy(&self, ends: &mut Ends<'_>, job: &Job) -> Result<std::result::Result<String, String>> {
        match &job.recreate {
            Some(reserve) => {
                ends.bars.copy.set_message(show(&job.key));
                self.copy_empty(ends, job, reserve)
            }
            None => copy::stream(self, ends, job),
        }
        .map(Ok)
    }
}

impl Cuckoo {
    /// An empty Cuckoo filter (nothing for CF.SCANDUMP to export): CF.RESERVE
    /// with its shape under the temporary name, CF.INFO compared, then put in
    /// place like any copy.
    fn copy_empty(&self, ends: &mut Ends<'_>, job: &Job, reserve: &[String]) -> Result<String> {
        let (key, dest) = (&job.key[..], &job.dest[..]);
        let temp = slot::temp_key(dest);
        unlink(ends.dst, &temp)?;
        ends.run.record(Event::Start {
            key: hex(key),
            dest: hex(dest),
            key_text: show(key),
            header: String::new(),
        })?;
        if let Err(e) = ends
            .dst
            .query::<()>(redis::cmd("CF.RESERVE").arg(&temp).arg(reserve))
        {
            return Err(refused(ends.dst, key, &temp, ends.run, e));
        }
        let (src_info, _) = self.counters(ends.src, key)?;
        let (dst_info, _) = self.counters(ends.dst, &temp)?;
        if src_info != dst_info {
            unlink(ends.dst, &temp)?;
            ends.run.record(Event::Abandon { key: hex(key) })?;
            return Err(Failure::new(format!(
                "VERIFICATION FAILED for {} -> {}: CF.INFO differs (source: {}; copy: {}): an \
                 empty Cuckoo filter is recreated with CF.RESERVE, which cannot restore emptied \
                 sub-filters or a delete counter. The copy was deleted and {} left as it was",
                show(key),
                show(dest),
                describe_info(&src_info),
                describe_info(&dst_info),
                show(dest)
            )));
        }
        into_place(ends.dst, &temp, dest, ends.run)?;
        ends.run.record(Event::Done { key: hex(key) })?;
        Ok(format!(
            "{} -> {}: an empty Cuckoo filter, recreated with CF.RESERVE {}; verified (CF.INFO \
             equal)",
            show(key),
            show(dest),
            reserve.join(" ")
        ))
    }
}

/// The data bytes a CF.SCANDUMP header describes (sum of its sub-filters).
fn cuckoo_header_data_bytes(header: &[u8]) -> Option<u64> {
    use ferrobloom_core::cuckoo::scandump::Header;
    let h = Header::parse(header).ok()?;
    let buckets = h.sub_filter_buckets().ok()?;
    buckets.iter().try_fold(0u64, |acc, n| {
        acc.checked_add(n.checked_mul(u64::from(h.bucket_size))?)
    })
}

/// CF.RESERVE arguments that recreate an empty Cuckoo filter's shape
/// (CF.INFO): N0 × bs keeps N0 buckets, the stored expansion is a power of
/// two (or 0) and stays itself.
fn empty_cuckoo_reserve(server: &mut Server, key: &[u8]) -> Result<Option<Vec<String>>> {
    let info = match server.query::<redis::Value>(redis::cmd("CF.INFO").arg(key)) {
        Ok(v) => v,
        Err(e) if reply::is_not_found(&e) => return Ok(None),
        Err(e) => return Err(server_error(server, "CF.INFO", &e)),
    };
    let p = reply::pairs(info)
        .ok_or_else(|| Failure::new(format!("CF.INFO on {}: bad reply", server.label)))?;
    let get = |name: &str| {
        reply::field(&p, name)
            .and_then(reply::uint)
            .ok_or_else(|| Failure::new(format!("CF.INFO on {}: no {name}", server.label)))
    };
    let bs = get("Bucket size")?;
    Ok(Some(vec![
        (get("Number of buckets")? * bs).to_string(),
        "BUCKETSIZE".into(),
        bs.to_string(),
        "MAXITERATIONS".into(),
        get("Max iterations")?.to_string(),
        "EXPANSION".into(),
        get("Expansion rate")?.to_string(),
    ]))
}
