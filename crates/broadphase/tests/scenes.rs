//! Every algorithm against brute force on the shared adversarial scenes, in
//! 1D, 2D and 3D, f64 and f32, and on the same scenes moved to large,
//! huge and negative coordinates; plus large scenes where the threaded
//! variants must match the single-threaded ones exactly.

mod common;

use broadphase::{Aabb, Algorithm, PairFinder};
use broadphase_scenes::{textbook_sort_and_sweep, to_f32, Scene};
use common::{boxes, check_bipartite, check_complete, check_complete_against, map_coords};

fn each_scene<const D: usize>(n: usize) {
    for scene in Scene::ALL {
        let v = scene.generate::<D>(n, 11);
        let what = format!("{scene} n={n} {D}d");
        check_complete(&v, &format!("{what} f64"));
        check_complete(&to_f32(&v), &format!("{what} f32"));
        // Shifted near 1e7 (integer lattices stay exact), scaled to 1e30,
        // mirrored to negative coordinates: touching stays touching because
        // equal inputs map to equal outputs.
        check_complete(&map_coords(&v, |x| x + 1e7), &format!("{what} +1e7"));
        check_complete(&map_coords(&v, |x| x * 1e30), &format!("{what} *1e30"));
        check_complete(&map_coords(&v, |x| -x - 1e5), &format!("{what} mirrored"));
        check_complete(&map_coords(&v, |x| x * 1e-300), &format!("{what} *1e-300"));
    }
}

#[test]
fn scenes_3d() {
    for n in [0, 1, 2, 3, 40, 1500] {
        each_scene::<3>(n);
    }
}

#[test]
fn scenes_2d() {
    for n in [0, 1, 2, 3, 40, 1500] {
        each_scene::<2>(n);
    }
}

#[test]
fn scenes_1d() {
    for n in [0, 1, 5, 700] {
        each_scene::<1>(n);
    }
}

#[test]
fn scenes_bipartite() {
    for scene in Scene::ALL {
        let a = scene.generate::<3>(600, 1);
        let b = Scene::ALL[(scene as usize + 3) % Scene::ALL.len()].generate::<3>(500, 2);
        check_bipartite(&a, &b, &format!("{scene} 3d"));
        check_bipartite(&a, &a, &format!("{scene} with itself 3d"));
        check_bipartite(&a[..1], &b, &format!("{scene} single 3d"));
        check_bipartite(&a, &[], &format!("{scene} empty 3d"));
        let a = scene.generate::<2>(600, 3);
        let b = scene.generate::<2>(400, 4);
        check_bipartite(&a, &b, &format!("{scene} 2d"));
        check_bipartite(&to_f32(&a), &to_f32(&b), &format!("{scene} 2d f32"));
    }
}

#[test]
fn one_ulp_apart() {
    let one = 1.0f64;
    let up = one.next_up();
    let down = one.next_down();
    let v = boxes::<f64, 2>(&[
        ([0.0, 0.0], [1.0, 1.0]),
        ([up, 0.0], [2.0, 1.0]),      // one ulp right of box 0: apart
        ([1.0, 0.0], [2.0, 1.0]),     // touches box 0, overlaps box 1
        ([down, down], [down, down]), // a point one ulp inside box 0
        ([0.0, up], [1.0, 2.0]),      // one ulp above box 0: apart
        ([-0.0, -0.0], [-0.0, -0.0]), // the corner of box 0, as -0.0
    ]);
    let expect = common::reference(&v);
    assert!(expect.contains(&broadphase::Pair::new(0, 2).unwrap()));
    assert!(!expect.contains(&broadphase::Pair::new(0, 1).unwrap()));
    assert!(expect.contains(&broadphase::Pair::new(0, 5).unwrap()));
    check_complete(&v, "one ulp apart");
    let f = boxes::<f32, 3>(&[
        ([0.0; 3], [1.0; 3]),
        ([1f32.next_up(), 0.0, 0.0], [2.0, 1.0, 1.0]),
        ([1.0, 1.0, 1.0], [1.0, 1.0, 1.0]),
    ]);
    check_complete(&f, "one ulp apart f32");
}

#[test]
fn identical_and_nested() {
    let same = vec![Aabb::<f64, 3>::new([1.0; 3], [2.0; 3]).unwrap(); 300];
    check_complete(&same, "300 identical");
    let points = vec![Aabb::<f32, 2>::point([5.0, 5.0]).unwrap(); 200];
    check_complete(&points, "200 identical points");
    let nested: Vec<Aabb<f64, 3>> = (0..300)
        .map(|i| {
            let r = 1.0 + i as f64;
            Aabb::new([-r; 3], [r; 3]).unwrap()
        })
        .collect();
    check_complete(&nested, "300 nested");
    let span: Vec<Aabb<f64, 2>> =
        (0..200).map(|i| Aabb::new([-f64::MAX, i as f64], [f64::MAX, i as f64 + 0.5]).unwrap()).collect();
    check_complete(&span, "full-range boxes");
}

/// Large scenes, beyond brute force: the threaded variants cut the work into
/// many pieces here and must reproduce the single-threaded output exactly;
/// all algorithms must agree with the textbook sweep.
#[test]
fn large_scenes_threaded_match() {
    for (scene, n) in [
        (Scene::Uniform, 120_000),
        (Scene::HeavyTailed, 60_000),
        (Scene::Clustered, 60_000),
        (Scene::Guillotine, 40_000),
    ] {
        let v = scene.generate::<3>(n, 5);
        let mut expect = textbook_sort_and_sweep(&v);
        expect.sort_unstable();
        let only_fast: Vec<Algorithm> = Algorithm::ALL.into_iter().filter(|a| *a != Algorithm::BruteForce).collect();
        for a in only_fast {
            let seq = PairFinder::new(a).find(&v).unwrap();
            let par = PairFinder::new(a).parallel(true).find(&v).unwrap();
            assert!(seq == par, "{scene} {a}: threaded output differs");
            let mut s = seq;
            s.sort_unstable();
            assert!(s == expect, "{scene} {a}: {} pairs, textbook {}", s.len(), expect.len());
        }
        let half = v.len() / 2;
        let (a, b) = v.split_at(half);
        for alg in [Algorithm::SortAndSweep, Algorithm::Grid, Algorithm::BoxIntersect] {
            let seq = PairFinder::new(alg).find_bipartite(a, b).unwrap();
            let par = PairFinder::new(alg).parallel(true).find_bipartite(a, b).unwrap();
            assert!(seq == par, "{scene} bipartite {alg}: threaded output differs");
            let mut s: Vec<broadphase::Pair> =
                seq.iter().map(|p| broadphase::Pair::new(p.a, p.b + half as u32).unwrap()).collect();
            s.sort_unstable();
            let cross: Vec<broadphase::Pair> =
                expect.iter().copied().filter(|p| (p.a() as usize) < half && p.b() as usize >= half).collect();
            assert!(s == cross, "{scene} bipartite {alg}");
        }
    }
    // A grid finer than the boxes (each spans several cells): its threads
    // count their cells in a pass of their own (the per-piece counts taken
    // while placing would cost too much memory).
    let v = Scene::Uniform.generate::<3>(60_000, 6);
    let mut expect = textbook_sort_and_sweep(&v);
    expect.sort_unstable();
    let fine = PairFinder::new(Algorithm::Grid).cell_size(0.3).unwrap();
    let seq = fine.find(&v).unwrap();
    let par = fine.parallel(true).find(&v).unwrap();
    assert!(seq == par, "fine grid: threaded output differs");
    let mut s = seq;
    s.sort_unstable();
    assert!(s == expect, "fine grid: {} pairs, textbook {}", s.len(), expect.len());
    // 2D at a size where the grid's strips hold thousands of boxes.
    let v = Scene::Uniform.generate::<2>(100_000, 9);
    let mut expect = textbook_sort_and_sweep(&v);
    expect.sort_unstable();
    check_complete_against_fast(&v, &expect);
    // f32 boxes with runs long enough for sort-and-sweep's grid (whose
    // pairs are re-tested on the boxes, f32 as f64), with threads.
    let v = to_f32(&Scene::Uniform.generate::<3>(50_000, 7));
    let mut expect = textbook_sort_and_sweep(&v);
    expect.sort_unstable();
    check_complete_against_fast(&v, &expect);
}

/// The threaded variants on a pool of many threads, whatever this machine
/// has: the radix sort then counts each pass's digits in a pass of their
/// own, the grid places its boxes without cuts and counts its cells while
/// distributing, and the sweeps run in many pieces at once.
#[cfg(feature = "parallel")]
#[test]
fn many_threads_reproduce_one_thread() {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(24).build().unwrap();
    let v3 = Scene::Uniform.generate::<3>(150_000, 11);
    let v2 = Scene::Uniform.generate::<2>(150_000, 12);
    for a in [Algorithm::SortAndSweep, Algorithm::Grid, Algorithm::Auto] {
        let seq = PairFinder::new(a).find(&v3).unwrap();
        let par = pool.install(|| PairFinder::new(a).parallel(true).find(&v3).unwrap());
        assert!(seq == par, "3D {a}: 24 threads differ from one");
        let seq = PairFinder::new(a).find(&v2).unwrap();
        let par = pool.install(|| PairFinder::new(a).parallel(true).find(&v2).unwrap());
        assert!(seq == par, "2D {a}: 24 threads differ from one");
    }
    // Copies merged by `Auto` (their grouping sorts on threads too).
    let dup = Scene::Duplicates.generate::<3>(100_000, 13);
    let seq = PairFinder::new(Algorithm::Auto).find(&dup).unwrap();
    let par = pool.install(|| PairFinder::new(Algorithm::Auto).parallel(true).find(&dup).unwrap());
    assert!(seq == par, "duplicates: 24 threads differ from one");
    let mut expect = textbook_sort_and_sweep(&dup);
    expect.sort_unstable();
    let mut got = seq;
    got.sort_unstable();
    assert!(got == expect, "duplicates: {} pairs, textbook {}", got.len(), expect.len());
    let mut expect = textbook_sort_and_sweep(&v3);
    expect.sort_unstable();
    let mut got = pool.install(|| PairFinder::new(Algorithm::Grid).parallel(true).find(&v3).unwrap());
    got.sort_unstable();
    assert!(got == expect, "3D grid on 24 threads: {} pairs, textbook {}", got.len(), expect.len());
}

fn check_complete_against_fast<S: broadphase::Scalar, const D: usize>(v: &[Aabb<S, D>], expect: &[broadphase::Pair]) {
    for a in [Algorithm::SortAndSweep, Algorithm::Grid, Algorithm::Bvh, Algorithm::BoxIntersect] {
        let seq = PairFinder::new(a).find(v).unwrap();
        let par = PairFinder::new(a).parallel(true).find(v).unwrap();
        assert!(seq == par, "{a}: threaded output differs");
        let mut s = seq;
        s.sort_unstable();
        assert!(s == expect, "{a}");
    }
}

#[test]
fn lattice_pair_count_is_known() {
    // Seed 001's 10×10×10 cube of touching unit cubes: 3·900 face pairs,
    // 6·810 edge pairs, 4·729 corner pairs.
    let v = Scene::Lattice.generate::<3>(1000, 0);
    let expect = common::reference(&v);
    assert_eq!(expect.len(), 2700 + 4860 + 2916);
    check_complete_against(&v, &expect, "10x10x10 lattice");
}

/// Long boxes along different axes (sticks, and sticks mixed with cubes):
/// `Auto` splits them by shape and searches each class alone and against
/// the others; the pairs are brute force's, threaded or not, at large,
/// huge and negative coordinates too.
#[test]
fn auto_splits_long_boxes_by_shape() {
    fn check<const D: usize>(v: &[Aabb<f64, D>], what: &str) {
        let report = PairFinder::new(Algorithm::Auto).find_into(v, &mut Vec::new()).unwrap();
        assert_eq!(report.algorithm, Algorithm::Auto, "{what}: Auto split the boxes by shape");
        check_complete(v, &format!("{what} f64"));
        check_complete(&to_f32(v), &format!("{what} f32"));
        check_complete(&map_coords(v, |x| x * 1e30), &format!("{what} *1e30"));
        check_complete(&map_coords(v, |x| -x - 1e5), &format!("{what} mirrored"));
    }
    let sticks = Scene::Sticks.generate::<3>(4000, 3);
    check(&sticks, "sticks 3d");
    // The 2D scene's sticks are a few percent of the world long: a grid
    // cuts them, so they are not split; stretched to a quarter of it, they
    // are.
    let short = Scene::Sticks.generate::<2>(4000, 4);
    let report = PairFinder::new(Algorithm::Auto).find_into(&short, &mut Vec::new()).unwrap();
    assert_ne!(report.algorithm, Algorithm::Auto, "short 2D sticks are not split");
    let world = short.iter().map(|b| b.max()[0].max(b.max()[1])).fold(0.0, f64::max);
    let long: Vec<Aabb<f64, 2>> = short
        .iter()
        .map(|b| {
            let k = usize::from(b.extent(1) > b.extent(0));
            let mut hi = *b.max();
            hi[k] = b.min()[k] + world / 4.0;
            Aabb::new(*b.min(), hi).unwrap()
        })
        .collect();
    check(&long, "sticks 2d");
    // A quarter of the sticks replaced by cubes of the sticks' thickness,
    // some touching them exactly (the class of other boxes meets the long
    // ones), and a few exact duplicates across the classes' boundary.
    let mut mixed = sticks.clone();
    for i in (0..mixed.len()).step_by(4) {
        let m = *sticks[i + 1].min();
        mixed[i] = Aabb::new(m.map(|x| x - 1.0), m).unwrap();
    }
    mixed[2] = mixed[1];
    check(&mixed, "sticks and cubes 3d");
    // Bipartite: sticks against sticks, and sticks against cubes (one side
    // all in the class of other boxes).
    let (a, b) = mixed.split_at(1700);
    let cubes = Scene::Uniform.generate::<3>(4000, 5);
    for (a, b, what) in [(a, b, "sticks|sticks"), (&sticks[..2500], &cubes[..1500], "sticks|cubes")] {
        let report = PairFinder::new(Algorithm::Auto).find_bipartite_into(a, b, &mut Vec::new()).unwrap();
        assert_eq!(report.algorithm, Algorithm::Auto, "{what}: Auto split the boxes by shape");
        check_bipartite(a, b, what);
        check_bipartite(&to_f32(a), &to_f32(b), &format!("{what} f32"));
        check_bipartite(&map_coords(a, |x| -x - 1e5), &map_coords(b, |x| -x - 1e5), &format!("{what} mirrored"));
    }
    // Uniform cubes are not split.
    let report = PairFinder::new(Algorithm::Auto).find_into(&cubes, &mut Vec::new()).unwrap();
    assert_ne!(report.algorithm, Algorithm::Auto);
}
