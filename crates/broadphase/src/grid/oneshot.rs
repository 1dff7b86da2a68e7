//! One-shot grid, complete and bipartite.

use super::build::build;
use super::kernel::{Simd, Soa, HOME_Y, HOME_Z, POSITION};
use crate::pair::OutPair;
use crate::par;
use crate::sap::oneshot as sap;
use crate::stats::Profile;
use crate::sweep::{Axes, Entry};
use crate::workspace::{Side, Workspace};
use crate::{Aabb, CrossPair, Pair, Scalar};

/// The cell size is this quantile of the sampled extents on each cross axis,
/// times [`CELL_SCALE`]: boxes up to that size span at most two cells; the
/// larger ones that span three or more are handled as oversized.
const CELL_QUANTILE: f64 = 0.9;
/// Cells twice the typical box where boxes fill their bounds (see
/// [`cell_scale`] for thinner sets): about 2.25 copies per box, and the SIMD
/// kernel absorbs the extra candidates (measured: instructions per box are
/// flat from 2 to 3, and 10% higher at 1.5).
const CELL_SCALE: f64 = 2.0;
/// The largest cell scale, for thinly filled bounds (see [`cell_scale`]).
const CELL_SCALE_MAX: f64 = 3.5;
/// The cover from which cells are [`CELL_SCALE`] times the typical extent
/// (see [`cell_scale`]).
const DENSE_COVER: f64 = 0.75;
/// In 2D, the cell scale is `sqrt(STRIP_COVER / cover)` (see [`cell_scale`]).
const STRIP_COVER: f64 = 12.0;
/// At most this many cells per box (sparse or clustered sets get larger cells).
const CELLS_PER_BOX: f64 = 0.5;
/// Never more cells than this: cell indices and list flags share 32 bits.
const MAX_CELLS: u64 = 1 << 22;
/// Cells per parallel piece, at most ...
const PIECE_CELLS: usize = 128;
/// ... and boxes per piece at most about this many, so that large sets
/// over few cells (a 2D grid of a million boxes has 576 columns) still cut
/// into enough pieces to keep many threads busy.
const PIECE_BOXES: usize = 4096;

/// The pieces of a sweep over `ncells` cells holding `boxes` boxes.
fn sweep_pieces(ncells: usize, boxes: usize) -> usize {
    par::piece_count(ncells, PIECE_CELLS).max((boxes / PIECE_BOXES).min(ncells))
}

/// Room kept in the output before each cell's sweep (see [`crate::mem::spare`]).
pub(super) const OUT_SPARE: usize = 1 << 12;

/// Most boxes the grid takes (a list element holds a position in
/// `entries` beside the two home flags).
pub(crate) const MAX_GRID_BOXES: usize = (POSITION as usize) - MAX_CELLS as usize - 1;

/// The AVX2 `f64` kernel emits its hits without a branch on them when the
/// share of the lanes it tested that hit lies in this range (see
/// [`Soa::branchless`]): then whether a quad of rows has a hit is close to
/// a coin toss, and a branch on it mispredicts. Lane hit rates measured at
/// 1e5 boxes (the cells' mean): uniform 0.13-0.14, duplicates 0.19-0.20,
/// guillotine 0.20, clustered 0.23-0.24, degenerate 0.27, heavy-tailed
/// 0.26-0.29, all 15-30% faster without the branch (duplicates 5-10%
/// slower); a lattice of touching cubes 0.37-0.42 and sticks (one cell of
/// long runs, nearly no hits) 0.00, where the branch predicts well (10-20%
/// and 2.4x slower without it).
const BRANCHLESS_RATES: (f64, f64) = (0.08, 0.33);
/// Lanes tested before the rate is trusted (the first cells of a piece
/// branch).
const BRANCHLESS_EVIDENCE: f64 = 64.0;
/// The weight of the rate so far at each new cell.
const RATE_DECAY: f64 = 0.875;

/// `info` of an oversized box.
pub(super) const OVERSIZED: u32 = u32::MAX;
/// The most cells past its home cell that a listed box reaches on a cross
/// axis; boxes reaching further are oversized.
pub(super) const MAX_SPAN: u32 = 7;
/// `info`: the home cell in the low bits (below [`MAX_CELLS`]), then how
/// many cells past it the box reaches on each cross axis (3 bits each).
pub(super) const HOME: u32 = (1 << SPAN_Y_SHIFT) - 1;
const SPAN_Y_SHIFT: u32 = 22;
const SPAN_Z_SHIFT: u32 = 25;
/// The 3 bits of a span.
const SPAN_BITS: u32 = 7;
const _: () = assert!(MAX_CELLS <= 1 << SPAN_Y_SHIFT && MAX_SPAN <= SPAN_BITS);

/// How many cells past its home a placed (not oversized) box reaches on
/// each cross axis.
#[inline(always)]
pub(super) fn spans(info: u32) -> (u32, u32) {
    ((info >> SPAN_Y_SHIFT) & SPAN_BITS, (info >> SPAN_Z_SHIFT) & SPAN_BITS)
}

/// The geometry of a grid: which axes are cut, where, and how finely.
#[derive(Clone, Debug)]
pub(crate) struct Layout {
    pub axes: Axes,
    origin: [f64; 2],
    inv: [f64; 2],
    /// The last cell index on each cross axis, as `f64` for clamping.
    top: [f64; 2],
    pub(super) cells: [u32; 2],
    /// For inexact keys (`f64`): the sweep-axis start that maps to key 0 and
    /// the keys per unit, spreading the sampled range over all 32 bits.
    key: Option<(f64, f64)>,
}

/// The largest sweep key of a listed box (`u32::MAX` marks the oversized).
const KEY_TOP: f64 = (u32::MAX - 1) as f64;
/// The bits of a row's sort keys (see [`Layout::row_key`]).
const ROW_KEY_BITS: u32 = 22;
const ROW_KEY_TOP: f64 = ((1u32 << ROW_KEY_BITS) - 1) as f64;
const ROW_KEY_SCALE: f64 = ROW_KEY_TOP / KEY_TOP;

/// The cell size over the typical extent, from the cover (the boxes' count
/// times the volume of a box of the typical extents, over the bounds'
/// volume), within [`CELL_SCALE`] and [`CELL_SCALE_MAX`]: in 3D
/// `CELL_SCALE` where the cover is [`DENSE_COVER`] or more, larger in
/// proportion as it thins out; in 2D `sqrt(STRIP_COVER / cover)`.
///
/// Why these forms: a box is copied into about `(1 + e/s)^(D-1)` cells of
/// side `s` (`e` its extent), and meets on the sweep axis about
/// `rho (s + e)^(D-1) e` of their boxes (`rho` boxes per volume): the cost
/// `a` per copy and `b` per candidate is least at `s^2 = a / (b rho)` in 2D
/// (whatever `e`), at `s^3 = a / (b rho)` in 3D. The measured best scales
/// give `a / b` of about 12 in 2D and 16 in 3D; in 3D the denser scenes
/// (lattice, heavy-tailed) lost 1-7% at the scale that form gives (2.5-2.75),
/// so 3D keeps 2 there and grows linearly below.
///
/// PERF: the grid's time against the cell scale, per scene, best of 10-150
/// runs, one thread: uniform 3D (cover 3/8) was fastest with cells 3 to 4
/// times the extent, where the scale 2 of denser sets (guillotine, lattice,
/// degenerate, heavy-tailed in 3D) is best or near it. With this rule
/// against the scale 2 everywhere, uniform 3D `f32` took 0.93, 0.91-0.92
/// and 0.92 of the time at 1e4, 1e5 and 1e6, `f64` 0.95-0.96, 0.93-0.94,
/// 0.95; clustered 3D (cover 1/4) `f32` 0.95-0.99, `f64` 1.00-1.02; the
/// other 3D scenes are unchanged within 1-3%. In 2D (uniform covers 3/4:
/// scale 3.5), against 2 everywhere, at 1e5 and 1e6: uniform `f32`
/// 0.88-0.90, `f64` 0.90-0.92, lattice 0.89-0.96, clustered 0.94-0.96,
/// heavy-tailed (scale 2.8) 0.96-1.01, the others 0.98-1.01; at 1e4 every
/// 2D scene 0.96-1.02.
fn cell_scale<const D: usize>(profile: &Profile<D>) -> f64 {
    let mut cover = profile.n as f64;
    for k in 0..D {
        let e = profile.extent_quantile(k, CELL_QUANTILE);
        let span = profile.hi[k] - profile.lo[k];
        if !(e > 0.0 && span > 0.0) {
            return CELL_SCALE;
        }
        cover *= e / span;
    }
    if !(cover.is_finite() && cover > 0.0) {
        return CELL_SCALE;
    }
    let scale = if D == 2 { (STRIP_COVER / cover).sqrt() } else { CELL_SCALE * DENSE_COVER / cover };
    scale.clamp(CELL_SCALE, CELL_SCALE_MAX)
}

impl Layout {
    /// Chooses the grid from the profile of the boxes (one set, or both
    /// sides of a bipartite search). `cell` overrides the cell size.
    ///
    /// The bounds come from the sample: boxes outside them fall into the
    /// border cells. That costs time, never correctness, which only needs
    /// the cell of a coordinate to be monotone in it.
    pub(crate) fn new<const D: usize>(profile: &Profile<D>, cell: Option<f64>) -> Self {
        let axes = Axes::new(D, profile.sweep_axis());
        let max_cells = ((profile.n as f64 * CELLS_PER_BOX) as u64).clamp(1, MAX_CELLS);
        // Cells per axis, so that their product stays within the budget.
        let per_axis_cap = match axes.distinct {
            0 | 1 => max_cells,
            _ => ((max_cells as f64).sqrt() as u64).max(1),
        };
        let scale = cell_scale(profile);
        let mut origin = [0.0; 2];
        let mut inv = [0.0; 2];
        let mut cells = [1u32; 2];
        // In 2D the second cross axis repeats the first: it keeps one cell.
        for (k, &axis) in axes.cross.iter().enumerate().take(axes.distinct) {
            let (lo, hi) = (profile.lo[axis], profile.hi[axis]);
            if lo.partial_cmp(&hi) != Some(core::cmp::Ordering::Less) {
                continue; // empty sample (infinite bounds) or no spread: one cell
            }
            let cap = per_axis_cap as f64;
            // Not finer than the budget allows (this also replaces a zero
            // size). Computed without overflow for spans beyond f64::MAX.
            let finest = hi / cap - lo / cap;
            let mut size = cell.unwrap_or_else(|| scale * profile.extent_quantile(axis, CELL_QUANTILE));
            if size.is_nan() || size < finest {
                size = finest;
            }
            let i = 1.0 / size;
            if !(i.is_finite() && i > 0.0) {
                continue;
            }
            let c = ((hi - lo) * i).ceil(); // +inf when the span overflows
            cells[k] = if c >= cap { per_axis_cap as u32 } else { (c as u32).max(1) };
            if cells[k] > 1 {
                origin[k] = lo;
                inv[k] = i;
            }
        }
        let (lo, hi) = (profile.lo[axes.sweep], profile.hi[axes.sweep]);
        let scale = 1.0 / (hi / KEY_TOP - lo / KEY_TOP);
        let key = (scale.is_finite() && scale > 0.0).then_some((lo, scale));
        Self { axes, origin, inv, top: [(cells[0] - 1) as f64, (cells[1] - 1) as f64], cells, key }
    }

    /// The sort key of a box starting at `x` on the sweep axis: monotone in
    /// `x`, below `u32::MAX`. Exact for `f32`. For `f64` the values the
    /// sample spans are spread linearly over the keys (rounding `f64`s to
    /// `f32`, as [`Scalar::sort_key`] does, gives many equal keys, each run
    /// of which must then be ordered by comparing the values).
    #[inline(always)]
    pub(super) fn sweep_key<S: Scalar>(&self, x: S) -> u32 {
        match self.key {
            Some((lo, scale)) if !S::KEY_IS_EXACT => ((x.to_f64() - lo) * scale).clamp(0.0, KEY_TOP) as u32,
            _ => x.sort_key(),
        }
    }

    /// The sort key of a box starting at `x` within a row (see
    /// `super::rows`): the values the sample spans spread linearly over
    /// [`ROW_KEY_BITS`] bits, so that a row's radix sort takes two passes,
    /// equal keys to be ordered by value (see [`Layout::row_key_exact`]);
    /// without a spread, [`Layout::sweep_key`].
    ///
    /// PERF: a row of 1e6 uniform boxes holds some 2e4, whose 22-bit keys
    /// rarely tie (about 50 pairs a row), where the exact 32-bit keys of
    /// `f32` took three passes. `Auto`, uniform, one thread, three rounds
    /// alternated, 1e6 boxes: 3D `f32` 39.2-40.0 -> 38.5-39.3 ms, 3D `f64`
    /// 52.0-59.7 -> 50.8-51.5, 2D `f32` 26.8-30.6 -> 26.3-28.4; 1e5 3D
    /// `f32` 3.81-3.87 -> 3.75-3.81.
    #[inline(always)]
    pub(super) fn row_key<S: Scalar>(&self, x: S) -> u32 {
        match self.key {
            Some((lo, scale)) => ((x.to_f64() - lo) * (scale * ROW_KEY_SCALE)).clamp(0.0, ROW_KEY_TOP) as u32,
            None => x.sort_key(),
        }
    }

    /// Whether [`Layout::row_key`] is exact (equal keys, equal values).
    pub(super) fn row_key_exact<S: Scalar>(&self) -> bool {
        self.key.is_none() && S::KEY_IS_EXACT
    }

    pub(super) fn cell_count(&self) -> usize {
        self.cells[0] as usize * self.cells[1] as usize
    }

    /// The cell index of `x` on cross axis `k`: monotone in `x` (each step
    /// is, rounding included; NaN from `inf * 0` and infinities from
    /// overflow clamp to the borders).
    #[inline(always)]
    fn cell(&self, k: usize, x: f64) -> u32 {
        let t = (x - self.origin[k]) * self.inv[k];
        t.max(0.0).min(self.top[k]) as u32
    }

    /// The cells of a box's min and max corners on the cross axes.
    #[inline(always)]
    pub(super) fn span<S: Scalar, const D: usize>(&self, b: &Aabb<S, D>) -> [(u32, u32); 2] {
        let [y, z] = self.axes.cross;
        let (lo, hi) = (b.min(), b.max());
        [
            (self.cell(0, lo[y].to_f64()), self.cell(0, hi[y].to_f64())),
            (self.cell(1, lo[z].to_f64()), self.cell(1, hi[z].to_f64())),
        ]
    }

    /// The cells of a box's min and max on the first cross axis alone.
    #[inline(always)]
    pub(super) fn span_first<S: Scalar, const D: usize>(&self, b: &Aabb<S, D>) -> (u32, u32) {
        let y = self.axes.cross[0];
        (self.cell(0, b.min()[y].to_f64()), self.cell(0, b.max()[y].to_f64()))
    }

    /// Where a box goes: its home cell (the cell of its min corner) and how
    /// many cells past it the box reaches on each cross axis, or
    /// [`OVERSIZED`] when that is more than [`MAX_SPAN`] on some axis.
    #[inline(always)]
    pub(super) fn place<S: Scalar, const D: usize>(&self, b: &Aabb<S, D>) -> u32 {
        let [(y0, y1), (z0, z1)] = self.span(b);
        let (dy, dz) = (y1 - y0, z1 - z0);
        if dy > MAX_SPAN || dz > MAX_SPAN {
            return OVERSIZED;
        }
        (y0 * self.cells[1] + z0) | (dy << SPAN_Y_SHIFT) | (dz << SPAN_Z_SHIFT)
    }

    /// The cells whose boxes an oversized box may overlap: on each cross
    /// axis from [`MAX_SPAN`] before the cell of its min to the cell of its
    /// max.
    fn reach<S: Scalar, const D: usize>(&self, b: &Aabb<S, D>) -> [(u32, u32); 2] {
        self.span(b).map(|(c0, c1)| (c0.saturating_sub(MAX_SPAN), c1))
    }

    /// The fraction of the sampled pairs that the grid would test: boxes
    /// overlapping on the sweep axis that share a cell, or where one is
    /// oversized and the other's home is within its reach. For `Auto`'s
    /// cost estimate.
    pub(crate) fn candidate_fraction<S: Scalar, const D: usize>(
        &self,
        sets: &[&[Aabb<S, D>]],
        m: usize,
        bipartite: bool,
    ) -> f64 {
        // A sampled box: its interval on the sweep axis, its cells on the
        // cross axes, whether it is oversized.
        type Sampled<S> = (S, S, [(u32, u32); 2], bool);
        let sample = |set: &[Aabb<S, D>]| -> Vec<Sampled<S>> {
            let mut v: Vec<Sampled<S>> = crate::stats::sample_indices(set.len(), m)
                .map(|i| {
                    let b = &set[i];
                    let span = self.span(b);
                    let big = span.iter().any(|&(c0, c1)| c1 - c0 > MAX_SPAN);
                    (b.min()[self.axes.sweep], b.max()[self.axes.sweep], span, big)
                })
                .collect();
            // By start: a pair overlaps on the sweep axis when the later
            // start lies in the earlier interval.
            v.sort_unstable_by(|x, y| x.0.partial_cmp(&y.0).unwrap_or(core::cmp::Ordering::Equal));
            v
        };
        // Whether the grid tests a pair that overlaps on the sweep axis.
        let tested = |x: &Sampled<S>, y: &Sampled<S>| {
            let reaches = |o: &[(u32, u32); 2], h: &[(u32, u32); 2]| {
                o.iter().zip(h).all(|(&(c0, c1), &(h0, h1))| h1 >= c0 && h0 <= c1)
            };
            match (x.3, y.3) {
                // Normal boxes meet in every cell both reach.
                (false, false) => x.2.iter().zip(&y.2).all(|(a, b)| a.0 <= b.1 && b.0 <= a.1),
                (true, false) => reaches(&x.2, &y.2),
                (false, true) => reaches(&y.2, &x.2),
                (true, true) => true,
            }
        };
        // The pairs of `x` with the boxes of `ys` (sorted by start, none
        // starting before `x`) that start within its interval: each pair
        // overlapping on the sweep axis once, from its earlier-starting
        // member.
        let within =
            |x: &Sampled<S>, ys: &[Sampled<S>]| ys.iter().take_while(|y| y.0 <= x.1).filter(|y| tested(x, y)).count();
        let (count, pairs) = if bipartite {
            let (sa, sb) = (sample(sets[0]), sample(sets[1]));
            // Ties of starts go to the pairs counted from `sa`.
            let c = sa.iter().map(|x| within(x, &sb[sb.partition_point(|y| y.0 < x.0)..])).sum::<usize>()
                + sb.iter().map(|y| within(y, &sa[sa.partition_point(|x| x.0 <= y.0)..])).sum::<usize>();
            (c, sa.len() * sb.len())
        } else {
            let s = sample(sets[0]);
            let c = (0..s.len()).map(|i| within(&s[i], &s[i + 1..])).sum::<usize>();
            (c, s.len() * s.len().saturating_sub(1) / 2)
        };
        if pairs == 0 {
            0.0
        } else {
            count as f64 / pairs as f64
        }
    }
}

/// Computes `side.far`, needed when oversized boxes query its cells.
fn compute_far<S: Scalar>(layout: &Layout, side: &mut Side<S>) {
    let ncells = side.starts.len() - 1;
    let nz = layout.cells[1];
    side.far.clear();
    for c in 0..ncells {
        let cell = &side.entries[side.starts[c] as usize..side.starts[c + 1] as usize];
        // How far past this cell its boxes reach: the cells of their
        // largest ends (cells are monotone in the coordinate), read from
        // the entries in order rather than from `info` at random.
        let (my, mz) = cell.iter().fold((f64::NEG_INFINITY, f64::NEG_INFINITY), |(my, mz), e| {
            (my.max(-e.cross[2].to_f64()), mz.max(-e.cross[3].to_f64()))
        });
        let far = if cell.is_empty() {
            [0, 0]
        } else {
            let (cy, cz) = (c as u32 / nz, c as u32 % nz);
            [(layout.cell(0, my) - cy) as u8, (layout.cell(1, mz) - cz) as u8]
        };
        debug_assert!(cell.iter().all(|e| {
            let (y, z) = spans(side.info[e.id as usize]);
            y <= far[0] as u32 && z <= far[1] as u32
        }));
        side.far.push(far);
    }
}

/// The list of cell `c`: positions with flags, ending with the sentinel.
#[inline]
fn list<S>(side: &Side<S>, c: usize) -> &[u32] {
    &side.lists[side.list_starts[c] as usize..side.list_starts[c + 1] as usize]
}

/// Pairs between cell `c`'s lists of two sets (merged by start, the first
/// set first on ties), with the same reference-cell rule.
fn sweep_two_lists<S: Scalar>(ea: &[Entry<S>], la: &[u32], eb: &[Entry<S>], lb: &[u32], out: &mut Vec<CrossPair>) {
    let (na, nb) = (la.len() - 1, lb.len() - 1);
    let (mut i, mut j) = (0, 0);
    while i < na && j < nb {
        let (x, y) = (&ea[(la[i] & POSITION) as usize], &eb[(lb[j] & POSITION) as usize]);
        if x.lo <= y.lo {
            scan_list(x, la[i], eb, &lb[j..], |other| out.push(CrossPair { a: x.id, b: other }));
            i += 1;
        } else {
            scan_list(y, lb[j], ea, &la[i..], |other| out.push(CrossPair { a: other, b: y.id }));
            j += 1;
        }
    }
}

/// Tests box `q` (list element `pq`) against the elements of `list` (ending
/// with a sentinel) while they start within its interval, calling `hit`
/// with the index of each box that overlaps it and passes the
/// reference-cell rule.
#[inline]
fn scan_list<S: Scalar>(q: &Entry<S>, pq: u32, entries: &[Entry<S>], list: &[u32], mut hit: impl FnMut(u32)) {
    let query = q.query();
    for &p in list {
        let e = &entries[(p & POSITION) as usize];
        if e.lo > q.hi {
            break;
        }
        let home = (pq | p) & (HOME_Y | HOME_Z) == HOME_Y | HOME_Z;
        if home && crate::sweep::cross_hit(&query, &e.cross) {
            hit(e.id);
        }
    }
}

/// Most (oversized box, cell) visits listed at once by [`oversized_by_cell`]
/// (more are handled in batches of the oversized boxes). Small in unit
/// tests, so that they run many batches.
#[cfg(not(test))]
const VISITS: usize = 1 << 20;
#[cfg(test)]
const VISITS: usize = 64;

/// Appends the pairs between the oversized boxes of one set, `big` (sweep
/// entries sorted by start, no sentinel, ids into `boxes`), and the boxes at
/// home in the cells of `side`, cell by cell: every cell's boxes are swept
/// once against the oversized boxes that can reach them (listed per cell in
/// order of start), so each cell's entries are read while in cache and no
/// cell is searched. `O_LEFT`: the oversized box is the left member of the
/// output pairs.
fn oversized_by_cell<S: Scalar, const D: usize, P: OutPair, const O_LEFT: bool>(
    layout: &Layout,
    boxes: &[Aabb<S, D>],
    big: &[Entry<S>],
    side: &Side<S>,
    parallel: bool,
    parts: &mut Vec<Vec<P>>,
    out: &mut Vec<P>,
) {
    let ncells = layout.cell_count();
    let visit = |o: &Entry<S>, f: &mut dyn FnMut(usize)| visit_cells(layout, &boxes[o.id as usize], side, f);
    let (mut lists, mut starts) = (Vec::new(), Vec::new());
    let area = |o: &Entry<S>| {
        let [(a0, a1), (b0, b1)] = layout.reach(&boxes[o.id as usize]);
        (a1 - a0 + 1) as usize * (b1 - b0 + 1) as usize
    };
    let mut first = 0;
    while first < big.len() {
        // A batch of oversized boxes whose visits fit the budget.
        let mut last = first;
        let mut budget = 0;
        while last < big.len() && (last == first || budget + area(&big[last]) <= VISITS) {
            budget += area(&big[last]);
            last += 1;
        }
        let batch = &big[first..last];
        starts.clear();
        starts.resize(ncells + 1, 0);
        for o in batch {
            visit(o, &mut |c| starts[c + 1] += 1);
        }
        for c in 0..ncells {
            starts[c + 1] += starts[c];
        }
        lists.clear();
        lists.resize(starts[ncells] as usize, 0);
        {
            let mut cursor = starts[..ncells].to_vec();
            for (k, o) in batch.iter().enumerate() {
                visit(o, &mut |c| {
                    lists[cursor[c] as usize] = k as u32;
                    cursor[c] += 1;
                });
            }
        }
        let (lists, starts) = (&lists, &starts);
        let pieces = par::piece_count(ncells, PIECE_CELLS);
        par::pieces(parallel, pieces, out, parts, |p, out| {
            for c in p * ncells / pieces..(p + 1) * ncells / pieces {
                let os = &lists[starts[c] as usize..starts[c + 1] as usize];
                if os.is_empty() {
                    continue;
                }
                let es = &side.entries[side.starts[c] as usize..side.starts[c + 1] as usize];
                sweep_oversized::<S, P, O_LEFT>(batch, os, es, out);
            }
        });
        first = last;
    }
}

/// Calls `f(c)` for every cell `c` of `side` that oversized box `o` must
/// search: the cells of its reach, less the empty ones and those whose boxes
/// cannot reach its first cells.
fn visit_cells<S: Scalar, const D: usize>(layout: &Layout, o: &Aabb<S, D>, side: &Side<S>, f: &mut dyn FnMut(usize)) {
    let nz = layout.cells[1];
    let [(a0, a1), (b0, b1)] = layout.reach(o);
    let [(m0, _), (n0, _)] = layout.span(o);
    for x in a0..=a1 {
        for y in b0..=b1 {
            let c = (x * nz + y) as usize;
            let [fy, fz] = side.far[c].map(u32::from);
            if side.starts[c] == side.starts[c + 1] || x + fy < m0 || y + fz < n0 {
                continue;
            }
            f(c);
        }
    }
}

/// The bipartite sweep of one cell: oversized boxes `big[os[..]]` and the
/// cell's entries `es`, both sorted by start. Whichever starts first scans
/// the other list while it starts within its interval (so both overlap on
/// the sweep axis) and tests the cross axes, without branches.
fn sweep_oversized<S: Scalar, P: OutPair, const O_LEFT: bool>(
    big: &[Entry<S>],
    os: &[u32],
    es: &[Entry<S>],
    out: &mut Vec<P>,
) {
    let make = |o: u32, x: u32| if O_LEFT { P::make(o, x) } else { P::make(x, o) };
    let (mut i, mut j) = (0, 0);
    while i < es.len() && j < os.len() {
        let (e, o) = (&es[i], &big[os[j] as usize]);
        if o.lo <= e.lo {
            let query = o.query();
            let cands = &es[i..];
            out.reserve(cands.len());
            let spare = &mut out.spare_capacity_mut()[..cands.len()];
            let mut k = 0;
            for x in cands {
                if x.lo > o.hi {
                    break;
                }
                spare[k].write(make(o.id, x.id));
                k += crate::sweep::cross_hit(&query, &x.cross) as usize;
            }
            let len = out.len();
            // SAFETY: the first `k` slots of the spare capacity were
            // written (each step writes slot `k` before maybe advancing).
            unsafe { out.set_len(len + k) };
            j += 1;
        } else {
            let query = e.query();
            for &q in &os[j..] {
                let x = &big[q as usize];
                if x.lo > e.hi {
                    break;
                }
                if crate::sweep::cross_hit(&query, &x.cross) {
                    out.push(make(x.id, e.id));
                }
            }
            i += 1;
        }
    }
}

/// The hit rate of the lanes the kernel tested in the cells swept before,
/// decayed cell by cell, which decides whether the next cell's hits are
/// emitted without a branch (see [`BRANCHLESS_RATES`]).
pub(super) struct HitRate {
    hits: f64,
    lanes: f64,
}

impl HitRate {
    pub(super) fn new() -> Self {
        Self { hits: 0.0, lanes: 0.0 }
    }

    /// Sweeps the boxes filled into `buf`, emitting as the rate so far
    /// says, and takes the cell's hits into the rate.
    #[inline]
    pub(super) fn sweep<S: Scalar>(&mut self, buf: &mut Soa<S>, simd: Simd, out: &mut Vec<Pair>) {
        let (lo, hi) = BRANCHLESS_RATES;
        let (hits, lanes) = (self.hits, self.lanes);
        buf.branchless = lanes >= BRANCHLESS_EVIDENCE && hits >= lo * lanes && hits < hi * lanes;
        let before = out.len();
        let steps = super::kernel::sweep_rows(buf, 0..buf.len(), simd, out);
        self.hits = hits * RATE_DECAY + (out.len() - before) as f64;
        self.lanes = lanes * RATE_DECAY + (steps * 8) as f64;
    }
}

/// All overlapping pairs of `boxes` (`profile`: theirs, if taken already).
pub(crate) fn complete<S: Scalar, const D: usize>(
    boxes: &[Aabb<S, D>],
    cell: Option<f64>,
    parallel: bool,
    profile: Option<&Profile<D>>,
    ws: &mut Workspace<S>,
    out: &mut Vec<Pair>,
) {
    let owned;
    let profile = match profile {
        Some(p) => p,
        None => {
            owned = Profile::new(boxes);
            &owned
        }
    };
    if D == 1 || boxes.len() > MAX_GRID_BOXES {
        return sap::complete(boxes, profile.sweep_axis(), parallel, ws, out);
    }
    let layout = Layout::new(profile, cell);
    // Large sets without oversized boxes by rows (see `super::rows`); the
    // others by the global build, which also sweeps oversized boxes against
    // the cells.
    if super::rows::pays(boxes.len())
        && super::rows::complete(boxes, &layout, parallel, &mut ws.sides[0], &mut ws.parts.pairs, out)
    {
        return;
    }
    complete_global(boxes, &layout, parallel, ws, out);
}

/// [`complete`] on the global build (see [`build`]), oversized boxes or
/// not.
pub(super) fn complete_global<S: Scalar, const D: usize>(
    boxes: &[Aabb<S, D>],
    layout: &Layout,
    parallel: bool,
    ws: &mut Workspace<S>,
    out: &mut Vec<Pair>,
) {
    let Workspace { keys, scratch, sides, parts, .. } = ws;
    let parts = &mut parts.pairs;
    let side = &mut sides[0];
    build(boxes, layout, keys, scratch, side, parallel);
    let side = &*side;
    let ncells = layout.cell_count();
    let pieces = sweep_pieces(ncells, boxes.len());
    let simd = Simd::detect();
    par::pieces_with(parallel, pieces, out, parts, Soa::new, |buf, p, out| {
        let mut rate = HitRate::new();
        for c in p * ncells / pieces..(p + 1) * ncells / pieces {
            let l = list(side, c);
            if l.len() > 2 {
                crate::mem::spare(out, OUT_SPARE);
                buf.fill_list(&side.entries, &l[..l.len() - 1]);
                rate.sweep(buf, simd, out);
            }
        }
    });
    if !side.oversized.is_empty() {
        let big = side.oversized.clone();
        compute_far(layout, &mut sides[0]);
        let side = &sides[0];
        let e = sap::sorted_entries(boxes, Some(&big), &layout.axes, parallel, keys, scratch);
        oversized_by_cell::<S, D, Pair, true>(layout, boxes, &e[..e.len() - 1], side, parallel, parts, out);
        crate::sweep::sweep_one(&e, 0..e.len() - 1, out);
    }
}

/// All overlapping pairs between `a` and `b` (`profile`: theirs, if taken
/// already).
pub(crate) fn bipartite<S: Scalar, const D: usize>(
    a: &[Aabb<S, D>],
    b: &[Aabb<S, D>],
    cell: Option<f64>,
    parallel: bool,
    profile: Option<&Profile<D>>,
    ws: &mut Workspace<S>,
    out: &mut Vec<CrossPair>,
) {
    let owned;
    let profile = match profile {
        Some(p) => p,
        None => {
            owned = Profile::bipartite(a, b);
            &owned
        }
    };
    if D == 1 || a.len() > MAX_GRID_BOXES || b.len() > MAX_GRID_BOXES {
        return sap::bipartite(a, b, profile.sweep_axis(), parallel, ws, out);
    }
    let layout = Layout::new(profile, cell);
    // Large sets without oversized boxes by rows, both sets at once (see
    // `super::rows::bipartite`).
    if a.len() + b.len() >= super::rows::BIPARTITE_ROWS_MIN
        && a.len() + b.len() <= MAX_GRID_BOXES
        && super::rows::bipartite(
            a,
            b,
            &layout,
            parallel,
            &mut ws.sides[0],
            &mut ws.parts.pairs,
            &mut ws.parts.flat,
            out,
        )
    {
        return;
    }
    let Workspace { keys, scratch, sides, parts, .. } = ws;
    let parts = &mut parts.cross;
    let [sa, sb] = sides;
    build(a, &layout, keys, scratch, sa, parallel);
    build(b, &layout, keys, scratch, sb, parallel);
    let ncells = layout.cell_count();
    {
        let (sa, sb) = (&*sa, &*sb);
        let pieces = sweep_pieces(ncells, a.len() + b.len());
        par::pieces(parallel, pieces, out, parts, |p, out| {
            for c in p * ncells / pieces..(p + 1) * ncells / pieces {
                sweep_two_lists(&sa.entries, list(sa, c), &sb.entries, list(sb, c), out);
            }
        });
    }
    // Oversized boxes of each set against the other set's cells, then
    // against each other.
    let sorted = |boxes: &[Aabb<S, D>], big: &[u32], keys: &mut Vec<u64>, scratch: &mut Vec<u64>| {
        if big.is_empty() {
            Vec::new()
        } else {
            sap::sorted_entries(boxes, Some(big), &layout.axes, parallel, keys, scratch)
        }
    };
    let ea = sorted(a, &sa.oversized, keys, scratch);
    let eb = sorted(b, &sb.oversized, keys, scratch);
    if !ea.is_empty() {
        compute_far(&layout, sb);
        oversized_by_cell::<S, D, CrossPair, true>(&layout, a, &ea[..ea.len() - 1], sb, parallel, parts, out);
    }
    if !eb.is_empty() {
        compute_far(&layout, sa);
        oversized_by_cell::<S, D, CrossPair, false>(&layout, b, &eb[..eb.len() - 1], sa, parallel, parts, out);
    }
    if !ea.is_empty() && !eb.is_empty() {
        sap::sweep_sorted_pair(&ea, &eb, parallel, parts, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_monotone_and_clamped() {
        let boxes = [
            Aabb::<f64, 2>::new([0.0, -1e308], [1.0, 1e308]).unwrap(),
            Aabb::<f64, 2>::new([5.0, 0.0], [6.0, 1.0]).unwrap(),
        ];
        let layout = Layout::new(&Profile::new(&boxes[..]), Some(1.0));
        let k = 0;
        let xs = [-1e308, -1.0, 0.0, 0.5, 1.0, 1e10, 1e308];
        for w in xs.windows(2) {
            assert!(layout.cell(k, w[0]) <= layout.cell(k, w[1]));
        }
        assert!(layout.cell(k, 1e308) < layout.cells[k]);
    }

    /// The fraction of sampled pairs the grid tests, counted by a sweep over
    /// the samples sorted by start, equals the count over every sampled
    /// pair (complete and bipartite; ties of starts, touching intervals,
    /// oversized boxes).
    #[test]
    fn candidate_fraction_counts_every_tested_pair() {
        let mut seed = crate::Lcg::new(3);
        let mut next = |m: u64| seed.below(m);
        let boxes: Vec<Aabb<f64, 3>> = (0..700)
            .map(|_| {
                let lo: [f64; 3] = core::array::from_fn(|_| next(40) as f64 / 2.0);
                let w: [f64; 3] = core::array::from_fn(|_| [0.0, 0.5, 1.0, 1.5, 9.0][next(5) as usize]);
                Aabb::new(lo, core::array::from_fn(|k| lo[k] + w[k])).unwrap()
            })
            .collect();
        let (a, b) = boxes.split_at(300);
        let layout = Layout::new(&Profile::new(&boxes[..]), Some(1.0));
        let sweep = layout.axes.sweep;
        // Every pair of the sets, as the grid tests them.
        let tested = |x: &Aabb<f64, 3>, y: &Aabb<f64, 3>| {
            let (sx, sy) = (layout.span(x), layout.span(y));
            let big = |s: &[(u32, u32); 2]| s.iter().any(|&(c0, c1)| c1 - c0 > MAX_SPAN);
            let reaches = |o: &[(u32, u32); 2], h: &[(u32, u32); 2]| {
                o.iter().zip(h).all(|(&(c0, c1), &(h0, h1))| h1 >= c0 && h0 <= c1)
            };
            x.min()[sweep] <= y.max()[sweep]
                && y.min()[sweep] <= x.max()[sweep]
                && match (big(&sx), big(&sy)) {
                    (false, false) => sx.iter().zip(&sy).all(|(p, q)| p.0 <= q.1 && q.0 <= p.1),
                    (true, false) => reaches(&sx, &sy),
                    (false, true) => reaches(&sy, &sx),
                    (true, true) => true,
                }
        };
        let mut complete = 0;
        for i in 0..a.len() {
            complete += a[i + 1..].iter().filter(|y| tested(&a[i], y)).count();
        }
        let cross: usize = a.iter().map(|x| b.iter().filter(|y| tested(x, y)).count()).sum();
        assert!(complete > 100 && cross > 100, "{complete} {cross}");
        let want = complete as f64 / (a.len() * (a.len() - 1) / 2) as f64;
        assert_eq!(layout.candidate_fraction(&[a], 10_000, false), want);
        assert_eq!(layout.candidate_fraction(&[a, b], 10_000, true), cross as f64 / (a.len() * b.len()) as f64);
    }

    /// Boxes of every width from 0 to 11 cells on each cross axis (listed,
    /// wide, and oversized ones, on both sides of the limit), on whole and
    /// half cell bounds so that many touch: the grid finds brute force's
    /// pairs, complete and bipartite, with threads or not.
    #[test]
    fn wide_and_oversized_boxes_meet_exactly() {
        let mut seed = crate::Lcg::new(7);
        let mut next = |m: u64| seed.below(m);
        let boxes: Vec<Aabb<f64, 3>> = (0..3000)
            .map(|_| {
                let lo: [f64; 3] = core::array::from_fn(|_| next(80) as f64 / 2.0);
                let w: [f64; 3] = core::array::from_fn(|k| if k == 0 { 1.0 } else { next(24) as f64 / 2.0 });
                Aabb::new(lo, core::array::from_fn(|k| lo[k] + w[k])).unwrap()
            })
            .collect();
        let mut expect = Vec::new();
        crate::brute_force::complete(&boxes, &mut expect);
        expect.sort_unstable();
        let (a, b) = boxes.split_at(1200);
        let mut expect_ab = Vec::new();
        crate::brute_force::bipartite(a, b, &mut expect_ab);
        let key = |p: &CrossPair| (p.a, p.b);
        expect_ab.sort_unstable_by_key(key);
        let mut ws = Workspace::new();
        for parallel in [false, true] {
            for cell in [1.0, 0.5, 2.0] {
                let mut got = Vec::new();
                complete(&boxes, Some(cell), parallel, None, &mut ws, &mut got);
                got.sort_unstable();
                assert_eq!(got, expect, "complete, cell {cell}, parallel {parallel}");
                let mut got = Vec::new();
                bipartite(a, b, Some(cell), parallel, None, &mut ws, &mut got);
                got.sort_unstable_by_key(key);
                assert_eq!(got, expect_ab, "bipartite, cell {cell}, parallel {parallel}");
            }
        }
    }

    /// `f64` sweep keys spread the sampled range over 32 bits: starts
    /// outside it share the end keys, and starts closer than a key step
    /// share keys, so that only the exact order of the values (the
    /// refinement) keeps the sweep right. Most boxes here lie in a small
    /// range; a few hundred lie on both sides far outside it, a few ulps
    /// long and apart on the sweep axis, in scrambled order.
    #[test]
    fn f64_keys_outside_the_sample_are_ordered_exactly() {
        let mut seed = crate::Lcg::new(3);
        let mut next = |m: u64| seed.below(m);
        let mut boxes: Vec<Aabb<f64, 3>> = (0..20_600)
            .map(|_| {
                let lo: [f64; 3] = core::array::from_fn(|_| next(1000) as f64 / 10.0);
                Aabb::new(lo, lo.map(|x| x + 1.0)).unwrap()
            })
            .collect();
        // The far boxes take slots the profile does not sample.
        let sampled: std::collections::HashSet<usize> =
            crate::stats::sample_indices(boxes.len(), crate::stats::SAMPLE).collect();
        for far in [1e9f64, -1e9] {
            let mut placed = 0;
            while placed < 300 {
                let i = next(boxes.len() as u64) as usize;
                if sampled.contains(&i) || boxes[i].min()[0].abs() > 1e6 {
                    continue;
                }
                // Starts and ends a few ulps apart: a box out of order can
                // end a scan before its partner.
                let up = |v: f64, k: u64| f64::from_bits(if v > 0.0 { v.to_bits() + k } else { v.to_bits() - k });
                let x = up(far, next(40));
                let lo = [x, next(3) as f64, next(3) as f64];
                let hi = [up(x, next(3)), lo[1] + 1.0, lo[2] + 1.0];
                boxes[i] = Aabb::new(lo, hi).unwrap();
                placed += 1;
            }
        }
        let layout = Layout::new(&Profile::new(&boxes[..]), None);
        assert_eq!(layout.axes.sweep, 0);
        assert_eq!(layout.sweep_key(1e9f64), KEY_TOP as u32, "clamped to the top key");
        assert_eq!(layout.sweep_key(-1e9f64), 0, "clamped to the bottom key");
        let mut expect = Vec::new();
        crate::brute_force::complete(&boxes, &mut expect);
        expect.sort_unstable();
        let mut ws = Workspace::new();
        for parallel in [false, true] {
            let mut got = Vec::new();
            complete(&boxes, None, parallel, None, &mut ws, &mut got);
            got.sort_unstable();
            assert_eq!(got, expect, "parallel {parallel}");
        }
    }
}
