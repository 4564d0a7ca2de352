//! How a type with SCANDUMP and LOADCHUNK (Bloom, Cuckoo) is copied: its
//! stream, chunk by chunk, into a temporary key at the destination, each
//! chunk recorded so that an interrupted copy resumes; then verified and
//! put in place.

use super::envelope::DestinationRdb;
use super::family::{Job, Prepared};
use super::progress::{Bars, Run, Stop};
use super::protocol::{
    cmd, header_of, into_place, is_connection_problem, loadchunk, refused, scandump, scandump_raw,
    server_error, show, unlink, Info,
};
use super::state::{hex, Event};
use super::verify::{self, start_digest};
use crate::conn::Server;
use crate::fmt;
use crate::slot;
use crate::{Failure, Result};

/// A type copied as its SCANDUMP stream: the prefix of its commands, what
/// its header says of its size, and what verification compares besides
/// the stream.
pub trait Stream {
    /// `BF` or `CF`: SCANDUMP, LOADCHUNK and INFO are `{prefix}.NAME`.
    fn prefix(&self) -> &'static str;
    /// The data bytes a SCANDUMP header describes; None when it is not
    /// a header of this type.
    fn data_bytes(&self, header: &[u8]) -> Option<u64>;
    /// The INFO fields and the item count a copy must keep.
    fn counters(&self, server: &mut Server, key: &[u8]) -> Result<(Info, u64)>;
    /// The counters' names in a failed verification: `BF.INFO/BF.CARD`.
    fn counter_names(&self) -> &'static str;
    /// The item count's name in a failed verification: `BF.CARD`.
    fn card_name(&self) -> &'static str;
    /// What the summary line says was equal: `BF.CARD and BF.INFO`.
    fn verified_with(&self) -> &'static str;
}

/// The two servers of a migration, with its record and its bars.
pub struct Ends<'a> {
    pub src: &'a mut Server,
    pub dst: &'a mut Server,
    pub run: &'a mut Run,
    pub bars: &'a Bars,
    /// The destination's RDB version, for the types copied with DUMP and
    /// RESTORE.
    pub dst_rdb: DestinationRdb,
}

/// What a streamed copy needs: the SCANDUMP header and its data bytes, or
/// None when the key is gone (or, for a Cuckoo filter, holds no item:
/// CF.SCANDUMP then exports nothing).
pub fn prepare(s: &dyn Stream, src: &mut Server, key: &[u8]) -> Result<Option<Prepared>> {
    let Some(header) = header_of(src, s.prefix(), key)? else {
        return Ok(None);
    };
    let data_bytes = s
        .data_bytes(&header)
        .ok_or_else(|| Failure::new(format!("{}: unexpected SCANDUMP header", show(key))))?;
    Ok(Some(Prepared {
        header,
        data_bytes,
        recreate: None,
        cell_size: None,
        nul_item: None,
    }))
}

/// Whether the destination's temporary key holds the recorded partial
/// copy of `job` (same header): it then already holds its memory.
pub fn holds_partial(s: &dyn Stream, dst: &mut Server, job: &Job) -> Result<bool> {
    let temp = slot::temp_key(&job.dest);
    Ok(header_of(dst, s.prefix(), &temp)?.as_deref() == Some(&job.header[..]))
}

/// Copies one filter of a streamed type into its temporary key (resuming
/// a recorded partial copy), verifies it, and renames it into place.
/// Returns the summary line.
pub fn stream(s: &dyn Stream, ends: &mut Ends<'_>, job: &Job) -> Result<String> {
    let (key, dest, header) = (&job.key[..], &job.dest[..], &job.header[..]);
    let prefix = s.prefix();
    let temp = slot::temp_key(dest);
    ends.bars.copy.set_message(show(key));
    let mut digest = start_digest(header);
    let mut it = 1i64;
    let recorded = ends
        .run
        .state
        .current
        .clone()
        .filter(|c| c.key == hex(key) && c.dest == hex(dest));
    let mut resumed = false;
    if let Some(cur) = recorded {
        if cur.header != hex(header) {
            if !ends.run.force {
                return Err(Failure::new(format!(
                    "{} changed at the source since the interrupted copy (its SCANDUMP header \
                     differs); rerun with --force to copy it again from the start",
                    show(key)
                )));
            }
        } else if header_of(ends.dst, prefix, &temp)?.as_deref() == Some(header) {
            // Re-read what was copied, to bring the source digest up to the
            // resume point.
            ends.bars
                .copy
                .set_message(format!("{} (resuming)", show(key)));
            let mut at = 1i64;
            while at != cur.next_iterator {
                let (next, data) = scandump(ends.src, prefix, key, at)?;
                if next == 0 || next <= at {
                    return Err(Failure::new(format!(
                        "{}: the source stream ended before the recorded iterator {}",
                        show(key),
                        cur.next_iterator
                    )));
                }
                digest.update(&data);
                ends.bars.copy.inc(data.len() as u64);
                at = next;
            }
            it = cur.next_iterator;
            resumed = true;
        }
        // Otherwise the partial copy is gone or was changed: start over.
    }
    if !resumed {
        // A temporary key under this name can only be a leftover of an
        // abandoned copy to the same destination.
        unlink(ends.dst, &temp)?;
        ends.run.record(Event::Start {
            key: hex(key),
            dest: hex(dest),
            key_text: show(key),
            header: hex(header),
        })?;
        // A missing key and iterator 1: the destination creates the filter
        // from the header, with the source's exact shape.
        if let Err(e) = loadchunk(ends.dst, prefix, &temp, 1, header) {
            return Err(refused(ends.dst, key, &temp, ends.run, e));
        }
    }
    ends.bars.copy.set_message(show(key));
    loop {
        let (next, data) = match scandump_raw(ends.src, prefix, key, it) {
            Ok(chunk) => chunk,
            Err(e) if is_connection_problem(&e) => {
                return Err(ends.run.stopped(Stop::Connection(
                    server_error(ends.src, &cmd(prefix, "SCANDUMP"), &e).message,
                )))
            }
            Err(e) => {
                return Err(server_error(
                    ends.src,
                    &format!("{} {} {it}", cmd(prefix, "SCANDUMP"), show(key)),
                    &e,
                ))
            }
        };
        if next == 0 {
            break;
        }
        digest.update(&data);
        // The chunk ends just before `next`; it goes out in pieces of at
        // most --chunk-size bytes, each named by the iterator one past its
        // own end, as LOADCHUNK expects.
        let start = next - data.len() as i64;
        for (i, piece) in data.chunks(ends.run.chunk_size as usize).enumerate() {
            let end = start + (i as u64 * ends.run.chunk_size) as i64 + piece.len() as i64;
            if let Err(e) = loadchunk(ends.dst, prefix, &temp, end, piece) {
                return Err(refused(ends.dst, key, &temp, ends.run, e));
            }
            ends.bars.copy.inc(piece.len() as u64);
            ends.run.check_interrupt()?;
        }
        let cur = ends.run.state.current.as_ref().expect("a current copy");
        let event = Event::Loaded {
            next_iterator: next,
            bytes_loaded: cur.bytes_loaded + data.len() as u64,
            chunks_loaded: cur.chunks_loaded + 1,
        };
        ends.run.record(event)?;
        ends.run.chunk_done()?;
        it = next;
    }
    let source_digest = digest.digest128();
    let src_card = verify::stream(s, ends, job, &temp, source_digest)?;
    let copied = ends
        .run
        .state
        .current
        .as_ref()
        .map(|c| c.chunks_loaded)
        .unwrap_or(0);

    into_place(ends.dst, &temp, dest, ends.run)?;
    ends.run.record(Event::Done { key: hex(key) })?;
    Ok(format!(
        "{} -> {}: {} bytes, {}{}, {}; verified (xxh3-128 {source_digest:032x}, {} equal)",
        show(key),
        show(dest),
        fmt::int(job.data_bytes),
        fmt::count(copied, "chunk"),
        if resumed { " (resumed)" } else { "" },
        fmt::count(src_card, "item"),
        s.verified_with(),
    ))
}
