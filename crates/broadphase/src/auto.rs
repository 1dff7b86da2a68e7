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
//! - box-intersect costs about `n log^(d-1) n` whatever the layout (with
//!   its own constant per dimension: per `n log n` it costs four to five
//!   times as much in 2D as per `n log² n` in 3D), so it wins when both of
//!   the above are large (dense projections on every axis).
//!
//! The constants (nanoseconds per box and per candidate) are fitted to
//! measurements: `cargo run --release -p broadphase-bench --bin targets --
//! --calibrate` times the algorithms on every shared scene at several sizes
//! and prints the least-squares fit of these cost models, and how often the
//! resulting choice is within 1.5x of the best; the values below come from
//! such runs, one set per SIMD level of the kernels (AVX-512, AVX2,
//! portable; see the comments).

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
/// Sample size for counting grid candidates (smaller for small sets, see
/// [`crate::stats::sample_size`]).
const GRID_SAMPLE: usize = 160;

/// Cost model constants (nanoseconds per box and per candidate), per SIMD
/// level: sort-and-sweep's kernel (and the grid's, less so) is several
/// times faster per candidate with AVX-512 than with AVX2, so one set of
/// constants misjudges one of them.
struct Model {
    sap_per_box: f64,
    sap_per_candidate: f64,
    grid_per_box: f64,
    grid_per_candidate: f64,
    /// Box-intersect per `n log^(d-1) n`: in 1D and 2D, and in 3D.
    bi_per_box_log: [f64; 2],
}

// With AVX-512: fitted by `targets --calibrate` on every shared scene at
// 1e3, 1e4, 1e5 and 3e5 boxes, 2D and 3D, on an Intel Xeon with AVX-512
// (family 6 model 207, Emerald Rapids; a lent 16-core VM, 2026-11-26), after
// the profile's sample was cut for small sets. Two calibrations there:
// least squares gave 73.0 / 64.9 + 0.093 / 0.134 per candidate for
// sort-and-sweep, 70.2 / 72.0 + 0.382 / 0.505 for the grid, 12.3 / 9.8 for
// box-intersect. The values below are those tuned for the choice on the
// second run; on the first (not used for tuning) the pick's worst ratio to
// the fastest was 1.00 of 72 cases, on the second 1.03. The constants used
// before (fitted on an AVX-512 Zen 4 VM on 2026-11-23 with the full sample)
// scored 5.1 and 5.3 there: they took box-intersect for clustered 2D at 3e5
// boxes (5x the grid's time) and sort-and-sweep for most sets of 1e3 boxes
// (up to 1.7x the grid's).
//
// Box-intersect's constant was one for every dimension (4.88 above) until
// the portable kernels' calibration showed that one constant cannot price
// it in 2D and 3D alike (the medians per `n log^(d-1) n` were 18.7 in 2D
// and 3.5 in 3D in the second run). With one per dimension, the picks
// stay within 1.03x of the fastest in all three runs for any 2D constant
// from 5 to 30 and any 3D one from 3 to 8: the values below sit inside
// those ranges.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
const AVX512: Model = Model {
    sap_per_box: 22.7,
    sap_per_candidate: 0.269,
    grid_per_box: 25.2,
    grid_per_candidate: 0.353,
    bi_per_box_log: [12.0, 4.5],
};

// Without AVX-512 (AVX2, and the portable kernels for want of a better
// measurement): fitted the same way on an AVX2-only Zen VM, 2026-11-26,
// after the profile's sample was cut to an eighth of the boxes below 4096
// (`stats::sample_size`; the grid at 1e3 boxes 35% faster, sort-and-sweep
// 7%): least squares gave 81.9 + 0.151/candidate for sort-and-sweep, 82.2 +
// 1.114/candidate for the grid, 13.3 for box-intersect; the values below
// are those tuned for the choice. Scored on that run and two more (72
// cases each), the pick's worst ratio to the fastest was 1.02, 1.19 and
// 1.09 (geometric means 1.000-1.007; the cases above 1.05 are pairs within
// the noise that every set of constants picks alike), where the constants
// fitted on 2026-11-23 with the full sample gave 1.74, 1.82 and 1.67: they
// priced the grid's fixed costs as per-box costs and took sort-and-sweep
// for most sets of 1e3 boxes, where the grid is now 1.2-1.8x faster.
// Box-intersect's constant, one per dimension since (6.66 for both before;
// see the AVX-512 notes): on the last calibration here the picks kept
// their worst of 1.22 (uniform 3D at 1e4, two algorithms within the noise)
// for any 2D constant from 5 to 30 and any 3D one from 1.5 to 6.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
const AVX2: Model = Model {
    sap_per_box: 28.7,
    sap_per_candidate: 0.211,
    grid_per_box: 28.8,
    grid_per_candidate: 0.390,
    bi_per_box_log: [12.0, 3.0],
};

// The portable kernels (no AVX2: other x86 CPUs, and ARM, where they are
// the only ones): fitted the same way on the AVX2 VM with
// `BROADPHASE_SIMD=portable` (2026-11-26; the compiler vectorizes those
// kernels for SSE2 there, for NEON on ARM, both 128 bits wide). Least
// squares gave 56.6 + 1.207/candidate for sort-and-sweep (its kernel has no
// cross-axis grid at this level: 5-7x slower per candidate than with
// AVX2), 87.4 + 1.227/candidate for the grid, box-intersect 20.1 per
// `n log n` in 2D and 3.6 per `n log² n` in 3D. Tuned for the choice, the
// pick was the fastest in all 72 cases for any 2D constant from 10 to 30
// and any 3D one from 1.5 to 4.5 (with a single constant, box-intersect
// was taken for clustered 2D at 3e5 boxes, 2.9x the grid's time).
const PORTABLE: Model = Model {
    sap_per_box: 19.8,
    sap_per_candidate: 0.604,
    grid_per_box: 30.6,
    grid_per_candidate: 0.859,
    bi_per_box_log: [17.0, 2.5],
};

/// The constants for the kernels this CPU runs.
fn model() -> &'static Model {
    use crate::grid::kernel::Simd;
    match Simd::detect() {
        #[cfg(target_arch = "x86_64")]
        Simd::Avx512 => &AVX512,
        #[cfg(target_arch = "x86_64")]
        Simd::Avx2 => &AVX2,
        Simd::Portable => &PORTABLE,
    }
}

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
        let m = crate::stats::sample_size(profile.n, GRID_SAMPLE);
        Layout::new(profile, None).candidate_fraction(sets, m, bipartite) * pairs
    };
    let m = model();
    let costs = [
        (Algorithm::SortAndSweep, m.sap_per_box * n + m.sap_per_candidate * sweep_candidates),
        (Algorithm::Grid, m.grid_per_box * n + m.grid_per_candidate * grid_candidates),
        (
            Algorithm::BoxIntersect,
            m.bi_per_box_log[usize::from(D >= 3)] * n * n.max(2.0).log2().powi(D as i32 - 1).max(1.0),
        ),
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
