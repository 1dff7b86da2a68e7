//! Property-based differential tests: every algorithm, in every variant,
//! against brute force, on random sets built to contain the hard cases
//! (touching boxes, zero-size boxes, duplicates, wild magnitudes).

mod common;

use broadphase::Aabb;
use common::{check_bipartite, check_complete};
use proptest::prelude::*;

/// A coordinate pair `(min, max)` from one of several regimes.
fn interval() -> impl Strategy<Value = (f64, f64)> {
    prop_oneof![
        // Small integers: exact touches, points, duplicates.
        (0i32..12, 0i32..4).prop_map(|(a, w)| (a as f64, (a + w) as f64)),
        // Halves and quarters: touching with fractions.
        (-20i32..20, 0i32..6).prop_map(|(a, w)| (a as f64 / 4.0, (a + w) as f64 / 4.0)),
        // Generic floats.
        (-50.0..50.0f64, 0.0..10.0f64).prop_map(|(a, w)| (a, a + w)),
        // Heavy tail: a few very long intervals.
        (-50.0..50.0f64, 0.0..1.0f64).prop_map(|(a, u)| (a, a + 1e-3 / (1.0 - u).max(1e-9))),
        // Wild magnitudes and signed zeros, subnormals, one-ulp gaps.
        prop::sample::select(common::WILD.to_vec()),
    ]
}

fn aabb<const D: usize>() -> impl Strategy<Value = Aabb<f64, D>> {
    prop::array::uniform::<_, D>(interval())
        .prop_map(|iv| Aabb::new(core::array::from_fn(|k| iv[k].0), core::array::from_fn(|k| iv[k].1)).unwrap())
}

/// Sets that mix the regimes, sometimes with copies of earlier boxes.
fn set<const D: usize>(max: usize) -> impl Strategy<Value = Vec<Aabb<f64, D>>> {
    (prop::collection::vec(aabb::<D>(), 0..max), prop::collection::vec(any::<prop::sample::Index>(), 0..8)).prop_map(
        |(mut v, dups)| {
            if !v.is_empty() {
                for d in dups {
                    let b = v[d.index(v.len())];
                    v.push(b);
                }
            }
            v
        },
    )
}

fn to_f32<const D: usize>(v: &[Aabb<f64, D>]) -> Vec<Aabb<f32, D>> {
    broadphase_scenes::to_f32(&v.iter().map(clamp_f32).collect::<Vec<_>>())
}

/// Clamps to the f32 range (so the conversion stays finite).
fn clamp_f32<const D: usize>(b: &Aabb<f64, D>) -> Aabb<f64, D> {
    let m = f32::MAX as f64;
    Aabb::new(b.min().map(|v| v.clamp(-m, m)), b.max().map(|v| v.clamp(-m, m))).unwrap()
}

/// 192 cases per property unless `PROPTEST_CASES` asks for more (long runs).
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(192)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn complete_1d(v in set::<1>(120)) {
        check_complete(&v, "1d f64");
    }

    #[test]
    fn complete_2d(v in set::<2>(160)) {
        check_complete(&v, "2d f64");
        check_complete(&to_f32(&v), "2d f32");
    }

    #[test]
    fn complete_3d(v in set::<3>(160)) {
        check_complete(&v, "3d f64");
        check_complete(&to_f32(&v), "3d f32");
    }

    #[test]
    fn bipartite_2d(a in set::<2>(80), b in set::<2>(80)) {
        check_bipartite(&a, &b, "2d f64");
        check_bipartite(&to_f32(&a), &to_f32(&b), "2d f32");
    }

    #[test]
    fn bipartite_3d(a in set::<3>(80), b in set::<3>(80)) {
        check_bipartite(&a, &b, "3d f64");
        check_bipartite(&to_f32(&a), &to_f32(&b), "3d f32");
    }

    #[test]
    fn bipartite_1d(a in set::<1>(60), b in set::<1>(60)) {
        check_bipartite(&a, &b, "1d f64");
    }
}

/// A large set (enough boxes, both sets together, for the grid's
/// bipartite search by rows) in one regime: lattice corners with touching
/// and zero-size boxes, quarters, or generic floats, at a density of a few
/// partners per box; sometimes with copies of earlier boxes and one long
/// box (which sends the grid to its global build).
fn large_set<const D: usize>() -> impl Strategy<Value = Vec<Aabb<f64, D>>> {
    (0usize..3, 1000usize..1600, any::<u64>(), any::<bool>()).prop_map(|(regime, n, seed, long)| {
        let mut r = seed | 1;
        let mut next = move || {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            (r >> 11) as f64 / (1u64 << 53) as f64
        };
        let side = (n as f64 * 2.0).powf(1.0 / D as f64);
        let mut v: Vec<Aabb<f64, D>> = (0..n)
            .map(|_| {
                let iv: [(f64, f64); D] = core::array::from_fn(|_| match regime {
                    0 => {
                        let a = (next() * side).floor();
                        (a, a + (next() * 3.0).floor())
                    }
                    1 => {
                        let a = (next() * side * 4.0).floor() / 4.0;
                        (a, a + (next() * 6.0).floor() / 4.0)
                    }
                    _ => {
                        let a = next() * side - side / 2.0;
                        (a, a + next() * 2.0)
                    }
                });
                Aabb::new(iv.map(|x| x.0), iv.map(|x| x.1)).unwrap()
            })
            .collect();
        for k in 0..(n / 50) {
            let b = v[(k * 37) % n];
            v.push(b);
        }
        if long {
            v.push(Aabb::new([-side; D], [side * 2.0; D]).unwrap());
        }
        v
    })
}

proptest! {
    // Fewer cases: each checks every variant on about 2500 boxes.
    #![proptest_config(ProptestConfig { cases: (cases() / 12).max(8), ..ProptestConfig::default() })]

    #[test]
    fn bipartite_large_3d(a in large_set::<3>(), b in large_set::<3>()) {
        check_bipartite(&a, &b, "large 3d f64");
        check_bipartite(&to_f32(&a), &to_f32(&b), "large 3d f32");
    }

    #[test]
    fn bipartite_large_2d(a in large_set::<2>(), b in large_set::<2>()) {
        check_bipartite(&a, &b, "large 2d f64");
        check_bipartite(&to_f32(&a), &to_f32(&b), "large 2d f32");
    }
}

/// Every input of the one-shot fuzz target's corpus (`fuzz/corpus`, kept
/// to a set cover of its coverage edges), checked as the target checks it: every
/// variant, complete and bipartite, against brute force.
#[test]
fn fuzz_corpus_replays() {
    for input in common::fuzz_corpus("oneshot_pairs") {
        common::check_fuzz_input(&input);
    }
}
