//! What a sketch holds: its parameters, how many heap slots are filled,
//! the heap's minimum (the count a newcomer must reach to enter), what
//! TOPK.LIST lists, how many buckets are owned, and how much the rows
//! have counted (against which [`super::plan::min_reliable_count`] judges
//! the listed counts).

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
    /// Items TOPK.LIST lists (heap slots with a count above 0), and the
    /// smallest and largest of their counts (0 when none is).
    pub listed: u32,
    pub min_listed_count: u32,
    pub max_listed_count: u32,
    /// The largest sum of a row's bucket counts: a lower bound of the
    /// counts added (each add raises one bucket a row by its increment,
    /// or lowers another's by the decay), the stream total the
    /// reliability figure is judged at. The counts added are not saved
    /// (2.8.2's RDB layout has no field for them).
    pub counted: u64,
}

/// Reads every bucket: O(width·depth + k).
pub fn stats(s: &TopK) -> TopKStats {
    let buckets = u64::from(s.width()) * u64::from(s.depth());
    let occupied_buckets = s
        .bucket_bytes()
        .chunks_exact(8)
        .filter(|b| b[4..] != [0, 0, 0, 0])
        .count() as u64;
    let rows = s.bucket_bytes().chunks_exact(8 * s.width() as usize);
    let counted = rows
        .map(|row| {
            row.chunks_exact(8)
                .map(|b| u64::from(u32::from_le_bytes([b[4], b[5], b[6], b[7]])))
                .sum::<u64>()
        })
        .max()
        .unwrap_or(0);
    let listed = s.heap().iter().map(|h| h.count()).filter(|&c| c > 0);
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
        listed: listed.clone().count() as u32,
        min_listed_count: listed.clone().min().unwrap_or(0),
        max_listed_count: listed.max().unwrap_or(0),
        counted,
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
        assert_eq!(
            (st.listed, st.min_listed_count, st.max_listed_count),
            (2, 1, 2)
        );
        assert_eq!(st.counted, 3);
        s.add(b"c").unwrap();
        assert_eq!(stats(&s).min_heap_count, 1);
        // A count-0 record is held but not listed.
        s.incrby(b"d", 0).unwrap();
        let st = stats(&s);
        assert_eq!((st.listed, st.min_listed_count, st.counted), (3, 1, 4));
        // Width 1, decay 1: "y" takes one away from "x"'s bucket; the
        // rows hold 2 of the 4 counts added.
        let mut one = TopK::new(
            Params {
                k: 2,
                width: 1,
                depth: 2,
                decay: 1.0,
            },
            &Unguarded,
        )
        .unwrap();
        for item in [b"x", b"x", b"x", b"y"] {
            one.add(item).unwrap();
        }
        assert_eq!(stats(&one).counted, 2);
    }
}
