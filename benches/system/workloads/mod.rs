//! The workloads, one module per phase: what runs on which filters, the
//! same on both servers of a pair.
//!
//! - `small`: BF.ADD/BF.EXISTS on a default auto-created filter and on
//!   10M and 100M filters at 0.001, BF.MADD/BF.MEXISTS of 100 items,
//!   BF.CARD (the floor of any call) and memory per item;
//! - `cuckoo`: CF.EXISTS, CF.MEXISTS, CF.DEL, CF.ADD and CF.INSERT on a
//!   1 MiB filter with the default options and on a 128 MiB one;
//! - `cms`: CMS.INCRBY and CMS.QUERY of 1 and of 10 items on a 2000×7
//!   Count-Min sketch, CMS.MERGE of two such sketches (with and without
//!   WEIGHTS);
//! - `topk`: TOPK.ADD of 1 and of 100 items and TOPK.LIST WITHCOUNT on a
//!   Top-K of k 100, 2000×7, fed a Zipf stream;
//! - `tdigest`: TDIGEST.ADD of 1000 values, TDIGEST.QUANTILE of 10
//!   fractions and TDIGEST.CDF of 10 values on a 100,000-value digest of
//!   compression 100, reads alone and a read after each add;
//! - `big`: BF.RESERVE + DEL, DEBUG RELOAD, BF.SCANDUMP and UNLINK of a
//!   1 GiB filter whose bits are half set (as at capacity);
//! - `tracking`: BF.ADD on the 10M filter with fill tracking against a
//!   build without it (`--features untracked-fill`);
//! - `window`: a crawler's window of N items kept in a FerroBloom windowed
//!   filter, in one plain filter and in 30 daily plain filters (both
//!   modules): memory, adds and lookups, against RedisBloom's 30 daily
//!   filters.

mod big;
pub mod cms;
pub mod cuckoo;
mod items;
pub mod paired;
mod scandump;
mod small;
pub mod tdigest;
pub mod topk;
mod tracking;
pub mod window;

pub use big::phase_big;
pub use cms::phase_cms;
pub use cuckoo::phase_cuckoo;
pub use small::phase_small;
pub use tdigest::phase_tdigest;
pub use topk::phase_topk;
pub use tracking::phase_tracking;
pub use window::phase_window;

use crate::config::Config;

pub const KEY_DEFAULT: &str = "bf:default";
pub const KEY_10M: &str = "bf:10m";
pub const KEY_100M: &str = "bf:100m";
pub const KEY_MEMORY: &str = "bf:memory";
pub const KEY_BIG: &str = "bf:big";
pub const CAP_10M: u64 = 10_000_000;
pub const CAP_100M: u64 = 100_000_000;
/// `__rand_int__` range of the single adds (redis-benchmark pads to 12 digits).
pub const RANGE: u64 = 100_000_000;

/// A filter reserved at error 0.001, kept across rounds.
#[derive(Clone, Copy)]
pub struct Reserved {
    /// How the workloads' names call it.
    pub label: &'static str,
    pub key: &'static str,
    pub capacity: u64,
    /// Items loaded when it is (re)built: `item(0..prefill)`.
    pub prefill: u64,
}

pub fn filter_10m(cfg: &Config) -> Reserved {
    Reserved {
        label: "10M",
        key: KEY_10M,
        capacity: CAP_10M,
        prefill: cfg.prefill.0,
    }
}

pub fn filter_100m(cfg: &Config) -> Reserved {
    Reserved {
        label: "100M",
        key: KEY_100M,
        capacity: CAP_100M,
        prefill: cfg.prefill.1,
    }
}

/// splitmix64: items and increments drawn from a fixed seed, so that both
/// servers of a pair get the same sequence.
pub struct Rng(pub u64);

impl Rng {
    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }
}
