//! The peer crates in `broadphase bench` (feature `peers`): parry's `Bvh`
//! (build and self-traversal; f32), rstar (bulk load and one envelope query
//! per box; f64) and broccoli (2D, f32), on the same boxes as the cell,
//! timed the same way, their pair sets hashed and checked against ours on
//! the same input precision.

use std::time::Instant;

use broadphase::{Aabb, Algorithm, PairFinder};
use broadphase_scenes::motion::{Motion, Mover};
use broadphase_scenes::to_f32;

use crate::bench::{pair_hash, time_runs, Cell, Row, Spread};
use crate::BenchArgs;

/// Pairs as `(i, j)` with `i < j`, as the peer adapters write them.
type Pairs = Vec<(u32, u32)>;
/// A peer's search writing into a reused pair vector.
type Search<'b> = Box<dyn FnMut(&mut Pairs) + 'b>;
/// A peer: its name, its search, and the scalar type it reads.
type Run<'b> = (&'static str, Search<'b>, &'static str);

fn rows(a: &BenchArgs, scene: &str, dim: u8, n: usize, runs: Vec<Run<'_>>, ours: &[(&str, u64)]) -> (Vec<Row>, bool) {
    let mut agree = true;
    let mut rows = Vec::new();
    for (name, mut run, scalar) in runs {
        let mut out = Vec::new();
        let times = time_runs(a, || {
            out.clear();
            let t = Instant::now();
            run(&mut out);
            t.elapsed().as_secs_f64()
        });
        let hash = pair_hash(out.iter().copied());
        let ok = ours.iter().find(|o| o.0 == scalar).map(|o| o.1) == Some(hash);
        agree &= ok;
        let cell = Cell { workload: "one-shot".into(), scene: scene.into(), dim, scalar, n };
        rows.push(Row::new(&cell, format!("{name} (peer)"), &times, Spread::Range, out.len(), f64::NAN, hash));
        if !ok {
            println!("  MISMATCH: {name} disagrees with broadphase on the same {scalar} boxes");
        }
    }
    (rows, agree)
}

/// Our hash over the f32 version of the boxes (the peers that take f32).
fn ours_f32<const D: usize>(boxes: &[Aabb<f64, D>]) -> u64 {
    let pairs = PairFinder::new(Algorithm::Auto).find(&to_f32(boxes)).expect("valid sizes");
    pair_hash(pairs.iter().map(|p| (p.a(), p.b())))
}

/// The peers on a 3D cell (f64 boxes; f32 copies for parry).
pub fn oneshot3(a: &BenchArgs, scene: &str, boxes: &[Aabb<f64, 3>], ours_f64: u64) -> (Vec<Row>, bool) {
    let b32 = to_f32(boxes);
    let runs: Vec<Run<'_>> = vec![
        ("parry3d Bvh", Box::new(|o: &mut Pairs| broadphase_bench::parry3d_pairs(&b32, o)), "f32"),
        ("rstar", Box::new(|o: &mut Pairs| broadphase_bench::rstar_pairs(boxes, o)), "f64"),
    ];
    rows(a, scene, 3, boxes.len(), runs, &[("f64", ours_f64), ("f32", ours_f32(boxes))])
}

/// The peers on a 2D cell.
pub fn oneshot2(a: &BenchArgs, scene: &str, boxes: &[Aabb<f64, 2>], ours_f64: u64) -> (Vec<Row>, bool) {
    let b32 = to_f32(boxes);
    let runs: Vec<Run<'_>> = vec![
        ("parry2d Bvh", Box::new(|o: &mut Pairs| broadphase_bench::parry2d_pairs(&b32, o)), "f32"),
        ("broccoli", Box::new(|o: &mut Pairs| broadphase_bench::broccoli_pairs(&b32, o)), "f32"),
        ("rstar", Box::new(|o: &mut Pairs| broadphase_bench::rstar_pairs(boxes, o)), "f64"),
    ];
    rows(a, scene, 2, boxes.len(), runs, &[("f64", ours_f64), ("f32", ours_f32(boxes))])
}

/// parry3d's `Bvh` per frame (leaf updates, refit, self-traversal) on f32
/// copies of a 3D cell's boxes under the same motion, checked against the
/// one-shot search over its final boxes.
pub fn frames3(a: &BenchArgs, scene: &str, boxes: &[Aabb<f64, 3>], motion: Motion, workload: &str) -> (Row, bool) {
    let mut mover = Mover::new(to_f32(boxes), motion, a.seed ^ 0x5eed);
    let mut bvh = broadphase_bench::ParryFrames::new(mover.boxes());
    let (mut moves, mut out) = (Vec::new(), Vec::new());
    let mut times = Vec::new();
    for f in 0..a.warmup + a.frames {
        mover.step(&mut moves);
        let t = Instant::now();
        bvh.frame(&moves, &mut out);
        if f >= a.warmup {
            times.push(t.elapsed().as_secs_f64());
        }
    }
    times.sort_by(f64::total_cmp);
    let hash = pair_hash(out.iter().copied());
    let reference = PairFinder::new(Algorithm::Auto).find(mover.boxes()).expect("valid sizes");
    let ok = hash == pair_hash(reference.iter().map(|p| (p.a(), p.b())));
    let cell = Cell { workload: workload.into(), scene: scene.into(), dim: 3, scalar: "f32", n: boxes.len() };
    let row = Row::new(&cell, "parry3d Bvh (peer)", &times, Spread::Deciles, out.len(), f64::NAN, hash);
    if !ok {
        println!("  MISMATCH: parry3d disagrees with the one-shot search over its final f32 boxes");
    }
    (row, ok)
}
