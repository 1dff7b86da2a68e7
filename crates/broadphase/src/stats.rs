//! Cheap statistics of a box set, from a deterministic sample, used to pick
//! the sweep axis, the grid's cell size and the algorithm of `Auto`.

use crate::{Aabb, Scalar};

/// Sample size: large enough that a per-axis overlap fraction of 1e-3 is
/// seen, small enough to cost a few microseconds.
pub(crate) const SAMPLE: usize = 512;
/// The smallest sample of a set of boxes (see [`sample_size`]).
const SAMPLE_MIN: usize = 64;

/// How many of `n` boxes to sample, at most `cap`: an eighth of them, at
/// least [`SAMPLE_MIN`] (all of them when fewer).
///
/// PERF: the profile sorts its sample's bounds and extents (nine sorts in
/// 3D) and the grid's candidate count tests its sample's pairs, which at a
/// full sample cost more than the search of a few hundred boxes. Best of
/// 20 000 runs (uniform 3D, `f64`, the AVX2 machine): the grid at 1e3
/// boxes 0.086 -> 0.056 ms, sort-and-sweep 0.087 -> 0.080 ms, `Auto` at
/// 200, 500 and 1e3 boxes 0.046, 0.074 and 0.116 ms -> 0.018, 0.035 and
/// 0.062 ms (with the cost model fitted again, `auto.rs`, which now picks
/// the grid there). With the model unchanged, `Auto`'s choice was the same
/// with an eighth (at least 128) as with the full sample on every shared
/// scene from 200 to 4000 boxes, 2D and 3D, `f32` and `f64`; a floor of 64
/// changed it only at 200 boxes, on two scenes, between algorithms within
/// 10% of each other there. From 4096 boxes on the sample is the full one.
pub(crate) fn sample_size(n: usize, cap: usize) -> usize {
    cap.min((n / 8).max(SAMPLE_MIN))
}

/// Up to `m` indices of `0..n`, deterministic and spread without period:
/// the golden-ratio sequence `frac((k + 1/2)·φ)·n`. (A fixed stride would
/// alias with inputs that repeat with a period, such as generators that
/// cycle through families of boxes.) All of `0..n` when `m >= n`.
pub(crate) fn sample_indices(n: usize, m: usize) -> impl Iterator<Item = usize> {
    const PHI: f64 = 0.618_033_988_749_894_9;
    let all = m >= n;
    let count = if all { n } else { m };
    // `x - trunc(x)` by a conversion: `fract` is a library call on x86-64
    // without SSE4.1 (the default target); `x` is positive and below 2^53.
    let frac = |x: f64| x - (x as u64) as f64;
    (0..count).map(move |k| if all { k } else { (frac((k as f64 + 0.5) * PHI) * n as f64) as usize })
}

/// Statistics of a sample of the boxes.
#[derive(Clone, Debug)]
pub(crate) struct Profile<const D: usize> {
    /// Number of boxes (both sets for a bipartite search).
    pub n: usize,
    /// Fraction of sampled pairs whose intervals overlap, per axis: the
    /// expected share of all pairs a single-axis sweep on that axis tests.
    /// (For a bipartite search: pairs with one box from each set.)
    pub overlap: [f64; D],
    /// Sorted sampled extents per axis.
    pub extents: [Vec<f64>; D],
    /// Smallest sampled `min` per axis.
    pub lo: [f64; D],
    /// Largest sampled `max` per axis.
    pub hi: [f64; D],
}

impl<const D: usize> Profile<D> {
    pub fn new<S: Scalar>(boxes: &[Aabb<S, D>]) -> Self {
        let m = sample_size(boxes.len(), SAMPLE);
        let sample: Vec<&Aabb<S, D>> = sample_indices(boxes.len(), m).map(|i| &boxes[i]).collect();
        let overlap = core::array::from_fn(|axis| overlap_fraction(&sample, &sample, axis, true));
        Self::with(boxes.len(), &sample, overlap)
    }

    /// The profile of a bipartite search between `a` and `b`.
    pub fn bipartite<S: Scalar>(a: &[Aabb<S, D>], b: &[Aabb<S, D>]) -> Self {
        let sa: Vec<&Aabb<S, D>> = sample_indices(a.len(), sample_size(a.len(), SAMPLE / 2)).map(|i| &a[i]).collect();
        let sb: Vec<&Aabb<S, D>> = sample_indices(b.len(), sample_size(b.len(), SAMPLE / 2)).map(|i| &b[i]).collect();
        let overlap = core::array::from_fn(|axis| overlap_fraction(&sa, &sb, axis, false));
        let both: Vec<&Aabb<S, D>> = sa.iter().chain(&sb).copied().collect();
        Self::with(a.len() + b.len(), &both, overlap)
    }

    fn with<S: Scalar>(n: usize, sample: &[&Aabb<S, D>], overlap: [f64; D]) -> Self {
        let extents = core::array::from_fn(|axis| {
            // Extents are at least +0.0 and not NaN (a box's max minus its
            // min: +0.0 when equal, +∞ at worst): their bits order as they
            // do, and integers sort faster than a float comparison.
            let mut e: Vec<u64> = sample.iter().map(|b| b.extent(axis).to_bits()).collect();
            e.sort_unstable();
            e.into_iter().map(f64::from_bits).collect()
        });
        let lo =
            core::array::from_fn(|axis| sample.iter().map(|b| b.min()[axis].to_f64()).fold(f64::INFINITY, f64::min));
        let hi = core::array::from_fn(|axis| {
            sample.iter().map(|b| b.max()[axis].to_f64()).fold(f64::NEG_INFINITY, f64::max)
        });
        Self { n, overlap, extents, lo, hi }
    }

    /// The axis on which the fewest sampled pairs overlap: the sweep axis that
    /// tests the fewest candidates. (For boxes of similar size this is the
    /// axis with the largest spread of centres.) Ties go to the lower axis.
    pub fn sweep_axis(&self) -> usize {
        fewest_overlaps(&self.overlap)
    }

    /// The sampled extent at quantile `q` on `axis`.
    pub fn extent_quantile(&self, axis: usize, q: f64) -> f64 {
        let e = &self.extents[axis];
        if e.is_empty() {
            return 0.0;
        }
        let k = ((e.len() - 1) as f64 * q).round() as usize;
        e[k.min(e.len() - 1)]
    }
}

/// The sweep axis of a complete search of `boxes` ([`Profile::sweep_axis`])
/// from a smaller sample, without the rest of the profile: for a sweep that
/// needs nothing else (at 1e4 boxes the full profile was 6% of a
/// sort-and-sweep).
pub(crate) fn sweep_axis<S: Scalar, const D: usize>(boxes: &[Aabb<S, D>]) -> usize {
    const AXIS_SAMPLE: usize = SAMPLE / 2;
    let m = sample_size(boxes.len(), AXIS_SAMPLE);
    let sample: Vec<&Aabb<S, D>> = sample_indices(boxes.len(), m).map(|i| &boxes[i]).collect();
    fewest_overlaps(&core::array::from_fn::<f64, D, _>(|axis| overlap_fraction(&sample, &sample, axis, true)))
}

/// The axis with the smallest overlap fraction; ties go to the lower axis.
fn fewest_overlaps<const D: usize>(overlap: &[f64; D]) -> usize {
    (1..D).fold(0, |best, axis| if overlap[axis] < overlap[best] { axis } else { best })
}

/// Fraction of the pairs `(x, y)`, `x` from `xs`, `y` from `ys` (distinct
/// pairs of one list when `same`), whose intervals on `axis` overlap.
fn overlap_fraction<S: Scalar, const D: usize>(xs: &[&Aabb<S, D>], ys: &[&Aabb<S, D>], axis: usize, same: bool) -> f64 {
    let pairs = if same { (xs.len() * xs.len().saturating_sub(1) / 2) as f64 } else { (xs.len() * ys.len()) as f64 };
    if pairs == 0.0 {
        return 0.0;
    }
    // PERF: the bounds as integers of the same order (`-0.0` taken as
    // `0.0`, which it equals), sorted as integers, and the disjoint pairs
    // counted by one merge of the sorted ends with the sorted starts,
    // instead of a float comparison sort and a binary search per box (at a
    // sample of 512, 40 µs of `Auto`'s 110 µs).
    let key = |v: S| if v == S::ZERO { S::ZERO.ordered() } else { v.ordered() };
    let sorted = |v: &[&Aabb<S, D>], end: bool| {
        let mut k: Vec<i64> = v.iter().map(|b| key(if end { b.max()[axis] } else { b.min()[axis] })).collect();
        k.sort_unstable();
        k
    };
    // Pairs `(x, y)` with `x.hi < y.lo`: disjoint with x below y.
    let below = |his: &[i64], los: &[i64]| -> usize {
        let mut j = 0;
        his.iter()
            .map(|&hi| {
                while j < los.len() && los[j] <= hi {
                    j += 1;
                }
                los.len() - j
            })
            .sum()
    };
    // A disjoint pair has exactly one member below the other.
    let disjoint = if same {
        below(&sorted(xs, true), &sorted(xs, false))
    } else {
        below(&sorted(xs, true), &sorted(ys, false)) + below(&sorted(ys, true), &sorted(xs, false))
    };
    (pairs - disjoint as f64).max(0.0) / pairs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_does_not_alias_with_a_period() {
        // Indices sampled from 300 000 items must hit all residues mod 3
        // (a stride of 1875 would hit only one).
        let mut seen = [0usize; 3];
        for i in sample_indices(300_000, 160) {
            assert!(i < 300_000);
            seen[i % 3] += 1;
        }
        assert!(seen.iter().all(|&c| c > 30), "{seen:?}");
        assert_eq!(sample_indices(5, 160).collect::<Vec<_>>(), vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn sample_size_is_an_eighth_within_bounds() {
        assert_eq!(sample_size(10, SAMPLE), 64); // more than the set: all of it is taken
        assert_eq!(sample_size(1000, SAMPLE), 125);
        assert_eq!(sample_size(4095, SAMPLE), 511);
        assert_eq!(sample_size(4096, SAMPLE), SAMPLE);
        assert_eq!(sample_size(1_000_000, SAMPLE / 2), SAMPLE / 2);
        assert_eq!(sample_indices(10, sample_size(10, SAMPLE)).count(), 10);
    }

    #[test]
    fn picks_the_spread_axis() {
        // Long thin boxes spread along y: all overlap on x, few on y.
        let boxes: Vec<Aabb<f64, 2>> =
            (0..1000).map(|i| Aabb::new([0.0, i as f64 * 2.0], [10.0, i as f64 * 2.0 + 1.0]).unwrap()).collect();
        let p = Profile::new(&boxes);
        assert_eq!(p.sweep_axis(), 1);
        assert!(p.overlap[0] > 0.99);
        assert!(p.overlap[1] < 0.01);
        assert_eq!(p.extent_quantile(0, 0.5), 10.0);
    }

    /// The merge of sorted bounds counts what a test of every pair counts:
    /// touching intervals overlap, `-0.0` meets `0.0`, points count.
    #[test]
    fn overlap_fraction_counts_every_pair() {
        let mut seed = crate::Lcg::new(5);
        let mut next = |m: u64| seed.below(m);
        let v: [f64; 7] = [-2.0, -1.0, -0.0, 0.0, 0.5, 1.0, 2.0];
        let boxes: Vec<Aabb<f64, 1>> = (0..400)
            .map(|_| {
                let (x, y) = (v[next(7) as usize], v[next(7) as usize]);
                Aabb::new([x.min(y)], [x.max(y)]).unwrap()
            })
            .collect();
        let refs: Vec<&Aabb<f64, 1>> = boxes.iter().collect();
        let meets = |x: &Aabb<f64, 1>, y: &Aabb<f64, 1>| x.min()[0] <= y.max()[0] && y.min()[0] <= x.max()[0];
        let (a, b) = refs.split_at(150);
        let mut same = 0;
        for i in 0..a.len() {
            same += a[i + 1..].iter().filter(|y| meets(a[i], y)).count();
        }
        let cross: usize = a.iter().map(|x| b.iter().filter(|y| meets(x, y)).count()).sum();
        let pairs = (a.len() * (a.len() - 1) / 2) as f64;
        assert_eq!(overlap_fraction(a, a, 0, true), same as f64 / pairs);
        assert_eq!(overlap_fraction(a, b, 0, false), cross as f64 / (a.len() * b.len()) as f64);
    }

    #[test]
    fn bipartite_overlap() {
        let a: Vec<Aabb<f64, 1>> = (0..10).map(|i| Aabb::new([i as f64], [i as f64 + 0.5]).unwrap()).collect();
        let b = [Aabb::<f64, 1>::new([0.0], [4.0]).unwrap()];
        let p = Profile::bipartite(&a, &b);
        assert_eq!(p.overlap[0], 0.5);
        assert_eq!((p.lo[0], p.hi[0]), (0.0, 9.5));
    }

    #[test]
    fn tiny_sets() {
        let one = [Aabb::<f32, 3>::point([1.0, 2.0, 3.0]).unwrap()];
        let p = Profile::new(&one);
        assert_eq!(p.overlap, [0.0; 3]);
        let p = Profile::<3>::new::<f32>(&[]);
        assert_eq!(p.extent_quantile(1, 0.9), 0.0);
    }
}
