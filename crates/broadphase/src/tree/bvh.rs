//! A static bounding volume hierarchy, and pair finding by simultaneous
//! descent.
//!
//! **Build.** Top-down: a node's boxes are binned by centroid into
//! [`BINS`] slabs along each axis, and the split with the lowest
//! surface-area-heuristic cost (area of each side × its box count) is taken
//! (Wald, "On fast construction of SAH-based bounding volume hierarchies",
//! 2007). Nodes of at most [`LEAF`] boxes, or whose centroids coincide, stop
//! splitting. An explicit stack keeps deep (unbalanced) trees off the call
//! stack. Cost O(n log n).
//!
//! **Pairs.** A descent over pairs of nodes, starting from (root, root): a
//! node against itself splits into its two children against themselves and
//! against each other; two different nodes are dropped when their bounds are
//! disjoint, otherwise the larger one is opened. Leaves are tested box by
//! box. Cost O(n log n + k) for well-spread boxes; it degrades gracefully
//! (never worse than testing all pairs) when boxes overlap heavily.
//!
//! Pick it for clustered sets and sets of very different sizes, where a grid's
//! cells fit badly; the tree adapts to the distribution.

use crate::{Aabb, CrossPair, Pair, Scalar};

/// Slabs per axis when binning centroids.
const BINS: usize = 16;
/// Most boxes in a leaf.
const LEAF: usize = 4;

#[derive(Clone, Copy, Debug)]
struct Node<S: Scalar, const D: usize> {
    bounds: Aabb<S, D>,
    /// Inner node: index of the left child (the right one follows it).
    /// Leaf: index of the first box in `Bvh::boxes`.
    start: u32,
    /// Number of boxes of a leaf; 0 for an inner node.
    count: u32,
}

impl<S: Scalar, const D: usize> Node<S, D> {
    #[inline]
    fn is_leaf(&self) -> bool {
        self.count > 0
    }
}

/// A static tree over a box set.
pub(crate) struct Bvh<S: Scalar, const D: usize> {
    nodes: Vec<Node<S, D>>,
    /// The boxes in leaf order, so that leaves read contiguous memory.
    boxes: Vec<Aabb<S, D>>,
    /// `ids[k]`: the input index of `boxes[k]`.
    ids: Vec<u32>,
}

impl<S: Scalar, const D: usize> Bvh<S, D> {
    /// Builds the tree; `boxes` must be non-empty.
    pub fn build(input: &[Aabb<S, D>]) -> Self {
        debug_assert!(!input.is_empty());
        let mut ids: Vec<u32> = (0..input.len() as u32).collect();
        let centroids: Vec<[f64; D]> = input.iter().map(|b| core::array::from_fn(|k| b.center(k))).collect();
        let mut nodes = vec![Node { bounds: bounds_of(input, &ids), start: 0, count: ids.len() as u32 }];
        let mut todo = vec![0usize];
        while let Some(ni) = todo.pop() {
            let (start, count) = (nodes[ni].start as usize, nodes[ni].count as usize);
            if count <= LEAF {
                continue;
            }
            let items = &mut ids[start..start + count];
            let Some(mid) = split(input, &centroids, items) else {
                continue; // coincident centroids: stays a leaf
            };
            let left = nodes.len();
            let (l, r) = items.split_at(mid);
            nodes.push(Node { bounds: bounds_of(input, l), start: start as u32, count: mid as u32 });
            nodes.push(Node { bounds: bounds_of(input, r), start: (start + mid) as u32, count: (count - mid) as u32 });
            nodes[ni].start = left as u32;
            nodes[ni].count = 0;
            todo.push(left + 1);
            todo.push(left);
        }
        let boxes = ids.iter().map(|&i| input[i as usize]).collect();
        Self { nodes, boxes, ids }
    }

    /// Checks the tree's invariants: every box lies in its leaf's bounds,
    /// every child in its parent's, and each box appears once.
    #[cfg(test)]
    pub fn validate(&self) {
        let mut seen = vec![false; self.ids.len()];
        let mut todo = vec![0usize];
        while let Some(ni) = todo.pop() {
            let n = &self.nodes[ni];
            if n.is_leaf() {
                for k in n.start as usize..(n.start + n.count) as usize {
                    assert!(n.bounds.contains(&self.boxes[k]));
                    assert!(!seen[self.ids[k] as usize]);
                    seen[self.ids[k] as usize] = true;
                }
            } else {
                for c in [n.start as usize, n.start as usize + 1] {
                    assert!(n.bounds.contains(&self.nodes[c].bounds));
                    todo.push(c);
                }
            }
        }
        assert!(seen.iter().all(|&s| s));
    }

    #[inline]
    fn leaf(&self, n: &Node<S, D>) -> core::ops::Range<usize> {
        n.start as usize..(n.start + n.count) as usize
    }

    /// All overlapping pairs within the tree's boxes.
    pub fn self_pairs(&self, out: &mut Vec<Pair>) {
        let mut stack = vec![(0u32, 0u32)];
        while let Some((x, y)) = stack.pop() {
            let nx = &self.nodes[x as usize];
            if x == y {
                if nx.is_leaf() {
                    let r = self.leaf(nx);
                    for i in r.clone() {
                        for j in i + 1..r.end {
                            if self.boxes[i].overlaps(&self.boxes[j]) {
                                out.push(Pair::ordered(self.ids[i], self.ids[j]));
                            }
                        }
                    }
                } else {
                    let (l, r) = (nx.start, nx.start + 1);
                    if self.nodes[l as usize].bounds.overlaps(&self.nodes[r as usize].bounds) {
                        stack.push((l, r));
                    }
                    stack.push((r, r));
                    stack.push((l, l));
                }
            } else {
                descend(self, self, x, y, &mut stack, |i, j| {
                    if self.boxes[i].overlaps(&self.boxes[j]) {
                        out.push(Pair::ordered(self.ids[i], self.ids[j]));
                    }
                });
            }
        }
    }

    /// All overlapping pairs between this tree's boxes and `other`'s.
    pub fn cross_pairs(&self, other: &Self, out: &mut Vec<CrossPair>) {
        if !self.nodes[0].bounds.overlaps(&other.nodes[0].bounds) {
            return;
        }
        let mut stack = vec![(0u32, 0u32)];
        while let Some((x, y)) = stack.pop() {
            descend(self, other, x, y, &mut stack, |i, j| {
                if self.boxes[i].overlaps(&other.boxes[j]) {
                    out.push(CrossPair { a: self.ids[i], b: other.ids[j] });
                }
            });
        }
    }
}

/// One step of the descent over two distinct, overlapping nodes: test their
/// leaves' boxes, or open the larger inner node and queue the child pairs
/// that overlap.
#[inline]
fn descend<S: Scalar, const D: usize>(
    ta: &Bvh<S, D>,
    tb: &Bvh<S, D>,
    x: u32,
    y: u32,
    stack: &mut Vec<(u32, u32)>,
    mut test: impl FnMut(usize, usize),
) {
    let (nx, ny) = (&ta.nodes[x as usize], &tb.nodes[y as usize]);
    match (nx.is_leaf(), ny.is_leaf()) {
        (true, true) => {
            for i in ta.leaf(nx) {
                for j in tb.leaf(ny) {
                    test(i, j);
                }
            }
        }
        (false, true) | (false, false) if ny.is_leaf() || nx.bounds.half_area() >= ny.bounds.half_area() => {
            for c in [nx.start, nx.start + 1] {
                if ta.nodes[c as usize].bounds.overlaps(&ny.bounds) {
                    stack.push((c, y));
                }
            }
        }
        _ => {
            for c in [ny.start, ny.start + 1] {
                if tb.nodes[c as usize].bounds.overlaps(&nx.bounds) {
                    stack.push((x, c));
                }
            }
        }
    }
}

fn bounds_of<S: Scalar, const D: usize>(boxes: &[Aabb<S, D>], ids: &[u32]) -> Aabb<S, D> {
    let mut b = boxes[ids[0] as usize];
    for &i in &ids[1..] {
        b = b.union(&boxes[i as usize]);
    }
    b
}

/// Binned SAH split of `items` (reordered in place so the left side comes
/// first); returns the size of the left side, or `None` when the centroids
/// all coincide.
fn split<S: Scalar, const D: usize>(boxes: &[Aabb<S, D>], centroids: &[[f64; D]], items: &mut [u32]) -> Option<usize> {
    let mut cmin = [f64::INFINITY; D];
    let mut cmax = [f64::NEG_INFINITY; D];
    for &i in items.iter() {
        for k in 0..D {
            cmin[k] = cmin[k].min(centroids[i as usize][k]);
            cmax[k] = cmax[k].max(centroids[i as usize][k]);
        }
    }
    // (cost, axis, bin boundary)
    let mut best: Option<(f64, usize, usize)> = None;
    for axis in 0..D {
        let (lo, hi) = (cmin[axis], cmax[axis]);
        if hi.partial_cmp(&lo) != Some(core::cmp::Ordering::Greater) {
            continue;
        }
        let scale = BINS as f64 / (hi / 2.0 - lo / 2.0) / 2.0; // no overflow
        if !scale.is_finite() {
            continue;
        }
        let bin = |c: f64| (((c - lo) * scale) as usize).min(BINS - 1);
        let mut counts = [0usize; BINS];
        let mut bounds: [Option<Aabb<S, D>>; BINS] = [None; BINS];
        for &i in items.iter() {
            let b = bin(centroids[i as usize][axis]);
            counts[b] += 1;
            let bx = &boxes[i as usize];
            bounds[b] = Some(bounds[b].map_or(*bx, |u| u.union(bx)));
        }
        // Sweep from the right to get the right-side areas, then from the left.
        let mut right_area = [0.0f64; BINS];
        let mut acc: Option<Aabb<S, D>> = None;
        let mut right_count = [0usize; BINS];
        let mut n = 0;
        for b in (1..BINS).rev() {
            if let Some(x) = bounds[b] {
                acc = Some(acc.map_or(x, |u| u.union(&x)));
            }
            n += counts[b];
            right_count[b] = n;
            right_area[b] = acc.map_or(0.0, |u| u.half_area());
        }
        let mut acc: Option<Aabb<S, D>> = None;
        let mut n = 0;
        for b in 0..BINS - 1 {
            if let Some(x) = bounds[b] {
                acc = Some(acc.map_or(x, |u| u.union(&x)));
            }
            n += counts[b];
            let (nl, nr) = (n, right_count[b + 1]);
            if nl == 0 || nr == 0 {
                continue;
            }
            let cost = acc.map_or(0.0, |u| u.half_area()) * nl as f64 + right_area[b + 1] * nr as f64;
            if best.is_none_or(|(c, _, _)| cost < c) {
                best = Some((cost, axis, b + 1));
            }
        }
    }
    let (_, axis, boundary) = best?;
    let (lo, hi) = (cmin[axis], cmax[axis]);
    let scale = BINS as f64 / (hi / 2.0 - lo / 2.0) / 2.0;
    let bin = |c: f64| (((c - lo) * scale) as usize).min(BINS - 1);
    // Partition: left side = bins below the boundary.
    let mut l = 0;
    for k in 0..items.len() {
        if bin(centroids[items[k] as usize][axis]) < boundary {
            items.swap(l, k);
            l += 1;
        }
    }
    Some(l)
}

/// All overlapping pairs of `boxes`.
pub(crate) fn complete<S: Scalar, const D: usize>(boxes: &[Aabb<S, D>], out: &mut Vec<Pair>) {
    if boxes.len() >= 2 {
        Bvh::build(boxes).self_pairs(out);
    }
}

/// All overlapping pairs between `a` and `b`.
pub(crate) fn bipartite<S: Scalar, const D: usize>(a: &[Aabb<S, D>], b: &[Aabb<S, D>], out: &mut Vec<CrossPair>) {
    if !a.is_empty() && !b.is_empty() {
        Bvh::build(a).cross_pairs(&Bvh::build(b), out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_is_well_formed() {
        let mut s = crate::Lcg::new(7);
        let mut r = || s.unit();
        for n in [1, 2, 5, 100, 1000] {
            let boxes: Vec<Aabb<f64, 3>> = (0..n)
                .map(|_| {
                    let p = [r() * 10.0, r() * 10.0, r() * 10.0];
                    Aabb::new(p, [p[0] + r(), p[1] + r(), p[2] + r()]).unwrap()
                })
                .collect();
            Bvh::build(&boxes).validate();
        }
        // Coincident centroids stay in one leaf rather than recursing forever.
        let same = vec![Aabb::<f32, 2>::new([0.0, 0.0], [1.0, 1.0]).unwrap(); 50];
        let t = Bvh::build(&same);
        t.validate();
        assert_eq!(t.nodes.len(), 1);
    }
}
