//! Sizing before allocation: the links a filter will have, what each costs,
//! and the totals, for a capacity, an error rate and an item count, under
//! either allocation policy. Nothing is allocated.

use crate::bloom::chain::ChainParams;
use crate::bloom::sizing::{self, reported_size, LinkSpec, Policy, SizingError};

/// More links than this are not listed: a configuration that needs them
/// (growth 1 with far too small a capacity) is reported as an error.
pub const MAX_PLANNED_LINKS: usize = 1024;

#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub policy: Policy,
    pub links: Vec<LinkSpec>,
    /// Sum of link capacities.
    pub capacity: u64,
    /// Sum of bit-array bytes.
    pub data_bytes: u64,
    /// What BF.INFO Size (and MEMORY USAGE, less the key) will report.
    pub reported_size: u64,
    /// Items the plan was made for.
    pub items: u64,
    /// Items a non-scaling filter would refuse (beyond its capacity).
    pub refused_items: u64,
    /// The expected false positive rate with those items added.
    pub fpr: f64,
}

/// Why a plan cannot be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlanError {
    Sizing(SizingError),
    /// Holding the items would take more than [`MAX_PLANNED_LINKS`] links.
    TooManyLinks,
}

impl From<SizingError> for PlanError {
    fn from(e: SizingError) -> Self {
        PlanError::Sizing(e)
    }
}

/// The links of a filter with `params` once it holds `items` items (at
/// least the first link), as the chain would create them.
pub fn plan(params: &ChainParams, items: u64) -> Result<Plan, PlanError> {
    let mut links = vec![params.first_link()?];
    let mut capacity = links[0].entries;
    if !params.nonscaling {
        while capacity < items {
            if links.len() >= MAX_PLANNED_LINKS {
                return Err(PlanError::TooManyLinks);
            }
            links.push(next_link(params, links.last().expect("a first link"))?);
            capacity = capacity.saturating_add(links.last().expect("just pushed").entries);
        }
    }
    Ok(finish(params, links, items))
}

/// The first `count` links of a filter with `params` (scaling or not).
pub fn plan_links(params: &ChainParams, count: usize) -> Result<Plan, PlanError> {
    if count > MAX_PLANNED_LINKS {
        return Err(PlanError::TooManyLinks);
    }
    let mut links = vec![params.first_link()?];
    while links.len() < count.max(1) {
        links.push(next_link(params, links.last().expect("a first link"))?);
    }
    Ok(finish(params, links, 0))
}

/// The link a scaling filter with `params` appends after `previous`.
fn next_link(params: &ChainParams, previous: &LinkSpec) -> Result<LinkSpec, SizingError> {
    sizing::next_link(
        previous.entries,
        previous.error,
        params.growth,
        params.policy,
    )
}

fn finish(params: &ChainParams, links: Vec<LinkSpec>, items: u64) -> Plan {
    let capacity = links.iter().fold(0u64, |a, l| a.saturating_add(l.entries));
    let data_bytes = links.iter().fold(0u64, |a, l| a.saturating_add(l.bytes));
    let held = items.min(capacity);
    // Items fill the links oldest first, each up to its capacity.
    let mut remaining = held;
    let per_link = links.iter().map(|l| {
        let n = remaining.min(l.entries);
        remaining -= n;
        (l.hashes, l.modulus(), n)
    });
    let fpr = chain_fpr(per_link.map(|(k, m, n)| expected_link_fpr(k, m, n)));
    Plan {
        policy: params.policy,
        reported_size: reported_size(links.iter().map(|l| l.bytes)),
        links,
        capacity,
        data_bytes,
        items,
        refused_items: items - held,
        fpr,
    }
}

/// The expected fraction of set bits after `n` items with `k` hashes into
/// `m` bits: `1 - (1 - 1/m)^(k n)`.
pub fn expected_set_fraction(k: u32, m: u64, n: u64) -> f64 {
    if m == 0 {
        return 1.0;
    }
    let exponent = f64::from(k) * n as f64;
    -(exponent * (-1.0 / m as f64).ln_1p()).exp_m1()
}

/// The expected false positive rate of one link: `p^k` with `p` its
/// expected fraction of set bits.
pub fn expected_link_fpr(k: u32, m: u64, n: u64) -> f64 {
    expected_set_fraction(k, m, n).powi(k as i32)
}

/// A chain answers "present" if any link does: `1 - prod(1 - fpr_i)`,
/// computed as `-expm1(sum(ln_1p(-fpr_i)))` so that rates far below 1e-16
/// are not rounded to 0.
pub fn chain_fpr(link_fprs: impl IntoIterator<Item = f64>) -> f64 {
    let log_none: f64 = link_fprs.into_iter().map(|f| (-f).ln_1p()).sum();
    -log_none.exp_m1()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(
        capacity: u64,
        error: f64,
        growth: u32,
        nonscaling: bool,
        policy: Policy,
    ) -> ChainParams {
        ChainParams {
            capacity,
            error,
            growth,
            nonscaling,
            policy,
        }
    }

    /// Spec §3.7 and §3.5: the tables the server tests' expectations rest
    /// on (first links, pow2 links, chain capacities and sizes).
    #[test]
    fn spec_tables() {
        for (cap, err, nonscaling, bytes, hashes, size) in [
            (100, 0.01, false, 144, 8, 240),
            (100, 0.01, true, 120, 7, 216),
            (1_000, 0.001, false, 1_984, 11, 2_080),
            (10_000_000, 0.01, false, 13_784_696, 8, 13_784_792),
            (10_000_000, 0.0001, true, 23_962_648, 14, 23_962_744),
        ] {
            let p = plan_links(&params(cap, err, 2, nonscaling, Policy::Exact), 1).unwrap();
            assert_eq!(
                (p.links[0].bytes, p.links[0].hashes, p.reported_size),
                (bytes, hashes, size)
            );
        }
        for (entries, err, n2, bytes, capacity) in [
            (6, 0.005, 7, 16, 11),
            (212, 0.005, 12, 512, 371),
            (37_340_820, 0.0005, 30, 134_217_728, 67_871_216),
            (2, 0.2, 3, 8, 2),
        ] {
            let l = LinkSpec::new(entries, err, Policy::Pow2).unwrap();
            assert_eq!(
                (l.n2, l.bytes, l.entries, l.modulus()),
                (n2, bytes, capacity, 1 << n2)
            );
        }
        let p = plan_links(&params(5, 0.001, 3, false, Policy::Exact), 4).unwrap();
        let caps: Vec<u64> = p.links.iter().map(|l| l.entries).collect();
        assert_eq!(caps, [5, 15, 45, 135]);
        let p = plan_links(&params(10, 0.01, 2, false, Policy::Exact), 4).unwrap();
        assert_eq!(p.reported_size, 568);
    }

    #[test]
    fn one_link_when_items_fit() {
        let p = plan(&params(10_000_000, 0.001, 2, false, Policy::Exact), 0).unwrap();
        assert_eq!(p.links.len(), 1);
        assert_eq!(p.reported_size, 19_775_456);
    }

    #[test]
    fn scaling_links_follow_the_chain_rules() {
        let p = plan(&params(10, 0.01, 2, false, Policy::Exact), 99).unwrap();
        let caps: Vec<u64> = p.links.iter().map(|l| l.entries).collect();
        assert_eq!(caps, [10, 20, 40, 80]);
        let bytes: Vec<u64> = p.links.iter().map(|l| l.bytes).collect();
        assert_eq!(bytes, [16, 32, 72, 160]);
        assert_eq!(p.reported_size, 568);
    }

    #[test]
    fn nonscaling_refuses_the_excess() {
        let p = plan(&params(100, 0.01, 2, true, Policy::Exact), 250).unwrap();
        assert_eq!((p.links.len(), p.refused_items), (1, 150));
    }

    #[test]
    fn fpr_at_capacity_is_near_the_target() {
        let p = plan(&params(1_000_000, 0.01, 2, true, Policy::Exact), 1_000_000).unwrap();
        assert!((p.fpr - 0.01).abs() < 0.001, "{}", p.fpr);
    }

    #[test]
    fn tiny_rates_survive_the_union() {
        let f = chain_fpr([5.4e-18, 1e-20]);
        assert!((f - 5.41e-18).abs() < 1e-21, "{f}");
        assert_eq!(chain_fpr([0.5, 0.5]), 0.75);
        assert_eq!(chain_fpr([1.0]), 1.0);
        assert_eq!(chain_fpr([]), 0.0);
    }

    #[test]
    fn growth_one_with_tiny_capacity_is_refused() {
        let e = plan(&params(1, 0.01, 1, false, Policy::Exact), 1_000_000).unwrap_err();
        assert_eq!(e, PlanError::TooManyLinks);
    }
}
