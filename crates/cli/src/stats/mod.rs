//! `ferrobloom stats`: every Bloom filter of a server, sorted by how full it
//! is, with a level per the server's fill thresholds. BF.STATS where the
//! server has it (FerroBloom); BF.INFO and BF.DEBUG otherwise (RedisBloom).

mod bloom;
mod cms;
mod cuckoo;
mod render;
mod tdigest;
mod topk;
mod window;

use std::io::{IsTerminal, Write};
use std::time::Duration;

use clap::Args;
use console::style;
use serde_json::json;

use crate::conn::Server;
use crate::fmt;
use crate::reply;
use crate::{Failure, Result};
use render::{to_json, to_text};

/// FerroBloom's default fill thresholds (bf.fill-warning, bf.fill-alert).
pub const DEFAULT_WARNING: f64 = 0.75;
pub const DEFAULT_ALERT: f64 = 0.9;

/// Show how full every Bloom filter of a server is, fullest first.
///
/// Finds the filters with SCAN … TYPE MBbloom-- and TYPE FBwindows (never
/// KEYS) and reads each with BF.STATS, or with BF.INFO and BF.DEBUG on
/// servers without BF.STATS (RedisBloom). Windowed filters are listed in a
/// table of their own, with their window's coverage; their level is
/// BF.STATS' fill_level. Levels use the server's bf.fill-warning / bf.fill-alert
/// (0.75 / 0.9 when the server has no such settings). Cuckoo filters
/// (TYPE MBbloomCF) are read with CF.STATS (level: its fill_level), or
/// CF.INFO on RedisBloom (level from the thresholds on items / slots).
/// Count-Min sketches (TYPE CMSk-TYPE) are listed in a table of their own
/// from CMS.STATS, or from CMS.INFO and their DUMP decoded locally
/// (RedisBloom): count, error bound, and the fullest cell against its cell
/// size's largest count (level from the thresholds on that).
/// Exit status 0 when all
/// are ok, 1 when some filter is at or over the warning threshold, 2 when
/// some filter is at or over the alert threshold.
#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  ferrobloom stats
  ferrobloom stats --url redis://10.0.0.5:6379/ --pattern 'urls:*'
  ferrobloom stats --watch 5
  ferrobloom stats --json | jq '.filters[] | select(.level != \"ok\")'

Exit status: 0 all ok, 1 warning, 2 alert, 3 error (so it can run from cron).")]
pub struct StatsArgs {
    /// Server URL (redis+cluster://host:port for a cluster).
    #[arg(
        long,
        env = "FERROBLOOM_URL",
        default_value = "redis://127.0.0.1:6379/",
        value_parser = parse_url
    )]
    pub url: String,
    /// Only keys matching this glob-style pattern (SCAN's MATCH).
    #[arg(long, default_value = "*")]
    pub pattern: String,
    /// Refresh every SECS seconds until interrupted (Ctrl-C).
    #[arg(
        long,
        value_name = "SECS",
        value_parser = parse_interval,
        allow_negative_numbers = true
    )]
    pub watch: Option<f64>,
    /// Print JSON (one document per refresh with --watch).
    #[arg(long)]
    pub json: bool,
    /// Warning threshold [default: the server's bf.fill-warning, else 0.75].
    #[arg(
        long,
        value_name = "RATIO",
        value_parser = parse_threshold,
        allow_negative_numbers = true
    )]
    pub warning: Option<f64>,
    /// Alert threshold [default: the server's bf.fill-alert, else 0.9].
    #[arg(
        long,
        value_name = "RATIO",
        value_parser = parse_threshold,
        allow_negative_numbers = true
    )]
    pub alert: Option<f64>,
}

/// The longest --watch interval: a day (any longer is surely a typo, and
/// a huge one would not fit a timer).
const MAX_INTERVAL: f64 = 86_400.0;

fn parse_interval(text: &str) -> std::result::Result<f64, String> {
    match text.parse::<f64>() {
        Ok(s) if (0.1..=MAX_INTERVAL).contains(&s) => Ok(s),
        _ => Err(format!(
            "expected a number of seconds from 0.1 to {MAX_INTERVAL}"
        )),
    }
}

fn parse_url(text: &str) -> std::result::Result<String, String> {
    if text.trim().is_empty() {
        return Err("empty server URL (--url or FERROBLOOM_URL)".into());
    }
    Ok(text.to_string())
}

fn parse_threshold(text: &str) -> std::result::Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 1.0 => Ok(v),
        _ => Err("expected a ratio in (0, 1]".into()),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Ok,
    Warning,
    Alert,
}

impl Level {
    fn of(fill: f64, t: &Thresholds) -> Level {
        if fill >= t.alert {
            Level::Alert
        } else if fill >= t.warning {
            Level::Warning
        } else {
            Level::Ok
        }
    }

    /// A windowed filter's `fill_level` (BF.STATS).
    fn parse(text: &str) -> Option<Level> {
        match text {
            "ok" => Some(Level::Ok),
            "warning" => Some(Level::Warning),
            "alert" => Some(Level::Alert),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Level::Ok => "ok",
            Level::Warning => "warning",
            Level::Alert => "alert",
        }
    }

    fn styled(self) -> String {
        match self {
            Level::Ok => style("ok").green().to_string(),
            Level::Warning => style("WARNING").yellow().bold().to_string(),
            Level::Alert => style("ALERT").red().bold().to_string(),
        }
    }

    pub fn exit_code(self) -> u8 {
        match self {
            Level::Ok => 0,
            Level::Warning => 1,
            Level::Alert => 2,
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Thresholds {
    pub warning: f64,
    pub alert: f64,
    /// "server", "default" or "command line".
    pub source: &'static str,
}

/// Where the numbers of a row come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// BF.STATS: the FPR from the bits actually set.
    Stats,
    /// BF.INFO + BF.DEBUG: the FPR estimated from the item counts.
    InfoDebug,
}

/// One filter of the report: what every type has, then its own detail.
#[derive(Clone, Debug)]
pub struct Row {
    pub key: Vec<u8>,
    pub items: u64,
    pub capacity: u64,
    pub fill: f64,
    pub fpr: f64,
    pub source: Source,
    /// BF.INFO Size.
    pub size: u64,
    /// Bytes of bit arrays.
    pub bytes: u64,
    pub level: Level,
    pub detail: Detail,
}

/// What a row says of its own type.
#[derive(Clone, Debug)]
pub enum Detail {
    Bloom(bloom::Bloom),
    /// Its capacity is its slots, its fill its slots' load (CF.STATS), or
    /// items over slots (CF.INFO).
    Cuckoo(cuckoo::Cuckoo),
    Window(window::Window),
    /// Its items are N, its capacity a cell's largest count, its fill the
    /// fullest cell over that.
    Cms(cms::Cms),
    /// Its items are the listed items, its capacity k.
    TopK(topk::TopKDetail),
    /// Its items are its observations, its capacity its nodes.
    TDigest(tdigest::TDigestDetail),
}

impl Detail {
    /// Whether the row is a sketch or a digest (listed apart from the
    /// filters' table).
    fn is_sketch(&self) -> bool {
        matches!(self, Detail::Cms(_) | Detail::TopK(_) | Detail::TDigest(_))
    }
}

/// One type of filter `stats` lists: the keys of its Redis type, each
/// read into a [`Row`]. A new type implements this and joins [`KINDS`].
trait Kind {
    /// The type SCAN ... TYPE finds its keys by.
    fn type_name(&self) -> &'static str;
    /// Reads one filter.
    fn read(&self, r: &mut Reader<'_>, key: &[u8]) -> redis::RedisResult<Row>;
}

/// What reading a filter needs besides its key.
struct Reader<'a> {
    server: &'a mut Server,
    thresholds: Thresholds,
    /// Set once the server is seen to lack BF.STATS or CF.STATS
    /// (RedisBloom): the rows are then estimated from the item counts, and
    /// the later reads do not ask again.
    fallback: bool,
    /// Set once the server is seen to lack CMS.STATS (RedisBloom, or a
    /// FerroBloom from before it): sketches are then read from CMS.INFO and
    /// DUMP.
    cms_fallback: bool,
}

/// Every type `stats` lists, in the order it reads them.
const KINDS: [&dyn Kind; 6] = [
    &bloom::BloomKind,
    &window::WindowKind,
    &cuckoo::CuckooKind,
    &cms::CmsKind,
    &topk::TopKKind,
    &tdigest::TDigestKind,
];

pub struct Report {
    pub server: String,
    /// Master nodes, when the server is a cluster.
    pub cluster_nodes: Option<usize>,
    pub thresholds: Thresholds,
    pub rows: Vec<Row>,
    /// Whether the server lacks BF.STATS (RedisBloom).
    pub fallback: bool,
}

impl Report {
    pub fn worst(&self) -> Level {
        self.rows.iter().map(|r| r.level).max().unwrap_or(Level::Ok)
    }

    fn count(&self, level: Level) -> usize {
        self.rows.iter().filter(|r| r.level == level).count()
    }

    fn windows(&self) -> usize {
        self.rows
            .iter()
            .filter(|r| matches!(r.detail, Detail::Window(_)))
            .count()
    }
}

/// Worst level first, then fullest first, then by key. For plain filters
/// alone this is fullest first (their level grows with their fill).
fn order(a: &Row, b: &Row) -> std::cmp::Ordering {
    b.level
        .cmp(&a.level)
        .then_with(|| b.fill.total_cmp(&a.fill))
        .then_with(|| a.key.cmp(&b.key))
}

pub fn run(args: &StatsArgs) -> Result<u8> {
    let Some(interval) = args.watch else {
        let mut server = Server::connect(&args.url)?;
        let report = collect(&mut server, args)?;
        print_report(&report, args.json, false, None);
        return Ok(report.worst().exit_code());
    };
    let tty = std::io::stdout().is_terminal();
    let mut server: Option<Server> = None;
    loop {
        let outcome = (|| -> Result<Report> {
            if server.is_none() {
                server = Some(Server::connect(&args.url)?);
            }
            collect(server.as_mut().expect("connected"), args)
        })();
        if tty && !args.json {
            // Clear the screen and go home.
            print!("\x1b[2J\x1b[H");
        }
        match outcome {
            // Wrong arguments stay wrong: stop.
            Err(f) if f.code == crate::EXIT_USAGE => return Err(f),
            Ok(report) => {
                // On a terminal, the report fits the screen below the
                // title line, with a line left for the cursor.
                let screen = (tty && !args.json)
                    .then(|| console::Term::stdout().size_checked())
                    .flatten()
                    .map(|(rows, cols)| Screen {
                        lines: usize::from(rows).saturating_sub(2),
                        columns: usize::from(cols),
                    });
                if !args.json {
                    println!(
                        "{}",
                        style(format!(
                            "ferrobloom stats · every {}s · {} · Ctrl-C to stop",
                            fmt::g(interval, 6),
                            fmt::utc_time()
                        ))
                        .dim()
                    );
                }
                print_report(&report, args.json, true, screen);
            }
            Err(f) => {
                // Reconnect at the next refresh.
                server = None;
                if args.json {
                    println!("{}", json!({"error": f.message}));
                } else {
                    println!("{} {}", fmt::utc_time(), style(&f.message).red());
                }
            }
        }
        let _ = std::io::stdout().flush();
        std::thread::sleep(Duration::from_secs_f64(interval));
    }
}

fn thresholds(server: &Server, args: &StatsArgs) -> Result<Thresholds> {
    let read = |name: &str| -> Result<Option<f64>> {
        Ok(server
            .config_get(name)?
            .and_then(|v| v.trim().parse::<f64>().ok()))
    };
    let (warning, alert) = (read("bf.fill-warning")?, read("bf.fill-alert")?);
    let origin = |name: &str| match (warning, alert) {
        (Some(_), Some(_)) => format!("the server's {name}"),
        _ => format!("the default: the server has no {name}"),
    };
    let mut t = match (warning, alert) {
        (Some(warning), Some(alert)) => Thresholds {
            warning,
            alert,
            source: "server",
        },
        _ => Thresholds {
            warning: DEFAULT_WARNING,
            alert: DEFAULT_ALERT,
            source: "default",
        },
    };
    if args.warning.is_some() || args.alert.is_some() {
        t.warning = args.warning.unwrap_or(t.warning);
        t.alert = args.alert.unwrap_or(t.alert);
        t.source = "command line";
    }
    if t.warning > t.alert {
        let message = match (args.warning, args.alert) {
            (Some(w), Some(a)) => format!("--warning {w} is above --alert {a}"),
            (Some(w), None) => format!(
                "--warning {w} is above the alert threshold {} ({}); give a lower \
                 --warning, or --alert too",
                t.alert,
                origin("bf.fill-alert")
            ),
            (None, Some(a)) => format!(
                "--alert {a} is below the warning threshold {} ({}); give a higher \
                 --alert, or --warning too",
                t.warning,
                origin("bf.fill-warning")
            ),
            (None, None) => {
                return Err(Failure::new(format!(
                    "the server's bf.fill-warning ({}) is above its bf.fill-alert ({})",
                    t.warning, t.alert
                )))
            }
        };
        return Err(Failure {
            message,
            code: crate::EXIT_USAGE,
        });
    }
    Ok(t)
}

/// A row from the type's STATS command, or, once the server is seen not to
/// have it, from `estimate` (its INFO, and the item counts).
fn stats_or_estimate(
    r: &mut Reader<'_>,
    key: &[u8],
    stats: fn(&mut Server, &[u8]) -> redis::RedisResult<Row>,
    estimate: impl FnOnce(&mut Server, &[u8]) -> redis::RedisResult<Row>,
) -> redis::RedisResult<Row> {
    if r.fallback {
        return estimate(r.server, key);
    }
    match stats(r.server, key) {
        Err(e) if reply::is_unknown_command(&e) => {
            r.fallback = true;
            estimate(r.server, key)
        }
        other => other,
    }
}

/// Reads every matching filter of the server.
pub fn collect(server: &mut Server, args: &StatsArgs) -> Result<Report> {
    server.require_bloom_module()?;
    let thresholds = thresholds(server, args)?;
    let mut found = Vec::with_capacity(KINDS.len());
    for kind in KINDS {
        found.push(server.scan_type(&args.pattern, kind.type_name())?);
    }
    let mut rows = Vec::with_capacity(found.iter().map(Vec::len).sum());
    let mut reader = Reader {
        server,
        thresholds,
        fallback: false,
        cms_fallback: false,
    };
    for (kind, keys) in KINDS.into_iter().zip(found) {
        for key in keys {
            match kind.read(&mut reader, &key) {
                Ok(row) => rows.push(row),
                // Deleted, or replaced by another type, since the scan.
                Err(e) if reply::is_not_found(&e) || reply::is_wrong_type(&e) => {}
                Err(e) => {
                    return Err(Failure::new(format!(
                        "{}: {}",
                        fmt::key(&key),
                        reply::describe_error(&e)
                    )))
                }
            }
        }
    }
    rows.sort_by(order);
    let Reader {
        server,
        thresholds,
        fallback,
        ..
    } = reader;
    Ok(Report {
        server: server.label.clone(),
        cluster_nodes: server.cluster.then(|| server.node_count()),
        thresholds,
        rows,
        fallback,
    })
}

/// The error of a key that went away between two reads (left out of the
/// report, as a filter deleted since the scan: `is_not_found`).
fn gone() -> redis::RedisError {
    redis::RedisError::from((
        redis::ErrorKind::ResponseError,
        "deleted while read",
        "not found".to_string(),
    ))
}

fn bad_reply(what: &str) -> redis::RedisError {
    redis::RedisError::from((
        redis::ErrorKind::TypeError,
        "unexpected reply",
        what.to_string(),
    ))
}

/// The fields of a reply (BF.STATS, CF.INFO ...), each read as the number
/// or text it must be, or an "unexpected reply" error naming it.
struct Fields(Vec<(String, redis::Value)>);

impl Fields {
    /// The fields of `command`'s reply.
    fn of(reply: redis::Value, command: &str) -> redis::RedisResult<Fields> {
        reply::pairs(reply)
            .map(Fields)
            .ok_or_else(|| bad_reply(command))
    }

    fn get(&self, name: &str) -> Option<&redis::Value> {
        reply::field(&self.0, name)
    }

    fn uint(&self, name: &str) -> redis::RedisResult<u64> {
        self.get(name)
            .and_then(reply::uint)
            .ok_or_else(|| bad_reply(name))
    }

    fn float(&self, name: &str) -> redis::RedisResult<f64> {
        self.get(name)
            .and_then(reply::float)
            .ok_or_else(|| bad_reply(name))
    }

    fn text(&self, name: &str) -> redis::RedisResult<String> {
        self.get(name)
            .and_then(reply::text)
            .ok_or_else(|| bad_reply(name))
    }

    /// A `fill_level` (BF.STATS of a window, CF.STATS).
    fn level(&self) -> redis::RedisResult<Level> {
        Level::parse(&self.text("fill_level")?).ok_or_else(|| bad_reply("fill_level"))
    }
}

/// The part of a terminal a report may use.
#[derive(Clone, Copy, Debug)]
pub struct Screen {
    pub lines: usize,
    pub columns: usize,
}

fn print_report(report: &Report, as_json: bool, compact: bool, screen: Option<Screen>) {
    if as_json {
        let doc = to_json(report);
        if compact {
            println!("{doc}");
        } else {
            println!("{}", serde_json::to_string_pretty(&doc).expect("JSON"));
        }
    } else {
        print!("{}", to_text(report, screen));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels() {
        let t = Thresholds {
            warning: 0.75,
            alert: 0.9,
            source: "default",
        };
        assert_eq!(Level::of(0.5, &t), Level::Ok);
        assert_eq!(Level::of(0.75, &t), Level::Warning);
        assert_eq!(Level::of(0.9, &t), Level::Alert);
        assert_eq!(Level::of(1.2, &t), Level::Alert);
    }
}
