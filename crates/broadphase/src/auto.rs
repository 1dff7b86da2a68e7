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
//! The constants (nanoseconds per box and per candidate) were measured with
//! `broadphase calibrate` on the shared scenes; see the crate README.

use crate::grid::oneshot::Layout;
use crate::stats::Profile;
use crate::{Aabb, Algorithm, Scalar};

/// Below this many boxes brute force is the fastest.
const BRUTE_MAX: usize = 24;
/// Sample size for counting grid candidates.
const GRID_SAMPLE: usize = 160;

// Measured costs, nanoseconds (see the module notes).
const SAP_PER_BOX: f64 = 30.0;
const SAP_PER_CANDIDATE: f64 = 1.0;
const GRID_PER_BOX: f64 = 45.0;
const GRID_PER_CANDIDATE: f64 = 1.5;
const BI_PER_BOX_LOG: f64 = 6.0;

/// Estimated costs of the candidates, in nanoseconds.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Estimate {
    pub sap: f64,
    pub grid: f64,
    pub box_intersect: f64,
}

impl Estimate {
    fn best(&self) -> Algorithm {
        let mut best = (Algorithm::SortAndSweep, self.sap);
        for (a, c) in [(Algorithm::Grid, self.grid), (Algorithm::BoxIntersect, self.box_intersect)] {
            if c < best.1 {
                best = (a, c);
            }
        }
        best.0
    }
}

pub(crate) fn estimate<S: Scalar, const D: usize>(
    profile: &Profile<D>,
    sets: &[&[Aabb<S, D>]],
    bipartite: bool,
) -> Estimate {
    let n = profile.n as f64;
    let pairs = if bipartite { sets[0].len() as f64 * sets[1].len() as f64 } else { n * (n - 1.0) / 2.0 };
    let axis = profile.sweep_axis();
    let sap = SAP_PER_BOX * n + SAP_PER_CANDIDATE * profile.overlap[axis] * pairs;
    let grid = if D == 1 {
        f64::INFINITY
    } else {
        let layout = Layout::new(profile, None);
        GRID_PER_BOX * n + GRID_PER_CANDIDATE * layout.candidate_fraction(sets, GRID_SAMPLE, bipartite) * pairs
    };
    let log = n.max(2.0).log2();
    let box_intersect = BI_PER_BOX_LOG * n * log.powi(D as i32 - 1).max(1.0);
    Estimate { sap, grid, box_intersect }
}

/// The algorithm for a complete search of `boxes`.
pub(crate) fn choose<S: Scalar, const D: usize>(boxes: &[Aabb<S, D>]) -> Algorithm {
    if boxes.len() <= BRUTE_MAX {
        return Algorithm::BruteForce;
    }
    estimate(&Profile::new(boxes), &[boxes], false).best()
}

/// The algorithm for a bipartite search between `a` and `b`.
pub(crate) fn choose_bipartite<S: Scalar, const D: usize>(a: &[Aabb<S, D>], b: &[Aabb<S, D>]) -> Algorithm {
    if a.len().min(b.len()) <= 1 || a.len().max(b.len()) <= BRUTE_MAX {
        return Algorithm::BruteForce;
    }
    estimate(&Profile::bipartite(a, b), &[a, b], true).best()
}
