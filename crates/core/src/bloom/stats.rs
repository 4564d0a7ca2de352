//! What a filter holds and how full it is, from its counters: fill ratios,
//! the fraction of set bits per link (tracked as bits flip), and the false
//! positive rate those fractions imply.

use crate::bloom::chain::{Chain, ChainParams};
use crate::bloom::link::Link;
use crate::bloom::plan::{chain_fpr, plan_links};
use crate::bloom::sizing::Policy;

/// One link's state.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkStats {
    pub capacity: u64,
    pub items: u64,
    pub bytes: u64,
    pub hashes: u32,
    pub error: f64,
    /// Fraction of the link's addressable bits that are set.
    pub set_fraction: f64,
    /// The false positive rate the set fraction implies: `set^hashes`.
    pub fpr: f64,
}

/// A filter's state, for BF.STATS and the tools.
#[derive(Clone, Debug, PartialEq)]
pub struct FilterStats {
    pub capacity: u64,
    pub items: u64,
    pub links: Vec<LinkStats>,
    /// Bit-array bytes.
    pub data_bytes: u64,
    /// BF.INFO Size.
    pub size: u64,
    pub policy: Policy,
    pub scaling: bool,
    /// items / capacity of the newest link.
    pub fill_newest: f64,
    /// items / capacity of the whole filter.
    pub fill: f64,
    /// `1 - prod(1 - set_i^hashes_i)`: the chance that an item never added
    /// is reported present, now.
    pub estimated_fpr: f64,
    /// The error rate the filter was created for.
    pub target_error: f64,
    /// BF.INFO Size the same filter (same first capacity, error, growth and
    /// number of links) would have under the other policy, if computable.
    pub other_policy_size: Option<u64>,
}

/// Fraction of a link's addressable bits that are set. Bits beyond the
/// modulus (word rounding) are never set, so they do not count.
pub fn set_fraction(link: &Link) -> f64 {
    link.ones() as f64 / link.modulus() as f64
}

/// The false positive rate implied by a link's set bits.
pub fn link_fpr(link: &Link) -> f64 {
    set_fraction(link).powi(link.hashes as i32)
}

/// The chain's estimated false positive rate now.
pub fn estimated_fpr(chain: &Chain) -> f64 {
    chain_fpr(chain.links().iter().map(link_fpr))
}

/// items / capacity, 0 for an empty capacity.
pub fn ratio(items: u64, capacity: u64) -> f64 {
    if capacity == 0 {
        0.0
    } else {
        items as f64 / capacity as f64
    }
}

/// The error rate a chain was created for (its first link has half of it
/// when it scales).
pub fn target_error(chain: &Chain) -> f64 {
    let first = chain.links()[0].error;
    if chain.is_scaling() {
        first * 2.0
    } else {
        first
    }
}

/// The parameters the chain was created with (as far as they can be
/// known: the first link's requested capacity).
pub fn creation_params(chain: &Chain) -> ChainParams {
    ChainParams {
        capacity: chain.links()[0].requested,
        error: target_error(chain),
        growth: chain.growth(),
        nonscaling: !chain.is_scaling(),
        policy: chain.policy(),
    }
}

/// Bytes lost to power-of-two rounding: each pow2 link's size minus what
/// the exact policy allocates for the capacity the link was asked for (the
/// previous link's capacity times the growth). A first link's request is
/// not stored in RedisBloom's formats, so it counts as the capacity it
/// holds: the rounding then bought capacity, not waste (BF.PLAN shows the
/// cost of pow2 for a requested capacity before anything is allocated).
pub fn pow2_rounding_bytes(chain: &Chain) -> u64 {
    chain
        .links()
        .iter()
        .filter(|l| l.n2 > 0)
        .map(|l| {
            let exact = crate::bloom::sizing::LinkSpec::new(l.requested, l.error, Policy::Exact)
                .map(|s| s.bytes)
                .unwrap_or(l.bytes());
            l.bytes().saturating_sub(exact)
        })
        .sum()
}

pub fn stats(chain: &Chain) -> FilterStats {
    let links: Vec<LinkStats> = chain
        .links()
        .iter()
        .map(|l| LinkStats {
            capacity: l.entries,
            items: l.items,
            bytes: l.bytes(),
            hashes: l.hashes,
            error: l.error,
            set_fraction: set_fraction(l),
            fpr: link_fpr(l),
        })
        .collect();
    let newest = chain.links().last().expect("a chain has a link");
    let mut other = creation_params(chain);
    other.policy = chain.policy().other();
    let other_policy_size = plan_links(&other, chain.links().len())
        .ok()
        .map(|p| p.reported_size);
    FilterStats {
        capacity: chain.capacity(),
        items: chain.items(),
        data_bytes: chain.data_bytes(),
        size: chain.reported_size(),
        policy: chain.policy(),
        scaling: chain.is_scaling(),
        fill_newest: ratio(newest.items, newest.entries),
        fill: ratio(chain.items(), chain.capacity()),
        estimated_fpr: chain_fpr(links.iter().map(|l| l.fpr)),
        target_error: target_error(chain),
        other_policy_size,
        links,
    }
}
