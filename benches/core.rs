//! Criterion benchmarks of the core, without Redis. Bloom: hashing, single
//! adds and lookups on filters of 1 MB, 64 MB and 1 GB (so from L2-resident
//! to far beyond the last-level cache), and 100-item batches with and
//! without prefetching. Cuckoo: single inserts, lookups and deletes on a
//! 1 MiB filter (default options) and a 128 MiB one (bucket size 4), and
//! 100-item batches of lookups and inserts against the item-by-item loop.
//! Count-Min: CMS.INCRBY and CMS.QUERY of 1 and of 10 items on a 2000×7
//! sketch (CMS.INITBYPROB 0.001 0.01) of 4-byte cells, and CMS.MERGE of two
//! such sketches. Top-K: TOPK.ADD of 1 and of 100 items on k = 100 with the
//! default 8×7 buckets (decay 0.9: collisions draw coins) and 2000×7, and
//! TOPK.LIST WITHCOUNT on k = 100. t-digest: TDIGEST.ADD of 1000 values,
//! QUANTILE of 10 fractions and CDF of 10 values on a 100,000-value digest
//! (compression 100), and compress of 30,000 equal values. `make bench`
//! runs them.

use criterion::{
    black_box, criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput,
};
use ferrobloom_core::cms::{CellSize, CountMinSketch, Operand};
use ferrobloom_core::cuckoo::{CuckooFilter, CuckooHash, CuckooParams};
use ferrobloom_core::tdigest::TDigest;
use ferrobloom_core::topk::{Params, TopK};
use ferrobloom_core::{AddOutcome, Chain, ChainParams, HashPair, HashWidth, Policy, Unguarded};

/// The baseline lookup the batches are compared with: each link probed in
/// turn, newest first, nothing prefetched.
fn contains_without_prefetch(chain: &Chain, h: HashPair) -> bool {
    chain
        .links()
        .iter()
        .rev()
        .any(|l| l.contains_from_head(h, l.head(h)))
}

/// The baseline add the batches are compared with: a plain lookup, then
/// the bits set one by one, nothing prefetched. The benchmark filters do
/// not scale, so a full newest link answers `Full`. Only the newest link's
/// count is kept (what fullness depends on): the chain's own total is not
/// reachable from outside the core, and nothing here reads it.
fn add_without_prefetch(chain: &mut Chain, h: HashPair) -> AddOutcome {
    if contains_without_prefetch(chain, h) {
        return AddOutcome::Present;
    }
    let newest = chain.links_mut().last_mut().expect("a chain has a link");
    if newest.is_full() {
        return AddOutcome::Full;
    }
    if newest.insert(h) {
        newest.items += 1;
        AddOutcome::Added
    } else {
        AddOutcome::Present
    }
}

/// Deterministic pseudo-random 16-byte items.
fn items(n: usize, salt: u64) -> Vec<[u8; 16]> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ salt;
    (0..n)
        .map(|_| {
            let mut item = [0u8; 16];
            for half in item.chunks_mut(8) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                half.copy_from_slice(&x.to_le_bytes());
            }
            item
        })
        .collect()
}

/// A non-scaling filter of about `bytes` bytes at error 0.001, its pages
/// touched so that page faults don't show in the timings, half full.
fn filter(bytes: u64) -> Chain {
    let bits_per_item = ferrobloom_core::bloom::sizing::bits_per_entry(0.001);
    let capacity = (bytes as f64 * 8.0 / bits_per_item) as u64;
    let params = ChainParams {
        capacity,
        error: 0.001,
        growth: 2,
        nonscaling: true,
        policy: Policy::Exact,
    };
    let mut chain = Chain::new(&params, &Unguarded).expect("memory for the benchmark filter");
    let zeros = vec![0u8; 1 << 20];
    let link = &mut chain.links_mut()[0];
    let len = link.bytes() as usize;
    let mut offset = 0;
    while offset < len {
        let n = zeros.len().min(len - offset);
        link.write_bytes(offset, &zeros[..n]);
        offset += n;
    }
    let fill = (capacity / 2).min(2_000_000) as usize;
    for item in items(fill, 1) {
        let h = chain.hash(&item);
        chain.add(h, &Unguarded);
    }
    chain
}

const SIZES: [(&str, u64); 3] = [("1MB", 1 << 20), ("64MB", 64 << 20), ("1GB", 1 << 30)];

fn hashing(c: &mut Criterion) {
    let mut g = c.benchmark_group("hash");
    for len in [16usize, 64, 256] {
        let item = vec![0xa5u8; len];
        g.throughput(Throughput::Bytes(len as u64));
        g.bench_with_input(BenchmarkId::new("murmur64a_pair", len), &item, |b, item| {
            b.iter(|| HashPair::of(black_box(item), HashWidth::Bits64))
        });
    }
    g.finish();
}

fn single(c: &mut Criterion) {
    let probes = items(1 << 16, 7);
    let mut g = c.benchmark_group("single");
    for (name, bytes) in SIZES {
        let mut chain = filter(bytes);
        let present: Vec<[u8; 16]> = items(1 << 16, 1);
        let mut i = 0usize;
        g.bench_function(BenchmarkId::new("add_new", name), |b| {
            b.iter(|| {
                i = i.wrapping_add(1);
                let mut item = probes[i % probes.len()];
                item[..8].copy_from_slice(&(i as u64).to_le_bytes());
                let h = chain.hash(&item);
                chain.add(h, &Unguarded)
            })
        });
        g.bench_function(BenchmarkId::new("check_present", name), |b| {
            b.iter(|| {
                i = i.wrapping_add(1);
                let h = chain.hash(&present[i % present.len()]);
                chain.contains(h)
            })
        });
        g.bench_function(BenchmarkId::new("check_absent", name), |b| {
            b.iter(|| {
                i = i.wrapping_add(1);
                let mut item = probes[i % probes.len()];
                item[8..].copy_from_slice(&(i as u64).to_le_bytes());
                let h = chain.hash(&item);
                chain.contains(h)
            })
        });
    }
    g.finish();
}

fn batches(c: &mut Criterion) {
    const BATCH: usize = 100;
    let mut g = c.benchmark_group("batch100");
    g.throughput(Throughput::Elements(BATCH as u64));
    for (name, bytes) in SIZES {
        let mut chain = filter(bytes);
        let pool = items(1 << 16, 1);
        let mut round = 0u64;
        let mut next_batch = |fresh: bool| -> Vec<HashPair> {
            round += 1;
            (0..BATCH)
                .map(|j| {
                    let mut item = pool[(round as usize * BATCH + j) % pool.len()];
                    if fresh {
                        item[..8].copy_from_slice(&(round * 1000 + j as u64).to_le_bytes());
                    }
                    HashPair::of(&item, HashWidth::Bits64)
                })
                .collect()
        };
        let mut outcomes = vec![AddOutcome::Present; BATCH];
        let mut found = vec![false; BATCH];
        g.bench_function(BenchmarkId::new("add_prefetch", name), |b| {
            b.iter_batched(
                || next_batch(true),
                |hashes| chain.add_many(&hashes, &Unguarded, &mut outcomes),
                BatchSize::SmallInput,
            )
        });
        g.bench_function(BenchmarkId::new("add_no_prefetch", name), |b| {
            b.iter_batched(
                || next_batch(true),
                |hashes| {
                    for (i, h) in hashes.iter().enumerate() {
                        outcomes[i] = add_without_prefetch(&mut chain, *h);
                    }
                },
                BatchSize::SmallInput,
            )
        });
        g.bench_function(BenchmarkId::new("check_prefetch", name), |b| {
            b.iter_batched(
                || next_batch(false),
                |hashes| chain.contains_many(&hashes, &mut found),
                BatchSize::SmallInput,
            )
        });
        g.bench_function(BenchmarkId::new("check_no_prefetch", name), |b| {
            b.iter_batched(
                || next_batch(false),
                |hashes| {
                    for (i, h) in hashes.iter().enumerate() {
                        found[i] = contains_without_prefetch(&chain, *h);
                    }
                },
                BatchSize::SmallInput,
            )
        });
    }
    g.finish();
}

/// A Cuckoo filter reserved at `capacity` with `bucket_size`, its pages
/// touched, loaded with `items(fill, 1)`.
fn cuckoo_filter(capacity: u64, bucket_size: u8, fill: usize) -> CuckooFilter {
    let params = CuckooParams {
        capacity,
        bucket_size,
        ..CuckooParams::default()
    };
    let mut f = CuckooFilter::new(&params, &Unguarded).expect("memory for the benchmark filter");
    for sub in f.sub_filters_mut() {
        sub.as_bytes_mut().fill(0);
    }
    for item in items(fill, 1) {
        f.insert(CuckooHash::of(&item), &Unguarded);
    }
    f
}

/// The 1 MiB filter CF.RESERVE 1000000 makes (bucket size 2) and the
/// 128 MiB one of CF.RESERVE 100000000 BUCKETSIZE 4, each about 30% full
/// (the 128 MiB one up to 4M items, to keep the set-up short).
const CUCKOO_SIZES: [(&str, u64, u8, usize); 2] = [
    ("1MiB", 1_000_000, 2, 300_000),
    ("128MiB", 100_000_000, 4, 4_000_000),
];

fn cuckoo(c: &mut Criterion) {
    const BATCH: usize = 100;
    let mut g = c.benchmark_group("cuckoo");
    for (name, capacity, bs, fill) in CUCKOO_SIZES {
        let mut f = cuckoo_filter(capacity, bs, fill);
        let present = items(fill.min(1 << 16), 1);
        let probes = items(1 << 16, 7);
        let mut i = 0usize;
        g.throughput(Throughput::Elements(1));
        g.bench_function(BenchmarkId::new("insert_delete", name), |b| {
            b.iter(|| {
                i = i.wrapping_add(1);
                let mut item = probes[i % probes.len()];
                item[..8].copy_from_slice(&(i as u64).to_le_bytes());
                let h = CuckooHash::of(&item);
                f.insert(h, &Unguarded);
                f.delete(h)
            })
        });
        g.bench_function(BenchmarkId::new("check_present", name), |b| {
            b.iter(|| {
                i = i.wrapping_add(1);
                f.contains(CuckooHash::of(&present[i % present.len()]))
            })
        });
        g.bench_function(BenchmarkId::new("check_absent", name), |b| {
            b.iter(|| {
                i = i.wrapping_add(1);
                let mut item = probes[i % probes.len()];
                item[8..].copy_from_slice(&(i as u64).to_le_bytes());
                f.contains(CuckooHash::of(&item))
            })
        });
        // Batches of 100: half present, half absent; inserts of new items,
        // deleted again untimed so that the filter's load stays put.
        g.throughput(Throughput::Elements(BATCH as u64));
        let mut round = 0u64;
        let mut next_batch = |fresh: bool| -> Vec<[u8; 16]> {
            round += 1;
            (0..BATCH)
                .map(|j| {
                    let at = round as usize * BATCH + j;
                    let mut item = if j % 2 == 0 {
                        present[at % present.len()]
                    } else {
                        probes[at % probes.len()]
                    };
                    if fresh || j % 2 == 1 {
                        item[..8].copy_from_slice(&(round * 1000 + j as u64).to_le_bytes());
                    }
                    item
                })
                .collect()
        };
        let mut found = [false; BATCH];
        g.bench_function(BenchmarkId::new("check100_prefetch", name), |b| {
            b.iter_batched(
                || next_batch(false),
                |batch| {
                    f.contains_batch(
                        BATCH,
                        |j| CuckooHash::of(&batch[j]),
                        |j, hit| found[j] = hit,
                    )
                },
                BatchSize::SmallInput,
            )
        });
        g.bench_function(BenchmarkId::new("check100_one_by_one", name), |b| {
            b.iter_batched(
                || next_batch(false),
                |batch| {
                    for (j, item) in batch.iter().enumerate() {
                        found[j] = f.contains(CuckooHash::of(item));
                    }
                },
                BatchSize::SmallInput,
            )
        });
        // Setup and routine both need the filter: shared through a RefCell.
        let f = std::cell::RefCell::new(f);
        let added = std::cell::RefCell::new(Vec::<CuckooHash>::with_capacity(BATCH));
        let undo = || {
            let mut f = f.borrow_mut();
            for h in added.borrow_mut().drain(..) {
                f.delete(h);
            }
        };
        g.bench_function(BenchmarkId::new("insert100_prefetch", name), |b| {
            b.iter_batched(
                || {
                    undo();
                    next_batch(true)
                },
                |batch| {
                    let mut added = added.borrow_mut();
                    f.borrow_mut().insert_batch(
                        BATCH,
                        false,
                        &Unguarded,
                        |j| {
                            let h = CuckooHash::of(&batch[j]);
                            added.push(h);
                            h
                        },
                        |_, o| {
                            black_box(o);
                        },
                    )
                },
                BatchSize::SmallInput,
            )
        });
        g.bench_function(BenchmarkId::new("insert100_one_by_one", name), |b| {
            b.iter_batched(
                || {
                    undo();
                    next_batch(true)
                },
                |batch| {
                    let mut added = added.borrow_mut();
                    let mut f = f.borrow_mut();
                    for item in &batch {
                        let h = CuckooHash::of(item);
                        added.push(h);
                        black_box(f.insert(h, &Unguarded));
                    }
                },
                BatchSize::SmallInput,
            )
        });
        undo();
    }
    g.finish();
}

/// A 2000×7 sketch (what CMS.INITBYPROB 0.001 0.01 makes) holding 100,000
/// increments of `items(10_000, salt)`.
fn cms_sketch(salt: u64) -> CountMinSketch {
    let mut s = CountMinSketch::new(2000, 7, CellSize::Four, &Unguarded).expect("a small sketch");
    let pool = items(10_000, salt);
    for i in 0..100_000 {
        s.incrby(&pool[i % pool.len()], 1 + (i % 3) as i64)
            .expect("no overflow");
    }
    s
}

fn cms(c: &mut Criterion) {
    let mut g = c.benchmark_group("cms");
    let mut s = cms_sketch(1);
    let probes = items(1 << 12, 3);
    let (mut i, mut j) = (0usize, 0usize);
    for n in [1usize, 10] {
        g.throughput(Throughput::Elements(n as u64));
        g.bench_function(BenchmarkId::new("incrby", n), |b| {
            b.iter(|| {
                for _ in 0..n {
                    // Each round over the probes adds 1, the next takes it
                    // back: the cells stay put and nothing underflows.
                    let incr = if (j / probes.len()) % 2 == 0 { 1 } else { -1 };
                    black_box(s.incrby(&probes[j % probes.len()], incr)).expect("in range");
                    j = j.wrapping_add(1);
                }
            })
        });
        g.bench_function(BenchmarkId::new("query", n), |b| {
            b.iter(|| {
                for _ in 0..n {
                    i = i.wrapping_add(1);
                    black_box(s.query(&probes[i % probes.len()]));
                }
            })
        });
    }
    // CMS.MERGE dest 2 a b: dest's cells replaced by a + b.
    let (a, other) = (cms_sketch(1), cms_sketch(2));
    let mut dest = CountMinSketch::new(2000, 7, CellSize::Four, &Unguarded).expect("dest");
    g.throughput(Throughput::Elements(1));
    g.bench_function("merge_2000x7", |b| {
        b.iter(|| {
            ferrobloom_core::cms::merge::merge(
                &mut dest,
                &[(Operand::Other(&a), 1), (Operand::Other(&other), 1)],
            )
            .expect("no overflow")
        })
    });
    g.finish();
}

/// Index `i` of a skewed stream over `n` items: small indexes far more
/// often (roughly a square-law, enough to give the heap heavy hitters).
fn skewed(i: usize, n: usize) -> usize {
    let x = (i as u64).wrapping_mul(2_654_435_761) % n as u64;
    (x * x / n as u64) as usize
}

/// A k = 100 sketch of `width`×7 buckets, decay 0.9, fed 100,000 adds of a
/// skewed stream over 10,000 items.
fn topk_sketch(width: u32) -> (TopK, Vec<[u8; 16]>) {
    let params = Params {
        k: 100,
        width,
        depth: 7,
        decay: 0.9,
    };
    let mut s = TopK::new(params, &Unguarded).expect("a small sketch");
    let pool = items(10_000, 5);
    for i in 0..100_000 {
        s.add(&pool[skewed(i, pool.len())]).expect("short items");
    }
    (s, pool)
}

fn topk(c: &mut Criterion) {
    let mut g = c.benchmark_group("topk");
    for width in [8u32, 2000] {
        let (mut s, pool) = topk_sketch(width);
        let mut i = 100_000usize;
        for n in [1usize, 100] {
            g.throughput(Throughput::Elements(n as u64));
            g.bench_function(BenchmarkId::new(format!("add_{width}x7"), n), |b| {
                b.iter(|| {
                    for _ in 0..n {
                        i = i.wrapping_add(1);
                        black_box(s.add(&pool[skewed(i, pool.len())]).expect("short items"));
                    }
                })
            });
        }
        if width == 8 {
            g.throughput(Throughput::Elements(1));
            g.bench_function("list_withcount_k100", |b| {
                b.iter(|| {
                    // What the reply reads: each item's bytes and count.
                    let listed = s.list();
                    black_box(listed.iter().fold(0u64, |acc, h| {
                        acc + h.item().map_or(0, |b| b.len() as u64) + u64::from(h.count())
                    }))
                })
            });
        }
    }
    g.finish();
}

/// `n` pseudo-random doubles in [0, 1000) from a fixed seed (xorshift).
fn tdigest_values(n: usize, seed: u64) -> Vec<f64> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64 * 1000.0
        })
        .collect()
}

/// The speed rows: TDIGEST.ADD of 1000 values, QUANTILE of 10
/// fractions and CDF of 10 values on a 100,000-value digest of compression
/// 100, and compress of 30,000 equal values (2.8.2's quadratic case).
fn tdigest(c: &mut Criterion) {
    let mut g = c.benchmark_group("tdigest");
    let mut td = TDigest::new(100.0, &Unguarded).expect("a digest");
    for v in tdigest_values(100_000, 7) {
        td.add(v).expect("no overflow");
    }
    let batch = tdigest_values(1000, 9);
    g.throughput(Throughput::Elements(1000));
    g.bench_function("add_1000", |b| {
        b.iter_batched_ref(
            || td.clone(),
            |t| {
                for &v in &batch {
                    t.add(v).expect("no overflow");
                }
            },
            BatchSize::SmallInput,
        )
    });
    td.compress().expect("compress");
    let fractions = [0.0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1.0];
    let points: Vec<f64> = (0..10).map(|i| f64::from(i) * 100.0 + 5.0).collect();
    g.throughput(Throughput::Elements(10));
    g.bench_function("quantile_10", |b| {
        b.iter(|| black_box(td.view().expect("compressed").quantiles(&fractions)))
    });
    g.bench_function("cdf_10", |b| {
        b.iter(|| {
            let c = td.view().expect("compressed");
            black_box(points.iter().map(|&v| c.cdf(v)).sum::<f64>())
        })
    });
    let mut equal = TDigest::new(5000.0, &Unguarded).expect("a digest");
    for _ in 0..30_000 {
        equal.add(42.0).expect("no overflow");
    }
    g.throughput(Throughput::Elements(30_000));
    g.bench_function("compress_30k_equal", |b| {
        b.iter_batched_ref(
            || equal.clone(),
            |t| t.compress().expect("compress"),
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2))
        .sample_size(30);
    targets = hashing, single, batches, cuckoo, cms, topk, tdigest
}
criterion_main!(benches);
