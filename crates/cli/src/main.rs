//! `ferrobloom`: plan Bloom filters (and Cuckoo filters and Count-Min
//! sketches) offline, watch how full the filters and sketches of a server
//! are, and copy them between servers (FerroBloom, RedisBloom, standalone or
//! cluster) with BF.SCANDUMP / BF.LOADCHUNK, or DUMP / RESTORE.

mod conn;
mod fmt;
mod headroom;
mod migrate;
mod plan;
mod reply;
mod slot;
mod stats;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Exit status of a command that failed (connection, server error,
/// verification mismatch, refused overwrite).
pub const EXIT_ERROR: u8 = 3;
/// Exit status of a `migrate` stopped on purpose by
/// FERROBLOOM_MIGRATE_STOP_AFTER_CHUNKS (to rehearse an interruption).
pub const EXIT_STOPPED: u8 = 4;
/// Exit status for invalid command-line arguments.
pub const EXIT_USAGE: u8 = 64;
/// Exit status of a `migrate` stopped by SIGINT or SIGTERM, as shells
/// report a Ctrl-C.
pub const EXIT_INTERRUPTED: u8 = 130;

/// Every exit status the tool returns (a test holds this list, docs/cli.md
/// and the code to each other).
const AFTER_HELP: &str = "\
Exit status: 0 success; `stats`: 1 when a filter is at or over the warning
threshold, 2 when one is at or over the alert threshold; 3 on an error
(connection, a server that does not answer within --timeout or does not
speak the Redis protocol, a server without a Bloom filter module, server
reply, verification mismatch, refused overwrite); 4 when `migrate` was
stopped on purpose by FERROBLOOM_MIGRATE_STOP_AFTER_CHUNKS; 64 for invalid
arguments (a malformed server URL too); 130 when `migrate` was interrupted
by Ctrl-C or SIGTERM (run the same command again to resume).

URLs: redis://[[user]:password@]host[:port][/db] for one server;
redis+cluster://[[user]:password@]host:port[,host:port...] for a cluster
(a redis:// URL that reaches a cluster node is detected and used as a
cluster too). Documentation: docs/cli.md.";

#[derive(Parser, Debug)]
#[command(
    name = "ferrobloom",
    version,
    about = "Plan, watch and migrate Bloom filters on FerroBloom and RedisBloom servers",
    after_help = AFTER_HELP
)]
struct Cli {
    /// Time limit, in seconds, for connecting to a server and for each wait
    /// on it (0.1 to 86400) [default: 10; migrate: 60].
    #[arg(
        long,
        global = true,
        env = "FERROBLOOM_TIMEOUT",
        value_name = "SECONDS",
        value_parser = parse_timeout,
        allow_negative_numbers = true
    )]
    timeout: Option<f64>,
    #[command(subcommand)]
    command: Command,
}

/// The longest --timeout: a day.
const MAX_TIMEOUT: f64 = 86_400.0;

fn parse_timeout(text: &str) -> std::result::Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(s) if (0.1..=MAX_TIMEOUT).contains(&s) => Ok(s),
        _ => Err(format!(
            "expected a number of seconds from 0.1 to {MAX_TIMEOUT}"
        )),
    }
}

#[derive(Subcommand, Debug)]
enum Command {
    Plan(plan::PlanArgs),
    Stats(stats::StatsArgs),
    Migrate(migrate::MigrateArgs),
}

/// A failure reported to the user: the message, and the exit status.
#[derive(Debug)]
pub struct Failure {
    pub message: String,
    pub code: u8,
}

impl Failure {
    pub fn new(message: impl Into<String>) -> Failure {
        Failure {
            message: message.into(),
            code: EXIT_ERROR,
        }
    }
}

impl From<redis::RedisError> for Failure {
    fn from(e: redis::RedisError) -> Failure {
        Failure::new(reply::describe_error(&e))
    }
}

pub type Result<T> = std::result::Result<T, Failure>;

/// A closed pipe (`ferrobloom stats | head -1`) ends the program quietly,
/// as it does any Unix filter, instead of a write error or a panic.
fn die_quietly_on_closed_pipes() {
    // SAFETY: called first in main, before any thread exists; restoring
    // the default disposition of SIGPIPE has no other effect on the
    // process' memory.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> ExitCode {
    die_quietly_on_closed_pipes();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_USAGE } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    conn::set_timeout(match (cli.timeout, &cli.command) {
        (Some(secs), _) => std::time::Duration::from_secs_f64(secs),
        (None, Command::Migrate(_)) => conn::DEFAULT_MIGRATE_TIMEOUT,
        (None, _) => conn::DEFAULT_TIMEOUT,
    });
    let outcome = match cli.command {
        Command::Plan(args) => plan::run(&args),
        Command::Stats(args) => stats::run(&args),
        Command::Migrate(args) => migrate::run(&args),
    };
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(f) => {
            eprintln!("ferrobloom: {}", f.message);
            ExitCode::from(f.code)
        }
    }
}
