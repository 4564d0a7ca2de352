//! The memory floor under a Bloom filter command on this machine: what the
//! random cache-line accesses of one item, and of a batch, cost at best,
//! whatever the code around them does. `docs/profile.md` quotes it.
//!
//! A lookup or an add of one item touches k random cache lines of the bit
//! array (k = 10-11 at error 0.001); their positions are fixed by RedisBloom
//! compatibility. On an array far larger than the caches each is a miss.
//! Measured here, on a bit array allocated like a filter's (huge pages when
//! `THP` allows):
//!
//! 1. **latency**: dependent random reads, one miss at a time;
//! 2. **one item**: k random lines prefetched together, then read, with a
//!    fence between items so that consecutive items do not overlap (a
//!    single BF.ADD / BF.EXISTS: the server does other work between calls);
//! 3. **batch**: independent random lines with prefetching ahead (BF.MADD /
//!    BF.MEXISTS of many items): the memory-level parallelism limit;
//! 4. **batch of writes**: the same with a bit set in each line (BF.MADD),
//!    whose dirty lines also have to be written back.
//!
//! Run with `cargo run --release -p ferrobloom-core --example memory_floor`
//! (optionally `-- <MiB> <k>`; default 190 MiB, as the 100M/0.001 filter).

use std::hint::black_box;
use std::time::Instant;

use ferrobloom_core::BitArray;

/// xorshift64: cheap, so that generating positions costs little next to a
/// cache miss.
fn next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    v[v.len() / 2]
}

#[cfg(target_arch = "x86_64")]
fn fence() {
    // SAFETY: LFENCE has no operands and no memory effects.
    unsafe { std::arch::x86_64::_mm_lfence() }
}

#[cfg(not(target_arch = "x86_64"))]
fn fence() {
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mib: usize = args.next().map_or(190, |a| a.parse().expect("MiB"));
    let k: usize = args.next().map_or(10, |a| a.parse().expect("k"));
    let bytes = mib << 20;
    let mut array = BitArray::zeroed(bytes as u64).expect("memory for the array");
    // Touch every page, as a filter in use is.
    for offset in (0..bytes).step_by(4096) {
        array.set((offset as u64) << 3);
    }
    let bits = (bytes as u64) << 3;
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    const N: usize = 400_000;
    let rounds = 7;

    let mut latency = Vec::new();
    let mut item = Vec::new();
    let mut batch = Vec::new();
    let mut writes = Vec::new();
    for _ in 0..rounds {
        // 1. Dependent reads: the next position depends on the bit read.
        let t = Instant::now();
        let mut bit = next(&mut x) % bits;
        for _ in 0..N {
            let b = u64::from(array.get(bit));
            bit = (next(&mut x) ^ b) % bits;
        }
        black_box(bit);
        latency.push(t.elapsed().as_nanos() as f64 / N as f64);

        // 2. One item at a time: k positions, prefetched, then read.
        let items = N / k;
        let mut positions = vec![0u64; k];
        let t = Instant::now();
        let mut found = 0u64;
        for _ in 0..items {
            for p in positions.iter_mut() {
                *p = next(&mut x) % bits;
            }
            for &p in &positions {
                array.prefetch(p);
            }
            found += positions
                .iter()
                .map(|&p| u64::from(array.get(p)))
                .sum::<u64>();
            fence();
        }
        black_box(found);
        item.push(t.elapsed().as_nanos() as f64 / items as f64);

        // 3. A stream of independent lines, prefetched 32 lines ahead.
        let ahead: Vec<u64> = (0..N).map(|_| next(&mut x) % bits).collect();
        let t = Instant::now();
        let mut found = 0u64;
        for (i, &p) in ahead.iter().enumerate() {
            if let Some(&q) = ahead.get(i + 32) {
                array.prefetch(q);
            }
            found += u64::from(array.get(p));
        }
        black_box(found);
        batch.push(t.elapsed().as_nanos() as f64 / N as f64);

        // 4. The same stream written (bits set, lines prefetched for
        // writing): what a batch of adds needs. Dirty lines are written
        // back when evicted, which takes memory traffic of its own.
        let ahead: Vec<u64> = (0..N).map(|_| next(&mut x) % bits).collect();
        let t = Instant::now();
        let mut flipped = 0u64;
        for (i, &p) in ahead.iter().enumerate() {
            if let Some(&q) = ahead.get(i + 32) {
                array.prefetch_many_write(&[q]);
            }
            flipped += u64::from(array.set(p));
        }
        black_box(flipped);
        writes.push(t.elapsed().as_nanos() as f64 / N as f64);
    }
    let (latency, item, batch, writes) =
        (median(latency), median(item), median(batch), median(writes));
    println!("bit array: {mib} MiB, k = {k}, median of {rounds} rounds");
    println!("  dependent random read (one miss at a time): {latency:.0} ns");
    println!("  one item, {k} lines prefetched together:      {item:.0} ns");
    println!(
        "  independent lines, prefetched ahead:         {batch:.1} ns per line, {:.0} ns per item",
        batch * k as f64
    );
    println!(
        "  floor of a 100-item batch:                   {:.1} us",
        batch * (k * 100) as f64 / 1000.0
    );
    println!(
        "  independent lines written, prefetched ahead: {writes:.1} ns per line, {:.0} ns per item",
        writes * k as f64
    );
    println!(
        "  floor of a 100-item batch of adds:           {:.1} us",
        writes * (k * 100) as f64 / 1000.0
    );
}
