//! `ferrobloom plan`: the links, memory and false positive rate of a filter
//! before it exists, computed offline by the same code as BF.PLAN.

use clap::Args;
use console::style;
use ferrobloom_core::bloom::plan::{self, Plan, PlanError, MAX_PLANNED_LINKS};
use ferrobloom_core::bloom::sizing::reported_size;
use ferrobloom_core::{ChainParams, Policy, SizingError};
use serde_json::{json, Value};

use crate::fmt::{self, Column};
use crate::window_plan as window;
use crate::{Failure, Result};
use ferrobloom_core::window::Span;

/// Size a filter offline: links, memory, false positive rate.
///
/// Computes, without a server, the links a filter will have to hold
/// --items items, what each costs, the total memory (bit arrays and BF.INFO
/// Size) and the expected false positive rate, under the exact and pow2
/// allocation policies. The numbers are BF.PLAN's (same code).
///
/// With --cuckoo, sizes a Cuckoo filter (CF.RESERVE): its first
/// sub-filter, every expansion up to the cf-max-expansions limit, the false
/// positive bound, and the load at which the first expansion typically
/// happens (measured); the numbers are CF.PLAN's.
///
/// With --window, sizes a windowed filter (BF.RESERVE ... WINDOW): its
/// generations, their error rate, its memory (fixed at creation), how late
/// it forgets, and what a plain filter or filters rotated by hand would
/// take instead; the numbers are BF.PLAN ... WINDOW's.
#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  ferrobloom plan --capacity 10000000 --error 0.001 --items 25000000
  ferrobloom plan --capacity 1000000 --error 0.01 --nonscaling --items 1500000 --json
  ferrobloom plan --window 30d --per-day 500000 --error 0.001
  ferrobloom plan --window 12h --rate 2000/m --error 0.01 --generations 12
  ferrobloom plan --window 1000000 --error 0.001
  ferrobloom plan --cuckoo --capacity 1000000 --bucket-size 4")]
pub struct PlanArgs {
    /// Capacity of the first link (BF.RESERVE's capacity): a whole number
    /// such as 1000000, 1_000_000, 1,000,000 or 1e6. With --window: the
    /// items expected within one window (or give --rate / --per-day).
    #[arg(
        long,
        value_parser = parse_positive,
        allow_negative_numbers = true,
        required_unless_present = "window"
    )]
    pub capacity: Option<u64>,
    /// Target error rate, between 0 and 1 (BF.RESERVE's error_rate).
    #[arg(
        long,
        value_parser = parse_error_rate,
        allow_negative_numbers = true,
        required_unless_present = "cuckoo"
    )]
    pub error: Option<f64>,
    /// Capacity multiplier of each new link [default: 2]. With --cuckoo:
    /// CF.RESERVE's EXPANSION, 0 to 32768 [default: 1].
    #[arg(long, value_parser = parse_expansion, allow_negative_numbers = true)]
    pub expansion: Option<u32>,
    /// Plan a Cuckoo filter (CF.RESERVE --capacity) instead of a Bloom
    /// filter.
    #[arg(
        long,
        conflicts_with_all = ["error", "window", "nonscaling", "items", "policy"]
    )]
    pub cuckoo: bool,
    /// With --cuckoo: slots per bucket, 1 to 255 (BUCKETSIZE) [default: 2].
    #[arg(
        long,
        requires = "cuckoo",
        value_parser = clap::value_parser!(u8).range(1..),
    )]
    pub bucket_size: Option<u8>,
    /// With --cuckoo: kick-outs before an insert expands the filter, 1 to
    /// 65535 (MAXITERATIONS) [default: 20].
    #[arg(
        long,
        requires = "cuckoo",
        value_parser = clap::value_parser!(u16).range(1..),
    )]
    pub max_iterations: Option<u16>,
    /// With --cuckoo: the server's bf.cf-max-expansions (CF_MAX_EXPANSIONS):
    /// an add is refused once the filter has this many sub-filters.
    #[arg(
        long,
        requires = "cuckoo",
        default_value_t = ferrobloom_core::cuckoo::sizing::DEFAULT_MAX_EXPANSIONS,
        value_parser = clap::value_parser!(u64).range(1..=65535),
    )]
    pub max_expansions: u64,
    /// A filter that never adds links (items beyond its capacity are refused).
    #[arg(long)]
    pub nonscaling: bool,
    /// Items to plan for [default: the capacity].
    #[arg(long, value_parser = parse_count, allow_negative_numbers = true)]
    pub items: Option<u64>,
    /// Only this allocation policy, exact or pow2 [default: both; with
    /// --window: exact].
    #[arg(long, value_parser = parse_policy)]
    pub policy: Option<Policy>,
    /// A windowed filter that forgets items older than SPAN: a duration
    /// (30d, 12h, 90m, 3600s) or a whole number N (the last N items).
    #[arg(long, value_name = "SPAN", value_parser = window::parse_span)]
    pub window: Option<Span>,
    /// Generations the window is cut into, 1 to 64 (with --window)
    /// [default: 8].
    #[arg(
        long,
        value_name = "G",
        requires = "window",
        value_parser = window::parse_generations,
        allow_negative_numbers = true
    )]
    pub generations: Option<u32>,
    /// Items arriving per unit of time, N/s, N/m, N/h or N/d (with a time
    /// --window): the capacity is the rate times the window.
    #[arg(
        long,
        value_name = "N/UNIT",
        requires = "window",
        conflicts_with = "capacity",
        value_parser = window::parse_rate,
        allow_negative_numbers = true
    )]
    pub rate: Option<window::Rate>,
    /// Items arriving per day (--rate N/d).
    #[arg(
        long,
        value_name = "N",
        requires = "window",
        conflicts_with_all = ["capacity", "rate"],
        value_parser = parse_positive,
        allow_negative_numbers = true
    )]
    pub per_day: Option<u64>,
    /// The server's bf.max-filter-bytes, to warn about filters it would
    /// refuse (0: no limit).
    #[arg(
        long,
        value_name = "BYTES",
        default_value_t = DEFAULT_MAX_FILTER_BYTES,
        value_parser = parse_count,
        allow_negative_numbers = true
    )]
    pub max_filter_bytes: u64,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// Links' capacity multiplier when --expansion is not given.
pub const DEFAULT_EXPANSION: u32 = 2;

/// FerroBloom's default bf.max-filter-bytes (4 GiB).
pub const DEFAULT_MAX_FILTER_BYTES: u64 = 4 << 30;

/// A whole number written `1000000`, `1_000_000`, `1,000,000` (groups of
/// three digits) or `1e6`, `1.5e6`, `1000.0` (when the value is a whole
/// number).
pub fn parse_whole(text: &str) -> std::result::Result<u64, String> {
    const FORMS: &str = "expected a whole number such as 1000000, 1_000_000, 1,000,000 or 1e6";
    let t = text.trim();
    if t.starts_with('-') {
        return Err("must be positive".into());
    }
    let t = t.strip_prefix('+').unwrap_or(t);
    let (mantissa, exponent) = match t.find(['e', 'E']) {
        Some(i) => (&t[..i], Some(&t[i + 1..])),
        None => (t, None),
    };
    let (int_part, frac_part) = match mantissa.split_once('.') {
        Some((i, f)) => (i, f),
        None => (mantissa, ""),
    };
    let int_digits = if int_part.contains(',') {
        let groups: Vec<&str> = int_part.split(',').collect();
        let well_grouped =
            (1..=3).contains(&groups[0].len()) && groups[1..].iter().all(|g| g.len() == 3);
        if !well_grouped {
            return Err(format!("{FORMS} (commas separate groups of three digits)"));
        }
        groups.concat()
    } else {
        int_part.to_string()
    };
    let clean = |part: &str| -> Option<String> {
        // Underscores between digits only.
        if part.starts_with('_') || part.ends_with('_') || part.contains("__") {
            return None;
        }
        let digits: String = part.chars().filter(|c| *c != '_').collect();
        digits.chars().all(|c| c.is_ascii_digit()).then_some(digits)
    };
    let (Some(int_digits), Some(frac_digits)) = (clean(&int_digits), clean(frac_part)) else {
        return Err(FORMS.into());
    };
    if int_digits.is_empty() && frac_digits.is_empty() {
        return Err(FORMS.into());
    }
    let exponent: i64 = match exponent {
        None => 0,
        Some(e) => {
            let e = e.strip_prefix('+').unwrap_or(e);
            if e.is_empty() || e.len() > 4 || !e.chars().all(|c| c.is_ascii_digit() || c == '-') {
                return Err(FORMS.into());
            }
            e.parse().map_err(|_| FORMS.to_string())?
        }
    };
    // value = digits × 10^(exponent - fraction digits), exactly.
    let digits = format!("{int_digits}{frac_digits}");
    let digits = digits.trim_start_matches('0');
    let mut scale = exponent - frac_digits.len() as i64;
    let mut digits = digits.to_string();
    while scale < 0 {
        match digits.pop() {
            Some('0') => scale += 1,
            Some(_) => return Err(format!("{text} is not a whole number")),
            None => break,
        }
    }
    if digits.is_empty() {
        return Ok(0);
    }
    let too_large = || format!("{text} is too large (at most {})", u64::MAX);
    let mut value: u64 = digits.parse().map_err(|_| too_large())?;
    for _ in 0..scale.max(0) {
        value = value.checked_mul(10).ok_or_else(too_large)?;
    }
    Ok(value)
}

fn parse_count(text: &str) -> std::result::Result<u64, String> {
    parse_whole(text).map_err(|e| {
        if e == "must be positive" {
            "must not be negative".into()
        } else {
            e
        }
    })
}

fn parse_positive(text: &str) -> std::result::Result<u64, String> {
    match parse_whole(text)? {
        0 => Err("must be positive".into()),
        n => Ok(n),
    }
}

/// An expansion: 0 is only valid for a Cuckoo filter (checked later).
fn parse_expansion(text: &str) -> std::result::Result<u32, String> {
    let n = parse_whole(text)?;
    u32::try_from(n).map_err(|_| format!("{text} is too large (at most {})", u32::MAX))
}

fn parse_policy(text: &str) -> std::result::Result<Policy, String> {
    match text.to_ascii_lowercase().as_str() {
        "exact" => Ok(Policy::Exact),
        "pow2" => Ok(Policy::Pow2),
        _ => Err("expected exact or pow2".into()),
    }
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

/// The plans under both policies (or the one of --policy), for these
/// arguments.
pub fn plans(args: &PlanArgs) -> Vec<(Policy, std::result::Result<Plan, PlanError>)> {
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

impl PlanArgs {
    /// The error rate of a Bloom filter plan (clap requires it without
    /// --cuckoo).
    pub fn error(&self) -> f64 {
        self.error.expect("--error is required for a Bloom filter")
    }
}

pub fn run(args: &PlanArgs) -> Result<u8> {
    if args.cuckoo {
        return crate::cuckoo_plan::run(args);
    }
    if args.bucket_size.is_some() || args.max_iterations.is_some() {
        return Err(Failure {
            message: "--bucket-size and --max-iterations size a Cuckoo filter: add --cuckoo".into(),
            code: crate::EXIT_USAGE,
        });
    }
    if args.expansion == Some(0) {
        return Err(Failure {
            message: "--expansion must be positive for a Bloom filter (0 is a Cuckoo \
                      filter's EXPANSION: --cuckoo)"
                .into(),
            code: crate::EXIT_USAGE,
        });
    }
    if args.window.is_some() {
        return window::run(args);
    }
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
    for w in warnings {
        out.push_str(&format!("\n{} {w}\n", style("WARNING:").yellow().bold()));
    }
    out
}

/// A small probability as a percentage with enough digits to be useful.
pub fn percent_fine(p: f64) -> String {
    format!("{}%", fmt::g(p * 100.0, 3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers_in_several_forms() {
        for (text, value) in [
            ("1000000", 1_000_000),
            ("1_000_000", 1_000_000),
            ("1,000,000", 1_000_000),
            ("1e6", 1_000_000),
            ("1E6", 1_000_000),
            ("1e+6", 1_000_000),
            ("1.5e6", 1_500_000),
            ("2.50e1", 25),
            ("1000.0", 1000),
            ("1000e-3", 1),
            ("1e18", 1_000_000_000_000_000_000),
            ("18446744073709551615", u64::MAX),
            ("0", 0),
            (" 42 ", 42),
            ("+7", 7),
        ] {
            assert_eq!(parse_whole(text), Ok(value), "{text}");
        }
        for (text, why) in [
            ("1.5", "not a whole number"),
            ("1e-1", "not a whole number"),
            ("15e-1", "not a whole number"),
            ("1e20", "too large"),
            ("18446744073709551616", "too large"),
            ("-5", "must be positive"),
            ("-1e3", "must be positive"),
            ("1,0", "groups of three"),
            ("1,0000", "groups of three"),
            ("abc", "expected a whole number"),
            ("", "expected a whole number"),
            ("1__0", "expected a whole number"),
            ("_1", "expected a whole number"),
            ("1e", "expected a whole number"),
            ("0x10", "expected a whole number"),
            ("inf", "expected a whole number"),
        ] {
            let e = parse_whole(text).expect_err(text);
            assert!(e.contains(why), "{text}: {e}");
        }
        assert_eq!(parse_positive("0"), Err("must be positive".into()));
        assert_eq!(parse_count("-1"), Err("must not be negative".into()));
        assert_eq!(parse_expansion("4"), Ok(4));
        assert_eq!(parse_expansion("0"), Ok(0));
        assert!(parse_expansion("1e10").unwrap_err().contains("too large"));
    }

    fn args(capacity: u64, error: f64, items: Option<u64>, cap: u64) -> PlanArgs {
        PlanArgs {
            capacity: Some(capacity),
            error: Some(error),
            expansion: None,
            cuckoo: false,
            bucket_size: None,
            max_iterations: None,
            max_expansions: 32,
            nonscaling: false,
            items,
            policy: None,
            window: None,
            generations: None,
            rate: None,
            per_day: None,
            json: false,
            max_filter_bytes: cap,
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
