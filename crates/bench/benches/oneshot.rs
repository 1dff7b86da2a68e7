//! Criterion benchmarks of one-shot pair finding: every algorithm on the
//! shared scenes at 1e3 .. 1e6 boxes (3D, f64), single-threaded, bipartite
//! searches on the reference scene, and the peers on it. Combinations that
//! take seconds per run (an algorithm on the scene that defeats it, see
//! [`too_slow`]) are left out, so that `cargo bench` finishes in reasonable
//! time.
//!
//! `cargo bench -p broadphase-bench --bench oneshot -- uniform` runs a subset.

use std::time::Duration;

use broadphase::{Aabb, Algorithm, Pair, PairFinder, Workspace};
use broadphase_scenes::{to_f32, Scene};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

const SIZES: [usize; 4] = [1_000, 10_000, 100_000, 1_000_000];
const SCENES: [Scene; 6] =
    [Scene::Uniform, Scene::Clustered, Scene::HeavyTailed, Scene::SharedX, Scene::Sticks, Scene::Guillotine];

/// Combinations measured (with the `targets` binary) to take over a second
/// per run: a sweep where every axis projection is dense, a tree over long
/// overlapping boxes, and the million-box runs of the O(n log^2 n) and tree
/// algorithms.
fn too_slow(scene: Scene, alg: Algorithm, n: usize) -> bool {
    use Algorithm::*;
    match (scene, alg) {
        (_, BruteForce) => n > 10_000,
        (Scene::Sticks, SortAndSweep | Grid | Bvh) => n > 10_000,
        (Scene::SharedX, SortAndSweep) => n > 100_000,
        (_, SortAndSweep) => n > 100_000,
        (_, Bvh | BoxIntersect) => n > 100_000,
        _ => false,
    }
}

fn algorithms(c: &mut Criterion) {
    for scene in SCENES {
        let mut group = c.benchmark_group(format!("oneshot/{scene}"));
        group.sample_size(10).warm_up_time(Duration::from_millis(200)).measurement_time(Duration::from_secs(2));
        for n in SIZES {
            let boxes: Vec<Aabb<f64, 3>> = scene.generate::<3>(n, 1);
            group.throughput(Throughput::Elements(n as u64));
            for alg in Algorithm::ALL {
                if too_slow(scene, alg, n) {
                    continue;
                }
                let finder = PairFinder::new(alg);
                let mut ws = Workspace::new();
                let mut out: Vec<Pair> = Vec::new();
                group.bench_with_input(BenchmarkId::new(alg.name(), n), &boxes, |b, boxes| {
                    b.iter(|| {
                        out.clear();
                        finder.find_with(&mut ws, boxes, &mut out).unwrap();
                        out.len()
                    })
                });
            }
        }
        group.finish();
    }
}

fn peers(c: &mut Criterion) {
    let mut group = c.benchmark_group("peers/uniform");
    group.sample_size(10).warm_up_time(Duration::from_millis(200)).measurement_time(Duration::from_secs(2));
    for n in SIZES {
        let b3 = to_f32(&Scene::Uniform.generate::<3>(n, 1));
        let b2 = to_f32(&Scene::Uniform.generate::<2>(n, 1));
        let b3d = Scene::Uniform.generate::<3>(n, 1);
        group.throughput(Throughput::Elements(n as u64));
        let mut out = Vec::new();
        group.bench_with_input(BenchmarkId::new("parry3d-bvh", n), &b3, |b, boxes| {
            b.iter(|| {
                out.clear();
                broadphase_bench::parry3d_pairs(boxes, &mut out);
                out.len()
            })
        });
        group.bench_with_input(BenchmarkId::new("parry2d-bvh", n), &b2, |b, boxes| {
            b.iter(|| {
                out.clear();
                broadphase_bench::parry2d_pairs(boxes, &mut out);
                out.len()
            })
        });
        group.bench_with_input(BenchmarkId::new("broccoli-2d", n), &b2, |b, boxes| {
            b.iter(|| {
                out.clear();
                broadphase_bench::broccoli_pairs(boxes, &mut out);
                out.len()
            })
        });
        if n <= 100_000 {
            group.bench_with_input(BenchmarkId::new("rstar-3d", n), &b3d, |b, boxes| {
                b.iter(|| {
                    out.clear();
                    broadphase_bench::rstar_pairs(boxes, &mut out);
                    out.len()
                })
            });
        }
        let finder = PairFinder::new(Algorithm::Auto);
        let (mut ws2, mut ws3) = (Workspace::new(), Workspace::new());
        let mut pairs: Vec<Pair> = Vec::new();
        group.bench_with_input(BenchmarkId::new("broadphase-auto-3d-f32", n), &b3, |b, boxes| {
            b.iter(|| {
                pairs.clear();
                finder.find_with(&mut ws3, boxes, &mut pairs).unwrap();
                pairs.len()
            })
        });
        group.bench_with_input(BenchmarkId::new("broadphase-auto-2d-f32", n), &b2, |b, boxes| {
            b.iter(|| {
                pairs.clear();
                finder.find_with(&mut ws2, boxes, &mut pairs).unwrap();
                pairs.len()
            })
        });
    }
    group.finish();
}

/// Bipartite searches on the reference scene: a tenth of the boxes
/// against the rest (a batch of arrivals against a world), `f32`.
fn bipartite(c: &mut Criterion) {
    let mut group = c.benchmark_group("bipartite/uniform");
    group.sample_size(10).warm_up_time(Duration::from_millis(200)).measurement_time(Duration::from_secs(2));
    for n in SIZES {
        let all = to_f32(&Scene::Uniform.generate::<3>(n, 1));
        let (a, b) = all.split_at(n / 10);
        group.throughput(Throughput::Elements(n as u64));
        for alg in [Algorithm::Auto, Algorithm::Grid, Algorithm::SortAndSweep, Algorithm::BoxIntersect] {
            if too_slow(Scene::Uniform, alg, n) {
                continue;
            }
            let finder = PairFinder::new(alg);
            let mut ws = Workspace::new();
            let mut out = Vec::new();
            group.bench_function(BenchmarkId::new(alg.name(), n), |bench| {
                bench.iter(|| {
                    out.clear();
                    finder.find_bipartite_with(&mut ws, a, b, &mut out).unwrap();
                    out.len()
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, algorithms, bipartite, peers);
criterion_main!(benches);
