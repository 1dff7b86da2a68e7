//! One-shot pair finding: every overlapping pair of a box set (complete) or
//! between two sets (bipartite), by any of the algorithms, behind one entry
//! point.

use core::fmt;
use core::str::FromStr;

use crate::error::{FindError, ParseAlgorithmError};
use crate::stats::{self, Profile};
use crate::{auto, box_intersect, brute_force, grid, sap, tree, Aabb, CrossPair, Pair, Scalar, Workspace};

/// The most boxes one search takes (both sets together for a bipartite
/// search): pairs name boxes by `u32` index.
pub const MAX_BOXES: usize = u32::MAX as usize;

/// A pair-finding algorithm. All report exactly the same pairs; they differ
/// in speed, and in which inputs they are fast on. See each module's notes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// Picks one of the others from cheap statistics of the input; first
    /// merges identical boxes when many are copies of each other (one of
    /// each searched, the pairs expanded), and splits long boxes lying along
    /// different axes into classes searched apart.
    #[default]
    Auto,
    /// Tests every pair: the reference, and the fastest for a few dozen boxes.
    BruteForce,
    /// Radix sort on one axis, then a sweep testing the other axes.
    SortAndSweep,
    /// Uniform grid over the cross axes, each cell sorted and swept.
    Grid,
    /// Bounding volume hierarchy (binned SAH), simultaneous descent.
    Bvh,
    /// Streamed segment trees (Zomorodian–Edelsbrunner), O(n log^d n + k).
    BoxIntersect,
}

impl Algorithm {
    /// Every algorithm, `Auto` first.
    pub const ALL: [Algorithm; 6] = [
        Algorithm::Auto,
        Algorithm::BruteForce,
        Algorithm::SortAndSweep,
        Algorithm::Grid,
        Algorithm::Bvh,
        Algorithm::BoxIntersect,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Auto => "auto",
            Algorithm::BruteForce => "brute",
            Algorithm::SortAndSweep => "sort-and-sweep",
            Algorithm::Grid => "grid",
            Algorithm::Bvh => "bvh",
            Algorithm::BoxIntersect => "box-intersect",
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Algorithm {
    type Err = ParseAlgorithmError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Algorithm::ALL.into_iter().find(|a| a.name() == s).ok_or_else(|| ParseAlgorithmError {
            name: s.to_string(),
            expected: "auto, brute, sort-and-sweep, grid, bvh, box-intersect",
        })
    }
}

/// How many complete searches a [`Plan`] serves before it is made again.
const PLAN_USES: u32 = 8;

/// `Auto`'s choice (whether to split by shape, the algorithm, the profile it
/// was chosen by) kept across the complete searches of a set that changes a
/// little from one to the next: a run of frames of a persistent broad phase
/// in which most proxies moved. It is made again every [`PLAN_USES`]
/// searches, and when the number of boxes changed by more than an eighth
/// since; the engine drops it when the run ends. The choice decides how fast
/// a search runs, never what it finds (every algorithm finds every pair,
/// whatever the cells or the sweep axis).
///
/// PERF: the statistics cost 43 µs a search (a sample of 512 boxes), a
/// quarter of a frame where all of 1e3 proxies moved. `broadphase bench
/// --workload frames --motion 100%,rain --n 1e3,1e4`, three runs alternated
/// with the build before: 1e3 0.25-0.27 -> 0.16-0.19 ms a frame (hash grid
/// and dynamic tree, both motions), 1e4 1.71-1.78 -> 1.60-1.65 ms.
#[derive(Default)]
pub(crate) struct Plan<const D: usize> {
    made: Option<Made<D>>,
}

struct Made<const D: usize> {
    /// Identical boxes merged (see `dedup`), each search by `Auto` afresh.
    dedup: bool,
    split: bool,
    algorithm: Algorithm,
    profile: Option<Profile<D>>,
    n: usize,
    uses: u32,
}

impl<const D: usize> Plan<D> {
    /// Bytes held (the profile's sampled extents).
    pub(crate) fn memory(&self) -> usize {
        self.made
            .as_ref()
            .and_then(|m| m.profile.as_ref())
            .map_or(0, |p| p.extents.iter().map(|e| e.capacity() * 8).sum())
    }
}

/// What a search did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Report {
    /// The algorithm that ran (what `Auto` chose, or the one asked for;
    /// after a merge of identical boxes, the one that searched the merged
    /// set); `Auto` itself when it split the boxes by shape and searched each
    /// class of long boxes alone and against the others, each search with
    /// its own choice.
    pub algorithm: Algorithm,
    /// Pairs appended to the output.
    pub pairs: usize,
}

/// A configured pair search.
///
/// ```
/// use broadphase::{Aabb2, Algorithm, PairFinder};
/// let boxes = vec![
///     Aabb2::new([0.0, 0.0], [1.0, 1.0]).unwrap(),
///     Aabb2::new([1.0, 1.0], [2.0, 2.0]).unwrap(), // touches box 0 at a corner
///     Aabb2::new([5.0, 5.0], [6.0, 6.0]).unwrap(),
/// ];
/// let pairs = PairFinder::new(Algorithm::Grid).find(&boxes).unwrap();
/// assert_eq!(pairs.len(), 1);
/// assert_eq!((pairs[0].a(), pairs[0].b()), (0, 1));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct PairFinder {
    algorithm: Algorithm,
    parallel: bool,
    sweep_axis: Option<usize>,
    cell_size: Option<f64>,
    cutoff: Option<usize>,
}

impl Default for PairFinder {
    fn default() -> Self {
        Self::new(Algorithm::Auto)
    }
}

impl PairFinder {
    /// A single-threaded search with `algorithm` and its default settings.
    pub fn new(algorithm: Algorithm) -> Self {
        Self { algorithm, parallel: false, sweep_axis: None, cell_size: None, cutoff: None }
    }

    /// Runs the multi-threaded variants (rayon's global pool) where an
    /// algorithm has one: sort-and-sweep and the grid. The output is the same,
    /// in the same order. Without the `parallel` feature this is a no-op.
    pub fn parallel(mut self, on: bool) -> Self {
        self.parallel = on;
        self
    }

    /// Fixes the sweep axis of sort-and-sweep (default: picked from the data).
    /// Checked against the dimension when searching.
    pub fn sweep_axis(mut self, axis: usize) -> Self {
        self.sweep_axis = Some(axis);
        self
    }

    /// Fixes the grid's cell size on every cross axis (default: picked from
    /// the data). The grid may still coarsen it to bound the number of cells.
    pub fn cell_size(mut self, size: f64) -> Result<Self, FindError> {
        if !(size.is_finite() && size > 0.0) {
            return Err(FindError::InvalidParameter {
                name: "cell size",
                value: size,
                expected: "a finite number above 0",
            });
        }
        self.cell_size = Some(size);
        Ok(self)
    }

    /// Sets the segment-tree cutoff of box-intersect: calls with fewer boxes
    /// than this are scanned directly (default: from the data, about 27 over
    /// the fraction of pairs that overlap on the scan axis, within 32..4096).
    pub fn cutoff(mut self, cutoff: usize) -> Result<Self, FindError> {
        if cutoff < 2 {
            return Err(FindError::InvalidParameter { name: "cutoff", value: cutoff as f64, expected: "at least 2" });
        }
        self.cutoff = Some(cutoff);
        Ok(self)
    }

    /// The configured algorithm.
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// Every overlapping pair of `boxes`, as indices into it.
    pub fn find<S: Scalar, const D: usize>(&self, boxes: &[Aabb<S, D>]) -> Result<Vec<Pair>, FindError> {
        let mut out = Vec::new();
        self.find_into(boxes, &mut out)?;
        Ok(out)
    }

    /// Appends every overlapping pair of `boxes` to `out`. The order is a
    /// function of the input and the algorithm only (not of the thread
    /// count); sort the pairs for a canonical order. On error nothing is
    /// appended.
    pub fn find_into<S: Scalar, const D: usize>(
        &self,
        boxes: &[Aabb<S, D>],
        out: &mut Vec<Pair>,
    ) -> Result<Report, FindError> {
        self.find_with(&mut Workspace::new(), boxes, out)
    }

    /// [`PairFinder::find_into`] with reusable working memory: repeated
    /// searches through the same [`Workspace`] do not allocate once it has
    /// grown to their size.
    pub fn find_with<S: Scalar, const D: usize>(
        &self,
        ws: &mut Workspace<S>,
        boxes: &[Aabb<S, D>],
        out: &mut Vec<Pair>,
    ) -> Result<Report, FindError> {
        check_dim::<D>()?;
        check_len(boxes.len())?;
        self.checked_axis::<D>()?;
        let before = out.len();
        let algorithm = match self.algorithm {
            // Many identical boxes: one of each searched, the pairs expanded.
            Algorithm::Auto if crate::dedup::worth_it(boxes) => crate::dedup::complete(self, ws, boxes, out),
            Algorithm::Auto => self.complete_auto(ws, boxes, true, out),
            a => {
                self.complete_with(a, None, ws, boxes, out);
                a
            }
        };
        Ok(Report { algorithm, pairs: out.len() - before })
    }

    /// Whether the threaded variants run.
    pub(crate) fn is_parallel(&self) -> bool {
        self.parallel
    }

    /// A complete search by `algorithm` (not `Auto`), the configuration
    /// checked; `profile`, if `Auto` sampled the boxes already.
    fn complete_with<S: Scalar, const D: usize>(
        &self,
        algorithm: Algorithm,
        profile: Option<&Profile<D>>,
        ws: &mut Workspace<S>,
        boxes: &[Aabb<S, D>],
        out: &mut Vec<Pair>,
    ) {
        match algorithm {
            Algorithm::Auto => unreachable!("auto::choose returns a concrete algorithm"),
            Algorithm::BruteForce => brute_force::complete(boxes, out),
            Algorithm::SortAndSweep => {
                let axis = self
                    .sweep_axis
                    .unwrap_or_else(|| profile.map_or_else(|| stats::sweep_axis(boxes), |p| p.sweep_axis()));
                sap::oneshot::complete(boxes, axis, self.parallel, ws, out)
            }
            Algorithm::Grid => grid::oneshot::complete(boxes, self.cell_size, self.parallel, profile, ws, out),
            Algorithm::Bvh => tree::bvh::complete(boxes, out),
            Algorithm::BoxIntersect => box_intersect::complete(boxes, self.cutoff, profile, out),
        }
    }

    /// `Auto`'s complete search without the merging of identical boxes:
    /// split by shape when that pays and `may_split`, else one algorithm of
    /// its choice. Returns what ran (`Auto` for a split, as [`Report`]
    /// says).
    pub(crate) fn complete_auto<S: Scalar, const D: usize>(
        &self,
        ws: &mut Workspace<S>,
        boxes: &[Aabb<S, D>],
        may_split: bool,
        out: &mut Vec<Pair>,
    ) -> Algorithm {
        if may_split && crate::split::worth_it(boxes) {
            // Long boxes along different axes: searched class by class.
            crate::split::complete(self, ws, boxes, out);
            return Algorithm::Auto;
        }
        let (algorithm, profile) = auto::choose(boxes);
        self.complete_with(algorithm, profile.as_ref(), ws, boxes, out);
        algorithm
    }

    /// `Auto`'s bipartite search without the merging of identical boxes
    /// (see [`PairFinder::complete_auto`]).
    pub(crate) fn bipartite_auto<S: Scalar, const D: usize>(
        &self,
        ws: &mut Workspace<S>,
        a: &[Aabb<S, D>],
        b: &[Aabb<S, D>],
        may_split: bool,
        out: &mut Vec<CrossPair>,
    ) -> Algorithm {
        if may_split && crate::split::worth_it_sets(&[a, b]) {
            crate::split::bipartite(self, ws, a, b, out);
            return Algorithm::Auto;
        }
        let (algorithm, profile) = auto::choose_bipartite(a, b);
        self.bipartite_with(algorithm, profile.as_ref(), ws, a, b, out);
        algorithm
    }

    /// Every overlapping pair `(i, j)` of `a[i]` and `b[j]`.
    pub fn find_bipartite<S: Scalar, const D: usize>(
        &self,
        a: &[Aabb<S, D>],
        b: &[Aabb<S, D>],
    ) -> Result<Vec<CrossPair>, FindError> {
        let mut out = Vec::new();
        self.find_bipartite_into(a, b, &mut out)?;
        Ok(out)
    }

    /// Appends every overlapping pair between `a` and `b` to `out`; see
    /// [`PairFinder::find_into`] for the order.
    pub fn find_bipartite_into<S: Scalar, const D: usize>(
        &self,
        a: &[Aabb<S, D>],
        b: &[Aabb<S, D>],
        out: &mut Vec<CrossPair>,
    ) -> Result<Report, FindError> {
        self.find_bipartite_with(&mut Workspace::new(), a, b, out)
    }

    /// [`PairFinder::find_bipartite_into`] with reusable working memory.
    pub fn find_bipartite_with<S: Scalar, const D: usize>(
        &self,
        ws: &mut Workspace<S>,
        a: &[Aabb<S, D>],
        b: &[Aabb<S, D>],
        out: &mut Vec<CrossPair>,
    ) -> Result<Report, FindError> {
        check_dim::<D>()?;
        check_len(a.len().saturating_add(b.len()))?;
        self.checked_axis::<D>()?;
        let before = out.len();
        let merge = match self.algorithm {
            Algorithm::Auto => [crate::dedup::worth_it(a), crate::dedup::worth_it(b)],
            _ => [false; 2],
        };
        let algorithm = match self.algorithm {
            // Many identical boxes in a set: one of each searched, the
            // pairs expanded.
            Algorithm::Auto if merge != [false; 2] => crate::dedup::bipartite(self, ws, a, b, merge, out),
            Algorithm::Auto => self.bipartite_auto(ws, a, b, true, out),
            x => {
                self.bipartite_with(x, None, ws, a, b, out);
                x
            }
        };
        Ok(Report { algorithm, pairs: out.len() - before })
    }

    /// A bipartite search by `algorithm` (not `Auto`), the configuration
    /// checked; `profile`, if `Auto` sampled the boxes already.
    fn bipartite_with<S: Scalar, const D: usize>(
        &self,
        algorithm: Algorithm,
        profile: Option<&Profile<D>>,
        ws: &mut Workspace<S>,
        a: &[Aabb<S, D>],
        b: &[Aabb<S, D>],
        out: &mut Vec<CrossPair>,
    ) {
        match algorithm {
            Algorithm::Auto => unreachable!("auto::choose_bipartite returns a concrete algorithm"),
            Algorithm::BruteForce => brute_force::bipartite(a, b, out),
            Algorithm::SortAndSweep => {
                let axis = self.sweep_axis.unwrap_or_else(|| {
                    profile.map_or_else(|| Profile::bipartite(a, b).sweep_axis(), |p| p.sweep_axis())
                });
                sap::oneshot::bipartite(a, b, axis, self.parallel, ws, out)
            }
            Algorithm::Grid => grid::oneshot::bipartite(a, b, self.cell_size, self.parallel, profile, ws, out),
            Algorithm::Bvh => tree::bvh::bipartite(a, b, out),
            Algorithm::BoxIntersect => box_intersect::bipartite(a, b, self.cutoff, profile, out),
        }
    }

    /// [`PairFinder::find_with`] by `Auto`'s choice as `plan` keeps it (see
    /// [`Plan`]); the finder's other settings apply.
    pub(crate) fn find_planned<S: Scalar, const D: usize>(
        &self,
        plan: &mut Plan<D>,
        ws: &mut Workspace<S>,
        boxes: &[Aabb<S, D>],
        out: &mut Vec<Pair>,
    ) -> Result<Report, FindError> {
        debug_assert_eq!(self.algorithm, Algorithm::Auto);
        check_dim::<D>()?;
        check_len(boxes.len())?;
        self.checked_axis::<D>()?;
        let n = boxes.len();
        if plan.made.as_ref().is_none_or(|m| m.uses >= PLAN_USES || m.n.abs_diff(n) * 8 > m.n) {
            let dedup = crate::dedup::worth_it(boxes);
            let split = !dedup && crate::split::worth_it(boxes);
            let (algorithm, profile) = if split || dedup { (Algorithm::Auto, None) } else { auto::choose(boxes) };
            plan.made = Some(Made { dedup, split, algorithm, profile, n, uses: 0 });
        }
        let m = plan.made.as_mut().expect("made above");
        m.uses += 1;
        let before = out.len();
        let algorithm = if m.dedup {
            crate::dedup::complete(self, ws, boxes, out)
        } else if m.split {
            crate::split::complete(self, ws, boxes, out);
            Algorithm::Auto
        } else {
            self.complete_with(m.algorithm, m.profile.as_ref(), ws, boxes, out);
            m.algorithm
        };
        Ok(Report { algorithm, pairs: out.len() - before })
    }

    fn checked_axis<const D: usize>(&self) -> Result<Option<usize>, FindError> {
        match self.sweep_axis {
            Some(axis) if axis >= D => Err(FindError::AxisOutOfRange { axis, dim: D }),
            a => Ok(a),
        }
    }
}

fn check_dim<const D: usize>() -> Result<(), FindError> {
    if (1..=3).contains(&D) {
        Ok(())
    } else {
        Err(FindError::UnsupportedDimension { dim: D })
    }
}

fn check_len(len: usize) -> Result<(), FindError> {
    if len > MAX_BOXES {
        Err(FindError::TooManyBoxes { len, max: MAX_BOXES })
    } else {
        Ok(())
    }
}

/// Every overlapping pair of `boxes` by `algorithm`, single-threaded.
///
/// ```
/// use broadphase::{find_pairs, Aabb3, Algorithm};
/// let boxes: Vec<Aabb3> = (0..10)
///     .map(|i| Aabb3::new([i as f64, 0.0, 0.0], [i as f64 + 1.0, 1.0, 1.0]).unwrap())
///     .collect();
/// // Each unit cube touches the next one: 9 pairs.
/// assert_eq!(find_pairs(&boxes, Algorithm::Auto).unwrap().len(), 9);
/// ```
pub fn find_pairs<S: Scalar, const D: usize>(
    boxes: &[Aabb<S, D>],
    algorithm: Algorithm,
) -> Result<Vec<Pair>, FindError> {
    PairFinder::new(algorithm).find(boxes)
}

/// Every overlapping pair between `a` and `b` by `algorithm`, single-threaded.
pub fn find_bipartite_pairs<S: Scalar, const D: usize>(
    a: &[Aabb<S, D>],
    b: &[Aabb<S, D>],
    algorithm: Algorithm,
) -> Result<Vec<CrossPair>, FindError> {
    PairFinder::new(algorithm).find_bipartite(a, b)
}

#[cfg(all(test, feature = "parallel"))]
mod tests {
    use super::*;

    /// A few hundred boxes, some of them oversized for the grid (so that
    /// its sweep of oversized boxes runs too), as `S`.
    fn boxes<S: Scalar, const D: usize>(n: usize, seed: u64, to: impl Fn(f64) -> S) -> Vec<Aabb<S, D>> {
        let mut r = crate::Lcg::new(seed);
        let side = (n as f64 * 2.0).powf(1.0 / D as f64);
        (0..n)
            .map(|i| {
                let lo: [f64; D] = core::array::from_fn(|_| r.unit() * side);
                let w = if i % 97 == 5 { side / 2.0 } else { r.unit() * 2.0 };
                Aabb::new(lo.map(&to), core::array::from_fn(|k| to(lo[k] + w))).unwrap()
            })
            .collect()
    }

    /// The threaded sort-and-sweep and grid (the radix sort, the exact
    /// refinement, the grid's build, the columns' fill, the pieces' joins)
    /// give the single-threaded output, complete and bipartite. Natively
    /// these sets are too small for threads (the single-threaded path runs
    /// twice); under Miri the threaded paths start at a few hundred items
    /// (`par::threads_from`, `par::piece_count`), so this is Miri's check
    /// of their unsafe writes.
    #[test]
    fn small_sets_with_threads() {
        fn run<S: Scalar, const D: usize>(to: impl Fn(f64) -> S + Copy) {
            let a = boxes::<S, D>(400, 3, to);
            let b = boxes::<S, D>(300, 4, to);
            let sorted = |mut v: Vec<Pair>| {
                v.sort_unstable();
                v
            };
            let sorted_ab = |mut v: Vec<CrossPair>| {
                v.sort_unstable();
                v
            };
            let want = sorted(find_pairs(&a, Algorithm::BruteForce).unwrap());
            let want_ab = sorted_ab(find_bipartite_pairs(&a, &b, Algorithm::BruteForce).unwrap());
            assert!(want.len() > a.len() / 2 && !want_ab.is_empty());
            let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
            for alg in [Algorithm::SortAndSweep, Algorithm::Grid] {
                let one = PairFinder::new(alg).find(&a).unwrap();
                let one_ab = PairFinder::new(alg).find_bipartite(&a, &b).unwrap();
                let finder = PairFinder::new(alg).parallel(true);
                let (many, many_ab) =
                    pool.install(|| (finder.find(&a).unwrap(), finder.find_bipartite(&a, &b).unwrap()));
                assert_eq!(many, one, "{alg:?}");
                assert_eq!(many_ab, one_ab, "{alg:?}");
                assert_eq!(sorted(one), want, "{alg:?}");
                assert_eq!(sorted_ab(one_ab), want_ab, "{alg:?}");
            }
        }
        run::<f32, 3>(|x| x as f32);
        run::<f64, 2>(|x| x);
    }
}
