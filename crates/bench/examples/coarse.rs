//! One-shot frames of every proxy moving, with and without the candidate
//! sets of coherent motion ("coarse frames"): two hash grids stepped alike,
//! timed alternately frame by frame over 200 frames (the first 20 not
//! counted); the set's frames against plain one-shot frames.
//!
//! `cargo run --release -p broadphase-bench --example coarse [steady|jitter|rain]`
//!
//! 1e5 unit cubes (`f32`, uniform scene), every one moving 0.05 a frame:
//! steadily along its own heading (bouncing off the walls), in a new random
//! direction every frame (jitter), or falling and wrapping to the top
//! (rain: teleports outrun every set, which backs off).

use broadphase::persistent::HashGrid;
use broadphase::{BroadPhase, Proxy};
use broadphase_scenes::motion::{Motion, Mover};
use broadphase_scenes::{to_f32, Scene};
use std::time::Instant;
fn main() {
    let n = 100_000;
    let motion = match std::env::args().nth(1).as_deref() {
        Some("rain") => Motion::Rain { fraction: 1.0, speed: 0.05 },
        Some("jitter") => Motion::Jitter { fraction: 1.0, speed: 0.05 },
        _ => Motion::Steady { fraction: 1.0, speed: 0.05 },
    };
    let boxes = to_f32(&Scene::Uniform.generate::<3>(n, 1));
    // The second grid never builds a set: every frame a one-shot search.
    let mut mover = Mover::new(boxes.clone(), motion, 1);
    let mut bps = [HashGrid::<f32, 3>::default(), HashGrid::<f32, 3>::default()];
    bps[1].set_coarse_frames(false);
    let ps: Vec<_> = boxes.iter().map(|b| Proxy::new(*b)).collect();
    let mut ids = [Vec::new(), Vec::new()];
    let mut ev = Vec::new();
    for (bp, ids) in bps.iter_mut().zip(&mut ids) {
        bp.insert_batch(&ps, ids).unwrap();
        bp.update(&mut ev);
    }
    let mut t = [Vec::new(), Vec::new()];
    for _ in 0..200 {
        let mut mv = Vec::new();
        mover.step(&mut mv);
        for k in 0..2 {
            let s = Instant::now();
            let moves: Vec<_> = mv.iter().map(|&(i, b)| (ids[k][i as usize], b)).collect();
            bps[k].set_aabb_batch(&moves).unwrap();
            ev.clear();
            bps[k].update(&mut ev);
            t[k].push(s.elapsed().as_secs_f64() * 1e3);
        }
    }
    for (k, t) in t.iter().enumerate() {
        let mut v = t[20..].to_vec();
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        v.sort_by(f64::total_cmp);
        let name = if k == 0 { "with sets   " } else { "without sets" };
        println!("{name}: median {:.3} ms, mean {:.3} ms, slowest {:.3} ms", v[v.len() / 2], mean, v[v.len() - 1]);
    }
}
