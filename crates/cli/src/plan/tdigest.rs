//! `ferrobloom plan --tdigest COMPRESSION`: a t-digest before it exists,
//! offline, from the core's sizing (`ferrobloom_core::tdigest::plan`): its
//! capacity, its memory (reserved at creation, whatever is added), what
//! the memory guard would say of creating it, and the rank error to expect
//! for a number of observations.

use ferrobloom_core::tdigest::plan::{self, TDigestPlan};
use ferrobloom_core::tdigest::CreateError;
use serde_json::{json, Value};

use super::{percent_fine, push_warnings, usage, PlanArgs, Planned};
use crate::fmt;
use crate::Result;

/// The observations the rank error is given for without --observations.
pub const DEFAULT_OBSERVATIONS: u64 = 1_000_000;

pub struct TDigestReport<'a> {
    args: &'a PlanArgs,
    plan: TDigestPlan,
}

pub fn plan(args: &PlanArgs) -> Result<TDigestReport<'_>> {
    let compression = args.tdigest.expect("--tdigest");
    let observations = args.observations.unwrap_or(DEFAULT_OBSERVATIONS);
    let plan = plan::plan(compression as f64, observations).map_err(|e| {
        usage(match e {
            CreateError::CapacityOverflow => format!(
                "TDIGEST.CREATE would refuse COMPRESSION {compression}: ERR {} (its capacity, \
                 6 × compression + 10, must fit 32 bits: compression at most {})",
                e.message(),
                ferrobloom_core::tdigest::digest::MAX_COMPRESSION
            ),
            _ => format!(
                "TDIGEST.CREATE would refuse COMPRESSION {compression}: ERR {}",
                e.message()
            ),
        })
    })?;
    Ok(TDigestReport { args, plan })
}

impl Planned for TDigestReport<'_> {
    fn to_json(&self) -> Value {
        to_json(self.args, &self.plan)
    }

    fn to_text(&self) -> String {
        to_text(self.args, &self.plan)
    }
}

pub fn command(p: &TDigestPlan) -> String {
    format!("TDIGEST.CREATE key COMPRESSION {}", p.compression)
}

/// The memory guard's view offline: the per-value cap on MEMORY USAGE's
/// number (`maxmemory` and the machine's memory are the server's to know).
pub fn guard(args: &PlanArgs, p: &TDigestPlan) -> &'static str {
    if args.max_filter_bytes > 0 && p.memory_usage as u64 > args.max_filter_bytes {
        "bf.max-filter-bytes"
    } else {
        "ok"
    }
}

pub fn warnings(args: &PlanArgs, p: &TDigestPlan) -> Vec<String> {
    let mut out = Vec::new();
    if guard(args, p) != "ok" {
        out.push(format!(
            "the server would refuse {} (ERR T-Digest: allocation failed): the digest takes {} \
             bytes ({}), over bf.max-filter-bytes ({} bytes, {}; --max-filter-bytes)",
            command(p),
            fmt::int(p.memory_usage as u64),
            fmt::bytes(p.memory_usage as u64),
            fmt::int(args.max_filter_bytes),
            fmt::bytes(args.max_filter_bytes)
        ));
    }
    out
}

pub fn to_json(args: &PlanArgs, p: &TDigestPlan) -> Value {
    json!({
        "type": "tdigest",
        "compression": p.compression as u64,
        "capacity": p.capacity,
        "memory_usage": p.memory_usage,
        "allocated_bytes": p.bytes,
        "observations": p.observations,
        "rank_error_median": p.rank_error_median,
        "rank_error_tail": p.rank_error_tail,
        "guard": guard(args, p),
        "command": command(p),
        "max_filter_bytes": args.max_filter_bytes,
        "warnings": warnings(args, p),
    })
}

pub fn to_text(args: &PlanArgs, p: &TDigestPlan) -> String {
    let mut out = format!(
        "t-digest: {}: capacity {} nodes, planned for {} observations\n",
        command(p),
        fmt::int(p.capacity as u64),
        fmt::int(p.observations)
    );
    out.push_str(&format!(
        "  MEMORY USAGE:   {} bytes ({}): 16 × capacity + 8, as RedisBloom 2.8.2 reports it; \
         reserved at creation, whatever is added\n",
        fmt::int(p.memory_usage as u64),
        fmt::bytes(p.memory_usage as u64)
    ));
    out.push_str(&format!(
        "  allocated:      {} bytes ({}): the nodes and the digest's struct\n",
        fmt::int(p.bytes),
        fmt::bytes(p.bytes)
    ));
    out.push_str(&format!(
        "  memory guard:   {}\n",
        match guard(args, p) {
            "ok" => "ok (bf.max-filter-bytes; maxmemory and the machine's memory are the \
                     server's to check)"
                .to_string(),
            other => format!("refused ({other})"),
        }
    ));
    out.push_str(&format!(
        "  rank error:     at most {} of the observations at the median ({}), {} at the 1% and \
         99% quantiles ({}): the largest span of a centroid there (2π·ln N·q(1 − q) / compression); \
         a bound, not a measurement\n",
        percent_fine(p.rank_error_median),
        rank_count(p.rank_error_median, p.observations),
        percent_fine(p.rank_error_tail),
        rank_count(p.rank_error_tail, p.observations),
    ));
    push_warnings(&mut out, warnings(args, p));
    out
}

/// A rank error as a count of observations: `±1,234 ranks`.
fn rank_count(fraction: f64, observations: u64) -> String {
    let n = (fraction * observations as f64).round();
    let n = if n.is_finite() && n < 9e15 {
        n as u64
    } else {
        u64::MAX
    };
    format!("±{} {}", fmt::int(n), fmt::noun(n, "rank"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        plan: PlanArgs,
    }

    fn parse(line: &str) -> std::result::Result<PlanArgs, clap::Error> {
        let mut words = vec!["plan"];
        words.extend(line.split_whitespace());
        Wrap::try_parse_from(words).map(|w| w.plan)
    }

    #[test]
    fn default_compression() {
        let a = parse("--tdigest 100").unwrap();
        let r = plan(&a).unwrap();
        let j = r.to_json();
        assert_eq!(
            (j["capacity"].as_i64(), j["memory_usage"].as_i64()),
            (Some(610), Some(9768))
        );
        assert_eq!(j["observations"], DEFAULT_OBSERVATIONS);
        assert_eq!(j["command"], "TDIGEST.CREATE key COMPRESSION 100");
        assert_eq!(j["guard"], "ok");
        // 2π·ln(1e6)·0.25 / 100: a whole centroid's span.
        let want = 2.0 * std::f64::consts::PI * (1e6f64).ln() * 0.25 / 100.0;
        assert!((j["rank_error_median"].as_f64().unwrap() - want).abs() < 1e-12);
        let text = r.to_text();
        assert!(text.contains("capacity 610 nodes"), "{text}");
        assert!(text.contains("MEMORY USAGE:   9,768 bytes"), "{text}");
    }

    #[test]
    fn limits() {
        let a = parse("--tdigest 357913940").unwrap();
        let e = plan(&a).err().unwrap();
        assert_eq!(e.code, crate::EXIT_USAGE);
        assert!(e.message.contains("allocation failed"), "{}", e.message);
        assert!(plan(&parse("--tdigest 357913939").unwrap()).is_ok());
        let a = parse("--tdigest 1000 --max-filter-bytes 1000").unwrap();
        let r = plan(&a).unwrap();
        assert_eq!(r.to_json()["guard"], "bf.max-filter-bytes");
        for bad in [
            "--tdigest 0",
            "--tdigest 1.5",
            "--tdigest 10 --width 5",
            "--tdigest 10 --topk 5",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        // A flag of this type without it (clap lets this one through).
        let bad = parse("--observations 5 --capacity 10 --error 0.1").unwrap();
        assert_eq!(
            super::super::leaf(&bad).err().unwrap().code,
            crate::EXIT_USAGE
        );
    }
}
