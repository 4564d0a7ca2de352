//! The chart, performance.png: per metric, a bar from 1.0 to the median
//! FerroBloom / RedisBloom ratio with min-max whiskers, on a log scale;
//! times and memory on the left, throughput on the right.

use std::error::Error;
use std::path::Path;

use plotters::coord::combinators::{LogCoord, WithKeyPoints};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::format::fmt_ratio;
use crate::results::{Kind, Metric};
use crate::targets::{bound_of, not_worse};

/// Text is drawn with a bundled font, so that the chart does not depend
/// on the fonts of the machine.
const FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");

const GOOD: RGBColor = RGBColor(46, 160, 67);
const BAD: RGBColor = RGBColor(214, 39, 40);
const TARGET: RGBColor = RGBColor(31, 119, 180);
const ROW: u32 = 30;
const WIDTH: u32 = 1800;

struct Bar {
    label: String,
    min: f64,
    median: f64,
    max: f64,
    good: bool,
    target: Option<f64>,
}

/// The axis shows ratios from AXIS_MIN to AXIS_MAX at most; bars
/// beyond are cut at the edge and their label says "off scale".
const AXIS_MIN: f64 = 0.03;
const AXIS_MAX: f64 = 30.0;

/// 1, 2 and 5 times the powers of ten within the range.
fn key_points(lo: f64, hi: f64) -> Vec<f64> {
    let mut points = Vec::new();
    let mut decade = 10f64.powi(lo.log10().floor() as i32);
    while decade <= hi {
        for m in [1.0, 2.0, 5.0] {
            let v = decade * m;
            if v >= lo && v <= hi {
                points.push(v);
            }
        }
        decade *= 10.0;
    }
    points
}

fn axis_label(v: f64) -> String {
    let s = format!("{v:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn bars(metrics: &[Metric], kind: Kind) -> Vec<Bar> {
    metrics
        .iter()
        .filter(|m| m.kind == kind)
        .map(|m| {
            let (min, median, max) = m.ratio_summary();
            Bar {
                label: format!("{} · {}", m.workload, m.metric),
                min,
                median,
                max,
                good: not_worse(m),
                target: bound_of(&m.workload, &m.metric),
            }
        })
        .collect()
}

pub fn draw(path: &Path, title: &str, metrics: &[Metric]) -> Result<(), Box<dyn Error>> {
    plotters::style::register_font("sans-serif", FontStyle::Normal, FONT)
        .map_err(|_| "the bundled font does not load")?;
    let cost = bars(metrics, Kind::Cost);
    let throughput = bars(metrics, Kind::Throughput);
    let rows = cost.len().max(throughput.len()).max(1) as u32;
    let height = 120 + rows * ROW;
    let full = BitMapBackend::new(path, (WIDTH, height)).into_drawing_area();
    full.fill(&WHITE)?;
    let body = full.titled(title, ("sans-serif", 24))?;
    let (body, legend) = body.split_vertically(height - 75);
    let (left, right) = body.split_horizontally(WIDTH / 2);
    panel(
        &full,
        &left,
        "Time and memory: FerroBloom / RedisBloom (lower is better)",
        &cost,
    )?;
    panel(
        &full,
        &right,
        "Throughput: FerroBloom / RedisBloom ops/s (higher is better)",
        &throughput,
    )?;
    legend.draw(&Text::new(
        "Bars run from 1.0 to the median ratio over the rounds; whiskers span min to max; \
         green: FerroBloom better or equal, red: worse; blue ticks: targets. Log scale.",
        (20, 8),
        ("sans-serif", 15),
    ))?;
    full.present()?;
    Ok(())
}

type Area<'a> = DrawingArea<BitMapBackend<'a>, Shift>;
/// A panel's coordinates: ratio (log scale) by row.
type Panel<'a, 'b> =
    ChartContext<'a, BitMapBackend<'b>, Cartesian2d<WithKeyPoints<LogCoord<f64>>, RangedCoordf64>>;

/// The ratios a panel shows: its bars and targets with a margin, around
/// 0.5-2 at least and within AXIS_MIN-AXIS_MAX.
fn axis_range(bars: &[Bar]) -> (f64, f64) {
    let targets = bars.iter().filter_map(|b| b.target);
    let lo = bars
        .iter()
        .map(|b| b.min)
        .chain(targets.clone())
        .fold(0.5, f64::min)
        .max(AXIS_MIN)
        / 1.4;
    let hi = bars
        .iter()
        .map(|b| b.max)
        .chain(targets)
        .fold(2.0, f64::max)
        .min(AXIS_MAX)
        * 1.6;
    (lo, hi)
}

fn panel(full: &Area, area: &Area, caption: &str, bars: &[Bar]) -> Result<(), Box<dyn Error>> {
    if bars.is_empty() {
        area.draw(&Text::new(
            format!("{caption}: not measured"),
            (20, 20),
            ("sans-serif", 16),
        ))?;
        return Ok(());
    }
    let n = bars.len();
    let (lo, hi) = axis_range(bars);
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 17))
        .margin(12)
        .margin_right(24)
        .x_label_area_size(36)
        .y_label_area_size(330)
        .build_cartesian_2d(
            (lo..hi).log_scale().with_key_points(key_points(lo, hi)),
            -0.5f64..(n as f64 - 0.5),
        )?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .y_label_formatter(&|_| String::new())
        .light_line_style(TRANSPARENT)
        .bold_line_style(BLACK.mix(0.15))
        .x_label_formatter(&|v| axis_label(*v))
        .x_label_style(("sans-serif", 13))
        .draw()?;
    let top = n as f64 - 0.5;
    chart.draw_series(std::iter::once(PathElement::new(
        vec![(1.0, -0.5), (1.0, top)],
        BLACK.stroke_width(2),
    )))?;
    for (i, b) in bars.iter().enumerate() {
        let y = (n - 1 - i) as f64;
        draw_bar(&mut chart, b, y, (lo, hi), area)?;
        // The label left of the axis, in the whole picture's coordinates.
        let (px, py) = chart.backend_coord(&(lo, y));
        full.draw(&Text::new(
            b.label.clone(),
            (px - 8, py),
            ("sans-serif", 13)
                .into_font()
                .into_text_style(full)
                .pos(Pos::new(HPos::Right, VPos::Center)),
        ))?;
    }
    Ok(())
}

/// One bar at row `y`: the bar, its whiskers, its target tick and its
/// median written right of it.
fn draw_bar(
    chart: &mut Panel,
    b: &Bar,
    y: f64,
    (lo, hi): (f64, f64),
    area: &Area,
) -> Result<(), Box<dyn Error>> {
    let clip = |v: f64| v.clamp(lo, hi);
    let color = if b.good { GOOD } else { BAD };
    chart.draw_series(std::iter::once(Rectangle::new(
        [(1.0, y - 0.3), (clip(b.median), y + 0.3)],
        color.mix(0.85).filled(),
    )))?;
    let whisker = BLACK.stroke_width(1);
    let (min, max) = (clip(b.min), clip(b.max));
    chart.draw_series([
        PathElement::new(vec![(min, y), (max, y)], whisker),
        PathElement::new(vec![(min, y - 0.18), (min, y + 0.18)], whisker),
        PathElement::new(vec![(max, y - 0.18), (max, y + 0.18)], whisker),
    ])?;
    // Targets are ratios of time: a throughput bar has none.
    if let Some(t) = b.target {
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(t, y - 0.42), (t, y + 0.42)],
            TARGET.stroke_width(3),
        )))?;
    }
    let right_end = max.max(clip(b.median)).max(1.0);
    let off_scale = clip(b.median) != b.median;
    chart.draw_series(std::iter::once(Text::new(
        format!(
            "{}{}",
            fmt_ratio(b.median),
            if off_scale { " (off scale)" } else { "" }
        ),
        (right_end * 1.06, y),
        ("sans-serif", 13)
            .into_font()
            .into_text_style(area)
            .pos(Pos::new(HPos::Left, VPos::Center)),
    )))?;
    Ok(())
}
