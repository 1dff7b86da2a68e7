//! Criterion benchmarks of the persistent broad phases per frame, each
//! contender's frames back to back (its data stays in the caches from one
//! frame to the next), beside parry3d's `Bvh` updated in place, on the
//! `frames` binary's scene: uniform unit cubes (`f32`, 3D, L³ = 8N/3), a
//! fixed share of them moving 0.05 per frame along its own direction.
//!
//! The `frames` binary times the contenders interleaved instead, each frame
//! after the others' (its caches cold), as in an engine that does other
//! work between updates; the two together bound what a caller sees.
//!
//! Each timed iteration is one frame: the ids of the moved boxes looked up
//! and their boxes set in one batch, then `update` (for parry3d: the leaves
//! updated, refit, all pairs). Stepping the scene is not timed. Criterion
//! reports the mean, so the frames where many moved boxes leave their fat
//! boxes at once count (`frames` reports medians beside means).
//!
//! `cargo bench -p broadphase-bench --bench frames -- 10%` runs a subset.

use std::time::{Duration, Instant};

use broadphase::persistent::{DynamicTree, HashGrid, IncrementalSap, MultiSap};
use broadphase::Aabb;
use broadphase_bench::{OurFrames, ParryFrames};
use broadphase_scenes::motion::{Motion, Mover};
use broadphase_scenes::{to_f32, Scene};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

const SIZES: [usize; 2] = [10_000, 100_000];
const MOTIONS: [(&str, f64); 3] = [("1%", 0.01), ("10%", 0.1), ("100%", 1.0)];
/// Frames run before any is timed (fat boxes settle), as in `frames`.
const WARM: usize = 40;

type World = Mover<f32, 3>;

fn world(n: usize, fraction: f64) -> World {
    Mover::new(to_f32(&Scene::Uniform.generate::<3>(n, 1)), Motion::Steady { fraction, speed: 0.05 }, 1)
}

/// One contender's frame, given the moves of the scene's step.
trait Frames {
    fn frame(&mut self, moves: &[(u32, Aabb<f32, 3>)]) -> usize;
}

impl Frames for OurFrames<f32, 3> {
    fn frame(&mut self, moves: &[(u32, Aabb<f32, 3>)]) -> usize {
        OurFrames::frame(self, moves)
    }
}

struct Parry {
    p: ParryFrames,
    out: Vec<(u32, u32)>,
}

impl Frames for Parry {
    fn frame(&mut self, moves: &[(u32, Aabb<f32, 3>)]) -> usize {
        self.p.frame(moves, &mut self.out)
    }
}

type Make = fn(&[Aabb<f32, 3>]) -> Box<dyn Frames>;

fn contenders() -> Vec<(&'static str, Make)> {
    vec![
        ("hash-grid", |b| Box::new(OurFrames::new(Box::new(HashGrid::<f32, 3>::default()), b))),
        ("dynamic-tree", |b| Box::new(OurFrames::new(Box::new(DynamicTree::<f32, 3>::default()), b))),
        ("multi-sap", |b| Box::new(OurFrames::new(Box::new(MultiSap::<f32, 3>::default()), b))),
        ("incremental-sap", |b| Box::new(OurFrames::new(Box::new(IncrementalSap::<f32, 3>::default()), b))),
        ("parry3d-bvh", |b| Box::new(Parry { p: ParryFrames::new(b), out: Vec::new() })),
        ("parry3d-bvh-optimized", |b| Box::new(Parry { p: ParryFrames::optimized(b), out: Vec::new() })),
    ]
}

fn frames(c: &mut Criterion) {
    for (label, fraction) in MOTIONS {
        let mut group = c.benchmark_group(format!("frames/{label}"));
        group.sample_size(20).warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(2));
        for n in SIZES {
            group.throughput(Throughput::Elements(n as u64));
            let mut pairs: Option<usize> = None;
            for (name, make) in contenders() {
                if name == "incremental-sap" && n > 10_000 && fraction > 0.01 {
                    // Left out, as in `frames`: every moved endpoint swaps
                    // past its neighbours on every axis, dense at 1e5.
                    continue;
                }
                // Each contender on its own copy of the scene, stepped alike.
                let mut w = world(n, fraction);
                let mut c = make(w.boxes());
                let mut moves = Vec::new();
                for _ in 0..WARM {
                    w.step(&mut moves);
                    c.frame(&moves);
                }
                // Every contender holds the same pairs after the warm-up (a
                // frame with no move reports them).
                let count = c.frame(&[]);
                assert!(pairs.is_none_or(|p| p == count), "{name}: {count} pairs, the others {pairs:?}");
                pairs = Some(count);
                group.bench_function(BenchmarkId::new(name, n), |b| {
                    b.iter_custom(|iters| {
                        let mut total = Duration::ZERO;
                        for _ in 0..iters {
                            w.step(&mut moves);
                            let t = Instant::now();
                            std::hint::black_box(c.frame(&moves));
                            total += t.elapsed();
                        }
                        total
                    })
                });
            }
        }
        group.finish();
    }
}

criterion_group!(benches, frames);
criterion_main!(benches);
