//! `Auto`'s split by shape, for sets of long thin boxes lying along
//! different axes (beams, pipes, "sticks").
//!
//! Such a set defeats any single layout: a sweep along one axis meets every
//! box long along it, and a grid over the other two axes files every box
//! long across it as oversized. Each family alone is easy, though: boxes
//! long along `x` are thin along `y` and `z`, and a box long along `x` and
//! one long along `y` are both thin along `z`. So the boxes are split into
//! classes by their long axis (and a class of the others), and every class
//! is searched alone and against every other class, each search with its
//! own choice of algorithm and axis. Classes are disjoint, so every pair is
//! found exactly once. A bipartite search splits both sets and searches
//! every class of one against every class of the other.
//!
//! Measured on the 3D sticks scene (f32, one thread; `broadphase bench`,
//! see the README): 1e4 boxes 5.7 ms -> 1.2 ms, 1e5 262 ms -> 6 ms, 1e6
//! 4.1 s -> 0.1 s. Long boxes that a grid cuts anyway (shorter than an
//! eighth of the span, as the 2D sticks scene's) are not split: see
//! [`LONG_SPAN`].

use crate::oneshot::PairFinder;
use crate::pair::{CrossPair, Pair};
use crate::workspace::Workspace;
use crate::{Aabb, Scalar};

/// Below this many boxes the split is not tried.
const SPLIT_MIN: usize = 2048;
/// A box is long along an axis when its extent there is more than this many
/// times its largest other extent.
const LONG_RATIO: f64 = 4.0;
/// Boxes sampled to decide.
const SAMPLE: usize = 1024;
/// The split pays when at least two long classes each hold this share of
/// the sample, and the long classes together at least [`LONG_SHARE`].
const CLASS_SHARE: f64 = 0.1;
const LONG_SHARE: f64 = 0.5;
/// ... and when the long boxes, on average, reach at least this share of
/// the sample's span along their long axis: shorter ones, however thin, a
/// grid cuts into cells of about their length (twice the 90th-percentile
/// extent) with few copies, and one search beats the classes' several.
/// 2D sticks of 2.5/sqrt(n) of the world (0.8% of it at 1e5) took the grid
/// 0.43, 3.5 and 36 ms at 1e4, 1e5 and 1e6 and the split 1.25, 12.4 and 151
/// ms; 3D sticks reach half the world, where the grid has one cell.
const LONG_SPAN: f64 = 0.125;

/// The class of a box: its long axis, or `D` for the others (cubes, flat
/// boxes, points).
#[inline]
fn class_of<S: Scalar, const D: usize>(b: &Aabb<S, D>) -> usize {
    let e: [f64; D] = core::array::from_fn(|k| b.max()[k].to_f64() - b.min()[k].to_f64());
    let long = (0..D).fold(0, |m, k| if e[k] > e[m] { k } else { m });
    let other = (0..D).filter(|&k| k != long).map(|k| e[k]).fold(0.0, f64::max);
    if e[long] > LONG_RATIO * other {
        long
    } else {
        D
    }
}

/// Whether `boxes` should be split by shape (decided on a sample).
pub(crate) fn worth_it<S: Scalar, const D: usize>(boxes: &[Aabb<S, D>]) -> bool {
    worth_it_sets(&[boxes])
}

/// Whether the union of `sets` should be split by shape, from a sample of
/// each set in proportion to its size.
pub(crate) fn worth_it_sets<S: Scalar, const D: usize>(sets: &[&[Aabb<S, D>]]) -> bool {
    let total: usize = sets.iter().map(|s| s.len()).sum();
    if D < 2 || total < SPLIT_MIN {
        return false;
    }
    // One count per long axis and one for the other boxes; the long boxes'
    // extents along their long axis, and the sample's bounds.
    let mut counts = vec![0usize; D + 1];
    let mut length = [0.0f64; D];
    let (mut lo, mut hi) = ([f64::INFINITY; D], [f64::NEG_INFINITY; D]);
    let mut m = 0;
    for set in sets {
        let take = (SAMPLE * set.len()).div_ceil(total);
        for i in crate::stats::sample_indices(set.len(), take) {
            let b = &set[i];
            let c = class_of(b);
            counts[c] += 1;
            if c < D {
                length[c] += b.extent(c);
            }
            for k in 0..D {
                lo[k] = lo[k].min(b.min()[k].to_f64());
                hi[k] = hi[k].max(b.max()[k].to_f64());
            }
            m += 1;
        }
    }
    let share = |c: usize| counts[c] as f64 / m as f64;
    let big = (0..D).filter(|&k| share(k) >= CLASS_SHARE).count();
    let long: usize = counts[..D].iter().sum();
    // Each long box's length over its axis's span, averaged (`/` first:
    // spans near `f64::MAX` overflow a product).
    let reach = (0..D).map(|k| length[k] / (hi[k] - lo[k])).filter(|r| r.is_finite()).sum::<f64>() / long.max(1) as f64;
    big >= 2 && (0..D).map(share).sum::<f64>() >= LONG_SHARE && reach >= LONG_SPAN
}

/// The boxes of each class (in input order) and their indices.
#[allow(clippy::type_complexity)]
fn classes<S: Scalar, const D: usize>(boxes: &[Aabb<S, D>]) -> (Vec<Vec<u32>>, Vec<Vec<Aabb<S, D>>>) {
    let mut ids: Vec<Vec<u32>> = vec![Vec::new(); D + 1];
    for (i, b) in boxes.iter().enumerate() {
        ids[class_of(b)].push(i as u32);
    }
    let sets = ids.iter().map(|class| class.iter().map(|&i| boxes[i as usize]).collect()).collect();
    (ids, sets)
}

/// Every overlapping pair of `boxes`, class by class and between classes,
/// each search run by `finder` with `Auto`'s choice; appended to `out`.
pub(crate) fn complete<S: Scalar, const D: usize>(
    finder: &PairFinder,
    ws: &mut Workspace<S>,
    boxes: &[Aabb<S, D>],
    out: &mut Vec<Pair>,
) {
    // Each class in input order, so that its local pairs map to ordered
    // global ones.
    let (ids, sets) = classes(boxes);
    let mut cross: Vec<CrossPair> = Vec::new();
    for c in 0..=D {
        let start = out.len();
        finder.complete_auto(ws, &sets[c], false, out);
        for p in &mut out[start..] {
            // Ascending ids keep `a < b`.
            *p = Pair::ordered(ids[c][p.a() as usize], ids[c][p.b() as usize]);
        }
        for d in c + 1..=D {
            cross.clear();
            finder.bipartite_auto(ws, &sets[c], &sets[d], false, &mut cross);
            out.extend(cross.iter().map(|p| Pair::ordered(ids[c][p.a as usize], ids[d][p.b as usize])));
        }
    }
}

/// Every overlapping pair between `a` and `b`, each class of `a` against
/// each class of `b`, each search run by `finder` with `Auto`'s choice;
/// appended to `out`.
pub(crate) fn bipartite<S: Scalar, const D: usize>(
    finder: &PairFinder,
    ws: &mut Workspace<S>,
    a: &[Aabb<S, D>],
    b: &[Aabb<S, D>],
    out: &mut Vec<CrossPair>,
) {
    let ((ids_a, sets_a), (ids_b, sets_b)) = (classes(a), classes(b));
    for c in 0..=D {
        for d in 0..=D {
            let start = out.len();
            finder.bipartite_auto(ws, &sets_a[c], &sets_b[d], false, out);
            for p in &mut out[start..] {
                *p = CrossPair { a: ids_a[c][p.a as usize], b: ids_b[d][p.b as usize] };
            }
        }
    }
}
