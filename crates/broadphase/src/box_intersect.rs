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
//! to the halves of `P`, each with the intervals that reach it. Small calls
//! (below a cutoff) are answered by a sweep (see **Scans**).
//!
//! **Integer codes.** Before the search every coordinate is replaced by a
//! 32-bit code, per axis: a start by its rank among all starts in the order
//! of `(value, id)`, an end by the number of starts whose value is at most
//! the end's. Then, exactly, p's start lies in i's closed interval iff
//! `lo_i < lo_p < hi_i` in codes (the ranks break ties between equal starts,
//! so for two distinct boxes that overlap on the axis exactly one of the two
//! orders holds, and no box contains its own start), and two boxes overlap on
//! an axis iff `lo_p < hi_i` and `lo_i < hi_p`. A record is `2D + 1` words
//! (padded to 32 bytes in 3D, whatever the scalar), every test one integer
//! comparison, and since the starts' codes are dense ranks a call halves its
//! points at the middle code of their range with one partition, no selection
//! (a selection takes over when that middle splits badly).
//!
//! **Scans.** A call below the cutoff sorts its two sets by one axis's start
//! codes and sweeps: on axis 0 one way (each interval meets the points that
//! start inside it); above it, one way on axis d, or two ways on any lower
//! axis k (each box meets the other set's boxes that start inside it on k).
//! It takes the sweep with the fewest candidates, estimated in one pass from
//! the codes (`hi - lo` counts the boxes that start inside a box): on long
//! thin boxes along several axes (sticks) this halves the candidates against
//! always sweeping axis 0. The cutoff itself follows the data: a scan of m
//! boxes meets about m² f candidates, f the fraction of pairs that overlap
//! on the scan axis, a level of the tree costs a few passes over m. Where a
//! two-way scan expects many candidates per box, it tests them with AVX2,
//! four records at a time, with no branch per record.
//!
//! **Sorted sets.** The scans sort their sets, and the same records are
//! sorted again and again (on sticks at 1e5, some 40 times per box). So
//! calls on small sets (at most [`LOCAL_MAX`] records) copy them, sorted by
//! their start on axis 0, into an arena, and from there on hand down
//! subsequences, copied in order (the halves of the points and, in one
//! pass, the inner, left and right intervals): every set stays sorted on
//! axis 0, and a scan on that axis sorts nothing. Larger calls partition
//! their sets in place, as before, which needs no memory beyond them; the
//! arena holds the copies of the calls in progress only.
//!
//! **Cost.** O(n log^d n + k) time for k pairs, whatever the input: unlike a
//! sweep, no arrangement of boxes makes it test a quadratic number of
//! candidates when the pairs are few. Pick it when every axis projection is
//! dense (long thin boxes along several axes, everything on one interval);
//! on evenly spread boxes the grid is several times faster.

use core::ops::Range;

use crate::sort::{keyed, payload, refine_equal_keys, sort_keyed};
use crate::stats::Profile;

use crate::{Aabb, CrossPair, Pair, Scalar};

/// The cutoff, when not given, is this over the scan axis's overlap
/// fraction, within [`CUTOFF_MIN`, `CUTOFF_MAX`].
const CUTOFF_SCALE: f64 = 27.0;
const CUTOFF_MIN: usize = 32;
const CUTOFF_MAX: usize = 4096;

/// Calls with fewer points or intervals than the cutoff are scanned
/// directly. A scan of m boxes tests about m² f pairs, f the fraction of
/// pairs that overlap on the scan axis, where a level of the tree costs a
/// few passes over m: the balance is at m ~ 1/f (the scale measured on the
/// scenes at 1e5: 10, 27 and 60 tried, 27 best or within noise on each).
fn cutoff_for(given: Option<usize>, scan_overlap: f64) -> usize {
    given
        .unwrap_or_else(|| (CUTOFF_SCALE / scan_overlap.max(1e-9)).clamp(CUTOFF_MIN as f64, CUTOFF_MAX as f64) as usize)
        .max(2)
}

/// A box with its axes permuted (axis 0 is the scan axis) and its
/// coordinates coded (see the module's doc): `lo` are start ranks, `hi` end
/// counts, `id` the caller's index. Aligned so that moving one is whole
/// 16-byte words (a 28-byte record moved as two overlapping words stalls
/// every swap on store forwarding).
#[derive(Clone, Copy, Debug)]
#[repr(C, align(16))]
struct Rec<const D: usize> {
    lo: [u32; D],
    hi: [u32; D],
    id: u32,
}

impl<const D: usize> Rec<D> {
    /// A filler.
    const EMPTY: Self = Rec { lo: [0; D], hi: [0; D], id: 0 };
}

/// Whether `p`'s start lies in `i`'s interval on axis `d`: one unsigned
/// comparison, `lo < x < hi` as `x - lo - 1 < hi - lo - 1` (a box's own
/// start counts among the starts up to its end, so `hi > lo`).
#[inline(always)]
fn point_in<const D: usize>(p: &Rec<D>, i: &Rec<D>, d: usize) -> bool {
    let base = i.lo[d].wrapping_add(1);
    p.lo[d].wrapping_sub(base) < i.hi[d].wrapping_sub(base)
}

/// Whether `a` and `b` overlap on axis `k`.
#[inline(always)]
fn overlap_on<const D: usize>(a: &Rec<D>, b: &Rec<D>, k: usize) -> bool {
    (a.lo[k] < b.hi[k]) & (b.lo[k] < a.hi[k])
}

/// Whether `a` and `b` overlap on every axis below `d` but `skip`
/// (branch-free: which test fails first is unpredictable).
#[inline(always)]
fn below<const D: usize>(a: &Rec<D>, b: &Rec<D>, d: usize, skip: usize) -> bool {
    let mut ok = true;
    for k in 0..D {
        ok &= (k >= d) | (k == skip) | overlap_on(a, b, k);
    }
    ok
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

/// Calls on sets of at most this many records (both together) copy them
/// into [`Search::arena`], sorted by start on axis 0, and go on there (see
/// [`Search::stream_local`]): below, no scan on axis 0 sorts. Above, the
/// sets are partitioned in place, which needs no memory beyond them. (On
/// sticks at 1e5 a scan's sets were sorted some 40 times per box in all.)
const LOCAL_MAX: usize = 1 << 13;

/// What sorting a record costs a local scan that sweeps another axis than
/// 0, in candidates (sets on axis 0 come sorted): the estimate of such a
/// sweep pays this per record of both sets, so that a sweep on axis 0 wins
/// when the candidates are close. Measured at 1e5 (five rounds, the search
/// in place against local from 8192 records on): with 0, heavy-tailed sets
/// 3-5% slower than in place (sticks 15%, a lattice 9% faster); with 8,
/// every scene as fast or faster (medians of the rounds' ratios: lattice
/// 0.77, sticks 0.88, uniform 0.91, duplicates 0.92, heavy-tailed 0.99);
/// 20 no better.
const LOCAL_SORT_COST: f64 = 8.0;

/// A scan sweeps two ways with SIMD ([`two_way_avx2`]) when it expects at
/// least this many candidates per box: its blocks test records that the
/// plain sweep would not reach, which pays where the scans are long.
/// Measured at 1e5 (`f64`, 3D, best of 5, three or four rounds alternated
/// with the plain sweep): with 8, uniform 69-72 -> 47-48 ms, clustered
/// 89-93 -> 64 ms, heavy-tailed 86-87 -> 66 ms, a lattice 61 -> 54 ms,
/// sticks (2.7 candidates per box) 124-127 -> 120-125 ms; with 0, sticks
/// 131-133 ms; 4 and 16 no better. In 2D, where a record has fewer bounds
/// to test, the plain sweep stays: with this rate 2D sets at 1e5 were
/// 5-10% slower (uniform 30.8-32.2 -> 32.4-39.8 ms, clustered 46.7-49.1
/// -> 51.8-54.7 ms).
const SIMD_RATE: f64 = 8.0;

/// [`SIMD_RATE`] in `D` dimensions.
fn simd_rate(d: usize) -> f64 {
    if d >= 3 {
        SIMD_RATE
    } else {
        f64::INFINITY
    }
}

/// Whether this CPU runs [`two_way_avx2`] (at the SIMD level in use; see
/// the grid's kernel).
fn simd_sweeps() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        crate::grid::kernel::Simd::detect() >= crate::grid::kernel::Simd::Avx2
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// The search's knobs: [`Tuning::default_for`], others in tests.
#[derive(Clone, Copy, Debug)]
struct Tuning {
    /// Tests only: the scan every base case above axis 0 uses, instead of
    /// the estimated cheapest (`k < d`: two-way on axis `k`; else one-way
    /// on `d`).
    force: Option<usize>,
    /// [`LOCAL_MAX`], or another limit.
    local_max: usize,
    /// [`simd_rate`], or another (forced scans sweep with SIMD if it is 0).
    rate: f64,
}

impl Tuning {
    /// The knobs in `d` dimensions.
    fn default_for(d: usize) -> Self {
        Tuning { force: None, local_max: LOCAL_MAX, rate: simd_rate(d) }
    }
}

/// How a scan sweeps.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Way {
    /// One way on axis `d`: each interval meets the points that start
    /// inside it there.
    One,
    /// Two ways on an axis `k < d`: each box meets the boxes of the other
    /// set that start inside it there.
    Two,
}

struct Search<'a, K, const D: usize> {
    sink: &'a mut K,
    cutoff: usize,
    keys: Vec<u64>,
    radix: Vec<u64>,
    tmp: Vec<Rec<D>>,
    /// The sets of the local calls in progress (see [`LOCAL_MAX`]), each a
    /// range, one after the other below `top` (a stack: a call puts the
    /// sets it hands down above `top`, and takes them off when done). Its
    /// length only grows: what lies above `top` is free.
    arena: Vec<Rec<D>>,
    top: usize,
    /// A local scan's two sets sorted on another axis than 0.
    sorted: [Vec<Rec<D>>; 2],
    /// The start codes of the points, for a median.
    codes: Vec<u32>,
    /// Whether the two-way sweeps use AVX2 (the CPU has it, and the
    /// SIMD level in use allows it).
    simd: bool,
    tuning: Tuning,
    /// The number of boxes (both sets).
    n: usize,
}

impl<'a, K: Sink, const D: usize> Search<'a, K, D> {
    fn new(sink: &'a mut K, cutoff: usize, n: usize, tuning: Tuning) -> Self {
        Search {
            tuning,
            sink,
            cutoff,
            keys: Vec::new(),
            radix: Vec::new(),
            tmp: Vec::new(),
            arena: Vec::new(),
            top: 0,
            sorted: [Vec::new(), Vec::new()],
            codes: Vec::new(),
            n,
            simd: simd_sweeps(),
        }
    }

    /// Reports every `(p, i)`, `p` in `ps`, `i` in `is`, where p's start is in
    /// i's interval on axis `d` and the boxes overlap on all axes below `d`.
    /// (Axes above `d` are known to overlap for every such pair.)
    fn stream(&mut self, ps: &mut [Rec<D>], is: &mut [Rec<D>], d: usize, bounds: Option<(u32, u32)>) {
        if ps.is_empty() || is.is_empty() {
            return;
        }
        if d == 0 || ps.len() < self.cutoff || is.len() < self.cutoff {
            return self.scan(ps, is, d);
        }
        if ps.len() + is.len() <= self.tuning.local_max {
            let mark = self.top;
            let (sp, si) = (self.push_sorted(ps), self.push_sorted(is));
            self.stream_local(sp, si, d, bounds);
            self.top = mark;
            return;
        }
        // The smallest and largest start of the points on axis d.
        let (pmin, pmax) = bounds.unwrap_or_else(|| start_range(ps, d));
        // Intervals that contain every point of `ps` on axis d.
        let spans = partition(is, |i| (i.lo[d] < pmin) & (i.hi[d] > pmax));
        let (inner, rest) = is.split_at_mut(spans);
        if !inner.is_empty() {
            self.stream(inner, ps, d - 1, None);
            self.stream(ps, inner, d - 1, None);
        }
        // Halve the points at the middle of their codes (they are distinct,
        // so both halves are non-empty), or at the median when that middle
        // leaves one side with less than an eighth.
        let middle = pmin + (pmax - pmin) / 2 + 1;
        let (mut k, mut left_max, mut right_min) = split(ps, d, middle);
        if k.min(ps.len() - k) < ps.len() / 8 {
            k = ps.len() / 2;
            ps.select_nth_unstable_by_key(k, |p| p.lo[d]);
            left_max = ps[..k].iter().fold(0, |m, p| m.max(p.lo[d]));
            right_min = ps[k].lo[d];
        }
        let (left, right) = ps.split_at_mut(k);
        // An interval can hold a point of a half only if it starts before the
        // half's largest point and ends after its smallest.
        let k = partition(rest, |i| (i.lo[d] < left_max) & (i.hi[d] > pmin));
        self.stream(left, &mut rest[..k], d, Some((pmin, left_max)));
        let k = partition(rest, |i| (i.lo[d] < pmax) & (i.hi[d] > right_min));
        self.stream(right, &mut rest[..k], d, Some((right_min, pmax)));
    }

    /// Makes the arena reach `end`, and [`BLOCK`] records past it (read by
    /// the sweeps past the end of the sets).
    fn reserve_arena(&mut self, end: usize) {
        if self.arena.len() < end + BLOCK {
            self.arena.resize(end + BLOCK, Rec::EMPTY);
        }
    }

    /// Copies `v` onto the arena, sorted by start on axis 0.
    fn push_sorted(&mut self, v: &[Rec<D>]) -> Range<usize> {
        let at = self.top;
        self.keys.clear();
        self.keys.extend(v.iter().enumerate().map(|(j, r)| keyed(r.lo[0], j as u32)));
        // (Codes are distinct: the radix sort's order is the order.)
        sort_keyed(&mut self.keys, &mut self.radix, false);
        let end = at + v.len();
        self.reserve_arena(end);
        for (slot, &k) in self.arena[at..end].iter_mut().zip(&self.keys) {
            *slot = v[payload(k) as usize];
        }
        self.top = end;
        at..end
    }

    /// [`Search::stream`] on sets held in the arena, sorted by start on axis
    /// 0. The sets it hands down are taken from them in order, so they are
    /// sorted too: a scan on axis 0 sorts nothing. Each set is copied once
    /// per call, where the in-place form partitions the intervals three
    /// times (the inner ones, those for the left half, for the right).
    fn stream_local(&mut self, ps: Range<usize>, is: Range<usize>, d: usize, bounds: Option<(u32, u32)>) {
        let (np, ni) = (ps.len(), is.len());
        if np == 0 || ni == 0 {
            return;
        }
        if d == 0 || np < self.cutoff || ni < self.cutoff {
            return self.scan_local(ps, is, d);
        }
        let mark = self.top;
        let end = mark + 2 * np + 3 * ni;
        self.reserve_arena(end);
        let (held, free) = self.arena.split_at_mut(mark);
        let (pl, il) = (&held[ps.clone()], &held[is]);
        let (pmin, pmax) = bounds.unwrap_or_else(|| start_range(pl, d));
        let (halves, rest) = free.split_at_mut(2 * np);
        // Halve the points as `stream` does (at the median: by a selection
        // of their codes, the points themselves kept in order).
        let middle = pmin + (pmax - pmin) / 2 + 1;
        let (mut k, mut left_max, mut right_min) = split_into(pl, d, middle, halves);
        if k.min(np - k) < np / 8 {
            self.codes.clear();
            self.codes.extend(pl.iter().map(|p| p.lo[d]));
            let (_, &mut median, _) = self.codes.select_nth_unstable(np / 2);
            (k, left_max, right_min) = split_into(pl, d, median, halves);
            debug_assert_eq!(k, np / 2);
        }
        // In one pass: the intervals that contain every point (`inner`),
        // and of the others those that can hold a point of each half. Each
        // interval is written to all three lists, and a list's length moves
        // on only if it belongs there (no branch on it).
        let (inner, rest) = rest.split_at_mut(ni);
        let (left, right) = rest.split_at_mut(ni);
        let (mut a, mut b, mut c) = (0, 0, 0);
        for (at, i) in il.iter().enumerate() {
            // (Read from the set, not from a copy on the stack.)
            let (lo, hi) = (i.lo[d], i.hi[d]);
            let spans = (lo < pmin) & (hi > pmax);
            // The lengths are at most `at`, below `ni`.
            inner[a.min(at)] = *i;
            left[b.min(at)] = *i;
            right[c.min(at)] = *i;
            a += spans as usize;
            b += (!spans & (lo < left_max) & (hi > pmin)) as usize;
            c += (!spans & (lo < pmax) & (hi > right_min)) as usize;
        }
        self.top = end;
        let at = |from: usize, len: usize| mark + from..mark + from + len;
        let inner = at(2 * np, a);
        if !inner.is_empty() {
            self.stream_local(inner.clone(), ps.clone(), d - 1, None);
            self.stream_local(ps, inner, d - 1, None);
        }
        self.stream_local(at(0, k), at(2 * np + ni, b), d, Some((pmin, left_max)));
        self.stream_local(at(np, np - k), at(2 * np + 2 * ni, c), d, Some((right_min, pmax)));
        self.top = mark;
    }

    /// The base case: the cheapest of the sweeps that can answer the call
    /// (see [`Search::pick`]), on the sets sorted on its axis in place (or
    /// on sorted copies, for the SIMD sweep).
    fn scan(&mut self, ps: &mut [Rec<D>], is: &mut [Rec<D>], d: usize) {
        let (axis, way, simd) = self.pick(ps, is, d, 0.0);
        if simd {
            // The SIMD sweep reads past the sets: sorted copies, with room.
            return self.sweep_sorted(ps, is, d, axis, way, true);
        }
        by_start(ps, axis, &mut self.keys, &mut self.tmp);
        by_start(is, axis, &mut self.keys, &mut self.tmp);
        sweep(self.sink, (ps, ps.len()), (is, is.len()), d, axis, way, false);
    }

    /// Sweeps copies of `ps` and `is` sorted by start on `axis`.
    fn sweep_sorted(&mut self, ps: &[Rec<D>], is: &[Rec<D>], d: usize, axis: usize, way: Way, simd: bool) {
        let [mut sp, mut si] = core::mem::take(&mut self.sorted);
        sorted_copy(ps, axis, &mut self.keys, &mut sp);
        sorted_copy(is, axis, &mut self.keys, &mut si);
        sweep(self.sink, (&sp, ps.len()), (&si, is.len()), d, axis, way, simd);
        self.sorted = [sp, si];
    }

    /// [`Search::scan`] on sets in the arena: as they are for a sweep on
    /// axis 0, else sorted copies.
    fn scan_local(&mut self, ps: Range<usize>, is: Range<usize>, d: usize) {
        let (axis, way, simd) = self.pick(&self.arena[ps.clone()], &self.arena[is.clone()], d, LOCAL_SORT_COST);
        let arena = core::mem::take(&mut self.arena);
        if axis == 0 {
            // (The arena reaches `BLOCK` records past every set in it.)
            let (np, ni) = (ps.len(), is.len());
            let (ps, is) = (&arena[ps.start..ps.end + BLOCK], &arena[is.start..is.end + BLOCK]);
            sweep(self.sink, (ps, np), (is, ni), d, axis, way, simd);
        } else {
            self.sweep_sorted(&arena[ps], &arena[is], d, axis, way, simd);
        }
        self.arena = arena;
    }

    /// The sweep a base case uses: its axis and way. On axis 0 the only one
    /// is a one-way sweep (fixed roles). Above it, a one-way sweep on axis
    /// `d` (each interval meets the points that start inside it, the axes
    /// below tested directly), or a two-way sweep on any axis `k < d` (each
    /// box meets the boxes of the other set that start inside it on `k`,
    /// axis `d` tested with fixed roles and the others both ways): the one
    /// with the fewest candidates, by an estimate.
    fn pick(&self, ps: &[Rec<D>], is: &[Rec<D>], d: usize, sort_cost: f64) -> (usize, Way, bool) {
        if d == 0 {
            return (0, Way::One, false);
        }
        if let Some(k) = self.tuning.force {
            return if k < d { (k, Way::Two, self.simd && self.tuning.rate <= 0.0) } else { (d, Way::One, false) };
        }
        // Codes count starts: `hi - lo` of a box on an axis is about the
        // number of boxes, of all `n`, that start inside it there.
        let n = self.n as f64;
        let (mut pmin, mut pmax) = (u32::MAX, 0);
        let mut p_len = [0u64; D];
        for p in ps.iter() {
            pmin = pmin.min(p.lo[d]);
            pmax = pmax.max(p.lo[d]);
            add_lengths(&mut p_len, p, d);
        }
        let mut i_len = [0u64; D];
        let mut inside = 0u64;
        for i in is.iter() {
            add_lengths(&mut i_len, i, d);
            // Ranks in (lo, hi) on axis d within the points' range.
            let (a, b) = ((i.lo[d] + 1).max(pmin), (i.hi[d]).min(pmax + 1));
            inside += u64::from(b.saturating_sub(a));
        }
        // The points fill their range on axis d at this density.
        let sort = sort_cost * (ps.len() + is.len()) as f64;
        let one_way = inside as f64 * ps.len() as f64 / f64::from(pmax - pmin + 1) + sort;
        let (mut best, mut best_cost) = ((d, Way::One), one_way);
        for k in 0..d {
            let cost = (p_len[k] as f64 * is.len() as f64 + i_len[k] as f64 * ps.len() as f64) / n
                + if k == 0 { 0.0 } else { sort };
            if cost < best_cost {
                (best, best_cost) = ((k, Way::Two), cost);
            }
        }
        let records = (ps.len() + is.len()) as f64;
        let cands = best_cost - if best.0 == 0 { 0.0 } else { sort };
        (best.0, best.1, self.simd && best.1 == Way::Two && cands >= self.tuning.rate * records)
    }
}

/// A base case's sweep (both sets sorted by start on `axis`, which is `d`
/// for a one-way sweep).
/// `ps` and `is` are the sets, each as its records followed by at least
/// [`BLOCK`] more that are read and ignored, and its length.
fn sweep<K: Sink, const D: usize>(
    sink: &mut K,
    ps: (&[Rec<D>], usize),
    is: (&[Rec<D>], usize),
    d: usize,
    axis: usize,
    way: Way,
    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_variables))] simd: bool,
) {
    match way {
        Way::One => one_way(sink, &ps.0[..ps.1], &is.0[..is.1], d),
        #[cfg(target_arch = "x86_64")]
        Way::Two if simd && core::mem::size_of::<Rec<D>>() == 32 && 2 * D < 8 => {
            assert!(ps.0.len() >= ps.1 + BLOCK && is.0.len() >= is.1 + BLOCK);
            // SAFETY: `simd` is set only where the CPU has AVX2 (see
            // `Search::simd`); records of 32 bytes and the padding, checked.
            unsafe { two_way_avx2(sink, ps, is, d, axis) }
        }
        Way::Two => two_way(sink, &ps.0[..ps.1], &is.0[..is.1], d, axis),
    }
}

/// A one-way sweep on axis `d`: every `p` whose start lies in an interval
/// there, the axes below `d` tested directly.
fn one_way<K: Sink, const D: usize>(sink: &mut K, ps: &[Rec<D>], is: &[Rec<D>], d: usize) {
    let mut first = 0;
    for i in is.iter() {
        // Points at or before `i`'s start do not start inside it.
        while first < ps.len() && ps[first].lo[d] <= i.lo[d] {
            first += 1;
        }
        for p in &ps[first..] {
            if p.lo[d] >= i.hi[d] {
                break;
            }
            if below(p, i, d, d) {
                sink.report(p.id, i.id);
            }
        }
    }
}

/// A two-way sweep on axis `k < d` (each box scans the other set from its
/// start), then axis `d` with fixed roles and the other axes below `d`
/// tested directly.
fn two_way<K: Sink, const D: usize>(sink: &mut K, ps: &[Rec<D>], is: &[Rec<D>], d: usize, k: usize) {
    let check = |p: &Rec<D>, i: &Rec<D>| point_in(p, i, d) & below(p, i, d, k);
    let (mut a, mut b) = (0, 0);
    while a < ps.len() && b < is.len() {
        if ps[a].lo[k] < is[b].lo[k] {
            scan_from(sink, &ps[a], &is[b..], k, |p, i| check(p, i));
            a += 1;
        } else {
            scan_from(sink, &is[b], &ps[a..], k, |i, p| check(p, i));
            b += 1;
        }
    }
}

/// Reports `cur` with every record of `rest` (sorted on `k`) that starts
/// inside it on axis `k` and passes `test(cur, record)`. (Both sinks order
/// a pair themselves, so `cur` may be either the point or the interval.)
#[inline(always)]
fn scan_from<K: Sink, const D: usize>(
    sink: &mut K,
    cur: &Rec<D>,
    rest: &[Rec<D>],
    k: usize,
    test: impl Fn(&Rec<D>, &Rec<D>) -> bool,
) {
    for r in rest {
        if r.lo[k] >= cur.hi[k] {
            break;
        }
        if test(cur, r) {
            sink.report(cur.id, r.id);
        }
    }
}

/// Records tested at once in [`two_way_avx2`]; every set a sweep reads is
/// followed by this many more records, read and ignored.
const BLOCK: usize = 4;

/// [`two_way`] with AVX2, for records of 32 bytes (2D and 3D), each set
/// followed by [`BLOCK`] readable records.
///
/// [`two_way`] branches on every box (which set holds the next one, a coin
/// toss) and on every candidate (where the scan ends, whether the boxes
/// overlap). Here the next box is picked without a branch, and its scan
/// tests [`BLOCK`] records at a time, whether in its interval or not,
/// until a block ends inside it; the only branch per block is on whether
/// any of them pairs. A record is one vector, and every bound it must meet
/// one lane: `x - off < lim`, unsigned, which also says
/// `off <= x < off + lim` (one subtraction and one signed comparison, the
/// sign bits flipped in `off` and `lim`). Where scans meet few candidates
/// per box the blocks test more records than the plain sweep reaches, so it
/// is used only where they meet many (see [`SIMD_RATE`]).
///
/// # Safety
/// The CPU has AVX2; `size_of::<Rec<D>>() == 32` and `2 * D < 8`;
/// `ps.len() >= np + BLOCK`, `is.len() >= ni + BLOCK`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn two_way_avx2<K: Sink, const D: usize>(
    sink: &mut K,
    (ps, np): (&[Rec<D>], usize),
    (is, ni): (&[Rec<D>], usize),
    d: usize,
    k: usize,
) {
    use core::arch::x86_64::*;
    debug_assert!(core::mem::size_of::<Rec<D>>() == 32 && 2 * D < 8);
    debug_assert!(ps.len() >= np + BLOCK && is.len() >= ni + BLOCK);
    let tables = [LaneBounds::new::<D>(d, k, false), LaneBounds::new::<D>(d, k, true)];
    let load = |v: &[i32; 8]| {
        // SAFETY: the CPU has AVX2 (caller); 8 `i32`s.
        unsafe { _mm256_loadu_si256(v.as_ptr().cast()) }
    };
    let vectors: [[__m256i; 5]; 2] = core::array::from_fn(|r| {
        let t = &tables[r];
        [load(&t.off_word), load(&t.off_used), load(&t.lim_word), load(&t.lim_less_off), load(&t.lim_not)]
    });
    let sign = _mm256_set1_epi32(i32::MIN);
    let one = _mm256_set1_epi32(1);
    // Index 0: the intervals, 1: the points.
    let sets = [is.as_ptr(), ps.as_ptr()];
    let lens = [ni, np];
    let mut at = [0usize, 0usize];
    while at[0] < ni && at[1] < np {
        // SAFETY: both positions are below their set's length.
        let take = unsafe { ((*sets[1].add(at[1])).lo[k] < (*sets[0].add(at[0])).lo[k]) as usize };
        let other = 1 - take;
        // SAFETY: in bounds, as above.
        let (cur, rest) = unsafe { (sets[take].add(at[take]), sets[other].add(at[other])) };
        let len = lens[other] - at[other];
        let [off_word, off_used, lim_word, lim_less_off, lim_not] = vectors[take];
        let ignore = tables[take].ignore;
        // SAFETY: a record of 32 bytes.
        let c = unsafe { _mm256_loadu_si256(cur.cast()) };
        let off = _mm256_and_si256(_mm256_add_epi32(_mm256_permutevar8x32_epi32(c, off_word), one), off_used);
        let lim = _mm256_sub_epi32(_mm256_permutevar8x32_epi32(c, lim_word), _mm256_and_si256(off, lim_less_off));
        let lim = _mm256_xor_si256(_mm256_xor_si256(lim, lim_not), sign);
        let off = _mm256_xor_si256(off, sign);
        let mut j = 0;
        loop {
            let mut hits = 0u32;
            let mut last = 0;
            for q in 0..BLOCK {
                // SAFETY: `j + q < len + BLOCK`: `j < len` (the loop goes on
                // only while the block's last record is a real one).
                let r = unsafe { _mm256_loadu_si256(rest.add(j + q).cast()) };
                let within = _mm256_cmpgt_epi32(lim, _mm256_sub_epi32(r, off));
                last = _mm256_movemask_ps(_mm256_castsi256_ps(within)) as u32;
                hits |= u32::from(last | ignore == 0xFF) << q;
            }
            let real = (len - j).min(BLOCK);
            hits &= (1 << real) - 1;
            while hits != 0 {
                let q = hits.trailing_zeros() as usize;
                hits &= hits - 1;
                // SAFETY: `q < real`: a record of the set.
                unsafe { sink.report((*cur).id, (*rest.add(j + q)).id) };
            }
            // Lane k: the block's last record starts inside the box.
            if last >> k & 1 == 0 || j + BLOCK >= len {
                break;
            }
            j += BLOCK;
        }
        at[take] += 1;
    }
}

/// How [`two_way_avx2`] makes, from the scanning box, the bounds each lane
/// of a record must meet: `off` is the word `off_word` of the box plus one
/// where `off_used`, else 0; `lim` is the word `lim_word`, less `off` where
/// `lim_less_off`, inverted where `lim_not`. Lanes set in `ignore` are not
/// tested. A record's words: `lo` at `0..D`, `hi` at `D..2D`, then its id.
#[cfg(target_arch = "x86_64")]
struct LaneBounds {
    off_word: [i32; 8],
    off_used: [i32; 8],
    lim_word: [i32; 8],
    lim_less_off: [i32; 8],
    lim_not: [i32; 8],
    ignore: u32,
}

#[cfg(target_arch = "x86_64")]
impl LaneBounds {
    /// The bounds of a two-way sweep on axis `k` below the streamed axis
    /// `d`, for a scanning box from the points (`point`) or the intervals.
    fn new<const D: usize>(d: usize, k: usize, point: bool) -> Self {
        let mut b = LaneBounds {
            off_word: [0; 8],
            off_used: [0; 8],
            lim_word: [0; 8],
            lim_less_off: [0; 8],
            lim_not: [0; 8],
            ignore: 0xFF,
        };
        let (lo, hi) = (|j: usize| j, |j: usize| D + j);
        // `x < word`.
        let mut below = |lane: usize, word: usize| {
            b.lim_word[lane] = word as i32;
            b.ignore &= !(1 << lane);
        };
        for j in 0..d {
            // Overlap on `j`: `lo < box.hi`, and `hi >= box.lo + 1` (on `k`
            // the record starts after the box by the sweep's order).
            below(lo(j), hi(j));
        }
        // Axis d: the point's start strictly inside the interval.
        below(lo(d), if point { lo(d) } else { hi(d) });
        // `x >= word + 1`: `x - (word + 1) < !word`.
        let mut above = |lane: usize, word: usize, below_too: bool| {
            b.off_word[lane] = word as i32;
            b.off_used[lane] = -1;
            b.ignore &= !(1 << lane);
            if below_too {
                // Also below `lim_word`: `x - (word + 1) < lim - (word + 1)`.
                b.lim_less_off[lane] = -1;
            } else {
                b.lim_word[lane] = word as i32;
                b.lim_not[lane] = -1;
            }
        };
        for j in (0..d).filter(|&j| j != k) {
            above(hi(j), lo(j), false);
        }
        if point {
            above(hi(d), lo(d), false);
        } else {
            above(lo(d), lo(d), true);
        }
        b
    }
}

/// Sorts records by their start on axis `k` (codes are distinct).
fn by_start<const D: usize>(v: &mut [Rec<D>], k: usize, keys: &mut Vec<u64>, tmp: &mut Vec<Rec<D>>) {
    sorted_copy(v, k, keys, tmp);
    v.copy_from_slice(&tmp[..v.len()]);
}

/// `v` sorted by start on axis `k` (codes are distinct) into `out`, and
/// [`BLOCK`] records after it.
fn sorted_copy<const D: usize>(v: &[Rec<D>], k: usize, keys: &mut Vec<u64>, out: &mut Vec<Rec<D>>) {
    out.clear();
    if v.len() <= 16 {
        out.extend_from_slice(v);
        out.sort_unstable_by_key(|r| r.lo[k]);
    } else {
        keys.clear();
        keys.extend(v.iter().enumerate().map(|(j, r)| keyed(r.lo[k], j as u32)));
        keys.sort_unstable();
        out.extend(keys.iter().map(|&k| v[payload(k) as usize]));
    }
    out.resize(v.len() + BLOCK, Rec::EMPTY);
}

/// Adds `r`'s code lengths on the axes below `d` to `sum` (an end's code
/// exceeds its own start's).
#[inline(always)]
fn add_lengths<const D: usize>(sum: &mut [u64; D], r: &Rec<D>, d: usize) {
    for (s, (&hi, &lo)) in sum.iter_mut().zip(r.hi.iter().zip(&r.lo)).take(d) {
        *s += u64::from(hi - lo);
    }
}

/// The smallest and largest start of `ps` on axis `d`.
fn start_range<const D: usize>(ps: &[Rec<D>], d: usize) -> (u32, u32) {
    ps.iter().fold((u32::MAX, 0), |(lo, hi), p| (lo.min(p.lo[d]), hi.max(p.lo[d])))
}

/// [`partition`] of the points by `lo[d] < middle`, also returning the
/// largest start on the left and the smallest on the right.
fn split<const D: usize>(ps: &mut [Rec<D>], d: usize, middle: u32) -> (usize, u32, u32) {
    let (mut k, mut left_max, mut right_min) = (0, 0, u32::MAX);
    for j in 0..ps.len() {
        let x = ps[j];
        let v = x.lo[d];
        let hit = v < middle;
        left_max = left_max.max(if hit { v } else { 0 });
        right_min = right_min.min(if hit { u32::MAX } else { v });
        ps[j] = ps[k];
        ps[k] = x;
        k += hit as usize;
    }
    (k, left_max, right_min)
}

/// The points of `ps` starting before `middle` on axis `d` into the first
/// half of `out`, the others into the second, each in order; returns how
/// many went left, the largest start on the left and the smallest on the
/// right.
fn split_into<const D: usize>(ps: &[Rec<D>], d: usize, middle: u32, out: &mut [Rec<D>]) -> (usize, u32, u32) {
    let (left, right) = out.split_at_mut(ps.len());
    let (mut a, mut b) = (0, 0);
    let (mut left_max, mut right_min) = (0, u32::MAX);
    for (at, p) in ps.iter().enumerate() {
        let v = p.lo[d];
        let hit = v < middle;
        left_max = left_max.max(if hit { v } else { 0 });
        right_min = right_min.min(if hit { u32::MAX } else { v });
        // Both lengths are at most `at` (see `stream_local`).
        left[a.min(at)] = *p;
        right[b.min(at)] = *p;
        a += hit as usize;
        b += !hit as usize;
    }
    (a, left_max, right_min)
}

/// Moves the elements satisfying `pred` to the front; returns their count.
fn partition<T: Copy>(v: &mut [T], pred: impl Fn(&T) -> bool) -> usize {
    // Branch-free Lomuto: `v[k..j]` fails `pred`, so swapping a failing
    // `v[j]` into it changes nothing that matters. (Spelled out: `swap`
    // goes through the stack.)
    let mut k = 0;
    for j in 0..v.len() {
        let x = v[j];
        let hit = pred(&x);
        v[j] = v[k];
        v[k] = x;
        k += hit as usize;
    }
    k
}

/// The coded records of the boxes (`a`, then `b`'s with ids offset by
/// `a.len()`), with the axes permuted so that record axis `k` is box axis
/// `perm[k]`.
fn coded<S: Scalar, const D: usize>(a: &[Aabb<S, D>], b: &[Aabb<S, D>], perm: &[usize; D]) -> Vec<Rec<D>> {
    let n = a.len() + b.len();
    let mut recs = Vec::new();
    crate::mem::reserve(&mut recs, n);
    recs.extend((0..n).map(|j| Rec { id: j as u32, ..Rec::EMPTY }));
    // One axis at a time, in arrays small enough for the cache: the
    // values, the items sorted, the codes.
    let (mut lo, mut hi) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let (mut starts, mut ends, mut scratch) = (Vec::with_capacity(n), Vec::with_capacity(n), Vec::new());
    let (mut lo_code, mut hi_code) = (vec![0u32; n], vec![0u32; n]);
    for (k, &axis) in perm.iter().enumerate() {
        lo.clear();
        lo.extend(a.iter().chain(b).map(|x| x.min()[axis]));
        hi.clear();
        hi.extend(a.iter().chain(b).map(|x| x.max()[axis]));
        starts.clear();
        starts.extend(lo.iter().enumerate().map(|(j, v)| keyed(v.sort_key(), j as u32)));
        sort_keyed(&mut starts, &mut scratch, false);
        refine_equal_keys(&mut starts, S::KEY_IS_EXACT, false, |j| &lo[j as usize]);
        ends.clear();
        ends.extend(hi.iter().enumerate().map(|(j, v)| keyed(v.sort_key(), j as u32)));
        sort_keyed(&mut ends, &mut scratch, false);
        refine_equal_keys(&mut ends, S::KEY_IS_EXACT, false, |j| &hi[j as usize]);
        // Stable sorts from id order: equal starts rank by id.
        for (rank, &s) in starts.iter().enumerate() {
            lo_code[payload(s) as usize] = rank as u32;
        }
        // An end's code: how many starts are at most its value.
        let mut count = 0;
        for &e in &ends {
            let v = hi[payload(e) as usize];
            while count < n && lo[payload(starts[count]) as usize] <= v {
                count += 1;
            }
            hi_code[payload(e) as usize] = count as u32;
        }
        for (r, (&l, &h)) in recs.iter_mut().zip(lo_code.iter().zip(&hi_code)) {
            r.lo[k] = l;
            r.hi[k] = h;
        }
    }
    recs
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
    cutoff: Option<usize>,
    profile: Option<&Profile<D>>,
    out: &mut Vec<Pair>,
) {
    complete_with(boxes, cutoff, profile, Tuning::default_for(D), out);
}

fn complete_with<S: Scalar, const D: usize>(
    boxes: &[Aabb<S, D>],
    cutoff: Option<usize>,
    profile: Option<&Profile<D>>,
    tuning: Tuning,
    out: &mut Vec<Pair>,
) {
    if boxes.len() < 2 {
        return;
    }
    let overlap = profile.map_or_else(|| Profile::new(boxes).overlap, |p| p.overlap);
    let perm = axis_order(&overlap);
    let cutoff = cutoff_for(cutoff, overlap[perm[0]]);
    let mut is = coded(boxes, &[], &perm);
    let mut ps = Vec::new();
    crate::mem::reserve(&mut ps, is.len());
    ps.extend_from_slice(&is);
    let mut sink = Complete(out);
    Search::new(&mut sink, cutoff, boxes.len(), tuning).stream(&mut ps, &mut is, D - 1, None);
}

/// All overlapping pairs between `a` and `b` (`profile`: theirs, if taken
/// already).
pub(crate) fn bipartite<S: Scalar, const D: usize>(
    a: &[Aabb<S, D>],
    b: &[Aabb<S, D>],
    cutoff: Option<usize>,
    profile: Option<&Profile<D>>,
    out: &mut Vec<CrossPair>,
) {
    bipartite_with(a, b, cutoff, profile, Tuning::default_for(D), out);
}

fn bipartite_with<S: Scalar, const D: usize>(
    a: &[Aabb<S, D>],
    b: &[Aabb<S, D>],
    cutoff: Option<usize>,
    profile: Option<&Profile<D>>,
    tuning: Tuning,
    out: &mut Vec<CrossPair>,
) {
    if a.is_empty() || b.is_empty() {
        return;
    }
    let overlap = profile.map_or_else(|| Profile::bipartite(a, b).overlap, |p| p.overlap);
    let perm = axis_order(&overlap);
    let cutoff = cutoff_for(cutoff, overlap[perm[0]]);
    let split = a.len() as u32;
    let mut recs = coded(a, b, &perm);
    let (ra, rb) = recs.split_at_mut(a.len());
    let mut sink = Bipartite { out, split };
    let mut s = Search::new(&mut sink, cutoff, a.len() + b.len(), tuning);
    s.stream(ra, rb, D - 1, None);
    s.stream(rb, ra, D - 1, None);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::brute_force;

    /// Boxes on a coarse lattice (many equal starts and ends, touching
    /// faces, zero-size boxes, duplicates), some long along one axis;
    /// `skew` piles most of them near the origin with a few far out (so
    /// that halving a range of codes at its middle splits badly).
    fn boxes<S: Scalar, const D: usize>(n: usize, seed: u64, skew: bool, to: impl Fn(f64) -> S) -> Vec<Aabb<S, D>> {
        let mut s = crate::Lcg::new(seed);
        let side = (n as f64).powf(1.0 / D as f64).ceil() * 2.0;
        let spread = |u: f64| if skew { u.powi(6) } else { u };
        let mut v: Vec<Aabb<S, D>> = (0..n)
            .map(|_| {
                let long = (s.unit() * (D as f64 + 2.0)) as usize;
                let lo: [f64; D] = core::array::from_fn(|_| (spread(s.unit()) * side * 2.0).round() / 2.0);
                let w: [f64; D] =
                    core::array::from_fn(|k| if k == long { side / 2.0 } else { (s.unit() * 3.0).round() / 2.0 });
                Aabb::new(lo.map(&to), core::array::from_fn(|k| to(lo[k] + w[k]))).unwrap()
            })
            .collect();
        for k in 0..n / 10 {
            v.push(v[k * 7 % n]);
        }
        v
    }

    fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
        v.sort();
        v
    }

    /// Every scan (each forced, and the estimated pick) with cutoffs that
    /// stream deep or scan at once finds brute force's pairs, complete and
    /// bipartite, in 2D and 3D, f32 and f64.
    fn check<S: Scalar, const D: usize>(to: impl Fn(f64) -> S + Copy) {
        let sizes = [(0, 1, false), (1, 2, false), (2, 3, false), (30, 4, false), (200, 5, false), (700, 6, false)];
        for (n, seed, skew) in sizes.into_iter().chain([(300, 7, true), (900, 8, true)]) {
            let all = boxes::<S, D>(n, seed, skew, to);
            let expect = {
                let mut p = Vec::new();
                brute_force::complete(&all, &mut p);
                sorted(p)
            };
            let (a, b) = all.split_at(all.len() / 3);
            let expect_ab = {
                let mut p = Vec::new();
                brute_force::bipartite(a, b, &mut p);
                sorted(p)
            };
            for cutoff in [Some(2), Some(5), None, Some(100_000)] {
                for force in (0..=D).map(Some).chain([None]) {
                    // In place throughout, in the arena from the first
                    // call, and from some size on.
                    // Two-way sweeps with SIMD where the CPU has it (rate
                    // 0), never, and where they pay.
                    let modes = [(0, 0.0), (usize::MAX, 0.0), (64, 0.0), (0, f64::INFINITY), (64, simd_rate(D))];
                    for (local_max, rate) in modes {
                        let what =
                            format!("n={n} D={D} cutoff={cutoff:?} force={force:?} local_max={local_max} rate={rate}");
                        let mut got = Vec::new();
                        let tuning = Tuning { force, local_max, rate };
                        complete_with(&all, cutoff, None, tuning, &mut got);
                        assert_eq!(got.len(), expect.len(), "{what}: duplicates or misses");
                        assert_eq!(sorted(got), expect, "{what}");
                        let mut got = Vec::new();
                        bipartite_with(a, b, cutoff, None, tuning, &mut got);
                        assert_eq!(sorted(got), expect_ab, "{what} bipartite");
                    }
                }
            }
        }
    }

    #[test]
    fn every_scan_matches_brute_force() {
        check::<f64, 3>(|x| x);
        check::<f32, 3>(|x| x as f32);
        check::<f64, 2>(|x| x);
        check::<f32, 2>(|x| x as f32);
    }

    /// The codes order starts and ends as the values do, ties included.
    #[test]
    fn codes_keep_the_order() {
        let all = boxes::<f64, 3>(300, 9, false, |x| x);
        let recs = coded(&all, &[], &[2, 0, 1]);
        for (k, &axis) in [2, 0, 1].iter().enumerate() {
            for p in &recs {
                for i in &recs {
                    let (bp, bi) = (&all[p.id as usize], &all[i.id as usize]);
                    assert_eq!(p.lo[k] < i.hi[k], bp.min()[axis] <= bi.max()[axis]);
                    if p.id != i.id {
                        assert_ne!(p.lo[k], i.lo[k]);
                        assert_eq!(
                            p.lo[k] < i.lo[k],
                            (bp.min()[axis], p.id) < (bi.min()[axis], i.id),
                            "ties rank by id"
                        );
                    }
                }
            }
        }
    }
}
