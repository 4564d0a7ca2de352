//! `ferrobloom plan --topk K`: a Top-K sketch before it exists, offline,
//! from the same core code as TOPK.PLAN (`ferrobloom_core::topk::plan`):
//! its memory as MEMORY USAGE reports it (RedisBloom 2.8.2's formula) and
//! as it is allocated, what the memory guard would say of creating it, and
//! the smallest count its width, depth and decay track reliably in a
//! stream of the given total.

use ferrobloom_core::topk::plan::{self, Plan, RELIABLE_DELTA, RELIABLE_ERROR};
use ferrobloom_core::topk::sizing::{DEFAULT_DECAY, DEFAULT_DEPTH, DEFAULT_WIDTH};
use ferrobloom_core::topk::{ParamError, Params};
use serde_json::{json, Value};

use super::{percent_fine, push_warnings, usage, PlanArgs, Planned};
use crate::fmt;
use crate::Result;

/// A Top-K sketch's plan, with the command line it answers.
pub struct TopKReport<'a> {
    args: &'a PlanArgs,
    params: Params,
    /// Whether width, depth and decay were given (TOPK.RESERVE's long form).
    explicit: bool,
    plan: Plan,
}

/// TOPK.RESERVE's parameters from the command line: width and depth
/// within 1..=2^32 − 1, as the server checks them.
pub fn params(args: &PlanArgs) -> Result<Params> {
    let k = args.topk.expect("--topk");
    let dim = |v: Option<u64>, default: u32, e: ParamError| match v {
        None => Ok(default),
        Some(n) => u32::try_from(n).map_err(|_| {
            usage(format!(
                "TOPK.RESERVE would refuse {n}: {} (at most 4294967295)",
                e.message()
            ))
        }),
    };
    Ok(Params {
        k,
        width: dim(args.width, DEFAULT_WIDTH, ParamError::Width)?,
        depth: dim(args.depth, DEFAULT_DEPTH, ParamError::Depth)?,
        decay: args.decay.unwrap_or(DEFAULT_DECAY),
    })
}

pub fn plan(args: &PlanArgs) -> Result<TopKReport<'_>> {
    let params = params(args)?;
    let explicit = args.width.is_some() || args.depth.is_some() || args.decay.is_some();
    if explicit && (args.width.is_none() || args.depth.is_none()) {
        return Err(usage(
            "--topk takes --width and --depth together (TOPK.RESERVE key k width depth decay)",
        ));
    }
    let plan = plan::plan(params, item_len(args), total(args)).ok_or_else(|| {
        usage(format!(
            "TOPK.RESERVE would refuse these dimensions: {} (width × depth × 8 bytes must fit \
             the address space)",
            ParamError::InsufficientMemory.message()
        ))
    })?;
    Ok(TopKReport {
        args,
        params,
        explicit,
        plan,
    })
}

fn total(args: &PlanArgs) -> u64 {
    args.total.unwrap_or(0)
}

fn item_len(args: &PlanArgs) -> u64 {
    args.item_bytes.unwrap_or(0)
}

impl Planned for TopKReport<'_> {
    fn to_json(&self) -> Value {
        to_json(self.args, self.params, self.explicit, &self.plan)
    }

    fn to_text(&self) -> String {
        to_text(self.args, self.params, self.explicit, &self.plan)
    }
}

/// `TOPK.RESERVE key 10 2000 7 0.9` (the short form when only k was
/// given).
pub fn command(p: Params, explicit: bool) -> String {
    if explicit {
        format!(
            "TOPK.RESERVE key {} {} {} {}",
            p.k, p.width, p.depth, p.decay
        )
    } else {
        format!("TOPK.RESERVE key {}", p.k)
    }
}

/// What the server's memory guard would say of creating it (TOPK.PLAN's
/// `guard`), as far as it is known offline: the per-value cap on MEMORY
/// USAGE's number; `maxmemory` and the machine's memory are the server's
/// to know.
pub fn guard(args: &PlanArgs, p: &Plan) -> &'static str {
    if args.max_filter_bytes > 0 && p.reported_bytes > args.max_filter_bytes {
        "bf.max-filter-bytes"
    } else {
        "ok"
    }
}

pub fn warnings(args: &PlanArgs, params: Params, explicit: bool, p: &Plan) -> Vec<String> {
    let mut out = Vec::new();
    if guard(args, p) != "ok" {
        out.push(format!(
            "the server would refuse {} ({}): the sketch takes {} bytes ({}), over \
             bf.max-filter-bytes ({} bytes, {}; --max-filter-bytes)",
            command(params, explicit),
            ParamError::InsufficientMemory.message(),
            fmt::int(p.reported_bytes),
            fmt::bytes(p.reported_bytes),
            fmt::int(args.max_filter_bytes),
            fmt::bytes(args.max_filter_bytes)
        ));
    }
    if u64::from(params.k) > u64::from(params.width) * u64::from(params.depth) {
        out.push(format!(
            "k {} is more than the width × depth buckets ({}): at most that many items can \
             own a bucket, so the list holds items whose counts are guesses",
            fmt::int(u64::from(params.k)),
            fmt::int(u64::from(params.width) * u64::from(params.depth))
        ));
    }
    out
}

/// TOPK.PLAN's fields first, under its names, then the command line's.
pub fn to_json(args: &PlanArgs, params: Params, explicit: bool, p: &Plan) -> Value {
    json!({
        "k": params.k,
        "width": params.width,
        "depth": params.depth,
        "decay": params.decay,
        "total": total(args),
        "item_len": item_len(args),
        "memory_usage": p.reported_bytes,
        "bytes": p.data_bytes,
        "allocated_bytes": p.allocated_bytes,
        "full_bytes": p.full_bytes,
        "error": RELIABLE_ERROR,
        "confidence": 1.0 - RELIABLE_DELTA,
        "min_reliable_count": p.min_reliable_count,
        "guard": guard(args, p),
        "type": "topk",
        "command": command(params, explicit),
        "max_filter_bytes": args.max_filter_bytes,
        "warnings": warnings(args, params, explicit, p),
    })
}

pub fn to_text(args: &PlanArgs, params: Params, explicit: bool, p: &Plan) -> String {
    let mut out = format!(
        "Top-K: {}: k {}, width {}, depth {}, decay {}\n",
        command(params, explicit),
        fmt::int(u64::from(params.k)),
        fmt::int(u64::from(params.width)),
        fmt::int(u64::from(params.depth)),
        params.decay
    );
    out.push_str(&format!(
        "  MEMORY USAGE:   {} bytes ({}): 2088 + width × depth × 8 + k × 24, as RedisBloom \
         2.8.2 reports it\n",
        fmt::int(p.reported_bytes),
        fmt::bytes(p.reported_bytes)
    ));
    let mut allocated = format!(
        "  allocated:      {} bytes ({}): buckets and heap records ({}) and the sketch's struct",
        fmt::int(p.allocated_bytes),
        fmt::bytes(p.allocated_bytes),
        fmt::int(p.data_bytes),
    );
    if item_len(args) > 0 {
        allocated.push_str(&format!(
            "; {} ({}) once every slot holds a {}-byte item",
            fmt::int(p.full_bytes),
            fmt::bytes(p.full_bytes),
            item_len(args)
        ));
    }
    out.push_str(&allocated);
    out.push('\n');
    out.push_str(&format!(
        "  memory guard:   {}\n",
        match guard(args, p) {
            "ok" => "ok (bf.max-filter-bytes; maxmemory and the machine's memory are the \
                     server's to check)"
                .to_string(),
            other => format!("refused ({other})"),
        }
    ));
    match p.min_reliable_count {
        Some(n) => out.push_str(&format!(
            "  smallest count tracked reliably in a stream of {} counts: {} (estimated within \
             {} of the true count, except with probability {}; a guide, see TOPK.PLAN)\n",
            fmt::int(total(args)),
            fmt::int(n),
            percent_fine(RELIABLE_ERROR),
            percent_fine(RELIABLE_DELTA)
        )),
        None => out.push_str(
            "  smallest count tracked reliably: give the stream's expected total count \
             (--total N) to have it\n",
        ),
    }
    push_warnings(&mut out, warnings(args, params, explicit, p));
    out
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

    fn args(line: &str) -> PlanArgs {
        parse(line).expect("valid")
    }

    #[test]
    fn defaults_and_numbers() {
        let a = args("--topk 10");
        let r = plan(&a).unwrap();
        assert_eq!(
            (r.params.width, r.params.depth, r.params.decay),
            (8, 7, 0.9)
        );
        // 2088 + 8·7·8 + 10·24.
        assert_eq!(r.plan.reported_bytes, 2088 + 448 + 240);
        let j = r.to_json();
        assert_eq!(j["command"], "TOPK.RESERVE key 10");
        assert_eq!(j["bytes"], 448 + 240);
        assert_eq!(j["guard"], "ok");
        assert!(j["min_reliable_count"].is_null());
        let text = r.to_text();
        assert!(text.contains("MEMORY USAGE:   2,776 bytes"), "{text}");
        assert!(text.contains("(--total N)"), "{text}");
        let a = args("--topk 10 --total 100000 --item-bytes 16");
        let r = plan(&a).unwrap();
        let j = r.to_json();
        assert!(j["min_reliable_count"].as_u64().unwrap() > 0);
        assert_eq!(j["full_bytes"].as_u64(), Some(r.plan.allocated_bytes + 160));
        let text = r.to_text();
        assert!(text.contains("in a stream of 100,000 counts"), "{text}");
        assert!(text.contains("within 10% of the true count"), "{text}");
    }

    #[test]
    fn explicit_dimensions_and_the_cap() {
        let a = args("--topk 50 --width 2000 --depth 5 --decay 1 --total 1000");
        let r = plan(&a).unwrap();
        assert_eq!(r.to_json()["command"], "TOPK.RESERVE key 50 2000 5 1");
        let a = args("--topk 5 --width 1000 --depth 10 --max-filter-bytes 10000");
        let r = plan(&a).unwrap();
        assert_eq!(r.to_json()["guard"], "bf.max-filter-bytes");
        assert!(r.to_text().contains("over bf.max-filter-bytes"));
        // More items than buckets.
        let a = args("--topk 100 --width 2 --depth 2");
        assert!(plan(&a).unwrap().to_json()["warnings"][0]
            .as_str()
            .unwrap()
            .contains("more than the width × depth buckets"));
    }

    #[test]
    fn refused_arguments() {
        let a = args("--topk 5 --width 4294967296 --depth 2");
        assert_eq!(plan(&a).err().unwrap().code, crate::EXIT_USAGE);
        let a = args("--topk 5 --width 40");
        assert_eq!(plan(&a).err().unwrap().code, crate::EXIT_USAGE);
        let a = args("--topk 5 --width 4294967295 --depth 4294967295");
        let e = plan(&a).err().unwrap();
        assert!(e.message.contains("Insufficient memory"), "{}", e.message);
        for bad in [
            "--topk 0",
            "--topk 4294967296",
            "--topk 5 --decay 0",
            "--topk 5 --decay 1.5",
            "--topk 5 --error 0.1",
            "--topk 5 --cms --total 5",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        // Flags of this type without it (clap lets these through).
        for bad in [
            "--decay 0.5 --capacity 5 --error 0.1",
            "--item-bytes 5 --capacity 5 --error 0.1",
            "--total 5 --capacity 5 --error 0.1",
        ] {
            let bad = parse(bad).unwrap();
            assert_eq!(
                super::super::leaf(&bad).err().unwrap().code,
                crate::EXIT_USAGE
            );
        }
    }
}
