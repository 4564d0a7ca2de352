//! `ferrobloom plan --window`: the shape and memory of a windowed filter
//! before it exists (BF.PLAN ... WINDOW, same code), how late it forgets,
//! and what a plain filter or filters rotated by hand would take instead.

use console::style;
use ferrobloom_core::window::sizing::generation_error;
use ferrobloom_core::window::{
    Span, WindowParams, WindowSizingError, WindowSpec, DEFAULT_GENERATIONS, MAX_GENERATIONS,
};
use ferrobloom_core::{LinkSpec, Policy, SizingError};
use serde_json::{json, Value};

use super::flags::{Rate, DAY_MS, HOUR_MS, MINUTE_MS, SECOND_MS};
use super::{percent_fine, push_warnings, usage, PlanArgs, Planned};
use crate::fmt::{self, Column};
use crate::{Failure, Result};

/// Filters rotated by hand instead: one per period (a day, or an hour for
/// windows shorter than a day), the current one and those of the window
/// before it all checked, the oldest deleted.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HandRotated {
    /// `1d` or `1h`.
    pub period_ms: u64,
    /// Filters kept: the periods of a window, plus the current one.
    pub filters: u64,
    /// Items per filter.
    pub capacity_each: u64,
    /// Each filter's error rate so that a check of all of them is wrong
    /// with probability at most the error rate asked for.
    pub overall_error_each: f64,
    pub overall_bytes: u64,
    /// All filters at the error rate asked for, each.
    pub each_bytes: u64,
    /// What a check of all of them then answers falsely.
    pub each_fpr: f64,
}

impl HandRotated {
    /// None for an item window, or a time window that is not a whole
    /// number of days or hours.
    pub fn of(spec: &WindowSpec) -> Option<HandRotated> {
        let Span::Time { ms } = spec.params.span else {
            return None;
        };
        let period_ms = [DAY_MS, HOUR_MS]
            .into_iter()
            .find(|p| ms % p == 0 && ms >= *p)?;
        let periods = ms / period_ms;
        let filters = periods.checked_add(1)?;
        let capacity_each = spec.params.capacity.div_ceil(periods);
        let policy = spec.params.policy;
        let error = spec.params.error;
        // The same formula as a window's generations, for `periods`
        // generations: `periods + 1` filters checked.
        let overall_error_each = generation_error(error, u32::try_from(periods).ok()?);
        let overall = LinkSpec::new(capacity_each, overall_error_each, policy).ok()?;
        let each = LinkSpec::new(capacity_each, error, policy).ok()?;
        Some(HandRotated {
            period_ms,
            filters,
            capacity_each,
            overall_error_each,
            overall_bytes: overall.bytes.checked_mul(filters)?,
            each_bytes: each.bytes.checked_mul(filters)?,
            each_fpr: -(filters as f64 * (-error).ln_1p()).exp_m1(),
        })
    }

    fn period_word(&self) -> &'static str {
        if self.period_ms == DAY_MS {
            "daily"
        } else {
            "hourly"
        }
    }

    fn period_name(&self) -> &'static str {
        if self.period_ms == DAY_MS {
            "day"
        } else {
            "hour"
        }
    }
}

/// A windowed filter's plan.
#[derive(Clone, Debug)]
pub struct WindowPlan {
    pub spec: WindowSpec,
    pub rate: Option<Rate>,
    /// One plain filter holding one window's items (BF.PLAN's
    /// `plain_filter_bytes`).
    pub plain_bytes: u64,
    pub hand: Option<HandRotated>,
    pub max_filter_bytes: u64,
}

impl WindowPlan {
    /// The plan for the command line's options; usage errors for options
    /// that do not apply to a window.
    pub fn new(args: &PlanArgs) -> Result<WindowPlan> {
        let span = args.window.expect("a window");
        if args.expansion.is_some() {
            return Err(usage(
                "--expansion does not apply to a windowed filter: a generation that receives \
                 more than its share grows by 2 (--nonscaling keeps the memory planned)",
            ));
        }
        if args.items.is_some() {
            return Err(usage(
                "--items does not apply to a windowed filter: give the items expected within \
                 one window (--capacity, --rate or --per-day)",
            ));
        }
        let rate = args.rate.or(args.per_day.map(|items| Rate {
            items,
            per_ms: DAY_MS,
        }));
        let capacity = match (span, args.capacity, rate) {
            (Span::Items { .. }, _, Some(_)) => {
                return Err(usage(
                    "--rate and --per-day apply to a time window; an item window (--window N) \
                     holds the last N items: give --capacity, or nothing",
                ))
            }
            (_, Some(c), _) => c,
            // An item window holds exactly `count` items per window.
            (Span::Items { count }, None, None) => count,
            (Span::Time { ms }, None, Some(r)) => r.within(ms).ok_or_else(|| {
                usage(format!(
                    "--rate {}/{} over {} is too many items (at most {})",
                    r.items,
                    r.unit(),
                    span.display(),
                    u64::MAX
                ))
            })?,
            (Span::Time { .. }, None, None) => {
                return Err(usage(
                    "a time window needs the items expected within it: --capacity N (per \
                     window), --rate N/UNIT or --per-day N",
                ))
            }
        };
        let params = WindowParams {
            error: args.error(),
            capacity,
            span,
            generations: args.generations.unwrap_or(DEFAULT_GENERATIONS),
            policy: args.policy.unwrap_or(Policy::Exact),
            scaling: !args.nonscaling,
        };
        let spec = WindowSpec::new(&params).map_err(|e| match e {
            WindowSizingError::SpanTooShort => {
                usage("the window is shorter than one millisecond per generation")
            }
            WindowSizingError::Generations => usage(format!(
                "--generations must be a whole number from 1 to {MAX_GENERATIONS}"
            )),
            WindowSizingError::GenerationsOverItems => usage(
                "--generations must not exceed the number of items in an item window \
                 (each generation holds at least one item)",
            ),
            WindowSizingError::Sizing(SizingError::TooLarge) => {
                Failure::new("the filter would be too large to size")
            }
            WindowSizingError::Sizing(SizingError::InvalidParameters) => {
                Failure::new("a generation's error rate underflows to zero")
            }
        })?;
        let plain_bytes = LinkSpec::new(capacity, params.error, params.policy)
            .map(|l| l.bytes)
            .unwrap_or(0);
        Ok(WindowPlan {
            hand: HandRotated::of(&spec),
            spec,
            rate,
            plain_bytes,
            max_filter_bytes: args.max_filter_bytes,
        })
    }

    fn params(&self) -> &WindowParams {
        &self.spec.params
    }

    /// The span of one generation, as BF.PLAN writes it.
    pub fn generation_span(&self) -> Span {
        match self.params().span {
            Span::Time { .. } => Span::Time {
                ms: self.spec.generation_span,
            },
            Span::Items { .. } => Span::Items {
                count: self.spec.generation_span,
            },
        }
    }

    /// The span of one generation for people: `90h`, `1,000 items`.
    fn generation_length(&self) -> String {
        match self.params().span {
            Span::Time { .. } => self.generation_span().display(),
            // N items spread over G generations: some take one more.
            Span::Items { .. } if self.spec.shortest_span() < self.spec.generation_span => format!(
                "{} or {} items",
                fmt::int(self.spec.shortest_span()),
                fmt::int(self.spec.generation_span)
            ),
            Span::Items { .. } => fmt::count(self.spec.generation_span, "item"),
        }
    }

    /// How late an item may be forgotten: one generation of a time window,
    /// `ceil(N/G) - 1` items of an item window.
    fn late_length(&self) -> String {
        match self.params().span {
            Span::Time { .. } => self.generation_span().display(),
            Span::Items { .. } => fmt::count(self.spec.slack(), "item"),
        }
    }

    /// What a steady 2x and 10x the planned items per window cost: memory
    /// when a time window scales, its false positive rate with NONSCALING;
    /// nothing for an item window (it keeps its last N items whatever the
    /// rate).
    fn burst_words(&self) -> String {
        let p = self.params();
        if !p.span.is_time() {
            return "an item window keeps its last N items whatever the rate: a burst \
                    rotates generations sooner, and costs neither memory nor false positives"
                .to_string();
        }
        let [two, ten] = [2.0, 10.0].map(|f| self.spec.burst(f));
        if p.scaling {
            format!(
                "2x the planned items per window takes {} bytes ({}) at a false positive rate of {}; \
                 10x takes {} bytes ({}) at {}",
                fmt::int(two.bytes),
                fmt::bytes(two.bytes),
                fmt::g(two.fpr, 3),
                fmt::int(ten.bytes),
                fmt::bytes(ten.bytes),
                fmt::g(ten.fpr, 3)
            )
        } else {
            format!(
                "NONSCALING keeps the memory; 2x the planned items per window raises the false \
                 positive rate to {} ({}), 10x to {} ({})",
                fmt::g(two.fpr, 3),
                percent_fine(two.fpr),
                fmt::g(ten.fpr, 3),
                percent_fine(ten.fpr)
            )
        }
    }

    /// Whether the server's bf.max-filter-bytes refuses the filter.
    pub fn over_cap(&self) -> bool {
        self.max_filter_bytes > 0 && self.spec.bytes > self.max_filter_bytes
    }

    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.over_cap() {
            out.push(format!(
                "the server would refuse to create this windowed filter (ERR Insufficient \
                 memory to create filter): it takes {} bytes ({}), over bf.max-filter-bytes \
                 ({} bytes, {}; --max-filter-bytes). Raise the error rate, shorten the window \
                 or expect fewer items. A server also refuses a filter that would take it \
                 past its maxmemory, or past 90% of its memory.",
                fmt::int(self.spec.bytes),
                fmt::bytes(self.spec.bytes),
                fmt::int(self.max_filter_bytes),
                fmt::bytes(self.max_filter_bytes)
            ));
        }
        out
    }

    /// The generation span in words: `90h (3.75 days, 12.5% of the
    /// window)`, `125,000 items (12.5% of the window)`.
    fn slack_words(&self) -> String {
        let share = format!(
            "{}% of the window",
            fmt::g(100.0 / f64::from(self.params().generations), 3)
        );
        match self.params().span {
            Span::Time { .. } => {
                let span = self.generation_span().display();
                let human = human_duration(self.spec.generation_span);
                if human == span {
                    format!("{span} ({share})")
                } else {
                    format!("{span} ({human}, {share})")
                }
            }
            Span::Items { count } => {
                let late = self.spec.slack();
                let share = format!(
                    "{}% of the window",
                    fmt::g(100.0 * late as f64 / count as f64, 3)
                );
                format!("{} ({share})", fmt::count(late, "item"))
            }
        }
    }

    pub fn to_json(&self) -> Value {
        let p = self.params();
        let g = self.generation_span();
        let hand = self.hand.map(|h| {
            json!({
                "period": Span::Time { ms: h.period_ms }.display(),
                "filters": h.filters,
                "capacity_each": h.capacity_each,
                "error_overall": {
                    "error_each": h.overall_error_each,
                    "bytes": h.overall_bytes,
                    "fpr": p.error,
                },
                "error_each": {
                    "error_each": p.error,
                    "bytes": h.each_bytes,
                    "fpr": h.each_fpr,
                },
            })
        });
        let (unit, length) = match p.span {
            Span::Time { ms } => ("ms", ms),
            Span::Items { count } => ("items", count),
        };
        json!({
            // BF.PLAN ... WINDOW's fields, in its order.
            "policy": p.policy.name(),
            "window": p.span.display(),
            "generations": p.generations,
            "generation_span": g.display(),
            "generation_capacity": self.spec.link.entries,
            "generation_error": self.spec.generation_error,
            "hashes": self.spec.link.hashes,
            "bit_arrays": self.spec.slots,
            "bytes": self.spec.bytes,
            "fpr": p.error,
            "forgotten_late_by": match p.span {
                Span::Time { .. } => g.display(),
                Span::Items { .. } => self.spec.slack().to_string(),
            },
            "plain_filter_bytes": self.plain_bytes,
            "scaling": u64::from(p.scaling),
            "burst_2x_bytes": self.spec.burst(2.0).bytes,
            "burst_2x_fpr": self.spec.burst(2.0).fpr,
            "burst_10x_bytes": self.spec.burst(10.0).bytes,
            "burst_10x_fpr": self.spec.burst(10.0).fpr,
            // The request, and more of the shape.
            "capacity": p.capacity,
            "error": p.error,
            "rate": self.rate.map(|r| json!({"items": r.items, "per": r.unit()})),
            "span_unit": unit,
            "window_length": length,
            "generation_length": self.spec.generation_span,
            "generation_bits": self.spec.link.bits,
            "generation_bytes": self.spec.link.bytes,
            "lookups": p.generations + 1,
            "hand_rotated": hand,
            "max_filter_bytes": self.max_filter_bytes,
            "refused": self.over_cap(),
            "warnings": self.warnings(),
        })
    }

    pub fn to_text(&self) -> String {
        let p = self.params();
        // `1 item arrives`, `5 items arrive`.
        let arrive = |n| {
            format!(
                "{} {}",
                fmt::count(n, "item"),
                if n == 1 { "arrives" } else { "arrive" }
            )
        };
        let g = p.generations;
        let rate = match self.rate {
            Some(r) => format!(" ({} {})", fmt::int(r.items), r.per_unit()),
            None => String::new(),
        };
        let per_window = match p.span {
            Span::Items { count } => format!("the last {}", fmt::count(count, "item")),
            Span::Time { .. } => format!("{} per window{rate}", fmt::count(p.capacity, "item")),
        };
        let sized_for = match p.span {
            Span::Items { count } if p.capacity > count => {
                format!(", sized for {}", fmt::count(p.capacity, "item"))
            }
            _ => String::new(),
        };
        let mut out = format!(
            "Windowed filter: window {}, {per_window}{sized_for}, error rate {}, {}, {} \
             policy\n\n",
            p.span.display(),
            fmt::g(p.error, 6),
            fmt::count(u64::from(g), "generation"),
            p.policy.name()
        );
        let spec = &self.spec;
        let lines = [
            (
                "memory",
                if p.scaling && p.span.is_time() {
                    format!(
                        "{} bytes ({}) in {}, allocated when it is created; a generation that \
                         receives more than its share grows a bit array twice as large (each \
                         admitted by the memory guard), freed when it leaves the window",
                        fmt::int(spec.bytes),
                        fmt::bytes(spec.bytes),
                        fmt::count(u64::from(spec.slots), "bit array")
                    )
                } else {
                    format!(
                        "{} bytes ({}) in {}, allocated when it is created: the same \
                         forever, whatever arrives",
                        fmt::int(spec.bytes),
                        fmt::bytes(spec.bytes),
                        fmt::count(u64::from(spec.slots), "bit array")
                    )
                },
            ),
            ("bursts", self.burst_words()),
            (
                "generations",
                format!(
                    "{g} of {} each; a lookup tests {} (the active one and the {} before it)",
                    self.generation_length(),
                    g + 1,
                    if g == 1 {
                        "one".to_string()
                    } else {
                        g.to_string()
                    }
                ),
            ),
            (
                "each generation",
                format!(
                    "{} at error {}, {}, {} bits, {} bytes",
                    fmt::count(spec.link.entries, "item"),
                    fmt::g(spec.generation_error, 6),
                    fmt::count(u64::from(spec.link.hashes), "hash"),
                    fmt::int(spec.link.bits),
                    fmt::int(spec.link.bytes)
                ),
            ),
            (
                "false positives",
                format!(
                    "at most {} ({}) while at most {} per window",
                    fmt::g(p.error, 6),
                    percent_fine(p.error),
                    arrive(p.capacity.max(match p.span {
                        Span::Items { count } => count,
                        Span::Time { .. } => 0,
                    }))
                ),
            ),
            (
                "forgotten",
                match p.span {
                    Span::Time { .. } => format!(
                        "an item is found for {} after its last add, and forgotten at most {} \
                         later",
                        p.span.display(),
                        self.slack_words()
                    ),
                    Span::Items { count } => format!(
                        "an item is found while it is among the last {} added, and \
                         forgotten once {} more than that have been added after it, at most",
                        fmt::count(count, "item"),
                        self.slack_words()
                    ),
                },
            ),
        ];
        let width = lines.iter().map(|(name, _)| name.len()).max().unwrap_or(0) + 1;
        for (name, text) in lines {
            out.push_str(&format!("  {:<width$} {text}\n", format!("{name}:")));
        }

        out.push_str(&format!("\n{}\n", style("Compared with").bold()));
        let col = |title, right| Column { title, right };
        let columns = [
            col("instead", false),
            col("bytes", true),
            col("memory", true),
            col("lookups", true),
            col("false positives", false),
            col("forgets", false),
        ];
        let mut rows = vec![vec![
            format!(
                "this windowed filter, {}",
                fmt::count(u64::from(g), "generation")
            ),
            fmt::int(spec.bytes),
            fmt::bytes(spec.bytes),
            (g + 1).to_string(),
            percent_fine(p.error),
            format!("by itself, at most {} late", self.late_length()),
        ]];
        if self.plain_bytes > 0 {
            rows.push(vec![
                format!("one plain filter for {}", fmt::count(p.capacity, "item")),
                fmt::int(self.plain_bytes),
                fmt::bytes(self.plain_bytes),
                "1".into(),
                format!("{} until full", percent_fine(p.error)),
                "never: it scales out and grows".into(),
            ]);
        }
        if let Some(h) = &self.hand {
            let what = format!(
                "{} {} {} of {}",
                h.filters,
                h.period_word(),
                fmt::noun(h.filters, "filter"),
                fmt::count(h.capacity_each, "item")
            );
            let forgets = format!("by whole {}s, by hand", h.period_name());
            rows.push(vec![
                format!("{what}, {} overall", percent_fine(p.error)),
                fmt::int(h.overall_bytes),
                fmt::bytes(h.overall_bytes),
                h.filters.to_string(),
                percent_fine(p.error),
                forgets.clone(),
            ]);
            rows.push(vec![
                format!("{what}, {} each", percent_fine(p.error)),
                fmt::int(h.each_bytes),
                fmt::bytes(h.each_bytes),
                h.filters.to_string(),
                percent_fine(h.each_fpr),
                forgets,
            ]);
        }
        out.push_str(&fmt::table(&columns, &rows, "  "));
        push_warnings(&mut out, self.warnings());
        out
    }
}

impl Planned for WindowPlan {
    fn to_json(&self) -> Value {
        WindowPlan::to_json(self)
    }

    fn to_text(&self) -> String {
        WindowPlan::to_text(self)
    }
}

/// A length of time in words, in its largest unit with up to three
/// significant digits: `3.75 days`, `1.5 hours`, `90 seconds`.
pub fn human_duration(ms: u64) -> String {
    let units = [
        (DAY_MS, "day"),
        (HOUR_MS, "hour"),
        (MINUTE_MS, "minute"),
        (SECOND_MS, "second"),
        (1, "millisecond"),
    ];
    let (unit, name) = units
        .into_iter()
        .find(|(u, _)| ms >= *u)
        .unwrap_or((1, "millisecond"));
    let value = ms as f64 / unit as f64;
    let text = fmt::g(value, 3);
    if text == "1" {
        format!("1 {name}")
    } else {
        format!("{text} {name}s")
    }
}

#[cfg(test)]
mod tests {
    use super::super::flags::{parse_rate, parse_span};
    use super::*;
    use crate::EXIT_USAGE;

    fn args(window: &str) -> PlanArgs {
        PlanArgs {
            error: Some(0.001),
            window: Some(parse_span(window).unwrap()),
            ..crate::plan::test_args()
        }
    }

    /// The crawler: 500,000 new URLs a day, 30 days, error 0.001.
    #[test]
    fn the_crawler_window() {
        let mut a = args("30d");
        a.per_day = Some(500_000);
        let p = WindowPlan::new(&a).unwrap();
        assert_eq!(p.spec.params.capacity, 15_000_000);
        assert_eq!(p.spec.bytes, 44_927_840);
        assert_eq!(p.plain_bytes, 26_957_984);
        assert_eq!(p.generation_span().display(), "90h");
        assert_eq!(p.slack_words(), "90h (3.75 days, 12.5% of the window)");
        // docs/windows.md's comparison: 31 daily filters, 41.7 MB sized for
        // 0.1% overall, 27.9 MB at 0.1% each (about 3% overall).
        let h = p.hand.unwrap();
        assert_eq!((h.filters, h.capacity_each), (31, 500_000));
        assert_eq!(format!("{:.1}", h.overall_bytes as f64 / 1e6), "41.7");
        assert_eq!(format!("{:.1}", h.each_bytes as f64 / 1e6), "27.9");
        assert!((0.030..0.031).contains(&h.each_fpr), "{}", h.each_fpr);
        // The same with --rate and with --capacity.
        let mut b = args("30d");
        b.rate = Some(parse_rate("500000/day").unwrap());
        assert_eq!(WindowPlan::new(&b).unwrap().spec, p.spec);
        let mut c = args("30d");
        c.capacity = Some(15_000_000);
        assert_eq!(WindowPlan::new(&c).unwrap().spec, p.spec);
        let text = p.to_text();
        assert!(text.contains("15,000,000 items per window (500,000 a day)"));
        assert!(text.contains("44,927,840 bytes (42.8 MiB) in 10 bit arrays"));
        assert!(text.contains("31 daily filters of 500,000 items"));
        assert!(!text.contains("WARNING"));
    }

    #[test]
    fn durations_in_words() {
        assert_eq!(human_duration(90 * HOUR_MS), "3.75 days");
        assert_eq!(human_duration(HOUR_MS), "1 hour");
        assert_eq!(human_duration(110), "110 milliseconds");
    }

    #[test]
    fn options_that_do_not_apply_are_usage_errors() {
        let code = |a: &PlanArgs| WindowPlan::new(a).map(|_| 0).unwrap_or_else(|f| f.code);
        let mut a = args("30d");
        assert_eq!(code(&a), EXIT_USAGE, "a time window without a capacity");
        a.capacity = Some(1000);
        a.expansion = Some(2);
        assert_eq!(code(&a), EXIT_USAGE);
        a.expansion = None;
        a.items = Some(5);
        assert_eq!(code(&a), EXIT_USAGE);
        let mut i = args("1000");
        assert_eq!(code(&i), 0, "an item window holds its N items");
        assert_eq!(WindowPlan::new(&i).unwrap().spec.params.capacity, 1000);
        assert!(WindowPlan::new(&i).unwrap().hand.is_none());
        i.per_day = Some(5);
        assert_eq!(code(&i), EXIT_USAGE);
    }

    #[test]
    fn hand_rotation_periods() {
        let mut a = args("36h");
        a.capacity = Some(36_000);
        let h = WindowPlan::new(&a).unwrap().hand.unwrap();
        assert_eq!(
            (h.period_ms, h.filters, h.capacity_each),
            (HOUR_MS, 37, 1000)
        );
        let mut a = args("90m");
        a.capacity = Some(1000);
        assert!(WindowPlan::new(&a).unwrap().hand.is_none());
    }

    #[test]
    fn windows_over_the_cap_are_warned_about() {
        let mut a = args("30d");
        a.capacity = Some(2_000_000_000);
        let p = WindowPlan::new(&a).unwrap();
        assert!(p.over_cap());
        let w = p.warnings();
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("would refuse to create"), "{}", w[0]);
        assert_eq!(p.to_json()["refused"], true);
        a.max_filter_bytes = 0;
        assert!(WindowPlan::new(&a).unwrap().warnings().is_empty());
    }
}
