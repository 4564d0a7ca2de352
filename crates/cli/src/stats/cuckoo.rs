//! `ferrobloom stats` of Cuckoo filters (MBbloomCF): CF.STATS where the
//! server has it, else CF.INFO (RedisBloom), with the load and false
//! positive rate estimated from the item counter.

use serde_json::{json, Value as Json};

use super::{stats_or_estimate, Detail, Fields, Kind, Level, Reader, Row, Source, Thresholds};
use crate::conn::{Server, CUCKOO_TYPE};

/// What a Cuckoo filter's row says beyond the common columns; its
/// capacity is its slots.
#[derive(Clone, Debug, PartialEq)]
pub struct Cuckoo {
    pub sub_filters: u64,
    pub expansion: u64,
    pub bucket_size: u64,
}

/// Cuckoo filters: their level is CF.STATS' `fill_level`, or from the
/// thresholds on items over slots (CF.INFO).
pub struct CuckooKind;

impl Kind for CuckooKind {
    fn type_name(&self) -> &'static str {
        CUCKOO_TYPE
    }

    fn read(&self, r: &mut Reader<'_>, key: &[u8]) -> redis::RedisResult<Row> {
        let thresholds = r.thresholds;
        stats_or_estimate(r, key, from_cf_stats, |server, key| {
            from_cf_info(server, key, &thresholds)
        })
    }
}

/// A Cuckoo filter, from CF.STATS: its fill is the newest sub-filter's
/// load (where inserts go), its level CF.STATS' `fill_level` (warning past
/// bf.fill-warning; alert past bf.fill-alert when it cannot grow).
fn from_cf_stats(server: &mut Server, key: &[u8]) -> redis::RedisResult<Row> {
    let reply: redis::Value = server.query(redis::cmd("CF.STATS").arg(key))?;
    let p = Fields::of(reply, "CF.STATS")?;
    let level = p.level()?;
    Ok(Row {
        key: key.to_vec(),
        items: p.uint("items")?,
        capacity: p.uint("slots")?,
        fill: p.float("newest_load_factor")?,
        fpr: p.float("estimated_fpr")?,
        source: Source::Stats,
        size: p.uint("size")?,
        bytes: p.uint("bytes")?,
        level,
        detail: Detail::Cuckoo(Cuckoo {
            sub_filters: p.uint("sub_filters")?,
            expansion: p.uint("expansion")?,
            bucket_size: p.uint("bucket_size")?,
        }),
    })
}

/// A Cuckoo filter from CF.INFO alone (RedisBloom): slots from the bucket
/// counts `N0 × E^i`, its fill the item counter over the slots, its false
/// positive rate estimated with that load in every sub-filter, its level
/// from the thresholds.
fn from_cf_info(server: &mut Server, key: &[u8], t: &Thresholds) -> redis::RedisResult<Row> {
    use ferrobloom_core::cuckoo::sizing::sub_filter_buckets;
    use ferrobloom_core::cuckoo::stats::sub_filter_fpr;
    let info: redis::Value = server.query(redis::cmd("CF.INFO").arg(key))?;
    let p = Fields::of(info, "CF.INFO")?;
    let u = |name: &str| p.uint(name);
    let (base, count, items) = (
        u("Number of buckets")?,
        u("Number of filters")?,
        u("Number of items inserted")?,
    );
    let bs = u("Bucket size")?;
    let expansion = u("Expansion rate")?;
    let buckets: u64 = (0..count.min(u64::from(u16::MAX)) as u32)
        .map(|i| {
            sub_filter_buckets(base, u16::try_from(expansion).unwrap_or(0), i)
                .unwrap_or(if i == 0 { base } else { 0 })
        })
        .fold(0u64, u64::saturating_add);
    let slots = buckets.saturating_mul(bs);
    let fill = ferrobloom_core::bloom::stats::ratio(items, slots);
    let miss = 1.0 - sub_filter_fpr(fill, u8::try_from(bs).unwrap_or(u8::MAX));
    let fpr = 1.0 - miss.powi(i32::try_from(count).unwrap_or(i32::MAX));
    Ok(Row {
        key: key.to_vec(),
        items,
        capacity: slots,
        fill,
        fpr,
        source: Source::InfoDebug,
        size: u("Size")?,
        bytes: slots,
        level: Level::of(fill, t),
        detail: Detail::Cuckoo(Cuckoo {
            sub_filters: count,
            expansion,
            bucket_size: bs,
        }),
    })
}

/// A Cuckoo filter's entry in `stats --json`.
pub fn json(r: &Row, c: &Cuckoo, key: String, key_hex: Option<String>) -> Json {
    json!({
        "key": key,
        "key_hex": key_hex,
        "type": "cuckoo",
        "items": r.items,
        "slots": r.capacity,
        "fill_ratio": r.fill,
        "estimated_fpr": r.fpr,
        "fpr_from": match r.source {
            Source::Stats => "occupied slots (CF.STATS)",
            Source::InfoDebug => "item counts (CF.INFO)",
        },
        "size": r.size,
        "bytes": r.bytes,
        "sub_filters": c.sub_filters,
        "bucket_size": c.bucket_size,
        "expansion": c.expansion,
        "level": r.level.name(),
    })
}
