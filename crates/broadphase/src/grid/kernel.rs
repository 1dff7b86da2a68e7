//! The structure-of-arrays sweep kernel shared by the grid's cells and by
//! sort-and-sweep.
//!
//! Boxes sorted by their start on the sweep axis are laid out in columns
//! ([`Soa`]): start, end, the four cross-axis values, index and home flags,
//! followed by padding whose start is `+∞`. Every pair `(r, r + d)` whose
//! intervals overlap on the sweep axis is a candidate; it is reported when
//! the cross axes overlap and, on each cross axis, at least one of the two
//! boxes is at home (the grid's reference-cell rule; sort-and-sweep sets all
//! flags).
//!
//! **Order of work.** Rows are taken in groups of `S::GROUP` (8 for `f64`,
//! 16 for `f32`: one AVX-512 register). For `d = 1, 2, ...` every row `r` of
//! the group is tested against row `r + d`, lanes side by side, until no row
//! of the group has a successor left within its interval (starts are sorted,
//! so a row that runs out stays out). The loads are contiguous, nothing is
//! broadcast, and there is one loop exit per group rather than per box.
//! Hits are left-packed into the output; the AVX-512 kernels first note
//! the steps that hit in a buffer, without a branch, and emit them after
//! the run; the AVX2 `f64` kernel emits every quad's hits, none included,
//! without a branch where the grid finds that a quad of a cell's rows hits
//! about as often as not ([`Soa::branchless`]).
//! Pairs come out in this order on every path, so the result does not
//! depend on the CPU.
//!
//! **Long runs.** When every row is at home (sort-and-sweep, whose rows
//! have hundreds or thousands of successors on the sweep axis in 3D, and
//! whose columns are always `f32`: `f64` boxes rounded outward), the
//! AVX-512 `f32` kernel first finds, by a galloping search, how many
//! successors every row of the group overlaps on the sweep axis (those that
//! start before the group's smallest end) and tests only the cross axes there: four
//! compares per step instead of six. The steps past that depth run as
//! usual. The pairs and their order are unchanged.
//!
//! **A grid on the cross axes.** Sort-and-sweep's long runs go faster on
//! the cross axes mapped to a coarse grid ([`Quant`]: starts rounded down,
//! ends up) than on `f32` columns: the four mask compares per step bound the
//! `f32` kernel on Zen 4. With 8 bits per coordinate ([`Quant::pack`]) a box
//! is one 32-bit lane and a step is one saturating byte subtraction and one
//! test; with 16 bits (when 8 would give cells coarser than two thirds of
//! the median box), two subtractions, an or and a test; in 2D, the one
//! cross axis in 16 bits in one lane, again one subtraction. The cross-axis
//! columns are then not filled at all, and the kernels report the pairs
//! that overlap on the grid: every overlapping pair, in the same order, and
//! some pairs up to a cell apart, which sort-and-sweep drops by testing the
//! exact boxes again (as it does for `f64` boxes anyway). (Tried and
//! dropped: filling the `f32` columns as well and testing the grid's hits on
//! them in the kernel, so that `f32` boxes need no second test. At 1e4
//! uniform `f32` boxes the search went from 0.44 to 0.49-0.50 ms, three runs
//! each, alternated: the column loads of each step with hits cost as much
//! as the test on the boxes they replaced.) With AVX-512 (BW)
//! or AVX2 (a group as two octets, a lane's hit found by comparing it with
//! zero: on an AVX2-only Zen CPU sort-and-sweep went 2-3x faster at 1e5-1e6
//! than on the `f32` columns), when sampled runs are long enough; the
//! portable kernel does the same test, as the reference.
//!
//! **Paths.** AVX-512 (mask compares, compress stores), AVX2 (a group as
//! halves or quarters of 256 bits, packing by permutation table), and a
//! portable one; the fastest available is picked at run time.

use crate::sweep::Entry;
use crate::{Pair, Scalar};

/// Home flags of a list element, in its top two bits.
pub(crate) const HOME_Y: u32 = 1 << 31;
pub(crate) const HOME_Z: u32 = 1 << 30;
pub(crate) const POSITION: u32 = HOME_Z - 1;
/// Both home flags, as stored in [`Soa::home`].
pub(crate) const HOME_BOTH: u32 = 3;
/// In a bipartite search on one set of columns, the side of a row, beside
/// its home flags: a row of the first set has [`SIDE_A`], of the second
/// [`SIDE_B`], so that two rows' flags or'ed make [`CROSS_BOTH`] exactly
/// when both are at home and they are of different sides.
pub(crate) const SIDE_A: u32 = 4;
pub(crate) const SIDE_B: u32 = 8;
pub(crate) const CROSS_BOTH: u32 = HOME_BOTH | SIDE_A | SIDE_B;

/// Padding after the boxes: the widest group.
const PAD: usize = 16;

/// Boxes sorted by start, in columns, followed by [`PAD`] sentinels whose
/// start is `+∞`. Reused from call to call.
pub struct Soa<S> {
    lo: Vec<S>,
    hi: Vec<S>,
    /// `min_y, min_z, -max_y, -max_z`, one column each.
    c: [Vec<S>; 4],
    id: Vec<u32>,
    /// Home flags: bit 1 = home on the first cross axis, bit 0 = the second.
    home: Vec<u32>,
    /// The cross-axis starts and ends on a grid (see [`Quant::pack`]):
    /// filled by [`Soa::fill_sorted`] when given a grid.
    qlo: Vec<u32>,
    qhi: Vec<u32>,
    /// The layout of the grid in `qlo` and `qhi` (see [`Quant::kind`]), 0
    /// when the kernels are not to use one.
    grid: u8,
    len: usize,
    /// Every row is at home (sort-and-sweep): the kernels skip the flags and
    /// expect long runs of successors.
    all_home: bool,
    /// Whether the AVX2 `f64` kernel emits every quad's hits without a
    /// branch on whether there are any (set by the grid from the hit rate of
    /// the cells it swept before; the others ignore it).
    pub(crate) branchless: bool,
    /// What the home flags of two rows must make together (or'ed) for the
    /// rows to pair: [`HOME_BOTH`], or [`CROSS_BOTH`] in a bipartite search
    /// whose rows carry their side (see [`SIDE_A`]). Every fill resets it
    /// to [`HOME_BOTH`].
    pub(crate) both: u32,
}

impl<S: Scalar> Soa<S> {
    pub(crate) fn new() -> Self {
        Self {
            lo: Vec::new(),
            hi: Vec::new(),
            c: [Vec::new(), Vec::new(), Vec::new(), Vec::new()],
            id: Vec::new(),
            home: Vec::new(),
            qlo: Vec::new(),
            qhi: Vec::new(),
            grid: 0,
            len: 0,
            all_home: false,
            branchless: false,
            both: HOME_BOTH,
        }
    }

    /// Number of boxes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Whether every row is at home (filled by [`Soa::fill_sorted`]).
    pub(crate) fn all_home(&self) -> bool {
        self.all_home
    }

    /// Bytes held.
    pub(crate) fn bytes(&self) -> usize {
        let s = core::mem::size_of::<S>();
        (self.lo.capacity() + self.hi.capacity() + self.c.iter().map(Vec::capacity).sum::<usize>()) * s
            + (self.id.capacity() + self.home.capacity() + self.qlo.capacity() + self.qhi.capacity()) * 4
    }

    /// The layout of the grid columns the kernels test the cross axes on
    /// (see [`Quant::kind`]), or 0.
    pub(crate) fn grid(&self) -> u8 {
        self.grid
    }

    /// Fills the columns with `m` boxes from `item(k) = (entry, home flags)`.
    #[inline]
    pub(crate) fn fill_with<'e>(&mut self, m: usize, item: impl Fn(usize) -> (&'e Entry<S>, u32))
    where
        S: 'e,
    {
        self.fill_values(m, |k| {
            let (e, h) = item(k);
            (*e, h)
        });
    }

    /// [`Soa::fill_with`] from entries made on the fly.
    #[inline]
    pub(crate) fn fill_values(&mut self, m: usize, item: impl Fn(usize) -> (Entry<S>, u32)) {
        let cap = m + PAD;
        self.reserve(m, true);
        let [c0, c1, c2, c3] = &mut self.c;
        let (lo, hi, id, home) = (&mut self.lo[..cap], &mut self.hi[..cap], &mut self.id[..cap], &mut self.home[..cap]);
        let (c0, c1, c2, c3) = (&mut c0[..cap], &mut c1[..cap], &mut c2[..cap], &mut c3[..cap]);
        for k in 0..m {
            let (e, h) = item(k);
            lo[k] = e.lo;
            hi[k] = e.hi;
            c0[k] = e.cross[0];
            c1[k] = e.cross[1];
            c2[k] = e.cross[2];
            c3[k] = e.cross[3];
            id[k] = e.id;
            home[k] = h;
        }
        self.pad(m);
        self.all_home = false;
        self.grid = 0;
        self.both = HOME_BOTH;
    }

    /// Gathers boxes in the order of `keys` (sorted keyed items), every box
    /// at home (sort-and-sweep), on threads when asked. Coordinates become
    /// column values by `lower` (starts) and `upper` (ends): the identity,
    /// or a rounding outward (see [`lower_f32`]) that keeps every overlap.
    /// Given a grid (for long runs, see [`long_runs`]), the cross axes are
    /// filled on the grid instead of in `S` columns: the kernels then
    /// report the pairs that overlap on the grid, a superset of those that
    /// overlap, which the caller must test again.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn fill_sorted<T: Scalar, const D: usize>(
        &mut self,
        boxes: &[crate::Aabb<T, D>],
        keys: &[u64],
        axes: &crate::sweep::Axes,
        parallel: bool,
        lower: impl Fn(T) -> S + Sync + Copy,
        upper: impl Fn(T) -> S + Sync + Copy,
        quant: Option<&Quant>,
    ) {
        let m = keys.len();
        self.reserve(m, quant.is_none());
        let (q, c) = if quant.is_some() { (m, 0) } else { (0, m) };
        if self.qlo.len() < q + PAD {
            self.qlo.resize(q + PAD, 0);
            self.qhi.resize(q + PAD, 0);
        }
        let [c0, c1, c2, c3] = &mut self.c;
        let columns = Columns {
            lo: &mut self.lo[..m],
            hi: &mut self.hi[..m],
            c: [&mut c0[..c], &mut c1[..c], &mut c2[..c], &mut c3[..c]],
            id: &mut self.id[..m],
            home: &mut self.home[..m],
            qlo: &mut self.qlo[..q],
            qhi: &mut self.qhi[..q],
        };
        #[cfg(feature = "parallel")]
        let threaded = parallel && m >= crate::par::threads_from(1 << 15) && rayon::current_num_threads() > 1;
        #[cfg(not(feature = "parallel"))]
        let threaded = false;
        if threaded {
            #[cfg(feature = "parallel")]
            {
                use rayon::prelude::*;
                let chunk = m.div_ceil(rayon::current_num_threads() * 4);
                let mut parts = Vec::new();
                let (mut rest, mut k0) = (columns, 0);
                while k0 < m {
                    let len = chunk.min(m - k0);
                    let (head, tail) = rest.split_at(len);
                    parts.push((k0, head));
                    rest = tail;
                    k0 += len;
                }
                parts.into_par_iter().for_each(|(k0, cols)| cols.gather(boxes, &keys[k0..], axes, lower, upper, quant));
            }
        } else {
            let _ = parallel;
            columns.gather(boxes, keys, axes, lower, upper, quant);
        }
        self.pad(m);
        self.all_home = true;
        self.both = HOME_BOTH;
        self.grid = quant.map_or(0, Quant::kind);
    }

    /// Gives each row filled by [`Soa::fill_sorted`] (without a grid) its
    /// side, for a bipartite search over both sets at once: rows of ids
    /// below `first` are of the first set. The kernels then pair only rows
    /// of two sides (see [`SIDE_A`]).
    pub(crate) fn set_sides(&mut self, first: u32) {
        debug_assert_eq!(self.grid, 0, "the grid kernels read no flags");
        for (h, &id) in self.home[..self.len].iter_mut().zip(&self.id[..self.len]) {
            *h = HOME_BOTH | if id < first { SIDE_A } else { SIDE_B };
        }
        self.all_home = false;
        self.both = CROSS_BOTH;
    }

    /// Makes room for `m` boxes and the padding (in the cross-axis columns
    /// too when `cross`).
    fn reserve(&mut self, m: usize, cross: bool) {
        let cap = m + PAD;
        if self.lo.len() < cap {
            crate::mem::resize(&mut self.lo, cap, S::ZERO);
            crate::mem::resize(&mut self.hi, cap, S::ZERO);
            crate::mem::resize(&mut self.id, cap, 0);
            crate::mem::resize(&mut self.home, cap, 0);
        }
        if cross && self.c[0].len() < cap {
            for col in self.c.iter_mut() {
                crate::mem::resize(col, cap, S::ZERO);
            }
        }
    }

    /// Writes the sentinels after `m` boxes.
    fn pad(&mut self, m: usize) {
        for k in m..m + PAD {
            self.lo[k] = S::INFINITY;
            self.hi[k] = S::ZERO;
            self.home[k] = 0;
            self.id[k] = 0;
        }
        self.len = m;
    }

    /// Gathers a grid cell: the boxes of `list` (positions into `entries`
    /// with home flags, without the list's sentinel).
    pub(crate) fn fill_list(&mut self, entries: &[Entry<S>], list: &[u32]) {
        self.fill_with(list.len(), |k| (&entries[(list[k] & POSITION) as usize], list[k] >> 30));
    }
}

/// Whether the runs of successors on the sweep axis of the boxes sorted by
/// `keys` are long enough for a grid to pay for itself, from a sample of
/// rows, on the keys (sort-and-sweep on uniform 3D boxes, AVX-512: the
/// first 16-bit grid was as fast as the `f32` kernel with runs of about
/// 110, 10% faster at 330, 1.5x at 1550; with the 8-bit grid a threshold of
/// 16 instead of 128 made 2D sets of 1e3-3e3 boxes and 3D sets of 500, runs
/// of 40 to 120, 10-15% slower).
pub(crate) fn long_runs<T: Scalar, const D: usize>(boxes: &[crate::Aabb<T, D>], keys: &[u64], sweep: usize) -> bool {
    const MIN_RUN: usize = 128;
    let n = keys.len();
    let mut total = 0;
    let mut count = 0;
    for r in crate::stats::sample_indices(n, 64) {
        let end = boxes[crate::sort::payload(keys[r]) as usize].max()[sweep].sort_key();
        total += keys[r + 1..].partition_point(|&k| (k >> 32) as u32 <= end);
        count += 1;
    }
    count > 0 && total >= MIN_RUN * count
}

/// Mutable views of the columns of a [`Soa`], for filling pieces of it.
struct Columns<'a, S> {
    lo: &'a mut [S],
    hi: &'a mut [S],
    c: [&'a mut [S]; 4],
    id: &'a mut [u32],
    home: &'a mut [u32],
    /// Empty when not quantizing.
    qlo: &'a mut [u32],
    qhi: &'a mut [u32],
}

impl<'a, S: Scalar> Columns<'a, S> {
    #[cfg(feature = "parallel")]
    fn split_at(self, k: usize) -> (Self, Self) {
        let (lo0, lo1) = self.lo.split_at_mut(k);
        let (hi0, hi1) = self.hi.split_at_mut(k);
        let [c0, c1, c2, c3] = self.c;
        let kc = k.min(c0.len());
        let (c00, c01) = c0.split_at_mut(kc);
        let (c10, c11) = c1.split_at_mut(kc);
        let (c20, c21) = c2.split_at_mut(kc);
        let (c30, c31) = c3.split_at_mut(kc);
        let (id0, id1) = self.id.split_at_mut(k);
        let (h0, h1) = self.home.split_at_mut(k);
        let kq = k.min(self.qlo.len());
        let (ql0, ql1) = self.qlo.split_at_mut(kq);
        let (qh0, qh1) = self.qhi.split_at_mut(kq);
        (
            Columns { lo: lo0, hi: hi0, c: [c00, c10, c20, c30], id: id0, home: h0, qlo: ql0, qhi: qh0 },
            Columns { lo: lo1, hi: hi1, c: [c01, c11, c21, c31], id: id1, home: h1, qlo: ql1, qhi: qh1 },
        )
    }

    /// Fills the rows from the boxes named by `keys` (at least as many as
    /// rows), converting starts by `lower` and ends by `upper`, the cross
    /// axes on `quant`'s grid when given one. Reads the boxes at random:
    /// fetches ahead.
    fn gather<T: Scalar, const D: usize>(
        self,
        boxes: &[crate::Aabb<T, D>],
        keys: &[u64],
        axes: &crate::sweep::Axes,
        lower: impl Fn(T) -> S,
        upper: impl Fn(T) -> S,
        quant: Option<&Quant>,
    ) {
        #[cfg(target_arch = "x86_64")]
        if quant.is_some() {
            match Simd::detect() {
                // SAFETY: the CPU has the features.
                Simd::Avx512 => return unsafe { self.gather_avx512(boxes, keys, axes, lower, upper, quant) },
                // SAFETY: as above.
                Simd::Avx2 => return unsafe { self.gather_avx2(boxes, keys, axes, lower, upper, quant) },
                Simd::Portable => {}
            }
        }
        self.gather_any(boxes, keys, axes, lower, upper, quant);
    }

    /// [`Columns::gather`] compiled for AVX2 (the grid's roundings inline as
    /// one instruction instead of a call to `ceil`: 3% of sort-and-sweep at
    /// 1e4 on an AVX2 CPU went to the call).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn gather_avx2<T: Scalar, const D: usize>(
        self,
        boxes: &[crate::Aabb<T, D>],
        keys: &[u64],
        axes: &crate::sweep::Axes,
        lower: impl Fn(T) -> S,
        upper: impl Fn(T) -> S,
        quant: Option<&Quant>,
    ) {
        self.gather_any(boxes, keys, axes, lower, upper, quant);
    }

    /// [`Columns::gather`] compiled for AVX-512 (the grid's conversions).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512vl,avx512bw,avx2")]
    unsafe fn gather_avx512<T: Scalar, const D: usize>(
        self,
        boxes: &[crate::Aabb<T, D>],
        keys: &[u64],
        axes: &crate::sweep::Axes,
        lower: impl Fn(T) -> S,
        upper: impl Fn(T) -> S,
        quant: Option<&Quant>,
    ) {
        self.gather_any(boxes, keys, axes, lower, upper, quant);
    }

    #[inline(always)]
    fn gather_any<T: Scalar, const D: usize>(
        self,
        boxes: &[crate::Aabb<T, D>],
        keys: &[u64],
        axes: &crate::sweep::Axes,
        lower: impl Fn(T) -> S,
        upper: impl Fn(T) -> S,
        quant: Option<&Quant>,
    ) {
        const AHEAD: usize = 12;
        let [y, z] = axes.cross;
        let x = axes.sweep;
        for k in 0..self.lo.len() {
            if let Some(&next) = keys.get(k + AHEAD) {
                crate::sweep::prefetch(boxes.as_ptr().wrapping_add(crate::sort::payload(next) as usize));
            }
            let i = crate::sort::payload(keys[k]);
            let b = &boxes[i as usize];
            let (lo, hi) = (b.min(), b.max());
            self.lo[k] = lower(lo[x]);
            self.hi[k] = upper(hi[x]);
            self.id[k] = i;
            if let Some(q) = quant {
                // (The kernels read no home flags with a grid.)
                (self.qlo[k], self.qhi[k]) = q.pack([lo[y].to_f64(), lo[z].to_f64()], [hi[y].to_f64(), hi[z].to_f64()]);
            } else {
                self.home[k] = HOME_BOTH;
                self.c[0][k] = lower(lo[y]);
                self.c[1][k] = lower(lo[z]);
                self.c[2][k] = -upper(hi[y]);
                self.c[3][k] = -upper(hi[z]);
            }
        }
    }
}

/// A grid over the two cross axes, for sort-and-sweep's long runs (see "A
/// grid on the cross axes" above): a coordinate maps to its cell, starts
/// rounded down and ends up. The map is monotone, so boxes that overlap
/// keep overlapping on the grid, and the grid finds a superset of the
/// pairs, which sort-and-sweep then tests on the exact boxes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Quant {
    origin: [f64; 2],
    scale: [f64; 2],
    /// The last cell: 255 (eight bits) or 65535 (sixteen).
    top: u32,
    /// Only the first cross axis is tested (2D: the only one), in 16 bits
    /// (see [`Quant::pack`]).
    one: bool,
}

impl Quant {
    /// A grid fitted to a sample of the boxes (coordinates outside it clamp
    /// to the border cells): 8-bit when its cells are at most two thirds of
    /// the median box on both axes, else 16-bit when they are at most an
    /// eighth, else `None` (points, huge spreads: the grid test would let
    /// through many pairs that the exact one rejects).
    pub(crate) fn fit<T: Scalar, const D: usize>(
        boxes: &[crate::Aabb<T, D>],
        axes: &crate::sweep::Axes,
    ) -> Option<Self> {
        let mut origin = [0.0; 2];
        let mut range = [0.0; 2];
        let mut median = [0.0; 2];
        for (k, &axis) in axes.cross.iter().enumerate() {
            let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
            let mut extents: Vec<f64> = Vec::with_capacity(256);
            for i in crate::stats::sample_indices(boxes.len(), 256) {
                let (a, b) = (boxes[i].min()[axis].to_f64(), boxes[i].max()[axis].to_f64());
                lo = lo.min(a);
                hi = hi.max(b);
                extents.push(b - a);
            }
            if extents.is_empty() {
                return None;
            }
            let mid = extents.len() / 2;
            median[k] = *extents.select_nth_unstable_by(mid, f64::total_cmp).1;
            origin[k] = lo;
            range[k] = hi - lo;
            if !(range[k].is_finite() && range[k] > 0.0) {
                return None;
            }
        }
        let axes_used = if axes.distinct < 2 { 1 } else { 2 };
        let fits = |top: u32, finer: f64| (0..axes_used).all(|k| range[k] / top as f64 <= median[k] / finer);
        if axes_used == 1 {
            // One cross axis (2D): 16 bits in one lane, as cheap a test as 8
            // bits for two axes and much finer.
            let scale = range.map(|r| 65535.0 / r);
            let one = Self { origin, scale, top: 65535, one: true };
            return (fits(65535, 8.0) && scale[0].is_finite()).then_some(one);
        }
        // Sort-and-sweep on uniform 3D boxes, 8 against 16 bits (one binary,
        // alternated): 10% faster at 1e5 (cells a quarter of the box), 12% at
        // 1e6 (over half of it).
        let top = if fits(255, 1.5) {
            255
        } else if fits(65535, 8.0) {
            65535
        } else {
            return None;
        };
        let scale = range.map(|r| top as f64 / r);
        // A subnormal range.
        scale.iter().all(|s| s.is_finite()).then_some(Self { origin, scale, top, one: false })
    }

    /// The layout of [`Quant::pack`]'s values, as the kernels name it: 8
    /// (two axes, 8 bits each), 16 (two axes, 16 bits each) or 1 (one axis,
    /// 16 bits).
    #[inline(always)]
    pub(crate) fn kind(&self) -> u8 {
        if self.one {
            1
        } else if self.top == 255 {
            8
        } else {
            16
        }
    }

    /// Whether the cells are 8-bit.
    #[inline(always)]
    fn bytes(&self) -> bool {
        self.top == 255
    }

    /// The cell at or below `v` on cross axis `k`.
    #[inline(always)]
    fn down(&self, k: usize, v: f64) -> u32 {
        // Truncation is the floor of a clamped, non-negative value.
        ((v - self.origin[k]) * self.scale[k]).clamp(0.0, self.top as f64) as u32
    }

    /// The cell at or above `v` on cross axis `k`.
    #[inline(always)]
    fn up(&self, k: usize, v: f64) -> u32 {
        ((v - self.origin[k]) * self.scale[k]).clamp(0.0, self.top as f64).ceil() as u32
    }

    /// The two 32-bit grid values of a box with cross-axis starts `lo` and
    /// ends `hi` (`qlo`, `qhi`). Sixteen bits: the starts, and the ends,
    /// first axis in the low half. Eight bits: `qlo` holds the starts and
    /// the ends' complements (`255 - end`), `qhi` the ends and the starts'
    /// complements, so that one saturating byte subtraction
    /// `qlo[j] - qhi[i]` is zero in all four bytes exactly when the two
    /// boxes overlap on the grid (`lo_j <= hi_i` and `lo_i <= hi_j`). One
    /// axis: the same as eight bits, with one start and one end of 16 bits
    /// (`65535 - end`, `65535 - start` for the complements).
    #[inline(always)]
    fn pack(&self, lo: [f64; 2], hi: [f64; 2]) -> (u32, u32) {
        let (l0, h0) = (self.down(0, lo[0]), self.up(0, hi[0]));
        if self.one {
            return (l0 | (65535 - h0) << 16, h0 | (65535 - l0) << 16);
        }
        let (l1, h1) = (self.down(1, lo[1]), self.up(1, hi[1]));
        if self.bytes() {
            (l0 | l1 << 8 | (255 - h0) << 16 | (255 - h1) << 24, h0 | h1 << 8 | (255 - l0) << 16 | (255 - l1) << 24)
        } else {
            (l0 | l1 << 16, h0 | h1 << 16)
        }
    }
}

/// The largest `f32` at or below `v` (`-∞` below the range). With
/// [`upper_f32`] for ends, every comparison the kernels make (a start at or
/// below an end) that holds for the exact values holds for the rounded ones:
/// the columns find a superset of the pairs, in the same order.
#[inline]
pub(crate) fn lower_f32(v: f64) -> f32 {
    let f = v as f32;
    let bits = f.to_bits();
    // PERF: whether `v` was rounded up is a coin toss on real data: step
    // by the comparison's value (a flag in a register), do not branch on it
    // (`next_down` does, and a select becomes a branch).
    let up = u32::from(f as f64 > v);
    if bits << 1 == 0 {
        // ±0: below it, the negative subnormal nearest zero.
        return if up == 1 { f32::from_bits(0x8000_0001) } else { f };
    }
    // Away from zero for a negative value, toward it for a positive one.
    f32::from_bits(if bits >> 31 == 0 { bits - up } else { bits + up })
}

/// The smallest `f32` at or above `v`, clamped to `f32::MAX` (an end of
/// `+∞` would reach the padding, whose start is `+∞`; clamping keeps the
/// comparisons with starts, which are at most `f32::MAX` when finite).
#[inline]
pub(crate) fn upper_f32(v: f64) -> f32 {
    -lower_f32(-v).max(-f32::MAX)
}

/// The SIMD level the kernels use: the best this CPU has, or a lower one
/// named by the environment variable `BROADPHASE_SIMD` (`portable`, `avx2`
/// or `avx512`; read once per process; a level the CPU lacks, or any other
/// value, leaves the CPU's own). The lower levels are there to compare
/// kernels on one machine, or to sidestep a slow one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Simd {
    Portable,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    #[cfg(target_arch = "x86_64")]
    Avx512,
}

impl Simd {
    /// The level the kernels use (see the type's notes).
    pub(crate) fn detect() -> Self {
        static LEVEL: std::sync::OnceLock<Simd> = std::sync::OnceLock::new();
        *LEVEL.get_or_init(|| {
            let cpu = Simd::cpu();
            let asked = std::env::var("BROADPHASE_SIMD").ok().and_then(|v| Simd::named(v.trim()));
            asked.map_or(cpu, |a| a.min(cpu))
        })
    }

    /// The level named `name`, if this build knows it.
    fn named(name: &str) -> Option<Self> {
        match name.to_ascii_lowercase().as_str() {
            "portable" => Some(Simd::Portable),
            #[cfg(target_arch = "x86_64")]
            "avx2" => Some(Simd::Avx2),
            #[cfg(target_arch = "x86_64")]
            "avx512" => Some(Simd::Avx512),
            _ => None,
        }
    }

    /// The best level this CPU runs.
    fn cpu() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512vl")
                && std::arch::is_x86_feature_detected!("avx512bw")
                && std::arch::is_x86_feature_detected!("popcnt")
            {
                return Simd::Avx512;
            }
            // Every CPU with AVX2 has POPCNT; the AVX2 kernels use it.
            if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("popcnt") {
                return Simd::Avx2;
            }
        }
        Simd::Portable
    }

    /// Every level this CPU can run, for tests.
    #[cfg(test)]
    pub(crate) fn all() -> Vec<Self> {
        #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
        let mut v = vec![Simd::Portable];
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("popcnt") {
                v.push(Simd::Avx2);
            }
            if Simd::cpu() == Simd::Avx512 {
                v.push(Simd::Avx512);
            }
        }
        v
    }
}

/// Reports the pairs whose first row lies in `rows` (whose start must be a
/// multiple of `S::GROUP`, or the end of the boxes, so that pieces of the
/// rows reproduce the order of one run over all of them).
/// Returns the group steps taken where the kernel counts them (the AVX2
/// `f64` one, for the grid's choice of [`Soa::branchless`]), else 0.
pub(crate) fn sweep_rows<S: Scalar>(
    b: &Soa<S>,
    rows: core::ops::Range<usize>,
    simd: Simd,
    out: &mut Vec<Pair>,
) -> usize {
    debug_assert!(rows.start.is_multiple_of(S::GROUP) || rows.start >= b.len);
    let rows = rows.start..rows.end.min(b.len);
    if rows.is_empty() {
        return 0;
    }
    match simd {
        Simd::Portable => {
            sweep_portable(b, rows, out);
            0
        }
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Simd::detect` found the features this level needs.
        level => unsafe { S::sweep_simd(b, rows, level == Simd::Avx512, out) },
    }
}

/// The portable kernel: the reference the SIMD kernels must match, pair for
/// pair and in order (each group of rows against the rows `d` after them,
/// `d = 1, 2, ...`, until none of the group reaches that far; within a
/// step, rows in order). Without a grid, each step tests the whole group at
/// once into bit masks, a loop of fixed length over plain columns that the
/// compiler turns into whatever vectors the target has (SSE2, NEON).
pub(crate) fn sweep_portable<S: Scalar>(b: &Soa<S>, rows: core::ops::Range<usize>, out: &mut Vec<Pair>) {
    if b.grid != 0 {
        return sweep_portable_grid(b, rows, out);
    }
    // Every row at home (sort-and-sweep): no flags to test.
    match (S::GROUP, b.all_home()) {
        (16, true) => sweep_portable_masks::<S, 16, false>(b, rows, out),
        (16, false) => sweep_portable_masks::<S, 16, true>(b, rows, out),
        (_, true) => sweep_portable_masks::<S, 8, false>(b, rows, out),
        (_, false) => sweep_portable_masks::<S, 8, true>(b, rows, out),
    }
}

/// [`sweep_portable`] without a grid, `G` rows a group; `FLAGS`: test the
/// rows' home flags.
fn sweep_portable_masks<S: Scalar, const G: usize, const FLAGS: bool>(
    b: &Soa<S>,
    rows: core::ops::Range<usize>,
    out: &mut Vec<Pair>,
) {
    let mut i = rows.start;
    while i < rows.end {
        // Rows past the range belong to the next piece (or are padding).
        let valid = if rows.end - i >= G { u32::MAX >> (32 - G) } else { (1u32 << (rows.end - i)) - 1 };
        // The group's own columns. Every slice below stays within the
        // padding: a step `d` is taken only while a valid row `r` reaches
        // `r + d`, which then is a box (the padding starts at `+∞`), so
        // `i + d < len` and `i + d + G <= len + PAD`.
        let hi: &[S; G] = b.hi[i..i + G].try_into().unwrap();
        let home: &[u32; G] = b.home[i..i + G].try_into().unwrap();
        let both = b.both;
        // c = (min_y, min_z, -max_y, -max_z): row j meets row r on both
        // cross axes when min_j <= max_r and -max_j <= -min_r, that is
        // when (c0, c1, c2, c3) of j are at most (-c2, -c3, -c0, -c1) of r,
        // negated once per group.
        let neg = |c: usize| -> [S; G] { core::array::from_fn(|k| -b.c[c][i + k]) };
        let (r0, r1, r2, r3) = (neg(2), neg(3), neg(0), neg(1));
        let mut d = 1;
        loop {
            let j = i + d;
            let lo: &[S; G] = b.lo[j..j + G].try_into().unwrap();
            let hj: &[u32; G] = b.home[j..j + G].try_into().unwrap();
            let colj = |c: usize| -> &[S; G] { b.c[c][j..j + G].try_into().unwrap() };
            let (b0, b1, b2, b3) = (colj(0), colj(1), colj(2), colj(3));
            let (mut within, mut hit) = (0u32, 0u32);
            for k in 0..G {
                let w = lo[k] <= hi[k];
                let cross = (b0[k] <= r0[k]) & (b1[k] <= r1[k]) & (b2[k] <= r2[k]) & (b3[k] <= r3[k]);
                let ok = w & cross & (!FLAGS || (hj[k] | home[k]) == both);
                within |= u32::from(w) << k;
                hit |= u32::from(ok) << k;
            }
            if within & valid == 0 {
                break;
            }
            let mut hit = hit & valid;
            while hit != 0 {
                let k = hit.trailing_zeros() as usize;
                hit &= hit - 1;
                out.push(Pair::ordered(b.id[i + k], b.id[j + k]));
            }
            d += 1;
        }
        i += G;
    }
}

/// [`sweep_portable`] with the cross axes on a grid, one test at a time.
fn sweep_portable_grid<S: Scalar>(b: &Soa<S>, rows: core::ops::Range<usize>, out: &mut Vec<Pair>) {
    let mut i = rows.start;
    while i < rows.end {
        let last = (i + S::GROUP).min(rows.end);
        let mut d = 1;
        loop {
            let mut going = false;
            for r in i..last {
                let j = r + d;
                if b.lo[j] > b.hi[r] {
                    continue;
                }
                going = true;
                if grid_overlap(b.grid, [b.qlo[j], b.qhi[j]], [b.qlo[r], b.qhi[r]]) {
                    out.push(Pair::ordered(b.id[r], b.id[j]));
                }
            }
            if !going {
                break;
            }
            d += 1;
        }
        i += S::GROUP;
    }
}

fn grid_overlap(kind: u8, j: [u32; 2], r: [u32; 2]) -> bool {
    // Every field of `a` at or below the same field of `b`.
    let le = |a: u32, b: u32, w: u32| {
        let mask = (1u32 << w) - 1;
        (0..32 / w).all(|k| (a >> (k * w)) & mask <= (b >> (k * w)) & mask)
    };
    match kind {
        8 => le(j[0], r[1], 8),
        1 => le(j[0], r[1], 16),
        _ => le(j[0], r[1], 16) && le(r[0], j[1], 16),
    }
}

/// For the group of rows `i..last`: the largest `d` such that every row
/// `r` of the group overlaps row `r + d` on the sweep axis, and so every row
/// before it (0 when none). With `m` the smallest end in the group, that is
/// `e - last` for `e` the first row at or after `last` that starts after
/// `m` (starts are sorted); found by a galloping search from `last`. Rows
/// past the boxes start at `+∞`, so `e` never passes them.
#[cfg(target_arch = "x86_64")]
#[inline]
fn safe_depth<S: Scalar>(lo: &[S], hi: &[S], group: core::ops::Range<usize>, len: usize) -> usize {
    let m = hi[group.clone()].iter().copied().fold(S::INFINITY, |a, b| if b < a { b } else { a });
    let last = group.end;
    // lo[j] <= m for every j in last..a; lo[b] > m or b >= len.
    let (mut a, mut b, mut step) = (last, last, 16);
    while b < len && lo[b] <= m {
        a = b + 1;
        b += step;
        step *= 2;
    }
    let b = b.min(len);
    a + lo[a..b].partition_point(|&x| x <= m) - last
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod x86 {
    //! AVX2 and AVX-512 kernels. Each is `unsafe` only because it needs its
    //! CPU features: the caller checks them first ([`super::Simd::detect`]).
    use super::Soa;
    use crate::Pair;
    use core::arch::x86_64::*;
    use core::ops::Range;

    /// For each 4-bit mask, the 32-bit lane indices that left-pack the
    /// selected 64-bit pairs.
    const PACK4: [[i32; 8]; 16] = {
        let mut t = [[0i32; 8]; 16];
        let mut m = 0;
        while m < 16 {
            let mut k = 0;
            let mut l = 0;
            while l < 4 {
                if m & (1 << l) != 0 {
                    t[m][2 * k] = 2 * l;
                    t[m][2 * k + 1] = 2 * l + 1;
                    k += 1;
                }
                l += 1;
            }
            m += 1;
        }
        t
    };

    /// The pairs `(a[l], b[l])` (ordered) for the set bits `l` of the 4-bit
    /// `mask`, left-packed into the low lanes.
    #[inline(always)]
    unsafe fn pack4(mask: u32, a: __m128i, b: __m128i) -> __m256i {
        let mn = _mm_min_epu32(a, b);
        let mx = _mm_max_epu32(a, b);
        let pairs = _mm256_set_m128i(_mm_unpackhi_epi32(mn, mx), _mm_unpacklo_epi32(mn, mx));
        let perm = _mm256_loadu_si256(PACK4[mask as usize].as_ptr() as *const __m256i);
        _mm256_permutevar8x32_epi32(pairs, perm)
    }

    /// Appends [`pack4`]'s pairs; `out` must have room for 4 more. Every
    /// kernel that inlines it enables `popcnt` (the AVX2 level requires it),
    /// without which `count_ones` is a dozen instructions.
    #[inline(always)]
    unsafe fn emit4(out: &mut Vec<Pair>, mask: u32, a: __m128i, b: __m128i) {
        let len = out.len();
        _mm256_storeu_si256(out.as_mut_ptr().add(len) as *mut __m256i, pack4(mask, a, b));
        out.set_len(len + mask.count_ones() as usize);
    }

    /// The end of the output, held in registers while the `f64` kernel runs
    /// (with the pairs stored through the vector's pointer, the compiler
    /// must assume the stores may change the vector's length, and reads it
    /// back from memory before each emission).
    struct Sink<'a> {
        out: &'a mut Vec<Pair>,
        ptr: *mut Pair,
        len: usize,
        cap: usize,
    }

    impl<'a> Sink<'a> {
        fn new(out: &'a mut Vec<Pair>) -> Self {
            let (ptr, len, cap) = (out.as_mut_ptr(), out.len(), out.capacity());
            Self { out, ptr, len, cap }
        }

        /// Room for `k` more pairs.
        #[inline(always)]
        fn reserve(&mut self, k: usize) {
            if self.cap - self.len < k {
                self.grow(k);
            }
        }

        #[cold]
        #[inline(never)]
        fn grow(&mut self, k: usize) {
            // SAFETY: the first `len` pairs were written.
            unsafe { self.out.set_len(self.len) };
            self.out.reserve(k);
            (self.ptr, self.cap) = (self.out.as_mut_ptr(), self.out.capacity());
        }

        /// [`emit4`] into the sink, which must have room for 4 more.
        #[inline(always)]
        unsafe fn emit4(&mut self, mask: u32, a: __m128i, b: __m128i) {
            _mm256_storeu_si256(self.ptr.add(self.len) as *mut __m256i, pack4(mask, a, b));
            self.len += mask.count_ones() as usize;
        }
    }

    /// Where a kernel's pairs go: the output vector itself, or a [`Sink`].
    trait Emit {
        /// Room for `k` more pairs.
        fn reserve(&mut self, k: usize);
        /// [`emit4`]; there must be room for 4 more.
        unsafe fn emit4(&mut self, mask: u32, a: __m128i, b: __m128i);
    }

    impl Emit for Vec<Pair> {
        #[inline(always)]
        fn reserve(&mut self, k: usize) {
            Vec::reserve(self, k);
        }

        #[inline(always)]
        unsafe fn emit4(&mut self, mask: u32, a: __m128i, b: __m128i) {
            emit4(self, mask, a, b);
        }
    }

    impl Emit for Sink<'_> {
        #[inline(always)]
        fn reserve(&mut self, k: usize) {
            Sink::reserve(self, k);
        }

        #[inline(always)]
        unsafe fn emit4(&mut self, mask: u32, a: __m128i, b: __m128i) {
            Sink::emit4(self, mask, a, b);
        }
    }

    impl Drop for Sink<'_> {
        fn drop(&mut self) {
            // SAFETY: the first `len` pairs were written, within the capacity.
            unsafe { self.out.set_len(self.len) };
        }
    }

    /// AVX2, `f64`: a group of 8 rows as two quads.
    ///
    /// `branchless`: every quad's hits are emitted, none included, without a
    /// branch on whether there are any (into a [`Sink`]); else only the
    /// quads with hits. Returns the group steps taken (times 8: the lanes
    /// tested, for the caller's hit rate).
    #[target_feature(enable = "avx2,popcnt")]
    pub(crate) unsafe fn avx2_f64(b: &Soa<f64>, rows: Range<usize>, branchless: bool, out: &mut Vec<Pair>) -> usize {
        if branchless {
            run_f64::<_, true>(b, rows, &mut Sink::new(out))
        } else {
            run_f64::<_, false>(b, rows, out)
        }
    }

    /// [`avx2_f64`], emitting into `out`.
    #[target_feature(enable = "avx2,popcnt")]
    unsafe fn run_f64<O: Emit, const BRANCHLESS: bool>(b: &Soa<f64>, rows: Range<usize>, out: &mut O) -> usize {
        let mut steps = 0;
        let (lo, hi, c0, c1, c2, c3) =
            (b.lo.as_ptr(), b.hi.as_ptr(), b.c[0].as_ptr(), b.c[1].as_ptr(), b.c[2].as_ptr(), b.c[3].as_ptr());
        let (idp, homep) = (b.id.as_ptr(), b.home.as_ptr());
        let both = _mm_set1_epi32(b.both as i32);
        let neg = _mm256_set1_pd(-0.0);
        let mut i = rows.start;
        while i < rows.end {
            let live = (1u32 << (rows.end - i).min(8)) - 1;
            // Per quad q: the rows' end, query vector, home flags and ids.
            let mut vhi = [_mm256_setzero_pd(); 2];
            let mut q = [[_mm256_setzero_pd(); 4]; 2];
            let mut home = [_mm_setzero_si128(); 2];
            let mut ids = [_mm_setzero_si128(); 2];
            for h in 0..2 {
                let r = i + 4 * h;
                vhi[h] = _mm256_loadu_pd(hi.add(r));
                // Query: [max_y, max_z, -min_y, -min_z] = -[c2, c3, c0, c1].
                q[h] = [
                    _mm256_xor_pd(_mm256_loadu_pd(c2.add(r)), neg),
                    _mm256_xor_pd(_mm256_loadu_pd(c3.add(r)), neg),
                    _mm256_xor_pd(_mm256_loadu_pd(c0.add(r)), neg),
                    _mm256_xor_pd(_mm256_loadu_pd(c1.add(r)), neg),
                ];
                home[h] = _mm_loadu_si128(homep.add(r) as *const __m128i);
                ids[h] = _mm_loadu_si128(idp.add(r) as *const __m128i);
            }
            let mut d = 1;
            loop {
                let mut within = [_mm256_setzero_pd(); 2];
                let mut going = 0;
                for h in 0..2 {
                    let j = i + 4 * h + d;
                    within[h] = _mm256_cmp_pd::<_CMP_LE_OQ>(_mm256_loadu_pd(lo.add(j)), vhi[h]);
                    going |= (_mm256_movemask_pd(within[h]) as u32) << (4 * h);
                }
                let g = going & live;
                if g == 0 {
                    break;
                }
                // At most two bits (`count_ones` is no instruction without
                // `popcnt`): clearing the lowest twice leaves none.
                let rest = g & (g - 1);
                if rest & rest.wrapping_sub(1) == 0 {
                    // One or two rows left (the others' successors start
                    // past their ends from now on: starts are sorted): their
                    // successors four at a time, the same pairs in the same
                    // order.
                    let r = i + g.trailing_zeros() as usize;
                    if rest == 0 {
                        tail_f64(b, r, r + d, out);
                    } else {
                        tail2_f64(b, r, i + (31 - g.leading_zeros()) as usize, d, out);
                    }
                    break;
                }
                out.reserve(8);
                for h in 0..2 {
                    let quad = (live >> (4 * h)) & 15;
                    if (going >> (4 * h)) & quad == 0 {
                        continue;
                    }
                    let j = i + 4 * h + d;
                    let mut ok =
                        _mm256_and_pd(within[h], _mm256_cmp_pd::<_CMP_LE_OQ>(_mm256_loadu_pd(c0.add(j)), q[h][0]));
                    ok = _mm256_and_pd(ok, _mm256_cmp_pd::<_CMP_LE_OQ>(_mm256_loadu_pd(c1.add(j)), q[h][1]));
                    ok = _mm256_and_pd(ok, _mm256_cmp_pd::<_CMP_LE_OQ>(_mm256_loadu_pd(c2.add(j)), q[h][2]));
                    ok = _mm256_and_pd(ok, _mm256_cmp_pd::<_CMP_LE_OQ>(_mm256_loadu_pd(c3.add(j)), q[h][3]));
                    let hj = _mm_loadu_si128(homep.add(j) as *const __m128i);
                    let hok = _mm_cmpeq_epi32(_mm_or_si128(hj, home[h]), both);
                    let mask = _mm256_movemask_pd(ok) as u32 & _mm_movemask_ps(_mm_castsi128_ps(hok)) as u32 & quad;
                    // `BRANCHLESS`: the quads without hits are emitted too (a
                    // store that counts no pair), without a branch on the
                    // mask: see `grid::oneshot::BRANCHLESS_RATES`.
                    if BRANCHLESS || mask != 0 {
                        out.emit4(mask, ids[h], _mm_loadu_si128(idp.add(j) as *const __m128i));
                    }
                }
                d += 1;
            }
            steps += d;
            i += 8;
        }
        steps
    }

    /// One row's end, query, home flags and id, broadcast, for testing it
    /// against four successors at a time.
    struct Row4 {
        hi: __m256d,
        q: [__m256d; 4],
        home: __m128i,
        id: __m128i,
    }

    impl Row4 {
        #[target_feature(enable = "avx2")]
        unsafe fn new(b: &Soa<f64>, r: usize) -> Self {
            let c = |k: usize| *b.c[k].as_ptr().add(r);
            Self {
                hi: _mm256_set1_pd(*b.hi.as_ptr().add(r)),
                // Query: [max_y, max_z, -min_y, -min_z] = -[c2, c3, c0, c1].
                q: [-c(2), -c(3), -c(0), -c(1)].map(|v| _mm256_set1_pd(v)),
                home: _mm_set1_epi32(*b.home.as_ptr().add(r) as i32),
                id: _mm_set1_epi32(*b.id.as_ptr().add(r) as i32),
            }
        }

        /// Against rows `j..j + 4`: which start within its end (a prefix:
        /// starts are sorted; the padding starts at +inf, so the loads stay
        /// in the columns), which of those it pairs with, and their ids.
        #[target_feature(enable = "avx2")]
        unsafe fn test(&self, b: &Soa<f64>, j: usize) -> (u32, u32, __m128i) {
            let col = |k: usize| _mm256_loadu_pd(b.c[k].as_ptr().add(j));
            let within = _mm256_cmp_pd::<_CMP_LE_OQ>(_mm256_loadu_pd(b.lo.as_ptr().add(j)), self.hi);
            let mut ok = _mm256_and_pd(within, _mm256_cmp_pd::<_CMP_LE_OQ>(col(0), self.q[0]));
            ok = _mm256_and_pd(ok, _mm256_cmp_pd::<_CMP_LE_OQ>(col(1), self.q[1]));
            ok = _mm256_and_pd(ok, _mm256_cmp_pd::<_CMP_LE_OQ>(col(2), self.q[2]));
            ok = _mm256_and_pd(ok, _mm256_cmp_pd::<_CMP_LE_OQ>(col(3), self.q[3]));
            let hj = _mm_loadu_si128(b.home.as_ptr().add(j) as *const __m128i);
            let hok = _mm_cmpeq_epi32(_mm_or_si128(hj, self.home), _mm_set1_epi32(b.both as i32));
            let mask = _mm256_movemask_pd(ok) as u32 & _mm_movemask_ps(_mm_castsi128_ps(hok)) as u32;
            let ids = _mm_loadu_si128(b.id.as_ptr().add(j) as *const __m128i);
            (_mm256_movemask_pd(within) as u32, mask, ids)
        }
    }

    /// Row `r` of a group whose other rows are done, against its successors
    /// from `j` on while they start within its end, four at a time: the pairs
    /// `(r, j), (r, j + 1), ...` that the group's steps would give one by one
    /// (heavy-tailed sizes: a large box's run outlasts its group's by far).
    #[target_feature(enable = "avx2,popcnt")]
    unsafe fn tail_f64<O: Emit>(b: &Soa<f64>, r: usize, mut j: usize, out: &mut O) {
        let row = Row4::new(b, r);
        loop {
            let (w, mask, ids) = row.test(b, j);
            if mask != 0 {
                out.reserve(4);
                out.emit4(mask, row.id, ids);
            }
            if w != 15 {
                return;
            }
            j += 4;
        }
    }

    /// Rows `r1 < r2` of a group whose other rows are done, from step `d` on:
    /// both against four successors at a time, the pairs emitted step by step
    /// (`r1`'s, then `r2`'s), as the group's steps would give them; when one
    /// row's successors end, the other goes on alone.
    #[target_feature(enable = "avx2,popcnt")]
    unsafe fn tail2_f64<O: Emit>(b: &Soa<f64>, r1: usize, r2: usize, mut d: usize, out: &mut O) {
        let (x, y) = (Row4::new(b, r1), Row4::new(b, r2));
        // Lanes of (r1, r2, r1, r2): the left ids, and the spread of a
        // 2-bit piece of a mask to bits 0 and 2.
        let left = _mm_unpacklo_epi32(x.id, y.id);
        let spread = |m: u32| (m & 1) | ((m & 2) << 1);
        loop {
            let (w1, m1, i1) = x.test(b, r1 + d);
            let (w2, m2, i2) = y.test(b, r2 + d);
            if (m1 | m2) != 0 {
                out.reserve(8);
                out.emit4(spread(m1) | (spread(m2) << 1), left, _mm_unpacklo_epi32(i1, i2));
                out.emit4(spread(m1 >> 2) | (spread(m2 >> 2) << 1), left, _mm_unpackhi_epi32(i1, i2));
            }
            match (w1 == 15, w2 == 15) {
                (true, true) => d += 4,
                (true, false) => return tail_f64(b, r1, r1 + d + 4, out),
                (false, true) => return tail_f64(b, r2, r2 + d + 4, out),
                (false, false) => return,
            }
        }
    }

    /// [`Row4`] for `f32` columns: eight successors at a time.
    struct Row8 {
        hi: __m256,
        q: [__m256; 4],
        home: __m256i,
        id: __m128i,
    }

    impl Row8 {
        #[target_feature(enable = "avx2")]
        unsafe fn new(b: &Soa<f32>, r: usize) -> Self {
            let c = |k: usize| *b.c[k].as_ptr().add(r);
            Self {
                hi: _mm256_set1_ps(*b.hi.as_ptr().add(r)),
                q: [-c(2), -c(3), -c(0), -c(1)].map(|v| _mm256_set1_ps(v)),
                home: _mm256_set1_epi32(*b.home.as_ptr().add(r) as i32),
                id: _mm_set1_epi32(*b.id.as_ptr().add(r) as i32),
            }
        }

        /// As [`Row4::test`], against rows `j..j + 8`; the ids as two quads.
        #[target_feature(enable = "avx2")]
        unsafe fn test(&self, b: &Soa<f32>, j: usize) -> (u32, u32, [__m128i; 2]) {
            let col = |k: usize| _mm256_loadu_ps(b.c[k].as_ptr().add(j));
            let within = _mm256_cmp_ps::<_CMP_LE_OQ>(_mm256_loadu_ps(b.lo.as_ptr().add(j)), self.hi);
            let mut ok = _mm256_and_ps(within, _mm256_cmp_ps::<_CMP_LE_OQ>(col(0), self.q[0]));
            ok = _mm256_and_ps(ok, _mm256_cmp_ps::<_CMP_LE_OQ>(col(1), self.q[1]));
            ok = _mm256_and_ps(ok, _mm256_cmp_ps::<_CMP_LE_OQ>(col(2), self.q[2]));
            ok = _mm256_and_ps(ok, _mm256_cmp_ps::<_CMP_LE_OQ>(col(3), self.q[3]));
            let hj = _mm256_loadu_si256(b.home.as_ptr().add(j) as *const __m256i);
            let hok = _mm256_cmpeq_epi32(_mm256_or_si256(hj, self.home), _mm256_set1_epi32(b.both as i32));
            let mask = _mm256_movemask_ps(_mm256_and_ps(ok, _mm256_castsi256_ps(hok))) as u32;
            let ids = b.id.as_ptr().add(j) as *const __m128i;
            (_mm256_movemask_ps(within) as u32, mask, [_mm_loadu_si128(ids), _mm_loadu_si128(ids.add(1))])
        }
    }

    /// [`tail_f64`] for `f32` columns, eight successors at a time.
    #[target_feature(enable = "avx2,popcnt")]
    unsafe fn tail_f32(b: &Soa<f32>, r: usize, mut j: usize, out: &mut Vec<Pair>) {
        let row = Row8::new(b, r);
        loop {
            let (w, mask, ids) = row.test(b, j);
            if mask != 0 {
                out.reserve(8);
                emit4(out, mask & 15, row.id, ids[0]);
                emit4(out, mask >> 4, row.id, ids[1]);
            }
            if w != 255 {
                return;
            }
            j += 8;
        }
    }

    /// [`tail2_f64`] for `f32` columns, eight successors at a time.
    #[target_feature(enable = "avx2,popcnt")]
    unsafe fn tail2_f32(b: &Soa<f32>, r1: usize, r2: usize, mut d: usize, out: &mut Vec<Pair>) {
        let (x, y) = (Row8::new(b, r1), Row8::new(b, r2));
        let left = _mm_unpacklo_epi32(x.id, y.id);
        // Steps 2k and 2k + 1 of both masks as lanes (r1, r2, r1, r2).
        let pick = |m1: u32, m2: u32, k: u32| {
            let (a, c) = (m1 >> (2 * k), m2 >> (2 * k));
            (a & 1) | ((c & 1) << 1) | ((a & 2) << 1) | ((c & 2) << 2)
        };
        loop {
            let (w1, m1, i1) = x.test(b, r1 + d);
            let (w2, m2, i2) = y.test(b, r2 + d);
            if (m1 | m2) != 0 {
                out.reserve(16);
                for h in 0..2 {
                    let k = 2 * h as u32;
                    emit4(out, pick(m1, m2, k), left, _mm_unpacklo_epi32(i1[h], i2[h]));
                    emit4(out, pick(m1, m2, k + 1), left, _mm_unpackhi_epi32(i1[h], i2[h]));
                }
            }
            match (w1 == 255, w2 == 255) {
                (true, true) => d += 8,
                (true, false) => return tail_f32(b, r1, r1 + d + 8, out),
                (false, true) => return tail_f32(b, r2, r2 + d + 8, out),
                (false, false) => return,
            }
        }
    }

    /// AVX2, `f32`: a group of 16 rows as two octets.
    #[target_feature(enable = "avx2,popcnt")]
    pub(crate) unsafe fn avx2_f32(b: &Soa<f32>, rows: Range<usize>, out: &mut Vec<Pair>) {
        let (lo, hi, c0, c1, c2, c3) =
            (b.lo.as_ptr(), b.hi.as_ptr(), b.c[0].as_ptr(), b.c[1].as_ptr(), b.c[2].as_ptr(), b.c[3].as_ptr());
        let (idp, homep) = (b.id.as_ptr(), b.home.as_ptr());
        let both = _mm256_set1_epi32(b.both as i32);
        let neg = _mm256_set1_ps(-0.0);
        let mut i = rows.start;
        while i < rows.end {
            let live = (1u32 << (rows.end - i).min(16)) - 1;
            let mut vhi = [_mm256_setzero_ps(); 2];
            let mut q = [[_mm256_setzero_ps(); 4]; 2];
            let mut home = [_mm256_setzero_si256(); 2];
            for h in 0..2 {
                let r = i + 8 * h;
                vhi[h] = _mm256_loadu_ps(hi.add(r));
                q[h] = [
                    _mm256_xor_ps(_mm256_loadu_ps(c2.add(r)), neg),
                    _mm256_xor_ps(_mm256_loadu_ps(c3.add(r)), neg),
                    _mm256_xor_ps(_mm256_loadu_ps(c0.add(r)), neg),
                    _mm256_xor_ps(_mm256_loadu_ps(c1.add(r)), neg),
                ];
                home[h] = _mm256_loadu_si256(homep.add(r) as *const __m256i);
            }
            let mut d = 1;
            loop {
                let mut within = [_mm256_setzero_ps(); 2];
                let mut going = 0;
                for h in 0..2 {
                    let j = i + 8 * h + d;
                    within[h] = _mm256_cmp_ps::<_CMP_LE_OQ>(_mm256_loadu_ps(lo.add(j)), vhi[h]);
                    going |= (_mm256_movemask_ps(within[h]) as u32) << (8 * h);
                }
                let g = going & live;
                if g == 0 {
                    break;
                }
                // At most two bits (`count_ones` is no instruction without
                // `popcnt`): clearing the lowest twice leaves none.
                let rest = g & (g - 1);
                if rest & rest.wrapping_sub(1) == 0 {
                    // One or two rows left: see `avx2_f64`.
                    let r = i + g.trailing_zeros() as usize;
                    if rest == 0 {
                        tail_f32(b, r, r + d, out);
                    } else {
                        tail2_f32(b, r, i + (31 - g.leading_zeros()) as usize, d, out);
                    }
                    break;
                }
                out.reserve(16);
                for h in 0..2 {
                    let oct = (live >> (8 * h)) & 255;
                    if (going >> (8 * h)) & oct == 0 {
                        continue;
                    }
                    let r = i + 8 * h;
                    let j = r + d;
                    let mut ok =
                        _mm256_and_ps(within[h], _mm256_cmp_ps::<_CMP_LE_OQ>(_mm256_loadu_ps(c0.add(j)), q[h][0]));
                    ok = _mm256_and_ps(ok, _mm256_cmp_ps::<_CMP_LE_OQ>(_mm256_loadu_ps(c1.add(j)), q[h][1]));
                    ok = _mm256_and_ps(ok, _mm256_cmp_ps::<_CMP_LE_OQ>(_mm256_loadu_ps(c2.add(j)), q[h][2]));
                    ok = _mm256_and_ps(ok, _mm256_cmp_ps::<_CMP_LE_OQ>(_mm256_loadu_ps(c3.add(j)), q[h][3]));
                    let hj = _mm256_loadu_si256(homep.add(j) as *const __m256i);
                    let hok = _mm256_cmpeq_epi32(_mm256_or_si256(hj, home[h]), both);
                    let mask = _mm256_movemask_ps(_mm256_and_ps(ok, _mm256_castsi256_ps(hok))) as u32 & oct;
                    if mask != 0 {
                        let (a, bb) = (idp.add(r) as *const __m128i, idp.add(j) as *const __m128i);
                        emit4(out, mask & 15, _mm_loadu_si128(a), _mm_loadu_si128(bb));
                        emit4(out, mask >> 4, _mm_loadu_si128(a.add(1)), _mm_loadu_si128(bb.add(1)));
                    }
                }
                d += 1;
            }
            i += 16;
        }
    }

    /// AVX2, `f32` columns tested on the grid (every row at home, the grid
    /// columns filled in layout `GRID`, see [`super::Quant::kind`]): what
    /// [`avx512_f32`] does with a grid, a group of 16 rows as two octets,
    /// the hits of a lane found by comparing it with zero. The same pairs in
    /// the same order.
    #[target_feature(enable = "avx2,popcnt")]
    pub(crate) unsafe fn avx2_grid<const GRID: u8>(b: &Soa<f32>, rows: Range<usize>, out: &mut Vec<Pair>) {
        let (ql, qh) = (b.qlo.as_ptr(), b.qhi.as_ptr());
        let (lo, hi, idp) = (b.lo.as_ptr(), b.hi.as_ptr(), b.id.as_ptr());
        // Pairs of steps of a run with grid hits, see [`grid_run`].
        let mut recs: Vec<u64> = Vec::new();
        let zero = _mm256_setzero_si256();
        let mut i = rows.start;
        while i < rows.end {
            let live = (1u32 << (rows.end - i).min(16)) - 1;
            let mut vhi = [_mm256_setzero_ps(); 2];
            let mut rql = [zero; 2];
            let mut rqh = [zero; 2];
            for h in 0..2 {
                let r = i + 8 * h;
                vhi[h] = _mm256_loadu_ps(hi.add(r));
                rql[h] = _mm256_loadu_si256(ql.add(r) as *const __m256i);
                rqh[h] = _mm256_loadu_si256(qh.add(r) as *const __m256i);
            }
            // The lanes whose row `r` overlaps row `r + j - i` on the grid.
            let grid = |j: usize| {
                let mut m = 0;
                for h in 0..2 {
                    let a = _mm256_loadu_si256(ql.add(j + 8 * h) as *const __m256i);
                    let d = if GRID == 8 {
                        // See `Quant::pack`: the row's `qhi` holds its ends
                        // and its starts' complements.
                        _mm256_subs_epu8(a, rqh[h])
                    } else if GRID == 1 {
                        _mm256_subs_epu16(a, rqh[h])
                    } else {
                        let b = _mm256_subs_epu16(rql[h], _mm256_loadu_si256(qh.add(j + 8 * h) as *const __m256i));
                        _mm256_or_si256(_mm256_subs_epu16(a, rqh[h]), b)
                    };
                    let z = _mm256_castsi256_ps(_mm256_cmpeq_epi32(d, zero));
                    m |= (_mm256_movemask_ps(z) as u32) << (8 * h);
                }
                m
            };
            // The pairs of the lanes `ok` of step `j - i`, four at a time.
            let emit = |out: &mut Vec<Pair>, ok: u32, j: usize| {
                out.reserve(16);
                for q in 0..4 {
                    let m = (ok >> (4 * q)) & 15;
                    if m != 0 {
                        let a = _mm_loadu_si128(idp.add(i + 4 * q) as *const __m128i);
                        emit4(out, m, a, _mm_loadu_si128(idp.add(j + 4 * q) as *const __m128i));
                    }
                }
            };
            let safe = super::safe_depth(&b.lo, &b.hi, i..i + (rows.end - i).min(16), b.len);
            let mut d = grid_run(&mut recs, i, safe, idp, out, |j| grid(j) & live, emit);
            loop {
                let j = i + d;
                let mut within = 0;
                for (h, &end) in vhi.iter().enumerate() {
                    let c = _mm256_cmp_ps::<_CMP_LE_OQ>(_mm256_loadu_ps(lo.add(j + 8 * h)), end);
                    within |= (_mm256_movemask_ps(c) as u32) << (8 * h);
                }
                within &= live;
                if within == 0 {
                    break;
                }
                let ok = grid(j) & within;
                if ok != 0 {
                    emit(out, ok, j);
                }
                d += 1;
            }
            i += 16;
        }
    }

    /// The steps `1..safe` of the group of 16 rows at `i` on the grid, for
    /// the AVX2 and AVX-512 kernels alike. `lanes(j)` gives the lanes of
    /// step `j - i` with a grid hit. The steps with a hit (a few percent) are
    /// noted without a branch and emitted after the run: a branch per step
    /// on them mispredicted and made the run wait on every hit (AVX-512,
    /// uniform, 1e4: 0.9-1.0 -> 0.66 ms). Two steps per record, `d << 32 |
    /// lanes(d + 1) << 16 | lanes(d)`; records with at most four hits
    /// (nearly all) are emitted pair by pair in the order of the bits (step,
    /// then lane), the others by `emit(out, lanes, j)`. Returns the first
    /// step not taken (an odd last one is left to the caller).
    #[inline(always)]
    unsafe fn grid_run(
        recs: &mut Vec<u64>,
        i: usize,
        safe: usize,
        idp: *const u32,
        out: &mut Vec<Pair>,
        mut lanes: impl FnMut(usize) -> u32,
        mut emit: impl FnMut(&mut Vec<Pair>, u32, usize),
    ) -> usize {
        let mut d = 1;
        recs.clear();
        recs.reserve(safe / 2);
        let p = recs.as_mut_ptr();
        let mut n = 0;
        while d < safe {
            let g = lanes(i + d) | (lanes(i + d + 1) << 16);
            // SAFETY: at most `safe / 2` records, all reserved.
            p.add(n).write(((d as u64) << 32) | g as u64);
            n += usize::from(g != 0);
            d += 2;
        }
        // SAFETY: the first `n` records were written.
        recs.set_len(n);
        for &r in recs.iter() {
            let j = i + (r >> 32) as usize;
            let mut m = r as u32;
            if m.count_ones() <= 4 {
                while m != 0 {
                    let k = m.trailing_zeros() as usize;
                    let (lane, step) = (k & 15, k >> 4);
                    out.push(Pair::ordered(*idp.add(i + lane), *idp.add(j + step + lane)));
                    m &= m - 1;
                }
            } else {
                for (k, g) in [(0, m & 0xFFFF), (1, m >> 16)] {
                    if g != 0 {
                        emit(out, g, j + k);
                    }
                }
            }
        }
        d
    }

    /// The pairs `(a[l], b[l])` (ordered) of 8 lanes, as 8 `u64`s.
    #[inline(always)]
    unsafe fn pairs8(a: __m256i, b: __m256i) -> __m512i {
        let mn = _mm512_cvtepu32_epi64(_mm256_min_epu32(a, b));
        let mx = _mm512_cvtepu32_epi64(_mm256_max_epu32(a, b));
        _mm512_or_si512(mn, _mm512_slli_epi64::<32>(mx))
    }

    /// The steps of a run that found hits, noted without a branch (the
    /// write always happens, the count advances by whether there was a hit)
    /// and emitted in order when the buffer fills and at the end of the run:
    /// a branch per step on its hits mispredicted wherever a few percent or
    /// more of the steps hit.
    struct Noted {
        /// `d << 16 | lanes`.
        steps: [u64; 64],
        n: usize,
    }

    impl Noted {
        fn new() -> Self {
            Self { steps: [0; 64], n: 0 }
        }

        /// Notes step `d` with the hit lanes `mask` (emitting what is noted
        /// first when full).
        #[inline(always)]
        fn note(&mut self, d: usize, mask: u32, emit: &mut impl FnMut(u32, usize)) {
            if self.n == self.steps.len() {
                self.flush(emit);
            }
            self.steps[self.n] = ((d as u64) << 16) | mask as u64;
            self.n += usize::from(mask != 0);
        }

        /// Emits the noted steps, `emit(lanes, d)`, in order.
        #[inline(always)]
        fn flush(&mut self, emit: &mut impl FnMut(u32, usize)) {
            for &r in &self.steps[..self.n] {
                emit(r as u32 & 0xFFFF, (r >> 16) as usize);
            }
            self.n = 0;
        }
    }

    /// AVX-512, `f64`: a group of 8 rows in one register.
    #[target_feature(enable = "avx512f,avx512vl,avx2,popcnt")]
    pub(crate) unsafe fn avx512_f64(b: &Soa<f64>, rows: Range<usize>, out: &mut Vec<Pair>) {
        let (lo, hi, c0, c1, c2, c3) =
            (b.lo.as_ptr(), b.hi.as_ptr(), b.c[0].as_ptr(), b.c[1].as_ptr(), b.c[2].as_ptr(), b.c[3].as_ptr());
        let (idp, homep) = (b.id.as_ptr(), b.home.as_ptr());
        let both = _mm256_set1_epi32(b.both as i32);
        // The sign bits flipped by an integer xor: `_mm512_xor_pd` needs
        // AVX-512DQ, which this function does not enable, and would be
        // called, not inlined.
        let neg = _mm512_set1_epi64(i64::MIN);
        let flip = |x: __m512d| _mm512_castsi512_pd(_mm512_xor_si512(_mm512_castpd_si512(x), neg));
        let mut noted = Noted::new();
        let mut i = rows.start;
        while i < rows.end {
            let live: __mmask8 = ((1u32 << (rows.end - i).min(8)) - 1) as u8;
            let vhi = _mm512_loadu_pd(hi.add(i));
            let q0 = flip(_mm512_loadu_pd(c2.add(i)));
            let q1 = flip(_mm512_loadu_pd(c3.add(i)));
            let q2 = flip(_mm512_loadu_pd(c0.add(i)));
            let q3 = flip(_mm512_loadu_pd(c1.add(i)));
            let home = _mm256_loadu_si256(homep.add(i) as *const __m256i);
            let ids = _mm256_loadu_si256(idp.add(i) as *const __m256i);
            let emit = |out: &mut Vec<Pair>, ok: __mmask8, j: usize| {
                out.reserve(8);
                let p = pairs8(ids, _mm256_loadu_si256(idp.add(j) as *const __m256i));
                let len = out.len();
                // PERF: compress in a register, then a full store (the
                // room is reserved): a compressing store to memory is
                // microcoded on AMD Zen 4, dozens of cycles each.
                _mm512_storeu_epi64(out.as_mut_ptr().add(len) as *mut i64, _mm512_maskz_compress_epi64(ok, p));
                out.set_len(len + ok.count_ones() as usize);
            };
            let cross = |ok: __mmask8, j: usize| {
                let mut ok = _mm512_mask_cmp_pd_mask::<_CMP_LE_OQ>(ok, _mm512_loadu_pd(c0.add(j)), q0);
                ok = _mm512_mask_cmp_pd_mask::<_CMP_LE_OQ>(ok, _mm512_loadu_pd(c1.add(j)), q1);
                ok = _mm512_mask_cmp_pd_mask::<_CMP_LE_OQ>(ok, _mm512_loadu_pd(c2.add(j)), q2);
                _mm512_mask_cmp_pd_mask::<_CMP_LE_OQ>(ok, _mm512_loadu_pd(c3.add(j)), q3)
            };
            let mut hits = |mask: u32, d: usize| emit(out, mask as u8, i + d);
            let mut d = 1;
            loop {
                let j = i + d;
                let within = _mm512_mask_cmp_pd_mask::<_CMP_LE_OQ>(live, _mm512_loadu_pd(lo.add(j)), vhi);
                if within == 0 {
                    break;
                }
                let hj = _mm256_loadu_si256(homep.add(j) as *const __m256i);
                let ok = _mm256_mask_cmpeq_epi32_mask(cross(within, j), _mm256_or_si256(hj, home), both);
                noted.note(d, ok as u32, &mut hits);
                d += 1;
            }
            noted.flush(&mut hits);
            i += 8;
        }
    }

    /// AVX-512, `f32`: a group of 16 rows in one register. With `GRID` 16,
    /// 8 or 1 (every row at home, the grid columns filled in that layout,
    /// see [`super::Quant::kind`], instead of the cross-axis ones) the cross axes
    /// are tested on the grid (16: two saturating subtractions, an or, one
    /// test; 8 and 1: one subtraction, one test), as the portable kernel
    /// does.
    #[target_feature(enable = "avx512f,avx512vl,avx512bw,avx2,popcnt")]
    pub(crate) unsafe fn avx512_f32<const LONG: bool, const GRID: u8>(
        b: &Soa<f32>,
        rows: Range<usize>,
        out: &mut Vec<Pair>,
    ) {
        let (ql, qh) = (b.qlo.as_ptr(), b.qhi.as_ptr());
        // Pairs of steps of a run with grid hits (see [`grid_run`]).
        let mut recs: Vec<u64> = Vec::new();
        let mut noted = Noted::new();
        let (lo, hi, c0, c1, c2, c3) =
            (b.lo.as_ptr(), b.hi.as_ptr(), b.c[0].as_ptr(), b.c[1].as_ptr(), b.c[2].as_ptr(), b.c[3].as_ptr());
        let (idp, homep) = (b.id.as_ptr(), b.home.as_ptr());
        let both = _mm512_set1_epi32(b.both as i32);
        // As in the f64 kernel: `_mm512_xor_ps` needs AVX-512DQ.
        let neg = _mm512_set1_epi32(i32::MIN);
        let flip = |x: __m512| _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(x), neg));
        let mut i = rows.start;
        while i < rows.end {
            let live: __mmask16 = ((1u32 << (rows.end - i).min(16)) - 1) as u16;
            let vhi = _mm512_loadu_ps(hi.add(i));
            // With a grid the cross-axis columns are not filled.
            let row = |c: *const f32| if GRID == 0 { flip(_mm512_loadu_ps(c.add(i))) } else { _mm512_setzero_ps() };
            let (q0, q1, q2, q3) = (row(c2), row(c3), row(c0), row(c1));
            let home = _mm512_loadu_si512(homep.add(i) as *const __m512i);
            let ids = _mm512_loadu_si512(idp.add(i) as *const __m512i);
            let (rql, rqh) = if GRID != 0 {
                (_mm512_loadu_si512(ql.add(i) as *const __m512i), _mm512_loadu_si512(qh.add(i) as *const __m512i))
            } else {
                (_mm512_setzero_si512(), _mm512_setzero_si512())
            };
            let grid = |m: __mmask16, j: usize| {
                let a = _mm512_loadu_si512(ql.add(j) as *const __m512i);
                let d = if GRID == 8 {
                    // See `Quant::pack`: the row's `qhi` holds its ends and
                    // its starts' complements.
                    _mm512_subs_epu8(a, rqh)
                } else if GRID == 1 {
                    _mm512_subs_epu16(a, rqh)
                } else {
                    let b = _mm512_subs_epu16(rql, _mm512_loadu_si512(qh.add(j) as *const __m512i));
                    _mm512_or_si512(_mm512_subs_epu16(a, rqh), b)
                };
                _mm512_mask_testn_epi32_mask(m, d, d)
            };
            let emit = |out: &mut Vec<Pair>, ok: __mmask16, j: usize| {
                out.reserve(16);
                let other = _mm512_loadu_si512(idp.add(j) as *const __m512i);
                let len = out.len();
                let dst = out.as_mut_ptr().add(len) as *mut i64;
                let (lo8, hi8) = ((ok & 255) as u8, (ok >> 8) as u8);
                let p0 = pairs8(_mm512_castsi512_si256(ids), _mm512_castsi512_si256(other));
                // PERF: compressed in registers, stored whole (16 pairs of
                // room reserved): see the f64 kernel.
                _mm512_storeu_epi64(dst, _mm512_maskz_compress_epi64(lo8, p0));
                let n0 = lo8.count_ones() as usize;
                let p1 = pairs8(_mm512_extracti64x4_epi64::<1>(ids), _mm512_extracti64x4_epi64::<1>(other));
                _mm512_storeu_epi64(dst.add(n0), _mm512_maskz_compress_epi64(hi8, p1));
                out.set_len(len + n0 + hi8.count_ones() as usize);
            };
            let cross = |ok: __mmask16, j: usize| {
                let mut ok = _mm512_mask_cmp_ps_mask::<_CMP_LE_OQ>(ok, _mm512_loadu_ps(c0.add(j)), q0);
                ok = _mm512_mask_cmp_ps_mask::<_CMP_LE_OQ>(ok, _mm512_loadu_ps(c1.add(j)), q1);
                ok = _mm512_mask_cmp_ps_mask::<_CMP_LE_OQ>(ok, _mm512_loadu_ps(c2.add(j)), q2);
                _mm512_mask_cmp_ps_mask::<_CMP_LE_OQ>(ok, _mm512_loadu_ps(c3.add(j)), q3)
            };
            let mut d = 1;
            if LONG {
                let safe = super::safe_depth(&b.lo, &b.hi, i..i + (rows.end - i).min(16), b.len);
                if GRID != 0 {
                    d = grid_run(
                        &mut recs,
                        i,
                        safe,
                        idp,
                        out,
                        |j| grid(live, j) as u32,
                        |out, g, j| emit(out, g as u16, j),
                    );
                } else {
                    while d <= safe {
                        let ok = cross(live, i + d);
                        if ok != 0 {
                            emit(out, ok, i + d);
                        }
                        d += 1;
                    }
                }
                loop {
                    let j = i + d;
                    let within = _mm512_mask_cmp_ps_mask::<_CMP_LE_OQ>(live, _mm512_loadu_ps(lo.add(j)), vhi);
                    if within == 0 {
                        break;
                    }
                    // Every row at home: the steps past the safe depth, few.
                    let ok = if GRID != 0 { grid(within, j) } else { cross(within, j) };
                    if ok != 0 {
                        emit(out, ok, j);
                    }
                    d += 1;
                }
            } else {
                // The grid's cells, where a third or more of the steps hit:
                // their hits are `Noted` (duplicated boxes at 1e4 20-25%
                // faster than a branch per step, uniform ones at 1e6
                // 10-20%, at 1e4-1e5 within the noise).
                let mut hits = |mask: u32, d: usize| emit(out, mask as u16, i + d);
                loop {
                    let j = i + d;
                    let within = _mm512_mask_cmp_ps_mask::<_CMP_LE_OQ>(live, _mm512_loadu_ps(lo.add(j)), vhi);
                    if within == 0 {
                        break;
                    }
                    let hj = _mm512_loadu_si512(homep.add(j) as *const __m512i);
                    let ok = _mm512_mask_cmpeq_epi32_mask(cross(within, j), _mm512_or_si512(hj, home), both);
                    noted.note(d, ok as u32, &mut hits);
                    d += 1;
                }
                noted.flush(&mut hits);
            }
            i += 16;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::Axes;
    use crate::Aabb;

    /// Every SIMD level reports the portable kernel's pairs, in its order,
    /// over any range of rows starting on a group boundary.
    fn check<S: Scalar>(to: impl Fn(f64) -> S) {
        let mut s = crate::Lcg::new(3);
        for n in [0usize, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 40, 200, 1000] {
            for spread in [0.05, 0.5, 3.0, 20.0] {
                let axes = Axes::new(3, 0);
                let mut boxes: Vec<Aabb<S, 3>> = (0..n)
                    .map(|_| {
                        let p: [f64; 3] = core::array::from_fn(|_| (s.unit() * spread * 4.0).round() / 4.0);
                        let w: [f64; 3] = core::array::from_fn(|_| (s.unit() * 4.0).round() / 4.0);
                        Aabb::new(p.map(&to), core::array::from_fn(|k| to(p[k] + w[k]))).unwrap()
                    })
                    .collect();
                boxes.sort_by(|a, b| a.min()[0].partial_cmp(&b.min()[0]).unwrap());
                let entries: Vec<Entry<S>> =
                    boxes.iter().enumerate().map(|(i, b)| Entry::new(b, &axes, i as u32)).collect();
                // Random home flags, every box at home as sort-and-sweep
                // has them (the kernels' long-run path), and random home
                // flags with random sides (a bipartite search).
                for (all_home, sides) in [(false, false), (true, false), (false, true)] {
                    let homes: Vec<u32> =
                        (0..n).map(|_| if all_home { HOME_BOTH } else { (s.unit() * 4.0) as u32 }).collect();
                    let side: Vec<u32> = (0..n).map(|_| if s.unit() < 0.5 { SIDE_A } else { SIDE_B }).collect();
                    let mut buf = Soa::new();
                    buf.fill_with(n, |k| (&entries[k], homes[k]));
                    buf.all_home = all_home;
                    let mut expect = Vec::new();
                    sweep_portable(&buf, 0..n, &mut expect);
                    if sides {
                        // The pairs of the home flags alone, of two sides.
                        expect.retain(|p| side[p.a() as usize] != side[p.b() as usize]);
                        buf.fill_with(n, |k| (&entries[k], homes[k] | side[k]));
                        buf.both = CROSS_BOTH;
                        let mut got = Vec::new();
                        sweep_portable(&buf, 0..n, &mut got);
                        assert_eq!(got, expect, "n={n} spread={spread}: the portable kernel with sides");
                    }
                    // Both ways of emitting (the `f64` AVX2 kernel's).
                    for (simd, branchless) in Simd::all().into_iter().flat_map(|s| [(s, false), (s, true)]) {
                        buf.branchless = branchless;
                        let mut got = Vec::new();
                        sweep_rows(&buf, 0..n, simd, &mut got);
                        assert_eq!(got, expect, "n={n} spread={spread} {simd:?} branchless={branchless}");
                        // Pieces starting on group boundaries give the same output.
                        let mut pieces = Vec::new();
                        let cut = (n / 2) / S::GROUP * S::GROUP;
                        sweep_rows(&buf, 0..cut, simd, &mut pieces);
                        sweep_rows(&buf, cut..n, simd, &mut pieces);
                        assert_eq!(pieces, expect, "n={n} spread={spread} {simd:?} in pieces");
                        // Rows ending off a group boundary: the pairs of the
                        // rows before the end alone (row r holds box r).
                        let end = n.saturating_sub(1 + n / 3);
                        let mut head = Vec::new();
                        sweep_rows(&buf, 0..end, simd, &mut head);
                        let want: Vec<Pair> = expect.iter().copied().filter(|p| (p.a() as usize) < end).collect();
                        assert_eq!(head, want, "n={n} spread={spread} {simd:?} rows to {end}");
                    }
                }
            }
        }
    }

    /// The grid test (every layout, whatever the runs' length): every
    /// kernel gives the portable kernel's pairs in its order, and those
    /// tested again are the exact pairs, in the order the kernels give
    /// without a grid; with fitted grids and with coarse ones that clamp
    /// coordinates (many grid hits the exact test rejects), from `f64`
    /// boxes (rounded outward) and `f32` ones.
    fn check_quantized<T: Scalar>(to: impl Fn(f64) -> T) {
        let mut s = crate::Lcg::new(5);
        for n in [0usize, 1, 2, 5, 16, 17, 33, 200, 1000, 3000] {
            for spread in [0.05, 0.5, 3.0, 20.0] {
                let axes = Axes::new(3, 0);
                let boxes: Vec<Aabb<T, 3>> = (0..n)
                    .map(|_| {
                        let p: [f64; 3] = core::array::from_fn(|_| (s.unit() * spread * 4.0).round() / 4.0 - 1.0);
                        let w: [f64; 3] = core::array::from_fn(|_| (s.unit() * 4.0).round() / 4.0);
                        Aabb::new(p.map(&to), core::array::from_fn(|k| to(p[k] + w[k]))).unwrap()
                    })
                    .collect();
                let mut keys: Vec<u64> = (0..n as u32).map(|i| crate::sort::keyed(0, i)).collect();
                keys.sort_by(|&a, &b| {
                    let (x, y) = (&boxes[crate::sort::payload(a) as usize], &boxes[crate::sort::payload(b) as usize]);
                    x.min()[0].partial_cmp(&y.min()[0]).unwrap().then(a.cmp(&b))
                });
                let coarse = |top, one| Quant { origin: [0.5, -3.0], scale: [0.7, 3.0], top, one };
                // The fitted grid, in 16 bits also when it fits in 8, and on
                // its first axis alone (as for 2D boxes).
                let fit = Quant::fit(&boxes, &axes);
                let fit16 = fit.map(|q| Quant { scale: q.scale.map(|s| s * 65535.0 / q.top as f64), top: 65535, ..q });
                let fit1 = fit16.map(|q| Quant { one: true, ..q });
                let overlap = |p: &Pair| boxes[p.a() as usize].overlaps(&boxes[p.b() as usize]);
                let mut plain = Soa::<f32>::new();
                plain.fill_sorted(&boxes, &keys, &axes, false, T::column_lower, T::column_upper, None);
                let mut exact = Vec::new();
                sweep_portable(&plain, 0..n, &mut exact);
                exact.retain(overlap);
                let coarse = [coarse(65535, false), coarse(255, false), coarse(65535, true)];
                for quant in [fit, fit16, fit1].into_iter().flatten().chain(coarse) {
                    let mut buf = Soa::<f32>::new();
                    buf.fill_sorted(&boxes, &keys, &axes, false, T::column_lower, T::column_upper, Some(&quant));
                    assert_eq!(buf.grid, quant.kind());
                    let mut expect = Vec::new();
                    sweep_portable(&buf, 0..n, &mut expect);
                    // The grid's pairs, tested again, are the exact pairs in
                    // the columns' order.
                    let mut kept = expect.clone();
                    kept.retain(overlap);
                    assert_eq!(kept, exact, "n={n} spread={spread} {quant:?}");
                    for simd in Simd::all() {
                        let mut got = Vec::new();
                        sweep_rows(&buf, 0..n, simd, &mut got);
                        assert_eq!(got, expect, "n={n} spread={spread} {quant:?} {simd:?}");
                        let mut pieces = Vec::new();
                        let cut = (n / 2) / 16 * 16;
                        sweep_rows(&buf, 0..cut, simd, &mut pieces);
                        sweep_rows(&buf, cut..n, simd, &mut pieces);
                        assert_eq!(pieces, expect, "n={n} spread={spread} {quant:?} {simd:?} in pieces");
                    }
                }
            }
        }
    }

    /// The names `BROADPHASE_SIMD` takes, in any case; anything else is
    /// no level (the CPU's own then stands).
    #[test]
    fn simd_levels_by_name() {
        assert_eq!(Simd::named("portable"), Some(Simd::Portable));
        #[cfg(target_arch = "x86_64")]
        {
            assert_eq!(Simd::named("AVX2"), Some(Simd::Avx2));
            assert_eq!(Simd::named("avx512"), Some(Simd::Avx512));
            assert!(Simd::Portable < Simd::Avx2 && Simd::Avx2 < Simd::Avx512, "levels cap by order");
        }
        for bad in ["", "sse2", "avx", "neon", "fast"] {
            assert_eq!(Simd::named(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn quantized_kernel_matches_portable() {
        check_quantized::<f64>(|v| v);
        check_quantized::<f32>(|v| v as f32);
    }

    #[test]
    fn simd_matches_portable_f64() {
        check::<f64>(|v| v);
    }

    #[test]
    fn simd_matches_portable_f32() {
        check::<f32>(|v| v as f32);
    }

    /// `lower_f32` is the largest `f32` at or below the value and
    /// `upper_f32` the smallest at or above (clamped to the finite range),
    /// across signs, zeros, subnormals, exact `f32` values and the limits.
    #[test]
    fn rounding_outward_to_f32() {
        let mut s = crate::Lcg::new(11);
        let mut values = vec![
            0.0,
            -0.0,
            f64::MIN_POSITIVE,
            -f64::MIN_POSITIVE,
            1e-46,
            -1e-46,
            f32::MAX as f64,
            -(f32::MAX as f64),
            3.5e38,
            -3.5e38,
            1e300,
            -1e300,
            f64::MAX,
            f64::MIN,
        ];
        for e in -60..60 {
            let m = s.unit() * 2.0 - 1.0;
            let v = m * 2f64.powi(e * 2);
            values.extend([v, v as f32 as f64, (v as f32 as f64) * (1.0 + f64::EPSILON)]);
        }
        for &v in &values {
            let (lo, hi) = (lower_f32(v), upper_f32(v));
            assert!((lo as f64) <= v && lo.next_up() as f64 > v, "lower {v:e}: {lo:e}");
            if v <= f32::MAX as f64 {
                assert!((hi as f64) >= v && (hi.next_down() as f64) < v, "upper {v:e}: {hi:e}");
            } else {
                assert_eq!(hi, f32::MAX, "upper {v:e} clamps");
            }
        }
    }
}
