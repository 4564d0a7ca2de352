//! `ferrobloom stats` of Top-K sketches (TopK-TYPE): TOPK.INFO (which
//! says the key exists and is a Top-K, with the server's error otherwise)
//! and the key's DUMP payload decoded here with ferrobloom_core, so
//! FerroBloom and RedisBloom 2.8.2 give the same numbers without a STATS
//! command. Listed in a table of their own: a Top-K has no capacity to
//! run out of (its list is full by design), so its level is always ok.

use ferrobloom_core::topk::{dump, stats as core_stats, TopK};
use serde_json::{json, Value as Json};

use super::{bad_reply, Detail, Fields, Kind, Level, Reader, Row, Source};
use crate::conn::{Server, TOPK_TYPE};
use crate::fmt::{self, Column};

/// What a Top-K's row says beyond the common ones: its items are the
/// listed items (TOPK.LIST), its capacity k, its fill their ratio, its
/// size MEMORY USAGE's number and its bytes what the value holds.
#[derive(Clone, Debug, PartialEq)]
pub struct TopKDetail {
    pub k: u32,
    pub width: u32,
    pub depth: u32,
    pub decay: f64,
    /// The count an item's buckets must reach for it to enter the list (0
    /// while the list has room).
    pub entry_count: u32,
    /// The largest listed count.
    pub top_count: u32,
    pub occupied_buckets: u64,
    /// Occupied buckets over width × depth.
    pub occupancy: f64,
}

pub struct TopKKind;

impl Kind for TopKKind {
    fn type_name(&self) -> &'static str {
        TOPK_TYPE
    }

    fn read(&self, r: &mut Reader<'_>, key: &[u8]) -> redis::RedisResult<Row> {
        let info: redis::Value = r.server.query(redis::cmd("TOPK.INFO").arg(key))?;
        let info = Fields::of(info, "TOPK.INFO")?;
        let Some(payload) = dump_of(r.server, key)? else {
            return Err(super::gone());
        };
        let row = from_payload(key, &payload)?;
        let Detail::TopK(t) = &row.detail else {
            unreachable!("a Top-K's row")
        };
        if (info.uint("k")?, info.uint("width")?, info.uint("depth")?)
            != (u64::from(t.k), u64::from(t.width), u64::from(t.depth))
        {
            return Err(bad_reply(
                "TOPK.INFO and DUMP (the key changed between them)",
            ));
        }
        Ok(row)
    }
}

fn dump_of(server: &mut Server, key: &[u8]) -> redis::RedisResult<Option<Vec<u8>>> {
    server.query(redis::cmd("DUMP").arg(key))
}

/// A Top-K's row from its DUMP payload, measured by the core's code.
pub fn from_payload(key: &[u8], payload: &[u8]) -> redis::RedisResult<Row> {
    let sketch = dump::load_payload(payload).map_err(|e| {
        bad_reply(&format!(
            "DUMP of a Top-K sketch that does not decode ({e:?})"
        ))
    })?;
    Ok(row(key, &sketch))
}

fn row(key: &[u8], sketch: &TopK) -> Row {
    let s = core_stats::stats(sketch);
    let list = sketch.list();
    let listed = list.len() as u64;
    Row {
        key: key.to_vec(),
        items: listed,
        capacity: u64::from(s.k),
        fill: listed as f64 / f64::from(s.k),
        fpr: 0.0,
        source: Source::InfoDebug,
        size: sketch.memory_usage(),
        bytes: sketch.allocated_bytes(),
        level: Level::Ok,
        detail: Detail::TopK(TopKDetail {
            k: s.k,
            width: s.width,
            depth: s.depth,
            decay: s.decay,
            entry_count: s.min_heap_count,
            top_count: list.first().map_or(0, |h| h.count()),
            occupied_buckets: s.occupied_buckets,
            occupancy: s.occupancy,
        }),
    }
}

/// A Top-K's entry in `stats --json`.
pub fn json(r: &Row, t: &TopKDetail, key: String, key_hex: Option<String>) -> Json {
    json!({
        "key": key,
        "key_hex": key_hex,
        "type": "topk",
        "items": r.items,
        "listed": r.items,
        "k": t.k,
        "width": t.width,
        "depth": t.depth,
        "decay": t.decay,
        "entry_count": t.entry_count,
        "top_count": t.top_count,
        "occupied_buckets": t.occupied_buckets,
        "occupancy": t.occupancy,
        "fill_ratio": r.fill,
        "size": r.size,
        "bytes": r.bytes,
        "from": "TOPK.INFO+DUMP",
        "level": r.level.name(),
    })
}

/// What the Top-K columns mean, under the summary.
pub const NOTE: &str = "Top-K: LISTED is what TOPK.LIST answers, of K; ENTRY is the count an \
    item must reach to enter a full list; TOP the largest listed count; BUCKETS the share of \
    width × depth buckets an item owns; SIZE is MEMORY USAGE's number, BYTES what the sketch \
    holds; read from TOPK.INFO and the key's DUMP, decoded here; no level: a Top-K's list is \
    full by design\n";

pub fn table(rows: &[&Row]) -> String {
    let col = |title, right| Column { title, right };
    let columns = [
        col("TOP-K", false),
        col("K", true),
        col("WIDTH", true),
        col("DEPTH", true),
        col("DECAY", true),
        col("LISTED", true),
        col("ENTRY", true),
        col("TOP", true),
        col("BUCKETS", true),
        col("SIZE", true),
        col("BYTES", true),
    ];
    let cells: Vec<Vec<String>> = rows
        .iter()
        .filter_map(|r| {
            let Detail::TopK(t) = &r.detail else {
                return None;
            };
            Some(vec![
                fmt::key(&r.key),
                fmt::int(u64::from(t.k)),
                fmt::int(u64::from(t.width)),
                fmt::int(u64::from(t.depth)),
                fmt::g(t.decay, 6),
                fmt::int(r.items),
                fmt::int(u64::from(t.entry_count)),
                fmt::int(u64::from(t.top_count)),
                fmt::percent(t.occupancy),
                fmt::bytes(r.size),
                fmt::bytes(r.bytes),
            ])
        })
        .collect();
    fmt::table(&columns, &cells, "")
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrobloom_core::dump_format::RDB_VERSION_7_0;
    use ferrobloom_core::topk::Params;
    use ferrobloom_core::Unguarded;

    #[test]
    fn a_payload_is_measured() {
        let params = Params {
            k: 3,
            width: 100,
            depth: 2,
            decay: 0.9,
        };
        let mut s = TopK::new(params, &Unguarded).unwrap();
        for item in [&b"a"[..], b"a", b"a", b"b", b"b", b"c\0d"] {
            s.add(item).unwrap();
        }
        let row = from_payload(b"k", &dump::dump_payload(&s, RDB_VERSION_7_0)).unwrap();
        let Detail::TopK(t) = &row.detail else {
            panic!("{row:?}")
        };
        assert_eq!((row.items, row.capacity), (3, 3));
        assert_eq!(row.fill, 1.0);
        assert_eq!((t.k, t.width, t.depth, t.decay), (3, 100, 2, 0.9));
        assert_eq!((t.top_count, t.entry_count), (3, 1));
        assert_eq!(row.size, 2088 + 100 * 2 * 8 + 3 * 24);
        assert!(row.bytes > 1600, "{}", row.bytes);
        let text = table(&[&row]);
        assert!(text.lines().nth(1).unwrap().starts_with("k "), "{text}");
        let j = json(&row, t, "k".into(), None);
        assert_eq!(j["listed"], 3);
        assert_eq!(j["level"], "ok");
        assert!(from_payload(b"k", b"not a payload").is_err());
    }
}
