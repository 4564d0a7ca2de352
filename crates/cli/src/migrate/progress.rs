//! What a running migration shows and records: the progress bars, the
//! journal of each step, and how it stops (Ctrl-C, SIGTERM, a lost
//! connection, or the test hook) with what is left and how to resume.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

use super::protocol::show;
use super::state::{unhex, Event, Journal, State};
use crate::fmt;
use crate::slot;
use crate::Failure;
use crate::Result;

/// Exits after this many data chunks were loaded in this run, leaving the
/// state file as an interruption would (to rehearse or test a resume).
pub const STOP_AFTER_ENV: &str = "FERROBLOOM_MIGRATE_STOP_AFTER_CHUNKS";

pub struct Bars {
    pub multi: MultiProgress,
    pub copy: ProgressBar,
}

impl Bars {
    pub fn new(total: u64) -> Bars {
        let multi = MultiProgress::new();
        let copy = multi.add(ProgressBar::new(total));
        copy.set_style(bar_style("cyan/blue"));
        copy.set_prefix("copy");
        copy.enable_steady_tick(Duration::from_millis(200));
        Bars { multi, copy }
    }

    /// Prints a line above the bars.
    pub fn println(&self, line: &str) {
        self.multi.suspend(|| println!("{line}"));
    }
}

pub fn bar_style(colors: &str) -> ProgressStyle {
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
pub fn catch_interruptions() {
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
pub enum Stop {
    /// The test hook ([`STOP_AFTER_ENV`]).
    Hook,
    /// SIGINT or SIGTERM.
    Signal,
    /// The connection to a server failed (reset, timeout): the message.
    Connection(String),
}

/// What the run has done, for the test hook and the summary.
pub struct Run {
    pub state: State,
    pub journal: Journal,
    pub force: bool,
    pub chunk_size: u64,
    /// Destination URL, for messages.
    pub to: String,
    pub stop_after: Option<u64>,
    pub chunks_this_run: u64,
}

impl Run {
    /// Applies an event and records it. Only `Start` and `Abandon` are
    /// synced to disk: they decide whether a destination key is ours to
    /// resume; a lost `Loaded` or `Done` only makes a resume redo a little.
    pub fn record(&mut self, event: Event) -> Result<()> {
        self.state.apply(&event);
        let sync = matches!(event, Event::Start { .. } | Event::Abandon { .. });
        self.journal.append(&self.state, &event, sync)
    }

    /// After a SCANDUMP chunk is loaded: the test hook stops as an
    /// interruption would.
    pub fn chunk_done(&mut self) -> Result<()> {
        self.chunks_this_run += 1;
        if self.stop_after.is_some_and(|n| self.chunks_this_run >= n) {
            return Err(self.stopped(Stop::Hook));
        }
        Ok(())
    }

    /// Between two LOADCHUNKs: stop if the user asked to.
    pub fn check_interrupt(&self) -> Result<()> {
        if INTERRUPTED.load(Ordering::SeqCst) {
            return Err(self.stopped(Stop::Signal));
        }
        Ok(())
    }

    /// The report of a stopped migration: what is done, what is left, how
    /// to resume and how to give up.
    pub fn stopped(&self, why: Stop) -> Failure {
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
