//! A uniform grid over a batch of arrivals, queried box by box by the rest
//! of the world.
//!
//! When a batch of proxies arrives in a settled world (a level section
//! streamed in: 1e5 proxies into a world of 1e6), their pairs with the
//! proxies already there were found by a bipartite one-shot search, which
//! gathers, sorts and places every box of the world for the sake of the
//! arrivals. Here only the arrivals are placed, in a grid over their
//! bounds (columns in cell order, by a counting sort), and the world's
//! boxes stream through it in slot order, each one that meets the
//! arrivals' bounds looking up the cells its range covers. Each pair is
//! reported once: in the cell holding the lower corner of the two boxes'
//! intersection (the reference-point rule of the other grids).
//!
//! The cells are four times the median arrival (fewer cells to look up
//! per query, a few more arrivals to test in each), coarsened until there
//! are at most [`CELLS_PER_BOX`] per arrival. An arrival spanning more than
//! [`MAX_SPAN`] cells on an axis is not filed but tested against every
//! query box; past [`MAX_BIG`] of those, or where one cell would hold more
//! than [`MAX_LOAD`] arrivals and an eighth of them (duplicates, a dense
//! cluster), the grid declines (the caller searches another way). The grid
//! spans the sampled arrivals less the most extreme, so that a far outlier
//! does not stretch it. A query box whose range covers more cells than
//! arrivals is tested against each arrival instead.

use crate::{Aabb, Scalar};

/// Entries tested together by a query.
const LANES: usize = 8;
/// At most this many cells per arrival.
const CELLS_PER_BOX: f64 = 4.0;
/// An arrival spanning more than this many cells on an axis is "big".
const MAX_SPAN: usize = 4;
/// With more big arrivals than this, the grid declines.
const MAX_BIG: usize = 64;
/// A cell may hold this many arrivals, or an eighth of them, at most; the
/// grid declines otherwise.
const MAX_LOAD: usize = 64;

/// See the module documentation.
pub(crate) struct ArrivalGrid<S: Scalar, const D: usize> {
    origin: [f64; D],
    inv: [f64; D],
    dims: [usize; D],
    /// `dims - 1` per axis: the last cell.
    top: [f64; D],
    /// The arrivals' bounds (`None`: no arrivals).
    bounds: Option<Aabb<S, D>>,
    /// Per cell (first axis fastest), where its entries start; one more
    /// at the end.
    starts: Vec<u32>,
    /// The filed arrivals, by cell, in columns: index, and per axis lower
    /// and upper bound; [`LANES`] padding entries follow (boxes that meet
    /// nothing), so that a query reads whole blocks.
    index: Vec<u32>,
    lo: [Vec<S>; D],
    hi: [Vec<S>; D],
    /// The big arrivals: index and box.
    big: Vec<(u32, Aabb<S, D>)>,
}

impl<S: Scalar, const D: usize> Default for ArrivalGrid<S, D> {
    fn default() -> Self {
        Self {
            origin: [0.0; D],
            inv: [0.0; D],
            dims: [1; D],
            top: [0.0; D],
            bounds: None,
            starts: Vec::new(),
            index: Vec::new(),
            lo: core::array::from_fn(|_| Vec::new()),
            hi: core::array::from_fn(|_| Vec::new()),
            big: Vec::new(),
        }
    }
}

impl<S: Scalar, const D: usize> ArrivalGrid<S, D> {
    /// Places `arrivals` (replacing what the grid held); `false` if the
    /// grid declines (too many big arrivals), in which case it holds
    /// nothing.
    pub fn build(&mut self, arrivals: &[Aabb<S, D>]) -> bool {
        self.build_with(arrivals, (arrivals.len() / 8).max(MAX_LOAD))
    }

    /// [`build`](Self::build), declining where a cell would hold more than
    /// `max_load` arrivals.
    fn build_with(&mut self, arrivals: &[Aabb<S, D>], max_load: usize) -> bool {
        self.clear_entries();
        self.big.clear();
        self.starts.clear();
        self.bounds = arrivals.iter().copied().reduce(|a, b| a.union(&b));
        if self.bounds.is_none() {
            return true;
        }
        let n = arrivals.len();
        // The grid spans the sampled arrivals less the two most extreme on
        // each side of each axis, so that a few far outliers do not
        // stretch the cells over the rest (boxes outside fall into the
        // border cells: slower, never wrong, as the cell of a coordinate is
        // monotone in it).
        let sample: Vec<usize> = crate::stats::sample_indices(n, 255).collect();
        let trim = if sample.len() > 16 { 2 } else { 0 };
        let mut lo = [0.0; D];
        let mut span = [0.0; D];
        let mut vals: Vec<f64> = Vec::with_capacity(sample.len());
        for k in 0..D {
            vals.clear();
            vals.extend(sample.iter().map(|&i| arrivals[i].min()[k].to_f64()));
            lo[k] = *vals.select_nth_unstable_by(trim, f64::total_cmp).1;
            vals.clear();
            vals.extend(sample.iter().map(|&i| arrivals[i].max()[k].to_f64()));
            let top = vals.len() - 1 - trim;
            let hi = *vals.select_nth_unstable_by(top, f64::total_cmp).1;
            // No spread, an inverted trim, or an overflow: one cell.
            span[k] = if hi - lo[k] > 0.0 && (hi - lo[k]).is_finite() { hi - lo[k] } else { 0.0 };
        }
        // The median of the sampled arrivals' largest extents.
        let mut ext: Vec<f64> =
            sample.iter().map(|&i| (0..D).map(|k| arrivals[i].extent(k)).fold(0.0, f64::max)).collect();
        let mid = ext.len() / 2;
        let median = *ext.select_nth_unstable_by(mid, f64::total_cmp).1;
        let widest = span.iter().copied().fold(0.0, f64::max);
        // PERF: 1e5 arrivals into 1e6 (uniform 3D f32, multi-region SAP),
        // the stream of the world through the grid, alternated runs: cells
        // of 2 medians 117-184 ms, 4 medians 90-134 ms, 8 medians 106-131 ms.
        let mut cell = 4.0 * median;
        if !(cell.is_finite() && cell > 0.0) {
            // Points, or flat boxes: cells from the spread.
            cell = widest / (n as f64).powf(1.0 / D as f64);
        }
        let budget = (CELLS_PER_BOX * n as f64).max(1.0);
        let dims_for = |cell: f64| -> [usize; D] {
            core::array::from_fn(|k| {
                let c = (span[k] / cell).ceil();
                // NaN (no spread, or no usable cell) and overflow: clamped.
                if c >= 1.0 {
                    c.min(budget) as usize
                } else {
                    1
                }
            })
        };
        let mut dims = dims_for(cell);
        while dims.iter().map(|&d| d as f64).product::<f64>() > budget {
            cell *= 1.5;
            dims = dims_for(cell);
        }
        self.origin = lo;
        self.dims = dims;
        self.top = dims.map(|d| (d - 1) as f64);
        self.inv = core::array::from_fn(|k| if dims[k] > 1 { 1.0 / cell } else { 0.0 });
        let cells: usize = dims.iter().product();
        // Count per cell, then place (a counting sort of the filings).
        self.starts.resize(cells + 1, 0);
        let mut filings = 0usize;
        for (i, a) in arrivals.iter().enumerate() {
            let r = self.range(a);
            if (0..D).any(|k| r.1[k] - r.0[k] >= MAX_SPAN) {
                self.big.push((i as u32, *a));
                if self.big.len() > MAX_BIG {
                    self.decline();
                    return false;
                }
                continue;
            }
            filings += (0..D).map(|k| r.1[k] - r.0[k] + 1).product::<usize>();
            let starts = &mut self.starts;
            Self::each_of(&dims, &r, &mut |c| starts[c + 1] += 1);
        }
        // The positions are `u32`s (over 4e9 filings is over 100 GB of
        // entries; declined rather than wrapped).
        if filings > u32::MAX as usize {
            self.decline();
            return false;
        }
        // A cell holding a large share of the arrivals (duplicates, a
        // cluster far denser than the rest) would make every query through
        // it test them all: the grid declines.
        let most = self.starts.iter().copied().max().unwrap_or(0) as usize;
        if most > max_load {
            self.decline();
            return false;
        }
        for c in 0..cells {
            self.starts[c + 1] += self.starts[c];
        }
        let total = self.starts[cells] as usize;
        // Padding: empty intervals (lower bound +inf, upper -inf).
        self.index.resize(total + LANES, 0);
        for k in 0..D {
            self.lo[k].resize(total + LANES, S::INFINITY);
            self.hi[k].resize(total + LANES, -S::INFINITY);
        }
        let mut next: Vec<u32> = self.starts[..cells].to_vec();
        for (i, a) in arrivals.iter().enumerate() {
            let r = self.range(a);
            if (0..D).any(|k| r.1[k] - r.0[k] >= MAX_SPAN) {
                continue;
            }
            let (index, lo, hi) = (&mut self.index, &mut self.lo, &mut self.hi);
            let mut put = |c: usize| {
                let at = next[c] as usize;
                index[at] = i as u32;
                for k in 0..D {
                    lo[k][at] = a.min()[k];
                    hi[k][at] = a.max()[k];
                }
                next[c] += 1;
            };
            Self::each_of(&self.dims, &r, &mut put);
        }
        true
    }

    fn clear_entries(&mut self) {
        self.index.clear();
        self.lo.iter_mut().chain(&mut self.hi).for_each(Vec::clear);
    }

    /// Holds nothing (the grid declined).
    fn decline(&mut self) {
        self.big.clear();
        self.starts.clear();
        self.clear_entries();
        self.bounds = None;
    }

    /// The cell of coordinate `v` on axis `k`: monotone in `v`, clamped to
    /// the grid.
    #[inline]
    fn cell_of(&self, k: usize, v: S) -> usize {
        let x = (v.to_f64() - self.origin[k]) * self.inv[k];
        // Finite boxes: `x` is finite or ±∞, or NaN on an axis of one cell
        // (`inv` 0) where the difference overflows; `max` takes 0 for NaN,
        // and the conversion of a value clamped to `[0, dims - 1]` floors
        // it (no branch: this runs six times a query).
        x.max(0.0).min(self.top[k]) as usize
    }

    /// The range of cells a box covers: lower and upper corner.
    #[inline]
    fn range(&self, b: &Aabb<S, D>) -> ([usize; D], [usize; D]) {
        (core::array::from_fn(|k| self.cell_of(k, b.min()[k])), core::array::from_fn(|k| self.cell_of(k, b.max()[k])))
    }

    /// Calls `f` with the linear index (first axis fastest) of every cell
    /// of range `r` in a grid of `dims` cells.
    #[inline]
    fn each_of(dims: &[usize; D], r: &([usize; D], [usize; D]), f: &mut impl FnMut(usize)) {
        let range: super::cells::CellRange<D> = (r.0.map(|x| x as i64), r.1.map(|x| x as i64));
        super::cells::each(&range, |c| {
            let mut index = 0;
            for k in (0..D).rev() {
                index = index * dims[k] + c[k] as usize;
            }
            f(index);
        });
    }

    /// Calls `f` with the index of every arrival whose box overlaps `b`,
    /// each once. `arrivals` are the boxes the grid was built over.
    pub fn query(&self, arrivals: &[Aabb<S, D>], b: &Aabb<S, D>, mut f: impl FnMut(u32)) {
        let Some(bounds) = &self.bounds else { return };
        if !bounds.overlaps(b) {
            return;
        }
        let (lo, hi) = self.range(b);
        let covered = (0..D).map(|k| (hi[k] - lo[k] + 1) as f64).product::<f64>();
        if covered > arrivals.len() as f64 {
            // A box over much of the grid: each arrival once.
            for (i, a) in arrivals.iter().enumerate() {
                if a.overlaps(b) {
                    f(i as u32);
                }
            }
            return;
        }
        for &(i, ref a) in &self.big {
            if a.overlaps(b) {
                f(i);
            }
        }
        // Row by row: the cells along the first axis are contiguous in
        // `starts`, and so are their entries.
        let mut c = lo;
        loop {
            let mut base = 0;
            for k in (1..D).rev() {
                base = base * self.dims[k] + c[k];
            }
            base *= self.dims[0];
            let mut from = self.starts[base + lo[0]] as usize;
            let end = self.starts[base + hi[0] + 1] as usize;
            // PERF: the row's cells tested together, `LANES` entries at a
            // time, column by column into a mask with no branch (the
            // compiler vectorizes it); the rule below runs for the hits
            // alone. 1e5 arrivals into 1e6 static proxies (uniform 3D
            // `f32`), the stream of the world through the grid: 68-74 ms
            // with each entry (index and box) tested in turn, 52-55 ms.
            while from < end {
                let mut hit = [true; LANES];
                for k in 0..D {
                    let mins: &[S; LANES] = self.lo[k][from..from + LANES].try_into().expect("padded");
                    let maxs: &[S; LANES] = self.hi[k][from..from + LANES].try_into().expect("padded");
                    for j in 0..LANES {
                        hit[j] &= (mins[j] <= b.max()[k]) & (b.min()[k] <= maxs[j]);
                    }
                }
                let mut mask = 0u32;
                for (j, &h) in hit.iter().enumerate() {
                    mask |= (h as u32) << j;
                }
                // Lanes past the row's end hold padding, which meets
                // nothing, or entries of later cells, which the rule below
                // rejects: they lie past the cell a pair is reported in.
                while mask != 0 {
                    let at = from + mask.trailing_zeros() as usize;
                    mask &= mask - 1;
                    // Reported in the cell of the lower corner of the
                    // intersection. On each axis that is the cell of the
                    // later start: the query box's where it starts later,
                    // the arrival's otherwise. Along the row, an arrival's
                    // copies lie in its cells in order, so the one in that
                    // cell is the first in the row's range: it ends before
                    // the next cell starts.
                    let x = self.cell_of(0, self.lo[0][at]).max(lo[0]);
                    if at < self.starts[base + x + 1] as usize
                        && (1..D).all(|k| c[k] == lo[k] || self.cell_of(k, self.lo[k][at]) == c[k])
                    {
                        f(self.index[at]);
                    }
                }
                from += LANES;
            }
            let mut k = 1;
            loop {
                if k >= D {
                    return;
                }
                if c[k] < hi[k] {
                    c[k] += 1;
                    break;
                }
                c[k] = lo[k];
                k += 1;
            }
        }
    }

    /// Bytes held.
    pub fn memory(&self) -> usize {
        self.starts.capacity() * 4
            + self.index.capacity() * 4
            + self.lo.iter().chain(&self.hi).map(|v| v.capacity() * core::mem::size_of::<S>()).sum::<usize>()
            + self.big.capacity() * core::mem::size_of::<(u32, Aabb<S, D>)>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every overlapping (arrival, other) pair, by testing all.
    fn brute<S: Scalar>(arrivals: &[Aabb<S, 3>], others: &[Aabb<S, 3>]) -> Vec<(u32, u32)> {
        let mut v = Vec::new();
        for (j, b) in others.iter().enumerate() {
            for (i, a) in arrivals.iter().enumerate() {
                if a.overlaps(b) {
                    v.push((i as u32, j as u32));
                }
            }
        }
        v.sort_unstable();
        v
    }

    /// The pairs through the grid, however loaded its cells (`None`: it
    /// declined for its big arrivals).
    fn through_grid<S: Scalar>(arrivals: &[Aabb<S, 3>], others: &[Aabb<S, 3>]) -> Option<Vec<(u32, u32)>> {
        let mut g = ArrivalGrid::default();
        if !g.build_with(arrivals, usize::MAX) {
            return None;
        }
        let mut v = Vec::new();
        for (j, b) in others.iter().enumerate() {
            g.query(arrivals, b, |i| v.push((i, j as u32)));
        }
        let n = v.len();
        v.sort_unstable();
        v.dedup();
        assert_eq!(v.len(), n, "a pair reported twice");
        Some(v)
    }

    fn cube(x: f64, y: f64, z: f64, s: f64) -> Aabb<f64, 3> {
        Aabb::new([x, y, z], [x + s, y + s, z + s]).unwrap()
    }

    #[test]
    fn finds_exactly_the_pairs_of_varied_scenes() {
        let mut st = crate::Lcg::new(7);
        for scene in 0..6 {
            let mut arrivals = Vec::new();
            let mut others = Vec::new();
            for i in 0..400 {
                let (x, y, z) = (st.unit() * 20.0, st.unit() * 20.0, st.unit() * 20.0);
                let s = match scene {
                    0 => 1.0,
                    1 => 0.0,                      // points
                    2 => st.unit().powi(6) * 30.0, // heavy-tailed
                    3 => (i % 3) as f64,           // touching on the lattice
                    4 => 1.0 + (i as f64) * 1e-9,  // near-duplicates
                    _ => {
                        if i % 50 == 0 {
                            40.0
                        } else {
                            0.5
                        }
                    } // a few big ones
                };
                let b = if scene == 3 {
                    cube((i % 7) as f64, (i / 7 % 7) as f64, (i / 49) as f64, 1.0)
                } else {
                    cube(x, y, z, s)
                };
                if i % 4 == 0 {
                    arrivals.push(b);
                } else {
                    others.push(b);
                }
            }
            // A box around everything, a far one, and a copy of an arrival.
            others.push(cube(-100.0, -100.0, -100.0, 300.0));
            others.push(cube(1e30, 1e30, 1e30, 1.0));
            others.push(arrivals[0]);
            let got = through_grid(&arrivals, &others).expect("few big arrivals");
            assert_eq!(got, brute(&arrivals, &others), "scene {scene}");
            // In `f32` too (rounded to nearest: the order of coordinates
            // holds), the scalar of the persistent broad phases' benches.
            let f32s = |v: &[Aabb<f64, 3>]| -> Vec<Aabb<f32, 3>> {
                v.iter().map(|b| Aabb::new(b.min().map(|x| x as f32), b.max().map(|x| x as f32)).unwrap()).collect()
            };
            let (a32, o32) = (f32s(&arrivals), f32s(&others));
            let got = through_grid(&a32, &o32).expect("few big arrivals");
            assert_eq!(got, brute(&a32, &o32), "scene {scene}, f32");
        }
    }

    /// A coordinate interval from one of several regimes: small integers
    /// (touching, points, duplicates), generic floats, a heavy tail, and
    /// wild magnitudes.
    fn interval() -> impl proptest::strategy::Strategy<Value = (f64, f64)> {
        use proptest::prelude::*;
        prop_oneof![
            (0i32..12, 0i32..4).prop_map(|(a, w)| (a as f64, (a + w) as f64)),
            (-50.0..50.0f64, 0.0..3.0f64).prop_map(|(a, w)| (a, a + w)),
            (-50.0..50.0f64, 0.0..1.0f64).prop_map(|(a, u)| (a, a + 1e-2 / (1.0 - u).max(1e-6))),
            prop::sample::select(vec![(-0.0, 0.0), (-1e300, 1e300), (1e30, 1e30), (1e308, f64::MAX), (1.0, 1.0)]),
        ]
    }

    fn boxes(n: usize) -> impl proptest::strategy::Strategy<Value = Vec<Aabb<f64, 3>>> {
        use proptest::prelude::*;
        prop::collection::vec([interval(), interval(), interval()], 0..n)
            .prop_map(|v| v.into_iter().map(|[x, y, z]| Aabb::new([x.0, y.0, z.0], [x.1, y.1, z.1]).unwrap()).collect())
    }

    proptest::proptest! {
        #[test]
        fn random_sets_give_the_pairs_of_brute_force(arrivals in boxes(120), others in boxes(160)) {
            // (However loaded its cells: none of 2000 cases declined for
            // big arrivals when this was written.)
            if let Some(got) = through_grid(&arrivals, &others) {
                proptest::prop_assert_eq!(got, brute(&arrivals, &others));
            }
        }
    }

    #[test]
    fn huge_coordinates_and_one_point() {
        let arrivals = vec![cube(-1e300, 0.0, 0.0, 1e300), cube(1e300, 1e300, 1e300, 0.0), cube(0.0, 0.0, 0.0, 0.0)];
        let others = vec![cube(0.0, 0.0, 0.0, 0.0), cube(-1e308, -1e308, -1e308, 1e308), cube(5.0, 5.0, 5.0, 1.0)];
        assert_eq!(through_grid(&arrivals, &others).unwrap(), brute(&arrivals, &others));
        let same = vec![cube(3.0, 3.0, 3.0, 0.0); 5];
        assert_eq!(through_grid(&same, &same).unwrap(), brute(&same, &same));
        assert_eq!(through_grid(&[], &same).unwrap(), Vec::new());
    }

    #[test]
    fn declines_where_one_cell_would_hold_many() {
        let mut g = ArrivalGrid::default();
        let mut arrivals: Vec<_> = (0..1000).map(|i| cube((i % 100) as f64, (i / 100) as f64, 0.0, 0.5)).collect();
        assert!(g.build(&arrivals));
        // A pile of duplicates among them: a cell of 200 of the 1200.
        arrivals.extend((0..200).map(|_| cube(3.0, 3.0, 0.0, 0.5)));
        assert!(!g.build(&arrivals));
        assert!(through_grid(&arrivals, &arrivals[..50]).is_some());
        // A far outlier does not stretch the grid over the rest.
        arrivals.truncate(1000);
        arrivals.push(cube(1e12, 1e12, 1e12, 0.5));
        assert!(g.build(&arrivals));
        assert!(g.dims.iter().product::<usize>() > 100);
    }

    #[test]
    fn declines_past_the_big_arrivals_it_takes() {
        // Many arrivals spanning the whole grid while most are small: too
        // many big ones to test each query against.
        let mut arrivals: Vec<_> = (0..1000).map(|i| cube((i % 100) as f64, (i / 100) as f64, 0.0, 0.5)).collect();
        arrivals.extend((0..=MAX_BIG).map(|_| cube(0.0, 0.0, 0.0, 100.0)));
        assert!(through_grid(&arrivals, &arrivals[..10]).is_none());
        arrivals.truncate(1000 + MAX_BIG);
        let others: Vec<_> = (0..300).map(|i| cube((i % 30) as f64 * 3.3, (i / 30) as f64, 0.2, 0.7)).collect();
        assert_eq!(through_grid(&arrivals, &others).unwrap(), brute(&arrivals, &others));
    }
}
