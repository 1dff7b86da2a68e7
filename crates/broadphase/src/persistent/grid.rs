//! Incremental hash grid with fat boxes, for worlds of similar-sized objects.
//!
//! # Idea
//!
//! Each proxy is held by a *fat* box: its exact box grown by a margin. It is
//! filed in every cell of a uniform grid (a hash map from cell coordinates to
//! a list of slots) that its fat box meets. A proxy starts with its exact box
//! as its fat box and gets a margin when it first leaves it (a static proxy
//! never does), so the many proxies of a world that never move cost no
//! tracked pair beyond those they are in. Pairs whose fat boxes overlap are
//! *tracked* by the engine, flagged when the exact boxes overlap.
//!
//! When a proxy moves within its fat box, nothing in the grid changes and no
//! new pair can appear (a new exact overlap implies a fat overlap, which is
//! tracked already); the engine only re-tests its tracked pairs, a walk of a
//! short list with no hash lookups. Only when the exact box leaves the fat
//! box is the proxy re-fattened: taken out of its old cells, filed in the new
//! ones, and tested against the other proxies of those cells. Each candidate
//! pair is reported once, by the cell holding the lower corner of the two fat
//! boxes' intersection (the reference-point rule of the one-shot grid).
//!
//! # Sizes
//!
//! The cell size and the margin are chosen from the boxes at the first build
//! (and again whenever the engine rebuilds after a frame that changed most
//! proxies): the margin is a tenth (by default) of the 90th percentile of
//! the box extents, and a cell twice that percentile plus the margins, so
//! that a typical fat box meets one or two cells per axis. A moving proxy's
//! fat box also reaches eight updates of its displacement ahead (by
//! default), so that steady motion re-fattens it rarely; a proxy that kept
//! its heading since its last re-fattening gets half the margin and three
//! times that reach. Cell coordinates
//! are clamped to ±2^20, so huge coordinates cannot overflow: far-away
//! proxies share edge cells (slower, still exact).
//!
//! # Large objects
//!
//! A proxy whose fat box spans more than four cells on some axis (a ground
//! box, a trigger volume over a level) is not filed in cells but kept in a
//! short list that every re-fattened proxy is tested against; when such a
//! proxy itself re-fattens it is tested against every proxy. This keeps cell
//! lists short whatever the size distribution, at a cost that grows with the
//! number of large proxies; the multi-region SAP is the answer for worlds
//! with many of them.

use super::cells::{self, CellRange, CellTable};
use super::engine::{sealed::IndexImpl, Frame};
use super::marks::Marks;
use super::pairs::NIL;
use super::query::{reach, Headings, Region};
use super::store::{State, Store};
use super::BodyKind;
use crate::mem::HugeVec;
use crate::{Aabb, Scalar};

/// A fat box spanning more than this many cells on an axis is "large".
const MAX_SPAN: i64 = 5;
/// Queries covering more cells than this scan the slots instead.
const MAX_QUERY_CELLS: i64 = 4096;

/// A rebuild places its entries by a counting sort over the cells of the
/// range the proxies span when that range has at most this many cells (or
/// twice as many as entries); a sparser world is filed one by one. (In
/// debug builds, the tests', from 1024 cells, so that their small worlds
/// take both ways.)
const DENSE_CELLS: usize = if cfg!(debug_assertions) { 1 << 10 } else { 1 << 22 };

/// The default margin, as a fraction of the typical box extent.
pub const DEFAULT_MARGIN: f64 = 0.1;
/// How many updates of its displacement a moving proxy's fat box
/// anticipates, by default. With [`DEFAULT_MARGIN`] measured in `frames`
/// (1e5 uniform proxies, 1% and 10% moving): margin 0.1 and 8 updates gave a
/// mean frame 25-30% below margin 0.25 and 4 updates (fewer tracked pairs to
/// walk, fewer re-fattenings), and below the other pairs tried.
pub const DEFAULT_PREDICT: f64 = 8.0;

/// The index of [`HashGrid`](super::HashGrid).
#[derive(Clone, Debug)]
pub struct GridIndex<S: Scalar, const D: usize> {
    margin_ratio: f64,
    predict: f64,
    /// Whether reaches are scaled per slot (see [`GridIndex::staggered`]).
    stagger: bool,
    cell: f64,
    inv: f64,
    margin: f64,
    fat: HugeVec<Aabb<S, D>>,
    /// The steady-motion rule's headings.
    headings: Headings<D>,
    /// Position in `big`, or `NIL` for proxies filed in cells.
    big_pos: Vec<u32>,
    big: Vec<u32>,
    /// Per cell: its proxies with their fat boxes inline, so that scanning a
    /// cell reads one contiguous array.
    table: CellTable<(u32, Aabb<S, D>)>,
    /// The proxies queried in full in this update (large arrivals,
    /// re-filtered proxies).
    late: Vec<u32>,
    /// The proxies to re-fatten in this update, with their new fat boxes.
    jobs: Vec<(u32, Aabb<S, D>)>,
    /// The slots whose fat box changed in the last update.
    changed: Marks,
}

impl<S: Scalar, const D: usize> Default for GridIndex<S, D> {
    fn default() -> Self {
        Self {
            margin_ratio: DEFAULT_MARGIN,
            predict: DEFAULT_PREDICT,
            stagger: false,
            cell: 0.0,
            inv: 0.0,
            margin: 0.0,
            fat: HugeVec::new(),
            headings: Headings::default(),
            big_pos: Vec::new(),
            big: Vec::new(),
            table: CellTable::default(),
            late: Vec::new(),
            jobs: Vec::new(),
            changed: Marks::default(),
        }
    }
}

type Cells<const D: usize> = CellRange<D>;

impl<S: Scalar, const D: usize> GridIndex<S, D> {
    /// An empty index whose fat boxes are grown by `ratio` times the typical
    /// box extent (the 90th percentile; default [`DEFAULT_MARGIN`]). A larger
    /// margin re-fattens less often and tracks more pairs. `ratio` is clamped
    /// to `[0, 4]` (NaN counts as the default).
    pub fn new(ratio: f64) -> Self {
        let ratio = if ratio.is_nan() { DEFAULT_MARGIN } else { ratio.clamp(0.0, 4.0) };
        Self { margin_ratio: ratio, ..Self::default() }
    }

    /// The same index whose moving proxies' fat boxes reach `frames`
    /// updates of their displacement ahead (default [`DEFAULT_PREDICT`]):
    /// more re-fatten less often and track more pairs along the motion.
    /// Clamped to `[0, 64]` (NaN counts as the default).
    pub fn with_prediction(mut self, frames: f64) -> Self {
        self.predict = if frames.is_nan() { DEFAULT_PREDICT } else { frames.clamp(0.0, 64.0) };
        self
    }

    /// The same index with each moving proxy's reach scaled by a factor
    /// between 0.75 and 1.25 drawn from its slot (`on`; off by default).
    /// Proxies that start moving together at one speed (an emitter, a
    /// formation) otherwise run out of their fat boxes in the same update,
    /// and that update re-files all of them at once. Measured in `frames`
    /// (10% of 1e5 moving 0.05 per update, all from the first update;
    /// `FRAMES_STAGGER`, 104 frames, three runs each way alternated, Zen 4
    /// VM): the worst frame 19-23 -> 4.9-6.5 ms, the 90th percentile
    /// 1.7-2.4 -> 3.9-4.0 ms, the median 1.2-1.3 -> 2.4-2.6 ms, the mean
    /// 2.0-2.2 -> 2.6-2.7 ms. Steadier frames for more work on average:
    /// spread out, the re-filings miss the caches that a burst of them
    /// shares.
    pub fn staggered(mut self, on: bool) -> Self {
        self.stagger = on;
        self
    }

    /// The cell size in use (0 before the first build).
    pub fn cell_size(&self) -> f64 {
        self.cell
    }

    /// The margin fat boxes are grown by.
    pub fn margin(&self) -> f64 {
        self.margin
    }

    /// Picks the cell size and margin from the boxes of `slots`.
    fn choose(&mut self, store: &Store<S, D>, slots: impl Iterator<Item = u32>) {
        let Some(z) = store.sizes(slots) else { return };
        let mut size = z.q90;
        if !(size.is_finite() && size > 0.0) {
            // Points or flat boxes: cells from the spread instead.
            size = z.spread / (z.count as f64).powf(1.0 / D as f64);
        }
        if !(size.is_finite() && size > 0.0) {
            size = 1.0; // everything on one point
        }
        self.margin = self.margin_ratio * size;
        self.cell = 2.0 * (size + 2.0 * self.margin);
        self.inv = 1.0 / self.cell;
    }

    #[inline]
    fn coord(&self, v: f64) -> i64 {
        cells::coord(v, self.inv)
    }

    #[inline]
    fn cells_of(&self, b: &Aabb<S, D>) -> Cells<D> {
        (
            core::array::from_fn(|k| self.coord(b.min()[k].to_f64())),
            core::array::from_fn(|k| self.coord(b.max()[k].to_f64())),
        )
    }

    fn is_big(r: &Cells<D>) -> bool {
        cells::wider_than(r, MAX_SPAN)
    }

    /// Makes room for slot `s` in the per-slot arrays.
    #[inline]
    fn room(&mut self, store: &Store<S, D>, s: u32) {
        let i = s as usize;
        if self.fat.len() <= i {
            self.fat.resize(store.slots().max(i + 1), store.aabb[i]);
            self.big_pos.resize(self.fat.len(), NIL);
        }
    }

    /// Files slot `s`, arriving or at a rebuild (see `fresh_fat`).
    fn add(&mut self, store: &Store<S, D>, s: u32) {
        self.room(store, s);
        let fat = self.fresh_fat(store, s);
        self.file(s, fat);
    }

    /// Files arriving slot `s` and appends its candidates among the slots
    /// filed before it, as `add` then `candidates` would, in one visit per
    /// cell: each list is scanned, then `s` pushed onto it, while it is in
    /// the cache. A pair of two arrivals is found by the later one's scan
    /// (the earlier one is filed by then), once. A large arrival is only
    /// filed, and pushed on `late`: its scan of every slot waits until all
    /// the arrivals are filed.
    fn arrive(&mut self, store: &Store<S, D>, s: u32, out: &mut Vec<(u32, u32)>, late: &mut Vec<u32>) {
        self.room(store, s);
        let fat = self.fresh_fat(store, s);
        let r = self.cells_of(&fat);
        if Self::is_big(&r) {
            self.file_in(s, fat, &r, |_, _| {});
            late.push(s);
            return;
        }
        self.big_candidates(s, &fat, out);
        let lowers = self.lowers(&r);
        self.file_in(s, fat, &r, |list, c| Self::scan_cell(s, &fat, list, &lowers, &r, c, out));
    }

    /// The box a proxy is first filed by (arriving, or at a rebuild): its
    /// exact box. Only when it leaves it is it re-filed with a margin and a
    /// reach along its motion: a proxy that never moves (most of a world, as
    /// a rule) tracks no pair beyond those it is in and meets fewer cells;
    /// one that moves pays one more re-filing, at its first move.
    #[inline]
    fn fresh_fat(&self, store: &Store<S, D>, s: u32) -> Aabb<S, D> {
        store.aabb[s as usize]
    }

    /// Files slot `s` (filed nowhere) by the fat box `fat`.
    fn file(&mut self, s: u32, fat: Aabb<S, D>) {
        let r = self.cells_of(&fat);
        self.file_in(s, fat, &r, |_, _| {});
    }

    /// Files slot `s` by `fat`, whose cells are `r`: in the large list, or
    /// in each cell's list, after calling `visit` with that list and cell.
    #[inline]
    fn file_in(
        &mut self,
        s: u32,
        fat: Aabb<S, D>,
        r: &Cells<D>,
        mut visit: impl FnMut(&[(u32, Aabb<S, D>)], &[i64; D]),
    ) {
        let i = s as usize;
        self.fat[i] = fat;
        self.changed.mark(s);
        if Self::is_big(r) {
            self.big_pos[i] = self.big.len() as u32;
            self.big.push(s);
            return;
        }
        self.big_pos[i] = NIL;
        let table = &mut self.table;
        cells::each(r, |c| {
            let list = table.list(cells::key(c));
            visit(list, c);
            list.push((s, fat));
        });
    }

    /// Takes slot `s` out of its cells (or the large list).
    fn take(&mut self, s: u32) {
        let i = s as usize;
        let bp = self.big_pos[i];
        if bp != NIL {
            let last = *self.big.last().expect("listed");
            self.big_pos[last as usize] = bp;
            self.big.swap_remove(bp as usize);
            self.big_pos[i] = NIL;
            return;
        }
        let r = self.cells_of(&self.fat[i]);
        let table = &mut self.table;
        cells::each(&r, |c| Self::unfile(table, cells::key(c), s));
    }

    /// Takes slot `s` out of the cell of `key`.
    #[inline]
    fn unfile(table: &mut CellTable<(u32, Aabb<S, D>)>, key: u64, s: u32) {
        let b = table.find(key).expect("filed cell");
        let list = table.at_mut(b);
        let p = list.iter().position(|x| x.0 == s).expect("filed slot");
        list.swap_remove(p);
        if list.is_empty() {
            table.remove_at(b);
        }
    }

    /// For a proxy filed in the cells of range `r` (not large): per axis
    /// and cell of the range, the lowest start a partner may have for the
    /// pair to be reported in that cell (reference-point rule: the cell
    /// holds the lower corner of the two boxes' intersection). On each axis
    /// the later of the two starts must lie in the cell (both boxes are
    /// filed there, so neither starts after it): in the range's first cell
    /// the proxy's own start does, so any partner start is fine (`-∞`);
    /// in a later one the partner's start must reach the cell, compared by
    /// [`cells::start`] exactly as `coord` would place it.
    #[inline]
    fn lowers(&self, r: &Cells<D>) -> [[S; MAX_SPAN as usize]; D] {
        core::array::from_fn(|k| {
            core::array::from_fn(|j| {
                let c = r.0[k] + j as i64;
                if j == 0 || c > r.1[k] {
                    -S::INFINITY
                } else {
                    cells::start(c, self.inv)
                }
            })
        })
    }

    /// Whether the candidate of fat boxes `fs`, `ft` (both filed in a cell
    /// whose lowest partner starts are `low`) is reported there.
    #[inline]
    fn reported_in(fs: &Aabb<S, D>, ft: &Aabb<S, D>, low: &[S; D]) -> bool {
        let mut ok = true;
        for (k, &low) in low.iter().enumerate() {
            ok &= (fs.min()[k] <= ft.max()[k]) & (ft.min()[k] <= fs.max()[k]) & (ft.min()[k] >= low);
        }
        ok
    }

    /// Appends `(s, t)` for every indexed `t` whose fat box overlaps `s`'s,
    /// each once.
    fn candidates(&self, store: &Store<S, D>, s: u32, out: &mut Vec<(u32, u32)>) {
        let i = s as usize;
        let fs = self.fat[i];
        if self.big_pos[i] != NIL {
            for t in 0..store.slots() as u32 {
                if t != s && store.meta[t as usize].state == State::Live && fs.overlaps(&self.fat[t as usize]) {
                    out.push((s, t));
                }
            }
            return;
        }
        self.big_candidates(s, &fs, out);
        let r = self.cells_of(&fs);
        let lowers = self.lowers(&r);
        cells::each(&r, |c| {
            if let Some(list) = self.table.get(cells::key(c)) {
                Self::scan_cell(s, &fs, list, &lowers, &r, c, out);
            }
        });
    }

    /// Appends `(s, t)` for every other `t` of the list of cell `c` (in the
    /// range `r` of `s`, whose lowest partner starts are `lowers`) whose
    /// fat box overlaps `fs` with the pair reported in that cell.
    #[inline]
    fn scan_cell(
        s: u32,
        fs: &Aabb<S, D>,
        list: &[(u32, Aabb<S, D>)],
        lowers: &[[S; MAX_SPAN as usize]; D],
        r: &Cells<D>,
        c: &[i64; D],
        out: &mut Vec<(u32, u32)>,
    ) {
        let low: [S; D] = core::array::from_fn(|k| lowers[k][(c[k] - r.0[k]) as usize]);
        out.reserve(list.len());
        for &(t, ref ft) in list {
            push_if(out, (t != s) & Self::reported_in(fs, ft, &low), (s, t));
        }
    }

    /// Appends `(s, t)` for every large `t` whose fat box overlaps `fs`.
    #[inline]
    fn big_candidates(&self, s: u32, fs: &Aabb<S, D>, out: &mut Vec<(u32, u32)>) {
        for &t in &self.big {
            if fs.overlaps(&self.fat[t as usize]) {
                out.push((s, t));
            }
        }
    }

    /// Re-files slot `s` by the fat box `fat` and appends its new
    /// candidates, as `take`, `file` and `candidates` would, in one visit
    /// per cell: the cells of both the old and the new range (most of them,
    /// as a fat box moves by a fraction of a cell) are scanned once, the
    /// entry of `s` updated in place, the candidates tested on the way.
    ///
    /// A proxy whose filed box overlaps the old fat box of `s` is not a new
    /// candidate: if its entry is from before this update, the pair is
    /// tracked already (every allowed pair of overlapping held boxes is);
    /// if it was re-filed earlier in this update, its own scan saw the old
    /// box of `s` and reported the pair. (Re-filtered proxies, whose pairs
    /// may be newly allowed, are queried in full afterwards.)
    fn refile(&mut self, store: &Store<S, D>, s: u32, fat: Aabb<S, D>, out: &mut Vec<(u32, u32)>) {
        let i = s as usize;
        let old = self.cells_of(&self.fat[i]);
        let r = self.cells_of(&fat);
        if self.big_pos[i] != NIL || Self::is_big(&r) {
            self.take(s);
            self.file(s, fat);
            self.candidates(store, s, out);
            return;
        }
        let was = core::mem::replace(&mut self.fat[i], fat);
        self.changed.mark(s);
        self.big_candidates(s, &fat, out);
        let lowers = self.lowers(&r);
        let mut table = core::mem::take(&mut self.table);
        cells::each(&old, |c| {
            if !cells::inside(&r, c) {
                Self::unfile(&mut table, cells::key(c), s);
            }
        });
        cells::each(&r, |c| {
            let kept = cells::inside(&old, c);
            let key = cells::key(c);
            let list = if kept {
                let b = table.find(key).expect("filed cell");
                table.at_mut(b)
            } else {
                table.list(key)
            };
            let low: [S; D] = core::array::from_fn(|k| lowers[k][(c[k] - r.0[k]) as usize]);
            // PERF: whether an entry is a new candidate is a coin toss (the
            // fat boxes of a cell half overlap): kept without a branch on it
            // (jitter, 10% of 1e5 moving: the re-filing loop 15% faster).
            out.reserve(list.len());
            for e in list.iter_mut() {
                if e.0 == s {
                    e.1 = fat;
                    continue;
                }
                push_if(out, Self::reported_in(&fat, &e.1, &low) & !was.overlaps(&e.1), (s, e.0));
            }
            if !kept {
                list.push((s, fat));
            }
        });
        self.table = table;
    }

    /// Calls `f` with the table and the key of every cell that filing
    /// arriving slot `s` (by a fresh fat box) will touch; none if large.
    #[inline]
    fn prefetch_filing(&self, store: &Store<S, D>, s: u32, f: impl Fn(&CellTable<(u32, Aabb<S, D>)>, u64)) {
        let fat = self.fresh_fat(store, s);
        let r = self.cells_of(&fat);
        if !Self::is_big(&r) {
            cells::each(&r, |c| f(&self.table, cells::key(c)));
        }
    }

    /// Calls `f` with the key of every cell slot `s` is filed in; none if
    /// large.
    #[inline]
    fn filed_cells(&self, s: u32, mut f: impl FnMut(u64)) {
        if self.big_pos[s as usize] == NIL {
            cells::each(&self.cells_of(&self.fat[s as usize]), |c| f(cells::key(c)));
        }
    }

    /// The cells that re-filing slot `s` by `fat` visits: those of the new
    /// range, and of the old one outside it; none if either is large.
    #[inline]
    fn refile_cells(&self, s: u32, fat: &Aabb<S, D>, mut f: impl FnMut(u64)) {
        let old = self.cells_of(&self.fat[s as usize]);
        let r = self.cells_of(fat);
        if !Self::is_big(&r) && !Self::is_big(&old) {
            cells::each(&r, |c| f(cells::key(c)));
            cells::each(&old, |c| {
                if !cells::inside(&r, c) {
                    f(cells::key(c));
                }
            });
        }
    }

    /// Starts loading what re-filing slot `s` by `fat` reads first: its
    /// large-list position and the buckets of its cells.
    #[inline]
    fn prefetch_buckets(&self, s: u32, fat: &Aabb<S, D>) {
        crate::sweep::prefetch(&self.big_pos[s as usize]);
        self.refile_cells(s, fat, |k| self.table.prefetch(k));
    }

    /// Starts loading the first lines of the lists re-filing slot `s` by
    /// `fat` scans (reads the buckets).
    #[inline]
    fn prefetch_lists(&self, s: u32, fat: &Aabb<S, D>) {
        self.refile_cells(s, fat, |k| {
            if let Some(list) = self.table.get(k) {
                prefetch_list(list);
            }
        });
    }
}

/// Starts loading the first lines (up to 512 bytes) of a cell's list.
#[inline]
fn prefetch_list<E>(list: &[E]) {
    let p = list.as_ptr().cast::<u8>();
    let bytes = core::mem::size_of_val(list);
    for off in (0..bytes.min(512)).step_by(64) {
        crate::sweep::prefetch(p.wrapping_add(off));
    }
}

/// Appends `v` to `out` if `keep`, with no branch on `keep`: `v` is written
/// to the spare room in any case and counted only when kept.
#[inline(always)]
fn push_if(out: &mut Vec<(u32, u32)>, keep: bool, v: (u32, u32)) {
    if out.len() == out.capacity() {
        out.reserve(1); // callers reserve ahead: never taken in a scan
    }
    let len = out.len();
    out.spare_capacity_mut()[0].write(v);
    // SAFETY: the element at `len` was initialized just above, and the
    // capacity exceeds `len`.
    unsafe { out.set_len(len + usize::from(keep)) };
}

impl<S: Scalar, const D: usize> IndexImpl<S, D> for GridIndex<S, D> {
    const NAME: &'static str = "hash-grid";
    const ONESHOT: bool = true;
    /// A rebuild files each proxy by its exact box (`fresh_fat`), and its queries are cheap.
    const OLD_PAIRS_SHARE: Option<usize> = Some(super::engine::OLD_PAIRS_SHARE);
    /// The arrivals are filed in their cells anyway, and asking the cells
    /// for their candidates costs less than a bipartite search against the
    /// world. `FRAMES_INSERT` runs of `frames` (uniform 3D f32), two rounds
    /// alternated with the share of 64 the other indexes keep: 1e5 arrivals
    /// into 1e6 static proxies 241-264 -> 166-203 ms, 2.5e5 into 1e6
    /// 538-573 -> 426-511 ms; into 1e5 (a bulk frame) 40-49 and 41-45 ms.
    /// (The dynamic tree and the multi-region SAP were no faster that way,
    /// the incremental SAP 150 times slower; the multi-region SAP has
    /// since found its arrivals' pairs by sweeping its regions.) Against
    /// the grid of the arrivals that replaced the bipartite search:
    /// 1.31-1.37x the one-shot search over all through the cells,
    /// 1.30-1.60x through that grid.
    const ARRIVALS_ONESHOT: Option<usize> = None;

    fn update(&mut self, store: &Store<S, D>, frame: &Frame<S, D>, out: &mut Vec<(u32, u32)>) {
        self.changed.clear();
        if self.cell == 0.0 {
            self.choose(store, frame.inserted.iter().copied());
        }
        // PERF: a batch of removals, like one of arrivals (below), reads
        // fat boxes, buckets and lists all over the world: prefetched 16, 8
        // and 4 removals ahead.
        let gone = &frame.removed;
        for (j, &s) in gone.iter().enumerate() {
            if let Some(&t) = gone.get(j + 16) {
                crate::sweep::prefetch(&self.fat[t as usize]);
                crate::sweep::prefetch(&self.big_pos[t as usize]);
            }
            if let Some(&t) = gone.get(j + 8) {
                self.filed_cells(t, |k| self.table.prefetch(k));
            }
            if let Some(&t) = gone.get(j + 4) {
                self.filed_cells(t, |k| {
                    if let Some(list) = self.table.get(k) {
                        prefetch_list(list);
                    }
                });
            }
            self.take(s);
        }
        // PERF: arrivals land in cells all over the world (level
        // streaming: 1e5 into a world of 1e6): the buckets of the arrivals
        // 8 steps ahead are prefetched, then their lists (the ends of them
        // only, where no scan follows).
        let ins = &frame.inserted;
        let scan = frame.inserted_candidates;
        let mut late = core::mem::take(&mut self.late);
        late.clear();
        for (j, &s) in ins.iter().enumerate() {
            if let Some(&t) = ins.get(j + 8) {
                self.prefetch_filing(store, t, |table, k| table.prefetch(k));
            }
            if let Some(&t) = ins.get(j + 4) {
                self.prefetch_filing(store, t, |table, k| {
                    if let Some(list) = table.get(k) {
                        if scan {
                            prefetch_list(list);
                        } else {
                            crate::sweep::prefetch(list.as_ptr().wrapping_add(list.len()));
                        }
                    }
                });
            }
            if scan {
                self.arrive(store, s, out, &mut late);
            } else {
                self.add(store, s);
            }
        }
        // The proxies that left their fat boxes, with their new fat boxes.
        let mut jobs = core::mem::take(&mut self.jobs);
        jobs.clear();
        debug_assert!(frame.left.iter().map(|&j| j as usize).eq(frame
            .moved
            .iter()
            .enumerate()
            .filter(|(_, (s, _))| !self.fat[*s as usize].contains(&store.aabb[*s as usize]))
            .map(|(j, _)| j)));
        for &j in &frame.left {
            let j = j as usize;
            let s = frame.moved[j].0;
            let i = s as usize;
            let fat = if store.kind[i] == BodyKind::Static {
                store.aabb[i]
            } else {
                let predict = reach(s, self.predict, self.stagger);
                self.headings.fatten(s, &store.aabb[i], frame.velocity(j, store), self.margin, predict)
            };
            jobs.push((s, fat));
        }
        // PERF: re-filing is a chain of cache misses per cell (bucket, list)
        // on proxies in no spatial order: the buckets of the proxies some
        // steps ahead are prefetched, then, once those have arrived, their
        // lists. Proxies refiled later in this loop are seen with their old
        // boxes, which can only add candidates (the engine keeps those whose
        // held boxes overlap); a pair of two refiled proxies is found by the
        // later one's scan, which sees both new boxes.
        for j in 0..jobs.len() {
            if let Some((t, f)) = jobs.get(j + 8) {
                self.prefetch_buckets(*t, f);
            }
            if let Some((t, f)) = jobs.get(j + 4) {
                self.prefetch_lists(*t, f);
            }
            let (s, fat) = jobs[j];
            self.refile(store, s, fat, out);
        }
        self.jobs = jobs;
        // The large arrivals, and the re-filtered proxies, whose pairs may
        // be newly allowed, are queried in full.
        late.extend_from_slice(&frame.refiltered);
        for &s in &late {
            self.candidates(store, s, out);
        }
        self.late = late;
    }

    fn tracks(&self, _store: &Store<S, D>, s: u32, t: u32) -> bool {
        self.fat[s as usize].overlaps(&self.fat[t as usize])
    }

    const SCREENS_MOVES: bool = true;

    fn box_changed(&self, s: u32) -> bool {
        self.changed.has(s)
    }

    #[inline]
    fn prefetch_held(&self, s: u32) {
        if let Some(f) = self.fat.get(s as usize) {
            crate::sweep::prefetch(f);
        }
    }

    fn tracked_box(&self, _store: &Store<S, D>, s: u32) -> Aabb<S, D> {
        self.fat[s as usize]
    }

    fn empty_like(&self) -> Self {
        Self::new(self.margin_ratio).with_prediction(self.predict).staggered(self.stagger)
    }

    fn rebuild(&mut self, store: &Store<S, D>) {
        self.changed.clear();
        self.table.clear();
        self.big.clear();
        let live = || (0..store.slots() as u32).filter(|&s| store.meta[s as usize].state == State::Live);
        self.choose(store, live());
        let Some(&filler) = store.aabb.first() else { return };
        if self.fat.len() < store.slots() {
            self.fat.resize(store.slots(), filler);
            self.big_pos.resize(self.fat.len(), NIL);
        }
        // PERF: the proxies are filed all at once: their cells counted, the
        // entries placed by a counting sort over the cells of the range they
        // span (each cell's proxies in slot order, as filing them one by one
        // leaves them), and each cell's list made once, with the room
        // doubling would give it. One by
        // one, each entry was a lookup in the table and a push that grew its
        // list by doubling (1e5 uniform proxies, 2.8e5 entries: 8.5-10 ms;
        // this way 6.5-8 ms, most of it the passes over the proxies).
        let (mut lo, mut hi) = ([i64::MAX; D], [i64::MIN; D]);
        let mut entries = 0usize;
        // The proxies filed in cells, with the first cell of each and how
        // many more it spans per axis.
        let mut ranges: Vec<(u32, [i32; D], [u8; D])> = Vec::new();
        for s in live() {
            let i = s as usize;
            let fat = self.fresh_fat(store, s);
            let r = self.cells_of(&fat);
            self.fat[i] = fat;
            self.changed.mark(s);
            if Self::is_big(&r) {
                self.big_pos[i] = self.big.len() as u32;
                self.big.push(s);
                continue;
            }
            self.big_pos[i] = NIL;
            entries += (0..D).map(|k| (r.1[k] - r.0[k] + 1) as usize).product::<usize>();
            for k in 0..D {
                lo[k] = lo[k].min(r.0[k]);
                hi[k] = hi[k].max(r.1[k]);
            }
            // (Coordinates are within ±2^20, spans at most `MAX_SPAN`.)
            ranges.push((s, r.0.map(|x| x as i32), core::array::from_fn(|k| (r.1[k] - r.0[k]) as u8)));
        }
        let span = (0..D).fold(1usize, |n, k| n.saturating_mul((hi[k] - lo[k] + 1) as usize));
        if entries == 0 || span > DENSE_CELLS.max(2 * entries) {
            // Nothing in cells, or a sparse world (far apart clusters): one
            // by one.
            for &(s, _, _) in &ranges {
                let fat = self.fat[s as usize];
                self.file(s, fat);
            }
            return;
        }
        // Each cell of the range by a dense index, first axis fastest (the
        // order `cells::each` goes in).
        let mut stride = [0usize; D];
        let mut n = 1;
        for k in 0..D {
            stride[k] = n;
            n *= (hi[k] - lo[k] + 1) as usize;
        }
        let index = |c: &[i64; D]| (0..D).map(|k| (c[k] - lo[k]) as usize * stride[k]).sum::<usize>();
        let range = |c0: &[i32; D], ext: &[u8; D]| -> Cells<D> {
            (c0.map(i64::from), core::array::from_fn(|k| i64::from(c0[k]) + i64::from(ext[k])))
        };
        let mut starts = vec![0u32; span + 1];
        for (_, c0, ext) in &ranges {
            cells::each(&range(c0, ext), |c| starts[index(c) + 1] += 1);
        }
        let cells = starts.iter().filter(|&&n| n > 0).count();
        for x in 0..span {
            starts[x + 1] += starts[x];
        }
        let mut order = vec![0u32; entries];
        let mut at = starts.clone();
        for (s, c0, ext) in &ranges {
            cells::each(&range(c0, ext), |c| {
                let x = index(c);
                order[at[x] as usize] = *s;
                at[x] += 1;
            });
        }
        self.table.prepare(cells);
        let (table, fat) = (&mut self.table, &self.fat);
        let mut x = 0;
        cells::each(&(lo, hi), |c| {
            let run = &order[starts[x] as usize..starts[x + 1] as usize];
            x += 1;
            if !run.is_empty() {
                let list = table.list(cells::key(c));
                // The room pushing one by one would have left (arrivals
                // after a rebuild push onto these lists).
                list.reserve_exact(run.len().next_power_of_two().max(4));
                list.extend(run.iter().map(|&s| (s, fat[s as usize])));
            }
        });
    }

    fn query(&self, store: &Store<S, D>, region: &Region<D>, f: &mut dyn FnMut(u32) -> bool) {
        let fat_meets = |b: &Aabb<S, D>| {
            (0..D).all(|k| region.min[k] <= b.max()[k].to_f64() && b.min()[k].to_f64() <= region.max[k])
        };
        for &t in &self.big {
            if store.indexed(t) && fat_meets(&self.fat[t as usize]) && !f(t) {
                return;
            }
        }
        let r: Cells<D> =
            (core::array::from_fn(|k| self.coord(region.min[k])), core::array::from_fn(|k| self.coord(region.max[k])));
        let count = (0..D).fold(1i64, |n, k| n.saturating_mul(r.1[k] - r.0[k] + 1));
        if self.cell == 0.0 || count > MAX_QUERY_CELLS.min(self.table.len() as i64 + 1) {
            for t in 0..store.slots() as u32 {
                if store.indexed(t) && self.big_pos[t as usize] == NIL && fat_meets(&self.fat[t as usize]) && !f(t) {
                    return;
                }
            }
            return;
        }
        let mut go = true;
        cells::each(&r, |c| {
            if !go {
                return;
            }
            let Some(list) = self.table.get(cells::key(c)) else { return };
            for &(t, ref b) in list {
                if fat_meets(b) {
                    let home = (0..D).all(|k| self.coord(region.min[k].max(b.min()[k].to_f64())) == c[k]);
                    if home && store.indexed(t) && !f(t) {
                        go = false;
                        return;
                    }
                }
            }
        });
    }

    fn validate(&self, store: &Store<S, D>) -> Result<(), String> {
        let mut filed = 0usize;
        for s in 0..store.slots() as u32 {
            if !store.indexed(s) {
                continue;
            }
            let i = s as usize;
            if !self.fat[i].contains(&store.aabb[i]) {
                return Err(format!("grid: slot {s}'s fat box does not contain its box"));
            }
            let r = self.cells_of(&self.fat[i]);
            if Self::is_big(&r) != (self.big_pos[i] != NIL) {
                return Err(format!("grid: slot {s} is filed as the wrong size"));
            }
            if self.big_pos[i] != NIL {
                if self.big.get(self.big_pos[i] as usize) != Some(&s) {
                    return Err(format!("grid: slot {s} is not at its place in the large list"));
                }
                continue;
            }
            let mut bad = None;
            cells::each(&r, |c| {
                filed += 1;
                let ok = self
                    .table
                    .get(cells::key(c))
                    .is_some_and(|list| list.iter().any(|e| e.0 == s && e.1 == self.fat[i]));
                if !ok {
                    bad = Some(*c);
                }
            });
            if let Some(c) = bad {
                return Err(format!("grid: slot {s} missing from cell {c:?}"));
            }
        }
        self.table.validate().map_err(|e| format!("grid: {e}"))?;
        let held: usize = self.table.iter().map(|(_, list)| list.len()).sum();
        if held != filed {
            return Err(format!("grid: cells hold {held} entries, proxies need {filed}"));
        }
        if self.table.iter().any(|(_, list)| list.is_empty()) {
            return Err("grid: an empty cell is still mapped".into());
        }
        Ok(())
    }

    fn release_scratch(&mut self) {
        self.late = Vec::new();
        self.jobs = Vec::new();
    }

    fn memory(&self) -> usize {
        use core::mem::size_of;
        self.fat.capacity() * size_of::<Aabb<S, D>>()
            + self.headings.memory()
            + (self.big_pos.capacity() + self.big.capacity() + self.late.capacity()) * 4
            + self.jobs.capacity() * size_of::<(u32, Aabb<S, D>)>()
            + self.changed.memory()
            + self.table.memory()
    }
}
