//! `Auto`: picks an algorithm from cheap statistics of the input.
//!
//! The choice compares estimated costs, from a deterministic sample
//! (see [`crate::stats`]):
//!
//! - sort-and-sweep tests every pair that overlaps on its sweep axis: about
//!   `p · n²/2` candidates, `p` the sampled overlap fraction of the best axis;
//! - the grid tests the pairs in neighbouring cells that overlap on the sweep
//!   axis, counted on the sample with the grid's own layout (oversized boxes
//!   included);
//! - box-intersect costs about `n log² n` whatever the layout, so it wins
//!   when both of the above are large (dense projections on every axis).
//!
//! The constants (nanoseconds per box and per candidate) are fitted to
//! measurements: `cargo run --release -p broadphase-bench --bin targets --
//! --calibrate` times the algorithms on every shared scene at several sizes
//! and prints the least-squares fit of these cost models, and how often the
//! resulting choice is within 1.5x of the best; the values below come from
//! such a run (see the comments).

use crate::grid::oneshot::Layout;
use crate::stats::Profile;
use crate::{Aabb, Algorithm, Scalar};

/// Up to this many boxes brute force is the fastest: the others pay a few
/// microseconds of setup (sampling, sorting). Measured with `broadphase
/// compare` on the uniform scene: brute force and sort-and-sweep break even
/// at about 160 boxes in 3D and 240 in 2D.
const BRUTE_MAX: usize = 160;
/// A bipartite search brute-forces as many pair tests as a complete search
/// of `BRUTE_MAX` boxes does, and always when one side has at most
/// `BRUTE_SIDE` boxes (a linear scan beats any sort).
const BRUTE_TESTS: usize = BRUTE_MAX * BRUTE_MAX / 2;
const BRUTE_SIDE: usize = 4;
/// Sample size for counting grid candidates.
const GRID_SAMPLE: usize = 160;

// Cost model constants (nanoseconds), fitted by `targets --calibrate` on
// every shared scene at 1e3, 1e4, 1e5 and 3e5 boxes, 2D and 3D (this
// machine, 2026-11-23, after sort-and-sweep's 8-bit grid): least squares
// gave 43.1 + 0.102/candidate for sort-and-sweep, 48.7 + 0.364/candidate
// for the grid, 16.1 per n log^(d-1) n for box-intersect; the values below
// are those tuned for the choice, with which the pick was the fastest of
// the three in all 72 cases (the constants of the day before, fitted to
// the 16-bit sort-and-sweep, picked the grid where sort-and-sweep was up to
// 1.6x faster at 1e3, and 3x on sticks at 1e4).
const SAP_PER_BOX: f64 = 15.1;
const SAP_PER_CANDIDATE: f64 = 0.143;
const GRID_PER_BOX: f64 = 24.3;
const GRID_PER_CANDIDATE: f64 = 0.364;
const BI_PER_BOX_LOG: f64 = 5.64;

/// What `Auto` sees of an input: its size and sampled estimates of the work
/// of each algorithm, and what it picks from them.
///
/// ```
/// use broadphase::{auto_stats, Aabb3, Algorithm};
/// let boxes: Vec<Aabb3> = (0..1000)
///     .map(|i| Aabb3::new([i as f64, 0.0, 0.0], [i as f64 + 0.5, 1.0, 1.0]).unwrap())
///     .collect();
/// let s = auto_stats(&boxes);
/// assert_eq!(s.boxes, 1000);
/// assert!(s.sweep_candidates < 1000.0); // spread along x: a sweep is cheap
/// assert_ne!(s.choice, Algorithm::BoxIntersect);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AutoStats {
    /// Number of boxes (both sets for a bipartite search).
    pub boxes: usize,
    /// Estimated pairs that overlap on the best sweep axis: the candidates
    /// sort-and-sweep tests.
    pub sweep_candidates: f64,
    /// Estimated candidate pairs the grid tests.
    pub grid_candidates: f64,
    /// The algorithm `Auto` runs.
    pub choice: Algorithm,
}

/// The statistics `Auto` uses for a complete search of `boxes`.
pub fn auto_stats<S: Scalar, const D: usize>(boxes: &[Aabb<S, D>]) -> AutoStats {
    stats(&Profile::new(boxes), &[boxes], false)
}

fn stats<S: Scalar, const D: usize>(profile: &Profile<D>, sets: &[&[Aabb<S, D>]], bipartite: bool) -> AutoStats {
    let n = profile.n as f64;
    let pairs = if bipartite { sets[0].len() as f64 * sets[1].len() as f64 } else { n * (n - 1.0) / 2.0 };
    let sweep_candidates = profile.overlap[profile.sweep_axis()] * pairs;
    let grid_candidates = if D == 1 {
        f64::INFINITY
    } else {
        Layout::new(profile, None).candidate_fraction(sets, GRID_SAMPLE, bipartite) * pairs
    };
    let costs = [
        (Algorithm::SortAndSweep, SAP_PER_BOX * n + SAP_PER_CANDIDATE * sweep_candidates),
        (Algorithm::Grid, GRID_PER_BOX * n + GRID_PER_CANDIDATE * grid_candidates),
        (Algorithm::BoxIntersect, BI_PER_BOX_LOG * n * n.max(2.0).log2().powi(D as i32 - 1).max(1.0)),
    ];
    let small = if bipartite { brute_bipartite(sets[0].len(), sets[1].len()) } else { profile.n <= BRUTE_MAX };
    let choice = if small {
        Algorithm::BruteForce
    } else {
        costs.iter().fold(costs[0], |best, &c| if c.1 < best.1 { c } else { best }).0
    };
    AutoStats { boxes: profile.n, sweep_candidates, grid_candidates, choice }
}

/// The algorithm for a complete search of `boxes`, with the profile it was
/// chosen by (none when the set is small enough for brute force): the
/// chosen algorithm takes its sweep axis or cells from it instead of
/// sampling the boxes again.
pub(crate) fn choose<S: Scalar, const D: usize>(boxes: &[Aabb<S, D>]) -> (Algorithm, Option<Profile<D>>) {
    if boxes.len() <= BRUTE_MAX {
        return (Algorithm::BruteForce, None);
    }
    let profile = Profile::new(boxes);
    (stats(&profile, &[boxes], false).choice, Some(profile))
}

/// The algorithm for a bipartite search between `a` and `b`, with its
/// profile (see [`choose`]).
pub(crate) fn choose_bipartite<S: Scalar, const D: usize>(
    a: &[Aabb<S, D>],
    b: &[Aabb<S, D>],
) -> (Algorithm, Option<Profile<D>>) {
    if brute_bipartite(a.len(), b.len()) {
        return (Algorithm::BruteForce, None);
    }
    let profile = Profile::bipartite(a, b);
    (stats(&profile, &[a, b], true).choice, Some(profile))
}

fn brute_bipartite(a: usize, b: usize) -> bool {
    a.min(b) <= BRUTE_SIDE || a.saturating_mul(b) <= BRUTE_TESTS
}
