//! `ferrobloom stats`: every Bloom filter of a server, sorted by how full it
//! is, with a level per the server's fill thresholds. BF.STATS where the
//! server has it (FerroBloom); BF.INFO and BF.DEBUG otherwise (RedisBloom).

use std::io::{IsTerminal, Write};
use std::time::Duration;

use clap::Args;
use console::{measure_text_width, style};
use ferrobloom_core::bloom::plan::{chain_fpr, expected_link_fpr};
use serde_json::{json, Value as Json};

use crate::conn::{Server, CUCKOO_TYPE, WINDOW_TYPE};
use crate::fmt::{self, Column};
use crate::reply;
use crate::{Failure, Result};

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
    pub links: u64,
    pub policy: Option<String>,
    pub expansion: Option<u64>,
    pub level: Level,
    /// A windowed filter's window (BF.STATS); None for a plain filter.
    pub window: Option<Window>,
    /// A Cuckoo filter's bucket size; None for a Bloom filter. Its
    /// capacity is its slots, its links its sub-filters, its fill its
    /// slots' load (CF.STATS), or items over slots (CF.INFO).
    pub cuckoo_bucket_size: Option<u64>,
}

/// What BF.STATS says of a windowed filter's window. Its level is BF.STATS'
/// `fill_level`, not the plain filters' thresholds: `warning` when a
/// generation received more than its share of the capacity, `alert` when
/// the estimated false positive rate is above the error rate asked for.
#[derive(Clone, Debug, PartialEq)]
pub struct Window {
    /// `30d`, `12h`, or a number of items.
    pub span: String,
    pub generations: u64,
    pub generation_span: String,
    pub epoch: u64,
    /// How much of its window the filter has seen, 0 to 1.
    pub coverage: f64,
    pub target_error: f64,
    pub rotations: u64,
    pub forgotten: u64,
    pub forgotten_late_by: String,
    pub pending_clear_bytes: u64,
    pub per_generation: Vec<Generation>,
}

/// One live generation of a window, oldest first.
#[derive(Clone, Debug, PartialEq)]
pub struct Generation {
    pub epoch: u64,
    /// None for an item window.
    pub age_ms: Option<u64>,
    pub items: u64,
    pub capacity: u64,
    pub fill_ratio: f64,
    pub set_fraction: f64,
    pub estimated_fpr: f64,
}

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
        self.rows.iter().filter(|r| r.window.is_some()).count()
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

/// Reads every matching filter of the server.
pub fn collect(server: &mut Server, args: &StatsArgs) -> Result<Report> {
    server.require_bloom_module()?;
    let thresholds = thresholds(server, args)?;
    let keys = server.scan_filters(&args.pattern)?;
    let windows = server.scan_type(&args.pattern, WINDOW_TYPE)?;
    let cuckoos = server.scan_type(&args.pattern, CUCKOO_TYPE)?;
    let mut rows = Vec::with_capacity(keys.len() + windows.len() + cuckoos.len());
    let mut fallback = false;
    for key in keys {
        let row = if fallback {
            from_info_debug(server, &key)
        } else {
            match from_stats(server, &key) {
                Err(e) if reply::is_unknown_command(&e) => {
                    fallback = true;
                    from_info_debug(server, &key)
                }
                other => other,
            }
        };
        match row {
            Ok(mut row) => {
                row.level = Level::of(row.fill, &thresholds);
                rows.push(row);
            }
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
    for key in windows {
        match from_window_stats(server, &key) {
            Ok(row) => rows.push(row),
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
    let mut cuckoo_fallback = fallback;
    for key in cuckoos {
        let row = if cuckoo_fallback {
            from_cf_info(server, &key, &thresholds)
        } else {
            match from_cf_stats(server, &key) {
                Err(e) if reply::is_unknown_command(&e) => {
                    cuckoo_fallback = true;
                    fallback = true;
                    from_cf_info(server, &key, &thresholds)
                }
                other => other,
            }
        };
        match row {
            Ok(row) => rows.push(row),
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
    rows.sort_by(order);
    Ok(Report {
        server: server.label.clone(),
        cluster_nodes: server.cluster.then(|| server.node_count()),
        thresholds,
        rows,
        fallback,
    })
}

fn bad_reply(what: &str) -> redis::RedisError {
    redis::RedisError::from((
        redis::ErrorKind::TypeError,
        "unexpected reply",
        what.to_string(),
    ))
}

fn from_stats(server: &mut Server, key: &[u8]) -> redis::RedisResult<Row> {
    let reply: redis::Value = server.query(redis::cmd("BF.STATS").arg(key))?;
    let p = reply::pairs(reply).ok_or_else(|| bad_reply("BF.STATS"))?;
    let u = |name: &str| {
        reply::field(&p, name)
            .and_then(reply::uint)
            .ok_or_else(|| bad_reply(name))
    };
    let f = |name: &str| {
        reply::field(&p, name)
            .and_then(reply::float)
            .ok_or_else(|| bad_reply(name))
    };
    Ok(Row {
        key: key.to_vec(),
        items: u("items")?,
        capacity: u("capacity")?,
        fill: f("fill_ratio")?,
        fpr: f("estimated_fpr")?,
        source: Source::Stats,
        size: u("size")?,
        bytes: u("bytes")?,
        links: u("links")?,
        policy: reply::field(&p, "policy").and_then(reply::text),
        expansion: reply::field(&p, "expansion").and_then(reply::uint),
        level: Level::Ok,
        window: None,
        cuckoo_bucket_size: None,
    })
}

/// A Cuckoo filter, from CF.STATS: its fill is the newest sub-filter's
/// load (where inserts go), its level CF.STATS' `fill_level` (warning past
/// bf.fill-warning; alert past bf.fill-alert when it cannot grow).
fn from_cf_stats(server: &mut Server, key: &[u8]) -> redis::RedisResult<Row> {
    let reply: redis::Value = server.query(redis::cmd("CF.STATS").arg(key))?;
    let p = reply::pairs(reply).ok_or_else(|| bad_reply("CF.STATS"))?;
    let u = |name: &str| {
        reply::field(&p, name)
            .and_then(reply::uint)
            .ok_or_else(|| bad_reply(name))
    };
    let f = |name: &str| {
        reply::field(&p, name)
            .and_then(reply::float)
            .ok_or_else(|| bad_reply(name))
    };
    let level = reply::field(&p, "fill_level")
        .and_then(reply::text)
        .and_then(|t| Level::parse(&t))
        .ok_or_else(|| bad_reply("fill_level"))?;
    Ok(Row {
        key: key.to_vec(),
        items: u("items")?,
        capacity: u("slots")?,
        fill: f("newest_load_factor")?,
        fpr: f("estimated_fpr")?,
        source: Source::Stats,
        size: u("size")?,
        bytes: u("bytes")?,
        links: u("sub_filters")?,
        policy: None,
        expansion: Some(u("expansion")?),
        level,
        window: None,
        cuckoo_bucket_size: Some(u("bucket_size")?),
    })
}

/// A Cuckoo filter from CF.INFO alone (RedisBloom): slots from the bucket
/// counts `N0 × E^i`, its fill the item counter over the slots, its false
/// positive rate estimated with that load in every sub-filter, its level
/// from the thresholds.
fn from_cf_info(server: &mut Server, key: &[u8], t: &Thresholds) -> redis::RedisResult<Row> {
    use ferrobloom_core::cuckoo::sizing::sub_filter_buckets;
    use ferrobloom_core::cuckoo::stats::sub_filter_fpr;
    let info: redis::Value = server.query(redis::cmd("CF.INFO").arg(key))?;
    let p = reply::pairs(info).ok_or_else(|| bad_reply("CF.INFO"))?;
    let u = |name: &str| {
        reply::field(&p, name)
            .and_then(reply::uint)
            .ok_or_else(|| bad_reply(name))
    };
    let (base, count, items) = (
        u("Number of buckets")?,
        u("Number of filters")?,
        u("Number of items inserted")?,
    );
    let bs = u("Bucket size")?;
    let expansion = u("Expansion rate")?;
    let buckets: u64 = (0..count.min(u64::from(u16::MAX)) as u32)
        .map(|i| {
            sub_filter_buckets(base, u16::try_from(expansion).unwrap_or(0), i)
                .unwrap_or(if i == 0 { base } else { 0 })
        })
        .fold(0u64, u64::saturating_add);
    let slots = buckets.saturating_mul(bs);
    let fill = ferrobloom_core::bloom::stats::ratio(items, slots);
    let miss = 1.0 - sub_filter_fpr(fill, u8::try_from(bs).unwrap_or(u8::MAX));
    let fpr = 1.0 - miss.powi(i32::try_from(count).unwrap_or(i32::MAX));
    Ok(Row {
        key: key.to_vec(),
        items,
        capacity: slots,
        fill,
        fpr,
        source: Source::InfoDebug,
        size: u("Size")?,
        bytes: slots,
        links: count,
        policy: None,
        expansion: Some(expansion),
        level: Level::of(fill, t),
        window: None,
        cuckoo_bucket_size: Some(bs),
    })
}

/// A windowed filter, from BF.STATS: its level is the reply's
/// `fill_level`.
fn from_window_stats(server: &mut Server, key: &[u8]) -> redis::RedisResult<Row> {
    let reply: redis::Value = server.query(redis::cmd("BF.STATS").arg(key))?;
    let p = reply::pairs(reply).ok_or_else(|| bad_reply("BF.STATS"))?;
    let u = |p: &[(String, redis::Value)], name: &str| {
        reply::field(p, name)
            .and_then(reply::uint)
            .ok_or_else(|| bad_reply(name))
    };
    let f = |p: &[(String, redis::Value)], name: &str| {
        reply::field(p, name)
            .and_then(reply::float)
            .ok_or_else(|| bad_reply(name))
    };
    let t = |p: &[(String, redis::Value)], name: &str| {
        reply::field(p, name)
            .and_then(reply::text)
            .ok_or_else(|| bad_reply(name))
    };
    let level = Level::parse(&t(&p, "fill_level")?).ok_or_else(|| bad_reply("fill_level"))?;
    let per_generation = match reply::field(&p, "per_generation") {
        Some(redis::Value::Array(gens)) => gens
            .iter()
            .map(|g| {
                let g = reply::pairs(g.clone()).ok_or_else(|| bad_reply("per_generation"))?;
                Ok(Generation {
                    epoch: u(&g, "epoch")?,
                    age_ms: reply::field(&g, "age_ms").and_then(reply::uint),
                    items: u(&g, "items")?,
                    capacity: u(&g, "capacity")?,
                    fill_ratio: f(&g, "fill_ratio")?,
                    set_fraction: f(&g, "set_fraction")?,
                    estimated_fpr: f(&g, "estimated_fpr")?,
                })
            })
            .collect::<redis::RedisResult<Vec<_>>>()?,
        _ => return Err(bad_reply("per_generation")),
    };
    let bytes = u(&p, "bytes")?;
    Ok(Row {
        key: key.to_vec(),
        items: u(&p, "items")?,
        capacity: u(&p, "capacity")?,
        fill: f(&p, "fill_ratio")?,
        fpr: f(&p, "estimated_fpr")?,
        source: Source::Stats,
        // A window's BF.INFO Size is its bit arrays.
        size: bytes,
        bytes,
        links: per_generation.len() as u64,
        policy: reply::field(&p, "policy").and_then(reply::text),
        expansion: None,
        level,
        window: Some(Window {
            span: t(&p, "window")?,
            generations: u(&p, "generations")?,
            generation_span: t(&p, "generation_span")?,
            epoch: u(&p, "epoch")?,
            coverage: f(&p, "coverage")?,
            target_error: f(&p, "target_error")?,
            rotations: u(&p, "rotations")?,
            forgotten: u(&p, "forgotten")?,
            forgotten_late_by: t(&p, "forgotten_late_by")?,
            pending_clear_bytes: u(&p, "pending_clear_bytes")?,
            per_generation,
        }),
        cuckoo_bucket_size: None,
    })
}

/// One line of BF.DEBUG after the first: `bytes:B bits:b hashes:k
/// hashwidth:w capacity:C size:n ratio:r`.
#[derive(Debug, PartialEq)]
pub struct DebugLink {
    pub bytes: u64,
    pub bits: u64,
    pub hashes: u32,
    pub capacity: u64,
    pub items: u64,
}

pub fn parse_debug_link(line: &str) -> Option<DebugLink> {
    let get = |name: &str| -> Option<u64> {
        line.split_whitespace()
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix(':'))?
            .parse()
            .ok()
    };
    Some(DebugLink {
        bytes: get("bytes")?,
        bits: get("bits")?,
        hashes: u32::try_from(get("hashes")?).ok()?,
        capacity: get("capacity")?,
        items: get("size")?,
    })
}

/// The false positive rate the links' sizes and item counts imply:
/// `1 - prod(1 - (1 - e^(-k n / m))^k)`.
pub fn fpr_from_counts(links: &[DebugLink]) -> f64 {
    chain_fpr(
        links
            .iter()
            .map(|l| expected_link_fpr(l.hashes, l.bits, l.items)),
    )
}

fn from_info_debug(server: &mut Server, key: &[u8]) -> redis::RedisResult<Row> {
    let info: redis::Value = server.query(redis::cmd("BF.INFO").arg(key))?;
    let p = reply::pairs(info).ok_or_else(|| bad_reply("BF.INFO"))?;
    let u = |name: &str| {
        reply::field(&p, name)
            .and_then(reply::uint)
            .ok_or_else(|| bad_reply(name))
    };
    let capacity = u("Capacity")?;
    let items = u("Number of items inserted")?;
    let size = u("Size")?;
    let links_count = u("Number of filters")?;
    let expansion = reply::field(&p, "Expansion rate").and_then(reply::uint);
    let debug: Vec<String> = server.query(redis::cmd("BF.DEBUG").arg(key))?;
    let links: Vec<DebugLink> = debug
        .iter()
        .skip(1)
        .filter_map(|l| parse_debug_link(l))
        .collect();
    if links.len() as u64 != links_count {
        return Err(bad_reply("BF.DEBUG"));
    }
    Ok(Row {
        key: key.to_vec(),
        items,
        capacity,
        fill: ferrobloom_core::bloom::stats::ratio(items, capacity),
        fpr: fpr_from_counts(&links),
        source: Source::InfoDebug,
        size,
        bytes: links.iter().map(|l| l.bytes).sum(),
        links: links_count,
        policy: None,
        expansion,
        level: Level::Ok,
        window: None,
        cuckoo_bucket_size: None,
    })
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

/// A key in JSON: the key itself when it is UTF-8 (JSON escapes what it
/// must), else its text form with `\xHH` for the bytes that are not; then
/// `key_hex`, the key's bytes in hexadecimal for keys that are not UTF-8
/// (null for the others), so that any key can be named exactly.
pub fn json_key(key: &[u8]) -> (String, Option<String>) {
    match std::str::from_utf8(key) {
        Ok(text) => (text.to_string(), None),
        Err(_) => (
            fmt::key(key),
            Some(key.iter().map(|b| format!("{b:02x}")).collect()),
        ),
    }
}

pub fn to_json(report: &Report) -> Json {
    let filters: Vec<Json> = report
        .rows
        .iter()
        .map(|r| {
            let (key, key_hex) = json_key(&r.key);
            if let Some(w) = &r.window {
                return window_json(r, w, key, key_hex);
            }
            if let Some(bs) = r.cuckoo_bucket_size {
                return json!({
                    "key": key,
                    "key_hex": key_hex,
                    "type": "cuckoo",
                    "items": r.items,
                    "slots": r.capacity,
                    "fill_ratio": r.fill,
                    "estimated_fpr": r.fpr,
                    "fpr_from": match r.source {
                        Source::Stats => "occupied slots (CF.STATS)",
                        Source::InfoDebug => "item counts (CF.INFO)",
                    },
                    "size": r.size,
                    "bytes": r.bytes,
                    "sub_filters": r.links,
                    "bucket_size": bs,
                    "expansion": r.expansion,
                    "level": r.level.name(),
                });
            }
            json!({
                "type": "bloom",
                "key": key,
                "key_hex": key_hex,
                "items": r.items,
                "capacity": r.capacity,
                "fill_ratio": r.fill,
                "estimated_fpr": r.fpr,
                "fpr_from": match r.source {
                    Source::Stats => "set bits (BF.STATS)",
                    Source::InfoDebug => "item counts (BF.INFO, BF.DEBUG)",
                },
                "size": r.size,
                "bytes": r.bytes,
                "links": r.links,
                "policy": r.policy,
                "expansion": r.expansion,
                "level": r.level.name(),
            })
        })
        .collect();
    json!({
        "server": report.server,
        "cluster_nodes": report.cluster_nodes,
        "source": if report.fallback { "BF.INFO+BF.DEBUG" } else { "BF.STATS" },
        "thresholds": {
            "warning": report.thresholds.warning,
            "alert": report.thresholds.alert,
            "from": report.thresholds.source,
        },
        "filters": filters,
        "summary": {
            "filters": report.rows.len(),
            "ok": report.count(Level::Ok),
            "warning": report.count(Level::Warning),
            "alert": report.count(Level::Alert),
        },
        "exit_code": report.worst().exit_code(),
    })
}

/// A windowed filter in JSON: the fields of a plain filter's entry (with
/// `links` and `expansion` null), and its `window`.
fn window_json(r: &Row, w: &Window, key: String, key_hex: Option<String>) -> Json {
    let generations: Vec<Json> = w
        .per_generation
        .iter()
        .map(|g| {
            json!({
                "epoch": g.epoch,
                "age_ms": g.age_ms,
                "items": g.items,
                "capacity": g.capacity,
                "fill_ratio": g.fill_ratio,
                "set_fraction": g.set_fraction,
                "estimated_fpr": g.estimated_fpr,
            })
        })
        .collect();
    json!({
        "type": "window",
        "key": key,
        "key_hex": key_hex,
        "items": r.items,
        "capacity": r.capacity,
        "fill_ratio": r.fill,
        "estimated_fpr": r.fpr,
        "fpr_from": "set bits (BF.STATS)",
        "size": r.size,
        "bytes": r.bytes,
        "links": null,
        "policy": r.policy,
        "expansion": null,
        "level": r.level.name(),
        "window": {
            "window": w.span,
            "generations": w.generations,
            "generation_span": w.generation_span,
            "epoch": w.epoch,
            "coverage": w.coverage,
            "target_error": w.target_error,
            "rotations": w.rotations,
            "forgotten": w.forgotten,
            "forgotten_late_by": w.forgotten_late_by,
            "pending_clear_bytes": w.pending_clear_bytes,
            "per_generation": generations,
        },
    })
}

/// The report as text: all of it, or on a screen, what fits it: the
/// fullest filters, then a line counting those left out.
pub fn to_text(report: &Report, screen: Option<Screen>) -> String {
    let all = report.rows.len();
    let Some(screen) = screen else {
        return render(report, all);
    };
    let mut shown = all;
    loop {
        let text = render(report, shown);
        let used = screen_lines(&text, screen.columns);
        if used <= screen.lines || shown <= 1 {
            return text;
        }
        let excess = used - screen.lines;
        // The first cut also makes room for the line about the rest.
        let cut = if shown == all { excess + 1 } else { excess };
        shown = shown.saturating_sub(cut).max(1);
    }
}

/// Lines the text takes on a screen `columns` wide (long lines wrap).
fn screen_lines(text: &str, columns: usize) -> usize {
    text.lines()
        .map(|l| measure_text_width(l).div_ceil(columns.max(1)).max(1))
        .sum()
}

/// What the report holds, by kind: `5 Bloom filters (4 windowed)`, `2 Bloom
/// filters, 1 Cuckoo filter`. A Cuckoo filter is not a Bloom filter, so it
/// is counted apart; a windowed filter is one, so it is counted in.
fn filter_counts(report: &Report) -> String {
    let cuckoos = report
        .rows
        .iter()
        .filter(|r| r.cuckoo_bucket_size.is_some())
        .count() as u64;
    let blooms = report.rows.len() as u64 - cuckoos;
    let windows = report.windows() as u64;
    let mut out = format!("{blooms} Bloom {}", fmt::noun(blooms, "filter"));
    if windows > 0 {
        out.push_str(&format!(" ({windows} windowed)"));
    }
    if cuckoos > 0 {
        let cuckoo = format!("{cuckoos} Cuckoo {}", fmt::noun(cuckoos, "filter"));
        if blooms == 0 {
            return cuckoo;
        }
        out.push_str(&format!(", {cuckoo}"));
    }
    out
}

/// The report with its first `shown` rows.
fn render(report: &Report, shown: usize) -> String {
    let t = &report.thresholds;
    let server = match report.cluster_nodes {
        Some(n) => format!(
            "{} (cluster, {n} {})",
            report.server,
            fmt::noun(n as u64, "master")
        ),
        None => report.server.clone(),
    };
    let windows = report.windows();
    let mut out = format!(
        "{} · {} · thresholds: warning {}, alert {} ({})\n",
        server,
        filter_counts(report),
        fmt::percent(t.warning),
        fmt::percent(t.alert),
        t.source
    );
    if report.rows.is_empty() {
        out.push_str("no filters found\n");
        return out;
    }
    let col = |title, right| Column { title, right };
    let columns = [
        col("KEY", false),
        col("ITEMS", true),
        col("CAPACITY", true),
        col("FILL", true),
        col("EST. FPR", true),
        col("SIZE", true),
        col("LINKS", true),
        col("POLICY", false),
        col("LEVEL", false),
    ];
    let (windowed, plain): (Vec<&Row>, Vec<&Row>) = report.rows[..shown]
        .iter()
        .partition(|r| r.window.is_some());
    let rows: Vec<Vec<String>> = plain
        .iter()
        .map(|r| {
            let mut fpr = fmt::g(r.fpr, 3);
            if r.source == Source::InfoDebug {
                fpr.push('*');
            }
            vec![
                fmt::key(&r.key),
                fmt::int(r.items),
                fmt::int(r.capacity),
                fmt::percent(r.fill),
                fpr,
                fmt::bytes(r.size),
                r.links.to_string(),
                match r.cuckoo_bucket_size {
                    Some(bs) => format!("cuckoo/{bs}"),
                    None => r.policy.clone().unwrap_or_else(|| "n/a".into()),
                },
                r.level.styled(),
            ]
        })
        .collect();
    if !rows.is_empty() {
        out.push('\n');
        out.push_str(&fmt::table(&columns, &rows, ""));
    }
    if !windowed.is_empty() {
        out.push('\n');
        out.push_str(&window_table(&windowed));
    }
    let rest = &report.rows[shown..];
    if !rest.is_empty() {
        let count = |level| rest.iter().filter(|r| r.level == level).count();
        out.push_str(&format!(
            "… {} more {} not shown ({} {}, {} {}, {} {}): a taller terminal or --pattern \
             shows them\n",
            fmt::int(rest.len() as u64),
            fmt::noun(rest.len() as u64, "filter"),
            fmt::int(count(Level::Alert) as u64),
            Level::Alert.styled(),
            fmt::int(count(Level::Warning) as u64),
            Level::Warning.styled(),
            fmt::int(count(Level::Ok) as u64),
            Level::Ok.styled(),
        ));
    }
    out.push('\n');
    let mut summary = Vec::new();
    for level in [Level::Alert, Level::Warning, Level::Ok] {
        let n = report.count(level);
        if n > 0 {
            summary.push(format!("{n} {}", level.styled()));
        }
    }
    out.push_str(&summary.join(", "));
    out.push('\n');
    if windows > 0 {
        out.push_str(WINDOW_NOTE);
    }
    let cuckoos = report.rows[..shown]
        .iter()
        .filter(|r| r.cuckoo_bucket_size.is_some())
        .count();
    if cuckoos > 0 {
        out.push_str(
            "cuckoo/B: a Cuckoo filter with B slots a bucket; CAPACITY is its slots, LINKS its \
             sub-filters, FILL its newest sub-filter's load (where it expands, typically well \
             before 100%: `ferrobloom plan --cuckoo`)\n",
        );
    }
    if report.fallback {
        out.push_str(
            "* estimated from the item counts (the server has no BF.STATS): \
             (1 - (1 - 1/m)^(k·n))^k per link; for Cuckoo filters (no CF.STATS), \
             1 - (1 - load/255)^(2·B) per sub-filter with FILL = items / slots\n",
        );
    }
    out
}

/// What the windowed filters' columns mean, under the summary.
const WINDOW_NOTE: &str =
    "windowed: COVERAGE is how much of its window a filter has seen; FILL its \
fullest generation over its share of the capacity; LEVEL is BF.STATS' fill_level (WARNING: a \
generation got more than its share; ALERT: EST. FPR above TARGET), not the thresholds\n";

/// The windowed filters' table.
fn window_table(rows: &[&Row]) -> String {
    let col = |title, right| Column { title, right };
    let columns = [
        col("WINDOWED", false),
        col("WINDOW", true),
        col("COVERAGE", true),
        col("ITEMS", true),
        col("CAPACITY", true),
        col("FILL", true),
        col("EST. FPR", true),
        col("TARGET", true),
        col("SIZE", true),
        col("ROTATIONS", true),
        col("FORGOTTEN", true),
        col("LEVEL", false),
    ];
    let cells: Vec<Vec<String>> = rows
        .iter()
        .filter_map(|r| {
            let w = r.window.as_ref()?;
            Some(vec![
                fmt::key(&r.key),
                w.span.clone(),
                fmt::percent(w.coverage),
                fmt::int(r.items),
                fmt::int(r.capacity),
                fmt::percent(r.fill),
                fmt::g(r.fpr, 3),
                fmt::g(w.target_error, 3),
                fmt::bytes(r.size),
                fmt::int(w.rotations),
                fmt::int(w.forgotten),
                r.level.styled(),
            ])
        })
        .collect();
    fmt::table(&columns, &cells, "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_lines() {
        let l = parse_debug_link(
            "bytes:144 bits:1152 hashes:8 hashwidth:64 capacity:100 size:3 ratio:0.005",
        )
        .unwrap();
        assert_eq!(
            l,
            DebugLink {
                bytes: 144,
                bits: 1152,
                hashes: 8,
                capacity: 100,
                items: 3
            }
        );
        assert!(parse_debug_link("size:3").is_none());
    }

    #[test]
    fn full_link_is_near_its_error_rate() {
        let l = DebugLink {
            bytes: 144,
            bits: 1152,
            hashes: 8,
            capacity: 100,
            items: 100,
        };
        let fpr = fpr_from_counts(&[l]);
        // At capacity, at most the link's error rate (word rounding adds bits).
        assert!(fpr > 0.003 && fpr <= 0.005, "{fpr}");
    }

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

    fn report(fills: &[f64]) -> Report {
        let t = Thresholds {
            warning: 0.75,
            alert: 0.9,
            source: "default",
        };
        let mut rows: Vec<Row> = fills
            .iter()
            .enumerate()
            .map(|(i, &fill)| Row {
                key: format!("k{i}").into_bytes(),
                items: (fill * 1000.0) as u64,
                capacity: 1000,
                fill,
                fpr: 0.001,
                source: Source::Stats,
                size: 1480,
                bytes: 1384,
                links: 1,
                policy: Some("exact".into()),
                expansion: Some(2),
                level: Level::of(fill, &t),
                window: None,
                cuckoo_bucket_size: None,
            })
            .collect();
        rows.sort_by(order);
        Report {
            server: "redis://127.0.0.1:6379/".into(),
            cluster_nodes: None,
            thresholds: t,
            rows,
            fallback: false,
        }
    }

    #[test]
    fn the_title_counts_cuckoo_filters_apart_from_bloom_filters() {
        let title = |r: &Report| to_text(r, None).lines().next().unwrap().to_string();
        let mut r = report(&[0.5, 0.5, 0.5, 0.5]);
        assert!(title(&r).contains(" · 4 Bloom filters · "), "{}", title(&r));
        for row in &mut r.rows[1..] {
            row.cuckoo_bucket_size = Some(2);
        }
        assert!(
            title(&r).contains(" · 1 Bloom filter, 3 Cuckoo filters · "),
            "{}",
            title(&r)
        );
        r.rows[0].cuckoo_bucket_size = Some(2);
        assert!(
            title(&r).contains(" · 4 Cuckoo filters · "),
            "{}",
            title(&r)
        );
        r.rows.truncate(1);
        r.cluster_nodes = Some(1);
        assert!(
            title(&r).contains(" (cluster, 1 master) · 1 Cuckoo filter · "),
            "{}",
            title(&r)
        );
        r.rows.clear();
        assert!(to_text(&r, None).contains("no filters found"));
    }

    #[test]
    fn a_screen_shows_the_fullest_and_counts_the_rest() {
        // 3000 filters: 2 alert, 3 warning, the rest ok.
        let mut fills = vec![0.95, 0.91, 0.8, 0.78, 0.76];
        fills.extend((0..2995).map(|i| 0.1 + (i % 500) as f64 / 1000.0));
        let r = report(&fills);
        let screen = Screen {
            lines: 22,
            columns: 120,
        };
        let text = to_text(&r, Some(screen));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 22, "{text}");
        assert!(lines[0].contains("3000 Bloom filters"), "{}", lines[0]);
        assert!(lines[2].starts_with("KEY"));
        // The fullest first: both alerts and all warnings are on screen.
        assert!(lines[3].starts_with("k0 ") && lines[3].ends_with("ALERT"));
        assert!(lines[7].ends_with("WARNING"), "{}", lines[7]);
        let shown = lines.iter().filter(|l| l.starts_with('k')).count();
        assert_eq!(shown, 22 - 6);
        let more = lines
            .iter()
            .find(|l| l.starts_with('…'))
            .expect("a line for the rest");
        assert!(
            more.contains(&format!(
                "{} more filters not shown (0 ALERT, 0 WARNING, 2,984 ok)",
                fmt::int(3000 - shown as u64)
            )),
            "{more}"
        );
        // The summary still counts every filter.
        assert!(text.contains("2 ALERT, 3 WARNING, 2995 ok"), "{text}");

        // A screen too short even for the alerts says how many it hides.
        let tiny = to_text(
            &r,
            Some(Screen {
                lines: 7,
                columns: 120,
            }),
        );
        assert!(
            tiny.contains("2,999 more filters not shown (1 ALERT, 3 WARNING, 2,995 ok)"),
            "{tiny}"
        );

        // Not a terminal, or everything fits: every row, no such line.
        let all = to_text(&r, None);
        assert_eq!(all.lines().filter(|l| l.starts_with('k')).count(), 3000);
        assert!(!all.contains('…'));
        let few = report(&[0.5, 0.95]);
        let fits = to_text(&few, Some(screen));
        assert_eq!(fits, to_text(&few, None));

        // Wrapped lines count: on a narrow screen fewer rows fit.
        let narrow = to_text(
            &r,
            Some(Screen {
                lines: 22,
                columns: 40,
            }),
        );
        assert!(screen_lines(&narrow, 40) <= 22, "{narrow}");
        assert!(narrow.lines().filter(|l| l.starts_with('k')).count() < shown);
    }

    #[test]
    fn keys_are_escaped_in_text_and_exact_in_json() {
        let mut r = report(&[0.5, 0.2]);
        r.rows[0].key = b"evil\x1b[2J\nkey".to_vec();
        r.rows[1].key = b"bin\xff\x00".to_vec();
        let text = to_text(&r, None);
        assert!(!text.contains('\x1b'), "{text:?}");
        assert!(text.contains("evil\\x1b[2J\\nkey "), "{text}");
        assert!(text.contains("bin\\xff\\x00 "), "{text}");
        // One line per row: the newline did not break the table.
        assert_eq!(text.lines().count(), 7, "{text}");
        let json = to_json(&r);
        let text = serde_json::to_string(&json).unwrap();
        let back: Json = serde_json::from_str(&text).unwrap();
        assert_eq!(back["filters"][0]["key"], "evil\x1b[2J\nkey");
        assert_eq!(back["filters"][0]["key_hex"], Json::Null);
        assert_eq!(back["filters"][1]["key"], "bin\\xff\\x00");
        assert_eq!(back["filters"][1]["key_hex"], "62696eff00");
    }
}
