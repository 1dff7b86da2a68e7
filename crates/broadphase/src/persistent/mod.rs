//! Persistent broad phases: proxies that live across frames, and the pairs
//! that began and ended overlapping since the last update.
//!
//! # Model
//!
//! A broad phase holds *proxies*: an exact box, a [`BodyKind`], a [`Filter`]
//! and a `u64` of user data, named by a generational [`ProxyId`]. Mutations
//! ([`BroadPhase::insert`], [`BroadPhase::set_aabb`], [`BroadPhase::set_filter`],
//! [`BroadPhase::remove`] and their batch forms) are validated and recorded at
//! once, and applied together by [`BroadPhase::update`], which appends the
//! frame's [`PairEvent`]s: every `End` first, then every `Begin`, each group in
//! ascending pair order, so the event stream is a function of the operation
//! history alone (not of hash seeds, memory addresses or thread counts), and
//! the same for every algorithm.
//!
//! Pairs, events and queries are about the exact boxes the caller gave; the
//! structures' internal accelerators (sorted endpoints, cells, fat boxes) are
//! never visible. [`BroadPhase::pairs`] and the queries see the state of the
//! last update, except that a proxy removed since is no longer returned.
//!
//! # Design: one engine, several spatial indexes
//!
//! Every algorithm is an [`Engine`] over a [`SpatialIndex`]. The engine owns
//! what is common: the proxy slots with their generations, the pending
//! changes, the filter and kind rules, and the pair cache. The cache holds
//! the *tracked* pairs: allowed pairs whose boxes, as the index holds them,
//! overlap (the exact boxes for the sweep-and-prune indexes; boxes grown by a
//! margin, "fat", for the grid and the trees), each flagged when the exact
//! boxes overlap; the flagged ones are the reported pairs, also kept as a
//! flat array. Each proxy's tracked pairs are contiguous, so a pair is found,
//! added or removed in O(its proxies' degrees) and a walk over a proxy's pairs
//! issues independent loads. Per update the engine
//!
//! 1. untracks the pairs of removed proxies (ends);
//! 2. asks the index to apply the frame and to propose *candidates*: a
//!    superset of the pairs that may have started overlapping as the index
//!    holds them, each involving a moved, inserted or re-filtered proxy;
//! 3. walks the tracked pairs of each re-filtered and moved proxy: a pair the
//!    filters or the index no longer hold is untracked, the others are
//!    flagged by the exact test (ends and begins); a proxy that moved within
//!    its fat box needs nothing else;
//! 4. tracks each new candidate, flagged by the exact test (begins).
//!
//! The cost of a frame therefore follows what changed: a frame in which
//! nothing changed costs O(1). When most proxies changed (a quarter, and at
//! least 256), the engine instead finds the exact pairs with the one-shot
//! search ([`PairFinder`](crate::PairFinder), `Auto`) and emits events by
//! merging the sorted old and new pair lists ("flat" mode). It then
//! maintains neither the index nor tracked pairs: queries scan the boxes,
//! and past the first few build an index on demand; the next incremental
//! frame rebuilds the index and the tracked pairs in bulk. That rebuild
//! costs a few one-shot frames, so where busy frames keep coming back soon
//! after it (changes that hover about the threshold), the calm frames
//! between them stay one-shot too, for longer after each such bounce (a
//! rent-or-buy rule). A large batch of inserts finds its pairs
//! among itself by one one-shot search, and with the rest of the world
//! through a grid placed over it that the world's held boxes stream
//! through (the hash grid instead files each arrival and scans its cells
//! in one visit per cell); it takes its slots in the spatial (Morton) order
//! of its boxes, so that neighbours sit close in memory. A large batch of
//! removals that holds at least half the tracked pairs untracks them by
//! one pass over the pairs and a rebuild from those that stay. (The
//! brute-force reference never takes the one-shot paths.)
//!
//! Where one-shot frames follow one another with every proxy moving a
//! little (a crowd, debris, particles), the search of one frame runs over
//! each box grown by three steps of its own motion, and its pairs, sorted,
//! serve as candidates for the next frames: each is then one pass over the
//! candidates with the exact test, which writes the pairs and the events in
//! order, with no search, sort or merge, until a box leaves its grown box
//! (or a proxy arrives or leaves, or a filter changes). Sets that serve no
//! frame (incoherent motion) make the next builds back off.
//!
//! The indexes differ in how they find candidates:
//!
//! | type | index | candidates from | strong on |
//! |---|---|---|---|
//! | [`BruteForce`] | none | every proxy | tiny worlds; the reference |
//! | [`IncrementalSap`] | endpoints sorted on every axis | swaps while re-sorting | 1D/2D, sparse 3D, small steps |
//! | [`DynamicTree`] | fat boxes in two AVL-balanced trees (static, moving) | tree queries of re-inserted proxies | varied sizes, large static worlds |
//! | [`MultiSap`] | a sweep-and-prune per region, regions on demand | swaps within regions, scans of entered regions | large worlds, bullets, huge ground boxes |
//! | [`HashGrid`] | fat boxes in hashed cells | cells of a re-fattened proxy | many similar-sized objects, dense 3D |

mod arrivals;
mod brute;
mod cells;
mod coarse;
mod engine;
mod grid;
mod marks;
mod mbp;
mod pairs;
mod query;
mod sap;
mod store;
mod tree;

pub use brute::BruteIndex;
pub use engine::{Engine, SpatialIndex};
pub use grid::{GridIndex, DEFAULT_MARGIN as GRID_DEFAULT_MARGIN, DEFAULT_PREDICT as GRID_DEFAULT_PREDICT};
pub use mbp::MbpIndex;
pub use pairs::{PairEvent, ProxyPair};
pub use query::{Ray, RayHit, Sphere};
pub use sap::SapIndex;
pub use tree::{TreeIndex, DEFAULT_MARGIN as TREE_DEFAULT_MARGIN, DEFAULT_PREDICT as TREE_DEFAULT_PREDICT};

use crate::{Aabb, Scalar};

/// The brute-force reference behind the persistent interface: every changed
/// proxy is tested against every other. O(changed × n) per frame.
pub type BruteForce<S, const D: usize> = Engine<S, D, BruteIndex>;

/// Incremental sweep-and-prune (seeds 000, 001, 004): the endpoints of every
/// proxy are kept sorted on every axis by insertion sort, and each time a
/// lower endpoint passes an upper one the pair becomes a candidate. See
/// [`SapIndex`].
pub type IncrementalSap<S, const D: usize> = Engine<S, D, SapIndex<S, D>>;

/// Dynamic AABB trees over fat boxes (one for static proxies, one for
/// moving ones), with SAH-guided insertion and rotations. See [`TreeIndex`].
pub type DynamicTree<S, const D: usize> = Engine<S, D, TreeIndex<S, D>>;

/// Multi-region sweep-and-prune for large worlds: regions created on
/// demand, each with its own sweep-and-prune, and a list for proxies much
/// larger than a region. See [`MbpIndex`].
pub type MultiSap<S, const D: usize> = Engine<S, D, MbpIndex<S, D>>;

/// An incremental hash grid over fat boxes, with a list for proxies much
/// larger than a cell. See [`GridIndex`].
pub type HashGrid<S, const D: usize> = Engine<S, D, GridIndex<S, D>>;

/// How a proxy moves, which decides which pairs are reported.
///
/// Static–static pairs are never reported. Pairs with a dynamic proxy are
/// always reported (subject to filters). Kinematic–kinematic and
/// kinematic–static pairs are reported only when [`PairPolicy`] says so.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum BodyKind {
    /// Never moves (it may, but every move is a full re-insertion's cost).
    Static,
    /// Moved by the program, not by the simulation.
    Kinematic,
    /// Moved by the simulation.
    #[default]
    Dynamic,
}

/// Which pairs of kinematic proxies are reported (PhysX's pair filtering
/// modes). Both are off by default.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct PairPolicy {
    /// Report kinematic–kinematic pairs.
    pub kinematic_kinematic: bool,
    /// Report kinematic–static pairs.
    pub kinematic_static: bool,
}

impl PairPolicy {
    /// Whether a pair of proxies of these kinds may be reported.
    #[inline]
    pub fn allows(&self, a: BodyKind, b: BodyKind) -> bool {
        use BodyKind::*;
        match (a, b) {
            (Dynamic, _) | (_, Dynamic) => true,
            (Static, Static) => false,
            (Kinematic, Kinematic) => self.kinematic_kinematic,
            _ => self.kinematic_static,
        }
    }
}

/// Collision filtering by 64-bit category and mask: two proxies (or a proxy
/// and a query) pair only when each one's category meets the other's mask.
///
/// ```
/// use broadphase::Filter;
/// let player = Filter::new(0b01, !0);
/// let ghost = Filter::new(0b10, !0b01); // does not collide with players
/// assert!(!player.accepts(&ghost));
/// assert!(Filter::ALL.accepts(&player));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Filter {
    /// The groups this proxy belongs to.
    pub category: u64,
    /// The groups this proxy pairs with.
    pub mask: u64,
}

impl Filter {
    /// Belongs to every group and pairs with every group.
    pub const ALL: Filter = Filter { category: !0, mask: !0 };

    /// A filter from its category and mask bits.
    pub const fn new(category: u64, mask: u64) -> Self {
        Self { category, mask }
    }

    /// Whether the two accept each other.
    #[inline]
    pub fn accepts(&self, other: &Filter) -> bool {
        (self.category & other.mask) != 0 && (other.category & self.mask) != 0
    }
}

impl Default for Filter {
    fn default() -> Self {
        Self::ALL
    }
}

/// Everything a new proxy needs: its box, kind, filter and user data.
///
/// ```
/// use broadphase::{Aabb2, BodyKind, Filter, Proxy};
/// let b = Aabb2::new([0.0, 0.0], [1.0, 1.0]).unwrap();
/// let p = Proxy::new(b).kind(BodyKind::Static).filter(Filter::new(1, !0)).user(42);
/// assert_eq!(p.user, 42);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Proxy<S: Scalar, const D: usize> {
    /// The exact box.
    pub aabb: Aabb<S, D>,
    /// How it moves.
    pub kind: BodyKind,
    /// What it pairs with.
    pub filter: Filter,
    /// Opaque to the broad phase.
    pub user: u64,
}

impl<S: Scalar, const D: usize> Proxy<S, D> {
    /// A dynamic proxy with [`Filter::ALL`] and user data 0.
    pub fn new(aabb: Aabb<S, D>) -> Self {
        Self { aabb, kind: BodyKind::Dynamic, filter: Filter::ALL, user: 0 }
    }

    /// With this kind.
    pub fn kind(mut self, kind: BodyKind) -> Self {
        self.kind = kind;
        self
    }

    /// With this filter.
    pub fn filter(mut self, filter: Filter) -> Self {
        self.filter = filter;
        self
    }

    /// With this user data.
    pub fn user(mut self, user: u64) -> Self {
        self.user = user;
        self
    }
}

/// The interface every persistent broad phase implements. Object safe, so an
/// engine can pick its broad phase at run time (`Box<dyn BroadPhase<f32, 3>>`).
///
/// ```
/// use broadphase::persistent::IncrementalSap;
/// use broadphase::{Aabb2, BroadPhase, PairEvent, Proxy};
///
/// let mut bp = IncrementalSap::<f64, 2>::default();
/// let a = bp.insert(Proxy::new(Aabb2::new([0.0, 0.0], [1.0, 1.0]).unwrap())).unwrap();
/// let b = bp.insert(Proxy::new(Aabb2::new([3.0, 0.0], [4.0, 1.0]).unwrap())).unwrap();
/// let mut events = Vec::new();
/// bp.update(&mut events);
/// assert!(events.is_empty());
///
/// bp.set_aabb(b, Aabb2::new([1.0, 0.0], [2.0, 1.0]).unwrap()).unwrap(); // touches a
/// bp.update(&mut events);
/// assert!(matches!(events[..], [PairEvent::Begin(p)] if (p.a(), p.b()) == (a, b)));
///
/// events.clear();
/// bp.remove(a).unwrap();
/// bp.update(&mut events);
/// assert!(matches!(events[..], [PairEvent::End(_)]));
/// assert!(bp.set_aabb(a, Aabb2::new([0.0, 0.0], [1.0, 1.0]).unwrap()).is_err()); // stale
/// ```
pub trait BroadPhase<S: Scalar, const D: usize> {
    /// A short name of the algorithm.
    fn name(&self) -> &'static str;

    /// Adds a proxy; it takes part from the next update.
    fn insert(&mut self, proxy: Proxy<S, D>) -> Result<ProxyId, ProxyError>;

    /// Adds many proxies, appending their ids to `ids` in order. All or
    /// nothing: on error nothing was added.
    fn insert_batch(&mut self, proxies: &[Proxy<S, D>], ids: &mut Vec<ProxyId>) -> Result<(), ProxyError>;

    /// Removes a proxy: its id is stale from now on, it leaves the queries at
    /// once, and its pairs end at the next update.
    fn remove(&mut self, id: ProxyId) -> Result<(), ProxyError>;

    /// Removes many proxies. All or nothing: a stale id, or an id given twice,
    /// rejects the whole batch.
    fn remove_batch(&mut self, ids: &[ProxyId]) -> Result<(), ProxyError>;

    /// Gives a proxy a new box, applied at the next update.
    fn set_aabb(&mut self, id: ProxyId, aabb: Aabb<S, D>) -> Result<(), ProxyError>;

    /// Gives a proxy a new box and the displacement it expects per update
    /// (its velocity times the time step). Indexes with fat boxes (the grid
    /// and the trees) stretch them along it, so a fast, steadily moving
    /// proxy is re-filed less often; without it they use the displacement
    /// observed. Results never depend on it. A NaN or infinite velocity is
    /// refused.
    fn set_aabb_with_velocity(&mut self, id: ProxyId, aabb: Aabb<S, D>, velocity: [S; D]) -> Result<(), ProxyError>;

    /// Gives many proxies new boxes. All or nothing.
    fn set_aabb_batch(&mut self, moves: &[(ProxyId, Aabb<S, D>)]) -> Result<(), ProxyError>;

    /// Gives a proxy a new filter, applied at the next update: pairs the new
    /// filter rejects end, pairs it newly allows begin.
    fn set_filter(&mut self, id: ProxyId, filter: Filter) -> Result<(), ProxyError>;

    /// Applies every change since the last update and appends the pairs that
    /// ended, then those that began (each group in ascending order).
    fn update(&mut self, events: &mut Vec<PairEvent>);

    /// The current pairs (as of the last update), in no particular order.
    fn pairs(&self) -> &[ProxyPair];

    /// The box last given to a live proxy (applied or pending).
    fn aabb(&self, id: ProxyId) -> Result<Aabb<S, D>, ProxyError>;

    /// A live proxy's user data.
    fn user_data(&self, id: ProxyId) -> Result<u64, ProxyError>;

    /// The number of live proxies (including those inserted since the last
    /// update).
    fn len(&self) -> usize;

    /// Whether there are no live proxies.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Calls `f` for each proxy whose box overlaps `region` and whose filter
    /// accepts `filter`, until `f` returns `false`.
    fn query_aabb(&self, region: &Aabb<S, D>, filter: Filter, f: &mut dyn FnMut(ProxyId) -> bool);

    /// Calls `f` for each proxy whose box contains `point`, until `f` returns
    /// `false`.
    fn query_point(&self, point: [S; D], filter: Filter, f: &mut dyn FnMut(ProxyId) -> bool);

    /// Calls `f` for each proxy whose box meets the closed ball, until `f` returns `false`.
    fn query_sphere(&self, sphere: &Sphere<S, D>, filter: Filter, f: &mut dyn FnMut(ProxyId) -> bool);

    /// Casts a ray (Box2D's contract): `f` is called with each proxy whose
    /// box the ray meets within its current maximum fraction, in no
    /// particular order, and returns the new maximum fraction: `0` stops the
    /// cast, a smaller value clips the ray, a negative value ignores the hit.
    fn cast_ray(&self, ray: &Ray<S, D>, filter: Filter, f: &mut dyn FnMut(RayHit) -> f64);

    /// The closest proxy the ray meets (ties: the smallest id).
    fn cast_ray_closest(&self, ray: &Ray<S, D>, filter: Filter) -> Option<RayHit> {
        let mut best: Option<RayHit> = None;
        self.cast_ray(ray, filter, &mut |hit| {
            match best {
                Some(b) if (b.fraction, b.id) <= (hit.fraction, hit.id) => {}
                _ => best = Some(hit),
            }
            // Clip to the best so far; a hit at 0 clips to the smallest
            // positive value instead of stopping, so ties at 0 still meet
            // the smallest id.
            best.map_or(ray.max_fraction(), |b| b.fraction.max(f64::MIN_POSITIVE))
        });
        best
    }

    /// Every proxy the ray meets, appended to `out` in ascending fraction
    /// (ties by id).
    fn cast_ray_all(&self, ray: &Ray<S, D>, filter: Filter, out: &mut Vec<RayHit>) {
        let start = out.len();
        self.cast_ray(ray, filter, &mut |hit| {
            out.push(hit);
            ray.max_fraction()
        });
        out[start..].sort_by(|x, y| x.fraction.total_cmp(&y.fraction).then(x.id.cmp(&y.id)));
    }

    /// Whether the ray meets any proxy.
    fn cast_ray_any(&self, ray: &Ray<S, D>, filter: Filter) -> bool {
        let mut hit = false;
        self.cast_ray(ray, filter, &mut |_| {
            hit = true;
            0.0
        });
        hit
    }

    /// Checks every invariant of the structure; `Err` describes the first
    /// broken one. Meant for tests: it costs O(n log n) or more.
    fn validate(&self) -> Result<(), String>;

    /// Bytes of memory held (capacities, not lengths).
    fn memory(&self) -> usize;

    /// Frees working memory kept from bulk frames (one-shot searches,
    /// rebuilds, large batches) and trims arrays to their lengths, so that
    /// [`BroadPhase::memory`] is the structure alone (after a level load,
    /// say); the next bulk frame allocates again.
    fn release_scratch(&mut self);

    /// The part of [`BroadPhase::memory`] that holds pairs (it grows with
    /// the pairs, not with the proxies).
    fn pair_memory(&self) -> usize;
}

pub use crate::error::ProxyError;
pub use crate::id::ProxyId;
