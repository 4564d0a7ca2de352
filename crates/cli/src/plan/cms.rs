//! `ferrobloom plan --cms`: a Count-Min sketch before it exists, offline,
//! from the same core code as CMS.PLAN (`ferrobloom_core::cms::plan`): its
//! width and depth, its bytes at each cell size, the overestimate to
//! expect for the total count, the smallest cell size that holds that
//! total, and the command that creates it.

use console::style;
use ferrobloom_core::cms::plan::{self, CmsPlan, PlanInput};
use ferrobloom_core::cms::sizing::check_dims;
use ferrobloom_core::cms::{CellSize, InitError};
use serde_json::{json, Value};

use super::{percent_fine, push_warnings, usage, PlanArgs, Planned};
use crate::fmt::{self, Column};
use crate::{Failure, Result};

/// What the sketch is planned from, as the command line gave it.
pub fn input(args: &PlanArgs) -> Result<PlanInput> {
    match (args.error, args.probability, args.width, args.depth) {
        (Some(error), Some(probability), None, None) => Ok(PlanInput::Prob { error, probability }),
        (None, None, Some(width), Some(depth)) => Ok(PlanInput::Dims { width, depth }),
        _ => Err(usage(
            "--cms needs --error and --probability (CMS.INITBYPROB), or --width and --depth \
             (CMS.INITBYDIM)",
        )),
    }
}

/// The plan CMS.PLAN would reply for these arguments.
pub fn cms_plan(args: &PlanArgs) -> Result<CmsPlan> {
    let input = input(args)?;
    let total = args.total.expect("clap requires --total with --cms");
    plan::plan(input, total).map_err(|e| match e {
        InitError::InsufficientMemory => Failure::new(format!(
            "the sketch would be too large to create ({} answers {})",
            creator(input),
            e.message()
        )),
        _ => usage(format!(
            "{} would refuse these dimensions: {} (width × depth must be at most 2^63 − 1, \
             and the width 2 / error below 2^63)",
            creator(input),
            e.message()
        )),
    })
}

/// A Count-Min sketch's plan, with the command line it answers.
pub struct CmsReport<'a> {
    args: &'a PlanArgs,
    input: PlanInput,
    plan: CmsPlan,
}

pub fn plan(args: &PlanArgs) -> Result<CmsReport<'_>> {
    Ok(CmsReport {
        args,
        input: input(args)?,
        plan: cms_plan(args)?,
    })
}

impl Planned for CmsReport<'_> {
    fn to_json(&self) -> Value {
        to_json(self.args, self.input, &self.plan)
    }

    fn to_text(&self) -> String {
        to_text(self.args, self.input, &self.plan)
    }
}

fn creator(input: PlanInput) -> &'static str {
    match input {
        PlanInput::Prob { .. } => "CMS.INITBYPROB",
        PlanInput::Dims { .. } => "CMS.INITBYDIM",
    }
}

/// `CMS.INITBYPROB key 0.001 0.01`: the creation command without its
/// cell size.
fn create_command(input: PlanInput) -> String {
    match input {
        PlanInput::Prob { error, probability } => {
            format!("CMS.INITBYPROB key {error} {probability}")
        }
        PlanInput::Dims { width, depth } => format!("CMS.INITBYDIM key {width} {depth}"),
    }
}

/// The command that creates the planned sketch with the smallest cell
/// size holding the total; None when no cell size holds it.
pub fn command(input: PlanInput, p: &CmsPlan) -> Option<String> {
    p.smallest_cell_size
        .map(|c| format!("{} CELL_SIZE {}", create_command(input), c.bytes()))
}

/// A count that may have a fraction (an error bound): grouped when whole.
fn counts(x: f64) -> String {
    if x.fract() == 0.0 && x < 9e15 {
        fmt::int(x as u64)
    } else {
        fmt::g(x, 6)
    }
}

/// The plan for the smallest cell size that holds the total.
fn chosen(p: &CmsPlan) -> Option<&plan::CellSizePlan> {
    let size = p.smallest_cell_size?;
    p.cell_sizes.iter().find(|c| c.cell_size == size)
}

/// A total no cell size holds, and a sketch the server's per-value
/// memory cap refuses.
pub fn warnings(args: &PlanArgs, input: PlanInput, p: &CmsPlan) -> Vec<String> {
    let mut out = Vec::new();
    match chosen(p) {
        None => out.push(format!(
            "no cell size holds a total of {}: the largest count a cell holds is {} (8-byte \
             cells); increments past it are refused (CMS: INCRBY overflow)",
            fmt::int(p.total),
            fmt::int(CellSize::Eight.max_count())
        )),
        Some(c) if args.max_filter_bytes > 0 && c.memory_usage > args.max_filter_bytes => {
            out.push(format!(
                "the server would refuse {} ... CELL_SIZE {} (CMS: Insufficient memory to create \
                 the key): the sketch takes {} bytes ({}), over bf.max-filter-bytes ({} bytes, \
                 {}; --max-filter-bytes)",
                creator(input),
                c.cell_size.bytes(),
                fmt::int(c.memory_usage),
                fmt::bytes(c.memory_usage),
                fmt::int(args.max_filter_bytes),
                fmt::bytes(args.max_filter_bytes)
            ))
        }
        Some(_) => {}
    }
    out
}

/// What the server's memory guard would say of creating this cell size
/// (CMS.PLAN's `guard`), as far as it is known offline: the cells'
/// addressability and the per-value cap; `maxmemory` and the machine's
/// memory are the server's to know.
fn guard(args: &PlanArgs, p: &CmsPlan, c: &plan::CellSizePlan) -> &'static str {
    if check_dims(p.width, p.depth, c.cell_size).is_err() {
        "insufficient-memory"
    } else if args.max_filter_bytes > 0 && c.memory_usage > args.max_filter_bytes {
        "bf.max-filter-bytes"
    } else {
        "ok"
    }
}

/// CMS.PLAN's fields first, under its names, then the command line's.
pub fn to_json(args: &PlanArgs, input: PlanInput, p: &CmsPlan) -> Value {
    let (error_arg, probability_arg) = match input {
        PlanInput::Prob { error, probability } => (Some(error), Some(probability)),
        PlanInput::Dims { .. } => (None, None),
    };
    json!({
        "width": p.width,
        "depth": p.depth,
        "total": p.total,
        "error": p.error,
        "probability": p.probability,
        "error_bound": p.bound.counts,
        "confidence": p.bound.confidence,
        "textbook_error_bound": p.textbook_bound.counts,
        "textbook_confidence": p.textbook_bound.confidence,
        "cell_sizes": p.cell_sizes.iter().map(|c| json!({
            "cell_size": c.cell_size.bytes(),
            "bytes": c.cell_bytes,
            "memory_usage": c.memory_usage,
            "holds_total": c.holds_total,
            "guard": guard(args, p, c),
            "max_count": c.cell_size.max_count(),
        })).collect::<Vec<_>>(),
        "smallest_cell_size": p.smallest_cell_size.map(CellSize::bytes),
        "type": "cms",
        "created_by": creator(input),
        "error_arg": error_arg,
        "probability_arg": probability_arg,
        "command": command(input, p),
        "max_filter_bytes": args.max_filter_bytes,
        "warnings": warnings(args, input, p),
    })
}

pub fn to_text(args: &PlanArgs, input: PlanInput, p: &CmsPlan) -> String {
    let mut out = format!(
        "Count-Min sketch: {}: width {}, depth {}, planned for a total count of {}\n",
        create_command(input),
        fmt::int(p.width),
        fmt::int(p.depth),
        fmt::int(p.total)
    );
    out.push_str(&format!(
        "  error bound:    an estimate exceeds the true count by at most {} (2 × {} / {}: \
         error {} of the total), except with probability {} (2^-{})\n",
        counts(p.bound.counts),
        fmt::int(p.total),
        fmt::int(p.width),
        fmt::g(p.error, 6),
        percent_fine(p.probability),
        p.depth
    ));
    out.push_str(&format!(
        "  textbook bound: at most {} (e × {} / {}), except with probability {} (e^-{})\n",
        counts(p.textbook_bound.counts),
        fmt::int(p.total),
        fmt::int(p.width),
        percent_fine(1.0 - p.textbook_bound.confidence),
        p.depth
    ));
    let col = |title, right| Column { title, right };
    let columns = [
        col("cell size", true),
        col("largest count", true),
        col("cell bytes", true),
        col("MEMORY USAGE", true),
        col("holds the total", false),
    ];
    let rows: Vec<Vec<String>> = p
        .cell_sizes
        .iter()
        .map(|c| {
            vec![
                fmt::count(c.cell_size.bytes(), "byte"),
                fmt::int(c.cell_size.max_count()),
                fmt::int(c.cell_bytes),
                format!(
                    "{} ({})",
                    fmt::int(c.memory_usage),
                    fmt::bytes(c.memory_usage)
                ),
                if Some(c.cell_size) == p.smallest_cell_size {
                    "yes: the smallest".to_string()
                } else if c.holds_total {
                    "yes".to_string()
                } else {
                    "no".to_string()
                },
            ]
        })
        .collect();
    out.push_str(&format!("\n{}\n", style("cell sizes").bold()));
    out.push_str(&fmt::table(&columns, &rows, "  "));
    if let Some(cmd) = command(input, p) {
        out.push_str(&format!("\n  create: {cmd}\n"));
        out.push_str(&format!(
            "  RedisBloom 2.8.2 has 4-byte cells only and no CELL_SIZE: {}\n",
            create_command(input)
        ));
    }
    push_warnings(&mut out, warnings(args, input, p));
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
    fn from_error_and_probability() {
        let a = args("--cms --error 0.001 --probability 0.01 --total 1e6");
        let p = cms_plan(&a).unwrap();
        assert_eq!((p.width, p.depth), (2000, 7));
        let input = PlanInput::Prob {
            error: 0.001,
            probability: 0.01,
        };
        assert_eq!(
            command(input, &p).as_deref(),
            Some("CMS.INITBYPROB key 0.001 0.01 CELL_SIZE 4")
        );
        let j = to_json(&a, input, &p);
        assert_eq!(j["error_bound"], 1000.0);
        assert_eq!(j["cell_sizes"][0]["guard"], "ok");
        assert_eq!(j["smallest_cell_size"], 4);
        assert_eq!(j["cell_sizes"][2]["memory_usage"], 112008);
        let text = to_text(&a, input, &p);
        assert!(
            text.contains("at most 1,000 (2 × 1,000,000 / 2,000"),
            "{text}"
        );
        assert!(text.contains("yes: the smallest"), "{text}");
    }

    #[test]
    fn from_width_and_depth_and_the_limits() {
        let a = args("--cms --width 100 --depth 3 --total 200");
        let p = cms_plan(&a).unwrap();
        assert_eq!(p.smallest_cell_size, Some(CellSize::One));
        assert_eq!(
            command(
                PlanInput::Dims {
                    width: 100,
                    depth: 3
                },
                &p
            )
            .as_deref(),
            Some("CMS.INITBYDIM key 100 3 CELL_SIZE 1")
        );
        // Half a pair, both pairs, no total, another type's flags.
        for bad in ["--cms --error 0.01 --total 5", "--cms --width 10 --total 5"] {
            assert_eq!(
                cms_plan(&args(bad)).unwrap_err().code,
                crate::EXIT_USAGE,
                "{bad}"
            );
        }
        for refused in [
            "--cms --error 0.01 --probability 0.1 --width 5 --depth 2 --total 5",
            "--cms --error 0.01 --probability 0.1",
            "--cms --error 0.01 --probability 0.1 --total 5 --capacity 9",
            "--cms --error 0.01 --probability 0.1 --total 5 --cuckoo",
            "--width 5 --depth 2 --total 5 --capacity 9 --error 0.1",
        ] {
            assert!(parse(refused).is_err(), "{refused}");
        }
        let a = args("--cms --width 8589934592 --depth 8589934592 --total 1");
        assert_eq!(cms_plan(&a).unwrap_err().code, crate::EXIT_USAGE);
        let a = args("--cms --width 4611686018427387904 --depth 1 --total 1");
        assert_eq!(cms_plan(&a).unwrap_err().code, crate::EXIT_ERROR);
        // No cell size holds a total past 2^63 - 1.
        let a = args("--cms --width 10 --depth 2 --total 9223372036854775808");
        let p = cms_plan(&a).unwrap();
        let w = warnings(
            &a,
            PlanInput::Dims {
                width: 10,
                depth: 2,
            },
            &p,
        );
        assert!(w[0].contains("no cell size holds"), "{w:?}");
        // The memory cap.
        let a = args("--cms --width 1000 --depth 10 --total 5 --max-filter-bytes 1000");
        let p = cms_plan(&a).unwrap();
        let w = warnings(
            &a,
            PlanInput::Dims {
                width: 1000,
                depth: 10,
            },
            &p,
        );
        assert!(w[0].contains("CELL_SIZE 1"), "{w:?}");
    }
}
