//! How a streamed copy is verified: the xxh3-128 of the destination's own
//! SCANDUMP stream against the source's, then the type's counters. A
//! mismatch deletes the copy and abandons it, leaving the destination key
//! as it was.

use indicatif::ProgressBar;
use xxhash_rust::xxh3::Xxh3;

use super::copy::{Ends, Stream};
use super::family::Job;
use super::progress::bar_style;
use super::protocol::{describe_info, header_of, scandump, show, unlink};
use super::state::{hex, Event};
use crate::{Failure, Result};

/// The header goes first into the digest, with its length, so that the
/// digest covers the shape as well as the bits.
pub fn start_digest(header: &[u8]) -> Xxh3 {
    let mut h = Xxh3::new();
    h.update(&(header.len() as u64).to_le_bytes());
    h.update(header);
    h
}

/// Verifies the copy of `job` at `temp` against the digest of the source's
/// stream; the source's item count when they agree.
pub fn stream(
    s: &dyn Stream,
    ends: &mut Ends<'_>,
    job: &Job,
    temp: &[u8],
    source_digest: u128,
) -> Result<u64> {
    let (key, dest) = (&job.key[..], &job.dest[..]);
    let prefix = s.prefix();
    let verify = ends.bars.multi.add(ProgressBar::new(job.data_bytes));
    verify.set_style(bar_style("green/white"));
    verify.set_prefix("verify");
    verify.set_message(show(dest));
    let temp_header = header_of(ends.dst, prefix, temp)?.ok_or_else(|| {
        Failure::new(format!(
            "{}: the temporary key {} vanished during the copy",
            ends.dst.label,
            show(temp)
        ))
    })?;
    let mut check = start_digest(&temp_header);
    let mut at = 1i64;
    loop {
        let (next, data) = scandump(ends.dst, prefix, temp, at)?;
        if next == 0 {
            break;
        }
        check.update(&data);
        verify.inc(data.len() as u64);
        at = next;
    }
    verify.finish_and_clear();
    let dest_digest = check.digest128();
    if dest_digest != source_digest {
        unlink(ends.dst, temp)?;
        ends.run.record(Event::Abandon { key: hex(key) })?;
        return Err(Failure::new(format!(
            "VERIFICATION FAILED for {} -> {}: xxh3-128 of the source stream {source_digest:032x}, \
             of the destination stream {dest_digest:032x}. The copy was deleted and {} left as \
             it was; run the command again to copy it again",
            show(key),
            show(dest),
            show(dest)
        )));
    }
    let (src_info, src_card) = s.counters(ends.src, key)?;
    let (dst_info, dst_card) = s.counters(ends.dst, temp)?;
    let card = s.card_name();
    if src_info != dst_info || src_card != dst_card {
        unlink(ends.dst, temp)?;
        ends.run.record(Event::Abandon { key: hex(key) })?;
        return Err(Failure::new(format!(
            "VERIFICATION FAILED for {} -> {}: {} differ (source: {}, {card} \
             {src_card}; copy: {}, {card} {dst_card}); was the source written to during the \
             copy? The copy was deleted and {} left as it was",
            show(key),
            show(dest),
            s.counter_names(),
            describe_info(&src_info),
            describe_info(&dst_info),
            show(dest)
        )));
    }
    Ok(src_card)
}
