//! Compress's sort (spec §5.3 step 1): the order of 2.8.2's quicksort,
//! ties included, in O(n log n) on runs of equal means.
//!
//! 2.8.2 sorts with a quicksort whose pivot is the middle element and
//! whose Lomuto partition moves only means strictly below the pivot to the
//! left. Equal means therefore end in an order that depends on the
//! algorithm (and changes later merges and DUMP bytes), and a range of
//! equal means costs a full scan per element: O(n²).
//!
//! The same swaps are done here, with one shortcut. When the pivot's mean
//! is the smallest mean of its range, the partition moves nothing below
//! it: its only effects are swapping the pivot with the last element, then
//! the last with the first, and the recursion continues on the range
//! without its first element. That outcome is known without the scan. So
//! each range knows its smallest mean and how many elements have it (one
//! scan on entering the range, no more than the partition's own scan); a
//! pivot equal to it costs O(1) and removes one of them, and the minimum
//! is recounted only when none is left. A run of k equal means then costs
//! O(k) instead of O(k²), and the swaps, hence the order, are the
//! literal algorithm's (the tests compare both on inputs full of ties).
//!
//! A range holding a NaN mean (only reachable from arithmetic on extreme
//! values) takes the literal partition throughout, as comparisons with NaN
//! make "smallest" meaningless. Ranges are kept on an explicit stack: the
//! recursion can be as deep as the array is long.

use super::digest::Node;

/// The smallest mean of `nodes[lo..=hi]` and how many nodes have it; None
/// when a mean is NaN.
fn floor_of(nodes: &[Node], lo: usize, hi: usize) -> Option<(f64, usize)> {
    let mut min = nodes[lo].mean;
    let mut count = 0;
    for n in &nodes[lo..=hi] {
        if n.mean.is_nan() {
            return None;
        }
        if n.mean < min {
            min = n.mean;
            count = 1;
        } else if n.mean == min {
            count += 1;
        }
    }
    Some((min, count))
}

/// Sorts by mean in the order 2.8.2's quicksort leaves.
///
/// When every mean differs from every other (and none is NaN), as in
/// almost every compress of real data, there is one sorted order, so any
/// sort gives the quicksort's: the library's sort runs first, on the
/// nodes as they are (a copy kept), and only a tie or a NaN, found in the
/// sorted result, sends the copy to the literal algorithm ([`exact`]).
pub fn sort_nodes(nodes: &mut [Node]) {
    if nodes.len() < 2 {
        return;
    }
    let original = nodes.to_vec();
    nodes.sort_unstable_by(|a, b| a.mean.total_cmp(&b.mean));
    // `<` is false for equal means (-0.0 and 0.0 too) and for NaN.
    if nodes.windows(2).all(|w| w[0].mean < w[1].mean) {
        return;
    }
    nodes.copy_from_slice(&original);
    exact(nodes);
}

/// The quicksort's own swaps (see the module's doc), for ranges with ties
/// or NaN.
pub fn exact(nodes: &mut [Node]) {
    if nodes.len() < 2 {
        return;
    }
    let mut ranges = vec![(0usize, nodes.len() - 1)];
    while let Some((mut lo, hi)) = ranges.pop() {
        let mut floor = floor_of(nodes, lo, hi);
        while lo < hi {
            if hi - lo == 1 {
                if nodes[lo].mean > nodes[hi].mean {
                    nodes.swap(lo, hi);
                }
                break;
            }
            let p = lo + (hi - lo) / 2;
            let v = nodes[p].mean;
            if let Some((min, count)) = floor.as_mut() {
                if v == *min {
                    // Nothing below the pivot: the partition's whole effect.
                    nodes.swap(p, hi);
                    nodes.swap(lo, hi);
                    lo += 1;
                    *count -= 1;
                    if *count == 0 {
                        floor = floor_of(nodes, lo, hi);
                    }
                    continue;
                }
            }
            nodes.swap(p, hi);
            let mut next = lo;
            for j in lo..hi {
                if nodes[j].mean < v {
                    nodes.swap(next, j);
                    next += 1;
                }
            }
            nodes.swap(next, hi);
            if next > lo {
                ranges.push((lo, next - 1));
            }
            lo = next + 1;
            if lo < hi {
                floor = floor_of(nodes, lo, hi);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes(means: &[f64]) -> Vec<Node> {
        means
            .iter()
            .enumerate()
            .map(|(i, &mean)| Node {
                mean,
                weight: i as i64,
            })
            .collect()
    }

    #[test]
    fn equal_means_take_the_three_cycle_order() {
        // Traced by hand from §5.3 on [a b c d] (all equal): P = 1: swap
        // 1,3 → a d c b; swap 0,3 → b d c a; then [d c a] from 1: P = 2:
        // swap 2,3 → b d a c; swap 1,3 → b c a d; then [a d]: no swap.
        let mut v = nodes(&[1.0; 4]);
        sort_nodes(&mut v);
        let order: Vec<i64> = v.iter().map(|n| n.weight).collect();
        assert_eq!(order, [1, 2, 0, 3]);
    }

    /// The library sort's result is the literal quicksort's whenever the
    /// means are distinct; with ties (few or many) and NaN the literal
    /// order is kept.
    #[test]
    fn same_order_as_the_literal_quicksort() {
        let mut seed = 0x1234_5678_9abc_def0u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for case in 0..400 {
            let n = 2 + (next() % 700) as usize;
            // Distinct values, then fewer and fewer distinct values.
            let distinct = match case % 4 {
                0 => u64::MAX,
                1 => n as u64 * 4,
                2 => 7,
                _ => 2,
            };
            let mut means: Vec<f64> = (0..n)
                .map(|_| (next() % distinct) as f64 - (distinct / 2) as f64)
                .collect();
            if case % 9 == 0 {
                means[n / 2] = f64::NAN;
            }
            if case % 11 == 0 {
                means[0] = -0.0;
                means[n - 1] = 0.0;
            }
            let mut fast = nodes(&means);
            let mut literal = fast.clone();
            sort_nodes(&mut fast);
            exact(&mut literal);
            let bits = |v: &[Node]| -> Vec<(u64, i64)> {
                v.iter().map(|x| (x.mean.to_bits(), x.weight)).collect()
            };
            assert_eq!(bits(&fast), bits(&literal), "case {case}");
        }
    }

    #[test]
    fn sorts_and_is_fast_on_equal_means() {
        let mut v = nodes(&vec![3.0; 1_000_000]);
        let t = std::time::Instant::now();
        sort_nodes(&mut v);
        assert!(t.elapsed().as_secs() < 5);
        let mut v = nodes(&[3.0, -1.0, 2.0, 2.0, f64::MAX, -0.0, 0.0]);
        sort_nodes(&mut v);
        assert!(v.windows(2).all(|w| w[0].mean <= w[1].mean));
    }
}
