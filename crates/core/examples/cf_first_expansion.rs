//! At what load a Cuckoo filter first expands: for each bucket size, max
//! iterations and size, filters with EXPANSION 1 are filled with distinct
//! random items until an insert adds a second sub-filter; the items stored
//! before that insert over the first sub-filter's slots is the load. Prints
//! the median and lowest load of the trials as a Markdown table, and the
//! rows of `ferrobloom_core::cuckoo::plan::FIRST_EXPANSION`.
//!
//! Run with `cargo run --release -p ferrobloom-core --example
//! cf_first_expansion` (the table in the code and in docs/sizing.md), or
//! `-- <bucket size> <max iterations> <slots> <trials>` for one row.

use ferrobloom_core::cuckoo::plan::measure;

/// Bucket sizes, max iterations and slot counts of the table.
const BUCKET_SIZES: [u8; 6] = [1, 2, 3, 4, 6, 8];
const MAX_ITERATIONS: [u16; 4] = [1, 20, 100, 500];
const SLOTS: [u64; 5] = [1 << 10, 1 << 14, 1 << 18, 1 << 21, 1 << 24];

/// Trials per row: fewer for the largest filters.
fn trials(slots: u64) -> u64 {
    match slots {
        s if s >= 1 << 24 => 5,
        s if s >= 1 << 21 => 9,
        _ => 25,
    }
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("a number"))
        .collect();
    let rows: Vec<(u8, u16, u64, u64)> = match args[..] {
        [bs, mi, slots, trials] => vec![(bs as u8, mi as u16, slots, trials)],
        [] => BUCKET_SIZES
            .iter()
            .flat_map(|&bs| {
                MAX_ITERATIONS.iter().flat_map(move |&mi| {
                    SLOTS
                        .iter()
                        .map(move |&slots| (bs, mi, slots, trials(slots)))
                })
            })
            .collect(),
        _ => panic!("arguments: <bucket size> <max iterations> <slots> <trials>"),
    };
    let mut code = Vec::new();
    println!("| bucket size | max iterations | slots | trials | median load | lowest load |");
    println!("|---:|---:|---:|---:|---:|---:|");
    for (bs, mi, slots, trials) in rows {
        let (median, low) = measure(bs, mi, slots, trials);
        println!("| {bs} | {mi} | {slots} | {trials} | {median:.3} | {low:.3} |");
        code.push(format!(
            "    m({bs}, {mi}, {slots}, {median:.3}, {low:.3}),"
        ));
    }
    println!();
    for line in code {
        println!("{line}");
    }
}
