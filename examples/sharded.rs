//! One logical Bloom filter sharded over the masters of a Redis Cluster that
//! runs FerroBloom (see docs/cluster.md, "Sharding one filter").
//!
//! The filter NAME with N shards is the N keys `NAME:{shard-0}` ..
//! `NAME:{shard-<N-1>}`; the hash tag gives each shard its own slot, so the
//! cluster spreads them over its masters. An item belongs to shard
//! `xxh3_64(item) mod N`: XXH3, 64-bit, seed 0, over the item's bytes, a
//! specified hash that every language computes alike (Python:
//! `xxhash.xxh3_64_intdigest(item) % n`, Go: `xxh3.Hash(item) % n` with
//! github.com/zeebo/xxh3). Each shard is reserved for capacity / N items at
//! the filter's error rate.
//!
//! ```text
//! cargo run --release --example sharded -- [URL] [NAME] [SHARDS] [CAPACITY] [ERROR_RATE] [ITEMS]
//! ```
//!
//! Defaults: `redis://127.0.0.1:7000/ sharded-demo 8 1000000 0.001 100000`.
//! URL is any node of the cluster. The example creates the shards (it
//! refuses if one of the keys exists), adds ITEMS items `item:0`, `item:1`,
//! .. in BF.MADD batches grouped by shard, checks that every one is found,
//! probes as many items never added to measure the false positive rate,
//! and prints where each shard lives.

use std::collections::BTreeMap;
use std::error::Error;

use redis::cluster::{cluster_pipe, ClusterClient, ClusterConnection};
use redis::Value;
use xxhash_rust::xxh3::xxh3_64;

pub type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// Items per batch: each batch is one BF.MADD (or BF.MEXISTS) per shard,
/// sent together in one cluster pipeline.
pub const BATCH: usize = 4096;

/// The shard of `item` in a filter of `shards` shards.
pub fn shard_of(item: &[u8], shards: u32) -> u32 {
    (xxh3_64(item) % u64::from(shards)) as u32
}

/// The key of shard `shard` of the filter `name`.
pub fn shard_key(name: &str, shard: u32) -> String {
    format!("{name}:{{shard-{shard}}}")
}

/// A logical filter made of `shards` Bloom filters, one per shard key.
pub struct ShardedBloom {
    name: String,
    shards: u32,
}

impl ShardedBloom {
    pub fn new(name: &str, shards: u32) -> ShardedBloom {
        assert!(shards > 0, "a sharded filter needs at least one shard");
        ShardedBloom {
            name: name.to_string(),
            shards,
        }
    }

    pub fn shards(&self) -> u32 {
        self.shards
    }

    pub fn key(&self, shard: u32) -> String {
        shard_key(&self.name, shard)
    }

    pub fn keys(&self) -> Vec<String> {
        (0..self.shards).map(|s| self.key(s)).collect()
    }

    /// Creates every shard: `BF.RESERVE key error_rate ceil(capacity / N)`,
    /// plus `extra` (e.g. `["EXPANSION", "2"]` or `["NONSCALING"]`).
    /// Fails, like BF.RESERVE, if a shard exists.
    pub fn reserve(
        &self,
        con: &mut ClusterConnection,
        capacity: u64,
        error_rate: f64,
        extra: &[&str],
    ) -> Result<()> {
        let per_shard = capacity.div_ceil(u64::from(self.shards)).max(1);
        for key in self.keys() {
            redis::cmd("BF.RESERVE")
                .arg(&key)
                .arg(error_rate)
                .arg(per_shard)
                .arg(extra)
                .query::<()>(con)
                .map_err(|e| format!("BF.RESERVE {key}: {e}"))?;
        }
        Ok(())
    }

    /// Adds `items`; for each, true if it was new (BF.MADD's 1).
    pub fn add<T: AsRef<[u8]>>(
        &self,
        con: &mut ClusterConnection,
        items: &[T],
    ) -> Result<Vec<bool>> {
        self.batched(con, "BF.MADD", items)
    }

    /// For each item, true if it may have been added (BF.MEXISTS's 1).
    pub fn exists<T: AsRef<[u8]>>(
        &self,
        con: &mut ClusterConnection,
        items: &[T],
    ) -> Result<Vec<bool>> {
        self.batched(con, "BF.MEXISTS", items)
    }

    /// BF.CARD of each shard.
    pub fn cards(&self, con: &mut ClusterConnection) -> Result<Vec<u64>> {
        let mut cards = Vec::with_capacity(self.shards as usize);
        for key in self.keys() {
            cards.push(redis::cmd("BF.CARD").arg(&key).query::<u64>(con)?);
        }
        Ok(cards)
    }

    /// Items added to the logical filter: the sum of the shards' BF.CARD.
    pub fn card(&self, con: &mut ClusterConnection) -> Result<u64> {
        Ok(self.cards(con)?.iter().sum())
    }

    /// Runs `command key item..` per shard over `items` in batches of
    /// BATCH, and puts the 0/1 replies back in the items' order.
    fn batched<T: AsRef<[u8]>>(
        &self,
        con: &mut ClusterConnection,
        command: &str,
        items: &[T],
    ) -> Result<Vec<bool>> {
        let mut answers = vec![false; items.len()];
        for (batch_no, batch) in items.chunks(BATCH).enumerate() {
            let offset = batch_no * BATCH;
            // Positions (within `items`) of the batch's items, per shard.
            let mut by_shard: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
            for (i, item) in batch.iter().enumerate() {
                by_shard
                    .entry(shard_of(item.as_ref(), self.shards))
                    .or_default()
                    .push(offset + i);
            }
            let mut pipe = cluster_pipe();
            for (&shard, positions) in &by_shard {
                let cmd = pipe.cmd(command).arg(self.key(shard));
                for &p in positions {
                    cmd.arg(items[p].as_ref());
                }
            }
            let replies: Vec<Vec<Value>> = pipe.query(con)?;
            for ((&shard, positions), reply) in by_shard.iter().zip(replies) {
                if reply.len() != positions.len() {
                    return Err(format!(
                        "{command} {}: {} replies for {} items",
                        self.key(shard),
                        reply.len(),
                        positions.len()
                    )
                    .into());
                }
                for (&p, value) in positions.iter().zip(reply) {
                    answers[p] = match value {
                        Value::Int(0) => false,
                        Value::Int(1) => true,
                        other => {
                            return Err(format!("{command} {}: {other:?}", self.key(shard)).into())
                        }
                    };
                }
            }
        }
        Ok(answers)
    }
}

/// What `run` does.
pub struct Demo {
    pub name: String,
    pub shards: u32,
    pub capacity: u64,
    pub error_rate: f64,
    pub items: u64,
}

impl Default for Demo {
    fn default() -> Self {
        Demo {
            name: "sharded-demo".into(),
            shards: 8,
            capacity: 1_000_000,
            error_rate: 0.001,
            items: 100_000,
        }
    }
}

/// What `run` found.
#[derive(Debug)]
pub struct Report {
    /// Per shard: key, slot, the master serving it, BF.CARD.
    pub shards: Vec<(String, u16, String, u64)>,
    /// Items added that BF.MADD reported new.
    pub new: u64,
    /// Items added that BF.MEXISTS then found (all of them, or `run` fails).
    pub found: u64,
    /// Of `items` items never added, how many were reported present.
    pub false_positives: u64,
}

pub fn run(url: &str, demo: &Demo) -> Result<Report> {
    let client = ClusterClient::new(vec![url])?;
    let mut con = client.get_connection()?;
    let filter = ShardedBloom::new(&demo.name, demo.shards);
    for key in filter.keys() {
        if redis::cmd("EXISTS").arg(&key).query::<bool>(&mut con)? {
            return Err(format!("{key} exists: pick another name or delete the shards").into());
        }
    }
    filter.reserve(&mut con, demo.capacity, demo.error_rate, &[])?;

    let added: Vec<String> = (0..demo.items).map(|i| format!("item:{i}")).collect();
    let new = filter.add(&mut con, &added)?.iter().filter(|&&b| b).count() as u64;
    let found = filter.exists(&mut con, &added)?;
    if let Some(i) = found.iter().position(|&b| !b) {
        let shard = shard_of(added[i].as_bytes(), demo.shards);
        return Err(format!("{} not found in {}", added[i], filter.key(shard)).into());
    }

    let absent: Vec<String> = (0..demo.items).map(|i| format!("absent:{i}")).collect();
    let false_positives = filter
        .exists(&mut con, &absent)?
        .iter()
        .filter(|&&b| b)
        .count() as u64;

    let owners = slot_owners(&mut con)?;
    let cards = filter.cards(&mut con)?;
    let mut shards = Vec::new();
    for (shard, card) in (0..demo.shards).zip(cards) {
        let key = filter.key(shard);
        let slot: u16 = redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(&key)
            .query(&mut con)?;
        let owner = owners
            .iter()
            .find(|(lo, hi, _)| (*lo..=*hi).contains(&slot))
            .map_or_else(|| "?".to_string(), |(_, _, addr)| addr.clone());
        shards.push((key, slot, owner, card));
    }
    Ok(Report {
        shards,
        new,
        found: found.len() as u64,
        false_positives,
    })
}

/// (first slot, last slot, "host:port" of the master) from CLUSTER SLOTS.
pub fn slot_owners(con: &mut ClusterConnection) -> Result<Vec<(u16, u16, String)>> {
    let ranges: Vec<Value> = redis::cmd("CLUSTER").arg("SLOTS").query(con)?;
    let mut owners = Vec::new();
    for range in ranges {
        let Value::Array(fields) = range else {
            return Err(format!("CLUSTER SLOTS entry {range:?}").into());
        };
        let (Some(Value::Int(lo)), Some(Value::Int(hi)), Some(Value::Array(master))) =
            (fields.first(), fields.get(1), fields.get(2))
        else {
            return Err(format!("CLUSTER SLOTS entry {fields:?}").into());
        };
        let host = match master.first() {
            Some(Value::BulkString(b)) => String::from_utf8_lossy(b).into_owned(),
            other => return Err(format!("CLUSTER SLOTS host {other:?}").into()),
        };
        let port = match master.get(1) {
            Some(Value::Int(p)) => *p,
            other => return Err(format!("CLUSTER SLOTS port {other:?}").into()),
        };
        owners.push((*lo as u16, *hi as u16, format!("{host}:{port}")));
    }
    Ok(owners)
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let defaults = Demo::default();
    let arg = |i: usize| args.get(i).map(String::as_str);
    let url = arg(0).unwrap_or("redis://127.0.0.1:7000/");
    let demo = Demo {
        name: arg(1).map_or(defaults.name, str::to_string),
        shards: arg(2).map_or(Ok(defaults.shards), str::parse)?,
        capacity: arg(3).map_or(Ok(defaults.capacity), str::parse)?,
        error_rate: arg(4).map_or(Ok(defaults.error_rate), str::parse)?,
        items: arg(5).map_or(Ok(defaults.items), str::parse)?,
    };
    let report = run(url, &demo)?;
    println!(
        "{:<28} {:>5}  {:<21} {:>10}",
        "shard", "slot", "master", "BF.CARD"
    );
    for (key, slot, owner, card) in &report.shards {
        println!("{key:<28} {slot:>5}  {owner:<21} {card:>10}");
    }
    println!(
        "added {} items ({} new), all {} found; {} of {} items never added were reported \
         present: false positive rate {:.5} (target {})",
        demo.items,
        report.new,
        report.found,
        report.false_positives,
        demo.items,
        report.false_positives as f64 / demo.items.max(1) as f64,
        demo.error_rate
    );
    Ok(())
}
