//! Box intersection by streamed segment trees (Zomorodian & Edelsbrunner,
//! "Fast software for box intersections", SoCG 2000; the algorithm behind
//! CGAL's `box_intersection_d`).
//!
//! **Idea.** Two boxes overlap when, on every axis, the start of one lies in
//! the interval of the other. Fix the top axis d: the pairs where p's start
//! lies in i's interval are found by a segment tree over the starts ("points")
//! that is never built, only streamed: a call gets a set of points `P` and a
//! set of intervals `I`; the intervals that contain all of `P` on axis d are
//! done with axis d and recurse on axis d-1 (both ways round, since on lower
//! axes either box may be the one whose start is inside); the others go down
//! to the halves of `P` split at its median start, each with the intervals
//! that reach it. Small calls (below a cutoff) fall back to a scan on axis 0
//! that tests the remaining axes directly.
//!
//! **Exactness.** "p's start lies in i's interval" must hold for exactly one
//! of two overlapping boxes, also when their starts are equal. Starts are
//! therefore compared as pairs `(value, id)`: box p's start is in box i's
//! closed interval on axis d iff `(lo_i, id_i) < (lo_p, id_p)` and
//! `lo_p <= hi_i`. For two distinct boxes that overlap on d, exactly one of
//! the two orders holds, and no box contains its own start, so every pair is
//! reported once and never with itself. The segment bounds are the actual
//! smallest and largest points of `P`, which keeps the tests exact without
//! any ±∞ sentinel.
//!
//! **Cost.** O(n log^d n + k) time for k pairs, whatever the input: unlike a
//! sweep, no arrangement of boxes makes it test a quadratic number of
//! candidates when the pairs are few. Pick it when every axis projection is
//! dense (long thin boxes along several axes, everything on one interval);
//! on evenly spread boxes the grid is several times faster.

use crate::{Aabb, CrossPair, Pair, Scalar};

/// Calls with fewer points or intervals than this are scanned directly.
pub(crate) const DEFAULT_CUTOFF: usize = 64;

#[derive(Clone, Copy, Debug)]
struct Rec<S, const D: usize> {
    lo: [S; D],
    hi: [S; D],
    id: u32,
}

/// `(a.lo, a.id) < (b.lo, b.id)` on axis `d`.
#[inline(always)]
fn lo_less<S: Scalar, const D: usize>(a: &Rec<S, D>, b: &Rec<S, D>, d: usize) -> bool {
    a.lo[d] < b.lo[d] || (a.lo[d] == b.lo[d] && a.id < b.id)
}

#[inline(always)]
fn lo_cmp<S: Scalar, const D: usize>(a: &Rec<S, D>, b: &Rec<S, D>, d: usize) -> core::cmp::Ordering {
    if lo_less(a, b, d) {
        core::cmp::Ordering::Less
    } else if lo_less(b, a, d) {
        core::cmp::Ordering::Greater
    } else {
        core::cmp::Ordering::Equal
    }
}

/// Whether `p`'s start lies in `i`'s interval on axis `d`.
#[inline(always)]
fn point_in<S: Scalar, const D: usize>(p: &Rec<S, D>, i: &Rec<S, D>, d: usize) -> bool {
    lo_less(i, p, d) && p.lo[d] <= i.hi[d]
}

/// What a found pair becomes.
trait Sink {
    fn report(&mut self, p: u32, i: u32);
}

struct Complete<'a>(&'a mut Vec<Pair>);
impl Sink for Complete<'_> {
    #[inline]
    fn report(&mut self, p: u32, i: u32) {
        self.0.push(Pair::ordered(p, i));
    }
}

/// Ids below `split` belong to the first set, the others to the second.
struct Bipartite<'a> {
    out: &'a mut Vec<CrossPair>,
    split: u32,
}
impl Sink for Bipartite<'_> {
    #[inline]
    fn report(&mut self, p: u32, i: u32) {
        let (a, b) = if p < self.split { (p, i) } else { (i, p) };
        self.out.push(CrossPair { a, b: b - self.split });
    }
}

struct Search<'a, K> {
    sink: &'a mut K,
    cutoff: usize,
}

impl<K: Sink> Search<'_, K> {
    /// Reports every `(p, i)`, `p` in `ps`, `i` in `is`, where p's start is in
    /// i's interval on axis `d` and the boxes overlap on all axes below `d`.
    /// (Axes above `d` are known to overlap for every such pair.)
    fn stream<S: Scalar, const D: usize>(&mut self, ps: &mut [Rec<S, D>], is: &mut [Rec<S, D>], d: usize) {
        if ps.is_empty() || is.is_empty() {
            return;
        }
        if d == 0 {
            return self.one_way_scan(ps, is);
        }
        if ps.len() < self.cutoff || is.len() < self.cutoff {
            return self.two_way_scan(ps, is, d);
        }
        let (mut pmin, mut pmax) = (ps[0], ps[0]);
        for p in &ps[1..] {
            if lo_less(p, &pmin, d) {
                pmin = *p;
            }
            if lo_less(&pmax, p, d) {
                pmax = *p;
            }
        }
        // Intervals that contain every point of `ps` on axis d.
        let spans = partition(is, |i| lo_less(i, &pmin, d) && i.hi[d] >= pmax.lo[d]);
        let (inner, rest) = is.split_at_mut(spans);
        if !inner.is_empty() {
            self.stream(inner, ps, d - 1);
            self.stream(ps, inner, d - 1);
        }
        let mid = ps.len() / 2;
        ps.select_nth_unstable_by(mid, |a, b| lo_cmp(a, b, d));
        let median = ps[mid];
        let (left, right) = ps.split_at_mut(mid);
        let mut left_max = left[0];
        for p in &left[1..] {
            if lo_less(&left_max, p, d) {
                left_max = *p;
            }
        }
        // An interval can hold a point of a half only if it starts before the
        // half's largest point and ends at or after its smallest.
        let k = partition(rest, |i| lo_less(i, &left_max, d) && i.hi[d] >= pmin.lo[d]);
        self.stream(left, &mut rest[..k], d);
        let k = partition(rest, |i| lo_less(i, &pmax, d) && i.hi[d] >= median.lo[d]);
        self.stream(right, &mut rest[..k], d);
    }

    /// Axis 0 with fixed roles: every `p` whose start lies in an interval.
    fn one_way_scan<S: Scalar, const D: usize>(&mut self, ps: &mut [Rec<S, D>], is: &mut [Rec<S, D>]) {
        ps.sort_unstable_by(|a, b| lo_cmp(a, b, 0));
        is.sort_unstable_by(|a, b| lo_cmp(a, b, 0));
        let mut first = 0;
        for i in is.iter() {
            while first < ps.len() && !lo_less(i, &ps[first], 0) {
                first += 1;
            }
            for p in &ps[first..] {
                if p.lo[0] > i.hi[0] {
                    break;
                }
                self.sink.report(p.id, i.id);
            }
        }
    }

    /// The base case above axis 0: a two-way sweep on axis 0 (each box scans
    /// the other set from its start), then the axes 1..d tested directly,
    /// with fixed roles on axis d.
    fn two_way_scan<S: Scalar, const D: usize>(&mut self, ps: &mut [Rec<S, D>], is: &mut [Rec<S, D>], d: usize) {
        ps.sort_unstable_by(|a, b| lo_cmp(a, b, 0));
        is.sort_unstable_by(|a, b| lo_cmp(a, b, 0));
        let check = |p: &Rec<S, D>, i: &Rec<S, D>| {
            point_in(p, i, d) && (1..d).all(|k| p.lo[k] <= i.hi[k] && i.lo[k] <= p.hi[k])
        };
        let (mut a, mut b) = (0, 0);
        while a < ps.len() && b < is.len() {
            if lo_less(&ps[a], &is[b], 0) {
                let p = &ps[a];
                for i in &is[b..] {
                    if i.lo[0] > p.hi[0] {
                        break;
                    }
                    if check(p, i) {
                        self.sink.report(p.id, i.id);
                    }
                }
                a += 1;
            } else {
                let i = &is[b];
                for p in &ps[a..] {
                    if p.lo[0] > i.hi[0] {
                        break;
                    }
                    if check(p, i) {
                        self.sink.report(p.id, i.id);
                    }
                }
                b += 1;
            }
        }
    }
}

/// Moves the elements satisfying `pred` to the front; returns their count.
fn partition<T>(v: &mut [T], pred: impl Fn(&T) -> bool) -> usize {
    let mut k = 0;
    for j in 0..v.len() {
        if pred(&v[j]) {
            v.swap(k, j);
            k += 1;
        }
    }
    k
}

/// The records of `boxes`, ids offset by `base`, with the axes permuted so
/// that record axis 0 (the scan axis) is `perm[0]`.
fn records<S: Scalar, const D: usize>(boxes: &[Aabb<S, D>], base: u32, perm: &[usize; D]) -> Vec<Rec<S, D>> {
    boxes
        .iter()
        .enumerate()
        .map(|(i, b)| Rec {
            lo: core::array::from_fn(|k| b.min()[perm[k]]),
            hi: core::array::from_fn(|k| b.max()[perm[k]]),
            id: base + i as u32,
        })
        .collect()
}

/// Axis order: the most selective axis (fewest overlapping pairs) is
/// scanned, the least selective is streamed first.
fn axis_order<const D: usize>(overlap: &[f64; D]) -> [usize; D] {
    let mut perm: [usize; D] = core::array::from_fn(|k| k);
    perm.sort_by(|&a, &b| overlap[a].total_cmp(&overlap[b]));
    perm
}

/// All overlapping pairs of `boxes`.
pub(crate) fn complete<S: Scalar, const D: usize>(boxes: &[Aabb<S, D>], cutoff: usize, out: &mut Vec<Pair>) {
    if boxes.len() < 2 {
        return;
    }
    let perm = axis_order(&crate::stats::Profile::new(boxes).overlap);
    let mut ps = records(boxes, 0, &perm);
    let mut is = ps.clone();
    let mut sink = Complete(out);
    Search { sink: &mut sink, cutoff: cutoff.max(2) }.stream(&mut ps, &mut is, D - 1);
}

/// All overlapping pairs between `a` and `b`.
pub(crate) fn bipartite<S: Scalar, const D: usize>(
    a: &[Aabb<S, D>],
    b: &[Aabb<S, D>],
    cutoff: usize,
    out: &mut Vec<CrossPair>,
) {
    if a.is_empty() || b.is_empty() {
        return;
    }
    let perm = axis_order(&crate::stats::Profile::bipartite(a, b).overlap);
    let split = a.len() as u32;
    let mut ra = records(a, 0, &perm);
    let mut rb = records(b, split, &perm);
    let mut sink = Bipartite { out, split };
    let mut s = Search { sink: &mut sink, cutoff: cutoff.max(2) };
    s.stream(&mut ra, &mut rb, D - 1);
    s.stream(&mut rb, &mut ra, D - 1);
}
