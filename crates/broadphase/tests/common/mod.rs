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

// ---------------------------------------------------------------------------
// The one-shot fuzz target's input (`fuzz/fuzz_targets/oneshot_pairs.rs`),
// here so that `tests/differential.rs` replays its corpus.

/// Intervals of wild magnitudes: signed zeros, subnormals, one-ulp gaps,
/// 1e300, `f64::MAX`, near 1e7 (the property-based tests' and the fuzzer's).
pub const WILD: [(f64, f64); 14] = [
    (-0.0, 0.0),
    (0.0, 5e-324),
    (-5e-324, -0.0),
    (1e-300, 2e-300),
    (-1e300, 1e300),
    (1e30, 1e30),
    (1e30, 1.0000000000000002e30),
    (-f64::MAX, -1e308),
    (1e308, f64::MAX),
    (1.0, 1.0),
    (1.0000000000000002, 2.0),
    (0.9999999999999999, 1.0),
    (1e7, 1e7 + 1.0),
    (1e7 + 1.0, 1e7 + 2.0),
];

/// An interval from three bytes; `narrow`: only the regimes that `f32`
/// holds exactly.
fn fuzz_interval(r: u8, x: u8, y: u8, narrow: bool) -> (f64, f64) {
    let (x, y) = (f64::from(x), f64::from(y));
    match r % if narrow { 3 } else { 5 } {
        0 => (x % 12.0, x % 12.0 + y % 4.0),
        1 => ((x % 40.0 - 20.0) / 4.0, (x % 40.0 - 20.0 + y % 6.0) / 4.0),
        2 => ((x - 128.0) / 2.56, (x - 128.0) / 2.56 + y / 25.6),
        3 => ((x - 128.0) / 2.56, (x - 128.0) / 2.56 + 1e-3 / (1.0 - y / 256.0).powi(3)),
        _ => WILD[x as usize % WILD.len()],
    }
}

fn fuzz_boxes<S: Scalar, const D: usize>(bytes: &[u8], narrow: bool) -> Vec<Aabb<S, D>> {
    bytes
        .chunks_exact(3 * D)
        .map(|c| {
            let iv: [(f64, f64); D] =
                core::array::from_fn(|k| fuzz_interval(c[3 * k], c[3 * k + 1], c[3 * k + 2], narrow));
            Aabb::new(iv.map(|v| S::from_f64(v.0)), iv.map(|v| S::from_f64(v.1))).expect("valid by construction")
        })
        .collect()
}

fn fuzz_check<S: Scalar, const D: usize>(split: u8, bytes: &[u8], narrow: bool) {
    let all = fuzz_boxes::<S, D>(bytes, narrow);
    check_complete(&all, "fuzz");
    let at = usize::from(split) % (all.len() + 1);
    check_bipartite(&all[..at], &all[at..], "fuzz");
}

/// Checks one fuzz input: the first byte picks the dimension (1 to 3) and
/// the scalar, the second where the set splits for the bipartite search;
/// then each interval is a regime byte and two value bytes: small integers
/// (touching boxes, points, duplicates), quarters, generic values, a heavy
/// tail, or one of [`WILD`].
pub fn check_fuzz_input(bytes: &[u8]) {
    let Some((&setting, rest)) = bytes.split_first() else { return };
    let Some((&split, rest)) = rest.split_first() else { return };
    match setting % 4 {
        0 => fuzz_check::<f64, 1>(split, rest, false),
        1 => fuzz_check::<f64, 2>(split, rest, false),
        2 => fuzz_check::<f64, 3>(split, rest, false),
        _ => fuzz_check::<f32, 3>(split, rest, true),
    }
}

/// The inputs of a fuzz target's corpus (`fuzz/corpus/TARGET`), in file
/// name order; at least 50 of them, or the test fails (a corpus lost from
/// the checkout must not pass unnoticed).
pub fn fuzz_corpus(target: &str) -> Vec<Vec<u8>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus").join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("the fuzzer's corpus at {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 50, "a corpus of {} inputs at {}", files.len(), dir.display());
    files.iter().map(|f| std::fs::read(f).unwrap()).collect()
}
