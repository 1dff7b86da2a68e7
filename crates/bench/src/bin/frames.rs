//! Per-frame cost of the persistent broad phases against recomputing every
//! pair (the best one-shot search) and against parry3d's `Bvh` updated in
//! place, with and without `optimize_incremental` (rapier runs it every
//! frame by default), all on the same frames, timed interleaved: medians,
//! means and the slowest frame reported; the ratios to parry are to the
//! faster of its two forms (by median).
//!
//! `cargo run --release -p broadphase-bench --bin frames [-- --quick]`
//!
//! The scene is "uniform" (unit cubes, L³ = 8N/3) in f32 3D. A fixed random
//! subset of the proxies moves each frame by `--speed` (default 0.05) along
//! its own fixed direction, bouncing off the world's walls.
//!
//! Profiling aids (environment): `FRAMES_SOLO` times the persistent
//! contenders alone (with `FRAMES_DUMP`, every frame's time is printed too;
//! with `FRAMES_FLUSH`, 64 MB are written between frames, so that each
//! frame starts with cold caches, as in an engine that does other work
//! between updates),
//! `FRAMES_COUNT` sets the number of timed frames (default 40),
//! `FRAMES_GRIDS`, `FRAMES_BULLET`, `FRAMES_INSERT` and `FRAMES_SORTED` are
//! described where they are read.

use std::time::Instant;

use broadphase::persistent::{DynamicTree, Engine, GridIndex, HashGrid, IncrementalSap, MultiSap, TreeIndex};
use broadphase::{Aabb, Algorithm, BroadPhase, Pair, PairFinder, Proxy, Workspace};
use broadphase_bench::{OurFrames, ParryFrames};
use broadphase_scenes::motion::{Motion, Mover};
use broadphase_scenes::{to_f32, uniform_side, Scene};

struct Args {
    quick: bool,
    margin: f64,
    speed: f64,
    only: Option<String>,
    fraction: Option<f64>,
    n: Option<usize>,
}

fn args() -> Args {
    let mut a = Args {
        quick: false,
        margin: broadphase::persistent::GRID_DEFAULT_MARGIN,
        speed: 0.05,
        only: None,
        fraction: None,
        n: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(x) = it.next() {
        match x.as_str() {
            "--quick" => a.quick = true,
            "--margin" => a.margin = it.next().and_then(|v| v.parse().ok()).expect("--margin RATIO"),
            "--speed" => a.speed = it.next().and_then(|v| v.parse().ok()).expect("--speed STEP"),
            "--only" => a.only = it.next(),
            "--fraction" => a.fraction = it.next().and_then(|v| v.parse().ok()),
            "--n" => a.n = it.next().and_then(|v| v.parse::<f64>().ok()).map(|v| v as usize),
            other => panic!("unknown argument {other}"),
        }
    }
    a
}

/// The uniform scene (f32 3D) and its motion: a fixed random share of the
/// boxes moves `speed` per frame along its own direction, bouncing off the
/// world's walls (the shared `Mover`).
type World = Mover<f32, 3>;

fn world(n: usize, fraction: f64, speed: f64, seed: u64) -> World {
    let mut boxes = to_f32(&Scene::Uniform.generate::<3>(n, seed));
    if std::env::var_os("FRAMES_SORTED").is_some() {
        // Experiment: insertion order along a coarse 3D grid (spatially
        // coherent slots).
        boxes.sort_by_key(|b| {
            let c = b.min().map(|v| (v / 4.0) as u32);
            (c[0], c[1], c[2])
        });
    }
    Mover::new(boxes, Motion::Steady { fraction, speed }, seed)
}

trait Contender {
    fn name(&self) -> String;
    fn frame(&mut self, w: &World, moves: &[(u32, Aabb<f32, 3>)]) -> usize;
}

struct Persistent {
    label: Option<String>,
    ours: OurFrames<f32, 3>,
}

impl Persistent {
    fn new(bp: Box<dyn BroadPhase<f32, 3>>, boxes: &[Aabb<f32, 3>]) -> Self {
        Self { label: None, ours: OurFrames::new(bp, boxes) }
    }
}

impl Contender for Persistent {
    fn name(&self) -> String {
        self.label.clone().unwrap_or_else(|| self.ours.bp.name().to_string())
    }

    fn frame(&mut self, _w: &World, moves: &[(u32, Aabb<f32, 3>)]) -> usize {
        self.ours.frame(moves)
    }
}

struct OneShot {
    ws: Workspace<f32>,
    out: Vec<Pair>,
}

impl Contender for OneShot {
    fn name(&self) -> String {
        "one-shot auto (all pairs)".into()
    }

    fn frame(&mut self, w: &World, _moves: &[(u32, Aabb<f32, 3>)]) -> usize {
        self.out.clear();
        PairFinder::new(Algorithm::Auto).find_with(&mut self.ws, w.boxes(), &mut self.out).unwrap();
        self.out.len()
    }
}

struct Parry {
    p: ParryFrames,
    out: Vec<(u32, u32)>,
    optimized: bool,
}

impl Contender for Parry {
    fn name(&self) -> String {
        if self.optimized {
            "parry3d Bvh update+optimize+refit+traverse (rapier's default)".into()
        } else {
            "parry3d Bvh update+refit+traverse".into()
        }
    }

    fn frame(&mut self, _w: &World, moves: &[(u32, Aabb<f32, 3>)]) -> usize {
        self.p.frame(moves, &mut self.out)
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn frames_case(n: usize, fraction: f64, a: &Args, warm: usize, frames: usize) {
    let mut w = world(n, fraction, a.speed, 7);
    let mut cs: Vec<Box<dyn Contender>> = Vec::new();
    let want = |name: &str| a.only.as_deref().is_none_or(|o| name.contains(o));
    // Profiling aid: `FRAMES_STAGGER` staggers the reaches of the grid and
    // the tree (`GridIndex::staggered`).
    let stagger = std::env::var_os("FRAMES_STAGGER").is_some();
    if want("grid") {
        let g = Engine::with_index(Default::default(), GridIndex::new(a.margin).staggered(stagger));
        cs.push(Box::new(Persistent::new(Box::new(g) as Box<dyn BroadPhase<f32, 3>>, w.boxes())));
    }
    if let Ok(v) = std::env::var("FRAMES_GRIDS") {
        // Tuning aid: grids with other margins and predictions
        // ("MARGIN:FRAMES,..."), timed alongside the rest.
        for spec in v.split(',') {
            let (m, p) = spec.split_once(':').expect("FRAMES_GRIDS=MARGIN:FRAMES,...");
            let (m, p) = (m.parse().expect("margin"), p.parse().expect("frames"));
            let g = Engine::with_index(Default::default(), GridIndex::new(m).with_prediction(p));
            let mut c = Persistent::new(Box::new(g) as Box<dyn BroadPhase<f32, 3>>, w.boxes());
            c.label = Some(format!("hash-grid margin {m} predict {p}"));
            cs.push(Box::new(c));
        }
    }
    if want("tree") {
        let t: DynamicTree<f32, 3> = Engine::with_index(Default::default(), TreeIndex::default().staggered(stagger));
        cs.push(Box::new(Persistent::new(Box::new(t), w.boxes())));
    }
    if want("multi") {
        cs.push(Box::new(Persistent::new(Box::new(MultiSap::<f32, 3>::default()), w.boxes())));
    }
    if want("sap") && (fraction <= 0.01 || n <= 10_000) {
        cs.push(Box::new(Persistent::new(Box::new(IncrementalSap::<f32, 3>::default()), w.boxes())));
    }
    if std::env::var_os("FRAMES_SOLO").is_some() {
        // Profiling aid: the persistent contenders alone (median per frame
        // of all of them together).
        let mut times = Vec::new();
        let mut flush = std::env::var_os("FRAMES_FLUSH").map(|_| vec![0u64; 8 << 20]);
        for f in 0..warm + frames {
            w.step(&mut Vec::new());
            let moves: Vec<_> = w.moving().iter().map(|&i| (i, w.boxes()[i as usize])).collect();
            if let Some(buf) = flush.as_mut() {
                // Evicts the caches (see the module notes).
                for (i, x) in buf.iter_mut().enumerate() {
                    *x = x.wrapping_add(i as u64);
                }
                std::hint::black_box(&buf);
            }
            let t = Instant::now();
            for c in &mut cs {
                c.frame(&w, &moves);
            }
            if f >= warm {
                times.push(t.elapsed().as_secs_f64());
            }
        }
        let mean = times.iter().sum::<f64>() / times.len().max(1) as f64;
        if std::env::var_os("FRAMES_DUMP").is_some() {
            let v: Vec<String> = times.iter().map(|t| format!("{:.2}", t * 1e3)).collect();
            println!("{}", v.join(" "));
        }
        println!("median frame {:.3} ms, mean {:.3} ms", median(times) * 1e3, mean * 1e3);
        return;
    }
    cs.push(Box::new(OneShot { ws: Workspace::new(), out: Vec::new() }));
    cs.push(Box::new(Parry { p: ParryFrames::new(w.boxes()), out: Vec::new(), optimized: false }));
    cs.push(Box::new(Parry { p: ParryFrames::optimized(w.boxes()), out: Vec::new(), optimized: true }));
    let mut moves = Vec::new();
    let mut times = vec![Vec::new(); cs.len()];
    let mut counts = vec![0; cs.len()];
    for f in 0..warm + frames {
        w.step(&mut moves);
        for (k, c) in cs.iter_mut().enumerate() {
            let t = Instant::now();
            counts[k] = c.frame(&w, &moves);
            if f >= warm {
                times[k].push(t.elapsed().as_secs_f64());
            }
        }
        assert!(counts.iter().all(|&c| c == counts[0]), "frame {f}: pair counts differ: {counts:?}");
    }
    let mean: Vec<f64> = times.iter().map(|t| t.iter().sum::<f64>() / t.len() as f64).collect();
    // The slowest frame: a hitch a game would see (the hash grid re-fattens
    // proxies that started moving together in the same update).
    let worst: Vec<f64> = times.iter().map(|t| t.iter().copied().fold(0.0, f64::max)).collect();
    let med: Vec<f64> = times.into_iter().map(median).collect();
    // The one-shot search, then the two parry variants: the faster of
    // those is the peer to beat (by medians, and by means for the means).
    let k = med.len() - 3;
    let (one, parry, parry_mean) = (med[k], med[k + 1].min(med[k + 2]), mean[k + 1].min(mean[k + 2]));
    let parry_worst = worst[k + 1].min(worst[k + 2]);
    println!(
        "\nN = {n}, {:.0}% moving {} per frame, {} pairs; medians of {frames} frames",
        fraction * 100.0,
        a.speed,
        counts[0]
    );
    for (((c, t), m), x) in cs.iter().zip(&med).zip(&mean).zip(&worst) {
        println!(
            "  {:38} {:>9.3} ms   one-shot/this {:>6.2}x   parry/this {:>6.2}x   mean {:>9.3} ms ({:>5.2}x parry's best mean)   worst {:>8.2} ms ({:>5.2}x parry's best worst)",
            c.name(),
            t * 1e3,
            one / t,
            parry / t,
            m * 1e3,
            parry_mean / m,
            x * 1e3,
            parry_worst / x
        );
    }
}

/// A named constructor of a persistent broad phase.
type Maker = (&'static str, fn() -> Box<dyn BroadPhase<f32, 3>>);

fn makers() -> Vec<Maker> {
    vec![
        ("hash-grid", || Box::new(HashGrid::<f32, 3>::default())),
        ("dynamic-tree", || Box::new(DynamicTree::<f32, 3>::default())),
        ("multi-sap", || Box::new(MultiSap::<f32, 3>::default())),
        ("incremental-sap", || Box::new(IncrementalSap::<f32, 3>::default())),
    ]
}

fn insert_case(n_new: usize, n_static: usize, only: Option<&str>) {
    let all = to_f32(&Scene::Uniform.generate::<3>(n_new + n_static, 11));
    let (stat, new) = all.split_at(n_static);
    // The one-shot search also before any world is built: its figure in the
    // rounds below moves with what the contender left in the process's
    // memory (fresh pages or reused ones, by 10% or more), so the ratio is
    // also given against this one. Note that these searches leave freed
    // memory in the process that the inserts below reuse: with them, the
    // same library's inserts (1e5 into 1e6) took 15-25% less time, and the
    // searches in the rounds 10-20% less (two alternated runs).
    let mut clean = f64::INFINITY;
    for _ in 0..3 {
        let t = Instant::now();
        let pairs = PairFinder::new(Algorithm::Auto).find(&all).unwrap();
        clean = clean.min(t.elapsed().as_secs_f64());
        std::hint::black_box(pairs);
    }
    for (name, make) in makers().into_iter().filter(|(name, _)| only.is_none_or(|o| name.contains(o))) {
        let mut best = f64::INFINITY;
        let mut one = f64::INFINITY;
        let mut unload = f64::INFINITY;
        let mut after = f64::INFINITY;
        for _ in 0..3 {
            let mut bp = make();
            let mut ids = Vec::new();
            let mut ev = Vec::new();
            if !stat.is_empty() {
                let ps: Vec<_> = stat.iter().map(|b| Proxy::new(*b).kind(broadphase::BodyKind::Static)).collect();
                bp.insert_batch(&ps, &mut ids).unwrap();
                bp.update(&mut ev);
                // A settled world: one small frame after the load (the load
                // took the one-shot path; this frame builds the index).
                let probe = bp.insert(Proxy::new(stat[0])).unwrap();
                bp.update(&mut ev);
                bp.remove(probe).unwrap();
                bp.update(&mut ev);
            }
            let ps: Vec<_> = new.iter().map(|b| Proxy::new(*b)).collect();
            let t = Instant::now();
            bp.insert_batch(&ps, &mut ids).unwrap();
            ev.clear();
            bp.update(&mut ev);
            best = best.min(t.elapsed().as_secs_f64());
            // The frame after: 1% of the arrivals move a little. After a load
            // into an empty world (a one-shot frame) this frame builds the
            // index and tracks every pair: the hitch a game sees next.
            let moves: Vec<_> = (0..new.len())
                .step_by(100)
                .map(|i| {
                    (
                        ids[n_static + i],
                        Aabb::new(new[i].min().map(|v| v + 0.01), new[i].max().map(|v| v + 0.01)).unwrap(),
                    )
                })
                .collect();
            bp.set_aabb_batch(&moves).unwrap();
            ev.clear();
            let t = Instant::now();
            bp.update(&mut ev);
            after = after.min(t.elapsed().as_secs_f64());
            // The same batch unloaded (a level streamed out).
            let t = Instant::now();
            bp.remove_batch(&ids[n_static..]).unwrap();
            ev.clear();
            bp.update(&mut ev);
            unload = unload.min(t.elapsed().as_secs_f64());
            let t = Instant::now();
            let pairs = PairFinder::new(Algorithm::Auto).find(&all).unwrap();
            one = one.min(t.elapsed().as_secs_f64());
            std::hint::black_box(pairs);
        }
        println!(
            "  batch insert {n_new} into {n_static} static, {name:16}: {:>8.2} ms; one-shot over all {:>8.2} ms; ratio {:.2}x; \
             the frame after {:>8.2} ms ({:.2}x); \
             removing them again {:>8.2} ms ({:.2}x); against the one-shot before any world ({:.2} ms): {:.2}x",
            best * 1e3,
            one * 1e3,
            best / one,
            after * 1e3,
            after / one,
            unload * 1e3,
            unload / one,
            clean * 1e3,
            best / clean
        );
    }
}

fn memory_case(n: usize) {
    let boxes = to_f32(&Scene::Uniform.generate::<3>(n, 5));
    for (_, make) in makers() {
        let mut p = OurFrames::new(make(), &boxes);
        // One incremental frame, so the pairs are tracked (not flat).
        let id = p.ids[0];
        let b = p.bp.aabb(id).unwrap();
        p.bp.set_aabb(id, Aabb::new(b.min().map(|v| v + 0.01), b.max().map(|v| v + 0.01)).unwrap()).unwrap();
        p.bp.update(&mut p.events);
        let held = p.bp.memory();
        p.bp.release_scratch();
        println!(
            "  {:16} N = {n}: bytes per proxy: {:.1} held after the bulk load; after release_scratch {:.1} in all, {:.1} without the pair set ({} pairs)",
            p.bp.name(),
            held as f64 / n as f64,
            p.bp.memory() as f64 / n as f64,
            (p.bp.memory() - p.bp.pair_memory()) as f64 / n as f64,
            p.bp.pairs().len()
        );
    }
}

fn still_case(n: usize) {
    let boxes = to_f32(&Scene::Uniform.generate::<3>(n, 3));
    for (_, make) in makers() {
        let mut p = OurFrames::new(make(), &boxes);
        let mut v = Vec::new();
        for _ in 0..201 {
            let t = Instant::now();
            p.events.clear();
            p.bp.update(&mut p.events);
            v.push(t.elapsed().as_secs_f64());
        }
        println!("  still frame, {:16} N = {n}: {:.0} ns", p.bp.name(), median(v) * 1e9);
    }
}

/// A small fast box crossing a town of static boxes (uniform density), per
/// frame: the cost should follow the bullet's neighbourhood, not the town.
fn bullet_case(n: usize, frames: usize) {
    let town = to_f32(&Scene::Uniform.generate::<3>(n, 9));
    let side = uniform_side(n, 3) as f32;
    for (name, make) in makers() {
        if name == "incremental-sap" && n > 100_000 {
            continue;
        }
        let mut bp = make();
        let ps: Vec<_> = town.iter().map(|b| Proxy::new(*b).kind(broadphase::BodyKind::Static)).collect();
        let mut ids = Vec::new();
        bp.insert_batch(&ps, &mut ids).unwrap();
        let mut ev = Vec::new();
        bp.update(&mut ev);
        let at =
            |x: f32| Aabb::new([x, side / 2.0, side / 2.0], [x + 0.2, side / 2.0 + 0.2, side / 2.0 + 0.2]).unwrap();
        let bullet = bp.insert(Proxy::new(at(0.0))).unwrap();
        bp.update(&mut ev);
        let mut times = Vec::new();
        let (mut events, mut x) = (0, 0.0f32);
        for _ in 0..frames {
            x += 0.7;
            if x > side - 1.0 {
                x = 0.0;
            }
            bp.set_aabb(bullet, at(x)).unwrap();
            ev.clear();
            let t = Instant::now();
            bp.update(&mut ev);
            times.push(t.elapsed().as_secs_f64());
            events += ev.len();
        }
        println!(
            "  bullet through {n} static boxes, {name:16}: {:>8.2} us per frame ({events} events)",
            median(times) * 1e6
        );
    }
}

fn main() {
    let a = args();
    let (warm, frames) = if a.quick {
        (10, 10)
    } else {
        (40, std::env::var("FRAMES_COUNT").ok().and_then(|v| v.parse().ok()).unwrap_or(40))
    };
    println!("# Persistent broad phases per frame (f32, 3D, uniform), grid margin ratio {}", a.margin);
    if std::env::var_os("FRAMES_BULLET").is_some() {
        // Profiling aid: the bullet scenario alone, at --n.
        bullet_case(a.n.unwrap_or(1_000_000), 2000);
        return;
    }
    if let Some(stat) = std::env::var("FRAMES_INSERT").ok().and_then(|v| v.parse::<f64>().ok()) {
        // Profiling aid: batch inserts of --n proxies into FRAMES_INSERT static ones.
        insert_case(a.n.unwrap_or(100_000), stat as usize, a.only.as_deref());
        return;
    }
    let sizes: Vec<usize> = match a.n {
        Some(n) => vec![n],
        None if a.quick => vec![10_000],
        None => vec![10_000, 100_000],
    };
    let fractions = a.fraction.map_or(vec![0.01, 0.1, 1.0], |f| vec![f]);
    for &n in &sizes {
        for &fraction in &fractions {
            frames_case(n, fraction, &a, warm, frames);
        }
    }
    if a.only.is_some() || a.fraction.is_some() {
        return;
    }
    println!("\n# A frame in which nothing moved");
    for n in if a.quick { vec![10_000] } else { vec![10_000, 1_000_000] } {
        still_case(n);
    }
    println!("\n# A bullet crossing a static town");
    for n in if a.quick { vec![10_000] } else { vec![10_000, 1_000_000] } {
        bullet_case(n, if a.quick { 200 } else { 400 });
    }
    println!("\n# Batch insert");
    if a.quick {
        insert_case(10_000, 0, None);
    } else {
        insert_case(100_000, 0, None);
        insert_case(100_000, 1_000_000, None);
    }
    println!("\n# Memory");
    memory_case(if a.quick { 100_000 } else { 1_000_000 });
}
