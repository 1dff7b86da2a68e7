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
//! that tests the remaining axes directly. The boxes are sorted on axis 0 once,
//! up front; a scan sorts only the ranks (positions in that order) of its
//! boxes, 4-byte integers, and reads the boxes from the sorted table.
//!
//! **Exactness.** "p's start lies in i's interval" must hold for exactly one
//! of two overlapping boxes, also when their starts are equal. Starts are
//! therefore compared as pairs `(value, rank)` (the rank is unique per box):
//! box p's start is in box i's closed interval on axis d iff
//! `(lo_i, rank_i) < (lo_p, rank_p)` and `lo_p <= hi_i`. For two distinct
//! boxes that overlap on d, exactly one of the two orders holds, and no box
//! contains its own start, so every pair is reported once and never with
//! itself. The segment bounds are the actual
//! smallest and largest points of `P`, which keeps the tests exact without
//! any ±∞ sentinel.
//!
//! **Cost.** O(n log^d n + k) time for k pairs, whatever the input: unlike a
//! sweep, no arrangement of boxes makes it test a quadratic number of
//! candidates when the pairs are few. Pick it when every axis projection is
//! dense (long thin boxes along several axes, everything on one interval);
//! on evenly spread boxes the grid is several times faster.

use crate::stats::Profile;
use crate::{Aabb, CrossPair, Pair, Scalar};

/// Calls with fewer points or intervals than this are scanned directly.
pub(crate) const DEFAULT_CUTOFF: usize = 64;

/// A box with its axes permuted (axis 0 is the scan axis) and its rank: its
/// position among all boxes sorted by `(lo[0], id)`. The rank breaks ties
/// between equal starts on every axis.
#[derive(Clone, Copy, Debug)]
struct Rec<S, const D: usize> {
    lo: [S; D],
    hi: [S; D],
    rank: u32,
}

/// `(a.lo, a.rank) < (b.lo, b.rank)` on axis `d`.
#[inline(always)]
fn lo_less<S: Scalar, const D: usize>(a: &Rec<S, D>, b: &Rec<S, D>, d: usize) -> bool {
    // Branch-free: on random data either way of the short cut mispredicts.
    (a.lo[d] < b.lo[d]) | ((a.lo[d] == b.lo[d]) & (a.rank < b.rank))
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

struct Search<'a, K, S, const D: usize> {
    sink: &'a mut K,
    cutoff: usize,
    /// Every record, in rank order (the order of `(lo[0], id)`).
    table: &'a [Rec<S, D>],
    /// The caller's id of each rank.
    ids: &'a [u32],
    /// Scratch of the scans: the ranks of the points and of the intervals.
    rp: Vec<u32>,
    ri: Vec<u32>,
}

impl<'a, K: Sink, S: Scalar, const D: usize> Search<'a, K, S, D> {
    fn new(sink: &'a mut K, cutoff: usize, table: &'a [Rec<S, D>], ids: &'a [u32]) -> Self {
        Search { sink, cutoff: cutoff.max(2), table, ids, rp: Vec::new(), ri: Vec::new() }
    }

    /// Reports every `(p, i)`, `p` in `ps`, `i` in `is`, where p's start is in
    /// i's interval on axis `d` and the boxes overlap on all axes below `d`.
    /// (Axes above `d` are known to overlap for every such pair.)
    fn stream(&mut self, ps: &mut [Rec<S, D>], is: &mut [Rec<S, D>], d: usize) {
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
        let spans = partition(is, |i| lo_less(i, &pmin, d) & (i.hi[d] >= pmax.lo[d]));
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
        let k = partition(rest, |i| lo_less(i, &left_max, d) & (i.hi[d] >= pmin.lo[d]));
        self.stream(left, &mut rest[..k], d);
        let k = partition(rest, |i| lo_less(i, &pmax, d) & (i.hi[d] >= median.lo[d]));
        self.stream(right, &mut rest[..k], d);
    }

    /// The ranks of `ps` and `is`, sorted: both sets in the order of
    /// `(lo[0], id)`, so the scans need not move the records.
    fn ranks(&mut self, ps: &[Rec<S, D>], is: &[Rec<S, D>]) {
        self.rp.clear();
        self.rp.extend(ps.iter().map(|p| p.rank));
        self.rp.sort_unstable();
        self.ri.clear();
        self.ri.extend(is.iter().map(|i| i.rank));
        self.ri.sort_unstable();
    }

    #[inline(always)]
    fn report(&mut self, p: u32, i: u32) {
        self.sink.report(self.ids[p as usize], self.ids[i as usize]);
    }

    /// Axis 0 with fixed roles: every `p` whose start lies in an interval.
    fn one_way_scan(&mut self, ps: &[Rec<S, D>], is: &[Rec<S, D>]) {
        self.ranks(ps, is);
        let (rp, ri) = (core::mem::take(&mut self.rp), core::mem::take(&mut self.ri));
        let table = self.table;
        let mut first = 0;
        for &i in &ri {
            // Points at or before `i` in rank order do not start inside it.
            while first < rp.len() && rp[first] <= i {
                first += 1;
            }
            let end = table[i as usize].hi[0];
            for &p in &rp[first..] {
                if table[p as usize].lo[0] > end {
                    break;
                }
                self.report(p, i);
            }
        }
        (self.rp, self.ri) = (rp, ri);
    }

    /// The base case above axis 0: a two-way sweep on axis 0 (each box scans
    /// the other set from its start), then the axes 1..d tested directly,
    /// with fixed roles on axis d.
    fn two_way_scan(&mut self, ps: &[Rec<S, D>], is: &[Rec<S, D>], d: usize) {
        self.ranks(ps, is);
        let (rp, ri) = (core::mem::take(&mut self.rp), core::mem::take(&mut self.ri));
        let table = self.table;
        let check = |p: &Rec<S, D>, i: &Rec<S, D>| {
            point_in(p, i, d) && (1..d).all(|k| p.lo[k] <= i.hi[k] && i.lo[k] <= p.hi[k])
        };
        let (mut a, mut b) = (0, 0);
        while a < rp.len() && b < ri.len() {
            if rp[a] < ri[b] {
                let p = &table[rp[a] as usize];
                for &i in &ri[b..] {
                    let ir = &table[i as usize];
                    if ir.lo[0] > p.hi[0] {
                        break;
                    }
                    if check(p, ir) {
                        self.report(rp[a], i);
                    }
                }
                a += 1;
            } else {
                let i = &table[ri[b] as usize];
                for &p in &rp[a..] {
                    let pr = &table[p as usize];
                    if pr.lo[0] > i.hi[0] {
                        break;
                    }
                    if check(pr, i) {
                        self.report(p, ri[b]);
                    }
                }
                b += 1;
            }
        }
        (self.rp, self.ri) = (rp, ri);
    }
}

/// Moves the elements satisfying `pred` to the front; returns their count.
fn partition<T>(v: &mut [T], pred: impl Fn(&T) -> bool) -> usize {
    // Branch-free Lomuto: `v[k..j]` fails `pred`, so swapping a failing
    // `v[j]` into it changes nothing that matters.
    let mut k = 0;
    for j in 0..v.len() {
        let hit = pred(&v[j]);
        v.swap(k, j);
        k += hit as usize;
    }
    k
}

/// The records of the boxes (`a`, then `b`'s with ids offset by `a.len()`),
/// with the axes permuted so that record axis 0 (the scan axis) is
/// `perm[0]`, in rank order, and the id of each rank.
fn ranked<S: Scalar, const D: usize>(
    a: &[Aabb<S, D>],
    b: &[Aabb<S, D>],
    perm: &[usize; D],
) -> (Vec<Rec<S, D>>, Vec<u32>) {
    let record = |x: &Aabb<S, D>, id: usize| Rec {
        lo: core::array::from_fn(|k| x.min()[perm[k]]),
        hi: core::array::from_fn(|k| x.max()[perm[k]]),
        rank: id as u32,
    };
    let mut table: Vec<Rec<S, D>> = a
        .iter()
        .enumerate()
        .chain(b.iter().enumerate().map(|(i, x)| (a.len() + i, x)))
        .map(|(i, x)| record(x, i))
        .collect();
    // The rank field holds the id until here: sorting by `(lo[0], id)`.
    table.sort_unstable_by(|x, y| lo_cmp(x, y, 0));
    let ids = table.iter().map(|r| r.rank).collect();
    for (rank, r) in table.iter_mut().enumerate() {
        r.rank = rank as u32;
    }
    (table, ids)
}

/// Axis order: the most selective axis (fewest overlapping pairs) is
/// scanned, the least selective is streamed first.
fn axis_order<const D: usize>(overlap: &[f64; D]) -> [usize; D] {
    let mut perm: [usize; D] = core::array::from_fn(|k| k);
    perm.sort_by(|&a, &b| overlap[a].total_cmp(&overlap[b]));
    perm
}

/// All overlapping pairs of `boxes` (`profile`: theirs, if taken already).
pub(crate) fn complete<S: Scalar, const D: usize>(
    boxes: &[Aabb<S, D>],
    cutoff: usize,
    profile: Option<Profile<D>>,
    out: &mut Vec<Pair>,
) {
    if boxes.len() < 2 {
        return;
    }
    let perm = axis_order(&profile.unwrap_or_else(|| Profile::new(boxes)).overlap);
    let (table, ids) = ranked(boxes, &[], &perm);
    let mut ps = table.clone();
    let mut is = table.clone();
    let mut sink = Complete(out);
    Search::new(&mut sink, cutoff, &table, &ids).stream(&mut ps, &mut is, D - 1);
}

/// All overlapping pairs between `a` and `b` (`profile`: theirs, if taken
/// already).
pub(crate) fn bipartite<S: Scalar, const D: usize>(
    a: &[Aabb<S, D>],
    b: &[Aabb<S, D>],
    cutoff: usize,
    profile: Option<Profile<D>>,
    out: &mut Vec<CrossPair>,
) {
    if a.is_empty() || b.is_empty() {
        return;
    }
    let perm = axis_order(&profile.unwrap_or_else(|| Profile::bipartite(a, b)).overlap);
    let split = a.len() as u32;
    let (table, ids) = ranked(a, b, &perm);
    let (mut ra, mut rb): (Vec<_>, Vec<_>) = table.iter().partition(|r| ids[r.rank as usize] < split);
    let mut sink = Bipartite { out, split };
    let mut s = Search::new(&mut sink, cutoff, &table, &ids);
    s.stream(&mut ra, &mut rb, D - 1);
    s.stream(&mut rb, &mut ra, D - 1);
}
