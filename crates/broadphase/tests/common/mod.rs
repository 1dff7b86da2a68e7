//! Helpers shared by the integration tests: the brute-force oracle and the
//! list of algorithm variants that must agree with it.

#![allow(dead_code)]

use broadphase::{Aabb, Algorithm, CrossPair, Pair, PairFinder, Scalar};

/// Every configuration that must report exactly brute force's pairs:
/// each algorithm, threaded or not, plus non-default settings that reach
/// other code paths (fixed sweep axes, extreme cell sizes and cutoffs).
pub fn variants<const D: usize>() -> Vec<(String, PairFinder)> {
    let mut v = Vec::new();
    for a in Algorithm::ALL {
        for parallel in [false, true] {
            v.push((format!("{a} parallel={parallel}"), PairFinder::new(a).parallel(parallel)));
        }
    }
    for axis in 0..D {
        v.push((format!("sort-and-sweep axis={axis}"), PairFinder::new(Algorithm::SortAndSweep).sweep_axis(axis)));
    }
    for size in [1e-3, 0.7, 3.0, 1e6] {
        v.push((format!("grid cell={size}"), PairFinder::new(Algorithm::Grid).cell_size(size).unwrap()));
    }
    for cutoff in [2, 3, 1000] {
        v.push((
            format!("box-intersect cutoff={cutoff}"),
            PairFinder::new(Algorithm::BoxIntersect).cutoff(cutoff).unwrap(),
        ));
    }
    v
}

/// Brute force's pairs, sorted.
pub fn reference<S: Scalar, const D: usize>(boxes: &[Aabb<S, D>]) -> Vec<Pair> {
    let mut p = Vec::new();
    for i in 0..boxes.len() {
        for j in i + 1..boxes.len() {
            if boxes[i].overlaps(&boxes[j]) {
                p.push(Pair::new(i as u32, j as u32).unwrap());
            }
        }
    }
    p
}

pub fn reference_bipartite<S: Scalar, const D: usize>(a: &[Aabb<S, D>], b: &[Aabb<S, D>]) -> Vec<CrossPair> {
    let mut p = Vec::new();
    for (i, x) in a.iter().enumerate() {
        for (j, y) in b.iter().enumerate() {
            if x.overlaps(y) {
                p.push(CrossPair { a: i as u32, b: j as u32 });
            }
        }
    }
    p
}

/// Checks every variant against `expect` (sorted), and that the threaded
/// variants return the same pairs in the same order as the single-threaded.
pub fn check_complete_against<S: Scalar, const D: usize>(boxes: &[Aabb<S, D>], expect: &[Pair], what: &str) {
    let mut sequential: Vec<(Algorithm, Vec<Pair>)> = Vec::new();
    for (name, finder) in variants::<D>() {
        let got = finder.find(boxes).unwrap();
        if name.ends_with("parallel=false") {
            sequential.push((finder.algorithm(), got.clone()));
        } else if name.ends_with("parallel=true") {
            let seq = &sequential.iter().find(|(a, _)| *a == finder.algorithm()).unwrap().1;
            assert!(seq == &got, "{what}: {name} differs from its single-threaded run (order included)");
        }
        let mut sorted = got;
        sorted.sort_unstable();
        if sorted != expect {
            let missing: Vec<_> = expect.iter().filter(|p| sorted.binary_search(p).is_err()).take(5).collect();
            let extra: Vec<_> = sorted.iter().filter(|p| expect.binary_search(p).is_err()).take(5).collect();
            let dup = sorted.windows(2).find(|w| w[0] == w[1]);
            panic!(
                "{what}: {name} found {} pairs, brute force {}; missing {missing:?}, extra {extra:?}, duplicate {dup:?}",
                sorted.len(),
                expect.len()
            );
        }
    }
}

pub fn check_complete<S: Scalar, const D: usize>(boxes: &[Aabb<S, D>], what: &str) {
    check_complete_against(boxes, &reference(boxes), what);
}

pub fn check_bipartite<S: Scalar, const D: usize>(a: &[Aabb<S, D>], b: &[Aabb<S, D>], what: &str) {
    let expect = reference_bipartite(a, b);
    let mut sequential: Vec<(Algorithm, Vec<CrossPair>)> = Vec::new();
    for (name, finder) in variants::<D>() {
        let got = finder.find_bipartite(a, b).unwrap();
        if name.ends_with("parallel=false") {
            sequential.push((finder.algorithm(), got.clone()));
        } else if name.ends_with("parallel=true") {
            let seq = &sequential.iter().find(|(x, _)| *x == finder.algorithm()).unwrap().1;
            assert!(seq == &got, "{what}: bipartite {name} differs from its single-threaded run");
        }
        let mut sorted = got;
        sorted.sort_unstable();
        assert!(
            sorted == expect,
            "{what}: bipartite {name} found {} pairs, brute force {}",
            sorted.len(),
            expect.len()
        );
    }
}

/// Boxes from `(min, max)` corners.
pub fn boxes<S: Scalar, const D: usize>(v: &[([S; D], [S; D])]) -> Vec<Aabb<S, D>> {
    broadphase::aabbs_from_bounds(v.iter().copied()).unwrap()
}

/// Applies `f` to every coordinate (which must be monotone non-decreasing so
/// boxes stay valid; a decreasing `f` is handled by swapping corners).
pub fn map_coords<const D: usize>(b: &[Aabb<f64, D>], f: impl Fn(f64) -> f64) -> Vec<Aabb<f64, D>> {
    b.iter()
        .map(|x| {
            let lo = x.min().map(&f);
            let hi = x.max().map(&f);
            let (lo, hi) = (core::array::from_fn(|k| lo[k].min(hi[k])), core::array::from_fn(|k| lo[k].max(hi[k])));
            Aabb::new(lo, hi).unwrap()
        })
        .collect()
}
