//! `ferrobloom migrate`: copies filters between servers with BF.SCANDUMP and
//! BF.LOADCHUNK, one chunk in memory at a time, records its progress in a
//! state file so that an interrupted copy resumes, and verifies every copy
//! by a streaming xxh3-128 of both SCANDUMP streams and by comparing
//! BF.CARD and BF.INFO.
//!
//! A filter is loaded into a temporary key (`ferrobloom-migrate:{tag}:name`,
//! in the final name's hash slot) and renamed into place only once it is
//! verified: an interrupted or refused copy never looks like a real filter
//! under its final name, and with `--force` the old filter stays readable
//! until the verified copy replaces it in one step.
//!
//! Each type copied is a [`family::Family`] (family/bloom.rs, cuckoo.rs,
//! window.rs, cms.rs, topk.rs, tdigest.rs): Bloom and Cuckoo filters
//! stream with SCANDUMP and LOADCHUNK (copy.rs, verified in verify.rs),
//! windowed filters, Count-Min and Top-K sketches and t-digests go whole
//! with DUMP and RESTORE (family/whole.rs), each payload restamped to the
//! destination's RDB version (envelope.rs). This file runs the phases: the state file (state.rs), the
//! keys and the checks before writing (select.rs), then each copy, shown
//! and recorded by progress.rs; protocol.rs holds the server commands.
//! A filter the destination cannot take is reported, the others are still
//! copied, and the run ends with status 3.

mod copy;
mod envelope;
mod family;
mod progress;
mod protocol;
mod select;
mod state;
mod verify;

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use xxhash_rust::xxh3::xxh3_64;

use crate::conn::{self, Server};
use crate::fmt;
use crate::{Failure, Result};
use copy::Ends;
use family::Job;
use progress::{catch_interruptions, Bars, Run, STOP_AFTER_ENV};
use protocol::{key_type, same_database, show};
use select::{check_headroom, describe_type, scan_with_types, skipped_notice, split_filters};
use state::{hex, unhex, Identity, Journal, State};

/// Copy Bloom filters between servers, resumably, and verify them.
///
/// Copies with BF.SCANDUMP / BF.LOADCHUNK, chunk by chunk, between any of
/// FerroBloom and RedisBloom, standalone or cluster. An interrupted run
/// records its progress in a state file; running the same command again
/// continues where it stopped. Every copy is verified: xxh3-128 of the
/// source and destination SCANDUMP streams, BF.CARD and BF.INFO. Windowed
/// filters are copied with DUMP and RESTORE, and verified by their DUMP
/// values and DEBUG DIGEST-VALUE; Count-Min sketches too, verified by their
/// decoded values, CMS.INFO and CMS.QUERY (a sketch with 1-, 2- or 8-byte
/// cells only to a FerroBloom: RedisBloom refuses it, so it is left out,
/// said, before anything is copied). Top-K sketches and t-digests are
/// copied with DUMP and RESTORE too, verified by their decoded values,
/// TOPK.INFO and TOPK.LIST WITHCOUNT, or TDIGEST.INFO and the MIN, MAX,
/// QUANTILE and CDF answers (a Top-K holding an item with a NUL byte only
/// to a FerroBloom: RedisBloom 2.8.2 cuts items at the NUL). A DUMP
/// payload is restamped to the destination's RDB version (learned from a
/// DUMP the destination makes of a probe string), so values move to an
/// older server and between Redis and Valkey.
#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  ferrobloom migrate --from redis://old:6379/ --to redis://new:6379/ --key urls
  ferrobloom migrate --from redis://old:6379/ --to redis+cluster://n1:7000,n2:7000 --pattern 'bf:*'
  ferrobloom migrate --from redis://a:6379/ --to redis://b:6379/ --key urls --rename urls:v2

Without --key or --pattern, every Bloom filter (and windowed and Cuckoo
filter, Count-Min and Top-K sketch, and t-digest) of the source is copied.
The default state file is ./ferrobloom-migrate-<id>.state, <id> derived from
--from, --to, --key/--pattern and --rename; it is removed once all filters
are copied and verified.")]
pub struct MigrateArgs {
    /// Source server URL.
    #[arg(long, value_name = "URL")]
    pub from: String,
    /// Destination server URL.
    #[arg(long, value_name = "URL")]
    pub to: String,
    /// Copy this one filter.
    #[arg(long, conflicts_with = "pattern")]
    pub key: Option<String>,
    /// Copy every filter whose name matches this glob-style pattern.
    #[arg(long)]
    pub pattern: Option<String>,
    /// Name of the copy at the destination (with --key only: several
    /// filters cannot share one name).
    #[arg(long, value_name = "NEW", requires = "key", conflicts_with = "pattern")]
    pub rename: Option<String>,
    /// Replace destination keys that already exist. The copy is loaded
    /// under a temporary key and verified, then RENAME replaces the old key
    /// in one step: the old key stays readable until then.
    #[arg(long)]
    pub force: bool,
    /// Where progress is recorded (default: `./ferrobloom-migrate-<id>.state`).
    #[arg(long, value_name = "F")]
    pub state_file: Option<PathBuf>,
    /// Bytes per BF.LOADCHUNK sent to the destination, 1KiB to 16MiB
    /// (suffixes K, KiB, M, MiB). Each chunk passes through the
    /// destination's input buffer: smaller chunks need less memory there.
    #[arg(long, value_name = "BYTES", default_value = "4MiB", value_parser = parse_chunk_size)]
    pub chunk_size: u64,
}

/// The smallest and largest `--chunk-size`: below 1 KiB the round trips
/// dominate; SCANDUMP never returns more than 16 MiB at once.
const MIN_CHUNK: u64 = 1 << 10;
const MAX_CHUNK: u64 = 16 << 20;

fn parse_chunk_size(text: &str) -> std::result::Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let multiplier: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        _ => return Err(format!("unknown unit in '{text}' (use K, KiB, M or MiB)")),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("'{text}' is not a size such as 65536, 64KiB or 4MiB"))?;
    let bytes = n
        .checked_mul(multiplier)
        .filter(|b| (MIN_CHUNK..=MAX_CHUNK).contains(b))
        .ok_or_else(|| format!("'{text}' is outside 1KiB..16MiB"))?;
    Ok(bytes)
}

pub fn run(args: &MigrateArgs) -> Result<u8> {
    // A mistyped destination is a usage error before the source is reached.
    conn::check_url(&args.from)?;
    conn::check_url(&args.to)?;
    let mut src = Server::connect(&args.from)?;
    let mut dst = Server::connect(&args.to)?;
    // Without a module, SCAN finds no filter and the copy would "succeed"
    // with nothing copied; on the destination, LOADCHUNK would fail late.
    src.require_bloom_module()?;
    dst.require_bloom_module()?;
    let same_database = same_database(&src, &dst)?;
    let mut run = open_run(args, &src, &dst)?;
    let order = selected(args, &mut src, &run)?;
    let (jobs, replaced) = prepare(args, &mut src, &mut dst, same_database, order)?;
    // Types the destination cannot take are reported, and the others
    // copied.
    let (jobs, mut failures) = drop_refused(&mut dst, jobs)?;
    let state_path = run.journal.path.display().to_string();
    if jobs.is_empty() {
        if !failures.is_empty() {
            return Err(not_copied(&failures, 0, None));
        }
        println!("no filters to copy from {}", src.label);
        run.journal.remove();
        return Ok(0);
    }
    let in_place = held_in_place(&mut dst, &jobs, &run)?;
    check_headroom(&dst, &jobs, in_place.as_deref(), run.chunk_size)?;
    if !replaced.is_empty() {
        eprintln!(
            "ferrobloom: --force replaces {}: {}",
            if replaced.len() == 1 {
                "a key that is not a Bloom filter".to_string()
            } else {
                format!("{} keys that are not Bloom filters", replaced.len())
            },
            replaced.join(", ")
        );
    }

    catch_interruptions();
    let total: u64 = jobs.iter().map(|j| j.data_bytes).sum();
    let bars = Bars::new(total);
    let started = Instant::now();
    let count = jobs.len() + failures.len();
    let copied = Copied::of(&jobs);
    let mut ends = Ends {
        src: &mut src,
        dst: &mut dst,
        run: &mut run,
        bars: &bars,
        dst_rdb: Default::default(),
    };
    for job in jobs {
        if let Err(stop) = ends.run.check_interrupt() {
            bars.copy.abandon();
            return Err(stop);
        }
        match job.family.copy(&mut ends, &job) {
            Ok(Ok(line)) => bars.println(&line),
            Ok(Err(why)) => {
                bars.multi.suspend(|| eprintln!("ferrobloom: {why}"));
                failures.push(show(&job.key));
            }
            Err(f) => {
                bars.copy.abandon();
                return Err(f);
            }
        }
    }
    bars.copy.finish_and_clear();
    if !failures.is_empty() {
        // The state file stays: a run after the destination is fixed
        // copies only what is left.
        return Err(not_copied(
            &failures,
            count - failures.len(),
            Some(&state_path),
        ));
    }
    run.journal.remove();
    println!(
        "copied and verified {} ({} bytes of {}) from {} to {} in {:.1}s",
        copied.keys(),
        fmt::int(total),
        copied.data(),
        src.label,
        dst.label,
        started.elapsed().as_secs_f64()
    );
    Ok(0)
}

/// The migration's record: resumed from its state file when that file
/// records this same migration, else new.
fn open_run(args: &MigrateArgs, src: &Server, dst: &Server) -> Result<Run> {
    let identity = Identity {
        from: src.label.clone(),
        to: dst.label.clone(),
        selection: match (&args.key, &args.pattern) {
            (Some(k), _) => format!("key:{}", hex(k.as_bytes())),
            (None, Some(p)) => format!("pattern:{p}"),
            (None, None) => "all".into(),
        },
        rename: args.rename.as_ref().map(|r| hex(r.as_bytes())),
    };
    let path = args.state_file.clone().unwrap_or_else(|| {
        let id = serde_json::to_string(&identity).expect("JSON");
        PathBuf::from(format!(
            "ferrobloom-migrate-{:016x}.state",
            xxh3_64(id.as_bytes())
        ))
    });
    let (state, valid) = match State::load(&path)? {
        Some((s, valid)) if s.identity == identity => {
            eprintln!(
                "ferrobloom: resuming from {}: {} {} done{}",
                path.display(),
                s.done.len(),
                fmt::noun(s.done.len() as u64, "filter"),
                match &s.current {
                    Some(c) => format!(
                        ", {} partly copied ({})",
                        c.key_text,
                        fmt::bytes(c.bytes_loaded)
                    ),
                    None => String::new(),
                }
            );
            (s, valid)
        }
        Some((s, _)) => {
            return Err(Failure::new(format!(
                "{} records another migration ({} to {}, {}): finish it, delete the file, \
                 or pass another --state-file",
                path.display(),
                s.identity.from,
                s.identity.to,
                s.identity.selection
            )))
        }
        None => (State::new(identity), 0),
    };
    let stop_after = std::env::var(STOP_AFTER_ENV)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|n| *n > 0);
    Ok(Run {
        state,
        journal: Journal {
            path,
            file: None,
            valid,
        },
        force: args.force,
        chunk_size: args.chunk_size,
        to: dst.label.clone(),
        stop_after,
        chunks_this_run: 0,
    })
}

/// The keys to copy, those not done yet, the one a resume continues first.
fn selected(args: &MigrateArgs, src: &mut Server, run: &Run) -> Result<Vec<Vec<u8>>> {
    let keys: Vec<Vec<u8>> = match &args.key {
        Some(k) => {
            let key = k.as_bytes().to_vec();
            let kind = key_type(src, &key)?;
            if kind == "none" {
                if run.state.done.contains(&hex(&key)) {
                    Vec::new()
                } else {
                    return Err(Failure::new(format!(
                        "{}: no key {}",
                        src.label,
                        show(&key)
                    )));
                }
            } else if !family::is_copied_type(&kind) {
                return Err(Failure::new(format!(
                    "{}: {} is {}, not a Bloom filter",
                    src.label,
                    show(&key),
                    describe_type(&kind)
                )));
            } else {
                vec![key]
            }
        }
        None => {
            let found = scan_with_types(src, args.pattern.as_deref().unwrap_or("*"))?;
            let (filters, skipped) = split_filters(found);
            if let Some(notice) = skipped_notice(&skipped) {
                eprintln!("ferrobloom: {notice}");
            }
            filters
        }
    };
    let resuming = run.state.current.as_ref().and_then(|c| unhex(&c.key));
    let mut order: Vec<Vec<u8>> = keys
        .into_iter()
        .filter(|k| !run.state.done.contains(&hex(k)))
        .collect();
    if let Some(r) = &resuming {
        if let Some(i) = order.iter().position(|k| k == r) {
            let k = order.remove(i);
            order.insert(0, k);
        }
    }
    Ok(order)
}

/// Each key's job: what its family reads at the source (headers, for the
/// byte totals), with the destination's conflicts checked before anything
/// is written. Also the keys --force replaces that are not filters.
fn prepare(
    args: &MigrateArgs,
    src: &mut Server,
    dst: &mut Server,
    same_database: bool,
    order: Vec<Vec<u8>>,
) -> Result<(Vec<Job>, Vec<String>)> {
    let mut jobs = Vec::new();
    let mut conflicts = Vec::new();
    let mut replaced = Vec::new();
    for key in order {
        let dest = match &args.rename {
            Some(r) => r.as_bytes().to_vec(),
            None => key.clone(),
        };
        if same_database && dest == key {
            return Err(Failure::new(format!(
                "{}: source and destination are the same key; use --rename",
                show(&key)
            )));
        }
        // A key gone or retyped since the scan is read as a Bloom filter:
        // its SCANDUMP then finds nothing (skipped) or says why.
        let family = family::of(&key_type(src, &key)?).unwrap_or_else(family::fallback);
        // None: deleted since the scan.
        let Some(prepared) = family.prepare(src, &key)? else {
            continue;
        };
        let kind = key_type(dst, &dest)?;
        if kind != "none" {
            if !args.force {
                conflicts.push(show(&dest));
            } else if !family::is_copied_type(&kind) {
                replaced.push(format!("{} ({})", show(&dest), describe_type(&kind)));
            }
        }
        jobs.push(Job {
            key,
            dest,
            family,
            header: prepared.header,
            data_bytes: prepared.data_bytes,
            recreate: prepared.recreate,
            cell_size: prepared.cell_size,
            nul_item: prepared.nul_item,
        });
    }
    if !conflicts.is_empty() {
        return Err(Failure::new(format!(
            "{} already has {}: {}; nothing was copied (use --force to replace {})",
            dst.label,
            if conflicts.len() == 1 {
                "this key".to_string()
            } else {
                format!("{} of these keys", conflicts.len())
            },
            conflicts.join(", "),
            if conflicts.len() == 1 { "it" } else { "them" }
        )));
    }
    Ok((jobs, replaced))
}

/// The jobs the destination can take, and the names of those it cannot
/// (each reported with the reason): a type needs a destination whose
/// module has it (windowed filters, sketches), and some values a module
/// that reads them (a sketch's cells other than 4 bytes).
fn drop_refused(dst: &mut Server, jobs: Vec<Job>) -> Result<(Vec<Job>, Vec<String>)> {
    // Each job's refusal, if any; the jobs kept stay in their order (a
    // resumed copy first).
    let mut why: Vec<Option<String>> = vec![None; jobs.len()];
    for f in family::all() {
        let mine: Vec<usize> = (0..jobs.len())
            .filter(|&i| jobs[i].family.type_name() == f.type_name())
            .collect();
        if mine.is_empty() {
            continue;
        }
        let verdicts = match f.refused_by(dst)? {
            Some(all) => vec![Some(all); mine.len()],
            None => f.refused_jobs(dst, &mine.iter().map(|&i| &jobs[i]).collect::<Vec<_>>())?,
        };
        for (i, verdict) in mine.into_iter().zip(verdicts) {
            why[i] = verdict;
        }
    }
    let mut kept = Vec::with_capacity(jobs.len());
    let mut failures = Vec::new();
    for (job, why) in jobs.into_iter().zip(why) {
        match why {
            Some(why) => {
                eprintln!("ferrobloom: {}: {why}", show(&job.key));
                failures.push(show(&job.key));
            }
            None => kept.push(job),
        }
    }
    Ok((kept, failures))
}

/// The key whose recorded partial copy the destination still holds (its
/// memory is already taken), if any.
fn held_in_place(dst: &mut Server, jobs: &[Job], run: &Run) -> Result<Option<Vec<u8>>> {
    let Some(cur) = &run.state.current else {
        return Ok(None);
    };
    let Some(job) = jobs
        .iter()
        .find(|j| hex(&j.key) == cur.key && hex(&j.dest) == cur.dest)
    else {
        return Ok(None);
    };
    Ok(job.family.holds_partial(dst, job)?.then(|| job.key.clone()))
}

/// What a run copied, by family, in [`family::all`]'s order.
struct Copied(Vec<(&'static dyn family::Family, u64)>);

impl Copied {
    fn of(jobs: &[Job]) -> Copied {
        Copied(
            family::all()
                .map(|f| {
                    let n = jobs
                        .iter()
                        .filter(|j| j.family.type_name() == f.type_name())
                        .count();
                    (f, n as u64)
                })
                .filter(|&(_, n)| n > 0)
                .collect(),
        )
    }

    /// `3 filters`, `2 Count-Min sketches`, `3 filters and 1 Count-Min
    /// sketch`: the families that count their values alike (every kind of
    /// filter) counted together.
    fn keys(&self) -> String {
        let mut counts: Vec<(&str, u64)> = Vec::new();
        for (f, n) in &self.0 {
            match counts.iter_mut().find(|(noun, _)| *noun == f.noun()) {
                Some((_, total)) => *total += n,
                None => counts.push((f.noun(), *n)),
            }
        }
        let phrases: Vec<String> = counts
            .iter()
            .map(|(noun, n)| fmt::count(*n, noun))
            .collect();
        and(&phrases)
    }

    /// `bit arrays`, `cells`, `bit arrays and cells`.
    fn data(&self) -> String {
        let mut kinds: Vec<String> = Vec::new();
        for (f, _) in &self.0 {
            if !kinds.iter().any(|k| k == f.data()) {
                kinds.push(f.data().to_string());
            }
        }
        and(&kinds)
    }
}

/// `a`, `a and b`, `a, b and c`.
fn and(words: &[String]) -> String {
    match words.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        Some((last, _)) => last.clone(),
        None => "nothing".to_string(),
    }
}

/// The error that ends a run in which some filters (named) could not be
/// copied; their reasons were printed as they came.
fn not_copied(names: &[String], copied: usize, state_path: Option<&str>) -> Failure {
    let mut message = format!(
        "{} {} not copied ({copied} copied and verified): {} (see above)",
        names.len(),
        if names.len() == 1 {
            "filter was"
        } else {
            "filters were"
        },
        names.join(", ")
    );
    if let Some(path) = state_path.filter(|_| copied > 0) {
        message.push_str(&format!(
            "; once the destination can take {them}, run the same command again to copy \
             {them} (progress is in {path})",
            them = if names.len() == 1 { "it" } else { "them" }
        ));
    }
    Failure::new(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_was_copied() {
        let fams: Vec<&'static dyn family::Family> = family::all().collect();
        let copied =
            |counts: &[(usize, u64)]| Copied(counts.iter().map(|&(i, n)| (fams[i], n)).collect());
        // Bloom, windowed, Cuckoo, Count-Min, Top-K, t-digest.
        assert_eq!(copied(&[(0, 3)]).keys(), "3 filters");
        assert_eq!(copied(&[(2, 1)]).keys(), "1 filter");
        assert_eq!(copied(&[(3, 2)]).keys(), "2 Count-Min sketches");
        let mixed = copied(&[(0, 1), (2, 1), (3, 1)]);
        assert_eq!(mixed.keys(), "2 filters and 1 Count-Min sketch");
        assert_eq!(mixed.data(), "bit arrays and cells");
        let all = copied(&[(0, 2), (3, 1), (4, 2), (5, 1)]);
        assert_eq!(
            all.keys(),
            "2 filters, 1 Count-Min sketch, 2 Top-K sketches and 1 t-digest"
        );
        assert_eq!(all.data(), "bit arrays, cells, buckets and nodes");
    }

    #[test]
    fn chunk_sizes() {
        assert_eq!(parse_chunk_size("4MiB"), Ok(4 << 20));
        assert_eq!(parse_chunk_size("64K"), Ok(64 << 10));
        assert_eq!(parse_chunk_size("65536"), Ok(65536));
        assert_eq!(parse_chunk_size("16mb"), Ok(16 << 20));
        assert_eq!(parse_chunk_size("1KiB"), Ok(1024));
        for bad in [
            "0",
            "1023",
            "17MiB",
            "4XB",
            "",
            "-5",
            "1.5M",
            "99999999999999999999",
        ] {
            assert!(parse_chunk_size(bad).is_err(), "{bad}");
        }
    }
}
