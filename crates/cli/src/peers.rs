//! The peer crates in `broadphase bench` (feature `peers`): parry's `Bvh`
//! (build and self-traversal; f32), the `bvh` crate (build and one overlap
//! traversal per box; f32), rstar (bulk load and one envelope query per
//! box; f64) and broccoli (2D, f32), on the same boxes as the cell, timed
//! the same way, their pair sets hashed and checked against ours on the
//! same input precision. Per frame, each is driven the way its API allows
//! (none has pair events; the row's note says how).

use std::time::Instant;

use broadphase::{Aabb, Algorithm, PairFinder, Scalar};
use broadphase_bench::{BroccoliFrames, BvhFrames, ParryFrames, ParryFrames2, PeerFrames, RstarFrames};
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
    for (name, mut run, scalar) in runs.into_iter().filter(|r| a.wants_peer(r.0)) {
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
        ("bvh", Box::new(|o: &mut Pairs| broadphase_bench::bvh_pairs(&b32, o)), "f32"),
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
        ("bvh", Box::new(|o: &mut Pairs| broadphase_bench::bvh_pairs(&b32, o)), "f32"),
        ("rstar", Box::new(|o: &mut Pairs| broadphase_bench::rstar_pairs(boxes, o)), "f64"),
    ];
    rows(a, scene, 2, boxes.len(), runs, &[("f64", ours_f64), ("f32", ours_f32(boxes))])
}

/// A constructor of a peer kept across frames.
type MakePeer<S, const D: usize> = fn(&[Aabb<S, D>]) -> Box<dyn PeerFrames<S, D>>;

/// A peer per frame: name, what it lacks, and how to make it.
type FramePeer<S, const D: usize> = (&'static str, &'static str, MakePeer<S, D>);

/// No peer keeps pairs with events; this says how each one is driven.
const PARRY_NOTE: &str = "no pair events or pair set: leaves updated in place + refit + all pairs each frame";
const PARRY_OPT_NOTE: &str = "no pair events or pair set: leaves updated in place + optimize_incremental + refit + all pairs each frame (rapier's default)";
const KEPT_NOTE: &str =
    "no pair events or pair set: remove + insert of moved boxes + their queries; pairs kept by the adapter";
const BROCCOLI_NOTE: &str = "no update, removal or events: tree rebuilt + all pairs each frame";

/// One peer on the same frames as ours (same motion, same seed), timed per
/// frame (capped at `4 × --seconds` once three frames are timed), its final
/// pairs checked against the one-shot search over its final boxes.
fn peer_frames<S: Scalar, const D: usize>(
    a: &BenchArgs,
    cell: &Cell,
    (name, note, make): FramePeer<S, D>,
    boxes: Vec<Aabb<S, D>>,
    motion: Motion,
) -> (Row, bool) {
    let mut mover = Mover::new(boxes, motion, a.seed ^ 0x5eed);
    let mut peer = make(mover.boxes());
    let mut moves = Vec::new();
    let mut times = Vec::new();
    let start = Instant::now();
    for f in 0..a.warmup + a.frames {
        mover.step(&mut moves);
        let t = Instant::now();
        peer.frame(&moves);
        if f >= a.warmup {
            times.push(t.elapsed().as_secs_f64());
        }
        if times.len() >= 3 && start.elapsed().as_secs_f64() > 4.0 * a.seconds {
            break;
        }
    }
    times.sort_by(f64::total_cmp);
    let mut out = Vec::new();
    peer.pairs(&mut out);
    let hash = pair_hash(out.iter().copied());
    let reference = PairFinder::new(Algorithm::Auto).find(mover.boxes()).expect("valid sizes");
    let ok = hash == pair_hash(reference.iter().map(|p| (p.a(), p.b()))) && out.len() == reference.len();
    let mut row = Row::new(cell, format!("{name} (peer)"), &times, Spread::Deciles, out.len(), f64::NAN, hash);
    row.note = note.into();
    println!("    ({name}: {note})");
    if !ok {
        println!("  MISMATCH: {name} disagrees with the one-shot search over its final boxes");
    }
    (row, ok)
}

/// Runs each peer per frame on a cell; f32 peers on f32 copies.
fn frames_peers<const D: usize>(
    a: &BenchArgs,
    cell: &Cell,
    boxes: &[Aabb<f64, D>],
    motion: Motion,
    f32_peers: &[FramePeer<f32, D>],
    f64_peers: &[FramePeer<f64, D>],
) -> (Vec<Row>, bool) {
    let mut rows = Vec::new();
    let mut agree = true;
    for &peer in f32_peers.iter().filter(|p| a.wants_peer(p.0)) {
        let c = Cell { scalar: "f32", ..cell.clone() };
        let (row, ok) = peer_frames(a, &c, peer, to_f32(boxes), motion);
        rows.push(row);
        agree &= ok;
    }
    for &peer in f64_peers.iter().filter(|p| a.wants_peer(p.0)) {
        let c = Cell { scalar: "f64", ..cell.clone() };
        let (row, ok) = peer_frames(a, &c, peer, boxes.to_vec(), motion);
        rows.push(row);
        agree &= ok;
    }
    (rows, agree)
}

/// The peers per frame on a 3D cell: parry3d, the `bvh` crate, rstar.
pub fn frames3(a: &BenchArgs, cell: &Cell, boxes: &[Aabb<f64, 3>], motion: Motion) -> (Vec<Row>, bool) {
    let f32_peers: [FramePeer<f32, 3>; 3] = [
        ("parry3d Bvh", PARRY_NOTE, |b| Box::new(ParryFrames::new(b))),
        ("parry3d Bvh+opt", PARRY_OPT_NOTE, |b| Box::new(ParryFrames::optimized(b))),
        ("bvh", KEPT_NOTE, |b| Box::new(BvhFrames::new(b))),
    ];
    let f64_peers: [FramePeer<f64, 3>; 1] = [("rstar", KEPT_NOTE, |b| Box::new(RstarFrames::new(b)))];
    frames_peers(a, cell, boxes, motion, &f32_peers, &f64_peers)
}

/// The peers per frame on a 2D cell: parry2d, broccoli, the `bvh` crate, rstar.
pub fn frames2(a: &BenchArgs, cell: &Cell, boxes: &[Aabb<f64, 2>], motion: Motion) -> (Vec<Row>, bool) {
    let f32_peers: [FramePeer<f32, 2>; 4] = [
        ("parry2d Bvh", PARRY_NOTE, |b| Box::new(ParryFrames2::new(b))),
        ("parry2d Bvh+opt", PARRY_OPT_NOTE, |b| Box::new(ParryFrames2::optimized(b))),
        ("broccoli", BROCCOLI_NOTE, |b| Box::new(BroccoliFrames::new(b))),
        ("bvh", KEPT_NOTE, |b| Box::new(BvhFrames::new(b))),
    ];
    let f64_peers: [FramePeer<f64, 2>; 1] = [("rstar", KEPT_NOTE, |b| Box::new(RstarFrames::new(b)))];
    frames_peers(a, cell, boxes, motion, &f32_peers, &f64_peers)
}
