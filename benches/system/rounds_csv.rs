//! The raw rounds of a run, as CSV (target/bench-system/rounds.csv).

use std::fmt::Write as _;
use std::fs;

use crate::config::Config;
use crate::results::Results;

/// Phase `window`'s comparison: each approach against RedisBloom's 30
/// daily filters with pipelined lookups.
const WINDOW: &str = "approach/redisbloom-30-daily";

pub fn write_csv(cfg: &Config, results: &Results, tracking: &Results, window: &Results) {
    // Text fields quoted (metric names hold commas); `first`: the side
    // measured first in that round (see `Pair::both`; for `WINDOW`, "a"
    // means FerroBloom's server).
    let quote = |t: &str| format!("\"{}\"", t.replace('"', "\"\""));
    let mut csv = String::from("comparison,workload,metric,unit,round,first,a,b,ratio\n");
    for (name, res) in [
        ("ferrobloom/redisbloom", results),
        ("tracked/untracked", tracking),
        (WINDOW, window),
    ] {
        for m in &res.metrics {
            for (i, (a, b)) in m.rounds.iter().enumerate() {
                let _ = writeln!(
                    csv,
                    "{name},{},{},{},{},{},{a},{b},{}",
                    quote(&m.workload),
                    quote(&m.metric),
                    quote(m.unit),
                    i + 1,
                    if i % 2 == 0 { "a" } else { "b" },
                    a / b
                );
            }
        }
    }
    if let Some(dir) = cfg.csv.parent() {
        fs::create_dir_all(dir).expect("create target/bench-system");
    }
    fs::write(&cfg.csv, csv).expect("write rounds.csv");
}
