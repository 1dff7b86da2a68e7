//! The peer adapters find the pairs brute force finds: one-shot on several
//! scenes, and per frame under motion (checked every frame), so that a
//! benchmark's peer rows time correct work.

use broadphase::{Aabb, Algorithm, PairFinder};
use broadphase_bench::{BroccoliFrames, BvhFrames, ParryFrames, ParryFrames2, PeerFrames, RstarFrames};
use broadphase_scenes::motion::{Motion, Mover};
use broadphase_scenes::{to_f32, Scene};

fn brute<S: broadphase::Scalar, const D: usize>(boxes: &[Aabb<S, D>]) -> Vec<(u32, u32)> {
    let mut v: Vec<(u32, u32)> =
        PairFinder::new(Algorithm::BruteForce).find(boxes).unwrap().iter().map(|p| (p.a(), p.b())).collect();
    v.sort_unstable();
    v
}

fn sorted(mut v: Vec<(u32, u32)>) -> Vec<(u32, u32)> {
    v.sort_unstable();
    v
}

#[test]
fn one_shot_peers_match_brute_force() {
    for scene in [Scene::Uniform, Scene::Clustered, Scene::HeavyTailed, Scene::Sticks] {
        let b3 = scene.generate::<3>(600, 7);
        let f3 = to_f32(&b3);
        let mut out = Vec::new();
        broadphase_bench::parry3d_pairs(&f3, &mut out);
        assert_eq!(sorted(std::mem::take(&mut out)), brute(&f3), "parry3d {scene}");
        broadphase_bench::bvh_pairs(&f3, &mut out);
        assert_eq!(sorted(std::mem::take(&mut out)), brute(&f3), "bvh 3D {scene}");
        broadphase_bench::rstar_pairs(&b3, &mut out);
        assert_eq!(sorted(std::mem::take(&mut out)), brute(&b3), "rstar 3D {scene}");
        let b2 = scene.generate::<2>(600, 8);
        let f2 = to_f32(&b2);
        broadphase_bench::parry2d_pairs(&f2, &mut out);
        assert_eq!(sorted(std::mem::take(&mut out)), brute(&f2), "parry2d {scene}");
        broadphase_bench::broccoli_pairs(&f2, &mut out);
        assert_eq!(sorted(std::mem::take(&mut out)), brute(&f2), "broccoli {scene}");
        broadphase_bench::bvh_pairs(&f2, &mut out);
        assert_eq!(sorted(std::mem::take(&mut out)), brute(&f2), "bvh 2D {scene}");
    }
}

fn run_frames<S: broadphase::Scalar, const D: usize>(
    name: &str,
    boxes: Vec<Aabb<S, D>>,
    make: impl Fn(&[Aabb<S, D>]) -> Box<dyn PeerFrames<S, D>>,
) {
    let motions = [
        Motion::Steady { fraction: 0.1, speed: 0.3 },
        Motion::Jitter { fraction: 1.0, speed: 0.2 },
        Motion::Rain { fraction: 0.5, speed: 0.6 },
        Motion::Pulse { fraction: 0.4, calm: 0.1, period: 3, speed: 0.3 },
    ];
    for motion in motions {
        let mut mover = Mover::new(boxes.clone(), motion, 3);
        let mut peer = make(mover.boxes());
        let mut moves = Vec::new();
        for frame in 0..25 {
            mover.step(&mut moves);
            peer.frame(&moves);
            let mut out = Vec::new();
            peer.pairs(&mut out);
            assert_eq!(sorted(out), brute(mover.boxes()), "{name}, {motion:?}, frame {frame}");
        }
    }
}

#[test]
fn per_frame_peers_match_brute_force_every_frame() {
    let b3 = Scene::Uniform.generate::<3>(400, 11);
    let b2 = Scene::Clustered.generate::<2>(400, 12);
    run_frames("parry3d", to_f32(&b3), |b| Box::new(ParryFrames::new(b)));
    run_frames("parry3d optimized", to_f32(&b3), |b| Box::new(ParryFrames::optimized(b)));
    run_frames("bvh 3D", to_f32(&b3), |b| Box::new(BvhFrames::new(b)));
    run_frames("rstar 3D", b3.clone(), |b| Box::new(RstarFrames::new(b)));
    run_frames("parry2d", to_f32(&b2), |b| Box::new(ParryFrames2::new(b)));
    run_frames("parry2d optimized", to_f32(&b2), |b| Box::new(ParryFrames2::optimized(b)));
    run_frames("broccoli", to_f32(&b2), |b| Box::new(BroccoliFrames::new(b)));
    run_frames("bvh 2D", to_f32(&b2), |b| Box::new(BvhFrames::new(b)));
    run_frames("rstar 2D", b2, |b| Box::new(RstarFrames::new(b)));
}
