//! The heap of a sketch: k records kept as a min-heap on count in a
//! 0-based array, with RedisBloom 2.8.2's exact sift-down and lookup
//! (spec §4.3, §4.4). The layout decides DUMP bytes and the order of
//! TOPK.LIST among equal counts, so both are reproduced step for step.
//!
//! 2.8.2 never sifts up: an item found in the heap whose count went down
//! (its buckets decayed, or wrapped) is sifted down only, so the min-heap
//! property can fail after collisions. Kept, since the layout is
//! observable.

/// One heap record: an item with its fingerprint, length and count.
///
/// The item's bytes are known in full for every item added here. A value
/// 2.8.2 saved keeps only the bytes before the item's first NUL (then
/// `item().len() < itemlen()`): such an item is listed with what is known
/// and matches no lookup (2.8.2 compares past its buffer there). An empty
/// slot, and an empty item after a 2.8.2-style load (saved as the one byte
/// `00`), have no bytes at all (`item()` is `None`; 2.8.2 replies null).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HeapSlot {
    pub(crate) fp: u32,
    pub(crate) itemlen: u32,
    pub(crate) count: u32,
    pub(crate) item: Option<Box<[u8]>>,
}

impl HeapSlot {
    pub(crate) fn new(fp: u32, item: &[u8], count: u32) -> HeapSlot {
        HeapSlot {
            fp,
            itemlen: item.len() as u32,
            count,
            item: Some(item.into()),
        }
    }

    pub fn fp(&self) -> u32 {
        self.fp
    }

    /// The item's length as added (kept through 2.8.2's cut strings).
    pub fn itemlen(&self) -> u32 {
        self.itemlen
    }

    pub fn count(&self) -> u32 {
        self.count
    }

    /// The item's bytes, or `None` (an empty slot; see the type's doc).
    pub fn item(&self) -> Option<&[u8]> {
        self.item.as_deref()
    }

    /// Whether every byte of the item is known.
    pub fn is_complete(&self) -> bool {
        self.item.as_deref().map_or(0, <[u8]>::len) == self.itemlen as usize
    }

    /// 2.8.2's comparison: same fingerprint, same length, same bytes.
    #[inline]
    pub fn matches(&self, fp: u32, item: &[u8]) -> bool {
        self.fp == fp
            && self.itemlen as usize == item.len()
            && self.item.as_deref().unwrap_or(&[]) == item
    }
}

/// The slot holding `item`: slots are scanned from the last to the first,
/// as 2.8.2 does, so the highest matching index wins.
#[inline]
pub fn find(heap: &[HeapSlot], fp: u32, item: &[u8]) -> Option<usize> {
    heap.iter().rposition(|s| s.matches(fp, item))
}

/// The child of `s` to compare with: the right one only when strictly
/// smaller (ties pick the left).
#[inline(always)]
fn smaller_child(heap: &[HeapSlot], s: usize) -> usize {
    let c = 2 * s + 1;
    if c + 1 < heap.len() && heap[c].count > heap[c + 1].count {
        c + 1
    } else {
        c
    }
}

/// 2.8.2's sift-down from `start`: the first step moves on equal counts
/// (it stops only when the child is strictly larger), the later steps only
/// while the child is strictly smaller than the record moving down.
pub fn sift_down(heap: &mut [HeapSlot], start: usize) {
    let n = heap.len();
    if n < 2 || start > (n - 2) / 2 {
        return;
    }
    let last_parent = (n - 2) / 2;
    let mut c = smaller_child(heap, start);
    if heap[c].count > heap[start].count {
        return;
    }
    let moving = heap[start].count;
    let mut s = start;
    loop {
        // The record moving down travels by swaps: the same final layout
        // as 2.8.2's save-and-shift.
        heap.swap(s, c);
        s = c;
        if s > last_parent {
            break;
        }
        c = smaller_child(heap, s);
        if heap[c].count >= moving {
            break;
        }
    }
}

/// Whether every parent's count is at most its children's.
pub fn is_min_heap(heap: &[HeapSlot]) -> bool {
    (1..heap.len()).all(|i| heap[(i - 1) / 2].count <= heap[i].count)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slots(counts: &[u32]) -> Vec<HeapSlot> {
        counts
            .iter()
            .enumerate()
            .map(|(i, &c)| HeapSlot::new(i as u32, &[i as u8], c))
            .collect()
    }

    fn order(heap: &[HeapSlot]) -> Vec<(u32, u32)> {
        heap.iter().map(|s| (s.fp, s.count)).collect()
    }

    #[test]
    fn first_step_moves_on_ties_later_steps_do_not() {
        // Root 1 with children 1, 1: moves to the left child (tie), then
        // stops at its children of count 1 (not strictly smaller).
        let mut h = slots(&[1, 1, 1, 1, 1]);
        sift_down(&mut h, 0);
        assert_eq!(order(&h), [(1, 1), (0, 1), (2, 1), (3, 1), (4, 1)]);
        // Root 5: children 3, 3 → left; then 4, 2 → right (2 < 5).
        let mut h = slots(&[5, 3, 3, 4, 2]);
        sift_down(&mut h, 0);
        assert_eq!(order(&h), [(1, 3), (4, 2), (2, 3), (3, 4), (0, 5)]);
    }

    #[test]
    fn stops_when_the_child_is_larger() {
        let mut h = slots(&[2, 3, 4]);
        sift_down(&mut h, 0);
        assert_eq!(order(&h), [(0, 2), (1, 3), (2, 4)]);
        // Right child strictly smaller than the left: picked.
        let mut h = slots(&[9, 4, 3]);
        sift_down(&mut h, 0);
        assert_eq!(order(&h), [(2, 3), (1, 4), (0, 9)]);
        // A leaf or a one-slot heap: nothing.
        let mut h = slots(&[9, 1]);
        sift_down(&mut h, 1);
        assert_eq!(order(&h), [(0, 9), (1, 1)]);
        let mut h = slots(&[9]);
        sift_down(&mut h, 0);
        assert_eq!(order(&h), [(0, 9)]);
    }

    #[test]
    fn later_steps_need_strictly_smaller() {
        // Root 3 → child 1 (first step); then children 3 and 3 equal to
        // the moving count: stop.
        let mut h = slots(&[3, 1, 2, 3, 3]);
        sift_down(&mut h, 0);
        assert_eq!(order(&h), [(1, 1), (0, 3), (2, 2), (3, 3), (4, 3)]);
    }

    #[test]
    fn lookup_scans_from_the_end() {
        let mut h = slots(&[1, 2]);
        h[0] = HeapSlot::new(5, b"x", 1);
        h[1] = HeapSlot::new(5, b"x", 2);
        assert_eq!(find(&h, 5, b"x"), Some(1));
        assert_eq!(find(&h, 5, b"y"), None);
        assert_eq!(find(&h, 6, b"x"), None);
        // Binary items compare whole.
        h[0] = HeapSlot::new(9, b"a\0b", 1);
        assert_eq!(find(&h, 9, b"a\0b"), Some(0));
        assert_eq!(find(&h, 9, b"a\0c"), None);
        // An empty slot matches the empty item of fingerprint 0 only.
        let empty = HeapSlot::default();
        assert!(empty.matches(0, b""));
        assert!(!empty.matches(0, b"a"));
        // A cut item matches nothing.
        let cut = HeapSlot {
            fp: 3,
            itemlen: 3,
            count: 1,
            item: Some(b"q".as_slice().into()),
        };
        assert!(!cut.is_complete());
        assert!(!cut.matches(3, b"q\0z"));
        assert!(!cut.matches(3, b"q"));
    }
}
