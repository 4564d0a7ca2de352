//! How far a Count-Min sketch's estimates are above the true counts, on a
//! live server, against the bound CMS.PLAN and CMS.STATS give (see
//! docs/sizing.md, "Count-Min sketches").
//!
//! ```text
//! cargo run --release --example cms_overestimate -- [URL] [WIDTH] [DEPTH] [COUNTS] [ITEMS] [SKEW] [SEED]
//! ```
//!
//! Defaults: `redis://127.0.0.1:6379/ 2000 7 1000000 100000 1.0 1`. The
//! example creates the key `cms-overestimate` (CMS.INITBYDIM, 8-byte cells
//! so nothing overflows; it refuses if the key exists), sends a stream of
//! COUNTS increments of 1 drawn from ITEMS items with Zipf weights
//! `1 / rank^SKEW` (a seeded generator: the same arguments give the same
//! stream) as CMS.INCRBY commands of 1,000 pairs, pipelined ten at a
//! time, then asks CMS.QUERY for every item that occurred and compares
//! each answer with the item's true count. It prints the overestimates'
//! distribution and the fraction of items whose overestimate exceeds the
//! bound `2·N/width` (which the bound allows for a fraction up to
//! `2^−depth`) and the textbook `e·N/width`, and CMS.STATS's fullest
//! cell (what decides the cell size the stream needs), then deletes the
//! key.

use std::collections::HashMap;
use std::error::Error;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use redis::{Connection, Value};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

const KEY: &str = "cms-overestimate";
/// Pairs per CMS.INCRBY, items per CMS.QUERY.
const BATCH: usize = 1000;
/// Commands per pipeline.
const PIPELINE: usize = 10;

/// Item names: `item:<rank>`.
fn item(rank: usize) -> String {
    format!("item:{rank}")
}

/// The stream: `counts` draws of a rank in 1..=items with probability
/// proportional to 1 / rank^skew (inverse transform over the cumulative
/// weights).
fn zipf_stream(counts: usize, items: usize, skew: f64, seed: u64) -> Vec<usize> {
    let mut cumulative = Vec::with_capacity(items);
    let mut total = 0.0;
    for rank in 1..=items {
        total += 1.0 / (rank as f64).powf(skew);
        cumulative.push(total);
    }
    let mut rng = StdRng::seed_from_u64(seed);
    (0..counts)
        .map(|_| {
            let u = rng.gen::<f64>() * total;
            cumulative.partition_point(|&c| c < u).min(items - 1) + 1
        })
        .collect()
}

fn send_increments(con: &mut Connection, stream: &[usize]) -> Result<()> {
    for chunk in stream.chunks(BATCH * PIPELINE) {
        let mut pipe = redis::pipe();
        for batch in chunk.chunks(BATCH) {
            let cmd = pipe.cmd("CMS.INCRBY").arg(KEY);
            for &rank in batch {
                cmd.arg(item(rank)).arg(1);
            }
        }
        let _: Vec<Value> = pipe.query(con)?;
    }
    Ok(())
}

fn query(con: &mut Connection, ranks: &[usize]) -> Result<Vec<u64>> {
    let mut estimates = Vec::with_capacity(ranks.len());
    for chunk in ranks.chunks(BATCH * PIPELINE) {
        let mut pipe = redis::pipe();
        for batch in chunk.chunks(BATCH) {
            let cmd = pipe.cmd("CMS.QUERY").arg(KEY);
            for &rank in batch {
                cmd.arg(item(rank));
            }
        }
        let replies: Vec<Vec<u64>> = pipe.query(con)?;
        estimates.extend(replies.into_iter().flatten());
    }
    Ok(estimates)
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, default: &str| args.get(i).cloned().unwrap_or(default.to_string());
    let url = arg(0, "redis://127.0.0.1:6379/");
    let width: u64 = arg(1, "2000").parse()?;
    let depth: u64 = arg(2, "7").parse()?;
    let counts: usize = arg(3, "1000000").parse()?;
    let items: usize = arg(4, "100000").parse()?;
    let skew: f64 = arg(5, "1.0").parse()?;
    let seed: u64 = arg(6, "1").parse()?;
    if items == 0 {
        return Err("ITEMS must be at least 1".into());
    }

    let mut con = redis::Client::open(url.as_str())?.get_connection()?;
    let exists: bool = redis::cmd("EXISTS").arg(KEY).query(&mut con)?;
    if exists {
        return Err(format!("the key {KEY} exists: delete it or use another server").into());
    }
    redis::cmd("CMS.INITBYDIM")
        .arg(KEY)
        .arg(width)
        .arg(depth)
        .arg("CELL_SIZE")
        .arg(8)
        .query::<()>(&mut con)?;

    let stream = zipf_stream(counts, items, skew, seed);
    let mut truth: HashMap<usize, u64> = HashMap::new();
    for &rank in &stream {
        *truth.entry(rank).or_default() += 1;
    }
    send_increments(&mut con, &stream)?;
    let mut ranks: Vec<usize> = truth.keys().copied().collect();
    ranks.sort_unstable();
    let estimates = query(&mut con, &ranks)?;
    let stats: Vec<Value> = redis::cmd("CMS.STATS").arg(KEY).query(&mut con)?;
    redis::cmd("DEL").arg(KEY).query::<()>(&mut con)?;
    let fullest = stats
        .chunks(2)
        .find_map(|p| match p {
            [Value::SimpleString(k), Value::Int(v)] if k == "fullest_cell" => Some(*v),
            _ => None,
        })
        .ok_or("no fullest_cell in CMS.STATS")?;

    let n = counts as f64;
    let bound = 2.0 * n / width as f64;
    let textbook = std::f64::consts::E * n / width as f64;
    let mut over: Vec<u64> = Vec::with_capacity(ranks.len());
    for (rank, estimate) in ranks.iter().zip(&estimates) {
        let exact = truth[rank];
        if *estimate < exact {
            return Err(format!(
                "{} estimated {estimate} below its count {exact}",
                item(*rank)
            )
            .into());
        }
        over.push(estimate - exact);
    }
    over.sort_unstable();
    let seen = over.len();
    let above = |limit: f64| over.iter().filter(|&&o| o as f64 > limit).count();
    let quantile = |q: f64| over[((seen - 1) as f64 * q).round() as usize];
    let exact = over.iter().filter(|&&o| o == 0).count();
    let mean = over.iter().sum::<u64>() as f64 / seen as f64;
    println!(
        "sketch {width}x{depth}, N = {counts} increments of 1 over {items} items (Zipf skew {skew}, seed {seed})"
    );
    println!(
        "items seen: {seen}; estimated exactly: {exact} ({:.2}%)",
        100.0 * exact as f64 / seen as f64
    );
    println!(
        "overestimate: mean {mean:.1}, median {}, 99th percentile {}, 99.9th {}, max {}",
        quantile(0.5),
        quantile(0.99),
        quantile(0.999),
        over[seen - 1]
    );
    println!(
        "above the bound 2N/width = {bound}: {} items ({:.4}%; allowed 2^-{depth} = {:.4}%)",
        above(bound),
        100.0 * above(bound) as f64 / seen as f64,
        100.0 * 0.5f64.powi(depth as i32)
    );
    println!(
        "above half the bound, N/width = {}: {} items ({:.4}%)",
        bound / 2.0,
        above(bound / 2.0),
        100.0 * above(bound / 2.0) as f64 / seen as f64
    );
    println!(
        "above the textbook e*N/width = {textbook:.1}: {} items ({:.4}%; allowed e^-{depth} = {:.4}%)",
        above(textbook),
        100.0 * above(textbook) as f64 / seen as f64,
        100.0 * (-(depth as f64)).exp()
    );
    println!(
        "CMS.STATS fullest_cell {fullest} ({:.2}% of N): 1-byte cells would overflow from N ~ {:.0}, 2-byte from ~ {:.0}, 4-byte from ~ {:.0}",
        100.0 * fullest as f64 / n,
        255.0 * n / fullest as f64,
        65535.0 * n / fullest as f64,
        4294967295.0 * n / fullest as f64
    );
    Ok(())
}
