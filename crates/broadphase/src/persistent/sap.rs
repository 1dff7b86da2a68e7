//! Incremental sweep-and-prune (seeds 000, 001, 004; Baraff's coherent
//! sorting, Bullet's `btAxisSweep3`, PhysX's SAP).
//!
//! # Idea
//!
//! On every axis the 2n endpoints of the boxes are kept sorted. Endpoints are
//! packed PhysX-style: a value array and a tag array (`slot << 1 | is_max`),
//! framed by sentinels at −∞ and +∞ so the insertion loops need no bounds
//! checks. Equal values order lower endpoints first, so touching intervals
//! overlap (closed boxes).
//!
//! When a box moves, each endpoint is carried to its new place by insertion
//! sort. Two intervals start overlapping on an axis exactly when a lower
//! endpoint of one passes an upper endpoint of the other; each such swap
//! makes the pair a *candidate*, which the engine confirms with the full box
//! test on the final boxes once every move of the frame is done. Pairs end
//! by the engine re-testing the cached pairs of moved proxies, so no swap in
//! the separating direction needs handling. No per-axis overlap counters are
//! kept (Jitter's lesson: they cost O(overlapping pairs on any axis) memory,
//! quadratic in a dense axis); memory stays O(n).
//!
//! # How many axes
//!
//! All `D`. With one sorted axis, a move along another axis changes overlaps
//! without any swap, and finding them costs a scan of every box overlapping
//! on the sorted axis (about n^(2/3) in a 3D world). With all axes sorted
//! every new overlap shows as a swap on the axis where the boxes were apart.
//! The price: a moving endpoint swaps with every endpoint it passes, on every
//! axis, so the cost per frame is the number of endpoints passed. That is
//! small for small steps in sparse or 2D scenes and large in dense 3D
//! scenes, where the grid and tree indexes win.
//!
//! Endpoints of a moved box are found by binary search on their old value
//! (then a scan of equal values), instead of storing each endpoint's
//! position per axis, which would cost two writes per swap.
//!
//! # Batches
//!
//! Inserted boxes are sorted among themselves and merged into each axis in
//! one backward pass (no insertion passes). Removals compact each axis in one
//! pass. A frame in which most boxes changed is rebuilt by sorting (the
//! engine's one-shot path). Static proxies cost nothing in a frame where they
//! do not move.
//!
//! # Queries
//!
//! A query region is answered from the sorted axis that gives the fewest
//! candidates: the boxes whose lower endpoint lies in `[min − e, max]`, where
//! `e` bounds the extent of every box on that axis. A few huge boxes make `e`
//! large and the query slow (the multi-region variant is the answer there).

use super::engine::{sealed::IndexImpl, Frame};
use super::query::Region;
use super::store::{State, Store};
use crate::sort::{keyed, payload, sort_keyed, sort_runs_by};
use crate::sweep::{Axes, Entry};
use crate::{Aabb, CrossPair, Scalar};

const SENTINEL: u32 = u32::MAX;

/// One axis: endpoint values and tags, sorted, between two sentinels.
#[derive(Clone, Debug)]
struct Axis<S> {
    value: Vec<S>,
    tag: Vec<u32>,
}

/// Whether endpoint `(v1, t1)` sorts strictly before `(v2, t2)`: smaller
/// value, or the same value with a lower endpoint before an upper one.
#[inline(always)]
fn before<S: Scalar>(v1: S, t1: u32, v2: S, t2: u32) -> bool {
    v1 < v2 || (v1 == v2 && (t1 & 1) < (t2 & 1))
}

impl<S: Scalar> Axis<S> {
    fn reset(&mut self) {
        self.value.clear();
        self.tag.clear();
        self.value.push(S::from_f64(f64::NEG_INFINITY));
        self.tag.push(SENTINEL);
        self.value.push(S::INFINITY);
        self.tag.push(SENTINEL);
    }

    /// The position of the endpoint `tag` whose value is `v`.
    fn find(&self, v: S, tag: u32) -> usize {
        let (mut lo, mut hi) = (0, self.value.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if before(self.value[mid], self.tag[mid], v, tag) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        while self.tag[lo] != tag {
            debug_assert!(self.value[lo] == v, "endpoint {tag} of value {v:?} not found");
            lo += 1;
        }
        lo
    }

    /// The first position whose value is at least `v` (`f64` comparison).
    fn lower_bound(&self, v: f64) -> usize {
        self.value.partition_point(|x| x.to_f64() < v)
    }

    /// The first position whose value is above `v`.
    fn upper_bound(&self, v: f64) -> usize {
        self.value.partition_point(|x| x.to_f64() <= v)
    }

    /// Sets the endpoint at `p` (tag `t` of slot `s`) to `v` and carries it
    /// to its place, appending `(s, other)` for every upper endpoint a lower
    /// one passes leftwards and every lower endpoint an upper one passes
    /// rightwards.
    #[inline]
    fn shift(&mut self, mut p: usize, v: S, t: u32, out: &mut Vec<(u32, u32)>) {
        let s = t >> 1;
        let (vals, tags) = (&mut self.value[..], &mut self.tag[..]);
        if before(v, t, vals[p - 1], tags[p - 1]) {
            let is_min = t & 1 == 0;
            while before(v, t, vals[p - 1], tags[p - 1]) {
                let o = tags[p - 1];
                if is_min && o & 1 == 1 {
                    out.push((s, o >> 1));
                }
                vals[p] = vals[p - 1];
                tags[p] = o;
                p -= 1;
            }
        } else {
            let is_max = t & 1 == 1;
            while before(vals[p + 1], tags[p + 1], v, t) {
                let o = tags[p + 1];
                if is_max && o & 1 == 0 {
                    out.push((s, o >> 1));
                }
                vals[p] = vals[p + 1];
                tags[p] = o;
                p += 1;
            }
        }
        vals[p] = v;
        tags[p] = t;
    }

    /// Merges sorted new endpoints in one pass: backwards in place where
    /// the arrays have room, forwards into new arrays where they grow.
    fn merge(&mut self, new: &[(S, u32)]) {
        let n = self.value.len();
        let m = new.len();
        if m == 0 {
            return;
        }
        if self.value.capacity() < n + m || self.tag.capacity() < n + m {
            // PERF: grown by an eighth, not doubled as `Vec` would. The
            // multi-region SAP's regions are built to size; a level streamed
            // in afterwards adds a few endpoints to each, and doubling every
            // region's arrays took fresh pages for the whole index (1e5
            // arrivals into 1e6 static proxies: the regions' merges 100-110
            // ms the first time, 60-70 ms once they had room; 66 ms the
            // first time with this growth).
            let room = n + m + (n + m) / 8;
            // PERF: merged forwards into the new arrays, each endpoint
            // written once, instead of copied by the reallocation first
            // (which, for arrays on the heap, is a copy of the whole axis)
            // and moved again by the merge. 1e5 arrivals into 1e6 static
            // proxies, the whole insert frame, three alternated runs:
            // incremental SAP 127-132 -> 112-115 ms, multi-region SAP
            // 145-152 -> 130-141 ms.
            let mut value = Vec::new();
            let mut tag = Vec::new();
            crate::mem::reserve(&mut value, room);
            crate::mem::reserve(&mut tag, room);
            // Old real endpoints are at 1..n-1, between the sentinels.
            value.push(self.value[0]);
            tag.push(self.tag[0]);
            let mut i = 1;
            for &(v, t) in new {
                while i < n - 1 && !before(v, t, self.value[i], self.tag[i]) {
                    value.push(self.value[i]);
                    tag.push(self.tag[i]);
                    i += 1;
                }
                value.push(v);
                tag.push(t);
            }
            value.extend_from_slice(&self.value[i..]);
            tag.extend_from_slice(&self.tag[i..]);
            self.value = value;
            self.tag = tag;
            return;
        }
        self.value.resize(n + m, S::INFINITY);
        self.tag.resize(n + m, SENTINEL);
        // Old real endpoints are at 1..n-1; the right sentinel goes last.
        let (mut i, mut j, mut w) = (n - 2, m, n + m - 2);
        while j > 0 {
            let (v, t) = new[j - 1];
            if before(v, t, self.value[i], self.tag[i]) {
                self.value[w] = self.value[i];
                self.tag[w] = self.tag[i];
                i -= 1;
            } else {
                self.value[w] = v;
                self.tag[w] = t;
                j -= 1;
            }
            w -= 1;
        }
        let last = n + m - 1;
        self.value[last] = S::INFINITY;
        self.tag[last] = SENTINEL;
    }
}

/// The endpoints of `slots` on axis `k`, sorted (lower before upper at equal
/// values), into `out`: a radix sort of the monotone keys, then, where keys
/// are not exact (`f64`), an exact ordering of each run of equal keys.
pub(crate) fn sorted_endpoints<S: Scalar, const D: usize>(
    store: &Store<S, D>,
    slots: &[u32],
    k: usize,
    out: &mut Vec<(S, u32)>,
    bufs: &mut (Vec<u64>, Vec<u64>),
) {
    let value = |tag: u32| {
        let b = &store.aabb[(tag >> 1) as usize];
        if tag & 1 == 0 {
            b.min()[k]
        } else {
            b.max()[k]
        }
    };
    let (items, scratch) = bufs;
    items.clear();
    for &s in slots {
        let b = &store.aabb[s as usize];
        items.push(keyed(b.min()[k].sort_key(), s << 1));
        items.push(keyed(b.max()[k].sort_key(), s << 1 | 1));
    }
    sort_keyed(items, scratch, false);
    if S::KEY_IS_EXACT {
        // PERF: exact keys (`f32`): equal keys are equal values, so a run
        // of equal keys needs only its lower endpoints put first (stably,
        // as the refinement below leaves them), and each value is read back
        // from its key instead of from its box, at random. 1e5 arrivals
        // into 1e6 static proxies (uniform 3D `f32`), the three axes'
        // sorts: 8.4-10.3 -> 4.9-5.3 ms; the whole insert, three alternated
        // runs, incremental SAP 113-116 -> 108-110 ms, multi-region SAP
        // 125-126 -> 120-124 ms; the index's rebuild over 1e6 proxies, its
        // sorts 151-178 -> 72-75 ms.
        sort_runs_by(items, |tx, ty| (tx & 1).cmp(&(ty & 1)));
        out.clear();
        out.extend(items.iter().map(|&x| {
            let v = S::from_f64(f64::from(crate::math::f32_from_key((x >> 32) as u32)));
            debug_assert!(v == value(payload(x)));
            (v, payload(x))
        }));
        return;
    }
    sort_runs_by(items, |tx, ty| {
        if before(value(tx), tx, value(ty), ty) {
            core::cmp::Ordering::Less
        } else if before(value(ty), ty, value(tx), tx) {
            core::cmp::Ordering::Greater
        } else {
            core::cmp::Ordering::Equal
        }
    });
    out.clear();
    out.extend(items.iter().map(|&x| (value(payload(x)), payload(x))));
}

/// Endpoints sorted on every axis, with an upper bound of the indexed boxes'
/// extents per axis: the whole index of [`IncrementalSap`](super::IncrementalSap),
/// and one region of the multi-region SAP.
#[derive(Clone, Debug)]
pub(crate) struct Sorted<S: Scalar, const D: usize> {
    axes: [Axis<S>; D],
    /// An upper bound of every indexed box's extent on each axis.
    extent: [f64; D],
}

impl<S: Scalar, const D: usize> Sorted<S, D> {
    pub fn new() -> Self {
        let mut axes: [Axis<S>; D] = core::array::from_fn(|_| Axis { value: Vec::new(), tag: Vec::new() });
        axes.iter_mut().for_each(Axis::reset);
        Self { axes, extent: [0.0; D] }
    }

    pub fn clear(&mut self) {
        self.axes.iter_mut().for_each(Axis::reset);
        self.extent = [0.0; D];
    }

    /// Endpoints per axis (without sentinels): twice the boxes held.
    pub fn len(&self) -> usize {
        self.axes[0].value.len() - 2
    }

    pub fn grow_extent(&mut self, b: &Aabb<S, D>) {
        for k in 0..D {
            // Rounded up: the f64 difference may round below the true one.
            self.extent[k] = self.extent[k].max(b.extent(k).next_up());
        }
    }

    /// Carries the endpoints of `s` from `old` to `new`, appending a
    /// candidate for each lower endpoint passed by an upper one.
    pub fn move_box(&mut self, s: u32, old: &Aabb<S, D>, new: &Aabb<S, D>, out: &mut Vec<(u32, u32)>) {
        for k in 0..D {
            let ax = &mut self.axes[k];
            let lo = (old.min()[k], new.min()[k], s << 1);
            let hi = (old.max()[k], new.max()[k], s << 1 | 1);
            // Move the leading endpoint first so a box never passes itself.
            let order = if new.max()[k] > old.max()[k] { [hi, lo] } else { [lo, hi] };
            for (from, to, t) in order {
                if from != to || from.to_f64().to_bits() != to.to_f64().to_bits() {
                    let p = ax.find(from, t);
                    ax.shift(p, to, t, out);
                }
            }
        }
        self.grow_extent(new);
    }

    /// Drops the endpoints of every slot `gone` says, in one pass per axis.
    pub fn remove_where(&mut self, gone: impl Fn(u32) -> bool) {
        for ax in &mut self.axes {
            let mut w = 0;
            for r in 0..ax.value.len() {
                let t = ax.tag[r];
                if t == SENTINEL || !gone(t >> 1) {
                    ax.value[w] = ax.value[r];
                    ax.tag[w] = t;
                    w += 1;
                }
            }
            ax.value.truncate(w);
            ax.tag.truncate(w);
        }
    }

    /// Merges the current boxes of `slots` in (sorted among themselves
    /// first, then one backward merge per axis).
    pub fn insert(
        &mut self,
        store: &Store<S, D>,
        slots: &[u32],
        new: &mut Vec<(S, u32)>,
        bufs: &mut (Vec<u64>, Vec<u64>),
    ) {
        if slots.is_empty() {
            return;
        }
        for k in 0..D {
            sorted_endpoints(store, slots, k, new, bufs);
            self.axes[k].merge(new);
        }
        for &s in slots {
            self.grow_extent(&store.aabb[s as usize]);
        }
    }

    /// Appends every pair of held slots whose boxes (the store's) overlap
    /// and of which at least one is marked, once, by one sweep along axis
    /// 0: the held boxes in the order of their lower endpoints there (read
    /// off the sorted axis), split into the unmarked (`olds`) and the marked
    /// (`news`), the two lists swept against each other and the marked among
    /// themselves. Pairs are `(old, new)` or `(new, new)`. `olds` and `news`
    /// are scratch.
    pub fn marked_pairs(
        &self,
        store: &Store<S, D>,
        marked: impl Fn(u32) -> bool,
        olds: &mut Vec<Entry<S>>,
        news: &mut Vec<Entry<S>>,
        out: &mut Vec<CrossPair>,
    ) {
        /// How many endpoints ahead the boxes are prefetched.
        const AHEAD: usize = 16;
        olds.clear();
        news.clear();
        let axes = Axes::new(D, 0);
        let tags = &self.axes[0].tag;
        let last = tags.len() - 1;
        for p in 1..last {
            // PERF: the held boxes are read in the order of one axis, that
            // is, at random in the store.
            let u = tags[(p + AHEAD).min(last - 1)];
            crate::sweep::prefetch(&store.aabb[(u >> 1) as usize]);
            let t = tags[p];
            if t & 1 == 0 {
                let s = t >> 1;
                let e = Entry::new(&store.aabb[s as usize], &axes, s);
                if marked(s) {
                    news.push(e);
                } else {
                    olds.push(e);
                }
            }
        }
        let fresh = news.len();
        olds.push(Entry::sentinel());
        news.push(Entry::sentinel());
        crate::sweep::sweep_two_from(olds, news, 0, 0, usize::MAX, out);
        crate::sweep::sweep_one(news, 0..fresh, out);
    }

    /// Calls `f` with each slot whose box may meet `region`: those with a
    /// lower endpoint in `[min − e, max]` on the axis that has fewest.
    pub fn scan(&self, region: &Region<D>, f: &mut dyn FnMut(u32) -> bool) -> bool {
        let mut best = (usize::MAX, 0, 0, 0);
        for k in 0..D {
            let ax = &self.axes[k];
            let lo = ax.lower_bound((region.min[k] - self.extent[k]).next_down());
            let hi = ax.upper_bound(region.max[k]);
            let n = hi.saturating_sub(lo);
            if n < best.0 {
                best = (n, k, lo, hi);
            }
        }
        let (_, k, lo, hi) = best;
        let ax = &self.axes[k];
        for p in lo..hi {
            let t = ax.tag[p];
            if t & 1 == 0 && !f(t >> 1) {
                return false;
            }
        }
        true
    }

    /// Checks order, sentinels, values against the store, and that exactly
    /// the slots `member` says are held, each once per axis.
    pub fn validate(&self, store: &Store<S, D>, member: impl Fn(u32) -> bool, name: &str) -> Result<(), String> {
        let mut count = vec![0u32; store.slots()];
        for (k, ax) in self.axes.iter().enumerate() {
            let n = ax.value.len();
            if n < 2 || ax.tag[0] != SENTINEL || ax.tag[n - 1] != SENTINEL {
                return Err(format!("{name} axis {k}: sentinels missing"));
            }
            for p in 1..n {
                if before(ax.value[p], ax.tag[p], ax.value[p - 1], ax.tag[p - 1]) {
                    return Err(format!("{name} axis {k}: endpoints {} and {p} out of order", p - 1));
                }
            }
            count.iter_mut().for_each(|c| *c = 0);
            for p in 1..n - 1 {
                let t = ax.tag[p];
                let s = (t >> 1) as usize;
                if t == SENTINEL || s >= store.slots() || !member(t >> 1) {
                    return Err(format!("{name} axis {k}: endpoint {p} names slot {s}, not a member"));
                }
                let b = &store.aabb[s];
                let want = if t & 1 == 0 { b.min()[k] } else { b.max()[k] };
                if ax.value[p] != want {
                    return Err(format!("{name} axis {k}: endpoint {p} of slot {s} is stale"));
                }
                count[s] += if t & 1 == 0 { 1 } else { 1 << 16 };
                if t & 1 == 0 && b.extent(k) > self.extent[k] {
                    return Err(format!("{name} axis {k}: slot {s} is wider than the extent bound"));
                }
            }
            for (s, &c) in count.iter().enumerate() {
                let want = if member(s as u32) { 1 << 16 | 1 } else { 0 };
                if c != want {
                    return Err(format!(
                        "{name} axis {k}: slot {s} has {} lower and {} upper endpoints",
                        c & 0xffff,
                        c >> 16
                    ));
                }
            }
        }
        Ok(())
    }

    pub fn shrink(&mut self) {
        for ax in &mut self.axes {
            ax.value.shrink_to_fit();
            ax.tag.shrink_to_fit();
        }
    }

    pub fn memory(&self) -> usize {
        self.axes.iter().map(|a| a.value.capacity() * core::mem::size_of::<S>() + a.tag.capacity() * 4).sum()
    }
}

/// The index of [`IncrementalSap`](super::IncrementalSap): every axis sorted.
#[derive(Clone, Debug)]
pub struct SapIndex<S: Scalar, const D: usize> {
    sorted: Sorted<S, D>,
    new: Vec<(S, u32)>,
    scratch: (Vec<u64>, Vec<u64>),
}

impl<S: Scalar, const D: usize> Default for SapIndex<S, D> {
    fn default() -> Self {
        Self { sorted: Sorted::new(), new: Vec::new(), scratch: (Vec::new(), Vec::new()) }
    }
}

impl<S: Scalar, const D: usize> SapIndex<S, D> {
    /// Candidates of slot `s`: every indexed slot that may overlap its box.
    fn candidates_of(&self, store: &Store<S, D>, s: u32, out: &mut Vec<(u32, u32)>) {
        let r = Region::of(&store.aabb[s as usize]);
        self.sorted.scan(&r, &mut |t| {
            if t != s && store.indexed(t) && r.overlaps(&store.aabb[t as usize]) {
                out.push((s, t));
            }
            true
        });
    }
}

impl<S: Scalar, const D: usize> IndexImpl<S, D> for SapIndex<S, D> {
    const NAME: &'static str = "incremental-sap";
    const ONESHOT: bool = true;
    /// It holds the exact boxes, and finds the changed proxies' pairs by one
    /// sweep (`marked_pairs`).
    const OLD_PAIRS_SHARE: Option<usize> = Some(super::engine::OLD_PAIRS_SHARE);
    /// Every moved proxy's endpoints are swapped into place on every axis:
    /// 1% of 1e5 moving took 2.84 ms, 10% of 1e4 1.09 ms, against one-shot
    /// frames of about 4.3 and 0.36 ms (`broadphase bench --workload
    /// frames`, `frames`): past about one proxy in 32 moving, the one-shot
    /// frame is cheaper.
    const BUSY_CHANGES: usize = 32;

    fn update(&mut self, store: &Store<S, D>, frame: &Frame<S, D>, out: &mut Vec<(u32, u32)>) {
        if !frame.removed.is_empty() {
            self.sorted.remove_where(|s| store.meta[s as usize].state == State::Removing);
            // The extents shrink only here: recompute them over what stays
            // (moved boxes count with both their old and new extents below).
            self.sorted.extent = [0.0; D];
            for s in 0..store.slots() as u32 {
                if store.meta[s as usize].state == State::Live {
                    self.sorted.grow_extent(&store.aabb[s as usize]);
                }
            }
            for (_, old) in &frame.moved {
                self.sorted.grow_extent(old);
            }
        }
        for (s, old) in &frame.moved {
            let new = store.aabb[*s as usize];
            self.sorted.move_box(*s, old, &new, out);
        }
        self.sorted.insert(store, &frame.inserted, &mut self.new, &mut self.scratch);
        if frame.inserted_candidates {
            for &s in &frame.inserted {
                self.candidates_of(store, s, out);
            }
        }
        for &s in &frame.refiltered {
            self.candidates_of(store, s, out);
        }
    }

    fn empty_like(&self) -> Self {
        Self::default()
    }

    fn rebuild(&mut self, store: &Store<S, D>) {
        let live: Vec<u32> =
            (0..store.slots() as u32).filter(|&s| store.meta[s as usize].state == State::Live).collect();
        self.sorted.clear();
        self.sorted.insert(store, &live, &mut self.new, &mut self.scratch);
    }

    /// One sweep of axis 0 (see `Sorted::marked_pairs`), where a query per
    /// marked slot scans a slab of endpoints (1000 queries at 1e5 proxies:
    /// 49-50 ms).
    fn marked_pairs(
        &self,
        store: &Store<S, D>,
        _slots: &[u32],
        marked: &dyn Fn(u32) -> bool,
        out: &mut Vec<(u32, u32)>,
    ) {
        let (mut olds, mut news, mut pairs) = (Vec::new(), Vec::new(), Vec::new());
        self.sorted.marked_pairs(store, marked, &mut olds, &mut news, &mut pairs);
        out.extend(pairs.iter().map(|p| (p.a, p.b)));
    }

    fn query(&self, store: &Store<S, D>, region: &Region<D>, f: &mut dyn FnMut(u32) -> bool) {
        self.sorted.scan(region, &mut |s| !(store.indexed(s) && region.overlaps(&store.aabb[s as usize])) || f(s));
    }

    fn validate(&self, store: &Store<S, D>) -> Result<(), String> {
        self.sorted.validate(store, |s| store.indexed(s), "sap")
    }

    fn release_scratch(&mut self) {
        self.new = Vec::new();
        self.scratch = (Vec::new(), Vec::new());
        self.sorted.shrink();
    }

    fn memory(&self) -> usize {
        self.sorted.memory()
            + self.new.capacity() * core::mem::size_of::<(S, u32)>()
            + (self.scratch.0.capacity() + self.scratch.1.capacity()) * 8
    }
}
