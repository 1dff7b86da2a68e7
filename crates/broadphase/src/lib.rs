//! # broadphase
//!
//! Exact broad-phase collision detection: given many axis-aligned boxes, in
//! 1, 2 or 3 dimensions, in `f32` or `f64`, report exactly the pairs whose
//! closed boxes overlap (touching counts), each once, never a box with
//! itself: the same set brute force reports, found fast.
//!
//! ```
//! use broadphase::{Aabb3, Algorithm, PairFinder};
//!
//! let boxes: Vec<Aabb3<f32>> = (0..1000)
//!     .map(|i| {
//!         let x = (i % 10) as f32;
//!         let y = ((i / 10) % 10) as f32;
//!         let z = (i / 100) as f32;
//!         Aabb3::new([x, y, z], [x + 1.0, y + 1.0, z + 1.0]).unwrap()
//!     })
//!     .collect();
//! // The 10×10×10 cube of touching unit cubes: every face, edge and corner
//! // contact is a pair.
//! let pairs = PairFinder::new(Algorithm::Auto).find(&boxes).unwrap();
//! assert_eq!(pairs.len(), 3 * 900 + 6 * 810 + 4 * 729);
//! ```
//!
//! ## Algorithms
//!
//! All behind [`PairFinder`] (or [`find_pairs`] / [`find_bipartite_pairs`]),
//! chosen by [`Algorithm`]:
//!
//! | algorithm | module notes | strong on |
//! |---|---|---|
//! | `BruteForce` | `brute_force` | a few dozen boxes; the reference |
//! | `SortAndSweep` | `sap` | sets spread along one axis, small sets |
//! | `Grid` | `grid` | many boxes of similar size (the common case) |
//! | `Bvh` | `tree::bvh` | clustered sets, varied sizes |
//! | `BoxIntersect` | `box_intersect` | dense projections on every axis |
//! | `Auto` | `auto` | picks from sampled statistics |
//!
//! Each also has a bipartite form (pairs between two sets). Sort-and-sweep
//! and the grid have multi-threaded variants ([`PairFinder::parallel`],
//! feature `parallel`, on by default) with identical output.
//!
//! The sweep kernels are picked at run time for the CPU: AVX-512, AVX2, or
//! portable code that the compiler vectorizes for the target (SSE2, NEON);
//! `Auto` prices the algorithms with constants measured for each of those
//! levels. The environment variable `BROADPHASE_SIMD` (`portable`, `avx2`
//! or `avx512`, read once per process) caps the level, to compare kernels
//! on one machine; every level reports the same pairs in the same order.
//!
//! ## Input
//!
//! An [`Aabb`] is valid by construction: [`Aabb::new`] rejects NaN,
//! infinities and `min > max` with an [`AabbError`] naming the axis, and
//! [`aabbs_from_bounds`] names the box too. Searches then cannot fail on
//! geometry; they return a [`FindError`] only for limits (more than
//! [`MAX_BOXES`] boxes) and bad settings.

#![deny(missing_docs)]
#![warn(clippy::undocumented_unsafe_blocks)]

mod auto;
pub use auto::{auto_stats, AutoStats};
mod box_intersect;
mod brute_force;
mod dedup;
mod error;
mod grid;
mod id;
mod math;
mod mem;
mod oneshot;
mod pair;
mod par;
pub mod persistent;
mod sap;
mod sort;
mod split;
mod stats;
mod sweep;
mod tree;
mod workspace;

pub use error::{AabbError, Bound, BoxError, FindError, ParseAlgorithmError, ProxyError, ShapeError};
pub use id::ProxyId;
pub use math::{aabbs_from_bounds, Aabb, Aabb2, Aabb3, Scalar};
pub use oneshot::{find_bipartite_pairs, find_pairs, Algorithm, PairFinder, Report, MAX_BOXES};
pub use pair::{CrossPair, Pair};
pub use persistent::{BodyKind, BroadPhase, Filter, PairEvent, PairPolicy, Proxy, ProxyPair, Ray, RayHit, Sphere};
pub use workspace::Workspace;

/// A small deterministic generator for the unit tests (a 64-bit LCG), so
/// that they need no dependency and each scene is the same on every run.
#[cfg(test)]
pub(crate) struct Lcg(u64);

#[cfg(test)]
impl Lcg {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 53 bits.
    pub(crate) fn bits(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 11
    }

    /// A value in `[0, 1)`.
    pub(crate) fn unit(&mut self) -> f64 {
        self.bits() as f64 / (1u64 << 53) as f64
    }

    /// A value in `[0, m)` (from the top 31 bits).
    pub(crate) fn below(&mut self, m: u64) -> u64 {
        (self.bits() >> 22) % m
    }
}
