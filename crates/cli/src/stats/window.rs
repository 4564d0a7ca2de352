//! `ferrobloom stats` of windowed filters (FBwindows), from BF.STATS: their
//! window's coverage and generations, listed in a table of their own.

use serde_json::{json, Value as Json};

use super::{bad_reply, Detail, Fields, Kind, Reader, Row, Source};
use crate::conn::{Server, WINDOW_TYPE};
use crate::fmt::{self, Column};

/// Windowed filters: their level is BF.STATS' `fill_level`; a server
/// without BF.STATS has no windowed filters.
pub struct WindowKind;

impl Kind for WindowKind {
    fn type_name(&self) -> &'static str {
        WINDOW_TYPE
    }

    fn read(&self, r: &mut Reader<'_>, key: &[u8]) -> redis::RedisResult<Row> {
        from_window_stats(r.server, key)
    }
}

/// What BF.STATS says of a windowed filter's window. Its level is BF.STATS'
/// `fill_level`, not the plain filters' thresholds: `warning` when a
/// generation received more than its share of the capacity, `alert` when
/// the estimated false positive rate is above the error rate asked for.
#[derive(Clone, Debug, PartialEq)]
pub struct Window {
    pub policy: Option<String>,
    /// `30d`, `12h`, or a number of items.
    pub span: String,
    pub generations: u64,
    pub generation_span: String,
    pub epoch: u64,
    /// How much of its window the filter has seen, 0 to 1.
    pub coverage: f64,
    pub target_error: f64,
    pub rotations: u64,
    pub forgotten: u64,
    pub forgotten_late_by: String,
    pub pending_clear_bytes: u64,
    pub per_generation: Vec<Generation>,
}

/// One live generation of a window, oldest first.
#[derive(Clone, Debug, PartialEq)]
pub struct Generation {
    pub epoch: u64,
    /// None for an item window.
    pub age_ms: Option<u64>,
    pub items: u64,
    pub capacity: u64,
    pub fill_ratio: f64,
    pub set_fraction: f64,
    pub estimated_fpr: f64,
}

/// A windowed filter, from BF.STATS: its level is the reply's
/// `fill_level`.
fn from_window_stats(server: &mut Server, key: &[u8]) -> redis::RedisResult<Row> {
    let reply: redis::Value = server.query(redis::cmd("BF.STATS").arg(key))?;
    let p = Fields::of(reply, "BF.STATS")?;
    let level = p.level()?;
    let per_generation = match p.get("per_generation") {
        Some(redis::Value::Array(gens)) => gens
            .iter()
            .map(|g| {
                let g = Fields::of(g.clone(), "per_generation")?;
                Ok(Generation {
                    epoch: g.uint("epoch")?,
                    age_ms: g.uint("age_ms").ok(),
                    items: g.uint("items")?,
                    capacity: g.uint("capacity")?,
                    fill_ratio: g.float("fill_ratio")?,
                    set_fraction: g.float("set_fraction")?,
                    estimated_fpr: g.float("estimated_fpr")?,
                })
            })
            .collect::<redis::RedisResult<Vec<_>>>()?,
        _ => return Err(bad_reply("per_generation")),
    };
    let bytes = p.uint("bytes")?;
    Ok(Row {
        key: key.to_vec(),
        items: p.uint("items")?,
        capacity: p.uint("capacity")?,
        fill: p.float("fill_ratio")?,
        fpr: p.float("estimated_fpr")?,
        source: Source::Stats,
        // A window's BF.INFO Size is its bit arrays.
        size: bytes,
        bytes,
        level,
        detail: Detail::Window(Window {
            policy: p.text("policy").ok(),
            span: p.text("window")?,
            generations: p.uint("generations")?,
            generation_span: p.text("generation_span")?,
            epoch: p.uint("epoch")?,
            coverage: p.float("coverage")?,
            target_error: p.float("target_error")?,
            rotations: p.uint("rotations")?,
            forgotten: p.uint("forgotten")?,
            forgotten_late_by: p.text("forgotten_late_by")?,
            pending_clear_bytes: p.uint("pending_clear_bytes")?,
            per_generation,
        }),
    })
}

/// A windowed filter in JSON: the fields of a plain filter's entry (with
/// `links` and `expansion` null), and its `window`.
pub fn json(r: &Row, w: &Window, key: String, key_hex: Option<String>) -> Json {
    let generations: Vec<Json> = w
        .per_generation
        .iter()
        .map(|g| {
            json!({
                "epoch": g.epoch,
                "age_ms": g.age_ms,
                "items": g.items,
                "capacity": g.capacity,
                "fill_ratio": g.fill_ratio,
                "set_fraction": g.set_fraction,
                "estimated_fpr": g.estimated_fpr,
            })
        })
        .collect();
    json!({
        "type": "window",
        "key": key,
        "key_hex": key_hex,
        "items": r.items,
        "capacity": r.capacity,
        "fill_ratio": r.fill,
        "estimated_fpr": r.fpr,
        "fpr_from": "set bits (BF.STATS)",
        "size": r.size,
        "bytes": r.bytes,
        "links": null,
        "policy": w.policy,
        "expansion": null,
        "level": r.level.name(),
        "window": {
            "window": w.span,
            "generations": w.generations,
            "generation_span": w.generation_span,
            "epoch": w.epoch,
            "coverage": w.coverage,
            "target_error": w.target_error,
            "rotations": w.rotations,
            "forgotten": w.forgotten,
            "forgotten_late_by": w.forgotten_late_by,
            "pending_clear_bytes": w.pending_clear_bytes,
            "per_generation": generations,
        },
    })
}

/// What the windowed filters' columns mean, under the summary.
pub const NOTE: &str = "windowed: COVERAGE is how much of its window a filter has seen; FILL its \
fullest generation over its share of the capacity; LEVEL is BF.STATS' fill_level (WARNING: a \
generation got more than its share; ALERT: EST. FPR above TARGET), not the thresholds\n";

/// The windowed filters' table.
pub fn table(rows: &[&Row]) -> String {
    let col = |title, right| Column { title, right };
    let columns = [
        col("WINDOWED", false),
        col("WINDOW", true),
        col("COVERAGE", true),
        col("ITEMS", true),
        col("CAPACITY", true),
        col("FILL", true),
        col("EST. FPR", true),
        col("TARGET", true),
        col("SIZE", true),
        col("ROTATIONS", true),
        col("FORGOTTEN", true),
        col("LEVEL", false),
    ];
    let cells: Vec<Vec<String>> = rows
        .iter()
        .filter_map(|r| {
            let Detail::Window(w) = &r.detail else {
                return None;
            };
            Some(vec![
                fmt::key(&r.key),
                w.span.clone(),
                fmt::percent(w.coverage),
                fmt::int(r.items),
                fmt::int(r.capacity),
                fmt::percent(r.fill),
                fmt::g(r.fpr, 3),
                fmt::g(w.target_error, 3),
                fmt::bytes(r.size),
                fmt::int(w.rotations),
                fmt::int(w.forgotten),
                r.level.styled(),
            ])
        })
        .collect();
    fmt::table(&columns, &cells, "")
}
