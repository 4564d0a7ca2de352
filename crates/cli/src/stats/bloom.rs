//! `ferrobloom stats` of plain Bloom filters (MBbloom--): BF.STATS where
//! the server has it, else BF.INFO and BF.DEBUG (RedisBloom), with the
//! false positive rate estimated from the item counts.

use ferrobloom_core::bloom::plan::{chain_fpr, expected_link_fpr};
use serde_json::{json, Value as Json};

use super::{bad_reply, stats_or_estimate, Detail, Fields, Kind, Level, Reader, Row, Source};
use crate::conn::{Server, BLOOM_TYPE};

/// What a Bloom filter's row says beyond the common columns.
#[derive(Clone, Debug, PartialEq)]
pub struct Bloom {
    pub links: u64,
    pub policy: Option<String>,
    pub expansion: Option<u64>,
}

/// Plain Bloom filters; their level is from the fill thresholds.
pub struct BloomKind;

impl Kind for BloomKind {
    fn type_name(&self) -> &'static str {
        BLOOM_TYPE
    }

    fn read(&self, r: &mut Reader<'_>, key: &[u8]) -> redis::RedisResult<Row> {
        let mut row = stats_or_estimate(r, key, from_stats, from_info_debug)?;
        row.level = Level::of(row.fill, &r.thresholds);
        Ok(row)
    }
}

fn from_stats(server: &mut Server, key: &[u8]) -> redis::RedisResult<Row> {
    let reply: redis::Value = server.query(redis::cmd("BF.STATS").arg(key))?;
    let p = Fields::of(reply, "BF.STATS")?;
    Ok(Row {
        key: key.to_vec(),
        items: p.uint("items")?,
        capacity: p.uint("capacity")?,
        fill: p.float("fill_ratio")?,
        fpr: p.float("estimated_fpr")?,
        source: Source::Stats,
        size: p.uint("size")?,
        bytes: p.uint("bytes")?,
        level: Level::Ok,
        detail: Detail::Bloom(Bloom {
            links: p.uint("links")?,
            policy: p.text("policy").ok(),
            expansion: p.uint("expansion").ok(),
        }),
    })
}

/// One line of BF.DEBUG after the first: `bytes:B bits:b hashes:k
/// hashwidth:w capacity:C size:n ratio:r`.
#[derive(Debug, PartialEq)]
pub struct DebugLink {
    pub bytes: u64,
    pub bits: u64,
    pub hashes: u32,
    pub capacity: u64,
    pub items: u64,
}

pub fn parse_debug_link(line: &str) -> Option<DebugLink> {
    let get = |name: &str| -> Option<u64> {
        line.split_whitespace()
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix(':'))?
            .parse()
            .ok()
    };
    Some(DebugLink {
        bytes: get("bytes")?,
        bits: get("bits")?,
        hashes: u32::try_from(get("hashes")?).ok()?,
        capacity: get("capacity")?,
        items: get("size")?,
    })
}

/// The false positive rate the links' sizes and item counts imply:
/// `1 - prod(1 - (1 - e^(-k n / m))^k)`.
pub fn fpr_from_counts(links: &[DebugLink]) -> f64 {
    chain_fpr(
        links
            .iter()
            .map(|l| expected_link_fpr(l.hashes, l.bits, l.items)),
    )
}

fn from_info_debug(server: &mut Server, key: &[u8]) -> redis::RedisResult<Row> {
    let info: redis::Value = server.query(redis::cmd("BF.INFO").arg(key))?;
    let p = Fields::of(info, "BF.INFO")?;
    let capacity = p.uint("Capacity")?;
    let items = p.uint("Number of items inserted")?;
    let size = p.uint("Size")?;
    let links_count = p.uint("Number of filters")?;
    let expansion = p.uint("Expansion rate").ok();
    let debug: Vec<String> = server.query(redis::cmd("BF.DEBUG").arg(key))?;
    let links: Vec<DebugLink> = debug
        .iter()
        .skip(1)
        .filter_map(|l| parse_debug_link(l))
        .collect();
    if links.len() as u64 != links_count {
        return Err(bad_reply("BF.DEBUG"));
    }
    Ok(Row {
        key: key.to_vec(),
        items,
        capacity,
        fill: ferrobloom_core::bloom::stats::ratio(items, capacity),
        fpr: fpr_from_counts(&links),
        source: Source::InfoDebug,
        size,
        bytes: links.iter().map(|l| l.bytes).sum(),
        level: Level::Ok,
        detail: Detail::Bloom(Bloom {
            links: links_count,
            policy: None,
            expansion,
        }),
    })
}

/// A Bloom filter's entry in `stats --json`.
pub fn json(r: &Row, b: &Bloom, key: String, key_hex: Option<String>) -> Json {
    json!({
        "type": "bloom",
        "key": key,
        "key_hex": key_hex,
        "items": r.items,
        "capacity": r.capacity,
        "fill_ratio": r.fill,
        "estimated_fpr": r.fpr,
        "fpr_from": match r.source {
            Source::Stats => "set bits (BF.STATS)",
            Source::InfoDebug => "item counts (BF.INFO, BF.DEBUG)",
        },
        "size": r.size,
        "bytes": r.bytes,
        "links": b.links,
        "policy": b.policy,
        "expansion": b.expansion,
        "level": r.level.name(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_lines() {
        let l = parse_debug_link(
            "bytes:144 bits:1152 hashes:8 hashwidth:64 capacity:100 size:3 ratio:0.005",
        )
        .unwrap();
        assert_eq!(
            l,
            DebugLink {
                bytes: 144,
                bits: 1152,
                hashes: 8,
                capacity: 100,
                items: 3
            }
        );
        assert!(parse_debug_link("size:3").is_none());
    }

    #[test]
    fn full_link_is_near_its_error_rate() {
        let l = DebugLink {
            bytes: 144,
            bits: 1152,
            hashes: 8,
            capacity: 100,
            items: 100,
        };
        let fpr = fpr_from_counts(&[l]);
        // At capacity, at most the link's error rate (word rounding adds bits).
        assert!(fpr > 0.003 && fpr <= 0.005, "{fpr}");
    }
}
