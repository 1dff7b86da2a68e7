//! The sweep kernels shared by sort-and-sweep, the grid and the fallbacks.
//!
//! A sweep works on [`Entry`] records sorted by their interval start `lo` on
//! the sweep axis and terminated by a sentinel whose `lo` is `+∞`, so scans
//! need no bounds test (PhysX's trick). The cross axes are stored as
//! `[min_b, min_c, -max_b, -max_c]`; a query carries
//! `[max_b, max_c, -min_b, -min_c]`, so the whole cross-axis test is four
//! `<=` comparisons combined without branches (negation is exact in IEEE
//! arithmetic). In 2D the one cross axis fills both slots.
//!
//! Output is written branch-free: every candidate is stored into the spare
//! capacity of the output vector and the write cursor advances by the test
//! result, so a hit costs no misprediction.

use crate::pair::OutPair;
use crate::{Aabb, Scalar};

/// Asks the CPU to start loading the cache lines of `*p` (the first and the
/// last byte's lines, which differ when `T` straddles a line). A hint: it
/// never faults and never changes what the program computes.
#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let first = p as *const i8;
        let last = first.wrapping_add(core::mem::size_of::<T>().max(1) - 1);
        // SAFETY: SSE is part of the x86_64 baseline, so the instruction
        // exists; a prefetch reads nothing into the program and is valid for
        // any address.
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(first);
            _mm_prefetch::<_MM_HINT_T0>(last);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// The sweep axis and the two cross axes of a sweep.
///
/// Always two cross axes, so that the kernels are straight-line code: in 2D
/// the one cross axis is used twice, in 1D the sweep axis stands in (its
/// test always passes for boxes that overlap on the sweep axis). Testing an
/// axis twice changes nothing about the result.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Axes {
    pub sweep: usize,
    pub cross: [usize; 2],
    /// How many of the cross axes are distinct real axes (0, 1 or 2).
    pub distinct: usize,
}

impl Axes {
    /// Sweep along `sweep`; the remaining axes, in order, are the cross axes.
    pub fn new(dim: usize, sweep: usize) -> Self {
        assert!((1..=3).contains(&dim) && sweep < dim);
        let others: Vec<usize> = (0..dim).filter(|&a| a != sweep).collect();
        let cross = match others.as_slice() {
            [] => [sweep, sweep],
            [a] => [*a, *a],
            [a, b, ..] => [*a, *b],
        };
        Self { sweep, cross, distinct: others.len() }
    }
}

/// One box prepared for a sweep.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub(crate) struct Entry<S> {
    /// Start on the sweep axis (the sort key).
    pub lo: S,
    /// End on the sweep axis.
    pub hi: S,
    /// `[min_b, min_c, -max_b, -max_c]` on the cross axes.
    pub cross: [S; 4],
    /// Index of the box in its input set.
    pub id: u32,
}

impl<S: Scalar> Entry<S> {
    #[inline(always)]
    pub fn new<const D: usize>(b: &Aabb<S, D>, axes: &Axes, id: u32) -> Self {
        let [y, z] = axes.cross;
        let (lo, hi) = (b.min(), b.max());
        let cross = [lo[y], lo[z], -hi[y], -hi[z]];
        Self { lo: b.min()[axes.sweep], hi: b.max()[axes.sweep], cross, id }
    }

    /// The end marker: its `lo` is greater than any finite `hi`.
    pub fn sentinel() -> Self {
        Self { lo: S::INFINITY, hi: S::INFINITY, cross: [S::ZERO; 4], id: u32::MAX }
    }

    /// The query vector `[max_b, max_c, -min_b, -min_c]` for [`cross_hit`].
    #[inline(always)]
    pub fn query(&self) -> [S; 4] {
        let c = &self.cross;
        [-c[2], -c[3], -c[0], -c[1]]
    }
}

/// Whether a box with query vector `q` overlaps, on the cross axes, the
/// entry with cross record `c`.
#[inline(always)]
pub(crate) fn cross_hit<S: Scalar>(q: &[S; 4], c: &[S; 4]) -> bool {
    (c[0] <= q[0]) & (c[1] <= q[1]) & (c[2] <= q[2]) & (c[3] <= q[3])
}

/// First index at or after `from` whose `lo` exceeds `hi` (the sentinel stops it).
#[inline(always)]
fn scan_end<S: Scalar>(e: &[Entry<S>], from: usize, hi: S) -> usize {
    let mut k = from;
    while e[k].lo <= hi {
        k += 1;
    }
    k
}

/// Tests `q` against every candidate (already known to overlap it on the
/// sweep axis) and appends the hits. `Q_LEFT` says whether `q` is the left
/// member of the output pairs.
#[inline(always)]
fn emit<S: Scalar, P: OutPair, const Q_LEFT: bool>(q: &Entry<S>, cands: &[Entry<S>], out: &mut Vec<P>) {
    if cands.is_empty() {
        return;
    }
    out.reserve(cands.len());
    let qv = q.query();
    let spare = &mut out.spare_capacity_mut()[..cands.len()];
    let mut k = 0;
    for c in cands {
        let p = if Q_LEFT { P::make(q.id, c.id) } else { P::make(c.id, q.id) };
        spare[k].write(p);
        k += cross_hit(&qv, &c.cross) as usize;
    }
    let len = out.len();
    // SAFETY: `k` never exceeds the number of slots written (each iteration
    // writes slot `k` before possibly advancing it), and those slots lie in the
    // reserved spare capacity, so the first `k` are initialised.
    unsafe { out.set_len(len + k) };
}

/// All overlapping pairs among the entries `range` of `e`, each found by the
/// earlier entry scanning forward. `e` is sorted by `lo` and ends with a
/// sentinel; scans may run past `range.end`.
pub(crate) fn sweep_one<S: Scalar, P: OutPair>(e: &[Entry<S>], range: core::ops::Range<usize>, out: &mut Vec<P>) {
    debug_assert!(range.end < e.len() && e[e.len() - 1].lo == S::INFINITY);
    for i in range {
        let q = &e[i];
        let end = scan_end(e, i + 1, q.hi);
        emit::<S, P, true>(q, &e[i + 1..end], out);
    }
}

/// All overlapping pairs between `a` and `b` (both sorted, both ending with a
/// sentinel), reported as `(a.id, b.id)`, for the `steps` visits of the
/// merged order that start from positions `(i, j)` (all of them from
/// `(0, 0)` with `usize::MAX`). Entries are visited in merged `lo` order
/// (`a` first on ties); each scans the other list from its current
/// position, so every pair is found exactly once, by its member with the
/// smaller `lo`. Pieces of the visit order can be run by separate workers
/// ([`merge_split`] finds where a piece starts).
pub(crate) fn sweep_two_from<S: Scalar, P: OutPair>(
    a: &[Entry<S>],
    b: &[Entry<S>],
    mut i: usize,
    mut j: usize,
    steps: usize,
    out: &mut Vec<P>,
) {
    let (na, nb) = (a.len() - 1, b.len() - 1);
    let mut left = steps;
    while i < na && j < nb && left > 0 {
        if a[i].lo <= b[j].lo {
            let end = scan_end(b, j, a[i].hi);
            emit::<S, P, true>(&a[i], &b[j..end], out);
            i += 1;
        } else {
            let end = scan_end(a, i, b[j].hi);
            emit::<S, P, false>(&b[j], &a[i..end], out);
            j += 1;
        }
        left -= 1;
    }
}

/// Where the merged visit order of [`sweep_two_from`] stands after `m` visits:
/// the `(i, j)` with `i + j = m` (merge-path search, `a` first on ties).
pub(crate) fn merge_split<S: Scalar>(a: &[Entry<S>], b: &[Entry<S>], m: usize) -> (usize, usize) {
    let (na, nb) = (a.len() - 1, b.len() - 1);
    // The first m visited are the m smallest of the merged order, where a[i]
    // precedes b[j] iff a[i].lo <= b[j].lo. Find the largest i such that
    // a[i-1] precedes b[m-i].
    let (mut lo, mut hi) = (m.saturating_sub(nb), m.min(na));
    while lo < hi {
        let i = (lo + hi).div_ceil(2);
        let j = m - i;
        if a[i - 1].lo <= b[j].lo {
            lo = i;
        } else {
            hi = i - 1;
        }
    }
    (lo, m - lo)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CrossPair, Pair};

    fn entries(v: &[(f64, f64)]) -> Vec<Entry<f64>> {
        let axes = Axes::new(1, 0);
        let mut e: Vec<Entry<f64>> = v
            .iter()
            .enumerate()
            .map(|(i, &(lo, hi))| Entry::new(&Aabb::<f64, 1>::new([lo], [hi]).unwrap(), &axes, i as u32))
            .collect();
        e.sort_by(|x, y| x.lo.partial_cmp(&y.lo).unwrap());
        e.push(Entry::sentinel());
        e
    }

    #[test]
    fn merge_split_matches_the_sequential_walk() {
        let a = entries(&[(0.0, 1.0), (1.0, 2.0), (1.0, 1.0), (3.0, 4.0), (7.0, 7.0)]);
        let b = entries(&[(1.0, 5.0), (1.0, 1.0), (2.0, 2.0), (6.0, 9.0)]);
        let mut full: Vec<CrossPair> = Vec::new();
        sweep_two_from(&a, &b, 0, 0, usize::MAX, &mut full);
        for m in 0..=9 {
            let (i, j) = merge_split(&a, &b, m);
            assert_eq!(i + j, m);
            let mut pieces: Vec<CrossPair> = Vec::new();
            sweep_two_from(&a, &b, 0, 0, m, &mut pieces);
            sweep_two_from(&a, &b, i, j, usize::MAX, &mut pieces);
            assert_eq!(pieces, full, "split at {m}");
        }
        let mut expect = Vec::new();
        for (x, ea) in a[..a.len() - 1].iter().enumerate() {
            for eb in &b[..b.len() - 1] {
                if ea.lo <= eb.hi && eb.lo <= ea.hi {
                    expect.push(CrossPair { a: ea.id, b: eb.id });
                }
            }
            let _ = x;
        }
        let mut got = full.clone();
        got.sort();
        expect.sort();
        assert_eq!(got, expect);
    }

    #[test]
    fn one_list_sweep_touching_and_points() {
        let e = entries(&[(0.0, 1.0), (1.0, 1.0), (1.0, 2.0), (2.0, 3.0), (5.0, 5.0)]);
        let mut out: Vec<Pair> = Vec::new();
        sweep_one(&e, 0..e.len() - 1, &mut out);
        out.sort();
        let expect: Vec<Pair> =
            [(0, 1), (0, 2), (1, 2), (2, 3)].iter().map(|&(x, y)| Pair::new(x, y).unwrap()).collect();
        assert_eq!(out, expect);
    }
}
