//! `ferrobloom plan`: the links, memory and false positive rate of a filter
//! before it exists, computed offline by the same code as BF.PLAN.

use clap::Args;
use console::style;
use ferrobloom_core::plan::{self, Plan, PlanError, MAX_PLANNED_LINKS};
use ferrobloom_core::{ChainParams, Policy, SizingError};
use serde_json::{json, Value};

use crate::fmt::{self, Column};
use crate::{Failure, Result};

/// Size a filter offline: links, memory, false positive rate.
///
/// Computes, without a server, the links a filter will have to hold
/// --items items, what each costs, the total memory (bit arrays and BF.INFO
/// Size) and the expected false positive rate, under the exact and pow2
/// allocation policies. The numbers are BF.PLAN's (same code).
#[derive(Args, Debug)]
#[command(after_help = "\
Example:
  ferrobloom plan --capacity 10000000 --error 0.001 --items 25000000
  ferrobloom plan --capacity 1000000 --error 0.01 --nonscaling --items 1500000 --json")]
pub struct PlanArgs {
    /// Capacity of the first link (BF.RESERVE's capacity).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub capacity: u64,
    /// Target error rate, between 0 and 1 (BF.RESERVE's error_rate).
    #[arg(long, value_parser = parse_error_rate)]
    pub error: f64,
    /// Capacity multiplier of each new link.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..))]
    pub expansion: u32,
    /// A filter that never adds links (items beyond its capacity are refused).
    #[arg(long)]
    pub nonscaling: bool,
    /// Items to plan for [default: the capacity].
    #[arg(long)]
    pub items: Option<u64>,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
}

fn parse_error_rate(text: &str) -> std::result::Result<f64, String> {
    match text.parse::<f64>() {
        Ok(e) if e > 0.0 && e < 1.0 => Ok(e),
        _ => Err("expected a number between 0 and 1 (exclusive)".into()),
    }
}

const POLICIES: [Policy; 2] = [Policy::Exact, Policy::Pow2];

fn plan_error(e: PlanError) -> String {
    match e {
        PlanError::TooManyLinks => format!(
            "holding the items would take more than {MAX_PLANNED_LINKS} links; \
             raise the capacity or the expansion"
        ),
        PlanError::Sizing(SizingError::TooLarge) => "the filter would be too large to size".into(),
        PlanError::Sizing(SizingError::InvalidParameters) => {
            "a link's error rate underflows to zero".into()
        }
    }
}

/// The plans under both policies, for these arguments.
pub fn plans(args: &PlanArgs) -> Vec<(Policy, std::result::Result<Plan, PlanError>)> {
    let items = args.items.unwrap_or(args.capacity);
    POLICIES
        .iter()
        .map(|&policy| {
            let params = ChainParams {
                capacity: args.capacity,
                error: args.error,
                growth: args.expansion,
                nonscaling: args.nonscaling,
                policy,
            };
            (policy, plan::plan(&params, items))
        })
        .collect()
}

fn warning(policy: Policy, p: &Plan) -> Option<String> {
    (p.refused_items > 0).then(|| {
        format!(
            "a NONSCALING filter holds at most {} items under the {} policy: the server \
             would refuse {} of the {} items (ERR non scaling filter is full). Raise the \
             capacity, or let the filter scale.",
            fmt::int(p.capacity),
            policy.name(),
            fmt::int(p.refused_items),
            fmt::int(p.items)
        )
    })
}

pub fn run(args: &PlanArgs) -> Result<u8> {
    let plans = plans(args);
    if plans.iter().all(|(_, p)| p.is_err()) {
        let e = plans[0].1.clone().expect_err("all failed");
        return Err(Failure::new(plan_error(e)));
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&to_json(args, &plans)).expect("JSON")
        );
    } else {
        print!("{}", to_text(args, &plans));
    }
    Ok(0)
}

fn to_json(args: &PlanArgs, plans: &[(Policy, std::result::Result<Plan, PlanError>)]) -> Value {
    let mut warnings = Vec::new();
    let policies: Vec<Value> = plans
        .iter()
        .map(|(policy, p)| match p {
            Ok(p) => {
                warnings.extend(warning(*policy, p));
                json!({
                    "policy": policy.name(),
                    "links": p.links.iter().map(|l| json!({
                        "capacity": l.entries,
                        "error": l.error,
                        "hashes": l.hashes,
                        "bits": l.modulus(),
                        "bytes": l.bytes,
                    })).collect::<Vec<_>>(),
                    "capacity": p.capacity,
                    "bytes": p.data_bytes,
                    "size": p.reported_size,
                    "items": p.items,
                    "refused_items": p.refused_items,
                    "fpr": p.fpr,
                })
            }
            Err(e) => json!({"policy": policy.name(), "error": plan_error(*e)}),
        })
        .collect();
    json!({
        "capacity": args.capacity,
        "error": args.error,
        "expansion": args.expansion,
        "nonscaling": args.nonscaling,
        "items": args.items.unwrap_or(args.capacity),
        "policies": policies,
        "warnings": warnings,
    })
}

fn to_text(args: &PlanArgs, plans: &[(Policy, std::result::Result<Plan, PlanError>)]) -> String {
    let items = args.items.unwrap_or(args.capacity);
    let mode = if args.nonscaling {
        "NONSCALING".to_string()
    } else {
        format!("scaling, expansion {}", args.expansion)
    };
    let mut out = format!(
        "Filter: capacity {}, error rate {} ({mode}), planned for {} items\n",
        fmt::int(args.capacity),
        fmt::g(args.error, 6),
        fmt::int(items)
    );
    let columns = [
        Column {
            title: "link",
            right: true,
        },
        Column {
            title: "capacity",
            right: true,
        },
        Column {
            title: "error",
            right: true,
        },
        Column {
            title: "hashes",
            right: true,
        },
        Column {
            title: "bits",
            right: true,
        },
        Column {
            title: "bytes",
            right: true,
        },
    ];
    let mut warnings = Vec::new();
    for (policy, p) in plans {
        let title = match policy {
            Policy::Exact => "exact policy (the default: BF.RESERVE, RedisBloom 2.2 and later)",
            Policy::Pow2 => "pow2 policy (POLICY pow2: power-of-two links, RedisBloom before 2.2)",
        };
        out.push_str(&format!("\n{}\n", style(title).bold()));
        let p = match p {
            Ok(p) => p,
            Err(e) => {
                out.push_str(&format!("  cannot be planned: {}\n", plan_error(*e)));
                continue;
            }
        };
        let rows: Vec<Vec<String>> = p
            .links
            .iter()
            .enumerate()
            .map(|(i, l)| {
                vec![
                    (i + 1).to_string(),
                    fmt::int(l.entries),
                    fmt::g(l.error, 6),
                    l.hashes.to_string(),
                    fmt::int(l.modulus()),
                    fmt::int(l.bytes),
                ]
            })
            .collect();
        out.push_str(&fmt::table(&columns, &rows, "  "));
        out.push_str(&format!(
            "  total: {} {}, capacity {}\n",
            p.links.len(),
            if p.links.len() == 1 { "link" } else { "links" },
            fmt::int(p.capacity)
        ));
        out.push_str(&format!(
            "  memory: {} bytes of bit arrays ({}); BF.INFO Size {} ({})\n",
            fmt::int(p.data_bytes),
            fmt::bytes(p.data_bytes),
            fmt::int(p.reported_size),
            fmt::bytes(p.reported_size)
        ));
        let held = p.items - p.refused_items;
        out.push_str(&format!(
            "  false positive rate with {} items: {} ({})\n",
            fmt::int(held),
            fmt::g(p.fpr, 4),
            percent_fine(p.fpr)
        ));
        warnings.extend(warning(*policy, p));
    }
    for w in warnings {
        out.push_str(&format!("\n{} {w}\n", style("WARNING:").yellow().bold()));
    }
    out
}

/// A small probability as a percentage with enough digits to be useful.
fn percent_fine(p: f64) -> String {
    format!("{}%", fmt::g(p * 100.0, 3))
}
