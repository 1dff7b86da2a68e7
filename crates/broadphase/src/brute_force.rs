//! Brute force: every pair tested. O(n²), no setup.
//!
//! This is the reference every other algorithm is diffed against in the
//! tests, so it is written to be obviously right rather than fast. It is
//! also the fastest choice for a few dozen boxes.

use crate::{Aabb, CrossPair, Pair, Scalar};

/// All overlapping pairs of `boxes`.
pub(crate) fn complete<S: Scalar, const D: usize>(boxes: &[Aabb<S, D>], out: &mut Vec<Pair>) {
    for (i, a) in boxes.iter().enumerate() {
        for (j, b) in boxes.iter().enumerate().skip(i + 1) {
            if a.overlaps(b) {
                out.push(Pair::ordered(i as u32, j as u32));
            }
        }
    }
}

/// All overlapping pairs between `a` and `b`.
pub(crate) fn bipartite<S: Scalar, const D: usize>(a: &[Aabb<S, D>], b: &[Aabb<S, D>], out: &mut Vec<CrossPair>) {
    for (i, x) in a.iter().enumerate() {
        for (j, y) in b.iter().enumerate() {
            if x.overlaps(y) {
                out.push(CrossPair { a: i as u32, b: j as u32 });
            }
        }
    }
}
