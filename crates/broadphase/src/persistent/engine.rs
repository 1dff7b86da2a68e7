//! The engine shared by every persistent algorithm: slots, pending changes,
//! pair rules, the pair cache, events and queries, over a spatial index that
//! supplies candidates.

use super::coarse::{Coarse, Mode};
use super::marks::Marks;
use super::pairs::{PairCache, PairEvent, ProxyPair, Verdict};
use super::query::{displacement, Ray, RayHit, Region, Sphere, REACH_CAP};
use super::store::{State, Store};
use super::{BroadPhase, Filter, PairPolicy, Proxy};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

use crate::oneshot::Plan;
use crate::sort::{keyed, payload, sort_by_small_key, sort_keyed};
use crate::{Aabb, Algorithm, Pair, PairFinder, ProxyError, ProxyId, Scalar, Workspace};

/// What changed in one update, as the index sees it. Boxes in the store are
/// already the new ones.
pub struct Frame<S: Scalar, const D: usize> {
    /// Slots in state `Removing`: drop them from the index.
    pub removed: Vec<u32>,
    /// Moved slots with their previous boxes.
    pub moved: Vec<(u32, Aabb<S, D>)>,
    /// Empty if no caller gave a velocity in this update; else for each
    /// moved slot, the displacement per update the caller expects (given
    /// with the box), or the one observed. Read through
    /// [`Frame::velocity`].
    velocity: Vec<[f64; D]>,
    /// Slots that arrived (now `Live`).
    pub inserted: Vec<u32>,
    /// Slots whose filter changed but whose box did not.
    pub refiltered: Vec<u32>,
    /// For an index that [screens moves](sealed::IndexImpl::SCREENS_MOVES):
    /// the positions in `moved` of the slots whose new box leaves the box
    /// the index holds for them, in order (empty for other indexes).
    pub left: Vec<u32>,
    /// Whether the index must report candidates for `inserted` (the engine
    /// found their pairs itself otherwise).
    pub inserted_candidates: bool,
}

impl<S: Scalar, const D: usize> Default for Frame<S, D> {
    fn default() -> Self {
        Self {
            removed: Vec::new(),
            moved: Vec::new(),
            velocity: Vec::new(),
            inserted: Vec::new(),
            refiltered: Vec::new(),
            left: Vec::new(),
            inserted_candidates: true,
        }
    }
}

impl<S: Scalar, const D: usize> Frame<S, D> {
    /// The displacement per update of moved entry `i`: the one its caller
    /// gave with the box, or the one observed (from its previous box to
    /// its box in `store`).
    #[inline]
    pub fn velocity(&self, i: usize, store: &Store<S, D>) -> [f64; D] {
        match self.velocity.get(i) {
            Some(v) => *v,
            None => {
                let (s, old) = &self.moved[i];
                displacement(old, &store.aabb[*s as usize])
            }
        }
    }

    fn clear(&mut self) {
        self.removed.clear();
        self.moved.clear();
        self.velocity.clear();
        self.inserted.clear();
        self.refiltered.clear();
        self.left.clear();
    }
}

pub mod sealed {
    use super::{Aabb, Frame, Region, Scalar, State, Store};

    /// The operations an index offers the engine.
    pub trait IndexImpl<S: Scalar, const D: usize>: Default {
        /// The algorithm's name.
        const NAME: &'static str;
        /// Whether the engine may answer frames in which most proxies changed
        /// with a rebuild and a one-shot search (every index but the
        /// brute-force reference).
        const ONESHOT: bool;
        /// With `ONESHOT`: a frame in which one proxy in this many or more
        /// changed (moved, or got a new filter) is busy, whatever it
        /// inserts; one that also counts the arrivals is busy from a
        /// quarter (see `Engine::busy`). By default a quarter too.
        const BUSY_CHANGES: usize = 4;
        /// With `ONESHOT`: a frame whose moves are expected to re-fatten
        /// one proxy in this many or more is one-shot (see the engine module's `FAST_SHARE`,
        /// the default).
        const FAST_SHARE: usize = super::FAST_SHARE;
        /// With `ONESHOT`: the first incremental frame after one-shot ones
        /// finds the pairs to track from the last update's pairs where at
        /// most one proxy in this many changed since, asking the index for
        /// the changed ones' pairs ([`marked_pairs`](Self::marked_pairs);
        /// see `Engine::pairs_from_old`); `None`: always by a search over
        /// every held box. Only for an index whose rebuild holds every
        /// proxy's exact box (so that the pairs to track right after it are
        /// the overlapping pairs) and which finds those pairs cheaply.
        const OLD_PAIRS_SHARE: Option<usize> = None;
        /// A batch of arrivals that is at least this share (one in
        /// `ARRIVALS_ONESHOT`) of all the proxies finds its pairs by a
        /// one-shot search among the arrivals and a grid over them that the
        /// others stream through (see `begin_inserted`), a smaller one by
        /// the index's candidates; `None`: always by the
        /// index (its candidates, and its
        /// [`take_arrival_pairs`](Self::take_arrival_pairs)); a batch of a
        /// quarter or more makes a bulk frame in any case. With `ONESHOT`
        /// only.
        const ARRIVALS_ONESHOT: Option<usize> = Some(64);

        /// Brings the index up to date with the frame and appends candidate
        /// pairs of slots: every pair that may have begun overlapping, which
        /// involves a moved slot, or an inserted one (when the frame asks),
        /// or every overlapping pair of a re-filtered slot.
        fn update(&mut self, store: &Store<S, D>, frame: &Frame<S, D>, out: &mut Vec<(u32, u32)>);

        /// Moves into `out` the pairs the last [`update`](Self::update) found
        /// for the inserted slots apart from its candidates: each once, with
        /// at least one inserted slot, and overlapping as the index holds
        /// them (so tracked by no earlier frame). By default none.
        fn take_arrival_pairs(&mut self, _out: &mut Vec<(u32, u32)>) {}

        /// Whether the index holds the boxes of indexed slots `s` and `t` as
        /// overlapping (exactly, or with margins): such pairs are tracked,
        /// and tracked pairs must include every overlapping one. By default
        /// the index holds the exact boxes.
        fn tracks(&self, store: &Store<S, D>, s: u32, t: u32) -> bool {
            store.aabb[s as usize].overlaps(&store.aabb[t as usize])
        }

        /// Whether the box the index holds for `s` changed in the last
        /// `update` (always, for indexes that hold exact boxes). A moved slot
        /// whose held box did not change keeps all its tracked pairs.
        fn box_changed(&self, _s: u32) -> bool {
            true
        }

        /// Starts loading what [`tracks`](Self::tracks) reads about slot
        /// `s` besides its exact box.
        #[inline]
        fn prefetch_held(&self, _s: u32) {}

        /// Whether the engine lists in [`Frame::left`] the moved slots whose
        /// new box leaves their [`tracked_box`](Self::tracked_box), which
        /// are then the only moved slots the index re-files. The engine
        /// finds them while it applies the moves, as it writes each new box:
        /// the held box is prefetched with the slot's other words, instead
        /// of missing again in a later pass over the moves. Worth it where
        /// the held box is one load away (the grid); the tree's is three
        /// dependent loads away (kind, leaf, node), which nothing prefetches:
        /// screened, its 10% frame at 1e5 was 10% slower (`frames`, eight
        /// runs each way alternated).
        const SCREENS_MOVES: bool = false;

        /// The box the index holds for slot `s` (containing its exact box).
        fn tracked_box(&self, store: &Store<S, D>, s: u32) -> Aabb<S, D> {
            store.aabb[s as usize]
        }

        /// Calls `f` with every live slot and the box the index holds for
        /// it, in slot order (the pairs found through them are tracked in
        /// that order: the store's boxes, ids and pair arrays read in one
        /// sweep).
        fn each_held(&self, store: &Store<S, D>, f: &mut dyn FnMut(u32, &Aabb<S, D>)) {
            for s in 0..store.slots() as u32 {
                if store.meta[s as usize].state == State::Live {
                    f(s, &self.tracked_box(store, s));
                }
            }
        }

        /// An empty index with the same settings.
        fn empty_like(&self) -> Self;

        /// Rebuilds the index over the live slots from scratch.
        fn rebuild(&mut self, store: &Store<S, D>);

        /// Calls `f` with every indexed slot whose box may meet `region`,
        /// until `f` returns `false`.
        fn query(&self, store: &Store<S, D>, region: &Region<D>, f: &mut dyn FnMut(u32) -> bool);

        /// Right after a rebuild (the index holds the exact boxes): appends
        /// `(s, t)` for every pair of indexed slots whose boxes overlap and
        /// one of which is `marked`, once each; `slots` are the marked ones
        /// (some may be out of the index). By default one query per marked
        /// slot, the smaller slot reporting a pair of two marked ones.
        fn marked_pairs(
            &self,
            store: &Store<S, D>,
            slots: &[u32],
            marked: &dyn Fn(u32) -> bool,
            out: &mut Vec<(u32, u32)>,
        ) {
            for &s in slots {
                if !store.indexed(s) {
                    continue;
                }
                let region = Region::of(&store.aabb[s as usize]);
                self.query(store, &region, &mut |t| {
                    if t != s && (!marked(t) || s < t) {
                        out.push((s, t));
                    }
                    true
                });
            }
        }

        fn validate(&self, store: &Store<S, D>) -> Result<(), String>;

        fn memory(&self) -> usize;

        /// Frees working buffers (kept between frames to avoid allocating).
        fn release_scratch(&mut self) {}
    }
}

/// A spatial index that an [`Engine`] runs over: [`BruteIndex`](super::BruteIndex)
/// or [`SapIndex`](super::SapIndex). Sealed.
pub trait SpatialIndex<S: Scalar, const D: usize>: sealed::IndexImpl<S, D> {}
impl<S: Scalar, const D: usize, I: sealed::IndexImpl<S, D>> SpatialIndex<S, D> for I {}

/// Below this many changed proxies the one-shot path is never taken (under
/// Miri, 16: its tests reach the path with small worlds).
const ONESHOT_MIN: usize = if cfg!(miri) { 16 } else { 256 };
/// When to go back from one-shot ("flat") frames to incremental ones: a
/// rent-or-buy choice. Going back rebuilds the index and the tracked pairs,
/// a few one-shot frames of work (1e5 uniform proxies: 10-20 ms);
/// staying pays a one-shot frame for each calm frame (fewer changes than a
/// one-shot frame asks, see `busy`), where an incremental frame would cost
/// a fraction of one. By default the first calm frame goes back, so a
/// world that settles after a load pays the rebuild once and nothing more.
/// But when an incremental phase ends in a busy frame within `BOUNCE`
/// frames of its rebuild (too soon for the rebuild to have paid), the flat
/// phase that follows stays flat for up to [`RENT_MIN`] calm frames, twice
/// as many after each such bounce in a row (at most [`RENT_MAX`]), and for
/// none after an incremental phase that lasted. So a world whose changes
/// hover about the threshold (a burst every few frames) stops paying the
/// rebuild every burst. A flat phase whose frames are queried more than
/// [`SCAN_QUERIES`] times stops renting at once: such queries build an
/// index for themselves, a rebuild each frame.
///
/// Measured (1e5 uniform proxies, one thread; the engine without this rule
/// is this one with `BOUNCE` 0): `broadphase bench --workload frames --n
/// 1e5 --motion pulse,pulse30%/1%/5 --peers parry --f32`, 30% moving every
/// other frame and 10% between: hash grid 16.3 -> 3.7 ms per frame
/// (median), dynamic tree 24.0 -> 3.7 ms, multi-region SAP 20.6 -> 3.7 ms,
/// against parry3d's 10.3-10.6 ms (0.63x -> 2.87x); 30% every fifth frame
/// and 1% between, means 4.5-6.4 -> 3.4-3.5 ms. An example alternating
/// 30% with 10% moving (f32, the 10% frames' medians): hash grid 18.7 ->
/// 3.7 ms, dynamic tree 24.1 -> 3.8 ms, incremental SAP 14.6 -> 3.9 ms.
/// Bursts every 6 frames or fewer now keep the one-shot path (after one or
/// two bounces), every 7 or more go back each time, as before (the example,
/// bursts every 7 and 8 frames: means unchanged). The steady 1%, 10% and
/// 100% cells are unchanged.
const BOUNCE: u32 = 6;
/// See [`BOUNCE`].
const RENT_MIN: u32 = 3;
/// See [`BOUNCE`].
const RENT_MAX: u32 = 12;
/// A frame is also one-shot when its moves are fast ([`Engine::fast`]):
/// when they are expected to re-fatten one proxy in this many or more (and
/// at least one in [`FAST_CHANGED`] changed). Re-fattening a proxy and
/// re-tracking its pairs takes about 1.3-3 µs, a one-shot frame about 45
/// ns a proxy (1e5 uniform), so past about one proxy in 50-80 the one-shot
/// frame is cheaper. (The sweep-and-prune forms hold no fat boxes; fast
/// moves cost them as many swaps.) 10% of 1e5 unit boxes moving, `frames`
/// alone, medians before -> after: hash grid at 1.0 a frame 14-18 ->
/// 4.1-4.3 ms, at 0.5 7.6-7.9 -> 3.8-4.0 ms; dynamic tree 27.8 and 13.6 ->
/// 4.2 and 4.0 ms; multi-region SAP 24.3 and 18.0 -> 4.2 and 4.1 ms; at 0.3
/// (about one in 100 expected) and below they stay incremental (grid
/// 4.1-5.0 ms, tree 8.1 ms); 0.05, the bench's default, expects one in 400.
/// The default of `IndexImpl::FAST_SHARE`; the tree takes 160.
const FAST_SHARE: usize = 80;
/// See [`FAST_SHARE`]: a few fast proxies (a bullet) stay incremental.
const FAST_CHANGED: usize = 32;
/// The changes sampled for their speed.
const FAST_SAMPLE: usize = 32;
/// The default of `IndexImpl::OLD_PAIRS_SHARE` for the indexes that take
/// the pairs to track after a rebuild from the last update's pairs.
pub(super) const OLD_PAIRS_SHARE: usize = 16;
/// In a flat phase (after one-shot frames) the first this many queries
/// scan every box, and the next one builds an index for the rest: a scan
/// of 1e5 boxes costs 0.1-0.3 ms, the index some fifty times that (a rent
/// or buy again). In debug builds, the tests', 2, so that their queries
/// take both ways. Measured (1e5 uniform `f32` proxies, all moving: every
/// frame one-shot; ray casts after each update, medians of 30 frames, an
/// example run against the build before): one ray cast 4.4-13.2 ms (the
/// index built; the SAP's is the cheapest) -> 0.18 ms, ten 5.5-13.6 ->
/// 1.5-1.7 ms, forty 8.4-15.6 -> 9.3-17.6 ms (the scans, then the index
/// all the same). The update itself also got cheaper by dropping no
/// index: the hash grid's 5.9 -> 4.0 ms.
const SCAN_QUERIES: u32 = if cfg!(debug_assertions) { 2 } else { 16 };
/// An incremental frame takes its changes in slot order (see
/// `apply_changes`) from this many changes on, among at least
/// [`ORDER_SLOTS_MIN`] slots: where the per-slot arrays outgrow the caches.
/// Measured in `broadphase bench --workload frames` (uniform 3D f64, 1e5
/// proxies, 10% moving, six runs alternated with the build before): the
/// dynamic tree's mean frame 7.39 -> 5.77 ms (faster in all six pairs;
/// medians 3.77 -> 3.49 ms), the hash grid's unchanged (means 5.28 and
/// 5.13 ms, medians 3.41 and 3.46 ms). Sorting 1000 changes among 1e4
/// proxies cost the grid 0.01-0.06 ms a frame, with everything in cache:
/// hence the bounds. With debug assertions (the tests) every frame of 8
/// changes or more is ordered, so that the model tests take this path.
const ORDER_MIN: usize = if cfg!(debug_assertions) { 8 } else { 1024 };
const ORDER_SLOTS_MIN: usize = if cfg!(debug_assertions) { 1 } else { 1 << 16 };
/// How many entries ahead a walk of moved proxies prefetches the partners'
/// boxes. With 1e5 proxies, 10% moving (`frames`, one binary alternating the
/// two walks frame by frame), 64 entries made the walk 25-30% faster than
/// prefetching two proxies ahead from their own arrays; 32 gained less, 128
/// no more.
const WALK_AHEAD: usize = 64;
/// How many moved proxies a walk gathers at a time (debug builds, the
/// tests', take small chunks so that every model test crosses chunk
/// boundaries).
const WALK_CHUNK: usize = if cfg!(debug_assertions) { 7 } else { 1024 };

/// The boxes a search over every live proxy takes (see `Engine::search_all`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Boxes {
    /// The exact boxes.
    Exact,
    /// The boxes the index holds.
    Held,
    /// The fat boxes of a coarse set.
    Fat,
}

/// A persistent broad phase: the shared engine over a spatial index `I`.
/// Use the aliases ([`IncrementalSap`](super::IncrementalSap),
/// [`BruteForce`](super::BruteForce)) and the [`BroadPhase`] trait.
pub struct Engine<S: Scalar, const D: usize, I: SpatialIndex<S, D>> {
    store: Store<S, D>,
    cache: PairCache,
    index: I,
    policy: PairPolicy,
    frame: Frame<S, D>,
    candidates: Vec<(u32, u32)>,
    /// The entries of a chunk of moved proxies, and where each one's run
    /// ends (see `walk_changed`).
    walk_buf: Vec<[u32; 2]>,
    walk_ends: Vec<u32>,
    /// The sort of an update's events (see `sort_events`).
    event_scratch: Vec<PairEvent>,
    /// The recorded changes in slot order (see `apply_changes`), and the
    /// radix sort's buffer.
    order: Vec<u64>,
    order_scratch: Vec<u64>,
    scratch: OneShot<S, D>,
    /// Whether the last update took the one-shot path: the reported pairs
    /// are then `flat_pairs` (sorted) and no pair is tracked.
    flat: bool,
    flat_pairs: Vec<ProxyPair>,
    /// In flat mode, candidate pairs that serve several one-shot frames of
    /// coherent motion (see the `coarse` module).
    coarse: Coarse<S, D>,
    /// The rent-or-buy state (see [`BOUNCE`]): the calm frames (not busy,
    /// see `busy`) taken the one-shot way since the last busy one, how many
    /// this flat phase may take, and the incremental frames since the last
    /// rebuild (a new engine counts as after a long phase).
    calm: u32,
    rent: u32,
    since: u32,
    /// In flat mode `index` is stale (not rebuilt each bulk frame); queries
    /// build this one on first use past [`SCAN_QUERIES`] of them.
    lazy: OnceLock<I>,
    /// The queries of this flat phase answered by a scan of the boxes (see
    /// `query_slots`).
    scans: AtomicU32,
}

/// Buffers of the one-shot path.
struct OneShot<S: Scalar, const D: usize> {
    ws: Workspace<S>,
    /// `Auto`'s choice for the searches over the exact boxes, kept over a
    /// run of bulk frames (see [`Plan`]).
    plan: Plan<D>,
    boxes: Vec<Aabb<S, D>>,
    others: Vec<Aabb<S, D>>,
    slots: Vec<u32>,
    other_slots: Vec<u32>,
    pairs: Vec<Pair>,
    cross: Vec<crate::CrossPair>,
    seen: Vec<u32>,
    old: Vec<ProxyPair>,
    new: Vec<ProxyPair>,
    /// The begins of an event diff, held back until its ends are out.
    begins: Vec<ProxyPair>,
    keys: Vec<u64>,
    /// A batch of arrivals, placed for the others to find their pairs.
    arrivals: super::arrivals::ArrivalGrid<S, D>,
    /// Buffers of [`Engine::sort_slot_pairs`].
    sorting: SlotSort,
    /// The index's pairs of a batch of arrivals (see `track_arrival_pairs`).
    found: Vec<(u32, u32)>,
    /// The slots of a batch of removals, to find repeats (clear between
    /// batches).
    repeats: Marks,
}

/// Buffers of [`Engine::sort_slot_pairs`]: run starts per low and per high
/// slot, the pairs by high slot, then by low slot.
#[derive(Default)]
struct SlotSort {
    lo_starts: Vec<u32>,
    hi_starts: Vec<u32>,
    by_hi: Vec<u64>,
    by_lo: Vec<u64>,
}

impl<S: Scalar, const D: usize> Default for OneShot<S, D> {
    fn default() -> Self {
        Self {
            ws: Workspace::new(),
            plan: Plan::default(),
            boxes: Vec::new(),
            others: Vec::new(),
            slots: Vec::new(),
            other_slots: Vec::new(),
            pairs: Vec::new(),
            cross: Vec::new(),
            seen: Vec::new(),
            old: Vec::new(),
            new: Vec::new(),
            begins: Vec::new(),
            keys: Vec::new(),
            arrivals: Default::default(),
            sorting: SlotSort::default(),
            found: Vec::new(),
            repeats: Marks::default(),
        }
    }
}

impl<S: Scalar, const D: usize, I: SpatialIndex<S, D>> Default for Engine<S, D, I> {
    fn default() -> Self {
        Self::new(PairPolicy::default())
    }
}

impl<S: Scalar, const D: usize, I: SpatialIndex<S, D>> Engine<S, D, I> {
    /// An empty broad phase reporting kinematic pairs as `policy` says.
    pub fn new(policy: PairPolicy) -> Self {
        Self::with_index(policy, I::default())
    }

    /// An empty broad phase over a configured index (such as
    /// [`GridIndex::new`](super::GridIndex::new) with another margin).
    pub fn with_index(policy: PairPolicy, index: I) -> Self {
        Self {
            store: Store::default(),
            cache: PairCache::default(),
            index,
            policy,
            frame: Frame::default(),
            candidates: Vec::new(),
            walk_buf: Vec::new(),
            walk_ends: Vec::new(),
            order: Vec::new(),
            order_scratch: Vec::new(),
            event_scratch: Vec::new(),
            scratch: OneShot::default(),
            flat: false,
            flat_pairs: Vec::new(),
            coarse: Coarse::default(),
            calm: 0,
            rent: 0,
            since: u32::MAX,
            lazy: OnceLock::new(),
            scans: AtomicU32::new(0),
        }
    }

    /// The index in step with the store: the maintained one, or in flat
    /// mode (where it is not maintained) one built on first use.
    fn live(&self) -> &I {
        if self.flat {
            self.lazy.get_or_init(|| {
                let mut index = self.index.empty_like();
                index.rebuild(&self.store);
                index
            })
        } else {
            &self.index
        }
    }

    /// Calls `f` (until it returns false) with the indexed slots whose
    /// boxes may meet `region`, each once: the index's candidates, or in a
    /// flat phase's first [`SCAN_QUERIES`] queries those of a scan of every
    /// box (the index a query builds in flat mode costs some fifty scans).
    fn query_slots(&self, region: &Region<D>, f: &mut dyn FnMut(u32) -> bool) {
        let st = &self.store;
        if self.flat && self.lazy.get().is_none() {
            // (Queries from several threads may race on the count: it only
            // decides when the index is built.)
            let k = self.scans.load(Ordering::Relaxed);
            if k < SCAN_QUERIES {
                self.scans.store(k + 1, Ordering::Relaxed);
                for s in 0..st.slots() as u32 {
                    if st.indexed(s) && region.overlaps(&st.aabb[s as usize]) && !f(s) {
                        return;
                    }
                }
                return;
            }
        }
        self.live().query(st, region, f)
    }

    /// The index, for its settings.
    pub fn index(&self) -> &I {
        self.live()
    }

    /// The number of tracked pairs (reported ones and, for indexes with
    /// margins, pairs whose grown boxes overlap); 0 after a frame that took
    /// the one-shot path, until the next incremental one.
    pub fn tracked_pairs(&self) -> usize {
        self.cache.tracked_len()
    }

    /// The candidate pairs of the set that serves one-shot frames of
    /// coherent motion (every proxy moving a little each frame: see the
    /// module's "coarse frames"); 0 when there is none.
    pub fn coarse_candidates(&self) -> usize {
        if self.coarse.valid {
            self.coarse.cand.len()
        } else {
            0
        }
    }

    /// Whether one-shot frames of coherent motion may build and reuse
    /// candidate sets (on by default; see the module's "coarse frames").
    /// Such a set makes the frames it serves cheaper (1e5 proxies all
    /// moving 0.05 a frame: about 2 ms instead of 5) and the frame that
    /// builds it dearer (about 9 ms): turn it off where the slowest frame
    /// matters more than the mean. Off, the current set (if any) is dropped.
    pub fn set_coarse_frames(&mut self, on: bool) {
        self.coarse.enabled = on;
        if !on {
            self.coarse.invalidate();
        }
    }

    /// The kinematic pair policy.
    pub fn policy(&self) -> PairPolicy {
        self.policy
    }

    #[inline]
    fn allowed(&self, x: u32, y: u32) -> bool {
        let (x, y) = (x as usize, y as usize);
        // Every proxy dynamic with filter ALL (the common case): no lookups;
        // no filters at all (static worlds): the kinds only, a byte each.
        self.store.all_plain()
            || (self.policy.allows(self.store.kind[x], self.store.kind[y])
                && (self.store.no_filters() || self.store.filter[x].accepts(&self.store.filter[y])))
    }

    /// Tracks a pair of live slots `x != y` that a search over the held
    /// boxes found (once): if the frame tracked nothing before (`fresh`),
    /// no pair of an arrival is tracked yet and the lookups are skipped.
    #[inline]
    fn track_found(&mut self, fresh: bool, x: u32, y: u32, events: &mut Vec<PairEvent>) {
        if !fresh {
            self.try_track(x, y, events);
        } else if self.allowed(x, y) {
            debug_assert!(self.cache.position(x, y).is_none() && self.index.tracks(&self.store, x, y));
            self.track(x, y, events);
        }
    }

    #[inline]
    fn pair(&self, x: u32, y: u32) -> ProxyPair {
        ProxyPair::new(self.store.id(x), self.store.id(y))
    }

    /// Tracks the pair of live slots `x != y` if it is allowed, the index
    /// holds it as overlapping, and it is not tracked yet; it begins if the
    /// exact boxes overlap.
    #[inline]
    fn try_track(&mut self, x: u32, y: u32, events: &mut Vec<PairEvent>) {
        let st = &self.store;
        let live = |s: u32| st.meta[s as usize].state == State::Live;
        // PERF: the index holds live slots and those removed in this frame
        // only, so without removals the states need no reading (a
        // sweep-and-prune frame's candidates are many).
        debug_assert!(!self.frame.removed.is_empty() || x == y || (live(x) && live(y)));
        if x != y
            && (self.frame.removed.is_empty() || (live(x) && live(y)))
            && self.allowed(x, y)
            && self.index.tracks(st, x, y)
            && self.cache.position(x, y).is_none()
        {
            self.track(x, y, events);
        }
    }

    /// Tracks the pair of live slots `x != y`, allowed, held as overlapping
    /// by the index and not tracked yet; it begins if the exact boxes
    /// overlap.
    #[inline]
    fn track(&mut self, x: u32, y: u32, events: &mut Vec<PairEvent>) {
        let p = self.pair(x, y);
        let exact = self.store.aabb[x as usize].overlaps(&self.store.aabb[y as usize]);
        self.cache.add(p, exact);
        if exact {
            events.push(PairEvent::Begin(p));
        }
    }

    /// Moves the recorded changes into the store, and into the frame unless
    /// the frame goes the one-shot way (`bulk`), which needs no record of
    /// what moved but, when it builds a coarse set (`steps`), each proxy's
    /// step. Returns whether a bulk frame changed a filter.
    fn apply_changes(&mut self, bulk: bool, steps: bool) -> bool {
        let mut refiltered = false;
        let st = &mut self.store;
        let fr = &mut self.frame;
        // The index is the one of the last incremental update unless the
        // last update went the one-shot way (then it is rebuilt).
        let screen = I::SCREENS_MOVES && !bulk && !self.flat;
        let index = &self.index;
        fr.clear();
        let changes = st.take_changes();
        // PERF: callers list their moves in their own order, which is no
        // order of the slots (a batch insert numbers slots along a Morton
        // curve). Taken in slot order, the moved proxies come out in space
        // order for the index and the walks: their boxes, cells and
        // partners are near those of the proxy before. The changes are
        // visited through a radix sort of (slot, position). (A bitset of
        // the changed slots, read off in order, was no faster: 10% of 1e5
        // moving, `frames`, fifteen runs alternated.)
        let order = &mut self.order;
        order.clear();
        let sorted = !bulk && changes.len() >= ORDER_MIN && st.slots() >= ORDER_SLOTS_MIN;
        if sorted {
            order.extend(changes.iter().enumerate().map(|(i, c)| keyed(c.slot, i as u32)));
            sort_keyed(order, &mut self.order_scratch, false);
        }
        let at = |j: usize| if sorted { payload(order[j]) as usize } else { j };
        for j in 0..changes.len() {
            if j + 48 < changes.len() {
                // Sorted, the slot is in the key: no load of a change at
                // random just to find what to prefetch.
                let a = if sorted { (order[j + 48] >> 32) as usize } else { changes[j + 48].slot as usize };
                crate::sweep::prefetch(&st.aabb[a]);
                if screen {
                    index.prefetch_held(a as u32);
                }
            }
            if sorted && j + 8 < changes.len() {
                crate::sweep::prefetch(&changes[at(j + 8)]);
            }
            let c = &changes[at(j)];
            let s = c.slot as usize;
            // A proxy removed since has a void change (see `Store::meta`).
            let extra = st.extra_of(c);
            if bulk {
                if let Some(b) = c.aabb {
                    if steps {
                        self.coarse.step[s] = Coarse::step_of(&st.aabb[s], &b);
                    }
                    st.aabb[s] = b;
                }
                if let Some(f) = extra.filter {
                    st.write_filter(c.slot, f);
                    refiltered = true;
                }
                continue;
            }
            if let Some(b) = c.aabb {
                if b != st.aabb[s] {
                    // PERF: the displacements are worked out only where an
                    // index asks (a proxy leaving its fat box), unless a
                    // caller gave a velocity this update (see `Frame`).
                    if let Some(v) = extra.velocity {
                        let moved = &fr.moved;
                        fr.velocity.extend(
                            moved[fr.velocity.len()..].iter().map(|(t, old)| displacement(old, &st.aabb[*t as usize])),
                        );
                        fr.velocity.push(v);
                    } else if !fr.velocity.is_empty() {
                        fr.velocity.push(displacement(&st.aabb[s], &b));
                    }
                    if screen && !index.tracked_box(st, c.slot).contains(&b) {
                        fr.left.push(fr.moved.len() as u32);
                    }
                    fr.moved.push((c.slot, st.aabb[s]));
                    st.aabb[s] = b;
                }
            }
            if let Some(f) = extra.filter {
                if f != st.filter[s] {
                    st.write_filter(c.slot, f);
                    fr.refiltered.push(c.slot);
                }
            }
        }
        st.finish_changes(changes);
        fr.removed.append(&mut st.removed);
        for s in core::mem::take(&mut st.inserted) {
            if st.meta[s as usize].state == State::Inserting {
                st.meta[s as usize].state = State::Live;
                fr.inserted.push(s);
            }
            // Cancelled slots are freed with the removed ones.
        }
        // The pair cache's per-slot arrays are grown by the frames that
        // track pairs (not by one-shot frames, which track none).
        refiltered
    }

    /// Untracks the pairs of removed proxies.
    fn drop_removed(&mut self, events: &mut Vec<PairEvent>) {
        self.cache.remove_batch(&self.frame.removed, |e| events.push(e));
    }

    /// Re-tests the tracked pairs of re-filtered, then of moved proxies:
    /// untracked when the filters reject them or the index no longer holds
    /// them as overlapping, otherwise flagged by the exact test. Re-filtered
    /// ones go first, so that the moved ones' walks meet only allowed pairs
    /// and need no filter test; a moved proxy whose held box did not change
    /// needs only the exact test (a pair that stopped being held involves a
    /// proxy whose held box changed, whose own walk untracks it; the exact
    /// test already says "apart" for it, so no event is emitted twice).
    fn walk_changed(&mut self, events: &mut Vec<PairEvent>) {
        for i in 0..self.frame.refiltered.len() {
            let s = self.frame.refiltered[i];
            let (st, index, policy) = (&self.store, &self.index, self.policy);
            let b = st.aabb[s as usize];
            let (fs, ks) = (st.filter[s as usize], st.kind[s as usize]);
            self.cache.walk(
                s,
                |t| {
                    let ti = t as usize;
                    if !(policy.allows(ks, st.kind[ti]) && fs.accepts(&st.filter[ti]) && index.tracks(st, s, t)) {
                        Verdict::Untrack
                    } else {
                        Verdict::Keep(b.overlaps(&st.aabb[ti]))
                    }
                },
                |e| events.push(e),
            );
        }
        // PERF: the moved proxies' entries are gathered into one buffer,
        // then their verdicts taken in one stream over it with the partners'
        // boxes prefetched `WALK_AHEAD` entries ahead (see
        // `PairCache::gather`), `WALK_CHUNK` proxies at a time so that the
        // buffer stays small. A pair of two moved proxies is walked from
        // both sides, with verdicts that agree (see `PairCache::defer`).
        let (mut buf, mut ends) = (core::mem::take(&mut self.walk_buf), core::mem::take(&mut self.walk_ends));
        let (st, index) = (&self.store, &self.index);
        for chunk in self.frame.moved.chunks(WALK_CHUNK) {
            self.cache.gather(|i| chunk[i].0, chunk.len(), &mut buf, &mut ends);
            let mut k = 0;
            for (i, &(s, _)) in chunk.iter().enumerate() {
                if let Some(&(a, _)) = chunk.get(i + 16) {
                    crate::sweep::prefetch(&st.aabb[a as usize]);
                }
                let end = ends[i] as usize;
                let b = st.aabb[s as usize];
                // A proxy whose held box changed untracks the pairs the
                // index no longer holds; the others only re-test.
                let changed = index.box_changed(s);
                while k < end {
                    if let Some(&[t, _]) = buf.get(k + WALK_AHEAD) {
                        crate::sweep::prefetch(&st.aabb[t as usize]);
                        if changed {
                            index.prefetch_held(t);
                        }
                    }
                    let t = buf[k][0];
                    let v = if changed && !index.tracks(st, s, t) {
                        Verdict::Untrack
                    } else {
                        Verdict::Keep(b.overlaps(&st.aabb[t as usize]))
                    };
                    self.cache.note(buf[k], v);
                    k += 1;
                }
            }
        }
        (self.walk_buf, self.walk_ends) = (buf, ends);
        self.cache.apply(|e| events.push(e));
    }

    /// Sorts one update's events in their order (ends, then begins, each by
    /// pair): by their kind and slots alone, since one update never reports
    /// two events of one kind for the same slots (a removed proxy's slot is
    /// reused only after the update that reports its ends), so the
    /// generations never decide.
    fn sort_events(&mut self, events: &mut [PairEvent]) {
        let bits = self.slot_bits();
        sort_by_small_key(events, &mut self.event_scratch, 2 * bits + 1, |e| {
            let (p, begin) = match *e {
                PairEvent::End(p) => (p, 0),
                PairEvent::Begin(p) => (p, 1),
            };
            begin << (2 * bits) | (p.a().index() as u64) << bits | p.b().index() as u64
        });
        debug_assert!(events.is_sorted());
    }

    /// Whether the frame changes enough proxies for the one-shot search to
    /// beat the incremental path, judged before the changes are applied by
    /// the changes asked for (moves to the same box included).
    ///
    /// Removals count too, against the proxies before them: a level
    /// unloaded at once (a quarter or more of the proxies removed) takes
    /// the one-shot path, whose search meets only the proxies that stay,
    /// instead of taking each removed proxy out of the index. 1e5 proxies
    /// all removed in one batch, the update (`frames` batch insert): hash
    /// grid 18.6 ms, dynamic tree 21.0, multi-region SAP 11.6, incremental
    /// SAP 3.4 ms before (see the results of 2026-11-28, rebuilds).
    fn busy(&self) -> bool {
        I::ONESHOT && {
            let (moved, n) = (self.store.changes.len(), self.store.len());
            let gone = self.store.removed.len();
            let changed = moved + self.store.inserted.len();
            (changed >= ONESHOT_MIN && (changed * 4 >= n || moved * I::BUSY_CHANGES >= n))
                || (gone >= ONESHOT_MIN && gone * 4 >= n + gone)
        }
    }

    /// Whether the boxes asked to move this frame move so fast, relative to
    /// their size, that the index would re-fatten a large share of all
    /// proxies (see [`FAST_SHARE`]), judged from up to [`FAST_SAMPLE`] of the
    /// changes, evenly spaced, before they are applied: a proxy re-fattens
    /// about once in `REACH_CAP` extents of its box's travel.
    fn fast(&self) -> bool {
        let (changes, n) = (&self.store.changes, self.store.len());
        if !I::ONESHOT || changes.len() < ONESHOT_MIN || changes.len() * FAST_CHANGED < n {
            return false;
        }
        let k = changes.len().min(FAST_SAMPLE);
        let rate: f64 = (0..k)
            .map(|j| {
                let c = &changes[j * changes.len() / k];
                let Some(b) = c.aabb else { return 0.0 };
                let old = &self.store.aabb[c.slot as usize];
                let step = displacement(old, &b).iter().fold(0.0, |m: f64, x| m.max(x.abs()));
                let ext = (0..D).map(|a| old.extent(a)).fold(0.0, f64::max);
                // (A point, `ext` 0, that moves re-fattens each time.)
                if step > 0.0 {
                    (step / (REACH_CAP * ext)).min(1.0)
                } else {
                    0.0
                }
            })
            .sum();
        changes.len() as f64 * rate / k as f64 * I::FAST_SHARE as f64 >= n as f64
    }

    /// Whether this update takes the one-shot path: a busy frame, or a calm
    /// one in a flat phase that still rents (see [`BOUNCE`]).
    fn use_oneshot(&mut self) -> bool {
        if self.busy() || self.fast() {
            if !self.flat {
                // An incremental phase ends: a bounce if it was short.
                self.rent = if self.since < BOUNCE { (self.rent * 2).clamp(RENT_MIN, RENT_MAX) } else { 0 };
            }
            self.calm = 0;
            return true;
        }
        // (Queries since the last one-shot frame built an index for
        // themselves, past the scans: renting on would build one every
        // frame.)
        if self.flat && self.calm < self.rent && self.lazy.get().is_none() {
            self.calm += 1;
            return true;
        }
        // An incremental frame: the first of its phase if flat.
        self.since = if self.flat { 1 } else { self.since.saturating_add(1) };
        false
    }

    /// The live slots and the boxes the index holds for them, their exact
    /// boxes or their fat boxes of the coarse set (`src`), and every
    /// overlapping pair of those by one search.
    fn search_all(&mut self, src: Boxes) {
        let sc = &mut self.scratch;
        let store = &self.store;
        sc.boxes.clear();
        sc.slots.clear();
        // Every slot live (no free slot, none inserting): the store's boxes
        // (or the fat ones, one a slot) are the input as they are.
        let all_live = src != Boxes::Held && store.len() == store.slots() && store.inserted.is_empty();
        if all_live {
            debug_assert!(store.meta.iter().all(|m| m.state == State::Live));
            sc.slots.extend(0..store.slots() as u32);
        } else {
            for s in 0..store.slots() as u32 {
                if store.meta[s as usize].state == State::Live {
                    sc.boxes.push(match src {
                        Boxes::Held => self.index.tracked_box(store, s),
                        Boxes::Exact => store.aabb[s as usize],
                        Boxes::Fat => self.coarse.fat[s as usize],
                    });
                    sc.slots.push(s);
                }
            }
        }
        let boxes = match (all_live, src) {
            (true, Boxes::Fat) => &self.coarse.fat[..],
            (true, _) => &store.aabb[..],
            (false, _) => &sc.boxes[..],
        };
        sc.pairs.clear();
        let finder = PairFinder::new(Algorithm::Auto);
        // The exact boxes of one frame are those of the last bulk frame, a
        // little moved: the plan of that one serves (so do the fat boxes of
        // one coarse set for the next; the held boxes, searched once when
        // incremental frames resume, get a choice of their own).
        match src {
            Boxes::Held => finder.find_with(&mut sc.ws, boxes, &mut sc.pairs),
            Boxes::Exact => finder.find_planned(&mut sc.plan, &mut sc.ws, boxes, &mut sc.pairs),
            Boxes::Fat => finder.find_planned(&mut self.coarse.plan, &mut sc.ws, boxes, &mut sc.pairs),
        }
        .expect("live proxies are at most MAX_PROXIES, below MAX_BOXES");
    }

    /// Rebuilds the tracked pairs in bulk, right after the index's rebuild:
    /// from `old`, the pairs of the last update (sorted), where few proxies
    /// changed since (see [`Engine::pairs_from_old`]), else from one search
    /// over the held boxes (each pair is found once, so no lookups). The
    /// pairs go in by slots, so the reported ones come out sorted.
    fn track_all(&mut self, old: &[ProxyPair]) {
        self.cache.clear();
        let bits = self.slot_bits();
        if !self.pairs_from_old(old, bits) {
            self.search_all(Boxes::Held);
            let mut sc = core::mem::take(&mut self.scratch);
            sc.keys.clear();
            for p in &sc.pairs {
                // Slots are listed in ascending order, so `x < y`.
                let (x, y) = (sc.slots[p.a() as usize], sc.slots[p.b() as usize]);
                if self.allowed(x, y) {
                    sc.keys.push(slot_pair_key(x, y, bits));
                }
            }
            // PERF: the pairs sorted by slots first (a radix sort): each
            // slot's entries then go in one after the other, and the exact
            // array comes out sorted, as the event diff wants it
            // (`sorted_pairs`).
            sort_by_small_key(&mut sc.keys, &mut sc.sorting.by_hi, 2 * bits, |&k| k);
            self.scratch = sc;
        }
        let sc = core::mem::take(&mut self.scratch);
        let st = &self.store;
        let low = (1u64 << bits) - 1;
        self.cache.add_all(
            &sc.keys,
            |k| ((k >> bits) as u32, (k & low) as u32),
            |x, y| {
                let pair = ProxyPair::ordered(st.id(x), st.id(y));
                // An index that holds the exact boxes after a rebuild (those
                // taking the old pairs' way) holds every pair it tracks now
                // as overlapping.
                let exact = if I::OLD_PAIRS_SHARE.is_some() {
                    debug_assert!(st.aabb[x as usize].overlaps(&st.aabb[y as usize]));
                    true
                } else {
                    st.aabb[x as usize].overlaps(&st.aabb[y as usize])
                };
                (pair, exact)
            },
        );
        self.scratch = sc;
    }

    /// The pairs to track right after the index's rebuild, as sorted slot
    /// keys (`x << bits | y`) into the scratch's `keys`, from `old` (the
    /// pairs of the last update, sorted), when few proxies changed since:
    /// the old pairs of unchanged proxies, and the changed proxies' pairs,
    /// asked of the index. Returns `false` (and does nothing) when too many
    /// changed, or when the index does not take this way
    /// ([`IndexImpl::OLD_PAIRS_SHARE`](sealed::IndexImpl::OLD_PAIRS_SHARE)).
    ///
    /// Exact because after a rebuild such an index holds the exact boxes:
    /// the pairs to track are the allowed overlapping pairs; those of two
    /// unchanged proxies are the old ones (same boxes, same filters), and
    /// the index finds those of the changed ones, each once
    /// ([`IndexImpl::marked_pairs`](sealed::IndexImpl::marked_pairs)).
    ///
    /// PERF: 1% of 1e5 uniform proxies moving after a load, the frame
    /// after: a search over every held box (3.3-5.5 ms) and a sort of its
    /// pairs (0.5 ms) replaced by 1000 queries; tracking the pairs took
    /// 9-10 ms, now 4.7-5.3 (hash grid), 5.8-6.9 (multi-region SAP). The
    /// incremental SAP finds them by one sweep instead of queries (each scans
    /// a slab of endpoints: 1000 of them took 49-50 ms): 8.2-10 -> 6.9-8.1
    /// ms.
    fn pairs_from_old(&mut self, old: &[ProxyPair], bits: u32) -> bool {
        let fr = &self.frame;
        let changed = fr.moved.len() + fr.inserted.len() + fr.refiltered.len() + fr.removed.len();
        if I::OLD_PAIRS_SHARE.is_none_or(|share| changed * share > self.store.len()) {
            return false;
        }
        let mut sc = core::mem::take(&mut self.scratch);
        let st = &self.store;
        sc.seen.clear();
        sc.seen.resize(st.slots(), 0);
        let changes =
            || fr.moved.iter().map(|m| m.0).chain(fr.inserted.iter().copied()).chain(fr.refiltered.iter().copied());
        for s in changes().chain(fr.removed.iter().copied()) {
            sc.seen[s as usize] = 1;
        }
        // The old pairs of unchanged proxies, in order.
        let (seen, keys) = (&sc.seen, &mut sc.keys);
        keys.clear();
        keys.extend(old.iter().filter_map(|p| {
            let (x, y) = (p.a().index(), p.b().index());
            (seen[x as usize] == 0 && seen[y as usize] == 0).then_some(slot_pair_key(x, y, bits))
        }));
        let kept = keys.len();
        // The changed proxies' pairs (removed proxies are in no index).
        let (slots, found) = (&mut sc.other_slots, &mut sc.found);
        slots.clear();
        slots.extend(changes());
        found.clear();
        self.index.marked_pairs(st, slots, &|t| seen[t as usize] != 0, found);
        for &(s, t) in found.iter() {
            if self.allowed(s, t) {
                keys.push(slot_pair_key(s, t, bits));
            }
        }
        // Merged with the old ones.
        let found = &mut keys[kept..];
        sort_by_small_key(found, &mut sc.sorting.by_lo, 2 * bits, |&k| k);
        let merged = &mut sc.sorting.by_hi;
        merged.clear();
        merged.reserve(keys.len());
        let (mut i, mut j) = (0, kept);
        while i < kept && j < keys.len() {
            if keys[i] < keys[j] {
                merged.push(keys[i]);
                i += 1;
            } else {
                merged.push(keys[j]);
                j += 1;
            }
        }
        merged.extend_from_slice(&keys[i..kept]);
        merged.extend_from_slice(&keys[j..]);
        core::mem::swap(keys, merged);
        self.scratch = sc;
        true
    }

    /// The reported pairs, sorted, into `out`.
    fn sorted_pairs(&mut self, out: &mut Vec<ProxyPair>) {
        if self.flat {
            out.clear();
            out.extend_from_slice(&self.flat_pairs);
            return;
        }
        if self.cache.pairs().is_empty() || self.cache.pairs().is_sorted() {
            // A first load: no counting sort over every slot for nothing; or
            // pairs tracked in order (`track_all`): nothing to sort.
            out.clear();
            out.extend_from_slice(self.cache.pairs());
            return;
        }
        let mut sc = core::mem::take(&mut self.scratch);
        sc.keys.clear();
        sc.keys.extend(self.cache.pairs().iter().map(|p| keyed(p.a().index(), p.b().index())));
        self.sort_slot_pairs(&sc.keys, |k| ((k >> 32) as u32, payload(k)), &mut sc.sorting, out);
        self.scratch = sc;
    }

    /// Every allowed overlapping pair of live proxies, sorted, by one search
    /// over the exact boxes.
    fn exact_all(&mut self, out: &mut Vec<ProxyPair>) {
        self.search_all(Boxes::Exact);
        self.found_sorted(out);
    }

    /// A new coarse set, by one search over the fat boxes (each live
    /// proxy's exact box grown by its steps), and the overlapping pairs,
    /// sorted, from it.
    ///
    /// PERF: the candidates are sorted, though their sort costs about as
    /// much as the search (1e5 proxies all moving, 340 000 candidates:
    /// 2.2-2.6 ms), because each frame's pass then reads the first boxes in
    /// order and writes the pairs sorted. Left in the search's order, with
    /// the pairs sorted only where a merge needs them, the builds took 9.0
    /// instead of 8.8 ms and the frames between 2.2-2.45 instead of 2.0-2.2
    /// (`frames`, hash grid, means 4.1-4.3 against 3.9 ms).
    fn coarse_all(&mut self, out: &mut Vec<ProxyPair>) {
        self.coarse.fatten_all(&self.store.aabb);
        self.search_all(Boxes::Fat);
        let mut cand = core::mem::take(&mut self.coarse.cand);
        self.found_sorted(&mut cand);
        self.coarse.cand = cand;
        self.coarse.adopt(&self.store.aabb, self.store.len(), out);
    }

    /// The allowed pairs of the last search (`search_all`), as pairs of
    /// ids, sorted.
    fn found_sorted(&mut self, out: &mut Vec<ProxyPair>) {
        let mut sc = core::mem::take(&mut self.scratch);
        if self.store.all_plain() && sc.slots.len() == self.store.slots() {
            // Every slot searched, every pair allowed: the search's pairs
            // are the slot pairs.
            self.sort_slot_pairs(&sc.pairs, |p| (p.a(), p.b()), &mut sc.sorting, out);
        } else {
            self.allowed_keys(&mut sc);
            self.sort_slot_pairs(&sc.keys, |k| ((k >> 32) as u32, payload(k)), &mut sc.sorting, out);
        }
        self.scratch = sc;
    }

    /// The allowed pairs of the last search as keys of their slots, into
    /// `sc.keys`.
    fn allowed_keys(&self, sc: &mut OneShot<S, D>) {
        sc.keys.clear();
        for p in &sc.pairs {
            // Slots are listed in ascending order, so `x < y`.
            let (x, y) = (sc.slots[p.a() as usize], sc.slots[p.b() as usize]);
            if self.allowed(x, y) {
                sc.keys.push(keyed(x, y));
            }
        }
    }

    /// Sorts pairs of live slots `(lo, hi) = slots(item)` (`lo < hi`) and
    /// writes them as pairs of ids (for live proxies the slot order is the id
    /// order): from [`RADIX_PAIRS_MIN`] pairs a radix sort of their slots,
    /// below a counting sort by `hi`, then a stable one by `lo`, both
    /// counted in one pass.
    ///
    /// PERF: two passes that place every pair, and one that writes them,
    /// none with a branch on the data. Before, one counting sort by `lo`
    /// left each run of one `lo` to be sorted by `hi`: runs of one to a
    /// dozen pairs, each a few mispredicted branches (100% of 1e5 moving,
    /// 154 000 pairs: the frame's counting and sorting 1.72-1.74 -> 1.54-1.62
    /// ms, the frame 8.90-8.97 -> 8.66-8.88 ms, eight runs each way
    /// alternated).
    fn sort_slot_pairs<T: Copy>(
        &self,
        items: &[T],
        slots: impl Fn(T) -> (u32, u32),
        sorting: &mut SlotSort,
        out: &mut Vec<ProxyPair>,
    ) {
        let bits = self.sort_slot_keys(items, slots, sorting);
        let generation = &self.store.generation[..];
        let id = |s: u32| ProxyId::new(s, generation[s as usize]);
        let low = (1u64 << bits) - 1;
        out.clear();
        crate::mem::reserve(out, items.len());
        // lo < hi, and ids order by slot first.
        out.extend(sorting.by_lo.iter().map(|&x| ProxyPair::ordered(id((x >> bits) as u32), id((x & low) as u32))));
    }

    /// The sort of [`sort_slot_pairs`](Self::sort_slot_pairs): the pairs as
    /// keys `lo << bits | hi`, sorted, into `sorting.by_lo`; returns `bits`.
    fn sort_slot_keys<T: Copy>(&self, items: &[T], slots: impl Fn(T) -> (u32, u32), sorting: &mut SlotSort) -> u32 {
        let n = self.store.slots();
        let SlotSort { lo_starts: starts, hi_starts, by_hi, by_lo } = sorting;
        if items.len() >= RADIX_PAIRS_MIN {
            // PERF: many pairs: a radix sort of `lo << bits | hi`, whose
            // counts stay in the first-level cache, where the counting sorts
            // below count and place into arrays of a word per slot, at
            // random. 100% of 1e5 proxies moving (154 000 pairs), the
            // frame, ten alternated rounds: 7.59-8.44 -> 7.47-7.91 ms,
            // faster in eight. (At 1e4 proxies, 16 000 pairs, the counting
            // sorts were as fast or faster: 0.640-0.662 against 0.639-0.732
            // ms.)
            let bits = u64::BITS - (n.max(2) as u64 - 1).leading_zeros();
            by_lo.clear();
            crate::mem::reserve(by_lo, items.len());
            by_lo.extend(items.iter().map(|&k| {
                let (lo, hi) = slots(k);
                (lo as u64) << bits | hi as u64
            }));
            sort_by_small_key(by_lo, by_hi, 2 * bits, |&x| x);
            return bits;
        }
        for counts in [&mut *starts, &mut *hi_starts] {
            counts.clear();
            counts.resize(n + 1, 0);
        }
        for &k in items {
            let (lo, hi) = slots(k);
            starts[lo as usize + 1] += 1;
            hi_starts[hi as usize + 1] += 1;
        }
        for i in 0..n {
            starts[i + 1] += starts[i];
            hi_starts[i + 1] += hi_starts[i];
        }
        // Every slot of both is written below.
        crate::mem::resize(by_hi, items.len(), 0);
        crate::mem::resize(by_lo, items.len(), 0);
        for &k in items {
            let (lo, hi) = slots(k);
            let at = &mut hi_starts[hi as usize];
            by_hi[*at as usize] = (lo as u64) << 32 | hi as u64;
            *at += 1;
        }
        for &x in by_hi.iter() {
            let at = &mut starts[(x >> 32) as usize];
            by_lo[*at as usize] = x;
            *at += 1;
        }
        32
    }

    /// The pairs of the inserted proxies among themselves, by one complete
    /// search, and with the others, through a grid over the arrivals that
    /// the others' held boxes stream through in slot order (see
    /// `arrivals`), or, where that grid declines, by one bipartite search.
    fn begin_inserted(&mut self, fresh: bool, events: &mut Vec<PairEvent>) {
        let mut sc = core::mem::take(&mut self.scratch);
        sc.seen.clear();
        sc.seen.resize(self.store.slots(), 0);
        sc.boxes.clear();
        sc.slots.clear();
        for &s in &self.frame.inserted {
            sc.seen[s as usize] = 1;
            sc.boxes.push(self.index.tracked_box(&self.store, s));
            sc.slots.push(s);
        }
        let finder = PairFinder::new(Algorithm::Auto);
        sc.pairs.clear();
        finder.find_with(&mut sc.ws, &sc.boxes, &mut sc.pairs).expect("within MAX_BOXES");
        sc.cross.clear();
        if sc.arrivals.build(&sc.boxes) {
            // PERF: the others are visited in slot order, so their pairs
            // come in that order: their boxes, ids and pair arrays, most of
            // the store in a big world, are read in one sweep.
            let OneShot { arrivals, boxes, cross, seen, slots, .. } = &mut sc;
            self.index.each_held(&self.store, &mut |s, b| {
                if seen[s as usize] == 0 {
                    arrivals.query(boxes, b, |i| cross.push(crate::CrossPair { a: i, b: s }));
                }
            });
            // Each other's arrivals in slot order (a few at most), so that
            // where the arrivals' slots follow the others' (a batch into a
            // world that freed none) the events come out in their order and
            // need no sort. PERF: 1e5 arrivals into 1e6 static proxies
            // (`FRAMES_INSERT=1e6 frames`, three rounds alternated): the
            // radix sort of the 289 000 events (2.3-2.5 ms) skipped, the
            // insert 77.3-79.7 -> 75.4-78.4 ms (dynamic tree), 84.7-88.8 ->
            // 81.1-82.7 ms (incremental SAP).
            for run in cross.chunk_by_mut(|x, y| x.b == y.b).filter(|run| run.len() > 1) {
                run.sort_unstable_by_key(|c| slots[c.a as usize]);
            }
            self.cache.reserve(sc.cross.len());
            events.reserve(sc.cross.len());
            // PERF: the pairs come in the order of the others' slots; the
            // arrival of each is near in space, not in memory: its box,
            // generation and array header are prefetched 8 pairs ahead, the
            // end of its array 4 ahead.
            for i in 0..sc.cross.len() {
                if let Some(c) = sc.cross.get(i + 8) {
                    for x in [sc.slots[c.a as usize], c.b] {
                        crate::sweep::prefetch(&self.store.aabb[x as usize]);
                        crate::sweep::prefetch(&self.store.generation[x as usize]);
                        self.cache.prefetch_head(x);
                    }
                }
                if let Some(c) = sc.cross.get(i + 4) {
                    self.cache.prefetch_tail(sc.slots[c.a as usize]);
                }
                let c = sc.cross[i];
                self.track_found(fresh, sc.slots[c.a as usize], c.b, events);
            }
        } else {
            sc.others.clear();
            sc.other_slots.clear();
            // Only the others that meet the arrivals' bounds can pair with
            // them (a level section streamed in far from the rest meets few).
            let bounds = sc.boxes.iter().copied().reduce(|a, b| a.union(&b));
            for s in 0..self.store.slots() as u32 {
                if self.store.meta[s as usize].state == State::Live && sc.seen[s as usize] == 0 {
                    let b = self.index.tracked_box(&self.store, s);
                    if bounds.is_some_and(|u| u.overlaps(&b)) {
                        sc.others.push(b);
                        sc.other_slots.push(s);
                    }
                }
            }
            finder.find_bipartite_with(&mut sc.ws, &sc.boxes, &sc.others, &mut sc.cross).expect("within MAX_BOXES");
            // PERF: in the order of the others (slot order), as above (about
            // 30% less time tracking 1e5 arrivals' pairs in a world of 1e6
            // than in the search's order).
            sc.keys.clear();
            sc.keys.extend(sc.cross.iter().map(|p| keyed(p.b, p.a)));
            let (slots, others) = (&sc.slots, &sc.other_slots);
            let pair = |k: u64| (slots[payload(k) as usize], others[(k >> 32) as usize]);
            self.track_sorted(fresh, &mut sc.keys, &mut sc.ws.scratch, pair, events);
        }
        // The arrivals' pairs among themselves, last and in slot order (see
        // above). PERF: room for them before tracking them: grown by
        // doubling, the pair cache and the events spent over 40% of the
        // tracking in copies and fresh pages (1e5 arrivals into 1e6).
        let bits = self.slot_bits();
        sc.keys.clear();
        sc.keys
            .extend(sc.pairs.iter().map(|p| slot_pair_key(sc.slots[p.a() as usize], sc.slots[p.b() as usize], bits)));
        self.track_in_order(fresh, &mut sc.keys, &mut sc.ws.scratch, events);
        self.scratch = sc;
    }

    /// The bits of a slot number (at least one).
    fn slot_bits(&self) -> u32 {
        u64::BITS - (self.store.slots().max(2) as u64 - 1).leading_zeros()
    }

    /// Sorts `keys` (pairs of slots by [`slot_pair_key`]) and tracks each
    /// pair in that order (see `track_found`), with room made for them all
    /// first: where nothing was reported before in the update, the events
    /// come out in their order.
    fn track_in_order(&mut self, fresh: bool, keys: &mut [u64], scratch: &mut Vec<u64>, events: &mut Vec<PairEvent>) {
        let bits = self.slot_bits();
        sort_by_small_key(keys, scratch, 2 * bits, |&k| k);
        self.cache.reserve(keys.len());
        events.reserve(keys.len());
        let low = (1u64 << bits) - 1;
        for &k in keys.iter() {
            self.track_found(fresh, (k >> bits) as u32, (k & low) as u32, events);
        }
    }

    /// Sorts `keys` by their high halves, then tracks the pair `pair(k)` of
    /// each (see `track_found`): in the order of the slots that the high
    /// halves name, so that the pair arrays are written in one sweep.
    fn track_sorted(
        &mut self,
        fresh: bool,
        keys: &mut Vec<u64>,
        scratch: &mut Vec<u64>,
        pair: impl Fn(u64) -> (u32, u32),
        events: &mut Vec<PairEvent>,
    ) {
        sort_keyed(keys, scratch, false);
        self.cache.reserve(keys.len());
        events.reserve(keys.len());
        for &k in keys.iter() {
            let (x, y) = pair(k);
            self.track_found(fresh, x, y, events);
        }
    }

    /// Tracks the pairs the index found for the inserted slots apart from
    /// its candidates (see `take_arrival_pairs`), in the order of their
    /// slots, as `begin_inserted` tracks its pairs: with no candidate before
    /// (`fresh`), none of them is tracked yet, and their events come out in
    /// order (no sort of them after). PERF: 1e5 arrivals into 1e6 static
    /// proxies, multi-region SAP (`FRAMES_INSERT=1e6 frames --only multi`,
    /// three rounds alternated), against an order by first slot alone:
    /// the radix sort of the 289 000 events skipped, the insert
    /// 104.2-107.9 -> 103.0-104.8 ms.
    fn track_arrival_pairs(&mut self, fresh: bool, events: &mut Vec<PairEvent>) {
        let mut sc = core::mem::take(&mut self.scratch);
        sc.found.clear();
        self.index.take_arrival_pairs(&mut sc.found);
        if !sc.found.is_empty() {
            let bits = self.slot_bits();
            sc.keys.clear();
            sc.keys.extend(sc.found.iter().map(|&(x, y)| slot_pair_key(x, y, bits)));
            self.track_in_order(fresh, &mut sc.keys, &mut sc.ws.scratch, events);
        }
        self.scratch = sc;
    }

    /// Calls `f` with each visible slot the index offers for `region` that
    /// passes `filter` and `exact`.
    fn visit(
        &self,
        region: &Region<D>,
        filter: Filter,
        exact: &mut dyn FnMut(&Aabb<S, D>) -> bool,
        f: &mut dyn FnMut(ProxyId) -> bool,
    ) {
        let st = &self.store;
        self.query_slots(region, &mut |s| {
            let i = s as usize;
            if st.meta[i].state == State::Live && st.filter[i].accepts(&filter) && exact(&st.aabb[i]) {
                f(st.id(s))
            } else {
                true
            }
        });
    }
}

impl<S: Scalar, const D: usize, I: SpatialIndex<S, D>> BroadPhase<S, D> for Engine<S, D, I> {
    fn name(&self) -> &'static str {
        I::NAME
    }

    fn insert(&mut self, proxy: Proxy<S, D>) -> Result<ProxyId, ProxyError> {
        self.store.check_room(1)?;
        Ok(self.store.insert(&proxy))
    }

    fn insert_batch(&mut self, proxies: &[Proxy<S, D>], ids: &mut Vec<ProxyId>) -> Result<(), ProxyError> {
        self.store.check_room(proxies.len())?;
        if proxies.len() < SPATIAL_MIN {
            ids.extend(proxies.iter().map(|p| self.store.insert(p)));
            return Ok(());
        }
        // PERF: take the slots in the spatial order of the boxes (Morton
        // order of their centres), so that neighbours sit close in memory
        // and a frame's walks and tests touch fewer cache lines. The ids
        // come back in the caller's order; which slot a proxy gets is
        // invisible otherwise.
        self.store.reserve(proxies.len());
        let start = ids.len();
        ids.resize(start + proxies.len(), ProxyId::new(0, 0));
        let order = spatial_order(proxies);
        self.store.insert_ordered(proxies, &order, &mut ids[start..]);
        Ok(())
    }

    fn remove(&mut self, id: ProxyId) -> Result<(), ProxyError> {
        let s = self.store.slot(id)?;
        self.store.remove(s);
        Ok(())
    }

    fn remove_batch(&mut self, ids: &[ProxyId]) -> Result<(), ProxyError> {
        // Every id is checked before any is removed: first that it is live,
        // then that it is not given twice.
        //
        // PERF: the repeats by marking the slots, where a sort of the
        // slots took a third of removing a batch of 1e5 proxies (the
        // update included; `FRAMES_INSERT=0 frames --n 1e5 --only hash`,
        // three alternated rounds: 7.1-7.2 -> 4.9-5.0 ms).
        for &id in ids {
            self.store.slot(id)?;
        }
        let repeats = &mut self.scratch.repeats;
        let repeated = ids.iter().find(|id| !repeats.mark(id.index()));
        repeats.clear();
        if let Some(&id) = repeated {
            return Err(ProxyError::Repeated { id });
        }
        for &id in ids {
            self.store.remove(id.index());
        }
        Ok(())
    }

    fn set_aabb(&mut self, id: ProxyId, aabb: Aabb<S, D>) -> Result<(), ProxyError> {
        let s = self.store.slot(id)?;
        self.store.set_aabb(s, aabb, None);
        Ok(())
    }

    fn set_aabb_with_velocity(&mut self, id: ProxyId, aabb: Aabb<S, D>, velocity: [S; D]) -> Result<(), ProxyError> {
        let s = self.store.slot(id)?;
        if let Some(axis) = velocity.iter().position(|v| !v.is_finite()) {
            return Err(ProxyError::BadVelocity { id, axis, value: velocity[axis].to_f64() });
        }
        self.store.set_aabb(s, aabb, Some(velocity.map(S::to_f64)));
        Ok(())
    }

    fn set_aabb_batch(&mut self, moves: &[(ProxyId, Aabb<S, D>)]) -> Result<(), ProxyError> {
        self.store.set_aabb_batch(moves)
    }

    fn set_filter(&mut self, id: ProxyId, filter: Filter) -> Result<(), ProxyError> {
        let s = self.store.slot(id)?;
        self.store.set_filter(s, filter);
        Ok(())
    }

    fn update(&mut self, events: &mut Vec<PairEvent>) {
        let start = events.len();
        if self.store.changes.is_empty()
            && self.store.inserted.is_empty()
            && self.store.removed.is_empty()
            && self.store.cancelled.is_empty()
        {
            return;
        }
        let bulk = self.use_oneshot();
        let mode = if bulk {
            // (Before the changes are applied: a coarse set is checked
            // against them, and a build records their steps.)
            let st = &self.store;
            let pure = self.flat && st.inserted.is_empty() && st.removed.is_empty() && st.cancelled.is_empty();
            self.coarse.mode(st, pure)
        } else {
            Mode::Exact
        };
        let refiltered = self.apply_changes(bulk, mode == Mode::Build);
        let mode = if mode == Mode::Check { self.coarse.settle(&self.store.aabb, refiltered) } else { mode };
        let mut cand = core::mem::take(&mut self.candidates);
        cand.clear();
        if bulk {
            // Most proxies changed: one search over the exact boxes, the
            // events by a merge with the previous pairs, and no pair
            // tracking until an incremental frame needs it ("flat" mode).
            let (mut old, mut new) = (core::mem::take(&mut self.scratch.old), core::mem::take(&mut self.scratch.new));
            if self.flat {
                // The previous pairs are flat_pairs already (sorted).
                core::mem::swap(&mut old, &mut self.flat_pairs);
            } else {
                self.sorted_pairs(&mut old);
            }
            // The index is rebuilt only when needed: by a query past the
            // first few (`query_slots`), or by the next incremental frame.
            self.lazy = OnceLock::new();
            *self.scans.get_mut() = 0;
            self.cache.clear();
            match mode {
                Mode::Reuse => {
                    // The last update was a one-shot frame of this set: its
                    // flags are the pairs before.
                    let (aabb, begins) = (&self.store.aabb[..], &mut self.scratch.begins);
                    self.coarse.reuse(aabb, &mut new, events, begins);
                }
                Mode::Build => {
                    self.coarse_all(&mut new);
                    diff(&old, &new, events, &mut self.scratch.begins);
                }
                Mode::Exact | Mode::Check => {
                    self.exact_all(&mut new);
                    diff(&old, &new, events, &mut self.scratch.begins);
                }
            }
            core::mem::swap(&mut self.flat_pairs, &mut new);
            self.flat = true;
            // Both go back to the scratch as buffers.
            (self.scratch.old, self.scratch.new) = (old, new);
        } else if self.flat {
            // Back to incremental frames: rebuild the index, track every
            // pair in bulk, and report the difference. The plan of the bulk
            // frames is not kept past them.
            self.scratch.plan = Plan::default();
            self.coarse.invalidate();
            self.cache.grow(self.store.slots());
            self.lazy = OnceLock::new();
            self.index.rebuild(&self.store);
            let mut old = core::mem::take(&mut self.flat_pairs);
            self.flat = false;
            self.track_all(&old);
            // (`track_all` leaves the reported pairs sorted.)
            debug_assert!(self.cache.pairs().is_sorted());
            diff(&old, self.cache.pairs(), events, &mut self.scratch.begins);
            old.clear();
            self.flat_pairs = old;
        } else {
            self.cache.grow(self.store.slots());
            self.drop_removed(events);
            let inserted_by_oneshot = I::ONESHOT
                && self.frame.inserted.len() >= ONESHOT_MIN
                && I::ARRIVALS_ONESHOT.is_some_and(|share| self.frame.inserted.len() * share >= self.store.len());
            self.frame.inserted_candidates = !inserted_by_oneshot;
            self.index.update(&self.store, &self.frame, &mut cand);
            self.walk_changed(events);
            // PERF: the second slot of a candidate is anywhere in memory
            // (the first is the slot re-filed, the same for a run): its
            // state (if read), held and exact boxes and pair array header are
            // prefetched 8 candidates ahead, the array's end 4 ahead.
            for i in 0..cand.len() {
                if let Some(&(_, y)) = cand.get(i + 8) {
                    self.index.prefetch_held(y);
                    crate::sweep::prefetch(&self.store.aabb[y as usize]);
                    if !self.frame.removed.is_empty() {
                        crate::sweep::prefetch(&self.store.meta[y as usize]);
                    }
                    self.cache.prefetch_head(y);
                }
                if let Some(&(_, y)) = cand.get(i + 4) {
                    self.cache.prefetch_tail(y);
                }
                let (x, y) = cand[i];
                self.try_track(x, y, events);
            }
            if inserted_by_oneshot {
                // With no candidate before, no pair of an arrival is tracked:
                // the searches' pairs need no lookup (level streaming).
                self.begin_inserted(cand.is_empty(), events);
            } else if !self.frame.inserted.is_empty() {
                self.track_arrival_pairs(cand.is_empty(), events);
            }
        }
        self.candidates = cand;
        for i in 0..self.frame.removed.len() {
            self.store.free(self.frame.removed[i]);
        }
        for s in core::mem::take(&mut self.store.cancelled) {
            self.store.free(s);
        }
        // The one-shot path's merge appends them in order already.
        if !bulk && !events[start..].is_sorted() {
            self.sort_events(&mut events[start..]);
        }
    }

    fn pairs(&self) -> &[ProxyPair] {
        if self.flat {
            &self.flat_pairs
        } else {
            self.cache.pairs()
        }
    }

    fn aabb(&self, id: ProxyId) -> Result<Aabb<S, D>, ProxyError> {
        let s = self.store.slot(id)?;
        Ok(self.store.latest_aabb(s))
    }

    fn user_data(&self, id: ProxyId) -> Result<u64, ProxyError> {
        let s = self.store.slot(id)?;
        Ok(self.store.user[s as usize])
    }

    fn len(&self) -> usize {
        self.store.len()
    }

    fn query_aabb(&self, region: &Aabb<S, D>, filter: Filter, f: &mut dyn FnMut(ProxyId) -> bool) {
        self.visit(&Region::of(region), filter, &mut |b| b.overlaps(region), f);
    }

    fn query_point(&self, point: [S; D], filter: Filter, f: &mut dyn FnMut(ProxyId) -> bool) {
        let r = Region { min: point.map(S::to_f64), max: point.map(S::to_f64) };
        self.visit(&r, filter, &mut |b| b.contains_point(&point), f);
    }

    fn query_sphere(&self, sphere: &Sphere<S, D>, filter: Filter, f: &mut dyn FnMut(ProxyId) -> bool) {
        self.visit(&sphere.region(), filter, &mut |b| sphere.overlaps(b), f);
    }

    fn cast_ray(&self, ray: &Ray<S, D>, filter: Filter, f: &mut dyn FnMut(RayHit) -> f64) {
        let st = &self.store;
        let mut max = ray.max_fraction();
        self.query_slots(&ray.region(max), &mut |s| {
            let i = s as usize;
            if st.meta[i].state != State::Live || !st.filter[i].accepts(&filter) {
                return true;
            }
            let Some(t) = ray.hit(&st.aabb[i], max) else { return true };
            let r = f(RayHit { id: st.id(s), fraction: t });
            if r == 0.0 {
                return false;
            }
            if r > 0.0 {
                max = max.min(r);
            }
            true
        });
    }

    fn validate(&self) -> Result<(), String> {
        self.store.validate()?;
        self.cache.validate()?;
        let st = &self.store;
        if self.flat {
            if self.cache.tracked_len() != 0 {
                return Err("flat mode with tracked pairs".into());
            }
            if !self.flat_pairs.windows(2).all(|w| w[0] < w[1]) {
                return Err("flat pairs not sorted and distinct".into());
            }
            self.coarse.validate(st, &self.flat_pairs)?;
        } else if self.coarse.valid {
            return Err("a coarse set outside flat mode".into());
        }
        // In flat mode the maintained index is stale by design, and a lazily
        // built one may lack proxies removed since (skipped anyway).
        if !self.flat {
            self.index.validate(st)?;
        }
        for (_, x, y) in self.cache.tracked() {
            let p = self.pair(x, y);
            if !self.index.tracks(st, x, y) {
                return Err(format!("pair {p:?}: tracked, but the index does not hold it"));
            }
        }
        for p in self.pairs() {
            let (x, y) = (p.a().index(), p.b().index());
            for id in [p.a(), p.b()] {
                let s = id.index();
                if !st.indexed(s) || st.generation[s as usize] != id.generation() {
                    return Err(format!("pair {p:?}: {id} is not an indexed proxy"));
                }
            }
            if !st.aabb[x as usize].overlaps(&st.aabb[y as usize]) {
                return Err(format!("pair {p:?}: the boxes do not overlap"));
            }
            if !self.allowed(x, y) {
                return Err(format!("pair {p:?}: kinds or filters reject it"));
            }
        }
        Ok(())
    }

    fn memory(&self) -> usize {
        use core::mem::size_of;
        let sc = &self.scratch;
        // Working memory of the one-shot paths counts too.
        let work = sc.ws.memory()
            + sc.plan.memory()
            + (sc.boxes.capacity() + sc.others.capacity()) * size_of::<Aabb<S, D>>()
            + (sc.slots.capacity() + sc.other_slots.capacity() + sc.seen.capacity()) * 4
            + sc.arrivals.memory()
            + sc.repeats.memory()
            + self.frame.moved.capacity() * size_of::<(u32, Aabb<S, D>)>()
            + (self.order.capacity() + self.order_scratch.capacity()) * 8
            + self.frame.velocity.capacity() * size_of::<[f64; D]>()
            + (self.frame.removed.capacity()
                + self.frame.inserted.capacity()
                + self.frame.refiltered.capacity()
                + self.frame.left.capacity())
                * 4;
        self.store.memory()
            + self.index.memory()
            + self.lazy.get().map_or(0, |i| i.memory())
            + self.coarse.memory()
            + work
            + self.pair_memory()
    }

    fn release_scratch(&mut self) {
        self.index.release_scratch();
        self.store.shrink();
        self.cache.shrink();
        self.scratch = OneShot::default();
        self.candidates = Vec::new();
        self.walk_buf = Vec::new();
        self.walk_ends = Vec::new();
        self.order = Vec::new();
        self.order_scratch = Vec::new();
        self.event_scratch = Vec::new();
        self.frame = Frame::default();
        self.flat_pairs.shrink_to_fit();
        // (A coarse set goes with its buffers; the next one-shot frame
        // searches the exact boxes.)
        let on = self.coarse.enabled;
        self.coarse = Coarse::default();
        self.coarse.enabled = on;
    }

    fn pair_memory(&self) -> usize {
        use core::mem::size_of;
        let sc = &self.scratch;
        self.cache.memory()
            + (self.flat_pairs.capacity() + sc.old.capacity() + sc.new.capacity() + sc.begins.capacity())
                * size_of::<ProxyPair>()
            + sc.keys.capacity() * 8
            + (sc.sorting.lo_starts.capacity() + sc.sorting.hi_starts.capacity()) * 4
            + (sc.sorting.by_hi.capacity() + sc.sorting.by_lo.capacity()) * 8
            + (sc.pairs.capacity() + sc.cross.capacity()) * size_of::<Pair>()
            + (self.candidates.capacity() + sc.found.capacity()) * 8
            + self.walk_buf.capacity() * 8
            + self.walk_ends.capacity() * 4
            + self.event_scratch.capacity() * size_of::<PairEvent>()
    }
}

/// Appends the difference between two sorted pair lists: ends (in `old`
/// only), then begins (in `new` only), each ascending.
///
/// Pairs compare by their slots alone: a slot pair in both lists names the
/// same proxies (a removed proxy's slot is reused only after the update that
/// removes it, and then leaves no pair in the older list).
fn diff(old: &[ProxyPair], new: &[ProxyPair], events: &mut Vec<PairEvent>, begins: &mut Vec<ProxyPair>) {
    #[inline(always)]
    fn key(p: &ProxyPair) -> u64 {
        (p.a().index() as u64) << 32 | p.b().index() as u64
    }
    /// Whether two blocks hold the same pairs: their words, compared
    /// without branches (a few vector operations).
    #[inline(always)]
    fn same(a: &[ProxyPair], b: &[ProxyPair]) -> bool {
        let (a, b) = (ProxyPair::words(a), ProxyPair::words(b));
        a.iter().zip(b).fold(0, |diff, (x, y)| diff | (x ^ y)) == 0
    }
    const BLOCK: usize = 8;
    // One merge: ends go out at once, begins wait in `begins` (most pairs
    // are in both lists, and long runs of them are skipped a block at a
    // time).
    begins.clear();
    let (mut i, mut j) = (0, 0);
    while i < old.len() && j < new.len() {
        if i + BLOCK <= old.len() && j + BLOCK <= new.len() && same(&old[i..i + BLOCK], &new[j..j + BLOCK]) {
            i += BLOCK;
            j += BLOCK;
            continue;
        }
        let (ko, kn) = (key(&old[i]), key(&new[j]));
        if ko == kn {
            i += 1;
            j += 1;
        } else if ko < kn {
            events.push(PairEvent::End(old[i]));
            i += 1;
        } else {
            begins.push(new[j]);
            j += 1;
        }
    }
    events.extend(old[i..].iter().map(|&p| PairEvent::End(p)));
    events.extend(begins.iter().chain(&new[j..]).map(|&p| PairEvent::Begin(p)));
}

/// The sort key of the pair of slots `x`, `y` (of `bits` bits each): the
/// smaller above the larger.
#[inline]
fn slot_pair_key(x: u32, y: u32, bits: u32) -> u64 {
    (x.min(y) as u64) << bits | x.max(y) as u64
}

/// From this many pairs, `Engine::sort_slot_pairs` takes a radix sort (in
/// debug builds, the tests', from 64, so that the model tests take both
/// ways).
const RADIX_PAIRS_MIN: usize = if cfg!(debug_assertions) { 64 } else { 1 << 15 };

/// Batches at least this large take their slots in spatial order.
const SPATIAL_MIN: usize = 32;

/// The low `bits` bits of `q` spread `d` apart (bit `b` to bit `b * d`).
#[inline]
fn spread_bits(q: u32, bits: u32, d: usize) -> u32 {
    match d {
        1 => q,
        2 => {
            let mut x = q & 0xffff;
            x = (x | (x << 8)) & 0x00ff_00ff;
            x = (x | (x << 4)) & 0x0f0f_0f0f;
            x = (x | (x << 2)) & 0x3333_3333;
            (x | (x << 1)) & 0x5555_5555
        }
        3 => {
            let mut x = q & 0x3ff;
            x = (x | (x << 16)) & 0x0300_00ff;
            x = (x | (x << 8)) & 0x0300_f00f;
            x = (x | (x << 4)) & 0x030c_30c3;
            (x | (x << 2)) & 0x0924_9249
        }
        _ => (0..bits).fold(0, |code, b| code | ((q >> b) & 1) << (b as usize * d)),
    }
}

/// The positions of `proxies` (in the payloads of sort keys) sorted by the
/// Morton code of their centres (quantised over the bounds of a sample).
fn spatial_order<S: Scalar, const D: usize>(proxies: &[Proxy<S, D>]) -> Vec<u64> {
    // The bounds of a sample (a pass over the whole batch would cost as
    // much as computing the codes): proxies outside share the edge cells.
    let (mut lo, mut hi) = ([f64::INFINITY; D], [f64::NEG_INFINITY; D]);
    for p in proxies.iter().step_by((proxies.len() / 4096).max(1)) {
        for k in 0..D {
            let c = p.aabb.center(k);
            lo[k] = lo[k].min(c);
            hi[k] = hi[k].max(c);
        }
    }
    // At most 22 bits: the radix sort then takes two passes, not three
    // (7 bits an axis in 3D: 2^21 cells, finer than the boxes up to
    // millions of them).
    let bits = (22 / D.max(1)).min(16) as u32;
    morton_order(proxies.iter().map(|p| core::array::from_fn(|k| p.aabb.center(k))), lo, hi, bits)
}

/// The positions of `centers` (in the payloads of sort keys) sorted by the
/// Morton codes of the centres, quantised to `bits` bits an axis over
/// `lo..=hi`: centres outside share the edge cells, and an axis of no
/// (finite) spread is one cell.
pub(super) fn morton_order<const D: usize>(
    centers: impl Iterator<Item = [f64; D]>,
    lo: [f64; D],
    hi: [f64; D],
    bits: u32,
) -> Vec<u64> {
    let top = ((1u64 << bits) - 1) as f64;
    let scale: [f64; D] = core::array::from_fn(|k| {
        let span = hi[k] - lo[k];
        if span > 0.0 && span.is_finite() {
            top / span
        } else {
            0.0
        }
    });
    let mut keys: Vec<u64> = centers
        .enumerate()
        .map(|(i, c)| {
            let mut code = 0u32;
            for k in 0..D {
                // Clamped to `0..=top` (`as` saturates below, and takes NaN
                // to 0); 0 on a flat axis.
                let q = ((c[k] - lo[k]) * scale[k]) as u32;
                code |= spread_bits(q.min(top as u32), bits, D) << k;
            }
            keyed(code, i as u32)
        })
        .collect();
    let mut tmp = Vec::new();
    sort_keyed(&mut keys, &mut tmp, false);
    keys
}

#[cfg(test)]
mod tests {
    use super::spread_bits;

    #[test]
    fn spread_bits_matches_the_bit_loop() {
        let slow = |q: u32, bits: u32, d: usize| (0..bits).fold(0u32, |c, b| c | ((q >> b) & 1) << (b as usize * d));
        for q in (0..1024u32).chain([0x3ff, 0x2aa, 0x155]) {
            assert_eq!(spread_bits(q, 10, 3), slow(q, 10, 3), "{q:#x}");
        }
        for q in (0..65536u32).step_by(7).chain([0xffff, 0xaaaa]) {
            assert_eq!(spread_bits(q, 16, 2), slow(q, 16, 2), "{q:#x}");
        }
        assert_eq!(spread_bits(0xabcd, 16, 1), 0xabcd);
    }

    #[test]
    fn moved_proxies_get_the_velocity_given_or_the_one_observed() {
        use crate::persistent::{BroadPhase, HashGrid, Proxy};
        use crate::Aabb;
        let b = |x: f64| Aabb::new([x, 0.0], [x + 1.0, 1.0]).unwrap();
        let mut bp = HashGrid::<f64, 2>::default();
        let ids: Vec<_> = (0..4).map(|i| bp.insert(Proxy::new(b(3.0 * i as f64))).unwrap()).collect();
        let mut events = Vec::new();
        bp.update(&mut events);
        let velocities = |bp: &HashGrid<f64, 2>| -> Vec<(u32, [f64; 2])> {
            let fr = &bp.frame;
            (0..fr.moved.len()).map(|i| (fr.moved[i].0, fr.velocity(i, &bp.store))).collect()
        };
        // None given: observed, none stored.
        bp.set_aabb(ids[0], b(0.5)).unwrap();
        bp.set_aabb(ids[2], b(5.875)).unwrap();
        bp.update(&mut events);
        assert!(bp.frame.velocity.is_empty());
        assert_eq!(velocities(&bp), [(ids[0].index(), [0.5, 0.0]), (ids[2].index(), [-0.125, 0.0])]);
        // One given after a plain move (the plain one's is filled in), and
        // one plain after it; the proxy that did not move is not listed.
        bp.set_aabb(ids[0], b(1.0)).unwrap();
        bp.set_aabb_with_velocity(ids[1], b(3.25), [2.0, -1.0]).unwrap();
        bp.set_aabb(ids[2], b(6.0)).unwrap();
        bp.set_aabb(ids[3], b(9.0)).unwrap();
        bp.update(&mut events);
        assert_eq!(bp.frame.velocity.len(), 3);
        assert_eq!(
            velocities(&bp),
            [(ids[0].index(), [0.5, 0.0]), (ids[1].index(), [2.0, -1.0]), (ids[2].index(), [0.125, 0.0])]
        );
    }
}
