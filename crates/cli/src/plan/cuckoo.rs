//! `ferrobloom plan --cuckoo`: what CF.RESERVE allocates and may grow
//! into, offline, from the same core code as CF.PLAN: the first sub-filter,
//! every expansion up to the cf-max-expansions limit, the false positive
//! bound, and the measured load at the first expansion.

use console::style;
use ferrobloom_core::cuckoo::plan::{self, CuckooPlan};
use ferrobloom_core::cuckoo::sizing::{
    CuckooParams, DEFAULT_BUCKET_SIZE, DEFAULT_EXPANSION, DEFAULT_MAX_ITERATIONS, MAX_EXPANSION,
};
use ferrobloom_core::cuckoo::SizingError;
use serde_json::{json, Value};

use super::{percent_fine, push_warnings, usage, PlanArgs, Planned};
use crate::fmt::{self, Column};
use crate::{Failure, Result};

/// CF.RESERVE's parameters from the command line, checked as CF.RESERVE
/// checks them.
pub fn params(args: &PlanArgs) -> Result<CuckooParams> {
    let capacity = args.capacity.expect("clap requires --capacity");
    let expansion = args.expansion.map_or(Ok(DEFAULT_EXPANSION), |e| {
        u16::try_from(e)
            .ok()
            .filter(|&e| e <= MAX_EXPANSION)
            .ok_or_else(|| {
                usage(format!(
                    "--expansion {e}: a Cuckoo filter's EXPANSION is 0 to {MAX_EXPANSION}"
                ))
            })
    })?;
    let p = CuckooParams {
        capacity,
        bucket_size: args.bucket_size.unwrap_or(DEFAULT_BUCKET_SIZE),
        max_iterations: args.max_iterations.unwrap_or(DEFAULT_MAX_ITERATIONS),
        expansion,
    };
    if capacity < 2 * u64::from(p.bucket_size) {
        return Err(usage(format!(
            "--capacity must be at least twice the bucket size ({}); CF.RESERVE answers \
             \"Capacity must be at least (BucketSize * 2)\"",
            2 * u64::from(p.bucket_size)
        )));
    }
    Ok(p)
}

/// The plan CF.PLAN would reply for these arguments (with the server's
/// cf-max-expansions given as --max-expansions).
pub fn cuckoo_plan(args: &PlanArgs) -> Result<CuckooPlan> {
    let p = params(args)?;
    plan::plan(&p, args.max_expansions).map_err(|e| match e {
        SizingError::TooLarge => Failure::new(
            "the filter would be too large to create (CF.RESERVE answers ERR Insufficient \
             memory to create filter)",
        ),
        other => usage(format!("invalid parameters: {other:?}")),
    })
}

/// A Cuckoo filter's plan, with the command line it answers.
pub struct CuckooReport<'a> {
    args: &'a PlanArgs,
    plan: CuckooPlan,
}

pub fn plan(args: &PlanArgs) -> Result<CuckooReport<'_>> {
    Ok(CuckooReport {
        args,
        plan: cuckoo_plan(args)?,
    })
}

impl Planned for CuckooReport<'_> {
    fn to_json(&self) -> Value {
        to_json(self.args, &self.plan)
    }

    fn to_text(&self) -> String {
        to_text(self.args, &self.plan)
    }
}

/// What the operator should know: an expansion well before the capacity,
/// and what the per-filter cap refuses.
pub fn warnings(args: &PlanArgs, p: &CuckooPlan) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(e) = p.first_expansion {
        if e.items < p.capacity {
            out.push(format!(
                "a CF.RESERVE of {} typically expands after about {} ({} of its \
                 capacity; as early as {} of its {}), adding {} bytes; every further \
                 expansion adds a sub-filter that each lookup also checks. A larger bucket \
                 size or MAXITERATIONS fills more before expanding.",
                fmt::count(p.capacity, "item"),
                fmt::count(e.items, "item"),
                fmt::percent(e.items as f64 / p.capacity as f64),
                fmt::percent(e.low_load),
                fmt::count(p.slots(), "slot"),
                fmt::int(p.sub_filters[1].bytes),
            ));
        }
    }
    if let Some(i) = p.refused_by_cap(args.max_filter_bytes) {
        let size = p.sub_filters[i].size_after;
        let limit = format!(
            "over bf.max-filter-bytes ({} bytes, {}; --max-filter-bytes)",
            fmt::int(args.max_filter_bytes),
            fmt::bytes(args.max_filter_bytes)
        );
        out.push(if i == 0 {
            format!(
                "the server would refuse CF.RESERVE (ERR Insufficient memory to create \
                 filter): the first sub-filter makes it {} bytes ({}), {limit}",
                fmt::int(size),
                fmt::bytes(size)
            )
        } else {
            format!(
                "the server would refuse expansion {} (ERR Insufficient memory): sub-filter \
                 {} would make the filter {} bytes ({}), {limit}; adds then fail",
                i,
                i + 1,
                fmt::int(size),
                fmt::bytes(size)
            )
        });
    }
    out
}

pub fn to_json(args: &PlanArgs, p: &CuckooPlan) -> Value {
    let e = p.first_expansion;
    let bloom = p.bloom_equivalent();
    json!({
        "capacity": p.capacity,
        "bucket_size": p.bucket_size,
        "max_iterations": p.max_iterations,
        "expansion": p.expansion,
        "buckets": p.first().buckets,
        "slots": p.slots(),
        "bytes": p.first().bytes,
        "size": p.first().size_after,
        "fpr_bound": p.fpr_per_sub_filter,
        "first_expansion_load": e.map(|e| e.load),
        "first_expansion_low_load": e.map(|e| e.low_load),
        "first_expansion_items": e.map(|e| e.items),
        "first_expansion_measured": e.map(|e| json!({
            "bucket_size": e.measured_bucket_size,
            "slots": e.measured_slots,
            "max_iterations": e.measured_max_iterations,
        })),
        "max_expansions": p.max_expansions,
        "expansions": p.expansions(),
        "sub_filters": p.sub_filters.iter().map(|s| json!({
            "buckets": s.buckets,
            "bytes": s.bytes,
            "size": s.size_after,
        })).collect::<Vec<_>>(),
        "worst_bytes": p.worst_bytes(),
        "worst_size": p.worst_size(),
        "worst_fpr_bound": p.worst_fpr,
        "bloom_error_rate": bloom.map(|b| b.error),
        "bloom_hashes": bloom.map(|b| b.hashes),
        "bloom_bytes": bloom.map(|b| b.bytes),
        "bloom_size": bloom.map(|b| b.size),
        "max_filter_bytes": args.max_filter_bytes,
        "refused_at_sub_filter": p.refused_by_cap(args.max_filter_bytes).map(|i| i + 1),
        "warnings": warnings(args, p),
    })
}

pub fn to_text(args: &PlanArgs, p: &CuckooPlan) -> String {
    let first = p.first();
    let mut out = format!(
        "Cuckoo filter: CF.RESERVE capacity {} BUCKETSIZE {} MAXITERATIONS {} EXPANSION {} \
         (stored {}), cf-max-expansions {}\n",
        fmt::int(p.capacity),
        p.bucket_size,
        p.max_iterations,
        args.expansion.unwrap_or(u32::from(DEFAULT_EXPANSION)),
        p.expansion,
        p.max_expansions
    );
    out.push_str(&format!(
        "  reserves: {} × {} = {}, {} bytes; CF.INFO Size {} ({})\n",
        fmt::count(first.buckets, "bucket"),
        fmt::count(u64::from(p.bucket_size), "slot"),
        fmt::count(p.slots(), "slot"),
        fmt::int(first.bytes),
        fmt::int(first.size_after),
        fmt::bytes(first.size_after)
    ));
    out.push_str(&format!(
        "  false positive bound: {} per sub-filter (2 × {} / 255), {} with {}\n",
        percent_fine(p.fpr_per_sub_filter),
        p.bucket_size,
        percent_fine(p.worst_fpr),
        match p.sub_filters.len() {
            1 => "its one sub-filter".to_string(),
            n => format!("all {n} sub-filters"),
        }
    ));
    match p.first_expansion {
        Some(e) => out.push_str(&format!(
            "  first expansion: typically at {} load (about {}), as early as {} \
             (measured with bucket size {}, {}, MAXITERATIONS {})\n",
            fmt::percent(e.load),
            fmt::count(e.items, "item"),
            fmt::percent(e.low_load),
            e.measured_bucket_size,
            fmt::count(e.measured_slots, "slot"),
            e.measured_max_iterations
        )),
        None => out.push_str(
            "  never expands: adds beyond its room answer Filter is full (EXPANSION 0) or \
             Maximum expansions reached\n",
        ),
    }
    let col = |title, right| Column { title, right };
    let columns = [
        col("sub-filter", true),
        col("buckets", true),
        col("bytes", true),
        col("CF.INFO Size after", true),
    ];
    let rows: Vec<Vec<String>> = p
        .sub_filters
        .iter()
        .enumerate()
        .map(|(i, s)| {
            vec![
                (i + 1).to_string(),
                fmt::int(s.buckets),
                fmt::int(s.bytes),
                fmt::int(s.size_after),
            ]
        })
        .collect();
    out.push_str(&format!("\n{}\n", style("sub-filters").bold()));
    out.push_str(&fmt::table(&columns, &rows, "  "));
    out.push_str(&format!(
        "  worst case: {} ({}), {} bytes ({}); CF.INFO Size {} ({})\n",
        fmt::count(p.sub_filters.len() as u64, "sub-filter"),
        fmt::count(p.expansions(), "expansion"),
        fmt::int(p.worst_bytes()),
        fmt::bytes(p.worst_bytes()),
        fmt::int(p.worst_size()),
        fmt::bytes(p.worst_size())
    ));
    out.push_str(&match p.bloom_equivalent() {
        Some(b) => format!(
            "  the same as a Bloom filter: BF.RESERVE key {} {} NONSCALING takes {} bytes \
             ({}, {:.2}× the first sub-filter), {}, BF.INFO Size {}; it never \
             expands, but cannot delete\n",
            b.error,
            p.capacity,
            fmt::int(b.bytes),
            fmt::bytes(b.bytes),
            b.bytes as f64 / p.first().bytes as f64,
            fmt::count(u64::from(b.hashes), "hash"),
            fmt::int(b.size)
        ),
        None => {
            "  no Bloom filter compares: at this bucket size every lookup may match\n".to_string()
        }
    });
    push_warnings(&mut out, warnings(args, p));
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

    fn args(line: &str) -> PlanArgs {
        let mut words = vec!["plan"];
        words.extend(line.split_whitespace());
        Wrap::try_parse_from(words).expect("valid").plan
    }

    #[test]
    fn same_numbers_as_the_core() {
        let a = args("--cuckoo --capacity 1000");
        let p = cuckoo_plan(&a).unwrap();
        assert_eq!(
            p,
            plan::plan(
                &CuckooParams {
                    capacity: 1000,
                    ..CuckooParams::default()
                },
                32
            )
            .unwrap()
        );
        let json = to_json(&a, &p);
        assert_eq!(json["size"], 1080);
        assert_eq!(json["expansions"], 31);
        let text = to_text(&a, &p);
        assert!(text.contains("CF.INFO Size 1,080"), "{text}");
        assert!(text.contains("typically expands after about"), "{text}");
        assert!(
            text.contains("BF.RESERVE key 0.01568627450980392 1000 NONSCALING takes 1,088 bytes"),
            "{text}"
        );
        assert_eq!(json["bloom_bytes"], 1088);
        // Bucket size 4 with many iterations: fuller before expanding.
        let a = args("--cuckoo --capacity 1e6 --bucket-size 4 --max-iterations 500 --expansion 0");
        let p = cuckoo_plan(&a).unwrap();
        assert_eq!(p.first().buckets, 262_144);
        assert_eq!(p.sub_filters.len(), 1);
        assert!(to_text(&a, &p).contains("never expands"));
    }

    #[test]
    fn reserve_rules_and_the_cap() {
        assert_eq!(
            params(&args("--cuckoo --capacity 3")).unwrap_err().code,
            crate::EXIT_USAGE
        );
        assert_eq!(
            params(&args("--cuckoo --capacity 100 --expansion 32769"))
                .unwrap_err()
                .code,
            crate::EXIT_USAGE
        );
        assert!(
            Wrap::try_parse_from(["plan", "--cuckoo", "--capacity", "9", "--error", "0.1"])
                .is_err()
        );
        assert!(Wrap::try_parse_from(["plan", "--capacity", "9", "--bucket-size", "4"]).is_err());
        let a = args("--cuckoo --capacity 1000 --max-filter-bytes 2120");
        let p = cuckoo_plan(&a).unwrap();
        let w = warnings(&a, &p);
        assert!(w.iter().any(|w| w.contains("refuse expansion 2")), "{w:?}");
        assert_eq!(to_json(&a, &p)["refused_at_sub_filter"], 3);
    }
}
