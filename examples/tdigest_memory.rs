//! What t-digests of a few compressions take on a live server: TDIGEST.PLAN
//! `bytes` (the node array), `allocated` and `memory_usage` (the number
//! MEMORY USAGE and TDIGEST.INFO report, 2.8.2's `16·capacity + 8`), MEMORY
//! USAGE of the key, and the module's allocator growth (INFO bf
//! `bf_allocated_bytes`) for the digest (see docs/sizing.md, "t-digests").
//!
//! ```text
//! cargo run --release --example tdigest_memory -- [URL]
//! ```
//!
//! Default URL `redis://127.0.0.1:6379/`. Uses and deletes the key
//! `tdigest-memory` (refuses if it exists). Prints a Markdown table.

use std::error::Error;

use redis::{Connection, Value};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

const KEY: &str = "tdigest-memory";

const COMPRESSIONS: [u64; 7] = [20, 50, 100, 200, 500, 1000, 5000];

fn allocated(con: &mut Connection) -> Result<i64> {
    let info: String = redis::cmd("INFO").arg("bf").query(con)?;
    let value = info
        .lines()
        .find_map(|l| l.strip_prefix("bf_allocated_bytes:"))
        .ok_or("no bf_allocated_bytes in INFO bf")?;
    Ok(value.trim().parse()?)
}

/// An integer field of a flat name/value reply.
fn field(reply: &[Value], name: &str) -> Result<i64> {
    for pair in reply.chunks(2) {
        if let [Value::SimpleString(k), Value::Int(v)] = pair {
            if k == name {
                return Ok(*v);
            }
        }
    }
    Err(format!("no {name}").into())
}

fn main() -> Result<()> {
    let url = std::env::args()
        .nth(1)
        .unwrap_or("redis://127.0.0.1:6379/".into());
    let mut con = redis::Client::open(url.as_str())?.get_connection()?;
    if redis::cmd("EXISTS").arg(KEY).query::<bool>(&mut con)? {
        return Err(format!("the key {KEY} exists").into());
    }
    println!("| compression | capacity (nodes) | node array (bytes) | TDIGEST.PLAN allocated | memory_usage (reported) | MEMORY USAGE | allocated (measured) |");
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    for c in COMPRESSIONS {
        let plan: Vec<Value> = redis::cmd("TDIGEST.PLAN").arg(c).query(&mut con)?;
        let before = allocated(&mut con)?;
        redis::cmd("TDIGEST.CREATE")
            .arg(KEY)
            .arg("COMPRESSION")
            .arg(c)
            .query::<()>(&mut con)?;
        let grown = allocated(&mut con)? - before;
        let usage: i64 = redis::cmd("MEMORY").arg("USAGE").arg(KEY).query(&mut con)?;
        println!(
            "| {c} | {} | {} | {} | {} | {usage} | {grown} |",
            field(&plan, "capacity")?,
            field(&plan, "bytes")?,
            field(&plan, "allocated")?,
            field(&plan, "memory_usage")?,
        );
        redis::cmd("DEL").arg(KEY).query::<()>(&mut con)?;
    }
    Ok(())
}
