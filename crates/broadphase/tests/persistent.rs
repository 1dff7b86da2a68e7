//! Model-based tests of the persistent broad phases: random operation
//! sequences applied to each algorithm and to a plain model (see `model`),
//! seeded scenarios at sizes that reach the batch and one-shot paths, and
//! the fuzzer's corpus replayed.

mod common;
mod model;

use model::{decode, run, run_setting, Checker, Op, Pick, Spec};

use broadphase::persistent::{BruteForce, DynamicTree, GridIndex, HashGrid, IncrementalSap, MultiSap, TreeIndex};
use broadphase::{Aabb, BodyKind, BroadPhase, Filter, PairEvent, PairPolicy, Proxy, ProxyId, Ray};
use proptest::prelude::*;

fn fnv(h: &mut u64, x: u64) {
    for b in x.to_le_bytes() {
        *h = (*h ^ b as u64).wrapping_mul(0x100_0000_01b3);
    }
}

fn iv() -> impl Strategy<Value = (i32, i32)> {
    (-12i32..12, 0i32..5)
}

fn spec() -> impl Strategy<Value = Spec> {
    (prop::array::uniform3(iv()), 0u8..3, 0u8..3, 0u8..8, prop::bool::weighted(0.05))
        .prop_map(|(iv, kind, cat, mask, huge)| Spec { iv, kind, cat, mask, huge })
}

fn op() -> impl Strategy<Value = Op> {
    let idx = || any::<u32>().prop_map(Pick);
    prop_oneof![
        6 => spec().prop_map(Op::Insert),
        1 => prop::collection::vec(spec(), 0..12).prop_map(Op::InsertBatch),
        4 => (idx(), prop::array::uniform3(iv())).prop_map(|(i, v)| Op::Move(i, v)),
        6 => (idx(), prop::array::uniform3(-2i32..3)).prop_map(|(i, v)| Op::Nudge(i, v)),
        2 => prop::collection::vec((idx(), prop::array::uniform3(-2i32..3)), 0..10).prop_map(Op::MoveBatch),
        1 => (idx(), -3i32..3).prop_map(|(i, f)| Op::Teleport(i, f)),
        3 => (idx(), prop::array::uniform3(-2i32..3), prop::array::uniform3(any::<i8>()), prop::bool::weighted(0.1))
            .prop_map(|(i, d, v, bad)| Op::Glide(i, d, v, bad)),
        3 => idx().prop_map(Op::Remove),
        1 => prop::collection::vec(idx(), 0..5).prop_map(Op::RemoveBatch),
        2 => (idx(), 0u8..3, 0u8..8).prop_map(|(i, c, m)| Op::SetFilter(i, c, m)),
        1 => any::<usize>().prop_map(Op::Stale),
        4 => (prop::array::uniform3(iv()), any::<u8>()).prop_map(|(v, f)| Op::Update(v, f)),
    ]
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(96)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn model_3d_f64(ops in prop::collection::vec(op(), 0..120)) {
        run_setting(0, &ops);
    }

    #[test]
    fn model_2d_f32(ops in prop::collection::vec(op(), 0..120)) {
        run_setting(1, &ops);
    }

    #[test]
    fn model_3d_f32_far_from_origin(ops in prop::collection::vec(op(), 0..80)) {
        // Near 1e7 an f32 step is 1, so boxes collapse and touch constantly.
        run_setting(2, &ops);
    }

    #[test]
    fn model_1d_and_2d_huge_coordinates(ops in prop::collection::vec(op(), 0..80)) {
        run_setting(3, &ops);
        run_setting(4, &ops);
    }

    #[test]
    fn model_3d_beyond_the_f32_range(ops in prop::collection::vec(op(), 0..60)) {
        // Coordinates no f32 holds: boxes of 1e300 and unit boxes at -1e39
        // (an index that rounded its boxes to f32 would have to clamp them).
        run_setting(5, &ops);
        run::<f64, 2>(&ops, 1.0, -1e39, PairPolicy::default());
    }
}

// ---------------------------------------------------------------------------
// The fuzzer's inputs, replayed.

/// Every input of the coverage-guided fuzzer's corpus (`fuzz/corpus`, kept
/// to a set cover of its coverage edges), run as the fuzz target runs it (first
/// byte: the setting; the rest: the operations), then a few hundred random
/// byte strings: a short run of the fuzzer's decoding on the stable
/// toolchain. See the README's Development section for the long runs.
#[test]
fn fuzz_corpus_replays() {
    for bytes in common::fuzz_corpus("persistent_ops") {
        if let Some((&which, ops)) = bytes.split_first() {
            run_setting(which, &decode(ops));
        }
    }
    let mut state = 0x5eed_u64;
    // Lengths 0 to 764 bytes, cycling (a long run, `PROPTEST_CASES`, takes
    // more strings, not longer ones).
    for len in 0..(cases() as usize * 2) {
        let bytes: Vec<u8> = (0..len % 192 * 4)
            .map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (state >> 56) as u8
            })
            .collect();
        if let Some((&which, ops)) = bytes.split_first() {
            run_setting(which, &decode(ops));
        }
    }
}

// ---------------------------------------------------------------------------
// Seeded scenarios at sizes that reach the batch and one-shot paths, and the
// seeds' hard cases.

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn cube<const D: usize>(c: [f64; D], half: f64) -> Aabb<f64, D> {
    Aabb::new(c.map(|v| v - half), c.map(|v| v + half)).unwrap()
}

fn shifted<const D: usize>(b: &Aabb<f64, D>, d: [f64; D]) -> Aabb<f64, D> {
    Aabb::new(core::array::from_fn(|k| b.min()[k] + d[k]), core::array::from_fn(|k| b.max()[k] + d[k])).unwrap()
}

/// `count` random picks among the live `ids` (repeats allowed), each
/// shifted by up to `step / 2` along every axis.
fn random_moves<const D: usize>(
    c: &Checker<f64, D>,
    rng: &mut Rng,
    ids: &[ProxyId],
    count: usize,
    step: f64,
) -> Vec<(ProxyId, Aabb<f64, D>)> {
    (0..count)
        .map(|_| {
            let id = ids[rng.below(ids.len())];
            let b = c.model.live[&id].aabb;
            (id, shifted(&b, core::array::from_fn(|_| (rng.unit() - 0.5) * step)))
        })
        .collect()
}

/// `n` unit cubes placed uniformly in a cube of side `side`.
fn unit_cubes(rng: &mut Rng, n: usize, side: f64) -> Vec<Proxy<f64, 3>> {
    (0..n).map(|_| Proxy::new(cube([rng.unit() * side, rng.unit() * side, rng.unit() * side], 0.5))).collect()
}

/// Every broad phase (the four indexes, the brute force, and the grid and
/// tree with staggered reaches) through the same seeded script of frames.
fn scenario<const D: usize>(seed: u64, script: impl Fn(&mut Checker<f64, D>, &mut Rng)) {
    let mut all = engines::<D>();
    all.push(Box::new(BruteForce::<f64, D>::default()));
    all.push(Box::new(HashGrid::<f64, D>::with_index(PairPolicy::default(), GridIndex::default().staggered(true))));
    all.push(Box::new(DynamicTree::<f64, D>::with_index(PairPolicy::default(), TreeIndex::default().staggered(true))));
    for bp in all {
        let mut c = Checker::new(bp, PairPolicy::default());
        script(&mut c, &mut Rng(seed));
    }
}

/// The four indexes, with their default settings.
fn engines<const D: usize>() -> Vec<Box<dyn BroadPhase<f64, D>>> {
    vec![
        Box::new(IncrementalSap::<f64, D>::default()),
        Box::new(HashGrid::<f64, D>::default()),
        Box::new(DynamicTree::<f64, D>::default()),
        Box::new(MultiSap::<f64, D>::default()),
    ]
}

/// Bursts (a third of the proxies moving, with arrivals) at random between
/// runs of calm frames of random length (a few moving, a few arriving and
/// leaving, filters changing): one-shot frames, rebuilds, bounces and the
/// one-shot frames they rent in turn, every frame checked.
#[test]
fn random_bursts_between_calm_frames() {
    scenario::<3>(17, |c, rng| {
        let side = 12.0;
        c.insert_batch(&unit_cubes(rng, 1200, side));
        c.update();
        let mut calm_left = 0;
        for frame in 0..48 {
            let ids = c.ids();
            let busy = calm_left == 0;
            calm_left = if busy { 1 + rng.below(9) } else { calm_left - 1 };
            let moving = if busy { ids.len() / 3 } else { 1 + rng.below(20) };
            let moves = random_moves(c, rng, &ids, moving, 0.4);
            c.set_aabb_batch(&moves);
            match rng.below(4) {
                0 => {
                    let n = if busy { 100 } else { 1 + rng.below(8) };
                    let ps: Vec<_> = (0..n).map(|_| Proxy::new(cube([rng.unit() * side; 3], 0.5))).collect();
                    c.insert_batch(&ps);
                }
                1 => {
                    let gone: Vec<_> = ids.iter().skip(frame).step_by(97).copied().collect();
                    c.remove_batch(&gone);
                }
                2 => {
                    let id = ids[rng.below(ids.len())];
                    c.set_filter(id, Filter::new(1 << rng.below(3), !(1 << rng.below(3))));
                }
                _ => {}
            }
            c.update();
        }
    });
}

/// Queries after one-shot frames (a scan of the boxes, then the index: the
/// first two queries of a frame, then the rest, in the tests' builds), on
/// starts an `f32` holds and starts it does not, near 0 and 1e7, boxes far
/// out at ±1e30 and ±1e300, and regions whose faces are the boxes' faces
/// or end where a box starts.
#[test]
fn queries_after_one_shot_frames_are_exact() {
    scenario::<3>(23, |c, rng| {
        let mut ps = Vec::new();
        for i in 0..600 {
            let base = match i % 6 {
                // Starts an f32 holds exactly, and starts it does not.
                0 => 1e7 + (i % 97) as f64,
                1 => (i % 89) as f64 * 0.5,
                2 => 1e7 + (i % 97) as f64 * 1e-6,
                3 => -1e7 - (i % 89) as f64 * 1e-7,
                4 => 1e30 * if i % 12 == 4 { 1.0 } else { -1.0 },
                _ => 1e300 * if i % 12 == 5 { 1.0 } else { -1.0 },
            };
            let lo = [base, rng.unit() * 8.0, rng.unit() * 8.0];
            let size = if i % 6 >= 4 { base.abs() * 1e-3 } else { 0.5 };
            ps.push(Proxy::new(Aabb::new(lo, [lo[0] + size, lo[1] + 1.0, lo[2] + 1.0]).unwrap()));
        }
        c.insert_batch(&ps);
        c.update();
        for frame in 0..6 {
            let ids = c.ids();
            // Every proxy nudged along y: every frame one-shot.
            let moves: Vec<_> = ids
                .iter()
                .map(|&id| {
                    let b = c.model.live[&id].aabb;
                    (id, shifted(&b, [0.0, (rng.unit() - 0.5) * 0.1, 0.0]))
                })
                .collect();
            c.set_aabb_batch(&moves);
            c.update();
            for q in 0..4 {
                // A region whose x faces are a box's x faces, or that ends
                // where one starts.
                let b = c.model.live[&ids[rng.below(ids.len())]].aabb;
                let (x0, x1) = if q % 2 == 0 { (b.min()[0], b.max()[0]) } else { (b.min()[0] - 1.0, b.min()[0]) };
                let region = Aabb::new([x0, 0.0, 0.0], [x1, 9.0, 9.0]).unwrap();
                let ray = Ray::new([x0, 4.0, 4.0], [1.0, 0.0, 0.0], f64::INFINITY).ok();
                c.queries(region, Filter::ALL, if frame % 2 == 0 { ray } else { None });
            }
        }
    });
}

/// Frames where every proxy moves, one after the other, reuse `Auto`'s
/// choice for a few frames: the scene is made over between them (squashed
/// into a slab, blown up a million times, turned into sticks along three
/// axes, a few proxies arriving and leaving) so that the choice kept is
/// wrong for it, and every frame is still exact.
#[test]
fn consecutive_bulk_frames_stay_exact_when_the_scene_changes() {
    scenario::<3>(9, |c, rng| {
        let side = 14.0;
        c.insert_batch(&unit_cubes(rng, 1500, side));
        c.update();
        for frame in 0..26 {
            let ids = c.ids();
            let mut moves = Vec::new();
            for (i, &id) in ids.iter().enumerate() {
                let b = c.model.live[&id].aabb;
                let m = match frame {
                    // Squashed into a slab thin along x: every box meets
                    // every other on x.
                    6 => Aabb::new([0.0, b.min()[1], b.min()[2]], [0.5, b.max()[1], b.max()[2]]).unwrap(),
                    // Blown up: coordinates and sizes a million times larger.
                    12 => Aabb::new(b.min().map(|v| v * 1e6), b.max().map(|v| v * 1e6)).unwrap(),
                    // Sticks: each box long along one of the axes.
                    18 => {
                        let k = i % 3;
                        let lo = b.min().map(|v| v / 1e6);
                        Aabb::new(lo, core::array::from_fn(|j| lo[j] + if j == k { side } else { 0.5 })).unwrap()
                    }
                    _ => {
                        let step = (b.max()[0] - b.min()[0]).max(1.0) * 0.05;
                        shifted(&b, core::array::from_fn(|_| (rng.unit() - 0.5) * step))
                    }
                };
                moves.push((id, m));
            }
            c.set_aabb_batch(&moves);
            if frame % 5 == 2 {
                // A few arrivals and departures: fewer than an eighth.
                let ps: Vec<_> = (0..60).map(|_| Proxy::new(cube([rng.unit() * side; 3], 0.5))).collect();
                c.insert_batch(&ps);
                let gone: Vec<_> = ids.iter().skip(frame).step_by(40).copied().collect();
                c.remove_batch(&gone);
            }
            c.update();
        }
    });
}

#[test]
fn bulk_frames_reach_every_path() {
    scenario::<3>(1, |c, rng| {
        let side = 16.0;
        let spawn = |rng: &mut Rng| {
            let b = cube([rng.unit() * side, rng.unit() * side, rng.unit() * side], 0.5);
            let kind = if rng.below(4) == 0 { BodyKind::Static } else { BodyKind::Dynamic };
            Proxy::new(b).kind(kind)
        };
        // One batch of 2000: the one-shot path.
        let ps: Vec<_> = (0..2000).map(|_| spawn(rng)).collect();
        c.insert_batch(&ps);
        c.update();
        assert!(c.prev.len() > 1000, "a dense start: {} pairs", c.prev.len());
        // Busy frames (all moving, or a large batch) seven incremental
        // frames apart: each goes back to the incremental path at the next
        // frame (no bounce, see `calm_frames_after_a_bounce_...`).
        for frame in 0..24 {
            let ids = c.ids();
            // Few moving: the incremental path. All moving: one-shot again.
            let moving = if frame % 16 == 7 { ids.len() } else { ids.len() / 10 };
            let moves = random_moves(c, rng, &ids, moving, 0.3);
            c.set_aabb_batch(&moves);
            if frame == 4 {
                c.bp.release_scratch();
                c.validate("release_scratch");
            }
            if frame == 15 {
                // A batch of 600 into 2000 (with the moves, a one-shot
                // frame).
                let ps: Vec<_> = (0..600).map(|_| spawn(rng)).collect();
                c.insert_batch(&ps);
            }
            if frame == 7 {
                let gone: Vec<_> = ids.iter().step_by(3).copied().collect();
                c.remove_batch(&gone);
            }
            if frame == 9 {
                for &id in ids.iter().step_by(7) {
                    if c.model.live.contains_key(&id) {
                        c.set_filter(id, Filter::new(2, !2));
                    }
                }
            }
            c.update();
            // Queries after every kind of frame (incremental, bulk insert,
            // one-shot with its lazily built index).
            let q = rng.unit() * side;
            let region = Aabb::new([q, q, q], [q + 2.0, q + 3.0, q + 1.0]).unwrap();
            let ray = Ray::new([0.0, q, q], [1.0, 0.25, 0.5], f64::INFINITY).ok();
            c.queries(region, Filter::ALL, ray);
            c.queries(region, Filter::new(2, !0), None);
        }
    });
}

/// Every path of the engines in a few frames, at a size Miri runs through
/// (it lowers the one-shot and bulk thresholds to 16, as it lowers the
/// threaded paths' bounds; natively the sizes are sixteen times larger,
/// past the native thresholds of 256, and the staggered indexes and the
/// brute force run too): a bulk load, small frames whose movers leave
/// their fat boxes, a frame where everything moves, a batch of arrivals
/// into a settled world (near and far), a batch of departures, filter
/// changes, `release_scratch`, and queries after each, in 3D and 2D. Under
/// Miri each engine's progress goes to stderr (`--nocapture` shows it).
#[test]
fn every_path_at_a_size_miri_runs() {
    fn run<const D: usize>(seed: u64) {
        let n = if cfg!(miri) { 100 } else { 1600 };
        let side = (n as f64 * 8.0 / 3.0).powf(1.0 / D as f64);
        let spawn = |rng: &mut Rng, at: f64| {
            let b = cube(core::array::from_fn(|_| at + rng.unit() * side), 0.5);
            let kind = if rng.below(5) == 0 { BodyKind::Static } else { BodyKind::Dynamic };
            Proxy::new(b).kind(kind)
        };
        let script = |c: &mut Checker<f64, D>, rng: &mut Rng| {
            let load: Vec<_> = (0..n).map(|_| spawn(rng, 0.0)).collect();
            c.insert_batch(&load);
            c.update();
            assert!(c.prev.len() > n / 2, "a start with pairs: {}", c.prev.len());
            // Calm frames: the first goes back to the incremental path, and
            // six of them make frame 1's burst no bounce (see
            // `calm_frames_after_a_bounce_...`): frames 3 and 4, after the
            // bursts of 1 and 2, are incremental too.
            for _ in 0..6 {
                c.insert(spawn(rng, 0.0));
                c.update();
            }
            for frame in 0..7 {
                if cfg!(miri) {
                    eprintln!("{}D {}: frame {frame}", D, c.bp.name());
                }
                let ids = c.ids();
                let moving = if frame == 2 { ids.len() } else { ids.len() / 10 };
                let moves = random_moves(c, rng, &ids, moving, 0.8);
                c.set_aabb_batch(&moves);
                match frame {
                    1 => c.insert_batch(&(0..n / 5).map(|_| spawn(rng, 0.0)).collect::<Vec<_>>()),
                    3 => c.remove_batch(&ids.iter().step_by(3).copied().collect::<Vec<_>>()),
                    4 => {
                        for &id in ids.iter().skip(1).step_by(7) {
                            c.set_filter(id, Filter::new(2, !2));
                        }
                        c.bp.release_scratch();
                        c.validate("release_scratch");
                    }
                    5 => c.insert_batch(&(0..n / 5).map(|_| spawn(rng, 10.0 * side)).collect::<Vec<_>>()),
                    _ => {}
                }
                c.update();
                let q = rng.unit() * side;
                let region = Aabb::new([q; D], core::array::from_fn(|k| q + 1.0 + k as f64)).unwrap();
                let mut dir = [0.5; D];
                dir[0] = 1.0;
                let ray = Ray::new([0.0; D], dir, f64::INFINITY).ok();
                c.queries(region, Filter::ALL, ray);
                c.queries(region, Filter::new(2, !0), None);
            }
        };
        if cfg!(miri) {
            for bp in engines::<D>() {
                script(&mut Checker::new(bp, PairPolicy::default()), &mut Rng(seed));
            }
        } else {
            scenario::<D>(seed, script);
        }
    }
    run::<3>(21);
    run::<2>(22);
}

#[test]
fn streamed_batches_into_a_settled_world() {
    // Batches of arrivals large enough for the bipartite one-shot path (the
    // hash grid's cells answer instead) but too small for a one-shot frame:
    // one overlapping the field, one far away (the others outside its
    // bounds are skipped), one straddling.
    scenario::<3>(5, |c, rng| {
        let field: Vec<_> = (0..3000)
            .map(|_| {
                // Few dynamic: the first batches outnumber the moving tree
                // (rebuilt in bulk), the last does not (inserted one by one).
                let k = if rng.below(10) == 0 { BodyKind::Dynamic } else { BodyKind::Static };
                Proxy::new(cube([rng.unit() * 20.0, rng.unit() * 20.0, rng.unit() * 20.0], 0.6)).kind(k)
            })
            .collect();
        c.insert_batch(&field);
        c.update();
        c.insert(Proxy::new(cube([1.0, 1.0, 1.0], 0.5)));
        // The incremental path from here on.
        c.update();
        // Departures leave freed nodes in the trees, which the world's
        // stream past the arrivals must skip.
        let gone: Vec<_> = c.ids().into_iter().step_by(5).collect();
        c.remove_batch(&gone);
        c.update();
        for (cx, spread) in [(10.0, 20.0), (500.0, 10.0), (18.0, 30.0)] {
            let batch: Vec<_> = (0..400)
                .map(|_| Proxy::new(cube([cx + rng.unit() * spread, rng.unit() * 20.0, rng.unit() * 20.0], 0.7)))
                .collect();
            c.insert_batch(&batch);
            c.update();
            assert!(!c.events.is_empty() || cx > 100.0, "arrivals at {cx} met the field");
            c.validate("streamed batch");
        }
    });
}

#[test]
fn streamed_batches_with_big_arrivals_and_a_ground_box() {
    // The arrivals' grid (the world streams through it): a ground box under
    // the field and a trigger volume over it (a query over more cells than
    // there are arrivals), batches
    // with a few arrivals much larger than the rest (tested against every
    // query box), with more of those than the grid takes (the bipartite
    // search instead), with points and with duplicates, in 2D and 3D.
    fn run<const D: usize>(seed: u64) {
        scenario::<D>(seed, |c, rng| {
            let mut field: Vec<_> = (0..2500)
                .map(|_| Proxy::new(cube(core::array::from_fn(|_| rng.unit() * 25.0), 0.5)).kind(BodyKind::Static))
                .collect();
            let mut lo = [-10.0; D];
            lo[D - 1] = -1.0;
            let mut hi = [40.0; D];
            hi[D - 1] = 0.2;
            field.push(Proxy::new(Aabb::new(lo, hi).unwrap()).kind(BodyKind::Static));
            // A trigger volume over the whole field: over every cell.
            field.push(Proxy::new(Aabb::new([-30.0; D], [60.0; D]).unwrap()).kind(BodyKind::Static));
            c.insert_batch(&field);
            c.update();
            c.insert(Proxy::new(cube([1.0; D], 0.5)));
            c.update(); // the incremental path from here on
            for (big, size) in [(20, 9.0), (80, 9.0), (0, 0.0), (3, 30.0)] {
                let batch: Vec<_> = (0..400)
                    .map(|i| {
                        let half = if i < big {
                            size
                        } else if size == 0.0 {
                            0.0
                        } else {
                            0.35
                        };
                        let at: [f64; D] = if size == 0.0 && i % 2 == 0 {
                            [7.0; D] // duplicates
                        } else {
                            core::array::from_fn(|_| rng.unit() * 25.0)
                        };
                        Proxy::new(cube(at, half))
                    })
                    .collect();
                c.insert_batch(&batch);
                c.update();
                assert!(!c.events.is_empty(), "arrivals met the field");
            }
        });
    }
    run::<3>(21);
    run::<2>(22);
}

#[test]
fn steady_movers_turning_and_crossing() {
    // Movers that keep their heading for many frames (the fat boxes' steady
    // rule: longer reach, smaller margin), then turn, some fast enough to
    // leave their cells every frame, through a dense field: every re-filing
    // path (cells kept, left and entered) and pair churn, checked against
    // brute force every frame.
    scenario::<3>(9, |c, rng| {
        let side = 14.0;
        c.insert_batch(&unit_cubes(rng, 1500, side));
        c.update();
        let ids = c.ids();
        // A sixth of them: below the share that takes the one-shot path.
        let movers: Vec<_> = ids.iter().step_by(6).copied().collect();
        let mut vel: Vec<[f64; 3]> = movers
            .iter()
            .enumerate()
            .map(|(i, _)| {
                let speed = if i % 10 == 0 { 0.9 } else { 0.02 + 0.1 * rng.unit() };
                let d = [rng.unit() - 0.5, rng.unit() - 0.5, rng.unit() - 0.5];
                let n = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt().max(1e-9);
                d.map(|x| x / n * speed)
            })
            .collect();
        for frame in 0..90 {
            if frame == 45 {
                // A turn: the next re-fattening is not steady.
                for v in &mut vel {
                    *v = [v[1], -v[0], v[2]];
                }
            }
            let mut moves = Vec::with_capacity(movers.len());
            for (&id, v) in movers.iter().zip(&mut vel) {
                let b = c.model.live[&id].aabb;
                // Bounce off the walls of the field.
                for (k, vk) in v.iter_mut().enumerate() {
                    let x = b.min()[k] + *vk;
                    if !(-2.0..=side + 2.0).contains(&x) {
                        *vk = -*vk;
                    }
                }
                moves.push((id, shifted(&b, *v)));
            }
            c.set_aabb_batch(&moves);
            c.update();
        }
        assert!(c.updates > 90);
    });
}

#[test]
fn bullet_through_a_static_field() {
    scenario::<3>(2, |c, rng| {
        let field: Vec<_> = (0..1500)
            .map(|_| {
                Proxy::new(cube([rng.unit() * 60.0, rng.unit() * 6.0, rng.unit() * 6.0], 0.4)).kind(BodyKind::Static)
            })
            .collect();
        c.insert_batch(&field);
        let bullet = c.insert(Proxy::new(cube([-5.0, 3.0, 3.0], 0.1)));
        c.update();
        assert!(c.prev.is_empty(), "static pairs are never reported");
        let mut hits = 0;
        for step in 0..40 {
            let x = -5.0 + step as f64 * 1.7;
            c.set_aabb(bullet, cube([x, 3.0, 3.0], 0.6));
            c.update();
            hits += c.events.len();
        }
        assert!(hits > 10, "the bullet met the field: {hits} events");
    });
}

#[test]
fn huge_ground_box_and_a_pile() {
    scenario::<3>(3, |c, rng| {
        let ground =
            c.insert(Proxy::new(Aabb::new([-1e4, -1e4, -1.0], [1e4, 1e4, 0.0]).unwrap()).kind(BodyKind::Static));
        let ps: Vec<_> = (0..400).map(|_| Proxy::new(cube([rng.unit() * 50.0, rng.unit() * 50.0, 0.4], 0.5))).collect();
        c.insert_batch(&ps);
        c.update();
        assert_eq!(c.prev.iter().filter(|p| p.0 == ground || p.1 == ground).count(), 400);
        // A few at a time jump up off the ground and fall back onto it: the
        // incremental paths against the huge box.
        let ids = c.ids();
        for frame in 0..12 {
            let dz = if frame % 2 == 0 { 3.0 } else { -3.0 };
            let moves: Vec<_> = ids
                .iter()
                .filter(|&&id| id != ground)
                .skip(frame / 2 * 20)
                .take(20)
                .map(|&id| (id, shifted(&c.model.live[&id].aabb, [rng.unit() - 0.5, rng.unit() - 0.5, dz])))
                .collect();
            c.set_aabb_batch(&moves);
            c.update();
            assert!(!c.events.is_empty());
        }
        // Everything falls onto one spot, then half of it teleports far away.
        let ids = c.ids();
        for (i, &id) in ids.iter().enumerate().filter(|(_, &id)| id != ground) {
            c.set_aabb(id, cube([0.0, 0.0, 0.5 + (i % 3) as f64 * 1e-9], 0.5));
        }
        c.update();
        for &id in ids.iter().filter(|&&id| id != ground).step_by(2) {
            c.set_aabb(id, cube([1e9, -1e9, 1e9], 0.5));
        }
        c.update();
        c.remove(ground);
        c.update();
        // Reinserted proxies get the freed slots with new generations.
        let again = c.insert(Proxy::new(cube([0.0, 0.0, 0.5], 0.5)));
        assert_eq!(again.index(), ground.index());
        assert_ne!(again, ground);
        c.update();
    });
}

#[test]
fn an_update_with_nothing_changed_reports_nothing() {
    scenario::<2>(4, |c, rng| {
        let ps: Vec<_> = (0..300).map(|_| Proxy::new(cube([rng.unit() * 10.0, rng.unit() * 10.0], 0.5))).collect();
        c.insert_batch(&ps);
        c.update();
        let before = c.bp.pairs().len();
        c.update();
        assert!(c.events.is_empty());
        // Moving to the same box, and insert-then-remove, change nothing.
        let id = c.ids()[0];
        let b = c.model.live[&id].aabb;
        c.set_aabb(id, b);
        let tmp = c.insert(Proxy::new(b));
        c.remove(tmp);
        c.update();
        assert!(c.events.is_empty());
        assert_eq!(c.bp.pairs().len(), before);
    });
}

/// Proxies that never moved are held by their exact boxes (grid and tree):
/// a world at rest tracks exactly the pairs it reports; a proxy that moves
/// gets its margin, and with it a few more tracked pairs, at its first move.
#[test]
fn proxies_at_rest_track_only_their_pairs() {
    fn check<I: broadphase::persistent::SpatialIndex<f64, 3>>(mut bp: broadphase::persistent::Engine<f64, 3, I>) {
        let mut rng = Rng(12);
        let ps: Vec<_> = (0..2000)
            .map(|_| Proxy::new(cube([rng.unit() * 16.0, rng.unit() * 16.0, rng.unit() * 16.0], 0.5)))
            .collect();
        let (mut ids, mut events) = (Vec::new(), Vec::new());
        bp.insert_batch(&ps, &mut ids).unwrap();
        bp.update(&mut events);
        // One incremental frame (the load took the one-shot path): a proxy
        // arrives, and every proxy is filed by its exact box.
        let extra = bp.insert(Proxy::new(cube([8.0, 8.0, 8.0], 0.5))).unwrap();
        bp.update(&mut events);
        assert!(bp.pairs().len() > 1000, "{}", bp.pairs().len());
        assert_eq!(bp.tracked_pairs(), bp.pairs().len(), "{}", bp.name());
        // A proxy that moves leaves its exact box at once: re-filed with a
        // margin, it tracks some pairs that do not overlap.
        let b = bp.aabb(extra).unwrap();
        bp.set_aabb(extra, shifted(&b, [0.01, 0.0, 0.0])).unwrap();
        bp.update(&mut events);
        assert!(bp.tracked_pairs() >= bp.pairs().len());
        bp.validate().unwrap();
    }
    check(HashGrid::<f64, 3>::default());
    check(DynamicTree::<f64, 3>::default());
}

/// Runs `check` on the four engines of [`Crowd`] tests.
macro_rules! crowd_engines {
    ($check:ident) => {
        $check(HashGrid::<f64, 3>::default());
        $check(DynamicTree::<f64, 3>::default());
        $check(IncrementalSap::<f64, 3>::default());
        $check(MultiSap::<f64, 3>::default());
    };
}

/// 2000 cubes of side 1 in a world of side 16, an engine and the brute
/// force beside it, stepped frame by frame.
struct Crowd<I: broadphase::persistent::SpatialIndex<f64, 3>> {
    bp: broadphase::persistent::Engine<f64, 3, I>,
    reference: BruteForce<f64, 3>,
    boxes: Vec<Aabb<f64, 3>>,
    ids: Vec<ProxyId>,
    ref_ids: Vec<ProxyId>,
    rng: Rng,
}

impl<I: broadphase::persistent::SpatialIndex<f64, 3>> Crowd<I> {
    fn new(mut bp: broadphase::persistent::Engine<f64, 3, I>) -> Self {
        let mut rng = Rng(31);
        let boxes: Vec<_> =
            (0..2000).map(|_| cube([rng.unit() * 16.0, rng.unit() * 16.0, rng.unit() * 16.0], 0.5)).collect();
        let ps: Vec<_> = boxes.iter().map(|b| Proxy::new(*b)).collect();
        let (mut ids, mut ref_ids) = (Vec::new(), Vec::new());
        let mut reference = BruteForce::<f64, 3>::default();
        bp.insert_batch(&ps, &mut ids).unwrap();
        reference.insert_batch(&ps, &mut ref_ids).unwrap();
        Self { bp, reference, boxes, ids, ref_ids, rng }
    }

    /// Moves `moved` random boxes, each by `step(rng)`, updates both, checks
    /// the engine's pairs and events against the brute force's and its
    /// structure; returns how many pairs it tracks (0 after a one-shot
    /// frame).
    fn frame(&mut self, moved: usize, step: impl Fn(&mut Rng) -> [f64; 3]) -> usize {
        let (mut batch, mut ref_batch) = (Vec::new(), Vec::new());
        for _ in 0..moved {
            let i = self.rng.below(self.boxes.len());
            self.boxes[i] = shifted(&self.boxes[i], step(&mut self.rng));
            batch.push((self.ids[i], self.boxes[i]));
            ref_batch.push((self.ref_ids[i], self.boxes[i]));
        }
        self.bp.set_aabb_batch(&batch).unwrap();
        self.reference.set_aabb_batch(&ref_batch).unwrap();
        let (mut events, mut ref_events) = (Vec::new(), Vec::new());
        self.bp.update(&mut events);
        self.reference.update(&mut ref_events);
        let mut got: Vec<_> = self.bp.pairs().to_vec();
        let mut want: Vec<_> = self.reference.pairs().to_vec();
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want, "{}", self.bp.name());
        assert_eq!(events, ref_events, "{}", self.bp.name());
        self.bp.validate().unwrap();
        self.bp.tracked_pairs()
    }

    /// Removes `count` random proxies in one batch (and nothing else),
    /// updates and checks as [`frame`](Self::frame) does.
    fn unload(&mut self, count: usize) -> usize {
        let (mut gone, mut ref_gone) = (Vec::new(), Vec::new());
        for _ in 0..count {
            let i = self.rng.below(self.boxes.len());
            self.boxes.swap_remove(i);
            gone.push(self.ids.swap_remove(i));
            ref_gone.push(self.ref_ids.swap_remove(i));
        }
        self.bp.remove_batch(&gone).unwrap();
        self.reference.remove_batch(&ref_gone).unwrap();
        self.frame(0, |_| [0.0; 3])
    }
}

/// Rent or buy between one-shot and incremental frames: after a load the
/// first calm frame (too few changes for a one-shot frame) rebuilds the
/// index and tracks the pairs; after a bounce (a busy frame soon after
/// such a rebuild) calm frames stay one-shot (no tracked pairs) for three
/// frames, then six after a second bounce; an incremental phase that
/// lasts ends the renting, and so do many queries in a rented frame (a
/// few scan the boxes). Every frame's pairs and events are brute
/// force's.
#[test]
fn calm_frames_after_a_bounce_stay_one_shot_for_a_while() {
    fn check<I: broadphase::persistent::SpatialIndex<f64, 3>>(bp: broadphase::persistent::Engine<f64, 3, I>) {
        let mut c = Crowd::new(bp);
        let slow = |rng: &mut Rng| [rng.unit() * 0.2 - 0.1, 0.05, 0.0];
        let (calm, busy) = (10, 600);
        // The load: one-shot; the first calm frame goes incremental.
        assert_eq!(c.frame(0, slow), 0);
        assert!(c.frame(calm, slow) > 1000);
        // A bounce: three calm frames one-shot, the fourth incremental.
        assert_eq!(c.frame(busy, slow), 0);
        for k in 0..3 {
            assert_eq!(c.frame(calm, slow), 0, "calm frame {k} after one bounce");
        }
        assert!(c.frame(calm, slow) > 1000);
        // A second bounce: six.
        assert_eq!(c.frame(busy, slow), 0);
        for k in 0..6 {
            assert_eq!(c.frame(calm, slow), 0, "calm frame {k} after two bounces");
        }
        // An incremental phase that lasts, then a busy frame: no renting.
        for _ in 0..6 {
            assert!(c.frame(calm, slow) > 1000);
        }
        assert_eq!(c.frame(busy, slow), 0);
        assert!(c.frame(calm, slow) > 1000);
        // A bounce, a rented frame, then a query: renting goes on (it
        // scans the boxes). Then many: renting ends (past the first few, the
        // queries of a one-shot frame build the index for themselves).
        assert_eq!(c.frame(busy, slow), 0);
        assert_eq!(c.frame(calm, slow), 0);
        let query = |bp: &broadphase::persistent::Engine<f64, 3, I>| {
            let mut met = 0;
            bp.query_aabb(&cube([8.0, 8.0, 8.0], 2.0), Filter::ALL, &mut |_| {
                met += 1;
                true
            });
            met
        };
        let met = query(&c.bp);
        assert!(met > 0);
        assert_eq!(c.frame(calm, slow), 0);
        for _ in 0..20 {
            query(&c.bp);
        }
        assert!(c.frame(calm, slow) > 1000);
    }
    crowd_engines!(check);
}

/// A frame whose moves are fast for their boxes' size (a sample of them
/// says so) is one-shot even when too few proxies move for a busy frame:
/// 300 of 2000 cubes of side 1 moving 2.5 along an axis (the grid and the
/// tree would re-fatten nearly all of them) take the one-shot path, the
/// same 300 moving 0.05 stay incremental, and so do 40 (too few) moving
/// fast. The sweep-and-prune forms, whose moves cost more (every move
/// swaps endpoints), are busy from fewer changes: the 300 slow moves are
/// one-shot there; the tree, whose re-fattening is dearer, is one-shot
/// from slower moves than the grid. Every frame's pairs and events are
/// brute force's.
#[test]
fn fast_moves_take_one_shot_frames() {
    fn check<I: broadphase::persistent::SpatialIndex<f64, 3>>(bp: broadphase::persistent::Engine<f64, 3, I>) {
        let mut c = Crowd::new(bp);
        let slow = |rng: &mut Rng| [rng.unit() * 0.1 - 0.05, 0.05, 0.0];
        let fast = |rng: &mut Rng| if rng.below(2) == 0 { [2.5, 0.0, 0.0] } else { [0.0, -2.5, 0.0] };
        let (moved, name) = (300, c.bp.name());
        let sweeps = name.contains("sap");
        assert_eq!(c.frame(0, slow), 0);
        for _ in 0..7 {
            assert!(c.frame(40, slow) > 1000, "{name}: few slow moves");
        }
        for _ in 0..7 {
            let tracked = c.frame(moved, slow);
            assert_eq!(tracked == 0, sweeps, "{name}: 300 slow moves ({tracked} tracked)");
        }
        assert_eq!(c.frame(moved, fast), 0, "{name}: fast moves");
        assert_eq!(c.frame(moved, fast), 0, "{name}: fast moves");
        // Brisk moves (0.12, about one proxy in 110 expected to re-fatten):
        // one-shot for the tree, whose re-fattening is dearer, not for the
        // grid.
        let brisk = |_: &mut Rng| [0.12, 0.0, 0.0];
        for _ in 0..7 {
            c.frame(40, slow);
        }
        let tracked = c.frame(moved, brisk);
        assert_eq!(tracked == 0, sweeps || name == "dynamic-tree", "{name}: brisk moves ({tracked} tracked)");
        if !sweeps {
            // Slow again: incremental (the last incremental phase lasted).
            assert!(c.frame(moved, slow) > 1000, "{name}");
        }
        // Few fast moves: incremental.
        for _ in 0..3 {
            c.frame(40, slow);
        }
        assert!(c.frame(40, fast) > 1000, "{name}: few fast moves");
    }
    crowd_engines!(check);
}

/// A batch removing a quarter of the proxies or more (a level unloaded)
/// takes the one-shot path (no tracked pairs after it), smaller ones the
/// incremental path; the frames after go back to the incremental path, and
/// removing every proxy leaves no pair. Every frame's pairs and events are
/// brute force's.
#[test]
fn large_removals_take_one_shot_frames() {
    fn check<I: broadphase::persistent::SpatialIndex<f64, 3>>(bp: broadphase::persistent::Engine<f64, 3, I>) {
        let mut c = Crowd::new(bp);
        let slow = |rng: &mut Rng| [rng.unit() * 0.1 - 0.05, 0.05, 0.0];
        let name = c.bp.name();
        assert_eq!(c.frame(0, slow), 0);
        for _ in 0..7 {
            assert!(c.frame(10, slow) > 1000, "{name}: calm frames");
        }
        // 300 of 2000, less than a quarter: incremental.
        assert!(c.unload(300) > 1000, "{name}: a small unload");
        for _ in 0..7 {
            c.frame(10, slow);
        }
        // 600 of 1700: one-shot; calm frames after it go back.
        assert_eq!(c.unload(600), 0, "{name}: a large unload");
        assert!(c.frame(10, slow) > 500, "{name}: calm after the unload");
        assert_eq!(c.unload(c.boxes.len()), 0, "{name}: everything unloaded");
        assert!(c.bp.pairs().is_empty());
    }
    crowd_engines!(check);
}

/// The event stream of a long seeded history, hashed: the same for every
/// algorithm and pinned, so any change of results or order is noticed.
#[test]
fn event_stream_is_deterministic_and_pinned() {
    let mut hashes = Vec::new();
    for bp in [
        Box::new(BruteForce::<f32, 2>::default()) as Box<dyn BroadPhase<f32, 2>>,
        Box::new(IncrementalSap::<f32, 2>::default()),
        Box::new(HashGrid::<f32, 2>::default()),
        Box::new(DynamicTree::<f32, 2>::default()),
        Box::new(MultiSap::<f32, 2>::default()),
    ] {
        let mut bp = bp;
        let mut rng = Rng(77);
        let mut ids = Vec::new();
        let mut events = Vec::new();
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        for frame in 0..200 {
            for _ in 0..rng.below(20) {
                let c = [rng.unit() as f32 * 30.0, rng.unit() as f32 * 30.0];
                let b = Aabb::new(c, [c[0] + 1.0, c[1] + 1.0]).unwrap();
                ids.push(bp.insert(Proxy::new(b)).unwrap());
            }
            for _ in 0..rng.below(30) {
                if ids.is_empty() {
                    break;
                }
                let id = ids[rng.below(ids.len())];
                let b = bp.aabb(id).unwrap();
                let d = [(rng.unit() as f32 - 0.5) * 0.6, (rng.unit() as f32 - 0.5) * 0.6];
                let nb =
                    Aabb::new([b.min()[0] + d[0], b.min()[1] + d[1]], [b.max()[0] + d[0], b.max()[1] + d[1]]).unwrap();
                bp.set_aabb(id, nb).unwrap();
            }
            if frame % 5 == 0 && !ids.is_empty() {
                let id = ids.swap_remove(rng.below(ids.len()));
                bp.remove(id).unwrap();
            }
            events.clear();
            bp.update(&mut events);
            for e in &events {
                let (tag, p) = match e {
                    PairEvent::End(p) => (0, p),
                    PairEvent::Begin(p) => (1, p),
                };
                for x in [tag, p.a().index() as u64, p.a().generation() as u64, p.b().index() as u64] {
                    fnv(&mut h, x);
                }
            }
        }
        hashes.push(h);
    }
    assert_eq!(hashes[0], hashes[1]);
    assert_eq!(hashes[1], hashes[2]);
    assert_eq!(hashes[0], 9221136043225591033, "pinned event-stream hash");
}

/// The README's example, kept compiling and true.
#[test]
fn readme_example() -> Result<(), Box<dyn std::error::Error>> {
    use broadphase::Aabb3;
    let mut bp = HashGrid::<f32, 3>::default();
    let ground = bp.insert(Proxy::new(Aabb3::new([-50.0, -50.0, -1.0], [50.0, 50.0, 0.0])?).kind(BodyKind::Static))?;
    let ball = bp.insert(Proxy::new(Aabb3::new([0.0, 0.0, 2.0], [1.0, 1.0, 3.0])?).user(7))?;
    let mut events = Vec::new();
    bp.update(&mut events);
    assert!(events.is_empty());
    bp.set_aabb(ball, Aabb3::new([0.0, 0.0, 0.0], [1.0, 1.0, 1.0])?)?;
    bp.update(&mut events);
    assert!(matches!(events[..], [PairEvent::Begin(p)] if (p.a(), p.b()) == (ground, ball)));
    let down = Ray::new([0.5, 0.5, 10.0], [0.0, 0.0, -1.0], f64::INFINITY)?;
    let hit = bp.cast_ray_closest(&down, Filter::ALL).expect("a hit");
    assert_eq!((hit.id, hit.fraction), (ball, 9.0));
    assert_eq!(bp.user_data(ball)?, 7);
    bp.remove(ball)?;
    events.clear();
    bp.update(&mut events);
    assert!(matches!(events[..], [PairEvent::End(_)]));
    assert!(bp.remove(ball).is_err());
    Ok(())
}

/// `n` unit cubes placed uniformly in a cube of side `side`, one in `every`
/// static and one in `every` with a filter that refuses category 2.
fn mixed_cubes<const D: usize>(rng: &mut Rng, n: usize, side: f64, every: usize) -> Vec<Proxy<f64, D>> {
    (0..n)
        .map(|i| {
            let p = Proxy::new(cube(core::array::from_fn(|_| rng.unit() * side), 0.5));
            match i % every {
                0 => p.kind(BodyKind::Static),
                1 => p.filter(Filter::new(2, !2)),
                _ => p,
            }
        })
        .collect()
}

/// Every proxy moving a little each frame (the one-shot path every frame):
/// steady headings of many speeds bouncing off the walls, then a random
/// walk, with a proxy that teleports, a filter that changes, removals,
/// arrivals and a share of static proxies and filtered ones on the way, so
/// that candidate sets over grown boxes are built, reused, outrun and
/// dropped; every engine checked against brute force every frame.
#[test]
fn coherent_bulk_motion_reuses_candidates_exactly() {
    fn run<const D: usize>(seed: u64) {
        scenario::<D>(seed, |c, rng| {
            let side = 12.0;
            let ps = mixed_cubes::<D>(rng, 1200, side, 10);
            c.insert_batch(&ps);
            c.update();
            let ids = c.ids();
            let mut vel: Vec<[f64; D]> = (0..ids.len())
                .map(|i| {
                    let speed = [0.0, 0.01, 0.03, 0.08][i % 4];
                    core::array::from_fn(|_| (rng.unit() - 0.5) * speed)
                })
                .collect();
            let mut live: Vec<bool> = vec![true; ids.len()];
            for frame in 0..48 {
                let jitter = frame >= 30;
                let mut moves = Vec::new();
                for (i, &id) in ids.iter().enumerate() {
                    if !live[i] || c.model.live[&id].kind == BodyKind::Static {
                        continue;
                    }
                    let b = c.model.live[&id].aabb;
                    if jitter {
                        let speed = 0.04;
                        vel[i] = core::array::from_fn(|_| (rng.unit() - 0.5) * speed);
                    }
                    for (k, v) in vel[i].iter_mut().enumerate() {
                        if !(-1.0..=side + 1.0).contains(&(b.min()[k] + *v)) {
                            *v = -*v;
                        }
                    }
                    let step = if frame == 9 && i == 7 { [side / 2.0; D] } else { vel[i] };
                    moves.push((id, shifted(&b, step)));
                }
                c.set_aabb_batch(&moves);
                match frame {
                    14 => c.set_filter(ids[3], Filter::new(4, !4)),
                    20 => {
                        c.remove(ids[5]);
                        live[5] = false;
                    }
                    24 => {
                        c.insert(Proxy::new(cube([side / 2.0; D], 0.5)));
                    }
                    _ => {}
                }
                c.update();
            }
        });
    }
    run::<3>(41);
    run::<2>(42);
}

/// The candidate sets of coherent motion are built and reused (not only
/// exact): with 3000 cubes all drifting steadily, each its own way, the
/// hash grid builds a set at the first all-moving frame after the load
/// (more candidates than pairs), reuses it while every box stays in its
/// grown box, builds a new one when they outrun it and when a box
/// teleports, and holds none once turned off, with pairs and events equal
/// to brute force's every frame.
#[test]
fn coherent_bulk_motion_keeps_a_candidate_set() {
    use std::collections::HashMap;
    let mut rng = Rng(77);
    let mut boxes: Vec<_> =
        (0..3000).map(|_| cube([rng.unit() * 20.0, rng.unit() * 20.0, rng.unit() * 20.0], 0.5)).collect();
    let vel: Vec<[f64; 3]> = (0..boxes.len())
        .map(|_| {
            let d = [rng.unit() - 0.5, rng.unit() - 0.5, rng.unit() - 0.5];
            let n = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt().max(1e-9);
            d.map(|x| x / n * 0.04)
        })
        .collect();
    let ps: Vec<_> = boxes.iter().map(|b| Proxy::new(*b)).collect();
    let mut bp = HashGrid::<f64, 3>::default();
    let mut reference = BruteForce::<f64, 3>::default();
    let (mut ids, mut ref_ids) = (Vec::new(), Vec::new());
    bp.insert_batch(&ps, &mut ids).unwrap();
    reference.insert_batch(&ps, &mut ref_ids).unwrap();
    // Events and pairs as pairs of box positions, to compare the two.
    type Named = (Vec<(bool, usize, usize)>, Vec<(usize, usize)>);
    fn named(ids: &[ProxyId], events: &[PairEvent], pairs: &[broadphase::ProxyPair]) -> Named {
        let at: HashMap<ProxyId, usize> = ids.iter().enumerate().map(|(i, &id)| (id, i)).collect();
        let two = |p: &broadphase::ProxyPair| {
            let (x, y) = (at[&p.a()], at[&p.b()]);
            (x.min(y), x.max(y))
        };
        let mut ev: Vec<_> = events
            .iter()
            .map(|e| {
                let (x, y) = two(&e.pair());
                (matches!(e, PairEvent::Begin(_)), x, y)
            })
            .collect();
        let mut ps: Vec<_> = pairs.iter().map(two).collect();
        ev.sort_unstable();
        ps.sort_unstable();
        (ev, ps)
    }
    let (mut events, mut ref_events) = (Vec::new(), Vec::new());
    bp.update(&mut events);
    reference.update(&mut ref_events);
    let mut held = Vec::new();
    for frame in 0..12 {
        if frame == 10 {
            // Turned off: the set goes, the frames stay exact.
            bp.set_coarse_frames(false);
        }
        for (b, v) in boxes.iter_mut().zip(&vel) {
            *b = shifted(b, *v);
        }
        if frame == 6 {
            boxes[0] = shifted(&boxes[0], [9.0, 9.0, 9.0]);
        }
        let moves: Vec<_> = ids.iter().zip(&boxes).map(|(&id, &b)| (id, b)).collect();
        let ref_moves: Vec<_> = ref_ids.iter().zip(&boxes).map(|(&id, &b)| (id, b)).collect();
        bp.set_aabb_batch(&moves).unwrap();
        reference.set_aabb_batch(&ref_moves).unwrap();
        events.clear();
        ref_events.clear();
        bp.update(&mut events);
        reference.update(&mut ref_events);
        bp.validate().unwrap();
        assert!(!ref_events.is_empty(), "frame {frame}: the motion changes pairs");
        assert_eq!(named(&ids, &events, bp.pairs()), named(&ref_ids, &ref_events, reference.pairs()), "frame {frame}");
        held.push(bp.coarse_candidates());
    }
    // Built at once, reused while the boxes stay in their grown boxes (three
    // steps of their motion), built anew when they outrun them, and when a
    // box teleports.
    assert!(held[0] > bp.pairs().len(), "{held:?}");
    assert!(held[1..4].iter().all(|&h| h == held[0]), "{held:?}");
    assert!(held[4] > 0 && held[4] != held[3], "{held:?}");
    assert_eq!(held[5], held[4], "{held:?}");
    assert!(held[6] > 0 && held[6] != held[5], "{held:?}");
    assert_eq!(held[10..], [0, 0], "{held:?}");
}

/// A case of `model_coherent_bulk_frames` costs about what 50 of the
/// others do (six engines, 400 proxies, brute force every frame): a
/// sixteenth of their number, at least 8 and at most 200. (Its runner is
/// built by hand: the `proptest!` macro lets `PROPTEST_CASES` override any
/// count it is given.)
fn coherent_cases() -> u32 {
    (cases() / 16).clamp(8, 200)
}

/// Random frames at a size that takes the one-shot path (400 proxies,
/// most moving): steady or erratic motion of many speeds, teleports,
/// filter changes, removals, arrivals, calm and still frames in any
/// order, so that candidate sets of coherent motion are built, reused,
/// outrun, backed off and dropped at random; every engine checked
/// against brute force (pairs and events) after every update.
#[test]
fn model_coherent_bulk_frames() {
    let config = ProptestConfig { cases: coherent_cases(), ..ProptestConfig::default() };
    let frames = prop::collection::vec(prop_oneof![3 => Just(0u8), 2 => 0u8..8], 1..32);
    let mut runner = proptest::test_runner::TestRunner::new(config);
    let result = runner.run(&(any::<u64>(), frames), |(seed, frames)| {
        scenario::<3>(seed, |c, rng| {
            let side = 9.0;
            let ps = mixed_cubes::<3>(rng, 400, side, 16);
            c.insert_batch(&ps);
            c.update();
            let speeds = [0.0, 0.01, 0.04, 0.1];
            let mut vel: std::collections::BTreeMap<ProxyId, [f64; 3]> = c
                .ids()
                .into_iter()
                .map(|id| {
                    let s = speeds[rng.below(4)];
                    (id, [0; 3].map(|_| (rng.unit() - 0.5) * s))
                })
                .collect();
            for &f in &frames {
                let ids = c.ids();
                let share = match f {
                    6 => 0.3,
                    7 => 0.0,
                    _ => 1.0,
                };
                let mut moves = Vec::new();
                for &id in &ids {
                    if c.model.live[&id].kind == BodyKind::Static || rng.unit() >= share {
                        continue;
                    }
                    let v = vel.entry(id).or_insert([0.0; 3]);
                    if f == 1 {
                        *v = [0; 3].map(|_| (rng.unit() - 0.5) * 0.08);
                    }
                    moves.push((id, shifted(&c.model.live[&id].aabb, *v)));
                }
                if f == 2 && !moves.is_empty() {
                    let i = rng.below(moves.len());
                    moves[i].1 = shifted(&moves[i].1, [side / 2.0, -side / 3.0, 1.0]);
                }
                c.set_aabb_batch(&moves);
                match f {
                    3 => c.set_filter(ids[rng.below(ids.len())], Filter::new(4, !4)),
                    4 => c.remove(ids[rng.below(ids.len())]),
                    5 => {
                        c.insert(Proxy::new(cube([rng.unit() * side, rng.unit() * side, rng.unit() * side], 0.5)));
                    }
                    _ => {}
                }
                c.update();
            }
        });
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
