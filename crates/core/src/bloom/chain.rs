//! The scalable Bloom filter: a chain of links, each larger and stricter than
//! the one before, exactly as RedisBloom grows it.
//!
//! Items go in through one add engine ([`Chain::add_batch`], in `add`) and
//! are looked up through one lookup engine ([`Chain::contains_batch`], in
//! `lookup`); a single item is a batch of one. [`Chain::add`],
//! [`Chain::add_many`], [`Chain::add_pipelined`], [`Chain::contains`],
//! [`Chain::contains_many`] and [`Chain::contains_pipelined`] are the
//! shapes callers use, all of them that engine. The items in flight live in
//! a ring (`ring`). Item counters move in one place (`Chain::count_added`);
//! the size of the next link is [`sizing::next_link`]'s.

use crate::alloc_guard::{AllocGuard, AllocRequest, Refusal};
use crate::bitarray::AllocError;
use crate::bloom::link::Link;
use crate::bloom::sizing::{self, reported_size, LinkSpec, Policy, SizingError};
use crate::hash::{HashPair, HashWidth};

mod add;
mod lookup;
mod ring;
pub use ring::AHEAD;

/// Bits of the chain's options word (RedisBloom's names).
pub mod options {
    /// Links are sized exactly (no power-of-two rounding).
    pub const NOROUND: u32 = 1;
    /// Creation-time flag of RedisBloom (capacity given in bits); carried,
    /// never acted on.
    pub const ENTS_IS_BITS: u32 = 2;
    /// Items are hashed with MurmurHash64A (else legacy MurmurHash2).
    pub const FORCE64: u32 = 4;
    /// The chain never grows: adds fail once the only link is full.
    pub const NO_SCALING: u32 = 8;
    /// Every bit a valid options word may carry.
    pub const ALL: u32 = 15;
}

/// The most links a chain can reach by scaling, and so the most a
/// SCANDUMP header, a RESTORE payload or an RDB value may describe.
///
/// Every new link gets half the error rate of the one before it, and a
/// link's error rate must stay in (0, 1). The largest first error is the
/// largest f64 below 1, 1 - 2^-53; halving it is exact down to the
/// subnormals and then rounds, reaching the smallest subnormal 2^-1074
/// after 1,074 halvings and 0 (2^-1075 rounds to even) on the next. That
/// is 1,075 links with a non-zero error; the scale-out after them fails
/// (here and in RedisBloom 2.8.2). Capacities cannot stop a chain sooner:
/// with growth 1 (`EXPANSION 1`) they never grow. A filter created by
/// BF.RESERVE or BF.ADD starts at half its error (below 1/2), so it stops
/// one link earlier, at 1,074; only a loaded first link (a header or RDB
/// value written with error up to 1 - 2^-53) reaches 1,075.
pub const MAX_LINKS: usize = 1075;

/// What a new filter should look like.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChainParams {
    pub capacity: u64,
    /// The filter's target error rate (the first link gets half of it when
    /// the filter scales).
    pub error: f64,
    /// Capacity multiplier of each new link (kept even when non-scaling,
    /// as RedisBloom does).
    pub growth: u32,
    pub nonscaling: bool,
    pub policy: Policy,
}

impl ChainParams {
    /// The options word a chain created with these parameters carries.
    pub fn options(&self) -> u32 {
        let mut o = options::FORCE64;
        if self.policy == Policy::Exact {
            o |= options::NOROUND;
        }
        if self.nonscaling {
            o |= options::NO_SCALING;
        }
        o
    }

    /// The error rate of the first link.
    pub fn first_link_error(&self) -> f64 {
        if self.nonscaling {
            self.error
        } else {
            self.error * 0.5
        }
    }

    /// The first link's sizing.
    pub fn first_link(&self) -> Result<LinkSpec, SizingError> {
        let error = self.first_link_error();
        if error == 0.0 {
            // A denormal error halved to zero: RedisBloom cannot create it.
            return Err(SizingError::InvalidParameters);
        }
        LinkSpec::new(self.capacity, error, self.policy)
    }
}

/// Why a chain could not be created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreateError {
    Sizing(SizingError),
    Alloc(AllocError),
    Refused(Refusal),
}

/// The outcome of adding one item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddOutcome {
    /// New: at least one bit changed; counts went up.
    Added,
    /// Present already (or a false positive): nothing changed.
    Present,
    /// A non-scaling filter is full and the item is not present.
    Full,
    /// A new link was needed and could not be made (growth 0, overflow,
    /// error underflow, or no memory); nothing changed.
    ScaleFailed,
    /// A new link was needed and the guard refused its memory.
    ScaleRefused(Refusal),
}

/// Why stored chain fields are unusable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChainError {
    NoLinks,
    BadOptions,
    /// The chain's item count is not the sum of its links'.
    ItemCountMismatch,
}

#[derive(Debug)]
pub struct Chain {
    items: u64,
    options: u32,
    growth: u32,
    links: Vec<Link>,
}

impl Chain {
    /// A new empty filter, its first link admitted by `guard`.
    pub fn new(params: &ChainParams, guard: &dyn AllocGuard) -> Result<Chain, CreateError> {
        let spec = params.first_link().map_err(CreateError::Sizing)?;
        guard
            .admit(AllocRequest {
                bytes: spec.bytes,
                filter_size_after: reported_size([spec.bytes]),
            })
            .map_err(CreateError::Refused)?;
        let mut link = Link::new(&spec).map_err(CreateError::Alloc)?;
        // The capacity a first link was asked for is not kept by RDB or
        // SCANDUMP (RedisBloom's formats); counting it as the capacity the
        // link holds keeps the accounting identical before and after a
        // reload. Later links' requests follow from the stored fields.
        link.requested = link.entries;
        Ok(Chain {
            items: 0,
            options: params.options(),
            growth: params.growth,
            links: vec![link],
        })
    }

    /// A chain from stored fields (RDB load, LOADCHUNK header).
    pub fn from_parts(
        items: u64,
        options: u32,
        growth: u32,
        links: Vec<Link>,
    ) -> Result<Chain, ChainError> {
        if links.is_empty() {
            return Err(ChainError::NoLinks);
        }
        if options & !options::ALL != 0 {
            return Err(ChainError::BadOptions);
        }
        // Counts are u64 and wrap, as RedisBloom's do: a chain whose count
        // wrapped on an add must still load.
        let sum = links.iter().fold(0u64, |acc, l| acc.wrapping_add(l.items));
        if sum != items {
            return Err(ChainError::ItemCountMismatch);
        }
        // A pow2 link after the first was asked for the previous link's
        // capacity times the growth; the inflation on top is the rounding.
        let mut links = links;
        for i in 1..links.len() {
            let asked = links[i - 1].entries.saturating_mul(u64::from(growth));
            if links[i].n2 > 0 && asked <= links[i].entries {
                links[i].requested = asked;
            }
        }
        Ok(Chain {
            items,
            options,
            growth,
            links,
        })
    }

    /// Items added (new inserts only).
    #[inline]
    pub fn items(&self) -> u64 {
        self.items
    }

    #[inline]
    pub fn options(&self) -> u32 {
        self.options
    }

    #[inline]
    pub fn growth(&self) -> u32 {
        self.growth
    }

    #[inline]
    pub fn links(&self) -> &[Link] {
        &self.links
    }

    /// Mutable access to the links for in-place byte loads and
    /// defragmentation; parameters must not be changed through it.
    #[inline]
    pub fn links_mut(&mut self) -> &mut [Link] {
        &mut self.links
    }

    #[inline]
    pub fn is_scaling(&self) -> bool {
        self.options & options::NO_SCALING == 0
    }

    /// The expansion BF.INFO shows: none for non-scaling filters.
    pub fn expansion(&self) -> Option<u32> {
        self.is_scaling().then_some(self.growth)
    }

    #[inline]
    pub fn hash_width(&self) -> HashWidth {
        if self.options & options::FORCE64 != 0 {
            HashWidth::Bits64
        } else {
            HashWidth::Bits32
        }
    }

    /// The policy new links get: exact with NOROUND, else power of two.
    pub fn policy(&self) -> Policy {
        if self.options & options::NOROUND != 0 {
            Policy::Exact
        } else {
            Policy::Pow2
        }
    }

    /// Hashes an item the way this chain does.
    #[inline]
    pub fn hash(&self, item: &[u8]) -> HashPair {
        HashPair::of(item, self.hash_width())
    }

    /// Sum of the link capacities.
    pub fn capacity(&self) -> u64 {
        self.links
            .iter()
            .fold(0u64, |acc, l| acc.saturating_add(l.entries))
    }

    /// Sum of the link array sizes in bytes.
    pub fn data_bytes(&self) -> u64 {
        self.links.iter().map(Link::bytes).sum()
    }

    /// RedisBloom's BF.INFO Size: 32 + 64 per link + the arrays. Also the
    /// type's memory-usage answer.
    pub fn reported_size(&self) -> u64 {
        reported_size(self.links.iter().map(Link::bytes))
    }

    /// Sum of set bits over all links.
    pub fn ones(&self) -> u64 {
        self.links.iter().map(Link::ones).sum()
    }

    fn newest(&self) -> &Link {
        self.links.last().expect("a chain always has a link")
    }

    /// The sizing of the link a scale-out would append now (the rule:
    /// [`sizing::next_link`]).
    pub fn next_link_spec(&self) -> Result<LinkSpec, SizingError> {
        let newest = self.newest();
        sizing::next_link(newest.entries, newest.error, self.growth, self.policy())
    }

    /// Counts `added` new items, all in the newest link: the one place the
    /// item counters of a chain and its links move (loads set them from
    /// stored fields).
    #[inline(always)]
    fn count_added(&mut self, added: u64) {
        let newest = self.links.last_mut().expect("a chain always has a link");
        newest.items = newest.items.wrapping_add(added);
        self.items = self.items.wrapping_add(added);
    }

    fn scale_out(&mut self, guard: &dyn AllocGuard) -> Result<(), AddOutcome> {
        let spec = self.next_link_spec().map_err(|_| AddOutcome::ScaleFailed)?;
        guard
            .admit(AllocRequest {
                bytes: spec.bytes,
                filter_size_after: self
                    .reported_size()
                    .saturating_add(64)
                    .saturating_add(spec.bytes),
            })
            .map_err(AddOutcome::ScaleRefused)?;
        let link = Link::new(&spec).map_err(|_| AddOutcome::ScaleFailed)?;
        if self.links.try_reserve(1).is_err() {
            return Err(AddOutcome::ScaleFailed);
        }
        self.links.push(link);
        Ok(())
    }

    /// BF.DEBUG: `size:<items>` then one line per link, oldest first.
    pub fn debug_lines(&self) -> Vec<String> {
        let width = match self.hash_width() {
            HashWidth::Bits64 => 64,
            HashWidth::Bits32 => 32,
        };
        let mut lines = Vec::with_capacity(self.links.len() + 1);
        lines.push(format!("size:{}", self.items));
        for l in &self.links {
            lines.push(format!(
                "bytes:{} bits:{} hashes:{} hashwidth:{} capacity:{} size:{} ratio:{}",
                l.bytes(),
                l.display_bits(),
                l.hashes,
                width,
                l.entries,
                l.items,
                crate::format::printf_g(l.error)
            ));
        }
        lines
    }

    /// A deep, independent copy (COPY).
    pub fn try_clone(&self) -> Result<Chain, AllocError> {
        let mut links = Vec::new();
        links
            .try_reserve_exact(self.links.len())
            .map_err(|_| AllocError { bytes: 0 })?;
        for l in &self.links {
            links.push(l.try_clone()?);
        }
        Ok(Chain {
            items: self.items,
            options: self.options,
            growth: self.growth,
            links,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc_guard::Unguarded;

    /// The largest f64 below 1: the largest error rate a link can have.
    const LARGEST_ERROR: f64 = 1.0 - f64::EPSILON / 2.0; // 1 - 2^-53

    #[test]
    fn max_links_is_the_number_of_halvings_before_zero() {
        assert_eq!(LARGEST_ERROR, f64::from_bits(1.0f64.to_bits() - 1));
        let mut error = LARGEST_ERROR;
        let mut links = 0;
        while error != 0.0 {
            links += 1;
            error *= 0.5;
        }
        assert_eq!(links, MAX_LINKS);
    }

    /// Adds distinct items until a scale-out fails (an add may also hit a
    /// false positive; nothing else may happen).
    fn fill_until_scale_fails(chain: &mut Chain) {
        for i in 0u64.. {
            let item = i.to_le_bytes();
            match chain.add(chain.hash(&item), &Unguarded) {
                AddOutcome::Added | AddOutcome::Present => {}
                AddOutcome::ScaleFailed => return,
                other => panic!("item {i}: {other:?}"),
            }
            assert!(chain.links().len() <= MAX_LINKS, "item {i}");
        }
    }

    /// The chain that scales longest: capacity 1, growth 1, the first link
    /// at the largest error. It must stop exactly at MAX_LINKS links, its
    /// newest link's error the smallest subnormal.
    #[test]
    fn the_longest_chain_has_max_links() {
        let spec = LinkSpec::new(1, LARGEST_ERROR, Policy::Exact).unwrap();
        let first = Link::new(&spec).unwrap();
        let options = options::FORCE64 | options::NOROUND;
        let mut chain = Chain::from_parts(0, options, 1, vec![first]).unwrap();
        fill_until_scale_fails(&mut chain);
        assert_eq!(chain.links().len(), MAX_LINKS);
        let newest = chain.links().last().unwrap();
        assert_eq!(newest.error, f64::from_bits(1));
        assert!(newest.is_full());
        assert_eq!(chain.next_link_spec(), Err(SizingError::InvalidParameters));
        // The failed scale-out changed nothing.
        assert_eq!(chain.items(), MAX_LINKS as u64);
        assert!(chain.contains(chain.hash(&0u64.to_le_bytes())));
    }

    /// What BF.RESERVE k <error close to 1> 1 EXPANSION 1 gives: the first
    /// link has half the error, so the chain stops one link short.
    #[test]
    fn a_reserved_chain_stops_one_link_short_of_max_links() {
        let params = ChainParams {
            capacity: 1,
            error: LARGEST_ERROR,
            growth: 1,
            nonscaling: false,
            policy: Policy::Exact,
        };
        let mut chain = Chain::new(&params, &Unguarded).unwrap();
        fill_until_scale_fails(&mut chain);
        assert_eq!(chain.links().len(), MAX_LINKS - 1);
        assert_eq!(chain.links().last().unwrap().error, f64::from_bits(1));
    }
}
