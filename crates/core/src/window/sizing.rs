//! How a windowed filter is shaped: its generations, each one's capacity
//! and error rate, and its memory, all decided before anything is
//! allocated (BF.PLAN and the memory guard use the same numbers).
//!
//! A window is cut into `G` generations. The newest (active) generation
//! takes the adds; the `G` before it are still looked up; one more slot is
//! kept clean for the next rotation, so that a rotation never has to clear
//! memory while the user waits (see [`super::filter`]). Memory:
//!
//! ```text
//! bytes = (G + 2) * link_bytes(max(ceil(capacity / G), 1024), p)
//! p     = 0.9 * (1 - (1 - error)^(1 / (G + 1)))   (each generation's error,
//!         with a margin for the rounding of the hash count)
//! ```
//!
//! A lookup tests the `G + 1` live generations; with each holding at most
//! its share, the chance that any of them answers falsely is at most
//! `1 - (1 - p)^(G + 1) < error`.

use super::span::Span;
use crate::bloom::sizing::{LinkSpec, Policy, SizingError};

/// Generations when GENERATIONS is not given. With `G` generations an item
/// is forgotten at most `1/G` of the window late, and memory is about
/// `(G + 2)/G * ln(1/p)/ln(1/error)` times a plain filter's for one
/// window: 8 keeps the slack at 12.5 % for 1.66x the memory at error 0.001
/// (4: 25 % for 1.85x; 16: 6 % for 1.60x).
pub const DEFAULT_GENERATIONS: u32 = 8;

/// The most generations a window may have: every lookup tests `G + 1`
/// bit arrays, so more costs lookups for little gain in slack.
pub const MAX_GENERATIONS: u32 = 64;

/// The share of each generation's error rate it is sized for (about 1 %
/// more memory).
pub const SIZING_MARGIN: f64 = 0.9;

/// Each generation's bit array holds at least this many items' worth of
/// bits. Positions are `a + i*b`: in an array of a few hundred bits, two
/// items' position sequences overlap often enough to raise the error rate
/// well above the formula's (measured 2.7x at 25 items per generation,
/// error 0.001, 4 generations); from some 256 items on they keep it.
pub const MIN_LINK_ITEMS: u64 = 1024;

/// What the user asks for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WindowParams {
    /// The false positive rate of a lookup while at most `capacity` items
    /// arrive per window.
    pub error: f64,
    /// Items expected within one window.
    pub capacity: u64,
    pub span: Span,
    pub generations: u32,
    pub policy: Policy,
    /// Whether a generation that receives more than its share grows a
    /// larger bit array (the default), rather than taking the items into
    /// its full one and letting the false positive rate rise
    /// (`NONSCALING`: memory fixed at creation).
    pub scaling: bool,
}

/// Most bit arrays a generation may grow beyond its first: the last one
/// holds `2^32` times a generation's share, far past any burst the
/// memory guard would let through.
pub const MAX_GROWN_LINKS: u32 = 32;

/// What a steady load of `factor` times the planned items per window
/// costs a time window: with scaling, memory (every live generation
/// grows); with NONSCALING, the false positive rate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Burst {
    pub factor: f64,
    /// All bit arrays while every live generation holds `factor` times
    /// its share.
    pub bytes: u64,
    /// The false positive rate of a lookup then (from the standard
    /// estimate `(1 - e^(-k n / m))^k` of each bit array).
    pub fpr: f64,
}

/// Why a window cannot be shaped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowSizingError {
    Sizing(SizingError),
    /// GENERATIONS outside 1..=[`MAX_GENERATIONS`].
    Generations,
    /// A time window shorter than one millisecond per generation.
    SpanTooShort,
    /// An item window of fewer items than generations: a generation would
    /// hold no item.
    GenerationsOverItems,
}

/// The shape of a windowed filter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WindowSpec {
    pub params: WindowParams,
    /// Each generation's bit array (all generations are alike).
    pub link: LinkSpec,
    /// The error rate of one generation.
    pub generation_error: f64,
    /// How long one generation is active: milliseconds for a time window,
    /// items added for an item window (the longest generation's, when
    /// the item count is not a multiple of `G`: see
    /// [`WindowSpec::span_of`]).
    pub generation_span: u64,
    /// Bit arrays held: `G + 1` live and one kept clean for the next
    /// rotation.
    pub slots: u32,
    /// All bit arrays together.
    pub bytes: u64,
}

impl WindowSpec {
    /// The shape of a new filter. An item window needs at least one item
    /// per generation.
    pub fn new(params: &WindowParams) -> Result<WindowSpec, WindowSizingError> {
        if let Span::Items { count } = params.span {
            if count < u64::from(params.generations) {
                return Err(WindowSizingError::GenerationsOverItems);
            }
        }
        WindowSpec::restored(params)
    }

    /// The shape of a stored filter. Filters saved before item windows
    /// had to hold at least one item per generation load as they were
    /// (each generation then takes one item, and the window keeps `G`).
    pub fn restored(params: &WindowParams) -> Result<WindowSpec, WindowSizingError> {
        let g = params.generations;
        if !(1..=MAX_GENERATIONS).contains(&g) {
            return Err(WindowSizingError::Generations);
        }
        if !(params.error > 0.0 && params.error < 1.0) || params.capacity == 0 {
            return Err(WindowSizingError::Sizing(SizingError::InvalidParameters));
        }
        // Sized with a margin: a Bloom filter at its capacity answers a
        // little above the rate it is sized for (the hash count is rounded
        // up: 1.03 % for 1 %), and a lookup here meets G + 1 of them.
        let generation_error = generation_error(params.error, g) * SIZING_MARGIN;
        let (generation_span, per_generation) = match params.span {
            Span::Time { ms } => {
                let span = ms.div_ceil(u64::from(g));
                if ms < u64::from(g) {
                    return Err(WindowSizingError::SpanTooShort);
                }
                (span, params.capacity.div_ceil(u64::from(g)))
            }
            // An item window holds exactly `count` items per window: each
            // generation is sized for its share of that, or of the capacity
            // asked for when it is larger.
            Span::Items { count } => {
                let span = count.div_ceil(u64::from(g));
                (span, span.max(params.capacity.div_ceil(u64::from(g))))
            }
        };
        let mut link = LinkSpec::new(
            per_generation.max(MIN_LINK_ITEMS),
            generation_error,
            params.policy,
        )
        .map_err(WindowSizingError::Sizing)?;
        // Positions are `a + i*b` reduced by the modulus. With a modulus
        // that shares a factor d with `b`, an item's positions repeat after
        // modulus/d steps: in a small generation of 448 bits, one item in
        // 112 would have only 4 distinct positions. A prime modulus (the
        // largest that fits the array) gives every item its k positions.
        link.bits = largest_prime_at_most(link.bits.max(2));
        link.n2 = 0;
        let slots = g + 2;
        let bytes = link
            .bytes
            .checked_mul(u64::from(slots))
            .ok_or(WindowSizingError::Sizing(SizingError::TooLarge))?;
        Ok(WindowSpec {
            params: *params,
            link,
            generation_error,
            generation_span,
            slots,
            bytes,
        })
    }

    pub fn generations(&self) -> u32 {
        self.params.generations
    }

    /// The `n`-th bit array a generation grows (n >= 1) when it receives
    /// more than its share: `2^n` times the first one's items at `2^-n`
    /// times its error rate, as a scaling filter's links, so that however
    /// far a burst goes a generation's false positive rate stays below
    /// twice its share of the error rate. Its modulus is prime too.
    pub fn growth_link(&self, n: u32) -> Result<LinkSpec, WindowSizingError> {
        let too_large = WindowSizingError::Sizing(SizingError::TooLarge);
        if n == 0 || n > MAX_GROWN_LINKS {
            return Err(too_large);
        }
        let entries = self
            .link
            .entries
            .checked_mul(1u64 << n)
            .filter(|&e| e <= 1 << 56)
            .ok_or(too_large)?;
        let error = self.generation_error * 0.5f64.powi(n as i32);
        let mut link =
            LinkSpec::new(entries, error, self.params.policy).map_err(WindowSizingError::Sizing)?;
        link.bits = largest_prime_at_most(link.bits.max(2));
        link.n2 = 0;
        Ok(link)
    }

    /// What a steady `factor` times the planned load costs: see [`Burst`].
    /// An item window never holds more than its N items (a faster stream
    /// only rotates sooner), so its burst costs nothing.
    pub fn burst(&self, factor: f64) -> Burst {
        let g = u64::from(self.params.generations);
        let share = self.params.capacity as f64 / g as f64;
        let items = match self.params.span {
            Span::Time { .. } => share * factor,
            Span::Items { .. } => self.link.entries.min(self.generation_span) as f64,
        };
        let link_fpr = |spec: &LinkSpec, n: f64| {
            let k = f64::from(spec.hashes);
            (1.0 - (-k * n / spec.bits as f64).exp()).powf(k)
        };
        // One live generation holding `items`.
        let mut left = items;
        let mut miss = 1.0 - link_fpr(&self.link, left.min(self.link.entries as f64));
        left -= (self.link.entries as f64).min(left);
        let mut grown_bytes = 0u64;
        if self.params.scaling && self.params.span.is_time() {
            let mut n = 1;
            while left > 0.0 {
                let Ok(link) = self.growth_link(n) else { break };
                let held = left.min(link.entries as f64);
                miss *= 1.0 - link_fpr(&link, held);
                grown_bytes = grown_bytes.saturating_add(link.bytes);
                left -= held;
                n += 1;
            }
        }
        if left > 0.0 {
            // Non-scaling: the rest goes into the full first array.
            miss = 1.0 - link_fpr(&self.link, items);
        }
        let live = g + 1;
        Burst {
            factor,
            bytes: self.bytes.saturating_add(grown_bytes.saturating_mul(live)),
            fpr: 1.0 - miss.powf(live as f64),
        }
    }

    /// The items generation `epoch` of an item window takes before the
    /// next one begins. `N = q*G + r` items are spread so that the first
    /// `r` generations of every `G` take `q + 1` and the others `q`: any
    /// `G` consecutive generations take exactly `N`, so the window keeps
    /// exactly the last `N` items (and `ceil(N/G) - 1` more at most).
    /// A time window's generations all last [`WindowSpec::generation_span`].
    pub fn span_of(&self, epoch: u64) -> u64 {
        match self.params.span {
            Span::Items { count } if count >= u64::from(self.params.generations) => {
                let g = u64::from(self.params.generations);
                count / g + u64::from(epoch % g < count % g)
            }
            // A stored filter of fewer items than generations.
            Span::Items { .. } => 1,
            Span::Time { .. } => self.generation_span,
        }
    }

    /// The shortest generation (items, or milliseconds).
    pub fn shortest_span(&self) -> u64 {
        match self.params.span {
            Span::Items { count } => (count / u64::from(self.params.generations)).max(1),
            Span::Time { .. } => self.generation_span,
        }
    }

    /// How late an item may be forgotten after it leaves the window. A
    /// time window: one generation span, in milliseconds (`G` spans of
    /// `ceil(window / G)` cover the window). An item window keeps exactly
    /// the last `N` items, and an item that began a generation stays
    /// until the generation's last one leaves: `ceil(N/G) - 1` items more.
    pub fn slack(&self) -> u64 {
        match self.params.span {
            Span::Items { count } if count >= u64::from(self.params.generations) => {
                self.generation_span - 1
            }
            // Legacy: G generations of one item each.
            Span::Items { count } => u64::from(self.params.generations) - count,
            Span::Time { .. } => self.generation_span,
        }
    }
}

/// The largest prime at most `n` (n >= 2): deterministic Miller-Rabin,
/// exact for every 64-bit number.
pub fn largest_prime_at_most(n: u64) -> u64 {
    (2..=n).rev().find(|&c| is_prime(c)).unwrap_or(2)
}

fn is_prime(n: u64) -> bool {
    const BASES: [u64; 12] = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37];
    if n < 2 {
        return false;
    }
    for p in BASES {
        if n % p == 0 {
            return n == p;
        }
    }
    let mul = |a: u64, b: u64| ((u128::from(a) * u128::from(b)) % u128::from(n)) as u64;
    let pow = |mut base: u64, mut exp: u64| {
        let mut result = 1u64;
        while exp > 0 {
            if exp & 1 == 1 {
                result = mul(result, base);
            }
            base = mul(base, base);
            exp >>= 1;
        }
        result
    };
    let s = (n - 1).trailing_zeros();
    let d = (n - 1) >> s;
    BASES.iter().all(|&a| {
        let mut x = pow(a, d);
        if x == 1 || x == n - 1 {
            return true;
        }
        for _ in 1..s {
            x = mul(x, x);
            if x == n - 1 {
                return true;
            }
        }
        false
    })
}

/// The error rate of each of `g + 1` live generations so that a lookup
/// across all of them is wrong with probability at most `error`:
/// `1 - (1 - error)^(1/(g+1))`, computed without cancellation.
pub fn generation_error(error: f64, g: u32) -> f64 {
    -((-error).ln_1p() / f64::from(g + 1)).exp_m1()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(span: Span, capacity: u64, error: f64, g: u32) -> WindowParams {
        WindowParams {
            error,
            capacity,
            span,
            generations: g,
            policy: Policy::Exact,
            scaling: true,
        }
    }

    #[test]
    fn generation_errors_compose_to_the_error_asked() {
        for error in [0.1, 0.01, 0.001, 1e-6, 1e-12] {
            for g in [1, 2, 8, 64] {
                let p = generation_error(error, g);
                let total = -(f64::from(g + 1) * (-p).ln_1p()).exp_m1();
                assert!(
                    (total - error).abs() <= error * 1e-9,
                    "{error} {g}: {total}"
                );
                assert!(p < error && p > 0.0);
            }
        }
    }

    /// The crawler of the seed article: 500,000 new URLs a day, 30 days,
    /// error 0.001.
    #[test]
    fn crawler_window() {
        let day = 24 * 3_600_000;
        let spec = WindowSpec::new(&params(
            Span::Time { ms: 30 * day },
            15_000_000,
            0.001,
            DEFAULT_GENERATIONS,
        ))
        .unwrap();
        assert_eq!(spec.slots, 10);
        assert_eq!(spec.link.entries, 1_875_000);
        assert_eq!(spec.generation_span, 30 * day / 8);
        let plain = LinkSpec::new(15_000_000, 0.001, Policy::Exact).unwrap();
        let ratio = spec.bytes as f64 / plain.bytes as f64;
        assert!((1.60..1.70).contains(&ratio), "{ratio}");
        assert!(spec.link.hashes > plain.hashes);
    }

    #[test]
    fn item_windows_rotate_every_share_of_the_window() {
        let spec = WindowSpec::new(&params(Span::Items { count: 1000 }, 10, 0.01, 3)).unwrap();
        assert_eq!(spec.generation_span, 334);
        assert_eq!(spec.link.entries, MIN_LINK_ITEMS);
        let bigger =
            WindowSpec::new(&params(Span::Items { count: 10_000 }, 30_000, 0.01, 3)).unwrap();
        assert_eq!(bigger.generation_span, 3334);
        assert_eq!(bigger.link.entries, 10_000);
    }

    #[test]
    fn primes() {
        let naive = |n: u64| n >= 2 && (2..n).take_while(|d| d * d <= n).all(|d| n % d != 0);
        for n in 0..5_000u64 {
            assert_eq!(is_prime(n), naive(n), "{n}");
        }
        assert_eq!(largest_prime_at_most(448), 443);
        assert_eq!(largest_prime_at_most(2), 2);
        // 2^61 - 1 is a Mersenne prime; 2^64 - 59 the largest 64-bit prime.
        assert_eq!(largest_prime_at_most((1 << 61) - 1), (1 << 61) - 1);
        assert_eq!(largest_prime_at_most(u64::MAX), u64::MAX - 58);
        // A Carmichael number and a strong pseudoprime to base 2.
        assert!(!is_prime(561) && !is_prime(2047));
    }

    #[test]
    fn refusals() {
        let span = Span::Items { count: 100 };
        for (p, e) in [
            (params(span, 100, 0.01, 0), WindowSizingError::Generations),
            (params(span, 100, 0.01, 65), WindowSizingError::Generations),
            (
                params(span, 0, 0.01, 8),
                WindowSizingError::Sizing(SizingError::InvalidParameters),
            ),
            (
                params(span, 100, 1.0, 8),
                WindowSizingError::Sizing(SizingError::InvalidParameters),
            ),
            (
                params(Span::Time { ms: 7 }, 100, 0.01, 8),
                WindowSizingError::SpanTooShort,
            ),
            (
                params(span, u64::MAX, 0.01, 1),
                WindowSizingError::Sizing(SizingError::TooLarge),
            ),
        ] {
            assert_eq!(WindowSpec::new(&p), Err(e), "{p:?}");
        }
    }
}
