//! `ferrobloom plan` of a Bloom filter: its links, memory and false
//! positive rate before it exists, under the exact and pow2 policies,
//! computed offline by the same code as BF.PLAN.

use console::style;
use ferrobloom_core::bloom::plan::{self, Plan, PlanError, MAX_PLANNED_LINKS};
use ferrobloom_core::bloom::sizing::reported_size;
use ferrobloom_core::{ChainParams, Policy, SizingError};
use serde_json::{json, Value};

use super::{percent_fine, push_warnings, PlanArgs, Planned};
use crate::fmt::{self, Column};
use crate::{Failure, Result};

/// Links' capacity multiplier when --expansion is not given.
pub const DEFAULT_EXPANSION: u32 = 2;

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

/// The plans under both policies (or the one of --policy), for these
/// arguments.
pub fn plans(args: &PlanArgs) -> Plans {
    let capacity = args.capacity.unwrap_or(1);
    let items = args.items.unwrap_or(capacity);
    POLICIES
        .iter()
        .filter(|&&policy| args.policy.is_none_or(|p| p == policy))
        .map(|&policy| {
            let params = ChainParams {
                capacity,
                error: args.error(),
                growth: args.expansion.unwrap_or(DEFAULT_EXPANSION),
                nonscaling: args.nonscaling,
                policy,
            };
            (policy, plan::plan(&params, items))
        })
        .collect()
}

/// Each policy's plan, or why it cannot be made.
type Plans = Vec<(Policy, std::result::Result<Plan, PlanError>)>;

/// The Bloom filter plans of the command line.
pub struct BloomPlans<'a> {
    args: &'a PlanArgs,
    plans: Plans,
}

/// The plans for the command line; an error when no policy can plan it.
pub fn plan(args: &PlanArgs) -> Result<BloomPlans<'_>> {
    let plans = plans(args);
    if plans.iter().all(|(_, p)| p.is_err()) {
        let e = plans[0].1.clone().expect_err("all failed");
        return Err(Failure::new(plan_error(e)));
    }
    Ok(BloomPlans { args, plans })
}

impl Planned for BloomPlans<'_> {
    fn to_json(&self) -> Value {
        to_json(self.args, &self.plans)
    }

    fn to_text(&self) -> String {
        to_text(self.args, &self.plans)
    }
}

/// The link (index) whose creation the server's per-filter cap refuses:
/// the first after which the filter's size (BF.INFO Size) would exceed
/// `cap`, as the memory guard computes it; None when all fit (or no cap).
pub fn over_cap_link(p: &Plan, cap: u64) -> Option<usize> {
    if cap == 0 {
        return None;
    }
    (0..p.links.len()).find(|&i| reported_size(p.links[..=i].iter().map(|l| l.bytes)) > cap)
}

/// What the server's memory guard would refuse of this plan.
fn cap_warning(policy: Policy, p: &Plan, cap: u64) -> Option<String> {
    let i = over_cap_link(p, cap)?;
    let size = reported_size(p.links[..=i].iter().map(|l| l.bytes));
    let limit = format!(
        "over bf.max-filter-bytes ({} bytes, {}; --max-filter-bytes)",
        fmt::int(cap),
        fmt::bytes(cap)
    );
    let also = "A server also refuses a filter that would take it past its maxmemory, or past \
                90% of its memory.";
    if i == 0 {
        return Some(format!(
            "under the {} policy, the server would refuse to create this filter (ERR \
             Insufficient memory to create filter): its first link alone makes it {} bytes \
             ({}), {limit}. Lower the capacity or raise the error rate. {also}",
            policy.name(),
            fmt::int(size),
            fmt::bytes(size)
        ));
    }
    let held: u64 = p.links[..i].iter().map(|l| l.entries).sum();
    Some(format!(
        "under the {} policy, the server would refuse to add link {} (ERR problem inserting \
         into filter): the filter would then take {} bytes ({}), {limit}; it holds {} \
         before that, {}. {also}",
        policy.name(),
        i + 1,
        fmt::int(size),
        fmt::bytes(size),
        fmt::count(held, "item"),
        if p.items > held {
            format!(
                "so {} of the {} would be refused",
                fmt::int(p.items - held),
                fmt::count(p.items, "item")
            )
        } else {
            "more than the items planned for".to_string()
        }
    ))
}

/// The plan's warnings: items a NONSCALING filter refuses, and what the
/// server's memory guard refuses.
fn plan_warnings(args: &PlanArgs, policy: Policy, p: &Plan) -> Vec<String> {
    let mut out: Vec<String> = nonscaling_warning(policy, p).into_iter().collect();
    out.extend(cap_warning(policy, p, args.max_filter_bytes));
    out
}

fn nonscaling_warning(policy: Policy, p: &Plan) -> Option<String> {
    (p.refused_items > 0).then(|| {
        format!(
            "a NONSCALING filter holds at most {} under the {} policy: the server \
             would refuse {} of the {} (ERR non scaling filter is full). Raise the \
             capacity, or let the filter scale.",
            fmt::count(p.capacity, "item"),
            policy.name(),
            fmt::int(p.refused_items),
            fmt::count(p.items, "item")
        )
    })
}

fn to_json(args: &PlanArgs, plans: &[(Policy, std::result::Result<Plan, PlanError>)]) -> Value {
    let mut warnings = Vec::new();
    let policies: Vec<Value> = plans
        .iter()
        .map(|(policy, p)| match p {
            Ok(p) => {
                warnings.extend(plan_warnings(args, *policy, p));
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
                    "refused_at_link": over_cap_link(p, args.max_filter_bytes).map(|i| i + 1),
                })
            }
            Err(e) => json!({"policy": policy.name(), "error": plan_error(*e)}),
        })
        .collect();
    json!({
        "capacity": args.capacity.unwrap_or(1),
        "error": args.error(),
        "expansion": args.expansion.unwrap_or(DEFAULT_EXPANSION),
        "nonscaling": args.nonscaling,
        "items": args.items.unwrap_or(args.capacity.unwrap_or(1)),
        "max_filter_bytes": args.max_filter_bytes,
        "policies": policies,
        "warnings": warnings,
    })
}

fn to_text(args: &PlanArgs, plans: &[(Policy, std::result::Result<Plan, PlanError>)]) -> String {
    let capacity = args.capacity.unwrap_or(1);
    let items = args.items.unwrap_or(capacity);
    let mode = if args.nonscaling {
        "NONSCALING".to_string()
    } else {
        format!(
            "scaling, expansion {}",
            args.expansion.unwrap_or(DEFAULT_EXPANSION)
        )
    };
    let mut out = format!(
        "Filter: capacity {}, error rate {} ({mode}), planned for {}\n",
        fmt::int(capacity),
        fmt::g(args.error(), 6),
        fmt::count(items, "item")
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
            "  total: {}, capacity {}\n",
            fmt::count(p.links.len() as u64, "link"),
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
            "  false positive rate with {}: {} ({})\n",
            fmt::count(held, "item"),
            fmt::g(p.fpr, 4),
            percent_fine(p.fpr)
        ));
        warnings.extend(plan_warnings(args, *policy, p));
    }
    push_warnings(&mut out, warnings);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::DEFAULT_MAX_FILTER_BYTES;

    fn args(capacity: u64, error: f64, items: Option<u64>, cap: u64) -> PlanArgs {
        PlanArgs {
            capacity: Some(capacity),
            error: Some(error),
            items,
            max_filter_bytes: cap,
            ..super::super::test_args()
        }
    }

    fn exact(a: &PlanArgs) -> Plan {
        plans(a).remove(0).1.expect("plans")
    }

    #[test]
    fn filters_over_the_cap_are_warned_about() {
        // An exabyte: refused from the start.
        let a = args(
            1_000_000_000_000_000_000,
            0.01,
            None,
            DEFAULT_MAX_FILTER_BYTES,
        );
        let p = exact(&a);
        assert_eq!(over_cap_link(&p, a.max_filter_bytes), Some(0));
        let w = plan_warnings(&a, Policy::Exact, &p);
        assert_eq!(w.len(), 1);
        assert!(
            w[0].contains("would refuse to create this filter"),
            "{}",
            w[0]
        );
        assert!(w[0].contains("4,294,967,296"), "{}", w[0]);
        assert!(w[0].contains("1.2 EiB"), "{}", w[0]);
        let json = to_json(&a, &plans(&a));
        assert_eq!(json["policies"][0]["refused_at_link"], 1);
        assert_eq!(json["warnings"].as_array().unwrap().len(), 1);
        // No cap: no warning.
        assert_eq!(over_cap_link(&p, 0), None);

        // A scaling filter stops growing at the link that crosses the cap:
        // links of 1.9, 4.0 and 8.7 GiB.
        let a = args(
            1_000_000_000,
            0.001,
            Some(8_000_000_000),
            DEFAULT_MAX_FILTER_BYTES,
        );
        let p = exact(&a);
        assert_eq!(p.links.len(), 4);
        assert_eq!(over_cap_link(&p, a.max_filter_bytes), Some(1));
        let w = plan_warnings(&a, Policy::Exact, &p);
        assert!(w[0].contains("refuse to add link 2"), "{}", w[0]);
        assert!(
            w[0].contains("so 7,000,000,000 of the 8,000,000,000 items would be refused"),
            "{}",
            w[0]
        );
        // The server's own arithmetic: one link fits, two do not.
        let two = reported_size(p.links[..2].iter().map(|l| l.bytes));
        assert!(reported_size([p.links[0].bytes]) <= DEFAULT_MAX_FILTER_BYTES);
        assert!(two > DEFAULT_MAX_FILTER_BYTES);
        assert_eq!(over_cap_link(&p, two), Some(2));
        assert_eq!(over_cap_link(&p, two - 1), Some(1));

        // Small filters: nothing to say.
        let a = args(1000, 0.01, None, DEFAULT_MAX_FILTER_BYTES);
        assert!(plan_warnings(&a, Policy::Exact, &exact(&a)).is_empty());
        assert!(to_text(&a, &plans(&a)).find("WARNING").is_none());
    }
}
