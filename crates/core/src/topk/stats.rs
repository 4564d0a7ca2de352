//! What a sketch holds: its parameters, how many heap slots are filled,
//! the heap's minimum (the count a newcomer must reach to enter), and how
//! many buckets are owned.

use super::sketch::TopK;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TopKStats {
    pub k: u32,
    pub width: u32,
    pub depth: u32,
    pub decay: f64,
    /// Heap slots holding an item (count above 0, or an item with bytes).
    pub filled_slots: u32,
    /// The count of heap slot 0: what an item's buckets must reach for
    /// the item to enter the heap (0 while slots are free).
    pub min_heap_count: u32,
    /// Buckets with a count above 0.
    pub occupied_buckets: u64,
    /// `occupied_buckets / (width · depth)`.
    pub occupancy: f64,
    /// Decay coins drawn so far (wrapping at 2^32).
    pub draws: u32,
}

/// Reads every bucket: O(width·depth + k).
pub fn stats(s: &TopK) -> TopKStats {
    let buckets = u64::from(s.width()) * u64::from(s.depth());
    let occupied_buckets = s
        .bucket_bytes()
        .chunks_exact(8)
        .filter(|b| b[4..] != [0, 0, 0, 0])
        .count() as u64;
    TopKStats {
        k: s.k(),
        width: s.width(),
        depth: s.depth(),
        decay: s.decay(),
        filled_slots: s
            .heap()
            .iter()
            .filter(|h| h.count() > 0 || h.item().is_some())
            .count() as u32,
        min_heap_count: s.heap().first().map_or(0, |h| h.count()),
        occupied_buckets,
        occupancy: occupied_buckets as f64 / buckets as f64,
        draws: s.draws(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc_guard::Unguarded;
    use crate::topk::Params;

    #[test]
    fn counts_slots_and_buckets() {
        let params = Params {
            k: 3,
            width: 1000,
            depth: 2,
            decay: 0.9,
        };
        let mut s = TopK::new(params, &Unguarded).unwrap();
        assert_eq!(stats(&s).filled_slots, 0);
        s.add(b"a").unwrap();
        s.add(b"a").unwrap();
        s.add(b"b").unwrap();
        let st = stats(&s);
        assert_eq!(st.filled_slots, 2);
        assert_eq!(st.min_heap_count, 0);
        assert_eq!(st.occupied_buckets, 4);
        assert_eq!(st.occupancy, 4.0 / 2000.0);
        s.add(b"c").unwrap();
        assert_eq!(stats(&s).min_heap_count, 1);
    }
}
