//! Multi-region sweep-and-prune for large worlds (seed 001's "grid of
//! SAPs"; PhysX's MBP and ABP).
//!
//! # Idea
//!
//! Space is cut into cubic regions (created when first needed, so no world
//! bounds are asked for), each with its own incremental sweep-and-prune (all
//! axes sorted, as [`SapIndex`](super::SapIndex)). A proxy is held by every
//! region its box meets. A moving proxy swaps endpoints only with the
//! proxies of its own regions, so a bullet crossing a town pays for the
//! houses near its path, not for the town; entering a region costs one merge
//! into that region (and a scan of it for candidates), leaving one costs one
//! compaction of it. A pair held by two regions may be proposed twice; the
//! engine tracks it once.
//!
//! A proxy whose box spans more than four regions on some axis (a ground
//! box, a terrain tile) is held by no region but by a short list instead,
//! which every moving proxy is tested against; when such a proxy moves, it is
//! tested against every proxy. So one huge box does not make every object
//! overlap on every axis of every region.
//!
//! # Arrivals
//!
//! Arrivals are merged into their regions like any entry. A region that
//! receives arrivals, with entries asking for pairs at least one in
//! [`SWEEP_SHARE`] of its endpoints per axis (a level streamed into a
//! settled world brings a few to every region it covers), is then swept
//! whole along its first axis: its boxes, read in the order of that sorted
//! axis, split into those asking for pairs and the rest, and the two lists
//! swept against each other. Each pair is kept by the one region holding
//! the lower corner of the two boxes' intersection, so a pair with an
//! arrival comes out once and untracked: the engine tracks those with no
//! lookup, in slot order (`take_arrival_pairs`). Other regions look up each
//! entering box alone.
//!
//! # Sizes
//!
//! The region side is eight times the 90th percentile of the box extents of
//! the first build (chosen again at every rebuild), so a region holds a few
//! hundred proxies in a dense world. Region coordinates are clamped to
//! ±2^20, so huge coordinates cannot overflow (far regions merge: slower,
//! still exact).

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use super::cells::{self, CellRange};
use super::engine::{sealed::IndexImpl, Frame};
use super::pairs::{KeyHasher, NIL};
use super::query::Region;
use super::sap::Sorted;
use super::store::{State, Store};
use crate::sort::sort_by_small_key;
use crate::sweep::Entry;
use crate::{Aabb, CrossPair, Scalar};

/// A box spanning more than this many regions on an axis is "large".
const MAX_SPAN: i64 = 4;
/// Region side over the typical box extent.
const REGION_SCALE: f64 = 8.0;
/// What an entry into a region asks for: nothing (a rebuild), the
/// candidate pairs of a moved proxy, or the pairs of an arrival.
const QUIET: u8 = 0;
const CANDIDATES: u8 = 1;
const ARRIVAL: u8 = 2;
/// A region whose entries hold arrivals is swept whole (see `apply_enters`)
/// where its entries asking for pairs are at least one in this many of its
/// endpoints per axis; otherwise each entry's box is looked up alone.
/// `FRAMES_INSERT=1e6 frames --only multi` (uniform 3D f32, regions of some
/// 275 proxies), shares alternated: 1e5 arrivals (about 25 a region) took
/// 310-401 ms with 8 (lookups), 216-285 ms with 32, 201-215 ms with 64,
/// 194-271 ms sweeping every region; 1e4 arrivals (2 or 3 a region, looked
/// up) 59-85 ms with any share, 61-70 ms sweeping every region.
const SWEEP_SHARE: usize = 64;

type Range<const D: usize> = CellRange<D>;

/// One region: its coordinates and its sweep-and-prune.
#[derive(Clone, Debug)]
struct Area<S: Scalar, const D: usize> {
    coords: [i64; D],
    sap: Sorted<S, D>,
    members: usize,
}

/// The index of [`MultiSap`](super::MultiSap).
#[derive(Clone, Debug)]
pub struct MbpIndex<S: Scalar, const D: usize> {
    size: f64,
    inv: f64,
    map: HashMap<u64, u32, BuildHasherDefault<KeyHasher>>,
    areas: Vec<Area<S, D>>,
    free_areas: Vec<u32>,
    big_pos: Vec<u32>,
    big: Vec<u32>,
    leave: Vec<(u64, u32)>,
    /// Region key, slot, and what the entry asks for (`QUIET`, `CANDIDATES`
    /// or `ARRIVAL`).
    enter: Vec<(u64, u32, u8)>,
    /// Working memory of the entries' sort.
    enter_scratch: Vec<(u64, u32, u8)>,
    /// Per slot: marks of the removals and entries being applied.
    mark: Vec<u8>,
    group: Vec<u32>,
    new: Vec<(S, u32)>,
    bufs: (Vec<u64>, Vec<u64>),
    /// A region's held boxes split for a sweep (see `Sorted::marked_pairs`),
    /// and the pairs it found.
    olds: Vec<Entry<S>>,
    news: Vec<Entry<S>>,
    swept: Vec<CrossPair>,
    /// The pairs of arrivals found by sweeps, for `take_arrival_pairs`.
    arrived: Vec<(u32, u32)>,
}

impl<S: Scalar, const D: usize> Default for MbpIndex<S, D> {
    fn default() -> Self {
        Self {
            size: 0.0,
            inv: 0.0,
            map: HashMap::default(),
            areas: Vec::new(),
            free_areas: Vec::new(),
            big_pos: Vec::new(),
            big: Vec::new(),
            leave: Vec::new(),
            enter: Vec::new(),
            enter_scratch: Vec::new(),
            mark: Vec::new(),
            group: Vec::new(),
            new: Vec::new(),
            bufs: (Vec::new(), Vec::new()),
            olds: Vec::new(),
            news: Vec::new(),
            swept: Vec::new(),
            arrived: Vec::new(),
        }
    }
}

impl<S: Scalar, const D: usize> MbpIndex<S, D> {
    /// The region side in use (0 before the first build).
    pub fn region_size(&self) -> f64 {
        self.size
    }

    /// The number of regions holding proxies.
    pub fn regions(&self) -> usize {
        self.map.len()
    }

    fn choose(&mut self, store: &Store<S, D>, slots: impl Iterator<Item = u32>) {
        let Some(z) = store.sizes(slots) else { return };
        let mut size = REGION_SCALE * z.q90;
        if !(size.is_finite() && size > 0.0) {
            size = z.spread / (z.count as f64 / 256.0).max(1.0).powf(1.0 / D as f64);
        }
        if !(size.is_finite() && size > 0.0) {
            size = 1.0;
        }
        self.size = size;
        self.inv = 1.0 / size;
    }

    #[inline]
    fn coord(&self, v: f64) -> i64 {
        cells::coord(v, self.inv)
    }

    fn range(&self, b: &Aabb<S, D>) -> Range<D> {
        (
            core::array::from_fn(|k| self.coord(b.min()[k].to_f64())),
            core::array::from_fn(|k| self.coord(b.max()[k].to_f64())),
        )
    }

    fn is_big(r: &Range<D>) -> bool {
        cells::wider_than(r, MAX_SPAN)
    }

    fn ensure(&mut self, slots: usize) {
        if self.big_pos.len() < slots {
            self.big_pos.resize(slots, NIL);
            self.mark.resize(slots, 0);
        }
    }

    fn add_big(&mut self, s: u32) {
        self.big_pos[s as usize] = self.big.len() as u32;
        self.big.push(s);
    }

    fn drop_big(&mut self, s: u32) {
        let p = self.big_pos[s as usize];
        let last = *self.big.last().expect("listed");
        self.big_pos[last as usize] = p;
        self.big.swap_remove(p as usize);
        self.big_pos[s as usize] = NIL;
    }

    /// Candidates of `s` among every live proxy (for large proxies).
    fn against_all(store: &Store<S, D>, s: u32, out: &mut Vec<(u32, u32)>) {
        let b = &store.aabb[s as usize];
        for t in 0..store.slots() as u32 {
            if t != s && store.meta[t as usize].state == State::Live && b.overlaps(&store.aabb[t as usize]) {
                out.push((s, t));
            }
        }
    }

    /// Candidates of `s` among the large proxies.
    fn against_big(&self, store: &Store<S, D>, s: u32, out: &mut Vec<(u32, u32)>) {
        let b = &store.aabb[s as usize];
        for &t in &self.big {
            if t != s && b.overlaps(&store.aabb[t as usize]) {
                out.push((s, t));
            }
        }
    }

    /// Files slot `s` (not yet held anywhere) by its current box; `how`
    /// says what its entries ask for (`QUIET`, `CANDIDATES`, `ARRIVAL`).
    fn file(&mut self, store: &Store<S, D>, s: u32, how: u8, out: &mut Vec<(u32, u32)>) {
        let r = self.range(&store.aabb[s as usize]);
        if Self::is_big(&r) {
            self.add_big(s);
            if how != QUIET {
                Self::against_all(store, s, out);
            }
        } else {
            let enter = &mut self.enter;
            cells::each(&r, |c| enter.push((cells::key(c), s, how)));
            if how != QUIET {
                self.against_big(store, s, out);
            }
        }
    }

    /// Takes slot `s` out of wherever `held` (its indexed box) files it.
    fn unfile(&mut self, s: u32, held: &Aabb<S, D>) {
        if self.big_pos[s as usize] != NIL {
            self.drop_big(s);
        } else {
            let r = self.range(held);
            let leave = &mut self.leave;
            cells::each(&r, |c| leave.push((cells::key(c), s)));
        }
    }

    fn apply_leaves(&mut self) {
        let mut leave = core::mem::take(&mut self.leave);
        leave.sort_unstable();
        let mut i = 0;
        while i < leave.len() {
            let key = leave[i].0;
            let mut j = i;
            while j < leave.len() && leave[j].0 == key {
                self.mark[leave[j].1 as usize] = 1;
                j += 1;
            }
            let idx = self.map[&key];
            let area = &mut self.areas[idx as usize];
            let mark = &self.mark;
            area.sap.remove_where(|s| mark[s as usize] != 0);
            area.members -= j - i;
            for e in &leave[i..j] {
                self.mark[e.1 as usize] = 0;
            }
            if area.members == 0 {
                self.map.remove(&key);
                self.free_areas.push(idx);
            }
            i = j;
        }
        leave.clear();
        self.leave = leave;
    }

    /// The pairs of region `area` with at least one member that `mark`
    /// says asks for pairs, by one sweep of the region: each pair reported
    /// by the region holding the lower corner of the two boxes'
    /// intersection alone (both boxes meet that region, so one region
    /// reports it; a region holding the pair elsewhere leaves it), into
    /// `arrived` if one of the two is an arrival (a new pair, not tracked
    /// yet), else into `out` as a candidate.
    fn sweep_region(
        store: &Store<S, D>,
        area: &Area<S, D>,
        inv: f64,
        mark: &[u8],
        (olds, news, swept): (&mut Vec<Entry<S>>, &mut Vec<Entry<S>>, &mut Vec<CrossPair>),
        arrived: &mut Vec<(u32, u32)>,
        out: &mut Vec<(u32, u32)>,
    ) {
        swept.clear();
        area.sap.marked_pairs(store, |s| mark[s as usize] != QUIET, olds, news, swept);
        for p in swept.iter() {
            let (a, b) = (&store.aabb[p.a as usize], &store.aabb[p.b as usize]);
            let home = (0..D).all(|k| cells::coord(a.min()[k].max_of(b.min()[k]).to_f64(), inv) == area.coords[k]);
            if home {
                if mark[p.a as usize] == ARRIVAL || mark[p.b as usize] == ARRIVAL {
                    arrived.push((p.a, p.b));
                } else {
                    out.push((p.a, p.b));
                }
            }
        }
    }

    fn apply_enters(&mut self, store: &Store<S, D>, out: &mut Vec<(u32, u32)>) {
        let mut enter = core::mem::take(&mut self.enter);
        if enter.windows(2).all(|w| w[0].1 <= w[1].1) {
            // PERF: entries made in slot order (a batch's arrivals) sorted
            // stably by region alone come out in (region, slot) order: a
            // radix sort of the keys, whose constant digits are skipped,
            // instead of a comparison sort. 1e5 arrivals into 1e6 static
            // proxies (uniform 3D `f32`), the insert frame, three alternated
            // runs: 119-121 -> 114.5-117.5 ms.
            sort_by_small_key(&mut enter, &mut self.enter_scratch, 21 * D as u32, |e| e.0);
        } else {
            enter.sort_unstable_by_key(|e| (e.0, e.1));
        }
        let mut group = core::mem::take(&mut self.group);
        let mut i = 0;
        while i < enter.len() {
            let key = enter[i].0;
            let mut j = i;
            group.clear();
            while j < enter.len() && enter[j].0 == key {
                group.push(enter[j].1);
                j += 1;
            }
            let idx = match self.map.get(&key) {
                Some(&idx) => idx,
                None => {
                    let coords = cells::decode::<D>(key);
                    let idx = match self.free_areas.pop() {
                        Some(f) => {
                            self.areas[f as usize].coords = coords;
                            self.areas[f as usize].sap.clear();
                            self.areas[f as usize].members = 0;
                            f
                        }
                        None => {
                            self.areas.push(Area { coords, sap: Sorted::new(), members: 0 });
                            self.areas.len() as u32 - 1
                        }
                    };
                    self.map.insert(key, idx);
                    idx
                }
            };
            let area = &mut self.areas[idx as usize];
            area.sap.insert(store, &group, &mut self.new, &mut self.bufs);
            area.members += group.len();
            let entries = &enter[i..j];
            let asking = entries.iter().filter(|e| e.2 != QUIET).count();
            // PERF: a level streamed in brings a few arrivals to every
            // region it covers; one sweep of the region finds their pairs
            // for less than a lookup per arrival, and each pair once (see
            // `sweep_region`).
            if entries.iter().any(|e| e.2 == ARRIVAL) && asking * SWEEP_SHARE >= area.sap.len() {
                for e in entries {
                    self.mark[e.1 as usize] = e.2;
                }
                let area = &self.areas[idx as usize];
                let bufs = (&mut self.olds, &mut self.news, &mut self.swept);
                Self::sweep_region(store, area, self.inv, &self.mark, bufs, &mut self.arrived, out);
                for e in entries {
                    self.mark[e.1 as usize] = 0;
                }
                i = j;
                continue;
            }
            for e in entries {
                if e.2 != QUIET {
                    let (s, b) = (e.1, store.aabb[e.1 as usize]);
                    let r = Region::of(&b);
                    area.sap.scan(&r, &mut |t| {
                        if t != s && b.overlaps(&store.aabb[t as usize]) {
                            out.push((s, t));
                        }
                        true
                    });
                }
            }
            i = j;
        }
        enter.clear();
        self.enter = enter;
        self.group = group;
    }
}

impl<S: Scalar, const D: usize> IndexImpl<S, D> for MbpIndex<S, D> {
    const NAME: &'static str = "multi-sap";
    const ONESHOT: bool = true;
    /// Its regions hold the exact boxes, and its queries are cheap.
    const OLD_PAIRS_SHARE: Option<usize> = Some(super::engine::OLD_PAIRS_SHARE);
    /// Each moved proxy's endpoints are swapped into place in its regions,
    /// about 0.9 µs a proxy at 1e5 against some 45 ns a proxy for a
    /// one-shot frame: past about one proxy in 20 moving, the one-shot
    /// frame is cheaper. 1e5 uniform `f32`, 0.05 a frame, `broadphase bench
    /// --workload frames`: 1%, 2%, 5%, 10% moving 0.92, 1.70, 4.23, 8.89 ms;
    /// the one-shot frame about 4.1-4.5 ms.
    const BUSY_CHANGES: usize = 20;
    /// The arrivals are merged into their regions anyway, and a region
    /// swept whole finds their pairs (see `apply_enters`).
    const ARRIVALS_ONESHOT: Option<usize> = None;

    fn update(&mut self, store: &Store<S, D>, frame: &Frame<S, D>, out: &mut Vec<(u32, u32)>) {
        self.ensure(store.slots());
        if self.size == 0.0 {
            self.choose(store, frame.inserted.iter().copied());
        }
        for &s in &frame.removed {
            let held = store.aabb[s as usize];
            self.unfile(s, &held);
        }
        for (s, old) in &frame.moved {
            let s = *s;
            let new = store.aabb[s as usize];
            let (r0, r1) = (self.range(old), self.range(&new));
            let was_big = self.big_pos[s as usize] != NIL;
            if was_big || Self::is_big(&r1) {
                if was_big {
                    self.drop_big(s);
                } else {
                    self.unfile(s, old);
                }
                self.file(store, s, CANDIDATES, out);
                continue;
            }
            // Regions in both: sweep; left: compact; entered: merge and scan.
            let areas = &mut self.areas;
            let (map, leave, enter) = (&self.map, &mut self.leave, &mut self.enter);
            cells::each(&r0, |c| {
                let key = cells::key(c);
                if cells::inside(&r1, c) {
                    areas[map[&key] as usize].sap.move_box(s, old, &new, out);
                } else {
                    leave.push((key, s));
                }
            });
            cells::each(&r1, |c| {
                if !cells::inside(&r0, c) {
                    enter.push((cells::key(c), s, CANDIDATES));
                }
            });
            self.against_big(store, s, out);
        }
        self.apply_leaves();
        let how = if frame.inserted_candidates { ARRIVAL } else { QUIET };
        for &s in &frame.inserted {
            self.file(store, s, how, out);
        }
        self.apply_enters(store, out);
        for &s in &frame.refiltered {
            let b = store.aabb[s as usize];
            self.query(store, &Region::of(&b), &mut |t| {
                if t != s {
                    out.push((s, t));
                }
                true
            });
        }
    }

    fn take_arrival_pairs(&mut self, out: &mut Vec<(u32, u32)>) {
        out.append(&mut self.arrived);
    }

    fn empty_like(&self) -> Self {
        Self::default()
    }

    fn rebuild(&mut self, store: &Store<S, D>) {
        self.ensure(store.slots());
        for (_, &idx) in self.map.iter() {
            self.free_areas.push(idx);
        }
        self.map.clear();
        for &s in &self.big {
            self.big_pos[s as usize] = NIL;
        }
        self.big.clear();
        let live = || (0..store.slots() as u32).filter(|&s| store.meta[s as usize].state == State::Live);
        self.choose(store, live());
        let mut sink = Vec::new();
        for s in live() {
            self.file(store, s, QUIET, &mut sink);
        }
        self.apply_enters(store, &mut sink);
    }

    fn query(&self, store: &Store<S, D>, region: &Region<D>, f: &mut dyn FnMut(u32) -> bool) {
        for &t in &self.big {
            if store.indexed(t) && region.overlaps(&store.aabb[t as usize]) && !f(t) {
                return;
            }
        }
        if self.size == 0.0 {
            return;
        }
        let r: Range<D> =
            (core::array::from_fn(|k| self.coord(region.min[k])), core::array::from_fn(|k| self.coord(region.max[k])));
        let count = (0..D).fold(1i64, |n, k| n.saturating_mul(r.1[k] - r.0[k] + 1));
        let visit = |area: &Area<S, D>, f: &mut dyn FnMut(u32) -> bool| {
            area.sap.scan(region, &mut |t| {
                let b = &store.aabb[t as usize];
                if !store.indexed(t) || !region.overlaps(b) {
                    return true;
                }
                // Report each proxy once: in the region holding the lower
                // corner of its intersection with the query.
                let home = (0..D).all(|k| self.coord(region.min[k].max(b.min()[k].to_f64())) == area.coords[k]);
                !home || f(t)
            })
        };
        if count > self.map.len() as i64 {
            for &idx in self.map.values() {
                let area = &self.areas[idx as usize];
                if cells::inside(&r, &area.coords) && !visit(area, f) {
                    return;
                }
            }
        } else {
            let mut go = true;
            cells::each(&r, |c| {
                if go {
                    if let Some(&idx) = self.map.get(&cells::key(c)) {
                        go = visit(&self.areas[idx as usize], f);
                    }
                }
            });
        }
    }

    fn validate(&self, store: &Store<S, D>) -> Result<(), String> {
        let mut filed = 0usize;
        for s in 0..store.slots() as u32 {
            if !store.indexed(s) {
                continue;
            }
            let r = self.range(&store.aabb[s as usize]);
            let big = self.big_pos[s as usize] != NIL;
            if big != Self::is_big(&r) {
                return Err(format!("multi-sap: slot {s} is filed as the wrong size"));
            }
            if big {
                if self.big.get(self.big_pos[s as usize] as usize) != Some(&s) {
                    return Err(format!("multi-sap: slot {s} is not at its place in the large list"));
                }
                continue;
            }
            let mut missing = None;
            cells::each(&r, |c| {
                filed += 1;
                if !self.map.contains_key(&cells::key(c)) {
                    missing = Some(*c);
                }
            });
            if let Some(c) = missing {
                return Err(format!("multi-sap: slot {s}'s region {c:?} does not exist"));
            }
        }
        let mut held = 0;
        for (&key, &idx) in &self.map {
            let area = &self.areas[idx as usize];
            if cells::key(&area.coords) != key {
                return Err(format!("multi-sap: region {:?} is mapped under another key", area.coords));
            }
            let member = |s: u32| {
                store.indexed(s)
                    && self.big_pos[s as usize] == NIL
                    && cells::inside(&self.range(&store.aabb[s as usize]), &area.coords)
            };
            area.sap.validate(store, member, &format!("multi-sap region {:?}", area.coords))?;
            if area.members == 0 || 2 * area.members != area.sap.len() {
                return Err(format!("multi-sap region {:?}: {} members counted", area.coords, area.members));
            }
            held += area.members;
        }
        if held != filed {
            return Err(format!("multi-sap: regions hold {held} entries, proxies need {filed}"));
        }
        Ok(())
    }

    fn release_scratch(&mut self) {
        self.leave = Vec::new();
        self.enter = Vec::new();
        self.enter_scratch = Vec::new();
        self.group = Vec::new();
        self.new = Vec::new();
        self.bufs = (Vec::new(), Vec::new());
        self.olds = Vec::new();
        self.news = Vec::new();
        self.swept = Vec::new();
        self.arrived = Vec::new();
        self.areas.iter_mut().for_each(|a| a.sap.shrink());
    }

    fn memory(&self) -> usize {
        use core::mem::size_of;
        self.areas.iter().map(|a| a.sap.memory() + size_of::<Area<S, D>>()).sum::<usize>()
            + self.map.capacity() * (size_of::<(u64, u32)>() + 1)
            + (self.big_pos.capacity() + self.big.capacity() + self.free_areas.capacity() + self.group.capacity()) * 4
            + self.mark.capacity()
            + self.leave.capacity() * 12
            + (self.enter.capacity() + self.enter_scratch.capacity()) * 16
            + (self.olds.capacity() + self.news.capacity()) * size_of::<Entry<S>>()
            + (self.swept.capacity() + self.arrived.capacity()) * 8
            + self.new.capacity() * size_of::<(S, u32)>()
            + (self.bufs.0.capacity() + self.bufs.1.capacity()) * 8
    }
}
