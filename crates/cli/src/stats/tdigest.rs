//! `ferrobloom stats` of t-digests (TDIS-TYPE): TDIGEST.INFO (the nodes
//! the server holds, merged and not yet merged; its error for a key that
//! is not a t-digest) and the key's DUMP payload decoded here with
//! ferrobloom_core (its compressed centroids, range and observations), so
//! FerroBloom and RedisBloom 2.8.2 give the same numbers without a STATS
//! command. RedisBloom 2.8.2 compresses the digest when it writes the
//! DUMP, as it does on every read (its answers do not change);
//! FerroBloom's DUMP changes nothing. A digest's nodes are reserved at
//! creation, so it has nothing to run out of: its level is always ok.

use ferrobloom_core::tdigest::plan::STRUCT_BYTES;
use ferrobloom_core::tdigest::{dump, stats as core_stats, TDigest};
use ferrobloom_core::Unguarded;
use serde_json::{json, Value as Json};

use super::{bad_reply, Detail, Fields, Kind, Level, Reader, Row, Source};
use crate::conn::TDIGEST_TYPE;
use crate::fmt::{self, Column};

/// What a digest's row says beyond the common ones: its items are its
/// observations, its capacity its nodes, its fill the nodes it holds over
/// them, its size MEMORY USAGE's number and its bytes what it holds.
#[derive(Clone, Debug, PartialEq)]
pub struct TDigestDetail {
    pub compression: f64,
    /// Nodes held, from TDIGEST.INFO.
    pub merged_nodes: u64,
    pub unmerged_nodes: u64,
    /// Centroids once compressed (the DUMP's).
    pub centroids: u64,
    pub heaviest_centroid: i64,
    /// None without observations.
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// The worst rank error at the median, a fraction of the observations
    /// (`ferrobloom plan --tdigest`'s bound at this count).
    pub rank_error: f64,
}

pub struct TDigestKind;

impl Kind for TDigestKind {
    fn type_name(&self) -> &'static str {
        TDIGEST_TYPE
    }

    fn read(&self, r: &mut Reader<'_>, key: &[u8]) -> redis::RedisResult<Row> {
        let info: redis::Value = r.server.query(redis::cmd("TDIGEST.INFO").arg(key))?;
        let info = Fields::of(info, "TDIGEST.INFO")?;
        let payload: Option<Vec<u8>> = r.server.query(redis::cmd("DUMP").arg(key))?;
        let Some(payload) = payload else {
            return Err(super::gone());
        };
        let (merged, unmerged) = (info.uint("Merged nodes")?, info.uint("Unmerged nodes")?);
        let row = from_payload(key, &payload, merged, unmerged)?;
        if info.uint("Capacity")? != row.capacity {
            return Err(bad_reply(
                "TDIGEST.INFO and DUMP (the key changed between them)",
            ));
        }
        Ok(row)
    }
}

/// A digest's row from its DUMP payload (measured by the core's code) and
/// the nodes TDIGEST.INFO says it holds.
pub fn from_payload(
    key: &[u8],
    payload: &[u8],
    merged_nodes: u64,
    unmerged_nodes: u64,
) -> redis::RedisResult<Row> {
    let td = dump::load_payload(payload, &Unguarded)
        .map_err(|e| bad_reply(&format!("DUMP of a t-digest that does not decode ({e:?})")))?;
    Ok(row(key, &td, merged_nodes, unmerged_nodes))
}

fn row(key: &[u8], td: &TDigest, merged_nodes: u64, unmerged_nodes: u64) -> Row {
    let s = core_stats::stats(td);
    let capacity = s.capacity.max(1) as u64;
    Row {
        key: key.to_vec(),
        items: s.observations.max(0) as u64,
        capacity,
        fill: (merged_nodes + unmerged_nodes) as f64 / capacity as f64,
        fpr: 0.0,
        source: Source::InfoDebug,
        size: s.memory_usage.max(0) as u64,
        bytes: 16 * capacity + STRUCT_BYTES,
        level: Level::Ok,
        detail: Detail::TDigest(TDigestDetail {
            compression: s.compression,
            merged_nodes,
            unmerged_nodes,
            centroids: s.merged_nodes as u64,
            heaviest_centroid: s.heaviest_centroid,
            min: s.min,
            max: s.max,
            rank_error: s.rank_error_median,
        }),
    }
}

/// A digest's entry in `stats --json`.
pub fn json(r: &Row, t: &TDigestDetail, key: String, key_hex: Option<String>) -> Json {
    json!({
        "key": key,
        "key_hex": key_hex,
        "type": "tdigest",
        "items": r.items,
        "observations": r.items,
        "compression": t.compression,
        "capacity": r.capacity,
        "merged_nodes": t.merged_nodes,
        "unmerged_nodes": t.unmerged_nodes,
        "nodes": t.merged_nodes + t.unmerged_nodes,
        "fill_ratio": r.fill,
        "centroids": t.centroids,
        "heaviest_centroid": t.heaviest_centroid,
        "min": t.min,
        "max": t.max,
        "rank_error": t.rank_error,
        "size": r.size,
        "bytes": r.bytes,
        "from": "TDIGEST.INFO+DUMP",
        "level": r.level.name(),
    })
}

/// What the t-digest columns mean, under the summary.
pub const NOTE: &str = "t-digests: NODES are those held (merged and not yet merged, TDIGEST.INFO) \
    of the capacity reserved at creation; CENTROIDS once compressed; RANK ERROR the bound on a \
    quantile's rank error at the median, a share of the observations (`ferrobloom plan \
    --tdigest`); read from TDIGEST.INFO and the key's DUMP, decoded here; no level: a digest's \
    nodes are reserved at creation\n";

/// A double as the table shows it; `-` for none.
fn value(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_string(), |v| fmt::g(v, 6))
}

pub fn table(rows: &[&Row]) -> String {
    let col = |title, right| Column { title, right };
    let columns = [
        col("T-DIGEST", false),
        col("COMPRESSION", true),
        col("OBSERVATIONS", true),
        col("NODES", true),
        col("CENTROIDS", true),
        col("MIN", true),
        col("MAX", true),
        col("RANK ERROR", true),
        col("SIZE", true),
    ];
    let cells: Vec<Vec<String>> = rows
        .iter()
        .filter_map(|r| {
            let Detail::TDigest(t) = &r.detail else {
                return None;
            };
            Some(vec![
                fmt::key(&r.key),
                fmt::g(t.compression, 6),
                fmt::int(r.items),
                format!(
                    "{} / {}",
                    fmt::int(t.merged_nodes + t.unmerged_nodes),
                    fmt::int(r.capacity)
                ),
                fmt::int(t.centroids),
                value(t.min),
                value(t.max),
                format!("{}%", fmt::g(t.rank_error * 100.0, 3)),
                fmt::bytes(r.size),
            ])
        })
        .collect();
    fmt::table(&columns, &cells, "")
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrobloom_core::dump_format::RDB_VERSION_7_0;

    #[test]
    fn a_payload_is_measured() {
        let mut td = TDigest::new(10.0, &Unguarded).unwrap();
        for i in 0..1000 {
            td.add(f64::from(i)).unwrap();
        }
        let payload = dump::dump_payload(&td, RDB_VERSION_7_0);
        let row = from_payload(b"d", &payload, 3, 7).unwrap();
        let Detail::TDigest(t) = &row.detail else {
            panic!("{row:?}")
        };
        assert_eq!((row.items, row.capacity), (1000, 70));
        assert_eq!(row.fill, 10.0 / 70.0);
        assert_eq!(row.size, 16 * 70 + 8);
        assert_eq!((t.min, t.max), (Some(0.0), Some(999.0)));
        assert!(t.centroids > 1 && t.centroids <= 70, "{t:?}");
        assert!(t.heaviest_centroid > 1, "{t:?}");
        let j = json(&row, t, "d".into(), None);
        assert_eq!(j["nodes"], 10);
        assert_eq!(j["level"], "ok");
        let text = table(&[&row]);
        assert!(text.contains("10 / 70"), "{text}");

        let empty = TDigest::new(100.0, &Unguarded).unwrap();
        let row = from_payload(b"e", &dump::dump_payload(&empty, RDB_VERSION_7_0), 0, 0).unwrap();
        let Detail::TDigest(t) = &row.detail else {
            panic!()
        };
        assert_eq!((row.items, t.min), (0, None));
        assert!(table(&[&row]).contains(" - "));
        assert!(from_payload(b"k", b"junk", 0, 0).is_err());
    }
}
