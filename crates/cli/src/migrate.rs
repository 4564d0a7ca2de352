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
//! Windowed filters (`FBwindows`) have no SCANDUMP: one is copied whole
//! with DUMP and RESTORE into the temporary key, verified (the copy's own
//! DUMP holds the same value, DEBUG DIGEST-VALUE agrees where both servers
//! allow DEBUG, BF.INFO and BF.CARD are equal), and renamed into place the
//! same way. A destination that cannot RESTORE it (an older RDB format, a
//! module without windows) is reported for that filter; the others are
//! still copied, and the run ends with status 3.
//!
//! Cuckoo filters (`MBbloomCF`) go the same way with CF.SCANDUMP and
//! CF.LOADCHUNK, verified by both streams and CF.INFO. CF.SCANDUMP exports
//! nothing of a filter without items; such a filter is created again with
//! CF.RESERVE and its shape (CF.INFO), and verified by CF.INFO.

use std::collections::HashSet;
use std::fs;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clap::Args;
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::{xxh3_64, Xxh3};

use crate::conn::{self, Server, BLOOM_TYPE, CUCKOO_TYPE, WINDOW_TYPE};
use crate::fmt;
use crate::headroom::{self, Need};
use crate::reply;
use crate::slot;
use crate::{Failure, Result};

/// Exits after this many data chunks were loaded in this run, leaving the
/// state file as an interruption would (to rehearse or test a resume).
const STOP_AFTER_ENV: &str = "FERROBLOOM_MIGRATE_STOP_AFTER_CHUNKS";
/// Version 2: copies are loaded into a temporary key (version 1 loaded
/// into the final name).
const STATE_VERSION: u32 = 2;

/// Copy Bloom filters between servers, resumably, and verify them.
///
/// Copies with BF.SCANDUMP / BF.LOADCHUNK, chunk by chunk, between any of
/// FerroBloom and RedisBloom, standalone or cluster. An interrupted run
/// records its progress in a state file; running the same command again
/// continues where it stopped. Every copy is verified: xxh3-128 of the
/// source and destination SCANDUMP streams, BF.CARD and BF.INFO. Windowed
/// filters are copied with DUMP and RESTORE, and verified by their DUMP
/// values and DEBUG DIGEST-VALUE.
#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  ferrobloom migrate --from redis://old:6379/ --to redis://new:6379/ --key urls
  ferrobloom migrate --from redis://old:6379/ --to redis+cluster://n1:7000,n2:7000 --pattern 'bf:*'
  ferrobloom migrate --from redis://a:6379/ --to redis://b:6379/ --key urls --rename urls:v2

Without --key or --pattern, every Bloom filter (and Cuckoo filter) of the
source is copied.
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

/// What identifies a migration: a state file belongs to one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Identity {
    from: String,
    to: String,
    /// `key:<hex>`, `pattern:<text>` or `all`.
    selection: String,
    /// Destination name (hex) for --rename.
    rename: Option<String>,
}

/// The filter being copied when the run stopped.
#[derive(Clone, Debug)]
struct Current {
    /// Source key, hex.
    key: String,
    /// Destination key, hex.
    dest: String,
    /// Readable form of the source key (informational).
    key_text: String,
    /// The SCANDUMP header (iterator 0) the copy started from, hex.
    header: String,
    /// The next source iterator: the one returned with the last chunk
    /// loaded at the destination (1 when no chunk was loaded yet).
    next_iterator: i64,
    bytes_loaded: u64,
    chunks_loaded: u64,
}

/// The first line of a state file.
#[derive(Serialize, Deserialize)]
struct Preamble {
    version: u32,
    #[serde(flatten)]
    identity: Identity,
}

/// Each further line of a state file: the file is an append-only journal
/// (JSON lines), so recording progress costs one short line, however many
/// filters were done before.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Event {
    /// A filter's copy starts (recorded before its header is sent).
    Start {
        key: String,
        dest: String,
        key_text: String,
        header: String,
    },
    /// One more chunk is loaded at the destination.
    Loaded {
        next_iterator: i64,
        bytes_loaded: u64,
        chunks_loaded: u64,
    },
    /// The filter is copied and verified.
    Done { key: String },
    /// The current copy will not be resumed (its header was refused, or
    /// its verification failed).
    Abandon { key: String },
}

/// A migration's progress, as replayed from its state file.
#[derive(Clone, Debug)]
struct State {
    identity: Identity,
    /// Source keys (hex) already copied and verified.
    done: HashSet<String>,
    current: Option<Current>,
}

impl State {
    fn new(identity: Identity) -> State {
        State {
            identity,
            done: HashSet::new(),
            current: None,
        }
    }

    fn apply(&mut self, event: &Event) {
        match event {
            Event::Start {
                key,
                dest,
                key_text,
                header,
            } => {
                self.current = Some(Current {
                    key: key.clone(),
                    dest: dest.clone(),
                    key_text: key_text.clone(),
                    header: header.clone(),
                    next_iterator: 1,
                    bytes_loaded: 0,
                    chunks_loaded: 0,
                })
            }
            Event::Loaded {
                next_iterator,
                bytes_loaded,
                chunks_loaded,
            } => {
                if let Some(c) = self.current.as_mut() {
                    c.next_iterator = *next_iterator;
                    c.bytes_loaded = *bytes_loaded;
                    c.chunks_loaded = *chunks_loaded;
                }
            }
            Event::Done { key } => {
                self.done.insert(key.clone());
                self.current = None;
            }
            Event::Abandon { .. } => self.current = None,
        }
    }

    /// Replays a state file: the state, and the length of its complete
    /// lines (a line cut short by a crash is dropped).
    fn load(path: &Path) -> Result<Option<(State, u64)>> {
        let text = match fs::read(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Failure::new(format!("{}: {e}", path.display()))),
        };
        let bad = |what: String| {
            Failure::new(format!(
                "{}: not a migration state file ({what}); delete it or pass another --state-file",
                path.display()
            ))
        };
        let complete = text.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        let mut lines = text[..complete]
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty());
        let Some(first) = lines.next() else {
            return Ok(None);
        };
        let preamble: Preamble =
            serde_json::from_slice(first).map_err(|e| bad(format!("line 1: {e}")))?;
        if preamble.version == 1 {
            return Err(Failure::new(format!(
                "{}: written by an older ferrobloom, which loaded copies under their final \
                 names: a filter it left partly copied at {} is not complete. Delete the \
                 state file and run the migration again with --force",
                path.display(),
                preamble.identity.to
            )));
        }
        if preamble.version != STATE_VERSION {
            return Err(Failure::new(format!(
                "{}: state file version {} is not supported",
                path.display(),
                preamble.version
            )));
        }
        let mut state = State::new(preamble.identity);
        for (i, line) in lines.enumerate() {
            let event: Event =
                serde_json::from_slice(line).map_err(|e| bad(format!("line {}: {e}", i + 2)))?;
            state.apply(&event);
        }
        Ok(Some((state, complete as u64)))
    }
}

/// Appends events to the state file (created, with its preamble, on the
/// first event).
struct Journal {
    path: PathBuf,
    file: Option<fs::File>,
    /// Bytes of complete lines in an existing file.
    valid: u64,
}

impl Journal {
    fn append(&mut self, state: &State, event: &Event, sync: bool) -> Result<()> {
        let fail = |e: std::io::Error| Failure::new(format!("{}: {e}", self.path.display()));
        if self.file.is_none() {
            let mut file = fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .read(true)
                .write(true)
                .open(&self.path)
                .map_err(fail)?;
            // Drop a line cut short by an earlier crash.
            file.set_len(self.valid).map_err(fail)?;
            file.seek(SeekFrom::End(0)).map_err(fail)?;
            if self.valid == 0 {
                let preamble = Preamble {
                    version: STATE_VERSION,
                    identity: state.identity.clone(),
                };
                let line = serde_json::to_string(&preamble).expect("JSON") + "\n";
                file.write_all(line.as_bytes()).map_err(fail)?;
            }
            self.file = Some(file);
        }
        let file = self.file.as_mut().expect("opened");
        let line = serde_json::to_string(event).expect("JSON") + "\n";
        file.write_all(line.as_bytes()).map_err(fail)?;
        if sync {
            file.sync_data().map_err(fail)?;
        }
        Ok(())
    }

    fn remove(&mut self) {
        self.file = None;
        self.valid = 0;
        let _ = fs::remove_file(&self.path);
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

fn show(key: &[u8]) -> String {
    crate::fmt::key(key)
}

/// Which commands copy a filter: BF.SCANDUMP / BF.LOADCHUNK / BF.INFO and
/// BF.CARD, or CF.SCANDUMP / CF.LOADCHUNK / CF.INFO (its item counter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Family {
    Bloom,
    Cuckoo,
}

impl Family {
    fn of(kind: &str) -> Family {
        if kind == CUCKOO_TYPE {
            Family::Cuckoo
        } else {
            Family::Bloom
        }
    }

    /// What verification compares besides the stream.
    fn counter_names(self) -> &'static str {
        match self {
            Family::Bloom => "BF.INFO/BF.CARD",
            Family::Cuckoo => "CF.INFO",
        }
    }

    fn card_name(self) -> &'static str {
        match self {
            Family::Bloom => "BF.CARD",
            Family::Cuckoo => "items",
        }
    }

    fn verified_with(self) -> &'static str {
        match self {
            Family::Bloom => "BF.CARD and BF.INFO",
            Family::Cuckoo => "CF.INFO",
        }
    }

    fn cmd(self, name: &str) -> String {
        match self {
            Family::Bloom => format!("BF.{name}"),
            Family::Cuckoo => format!("CF.{name}"),
        }
    }
}

/// Whether migrate copies keys of this type.
fn is_copied_type(kind: &str) -> bool {
    kind == BLOOM_TYPE || kind == WINDOW_TYPE || kind == CUCKOO_TYPE
}

/// One filter to copy.
struct Job {
    key: Vec<u8>,
    dest: Vec<u8>,
    family: Family,
    /// A Cuckoo filter without items: CF.SCANDUMP exports nothing of it, so
    /// it is created again with CF.RESERVE and its shape (CF.INFO).
    empty_cuckoo: Option<Vec<String>>,
    /// The SCANDUMP header of a Bloom filter; empty for a windowed filter
    /// (copied with DUMP and RESTORE).
    header: Vec<u8>,
    data_bytes: u64,
    window: bool,
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

/// The data bytes a SCANDUMP header describes (sum of its link sizes).
fn header_data_bytes(header: &[u8]) -> Option<u64> {
    use ferrobloom_core::bloom::scandump::{HEADER_FIXED, HEADER_PER_LINK};
    let links = u32::from_le_bytes(header.get(8..12)?.try_into().ok()?) as usize;
    if header.len() != HEADER_FIXED + HEADER_PER_LINK * links {
        return None;
    }
    (0..links).try_fold(0u64, |acc, i| {
        let at = HEADER_FIXED + HEADER_PER_LINK * i;
        let bytes = u64::from_le_bytes(header.get(at..at + 8)?.try_into().ok()?);
        acc.checked_add(bytes)
    })
}

fn server_error(server: &Server, what: &str, e: &redis::RedisError) -> Failure {
    Failure::new(format!(
        "{what} on {}: {}",
        server.label,
        reply::describe_error(e)
    ))
}

/// BF.SCANDUMP (CF.SCANDUMP) key it, with the error as the server gave it.
fn scandump_raw(
    server: &mut Server,
    family: Family,
    key: &[u8],
    it: i64,
) -> redis::RedisResult<(i64, Vec<u8>)> {
    let (next, data): (i64, redis::Value) =
        server.query(redis::cmd(&family.cmd("SCANDUMP")).arg(key).arg(it))?;
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
fn scandump(server: &mut Server, family: Family, key: &[u8], it: i64) -> Result<(i64, Vec<u8>)> {
    let what = family.cmd("SCANDUMP");
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
fn header_of(server: &mut Server, family: Family, key: &[u8]) -> Result<Option<Vec<u8>>> {
    let what = family.cmd("SCANDUMP");
    match server.query::<(i64, redis::Value)>(redis::cmd(&what).arg(key).arg(0)) {
        Ok((0, _)) => Ok(None),
        Ok((_, data)) => Ok(reply::bytes(data)),
        Err(e) if reply::is_not_found(&e) => Ok(None),
        Err(e) => Err(server_error(server, &format!("{what} {} 0", show(key)), &e)),
    }
}

fn loadchunk(
    server: &mut Server,
    family: Family,
    key: &[u8],
    it: i64,
    data: &[u8],
) -> redis::RedisResult<()> {
    server.query::<()>(
        redis::cmd(&family.cmd("LOADCHUNK"))
            .arg(key)
            .arg(it)
            .arg(data),
    )
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

fn key_type(server: &mut Server, key: &[u8]) -> Result<String> {
    server
        .query::<String>(redis::cmd("TYPE").arg(key))
        .map_err(|e| server_error(server, "TYPE", &e))
}

/// The header goes first into the digest, with its length, so that the
/// digest covers the shape as well as the bits.
fn start_digest(header: &[u8]) -> Xxh3 {
    let mut h = Xxh3::new();
    h.update(&(header.len() as u64).to_le_bytes());
    h.update(header);
    h
}

struct Bars {
    multi: MultiProgress,
    copy: ProgressBar,
}

impl Bars {
    fn new(total: u64) -> Bars {
        let multi = MultiProgress::new();
        let copy = multi.add(ProgressBar::new(total));
        copy.set_style(bar_style("cyan/blue"));
        copy.set_prefix("copy");
        copy.enable_steady_tick(Duration::from_millis(200));
        Bars { multi, copy }
    }

    /// Prints a line above the bars.
    fn println(&self, line: &str) {
        self.multi.suspend(|| println!("{line}"));
    }
}

fn bar_style(colors: &str) -> ProgressStyle {
    ProgressStyle::with_template(&format!(
        "{{prefix:>6.bold}} {{msg:20!}} [{{wide_bar:.{colors}}}] {{bytes:>10}}/{{total_bytes:<10}} \
         {{binary_bytes_per_sec:>11}} ETA {{eta}}"
    ))
    .expect("template")
    .progress_chars("=> ")
}

/// Set by SIGINT and SIGTERM: the copy stops after the chunk in flight.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_interrupt(signal: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
    // A second Ctrl-C ends the program at once.
    // SAFETY: signal() is async-signal-safe (POSIX), and restoring the
    // default disposition touches no memory of this program.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
    }
}

/// Ctrl-C and `kill` stop a migration between two chunks, so that it can
/// say what is left and how to resume, instead of dying mid-write.
fn catch_interruptions() {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only stores to an atomic and calls signal(),
        // both async-signal-safe; it is installed before any other thread
        // that could race with the disposition exists.
        unsafe {
            libc::signal(signal, on_interrupt as *const () as libc::sighandler_t);
        }
    }
}

/// Why a migration stopped before its end.
enum Stop {
    /// The test hook ([`STOP_AFTER_ENV`]).
    Hook,
    /// SIGINT or SIGTERM.
    Signal,
    /// The connection to a server failed (reset, timeout): the message.
    Connection(String),
}

/// What the run has done, for the test hook and the summary.
struct Run {
    state: State,
    journal: Journal,
    force: bool,
    chunk_size: u64,
    /// Destination URL, for messages.
    to: String,
    stop_after: Option<u64>,
    chunks_this_run: u64,
}

impl Run {
    /// Applies an event and records it. Only `Start` and `Abandon` are
    /// synced to disk: they decide whether a destination key is ours to
    /// resume; a lost `Loaded` or `Done` only makes a resume redo a little.
    fn record(&mut self, event: Event) -> Result<()> {
        self.state.apply(&event);
        let sync = matches!(event, Event::Start { .. } | Event::Abandon { .. });
        self.journal.append(&self.state, &event, sync)
    }

    /// After a SCANDUMP chunk is loaded: the test hook stops as an
    /// interruption would.
    fn chunk_done(&mut self) -> Result<()> {
        self.chunks_this_run += 1;
        if self.stop_after.is_some_and(|n| self.chunks_this_run >= n) {
            return Err(self.stopped(Stop::Hook));
        }
        Ok(())
    }

    /// Between two LOADCHUNKs: stop if the user asked to.
    fn check_interrupt(&self) -> Result<()> {
        if INTERRUPTED.load(Ordering::SeqCst) {
            return Err(self.stopped(Stop::Signal));
        }
        Ok(())
    }

    /// The report of a stopped migration: what is done, what is left, how
    /// to resume and how to give up.
    fn stopped(&self, why: Stop) -> Failure {
        // A read or write on a socket with a timeout is not restarted after
        // a signal handler (signal(7)): Ctrl-C during a round trip shows up
        // as a connection error (EINTR), and is the user's interruption.
        let why = match why {
            Stop::Connection(_) if INTERRUPTED.load(Ordering::SeqCst) => Stop::Signal,
            other => other,
        };
        let state_path = self.journal.path.display();
        let (reason, code) = match why {
            Stop::Hook => (
                format!(
                    "stopped after {} ({STOP_AFTER_ENV})",
                    fmt::count(self.chunks_this_run, "chunk")
                ),
                crate::EXIT_STOPPED,
            ),
            Stop::Signal => ("interrupted".to_string(), crate::EXIT_INTERRUPTED),
            Stop::Connection(m) => (m, crate::EXIT_ERROR),
        };
        let done = self.state.done.len();
        let mut message = format!(
            "{reason}. {done} {} copied and verified so far",
            fmt::noun(done as u64, "filter")
        );
        match &self.state.current {
            Some(cur) => {
                let dest = unhex(&cur.dest).unwrap_or_default();
                let temp = slot::temp_key(&dest);
                message.push_str(&format!(
                    "; {} is partly copied ({} in {}) into the temporary key {} at {}: \
                     nothing is visible under {} until its copy is verified.",
                    cur.key_text,
                    fmt::bytes(cur.bytes_loaded),
                    fmt::count(cur.chunks_loaded, "chunk"),
                    show(&temp),
                    self.to,
                    show(&dest),
                ));
                message.push_str(&format!(
                    " Run the same command again to resume (progress is in {state_path}); \
                     to give up instead, delete {state_path} and the key {} at the destination",
                    show(&temp)
                ));
            }
            None => message.push_str(&format!(
                ". Run the same command again to copy the rest (progress is in {state_path})"
            )),
        }
        Failure { message, code }
    }
}

fn is_connection_problem(e: &redis::RedisError) -> bool {
    e.is_io_error() || e.is_timeout() || e.is_connection_dropped() || e.is_connection_refusal()
}

/// Whether source and destination are the same database of the same
/// server, recognised by `run_id` and database number, not by the URL
/// (a trailing slash, `localhost` for `127.0.0.1` or a unix socket must not
/// hide it): there a filter copied under its own name would first be
/// replaced with an empty one.
fn same_database(src: &Server, dst: &Server) -> Result<bool> {
    let dst_ids = dst.identities()?;
    Ok(src.identities()?.iter().any(|id| dst_ids.contains(id)))
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
    let mut run = Run {
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
    };

    // Which filters.
    let keys: Vec<Vec<u8>> = match &args.key {
        Some(k) => {
            let key = k.as_bytes().to_vec();
            let kind = key_type(&mut src, &key)?;
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
            } else if !is_copied_type(&kind) {
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
            let found = scan_with_types(&src, args.pattern.as_deref().unwrap_or("*"))?;
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

    // Headers (for the byte totals), destination conflicts and memory,
    // before anything is written.
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
        let source_type = key_type(&mut src, &key)?;
        let window = source_type == WINDOW_TYPE;
        let family = Family::of(&source_type);
        let mut empty_cuckoo = None;
        let (header, data_bytes) = if window {
            let Some(bytes) = window_size(&mut src, &key)? else {
                continue;
            };
            (Vec::new(), bytes)
        } else {
            match header_of(&mut src, family, &key)? {
                Some(header) => {
                    let data_bytes = match family {
                        Family::Bloom => header_data_bytes(&header),
                        Family::Cuckoo => cuckoo_header_data_bytes(&header),
                    }
                    .ok_or_else(|| {
                        Failure::new(format!("{}: unexpected SCANDUMP header", show(&key)))
                    })?;
                    (header, data_bytes)
                }
                None if family == Family::Cuckoo => {
                    let Some(reserve) = empty_cuckoo_reserve(&mut src, &key)? else {
                        continue;
                    };
                    empty_cuckoo = Some(reserve);
                    (Vec::new(), 0)
                }
                // Deleted since the scan.
                None => continue,
            }
        };
        let kind = key_type(&mut dst, &dest)?;
        if kind != "none" {
            if !args.force {
                conflicts.push(show(&dest));
            } else if !is_copied_type(&kind) {
                replaced.push(format!("{} ({})", show(&dest), describe_type(&kind)));
            }
        }
        jobs.push(Job {
            key,
            dest,
            family,
            empty_cuckoo,
            header,
            data_bytes,
            window,
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
    // Windowed filters need a destination whose module has them; those it
    // cannot take are reported, and the others copied.
    let mut failures: Vec<String> = Vec::new();
    let state_path = run.journal.path.display().to_string();
    if jobs.iter().any(|j| j.window) {
        if let Some(node) = lacks_windows(&dst)? {
            let (windows, others): (Vec<Job>, Vec<Job>) = jobs.into_iter().partition(|j| j.window);
            jobs = others;
            for job in windows {
                eprintln!(
                    "ferrobloom: {}: {} cannot hold windowed filters: {node} has no FBwindows \
                     type (BF.PLAN ... WINDOW is refused there: RedisBloom, or a FerroBloom \
                     without windows); load a FerroBloom with windowed filters there, or \
                     recreate the window with BF.RESERVE ... WINDOW",
                    show(&job.key),
                    dst.label
                );
                failures.push(show(&job.key));
            }
        }
    }
    if jobs.is_empty() {
        if !failures.is_empty() {
            return Err(not_copied(&failures, 0, None));
        }
        println!("no filters to copy from {}", src.label);
        run.journal.remove();
        return Ok(0);
    }
    // A partial copy to resume already holds its memory.
    let mut in_place = None;
    if let Some(cur) = run.state.current.clone() {
        if let Some(job) = jobs
            .iter()
            .find(|j| !j.window && hex(&j.key) == cur.key && hex(&j.dest) == cur.dest)
        {
            let temp = slot::temp_key(&job.dest);
            if header_of(&mut dst, job.family, &temp)?.as_deref() == Some(&job.header[..]) {
                in_place = Some(job.key.clone());
            }
        }
    }
    check_headroom(&dst, &jobs, in_place.as_deref(), &run)?;
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
    for job in jobs {
        if let Err(stop) = run.check_interrupt() {
            bars.copy.abandon();
            return Err(stop);
        }
        let outcome = if job.window {
            copy_window(&mut src, &mut dst, &job, &mut run, &bars)
        } else {
            copy_one(&mut src, &mut dst, &job, &mut run, &bars).map(Ok)
        };
        match outcome {
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
        "copied and verified {count} {} ({} bytes of bit arrays) from {} to {} in {:.1}s",
        fmt::noun(count as u64, "filter"),
        fmt::int(total),
        src.label,
        dst.label,
        started.elapsed().as_secs_f64()
    );
    Ok(0)
}

/// `MBbloomCF` and the other types a user may meet, in words.
fn describe_type(kind: &str) -> String {
    match kind {
        "MBbloomCF" => "a Cuckoo filter (MBbloomCF)".to_string(),
        "CMSk-TYPE" => "a Count-Min sketch (CMSk-TYPE)".to_string(),
        "TopK-TYPE" => "a Top-K (TopK-TYPE)".to_string(),
        "TDIS-TYPE" => "a t-digest (TDIS-TYPE)".to_string(),
        _ => format!("a {kind}"),
    }
}

/// A key and why it is left out (or its type).
type KeyNote = (Vec<u8>, String);

/// Every key matching `pattern` on every master, with its type: SCAN, then
/// the TYPE of each batch in one pipeline.
fn scan_with_types(server: &Server, pattern: &str) -> Result<Vec<KeyNote>> {
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
fn split_filters(found: Vec<KeyNote>) -> (Vec<Vec<u8>>, Vec<KeyNote>) {
    let mut filters = Vec::new();
    let mut skipped = Vec::new();
    for (key, kind) in found {
        if kind == "none" {
            // Expired or deleted since the scan.
        } else if !is_copied_type(&kind) {
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
const NOTICE_NAMES: usize = 10;

/// "skipped 3 keys (migrate copies …): a (…), b (…)"; each name says why it
/// was left out (its type, or the unfinished copy of another migration).
fn skipped_notice(skipped: &[KeyNote]) -> Option<String> {
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
        "skipped {} (migrate copies Bloom, windowed and Cuckoo filters only): {}",
        fmt::count(skipped.len() as u64, "key"),
        names.join(", ")
    ))
}

/// Refuses, before anything is written, a migration the destination has
/// no memory for (see [`headroom`]).
fn check_headroom(dst: &Server, jobs: &[Job], in_place: Option<&[u8]>, run: &Run) -> Result<()> {
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
        if let Some(why) = headroom::shortfall(&memory, need, run.chunk_size) {
            return Err(Failure::new(why));
        }
    }
    Ok(())
}

/// For each hash slot, the index (in `nodes`) of the master serving it,
/// matched by node id (`CLUSTER MYID` against `CLUSTER SLOTS`).
fn slot_owners(nodes: &mut [(String, redis::Connection)]) -> Result<Vec<Option<usize>>> {
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

/// Copies one filter into its temporary key (resuming a recorded partial
/// copy), verifies it, and renames it into place. Returns the summary line.
fn copy_one(
    src: &mut Server,
    dst: &mut Server,
    job: &Job,
    run: &mut Run,
    bars: &Bars,
) -> Result<String> {
    let (key, dest, header) = (&job.key[..], &job.dest[..], &job.header[..]);
    let family = job.family;
    let temp = slot::temp_key(dest);
    bars.copy.set_message(show(key));
    if let Some(reserve) = &job.empty_cuckoo {
        return copy_empty_cuckoo(src, dst, job, reserve, run);
    }
    let mut digest = start_digest(header);
    let mut it = 1i64;
    let recorded = run
        .state
        .current
        .clone()
        .filter(|c| c.key == hex(key) && c.dest == hex(dest));
    let mut resumed = false;
    if let Some(cur) = recorded {
        if cur.header != hex(header) {
            if !run.force {
                return Err(Failure::new(format!(
                    "{} changed at the source since the interrupted copy (its SCANDUMP header \
                     differs); rerun with --force to copy it again from the start",
                    show(key)
                )));
            }
        } else if header_of(dst, family, &temp)?.as_deref() == Some(header) {
            // Re-read what was copied, to bring the source digest up to the
            // resume point.
            bars.copy.set_message(format!("{} (resuming)", show(key)));
            let mut at = 1i64;
            while at != cur.next_iterator {
                let (next, data) = scandump(src, family, key, at)?;
                if next == 0 || next <= at {
                    return Err(Failure::new(format!(
                        "{}: the source stream ended before the recorded iterator {}",
                        show(key),
                        cur.next_iterator
                    )));
                }
                digest.update(&data);
                bars.copy.inc(data.len() as u64);
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
        unlink(dst, &temp)?;
        run.record(Event::Start {
            key: hex(key),
            dest: hex(dest),
            key_text: show(key),
            header: hex(header),
        })?;
        // A missing key and iterator 1: the destination creates the filter
        // from the header, with the source's exact shape.
        if let Err(e) = loadchunk(dst, family, &temp, 1, header) {
            return Err(refused(dst, key, &temp, run, e));
        }
    }
    bars.copy.set_message(show(key));
    loop {
        let (next, data) = match scandump_raw(src, family, key, it) {
            Ok(chunk) => chunk,
            Err(e) if is_connection_problem(&e) => {
                return Err(run.stopped(Stop::Connection(
                    server_error(src, &family.cmd("SCANDUMP"), &e).message,
                )))
            }
            Err(e) => {
                return Err(server_error(
                    src,
                    &format!("{} {} {it}", family.cmd("SCANDUMP"), show(key)),
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
        for (i, piece) in data.chunks(run.chunk_size as usize).enumerate() {
            let end = start + (i as u64 * run.chunk_size) as i64 + piece.len() as i64;
            if let Err(e) = loadchunk(dst, family, &temp, end, piece) {
                return Err(refused(dst, key, &temp, run, e));
            }
            bars.copy.inc(piece.len() as u64);
            run.check_interrupt()?;
        }
        let cur = run.state.current.as_ref().expect("a current copy");
        let event = Event::Loaded {
            next_iterator: next,
            bytes_loaded: cur.bytes_loaded + data.len() as u64,
            chunks_loaded: cur.chunks_loaded + 1,
        };
        run.record(event)?;
        run.chunk_done()?;
        it = next;
    }
    let source_digest = digest.digest128();
    let copied = run
        .state
        .current
        .as_ref()
        .map(|c| c.chunks_loaded)
        .unwrap_or(0);

    // Verify: the destination's own stream, then its counters.
    let verify = bars.multi.add(ProgressBar::new(job.data_bytes));
    verify.set_style(bar_style("green/white"));
    verify.set_prefix("verify");
    verify.set_message(show(dest));
    let temp_header = header_of(dst, family, &temp)?.ok_or_else(|| {
        Failure::new(format!(
            "{}: the temporary key {} vanished during the copy",
            dst.label,
            show(&temp)
        ))
    })?;
    let mut check = start_digest(&temp_header);
    let mut at = 1i64;
    loop {
        let (next, data) = scandump(dst, family, &temp, at)?;
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
        unlink(dst, &temp)?;
        run.record(Event::Abandon { key: hex(key) })?;
        return Err(Failure::new(format!(
            "VERIFICATION FAILED for {} -> {}: xxh3-128 of the source stream {source_digest:032x}, \
             of the destination stream {dest_digest:032x}. The copy was deleted and {} left as \
             it was; run the command again to copy it again",
            show(key),
            show(dest),
            show(dest)
        )));
    }
    let (src_info, src_card) = counters(src, family, key)?;
    let (dst_info, dst_card) = counters(dst, family, &temp)?;
    let card = family.card_name();
    if src_info != dst_info || src_card != dst_card {
        unlink(dst, &temp)?;
        run.record(Event::Abandon { key: hex(key) })?;
        return Err(Failure::new(format!(
            "VERIFICATION FAILED for {} -> {}: {} differ (source: {}, {card} \
             {src_card}; copy: {}, {card} {dst_card}); was the source written to during the \
             copy? The copy was deleted and {} left as it was",
            show(key),
            show(dest),
            family.counter_names(),
            describe_info(&src_info),
            describe_info(&dst_info),
            show(dest)
        )));
    }
    into_place(dst, &temp, dest, run)?;
    run.record(Event::Done { key: hex(key) })?;
    Ok(format!(
        "{} -> {}: {} bytes, {}{}, {}; verified (xxh3-128 {source_digest:032x}, {} equal)",
        show(key),
        show(dest),
        fmt::int(job.data_bytes),
        fmt::count(copied, "chunk"),
        if resumed { " (resumed)" } else { "" },
        fmt::count(src_card, "item"),
        family.verified_with(),
    ))
}

/// An empty Cuckoo filter (nothing for CF.SCANDUMP to export): CF.RESERVE
/// with its shape under the temporary name, CF.INFO compared, then put in
/// place like any copy.
fn copy_empty_cuckoo(
    src: &mut Server,
    dst: &mut Server,
    job: &Job,
    reserve: &[String],
    run: &mut Run,
) -> Result<String> {
    let (key, dest) = (&job.key[..], &job.dest[..]);
    let temp = slot::temp_key(dest);
    unlink(dst, &temp)?;
    run.record(Event::Start {
        key: hex(key),
        dest: hex(dest),
        key_text: show(key),
        header: String::new(),
    })?;
    if let Err(e) = dst.query::<()>(redis::cmd("CF.RESERVE").arg(&temp).arg(reserve)) {
        return Err(refused(dst, key, &temp, run, e));
    }
    let (src_info, _) = counters(src, Family::Cuckoo, key)?;
    let (dst_info, _) = counters(dst, Family::Cuckoo, &temp)?;
    if src_info != dst_info {
        unlink(dst, &temp)?;
        run.record(Event::Abandon { key: hex(key) })?;
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
    into_place(dst, &temp, dest, run)?;
    run.record(Event::Done { key: hex(key) })?;
    Ok(format!(
        "{} -> {}: an empty Cuckoo filter, recreated with CF.RESERVE {}; verified (CF.INFO \
         equal)",
        show(key),
        show(dest),
        reserve.join(" ")
    ))
}

/// Puts a verified copy in place, in one step: RENAME replaces what
/// --force allowed to replace; RENAMENX refuses a key created at the
/// destination meanwhile.
fn into_place(dst: &mut Server, temp: &[u8], dest: &[u8], run: &Run) -> Result<()> {
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

/// The RDB format version a DUMP payload was written in (the two bytes
/// before its CRC).
fn payload_rdb_version(payload: &[u8]) -> Option<u16> {
    let at = payload.len().checked_sub(10)?;
    Some(u16::from_le_bytes([payload[at], payload[at + 1]]))
}

/// A DUMP payload without its RDB version and CRC: the value itself, the
/// same whatever server wrote it.
fn payload_value(payload: &[u8]) -> &[u8] {
    &payload[..payload.len().saturating_sub(10)]
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
fn copy_window(
    src: &mut Server,
    dst: &mut Server,
    job: &Job,
    run: &mut Run,
    bars: &Bars,
) -> Result<std::result::Result<String, String>> {
    let (key, dest) = (&job.key[..], &job.dest[..]);
    let temp = slot::temp_key(dest);
    bars.copy.set_message(show(key));
    let payload: Option<Vec<u8>> = match src.query(redis::cmd("DUMP").arg(key)) {
        Ok(p) => p,
        Err(e) if is_connection_problem(&e) => {
            return Err(run.stopped(Stop::Connection(server_error(src, "DUMP", &e).message)))
        }
        Err(e) => return Err(server_error(src, &format!("DUMP {}", show(key)), &e)),
    };
    let Some(payload) = payload else {
        bars.copy.inc(job.data_bytes);
        return Ok(Ok(format!(
            "{}: deleted at the source since the scan; nothing copied",
            show(key)
        )));
    };
    // The payload arrives whole in one argument.
    if let Some(limit) = dst
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
                dst.label,
                fmt::bytes(limit)
            )));
        }
    }
    unlink(dst, &temp)?;
    let restored = dst.query::<()>(redis::cmd("RESTORE").arg(&temp).arg(0).arg(&payload[..]));
    if let Err(e) = restored {
        if is_connection_problem(&e) {
            return Err(run.stopped(Stop::Connection(server_error(dst, "RESTORE", &e).message)));
        }
        let _ = unlink(dst, &temp);
        let said = reply::describe_error(&e);
        let why = if said.contains("payload version or checksum") {
            format!(
                "{}: {} refused RESTORE ({said}): the payload is in RDB format {} ({}, {}), \
                 newer than {} ({}) reads. A windowed filter moves by DUMP/RESTORE to a \
                 server of the same or a newer version; copy it to one, or recreate it there \
                 with BF.RESERVE ... WINDOW",
                show(key),
                dst.label,
                payload_rdb_version(&payload).map_or("?".into(), |v| v.to_string()),
                src.label,
                server_version(src),
                dst.label,
                server_version(dst)
            )
        } else if said.contains("Bad data format") {
            format!(
                "{}: {} refused RESTORE ({said}): its module cannot load a windowed filter \
                 (FBwindows); load a FerroBloom with windowed filters there",
                show(key),
                dst.label
            )
        } else {
            format!("{}: {} refused RESTORE: {said}", show(key), dst.label)
        };
        return Ok(Err(why));
    }
    bars.copy.inc(job.data_bytes);

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
    let copy: Option<Vec<u8>> = dst
        .query(redis::cmd("DUMP").arg(&temp))
        .map_err(|e| server_error(dst, "DUMP", &e))?;
    let source_digest = xxhash_rust::xxh3::xxh3_128(payload_value(&payload));
    let copy_digest = copy
        .as_deref()
        .map(|c| xxhash_rust::xxh3::xxh3_128(payload_value(c)));
    if copy_digest != Some(source_digest) {
        return Err(fail(
            dst,
            format!(
                "xxh3-128 of the source's DUMP value {source_digest:032x}, of the copy's {}",
                copy_digest.map_or("(gone)".into(), |d| format!("{d:032x}"))
            ),
        ));
    }
    let digests = (digest_value(src, key)?, digest_value(dst, &temp)?);
    let digest_note = match &digests {
        (Some(a), Some(b)) if a != b => {
            return Err(fail(
                dst,
                format!("DEBUG DIGEST-VALUE {a} at the source, {b} for the copy"),
            ))
        }
        (Some(a), Some(_)) => format!("DEBUG DIGEST-VALUE {a}, "),
        _ => String::new(),
    };
    let (src_info, src_card) = counters(src, Family::Bloom, key)?;
    let (dst_info, dst_card) = counters(dst, Family::Bloom, &temp)?;
    if src_info != dst_info || src_card != dst_card {
        return Err(fail(
            dst,
            format!(
                "BF.INFO/BF.CARD differ (source: {}, BF.CARD {src_card}; copy: {}, BF.CARD \
                 {dst_card}); was the source written to during the copy?",
                describe_info(&src_info),
                describe_info(&dst_info)
            ),
        ));
    }
    into_place(dst, &temp, dest, run)?;
    run.record(Event::Done { key: hex(key) })?;
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

fn unlink(server: &mut Server, key: &[u8]) -> Result<()> {
    server
        .query::<i64>(redis::cmd("UNLINK").arg(key))
        .map(|_| ())
        .map_err(|e| server_error(server, "UNLINK", &e))
}

/// A LOADCHUNK that failed. A lost connection or a timeout is an
/// interruption (the partial copy is kept for a resume); a refusal by the
/// destination (out of memory, bad data) deletes the partial copy, so that
/// it holds no memory, and abandons this filter.
fn refused(
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
fn describe_info(info: &Info) -> String {
    info.iter()
        .map(|(k, v)| match v {
            Some(n) => format!("{k} {n}"),
            None => format!("{k} ?"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// BF.INFO as (label, value) pairs.
type Info = Vec<(String, Option<i64>)>;

/// BF.INFO and BF.CARD; CF.INFO and its item counter.
fn counters(server: &mut Server, family: Family, key: &[u8]) -> Result<(Info, u64)> {
    let what = family.cmd("INFO");
    let info: redis::Value = server
        .query(redis::cmd(&what).arg(key))
        .map_err(|e| server_error(server, &what, &e))?;
    let pairs: Info = reply::pairs(info)
        .ok_or_else(|| Failure::new(format!("{what} on {}: bad reply", server.label)))?
        .into_iter()
        .map(|(k, v)| (k, reply::int(&v)))
        .collect();
    if family == Family::Cuckoo {
        let items = pairs
            .iter()
            .find(|(k, _)| k == "Number of items inserted")
            .and_then(|(_, v)| *v)
            .unwrap_or(0);
        return Ok((pairs, items.max(0) as u64));
    }
    let card: u64 = server
        .query(redis::cmd("BF.CARD").arg(key))
        .map_err(|e| server_error(server, "BF.CARD", &e))?;
    Ok((pairs, card))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip() {
        let b = b"\x00ab\xff".to_vec();
        assert_eq!(hex(&b), "006162ff");
        assert_eq!(unhex("006162ff").unwrap(), b);
        assert!(unhex("0").is_none());
        assert!(unhex("zz").is_none());
    }

    #[test]
    fn state_file_replay() {
        let dir = std::env::temp_dir().join(format!("fb-journal-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("m.state");
        let _ = fs::remove_file(&path);
        let identity = Identity {
            from: "redis://a/".into(),
            to: "redis://b/".into(),
            selection: "all".into(),
            rename: None,
        };
        let mut state = State::new(identity.clone());
        let mut journal = Journal {
            path: path.clone(),
            file: None,
            valid: 0,
        };
        let start = |k: &str| Event::Start {
            key: k.into(),
            dest: k.into(),
            key_text: k.into(),
            header: "00".into(),
        };
        for event in [
            start("6161"),
            Event::Loaded {
                next_iterator: 9,
                bytes_loaded: 8,
                chunks_loaded: 1,
            },
            Event::Done { key: "6161".into() },
            start("6262"),
            Event::Loaded {
                next_iterator: 17,
                bytes_loaded: 16,
                chunks_loaded: 1,
            },
        ] {
            state.apply(&event);
            journal.append(&state, &event, false).unwrap();
        }
        drop(journal);
        // A line cut short by a crash is ignored, then overwritten.
        let mut f = fs::OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"loaded\":{\"next_it").unwrap();
        drop(f);
        let (loaded, valid) = State::load(&path).unwrap().unwrap();
        assert_eq!(loaded.identity, identity);
        assert!(loaded.done.contains("6161"));
        let cur = loaded.current.clone().unwrap();
        assert_eq!((cur.key.as_str(), cur.next_iterator), ("6262", 17));
        let mut journal = Journal {
            path: path.clone(),
            file: None,
            valid,
        };
        let mut state = loaded;
        let done = Event::Done { key: "6262".into() };
        state.apply(&done);
        journal.append(&state, &done, true).unwrap();
        let (again, _) = State::load(&path).unwrap().unwrap();
        assert_eq!(again.done.len(), 2);
        assert!(again.current.is_none());
        journal.remove();
        assert!(!path.exists());
        // Not a state file.
        fs::write(&path, "hello\n").unwrap();
        assert!(State::load(&path).is_err());
        let _ = fs::remove_dir_all(&dir);
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
        assert_eq!(filters, vec![b"a".to_vec(), b"cf".to_vec(), b"w".to_vec()]);
        let notice = skipped_notice(&skipped).unwrap();
        assert!(
            notice.starts_with(
                "skipped 4 keys (migrate copies Bloom, windowed and Cuckoo filters only): "
            ),
            "{notice}"
        );
        let one = skipped_notice(&skipped[..1]).unwrap();
        assert!(one.starts_with("skipped 1 key (migrate copies"), "{one}");
        assert!(
            notice.contains("cms (a Count-Min sketch (CMSk-TYPE))"),
            "{notice}"
        );
        assert!(notice.contains("(the unfinished copy of another migration)"));
        assert!(notice.contains("s (a string)"));
        assert_eq!(skipped_notice(&[]), None);
        let many: Vec<KeyNote> = (0..12)
            .map(|i| (vec![b'k', i], "a string".into()))
            .collect();
        assert!(skipped_notice(&many).unwrap().ends_with("and 2 more"));
    }

    #[test]
    fn header_sizes() {
        // The header of the `sd` example of docs/commands.md: one 8-byte link.
        let mut h = Vec::new();
        h.extend_from_slice(&2u64.to_le_bytes());
        h.extend_from_slice(&1u32.to_le_bytes());
        h.extend_from_slice(&5u32.to_le_bytes());
        h.extend_from_slice(&2u32.to_le_bytes());
        h.extend_from_slice(&8u64.to_le_bytes());
        h.extend_from_slice(&[0u8; 45]);
        assert_eq!(h.len(), 73);
        assert_eq!(header_data_bytes(&h), Some(8));
        assert_eq!(header_data_bytes(&h[..72]), None);
    }
}
