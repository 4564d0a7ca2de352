//! What Count-Min sketches of a few shapes take on a live server, per cell
//! size: MEMORY USAGE of the key (the value's number plus the key's own
//! overhead), CMS.STATS `memory_usage` and `bytes`, and the module's
//! allocator growth (INFO bf `bf_allocated_bytes`) for the sketch (see
//! docs/sizing.md, "Count-Min sketches").
//!
//! ```text
//! cargo run --release --example cms_memory -- [URL]
//! ```
//!
//! Default URL `redis://127.0.0.1:6379/`. Uses and deletes the key
//! `cms-memory` (refuses if it exists). Prints a Markdown table.

use std::error::Error;

use redis::{Connection, Value};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

const KEY: &str = "cms-memory";

/// (width, depth, how they come about).
const SHAPES: [(u64, u64, &str); 4] = [
    (200, 7, "INITBYPROB 0.01 0.01"),
    (2000, 7, "INITBYPROB 0.001 0.01"),
    (2000, 10, "INITBYPROB 0.001 0.001"),
    (20000, 10, "INITBYPROB 0.0001 0.001"),
];

fn allocated(con: &mut Connection) -> Result<i64> {
    let info: String = redis::cmd("INFO").arg("bf").query(con)?;
    let value = info
        .lines()
        .find_map(|l| l.strip_prefix("bf_allocated_bytes:"))
        .ok_or("no bf_allocated_bytes in INFO bf")?;
    Ok(value.trim().parse()?)
}

/// A field of a flat name/value reply.
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
    println!("| width × depth | cell size | cells (bytes) | CMS.STATS memory_usage | MEMORY USAGE | allocated |");
    println!("|---|---:|---:|---:|---:|---:|");
    for (width, depth, how) in SHAPES {
        for cell_size in [1, 2, 4, 8] {
            let before = allocated(&mut con)?;
            redis::cmd("CMS.INITBYDIM")
                .arg(KEY)
                .arg(width)
                .arg(depth)
                .arg("CELL_SIZE")
                .arg(cell_size)
                .query::<()>(&mut con)?;
            let grown = allocated(&mut con)? - before;
            let stats: Vec<Value> = redis::cmd("CMS.STATS").arg(KEY).query(&mut con)?;
            let usage: i64 = redis::cmd("MEMORY").arg("USAGE").arg(KEY).query(&mut con)?;
            println!(
                "| {width} × {depth} ({how}) | {cell_size} | {} | {} | {usage} | {grown} |",
                field(&stats, "bytes")?,
                field(&stats, "memory_usage")?,
            );
            redis::cmd("DEL").arg(KEY).query::<()>(&mut con)?;
        }
    }
    Ok(())
}
