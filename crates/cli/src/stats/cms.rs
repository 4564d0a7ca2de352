//! `ferrobloom stats` of Count-Min sketches (CMSk-TYPE): CMS.STATS where
//! the server has it, else CMS.INFO and the key's DUMP payload decoded
//! here with ferrobloom_core (RedisBloom 2.8.2, or a FerroBloom without
//! CMS.STATS), so every server gives the same numbers. Listed in a table
//! of their own: a sketch has no capacity or false positive rate, but a
//! count, an error bound, and a fullest cell that an increment overflows
//! first.

use ferrobloom_core::cms::{dump, stats as core_stats};
use serde_json::{json, Value as Json};

use super::{bad_reply, Detail, Fields, Kind, Level, Reader, Row, Source};
use crate::conn::{Server, CMS_TYPE};
use crate::fmt::{self, Column};
use crate::reply;

/// What a sketch's row says beyond the common ones: its items are N (the
/// sum of all increments), its capacity the largest count a cell holds,
/// its fill the fullest cell over that, its size MEMORY USAGE's number and
/// its bytes the cells'.
#[derive(Clone, Debug, PartialEq)]
pub struct Cms {
    pub width: u64,
    pub depth: u64,
    pub cell_size: u64,
    /// An estimate exceeds the true count by at most this many counts...
    pub error_bound: f64,
    /// ...with this probability (`2N/width`, `1 − 2^−depth`).
    pub confidence: f64,
    pub fullest_cell: u64,
    /// How much N may still grow before 2^63 − 1.
    pub count_headroom: u64,
}

/// Count-Min sketches: their level is from the thresholds on the fullest
/// cell over its maximum.
pub struct CmsKind;

impl Kind for CmsKind {
    fn type_name(&self) -> &'static str {
        CMS_TYPE
    }

    fn read(&self, r: &mut Reader<'_>, key: &[u8]) -> redis::RedisResult<Row> {
        // A server may have BF.STATS but not CMS.STATS (a FerroBloom from
        // before it), so sketches keep their own fallback.
        let mut row = None;
        if !r.cms_fallback {
            match from_cms_stats(r.server, key) {
                Err(e) if reply::is_unknown_command(&e) => r.cms_fallback = true,
                other => row = Some(other?),
            }
        }
        let mut row = match row {
            Some(row) => row,
            None => from_info_and_dump(r.server, key)?,
        };
        // The thresholds the report uses (the server's, or the command
        // line's), as for plain filters: CMS.STATS' fill_level is the same
        // rule with the server's.
        row.level = Level::of(row.fill, &r.thresholds);
        Ok(row)
    }
}

/// A sketch from CMS.STATS: every number is the server's.
fn from_cms_stats(server: &mut Server, key: &[u8]) -> redis::RedisResult<Row> {
    let reply: redis::Value = server.query(redis::cmd("CMS.STATS").arg(key))?;
    let p = Fields::of(reply, "CMS.STATS")?;
    Ok(Row {
        key: key.to_vec(),
        items: p.uint("count")?,
        capacity: p.uint("cell_max")?,
        fill: p.float("fullest_fraction")?,
        fpr: 2.0 / p.uint("width")?.max(1) as f64,
        source: Source::Stats,
        size: p.uint("memory_usage")?,
        bytes: p.uint("bytes")?,
        level: Level::Ok,
        detail: Detail::Cms(Cms {
            width: p.uint("width")?,
            depth: p.uint("depth")?,
            cell_size: p.uint("cell_size")?,
            error_bound: p.float("error_bound")?,
            confidence: p.float("confidence")?,
            fullest_cell: p.uint("fullest_cell")?,
            count_headroom: p.uint("count_headroom")?,
        }),
    })
}

/// A sketch from CMS.INFO (which says it exists and is a sketch, with the
/// server's error otherwise) and its DUMP payload, decoded and measured
/// by the core's code.
fn from_info_and_dump(server: &mut Server, key: &[u8]) -> redis::RedisResult<Row> {
    let info: redis::Value = server.query(redis::cmd("CMS.INFO").arg(key))?;
    let info = Fields::of(info, "CMS.INFO")?;
    let payload: Option<Vec<u8>> = server.query(redis::cmd("DUMP").arg(key))?;
    let Some(payload) = payload else {
        // Deleted between the two commands.
        return Err(gone());
    };
    let row = from_payload(key, &payload)?;
    let Detail::Cms(c) = &row.detail else {
        unreachable!("a sketch's row")
    };
    if info.uint("width")? != c.width || info.uint("depth")? != c.depth {
        // Replaced between the two commands: the DUMP is what is measured,
        // but a changing key is better read again next time.
        return Err(bad_reply(
            "CMS.INFO and DUMP (the key changed between them)",
        ));
    }
    Ok(row)
}

/// A sketch's row from its DUMP payload, measured by the core's code.
fn from_payload(key: &[u8], payload: &[u8]) -> redis::RedisResult<Row> {
    let sketch = dump::load_payload(payload).map_err(|e| {
        bad_reply(&format!(
            "DUMP of a Count-Min sketch that does not decode ({e:?})"
        ))
    })?;
    let s = core_stats::stats(&sketch);
    Ok(Row {
        key: key.to_vec(),
        items: s.count,
        capacity: s.cell_max,
        fill: s.fullest_fraction,
        fpr: 2.0 / s.width as f64,
        source: Source::InfoDebug,
        size: sketch.memory_usage(),
        bytes: sketch.cell_bytes().len() as u64,
        level: Level::Ok,
        detail: Detail::Cms(Cms {
            width: s.width,
            depth: s.depth,
            cell_size: s.cell_size.bytes(),
            error_bound: s.bound.counts,
            confidence: s.bound.confidence,
            fullest_cell: s.fullest_cell,
            count_headroom: s.count_headroom,
        }),
    })
}

/// The error of a key that went away while it was read (left out of the
/// report, as a filter deleted since the scan).
fn gone() -> redis::RedisError {
    redis::RedisError::from((
        redis::ErrorKind::ResponseError,
        reply::CMS_KEY_MISSING,
        "deleted while read".to_string(),
    ))
}

/// Where a sketch's numbers come from.
fn from(r: &Row) -> &'static str {
    match r.source {
        Source::Stats => "CMS.STATS",
        Source::InfoDebug => "CMS.INFO+DUMP",
    }
}

/// A sketch's entry in `stats --json`.
pub fn json(r: &Row, c: &Cms, key: String, key_hex: Option<String>) -> Json {
    json!({
        "key": key,
        "key_hex": key_hex,
        "type": "cms",
        "items": r.items,
        "count": r.items,
        "width": c.width,
        "depth": c.depth,
        "cell_size": c.cell_size,
        "error_bound": c.error_bound,
        "confidence": c.confidence,
        "fullest_cell": c.fullest_cell,
        "cell_max": r.capacity,
        "fill_ratio": r.fill,
        "count_headroom": c.count_headroom,
        "size": r.size,
        "bytes": r.bytes,
        "from": from(r),
        "level": r.level.name(),
    })
}

/// An error bound in counts: grouped when whole.
fn counts(x: f64) -> String {
    if x.fract() == 0.0 && x < 9e15 {
        fmt::int(x as u64)
    } else {
        fmt::g(x, 4)
    }
}

/// A confidence as a percentage, or as `1 - p` when it rounds to 100%.
fn confidence(c: f64) -> String {
    let miss = 1.0 - c;
    if miss < 0.001 {
        format!("1 - {}", fmt::g(miss, 3))
    } else {
        format!("{}%", fmt::g(c * 100.0, 3))
    }
}

/// What the sketches' columns mean, under the summary.
pub fn note(rows: &[&Row]) -> String {
    let mut out = String::from(
        "sketches: COUNT is N, the sum of all increments; an estimate exceeds the true count by \
         at most ERROR BOUND (2N / width) with probability CONFIDENCE (1 - 2^-depth); FILL is \
         the fullest cell over its cell size's largest count (an increment past it is \
         refused); LEVEL from the thresholds on FILL\n",
    );
    if rows.iter().any(|r| r.source == Source::InfoDebug) {
        out.push_str(
            "* read from CMS.INFO and the key's DUMP, decoded here (the server has no \
             CMS.STATS)\n",
        );
    }
    out
}

/// The sketches' table.
pub fn table(rows: &[&Row]) -> String {
    let col = |title, right| Column { title, right };
    let columns = [
        col("SKETCH", false),
        col("WIDTH", true),
        col("DEPTH", true),
        col("CELL", true),
        col("COUNT", true),
        col("ERROR BOUND", true),
        col("CONFIDENCE", true),
        col("FULLEST CELL", true),
        col("FILL", true),
        col("SIZE", true),
        col("LEVEL", false),
    ];
    let cells: Vec<Vec<String>> = rows
        .iter()
        .filter_map(|r| {
            let Detail::Cms(c) = &r.detail else {
                return None;
            };
            let mut count = fmt::int(r.items);
            if r.source == Source::InfoDebug {
                count.push('*');
            }
            Some(vec![
                fmt::key(&r.key),
                fmt::int(c.width),
                fmt::int(c.depth),
                format!("{} B", c.cell_size),
                count,
                counts(c.error_bound),
                confidence(c.confidence),
                fmt::int(c.fullest_cell),
                fmt::percent(r.fill),
                fmt::bytes(r.size),
                r.level.styled(),
            ])
        })
        .collect();
    fmt::table(&columns, &cells, "")
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrobloom_core::cms::{CellSize, CountMinSketch};
    use ferrobloom_core::dump_format::RDB_VERSION_7_0;
    use ferrobloom_core::Unguarded;

    #[test]
    fn a_payload_of_every_cell_size_is_measured() {
        for size in CellSize::ALL {
            let mut s = CountMinSketch::new(10, 3, size, &Unguarded).unwrap();
            s.incrby(b"a", 200).unwrap();
            s.incrby(b"b", 50).unwrap();
            let row = from_payload(b"k", &dump::dump_payload(&s, RDB_VERSION_7_0)).unwrap();
            let Detail::Cms(c) = &row.detail else {
                panic!("{row:?}")
            };
            assert_eq!((row.items, row.capacity), (250, size.max_count()));
            assert_eq!(row.bytes, 30 * size.bytes());
            assert_eq!((c.width, c.depth, c.cell_size), (10, 3, size.bytes()));
            // Each row holds a's 200 in some cell, with b's 50 when they share it.
            assert!(c.fullest_cell == 200 || c.fullest_cell == 250, "{c:?}");
            assert_eq!(row.fill, c.fullest_cell as f64 / size.max_count() as f64);
            assert_eq!(c.error_bound, 50.0);
            assert_eq!(c.confidence, 0.875);
        }
        assert!(from_payload(b"k", b"not a payload").is_err());
    }
}
