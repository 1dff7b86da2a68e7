//! Incremental hash grid with fat boxes, for worlds of similar-sized objects.
//!
//! # Idea
//!
//! Each proxy is held by a *fat* box: its exact box grown by a margin. It is
//! filed in every cell of a uniform grid (a hash map from cell coordinates to
//! a list of slots) that its fat box meets. Pairs whose fat boxes overlap are
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
//! default), so that steady motion re-fattens it rarely. Cell coordinates
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

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use super::cells::{self, CellRange};
use super::engine::{sealed::IndexImpl, Frame};
use super::marks::Marks;
use super::pairs::{KeyHasher, NIL};
use super::query::{fatten, Region};
use super::store::{State, Store};
use crate::{Aabb, Scalar};

/// A fat box spanning more than this many cells on an axis is "large".
const MAX_SPAN: i64 = 5;
/// Queries covering more cells than this scan the slots instead.
const MAX_QUERY_CELLS: i64 = 4096;

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
    cell: f64,
    inv: f64,
    margin: f64,
    fat: Vec<Aabb<S, D>>,
    /// Position in `big`, or `NIL` for proxies filed in cells.
    big_pos: Vec<u32>,
    big: Vec<u32>,
    map: HashMap<u64, u32, BuildHasherDefault<KeyHasher>>,
    /// Per cell: its proxies with their fat boxes inline, so that scanning a
    /// cell reads one contiguous array.
    cells: Vec<Vec<(u32, Aabb<S, D>)>>,
    free_cells: Vec<u32>,
    refat: Vec<u32>,
    /// The slots whose fat box changed in the last update.
    changed: Marks,
}

impl<S: Scalar, const D: usize> Default for GridIndex<S, D> {
    fn default() -> Self {
        Self {
            margin_ratio: DEFAULT_MARGIN,
            predict: DEFAULT_PREDICT,
            cell: 0.0,
            inv: 0.0,
            margin: 0.0,
            fat: Vec::new(),
            big_pos: Vec::new(),
            big: Vec::new(),
            map: HashMap::default(),
            cells: Vec::new(),
            free_cells: Vec::new(),
            refat: Vec::new(),
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

    /// Files slot `s` by a fresh fat box around its exact box.
    fn add(&mut self, store: &Store<S, D>, s: u32, motion: Option<[f64; D]>) {
        let i = s as usize;
        if self.fat.len() <= i {
            self.fat.resize(store.slots().max(i + 1), store.aabb[i]);
            self.big_pos.resize(self.fat.len(), NIL);
        }
        let fat = fatten(&store.aabb[i], motion, self.margin, self.predict);
        self.fat[i] = fat;
        self.changed.mark(s);
        let r = self.cells_of(&fat);
        if Self::is_big(&r) {
            self.big_pos[i] = self.big.len() as u32;
            self.big.push(s);
            return;
        }
        self.big_pos[i] = NIL;
        let (map, cells, free) = (&mut self.map, &mut self.cells, &mut self.free_cells);
        cells::each(&r, |c| {
            let idx = *map.entry(cells::key(c)).or_insert_with(|| match free.pop() {
                Some(f) => f,
                None => {
                    cells.push(Vec::new());
                    cells.len() as u32 - 1
                }
            });
            cells[idx as usize].push((s, fat));
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
        let (map, cells, free) = (&mut self.map, &mut self.cells, &mut self.free_cells);
        cells::each(&r, |c| {
            let k = cells::key(c);
            let idx = map[&k];
            let list = &mut cells[idx as usize];
            let p = list.iter().position(|x| x.0 == s).expect("filed slot");
            list.swap_remove(p);
            if list.is_empty() {
                map.remove(&k);
                free.push(idx);
            }
        });
    }

    /// Appends `(s, t)` for every indexed `t` whose fat box overlaps `s`'s,
    /// each once.
    fn candidates(&self, store: &Store<S, D>, s: u32, out: &mut Vec<(u32, u32)>) {
        let i = s as usize;
        let fs = self.fat[i];
        if self.big_pos[i] != NIL {
            for t in 0..store.slots() as u32 {
                if t != s && store.state[t as usize] == State::Live && fs.overlaps(&self.fat[t as usize]) {
                    out.push((s, t));
                }
            }
            return;
        }
        for &t in &self.big {
            if fs.overlaps(&self.fat[t as usize]) {
                out.push((s, t));
            }
        }
        let r = self.cells_of(&fs);
        cells::each(&r, |c| {
            let Some(&idx) = self.map.get(&cells::key(c)) else { return };
            // Report in the cell of the intersection's lower corner: on each
            // axis the later of the two starts lies in `c` (both boxes are
            // filed in `c`, so neither starts after it): `c` is `s`'s first
            // cell, or `t` starts in `c`, which is `coord`'s own comparison
            // (`floor(v * inv) >= c` exactly when `v * inv >= c`; a clamped
            // lowest cell is every range's first) without the floor.
            let first: [bool; D] = core::array::from_fn(|k| c[k] == r.0[k]);
            let edge: [f64; D] = core::array::from_fn(|k| c[k] as f64);
            for &(t, ref ft) in &self.cells[idx as usize] {
                let mut ok = t != s;
                for k in 0..D {
                    ok &= (fs.min()[k] <= ft.max()[k])
                        & (ft.min()[k] <= fs.max()[k])
                        & (first[k] | (ft.min()[k].to_f64() * self.inv >= edge[k]));
                }
                if ok {
                    out.push((s, t));
                }
            }
        });
    }
}

impl<S: Scalar, const D: usize> IndexImpl<S, D> for GridIndex<S, D> {
    const NAME: &'static str = "hash-grid";
    const ONESHOT: bool = true;

    fn update(&mut self, store: &Store<S, D>, frame: &Frame<S, D>, out: &mut Vec<(u32, u32)>) {
        self.changed.clear();
        if self.cell == 0.0 {
            self.choose(store, frame.inserted.iter().copied());
        }
        for &s in &frame.removed {
            self.take(s);
        }
        for &s in &frame.inserted {
            self.add(store, s, None);
        }
        let mut refat = core::mem::take(&mut self.refat);
        refat.clear();
        for (&(s, _), &v) in frame.moved.iter().zip(&frame.velocity) {
            if !self.fat[s as usize].contains(&store.aabb[s as usize]) {
                self.take(s);
                self.add(store, s, Some(v));
                // PERF: queried at once, while its cells are in the cache
                // from the refiling. Proxies refiled later in this loop are
                // seen with their old boxes, which can only add candidates
                // (the engine keeps those whose held boxes overlap); a pair
                // of two refiled proxies is found by the later one's query,
                // which sees both new boxes.
                self.candidates(store, s, out);
            }
        }
        if frame.inserted_candidates {
            refat.extend_from_slice(&frame.inserted);
        }
        refat.extend_from_slice(&frame.refiltered);
        for &s in &refat {
            self.candidates(store, s, out);
        }
        self.refat = refat;
    }

    fn tracks(&self, _store: &Store<S, D>, s: u32, t: u32) -> bool {
        self.fat[s as usize].overlaps(&self.fat[t as usize])
    }

    fn box_changed(&self, s: u32) -> bool {
        self.changed.has(s)
    }

    fn tracked_box(&self, _store: &Store<S, D>, s: u32) -> Aabb<S, D> {
        self.fat[s as usize]
    }

    fn empty_like(&self) -> Self {
        Self::new(self.margin_ratio).with_prediction(self.predict)
    }

    fn rebuild(&mut self, store: &Store<S, D>) {
        self.changed.clear();
        self.map.clear();
        self.cells.iter_mut().for_each(Vec::clear);
        self.free_cells.clear();
        self.free_cells.extend((0..self.cells.len() as u32).rev());
        self.big.clear();
        let live = || (0..store.slots() as u32).filter(|&s| store.state[s as usize] == State::Live);
        self.choose(store, live());
        for s in live() {
            self.add(store, s, None);
        }
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
        if self.cell == 0.0 || count > MAX_QUERY_CELLS.min(self.map.len() as i64 + 1) {
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
            let Some(&idx) = self.map.get(&cells::key(c)) else { return };
            for &(t, ref b) in &self.cells[idx as usize] {
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
                    .map
                    .get(&cells::key(c))
                    .is_some_and(|&idx| self.cells[idx as usize].iter().any(|e| e.0 == s && e.1 == self.fat[i]));
                if !ok {
                    bad = Some(*c);
                }
            });
            if let Some(c) = bad {
                return Err(format!("grid: slot {s} missing from cell {c:?}"));
            }
        }
        let held: usize = self.map.values().map(|&idx| self.cells[idx as usize].len()).sum();
        if held != filed {
            return Err(format!("grid: cells hold {held} entries, proxies need {filed}"));
        }
        if self.map.values().any(|&idx| self.cells[idx as usize].is_empty()) {
            return Err("grid: an empty cell is still mapped".into());
        }
        Ok(())
    }

    fn release_scratch(&mut self) {
        self.refat = Vec::new();
    }

    fn memory(&self) -> usize {
        use core::mem::size_of;
        self.fat.capacity() * size_of::<Aabb<S, D>>()
            + (self.big_pos.capacity() + self.big.capacity() + self.free_cells.capacity() + self.refat.capacity()) * 4
            + self.changed.memory()
            + self.map.capacity() * (size_of::<(u64, u32)>() + 1)
            + self
                .cells
                .iter()
                .map(|c| c.capacity() * size_of::<(u32, Aabb<S, D>)>() + size_of::<Vec<u32>>())
                .sum::<usize>()
    }
}
