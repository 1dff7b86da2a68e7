//! The performance targets, each measured as a ratio within one run.
//!
//! `cargo run --release -p broadphase-bench --bin targets [-- --quick] [--only SECTIONS]`
//!
//! Timings interleave the contenders (A, B, A, B, ...) and report medians;
//! our searches reuse a `Workspace` and an output vector across runs, as a
//! caller searching every frame would (the "fresh" rows allocate anew).

use std::time::Instant;

use broadphase::{Aabb, Algorithm, Pair, PairFinder, Scalar, Workspace};
use broadphase_bench::alloc::{self, Counting};
use broadphase_scenes::{textbook_sort_and_sweep, to_f32, Scene};

#[global_allocator]
static ALLOC: Counting = Counting;

struct Runner {
    repeat: usize,
}

impl Runner {
    /// Medians (seconds) of each contender, run interleaved.
    fn race(&self, contenders: &mut [&mut dyn FnMut() -> usize]) -> Vec<(f64, usize)> {
        for c in contenders.iter_mut() {
            c(); // warm-up: caches, workspaces, page faults
        }
        self.rounds(contenders, 1, 0)
    }

    /// Medians (seconds) of each contender, run in blocks of `block`
    /// back-to-back runs (A A A, B B B, A A A, ...), the first run of each
    /// block not counted: each counted run follows a run of its own kind.
    ///
    /// Why: on the 2-vCPU VM this project is measured on, a threaded run
    /// that comes straight after a single-thread run of tens of
    /// milliseconds is slowed by up to several milliseconds, because the
    /// second vCPU sat idle meanwhile (with a thread spinning on that vCPU
    /// during the single-thread run, the threaded run after it takes its
    /// usual time; see `crates/bench/results-2026-11-28-threads.md` and the
    /// example `idle_vcpu`). An engine that calls the threaded search every
    /// frame sees the block figure.
    fn race_blocks(&self, contenders: &mut [&mut dyn FnMut() -> usize], block: usize) -> Vec<(f64, usize)> {
        self.rounds(contenders, block.max(2), 1)
    }

    /// `repeat` rounds, each running every contender `block` times in a
    /// row, the first `skip` runs of each block not counted: medians
    /// (seconds) and the last counts.
    fn rounds(&self, contenders: &mut [&mut dyn FnMut() -> usize], block: usize, skip: usize) -> Vec<(f64, usize)> {
        let mut times = vec![Vec::new(); contenders.len()];
        let mut counts = vec![0; contenders.len()];
        for _ in 0..self.repeat {
            for (k, c) in contenders.iter_mut().enumerate() {
                for b in 0..block {
                    let t = Instant::now();
                    counts[k] = c();
                    if b >= skip {
                        times[k].push(t.elapsed().as_secs_f64());
                    }
                }
            }
        }
        times
            .into_iter()
            .zip(counts)
            .map(|(mut t, c)| {
                t.sort_by(f64::total_cmp);
                (t[t.len() / 2], c)
            })
            .collect()
    }
}

fn ms(t: f64) -> String {
    format!("{:.2} ms", t * 1e3)
}

fn ours<S: Scalar, const D: usize>(alg: Algorithm, parallel: bool) -> impl FnMut(&[Aabb<S, D>]) -> usize {
    let finder = PairFinder::new(alg).parallel(parallel);
    let mut ws = Workspace::new();
    let mut out: Vec<Pair> = Vec::new();
    move |b| {
        out.clear();
        finder.find_with(&mut ws, b, &mut out).unwrap();
        out.len()
    }
}

/// A row of the threads table: `alg` on `boxes`, one thread against the
/// threaded variant, in blocks of three runs (see [`Runner::race_blocks`])
/// and alternated run by run (see [`Runner::race`]).
fn threads_row<S: Scalar, const D: usize>(r: &Runner, label: &str, alg: Algorithm, boxes: &[Aabb<S, D>]) {
    let (mut one, mut many) = (ours::<S, D>(alg, false), ours::<S, D>(alg, true));
    let blocks = r.race_blocks(&mut [&mut || one(boxes), &mut || many(boxes)], 3);
    let alt = r.race(&mut [&mut || one(boxes), &mut || many(boxes)]);
    assert_eq!(blocks[0].1, blocks[1].1, "{label}: the threaded search found other pairs");
    println!(
        "| {label} | {} | {} | {:.2}x | {} | {} | {:.2}x |",
        ms(blocks[0].0),
        ms(blocks[1].0),
        blocks[0].0 / blocks[1].0,
        ms(alt[0].0),
        ms(alt[1].0),
        alt[0].0 / alt[1].0
    );
}

fn keys_of<S: Scalar, const D: usize>(b: &[Aabb<S, D>]) -> Vec<u64> {
    b.iter().enumerate().map(|(i, x)| ((x.min()[0].sort_key() as u64) << 32) | i as u64).collect()
}

/// Least squares for `t ≈ a·x + b·y` in relative error: minimises
/// `Σ ((a·x + b·y) / t - 1)²`.
fn fit2(rows: &[(f64, f64, f64)]) -> (f64, f64) {
    let (mut sxx, mut sxy, mut syy, mut sx, mut sy) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(x, y, t) in rows {
        let (x, y) = (x / t, y / t);
        sxx += x * x;
        sxy += x * y;
        syy += y * y;
        sx += x;
        sy += y;
    }
    let det = sxx * syy - sxy * sxy;
    ((sx * syy - sy * sxy) / det, (sy * sxx - sx * sxy) / det)
}

/// Times each algorithm on every scene and size, fits `Auto`'s cost model,
/// and reports how close the resulting choices come to the best.
fn calibrate(quick: bool) {
    use broadphase::auto_stats;
    let sizes: &[usize] = if quick { &[1_000, 10_000, 50_000] } else { &[1_000, 10_000, 100_000, 300_000] };
    let r = Runner { repeat: 5 };
    // (scene, dim, n, sweep candidates, grid candidates, [sap, grid, bi] seconds)
    let mut rows: Vec<(Scene, usize, usize, f64, f64, [f64; 3])> = Vec::new();
    // This build's own pick per case (0 sort-and-sweep, 1 grid, 2
    // box-intersect), where known: measured here, or read from a file that
    // has the column.
    let mut built: Vec<Option<usize>> = Vec::new();
    let index = |a: &str| ["sort-and-sweep", "grid", "box-intersect"].iter().position(|&x| x == a);
    let args: Vec<String> = std::env::args().collect();
    if let Some(k) = args.iter().position(|a| a == "--from") {
        // Re-fit from the measurements of an earlier run.
        let text = std::fs::read_to_string(&args[k + 1]).expect("calibration file");
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split(',').collect();
            let num = |i: usize| f[i].parse::<f64>().unwrap();
            rows.push((
                f[0].parse().unwrap(),
                num(1) as usize,
                num(2) as usize,
                num(3),
                num(4),
                [num(5), num(6), num(7)],
            ));
            built.push(f.get(8).and_then(|a| index(a.trim())));
        }
    } else {
        let mut csv =
            String::from("scene,dim,n,sweep_candidates,grid_candidates,sap_s,grid_s,box_intersect_s,auto_choice\n");
        for scene in Scene::ALL {
            for &n in sizes {
                for dim in [2usize, 3] {
                    let (stats, t) = if dim == 3 {
                        let b = scene.generate::<3>(n, 1);
                        (auto_stats(&b), time3(&r, &b))
                    } else {
                        let b = scene.generate::<2>(n, 1);
                        (auto_stats(&b), time3(&r, &b))
                    };
                    csv += &format!(
                        "{scene},{dim},{n},{},{},{},{},{},{}\n",
                        stats.sweep_candidates, stats.grid_candidates, t[0], t[1], t[2], stats.choice
                    );
                    rows.push((scene, dim, n, stats.sweep_candidates, stats.grid_candidates, t));
                    built.push(index(&stats.choice.to_string()));
                }
            }
        }
        std::fs::write("target/calibration.csv", csv).expect("write target/calibration.csv");
        println!("(measurements saved to target/calibration.csv; re-fit with --calibrate --from it)\n");
    }
    let sap: Vec<_> = rows.iter().filter(|r| r.5[0].is_finite()).map(|r| (r.2 as f64, r.3, r.5[0] * 1e9)).collect();
    let grid: Vec<_> = rows.iter().filter(|r| r.5[1].is_finite()).map(|r| (r.2 as f64, r.4, r.5[1] * 1e9)).collect();
    let (sa, sb) = fit2(&sap);
    let (ga, gb) = fit2(&grid);
    // Box-intersect per `n log^(d-1) n`, one constant per dimension (2D
    // costs four to five times as much per `n log n` as 3D per `n log² n`):
    // the median over the cases of that dimension.
    let bi_fit = |dims: &[usize]| {
        let mut v: Vec<f64> = rows
            .iter()
            .filter(|r| r.5[2].is_finite() && dims.contains(&r.1))
            .map(|r| r.5[2] * 1e9 / (r.2 as f64 * (r.2 as f64).log2().powi(r.1 as i32 - 1)))
            .collect();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(1.0)
    };
    let (b2, b3) = (bi_fit(&[1, 2]), bi_fit(&[3]));
    println!("## Auto calibration\n");
    println!(
        "least squares: SAP {sa:.1}/box + {sb:.3}/candidate, grid {ga:.1}/box + {gb:.3}/candidate, \
         box-intersect {b2:.2}/(box log n) in 2D, {b3:.2}/(box log^2 n) in 3D"
    );
    // The cost of each algorithm for a case, and the model's pick.
    let pick = |k: &[f64; 6], dim: usize, n: usize, cs: f64, cg: f64| {
        let nf = n as f64;
        let bi = if dim <= 2 { k[4] } else { k[5] };
        let cost = [k[0] * nf + k[1] * cs, k[2] * nf + k[3] * cg, bi * nf * nf.log2().powi(dim as i32 - 1)];
        (0..3).min_by(|&a, &b| cost[a].total_cmp(&cost[b])).unwrap()
    };
    // The model is an approximation: tune the fitted constants for the
    // choice itself, minimising the worst (then the mean) ratio of the
    // pick's time to the best.
    let score = |k: &[f64; 6]| {
        let (mut worst, mut sum) = (1.0f64, 0.0);
        for (_, dim, n, cs, cg, t) in &rows {
            let best = t.iter().copied().fold(f64::INFINITY, f64::min);
            let ratio = t[pick(k, *dim, *n, *cs, *cg)] / best;
            worst = worst.max(ratio);
            sum += ratio.ln();
        }
        (worst, sum / rows.len() as f64)
    };
    let base = [sa, sb, ga, gb, b2, b3];
    let steps = [0.35, 0.5, 0.7, 1.0, 1.4, 2.0, 2.8];
    let mut best = (base, score(&base));
    let mut m = [0usize; 6];
    'all: loop {
        let k: [f64; 6] = core::array::from_fn(|i| base[i] * steps[m[i]]);
        let sc = score(&k);
        if sc < best.1 {
            best = (k, sc);
        }
        // The next combination of steps (an odometer over the six).
        for d in m.iter_mut() {
            *d += 1;
            if *d < steps.len() {
                continue 'all;
            }
            *d = 0;
        }
        break;
    }
    let k = best.0;
    println!(
        "tuned for the choice: SAP_PER_BOX = {:.1}, SAP_PER_CANDIDATE = {:.3}, GRID_PER_BOX = {:.1}, \
         GRID_PER_CANDIDATE = {:.3}, BI_PER_BOX_LOG = [{:.2}, {:.2}] (2D, 3D)\n",
        k[0], k[1], k[2], k[3], k[4], k[5]
    );
    println!(
        "| scene | D | n | sap | grid | box-intersect | model picks | / best |\n|---|---|---|---|---|---|---|---|"
    );
    let mut worst: f64 = 1.0;
    for (scene, dim, n, cs, cg, t) in &rows {
        let pick = pick(&k, *dim, *n, *cs, *cg);
        let best = t.iter().copied().fold(f64::INFINITY, f64::min);
        let ratio = t[pick] / best;
        worst = worst.max(ratio);
        let f = |x: f64| if x.is_finite() { ms(x) } else { "skipped".into() };
        println!(
            "| {scene} | {dim} | {n} | {} | {} | {} | {} | {ratio:.2} |",
            f(t[0]),
            f(t[1]),
            f(t[2]),
            ["sort-and-sweep", "grid", "box-intersect"][pick]
        );
    }
    println!("\nworst ratio of the model's pick to the best: {worst:.2}");
    // How this build's `Auto` picks (its compiled constants, for the SIMD
    // level it runs), where the measurements say what it picked.
    let mine: Vec<f64> = rows
        .iter()
        .zip(&built)
        .filter_map(|(r, b)| b.map(|k| r.5[k] / r.5.iter().copied().fold(f64::INFINITY, f64::min)))
        .collect();
    if !mine.is_empty() {
        let w = mine.iter().copied().fold(1.0, f64::max);
        let g = (mine.iter().map(|x| x.ln()).sum::<f64>() / mine.len() as f64).exp();
        println!("this build's Auto: worst ratio {w:.2}, geometric mean {g:.3}, over {} cases", mine.len());
    }
}

/// Medians of sort-and-sweep, grid and box-intersect; +inf for a run that
/// would take too long (a sweep over a quadratic number of candidates).
fn time3<S: Scalar, const D: usize>(r: &Runner, b: &[Aabb<S, D>]) -> [f64; 3] {
    let stats = broadphase::auto_stats(b);
    let algs = [Algorithm::SortAndSweep, Algorithm::Grid, Algorithm::BoxIntersect];
    let light: Vec<usize> = (0..3)
        .filter(|&k| match algs[k] {
            Algorithm::SortAndSweep => stats.sweep_candidates <= 3e9,
            Algorithm::Grid => stats.grid_candidates <= 3e9,
            _ => true,
        })
        .collect();
    // Raced together, run by run, so that a drift of the machine's speed
    // reaches all three alike (one at a time, the medians of a case moved
    // by 2x from one calibration to the next).
    let mut runs: Vec<_> = light
        .iter()
        .map(|&k| {
            let mut f = ours::<S, D>(algs[k], false);
            move || f(b)
        })
        .collect();
    let mut refs: Vec<&mut dyn FnMut() -> usize> = runs.iter_mut().map(|f| f as _).collect();
    let times = r.race(&mut refs);
    let mut t = [f64::INFINITY; 3];
    for (&k, (time, _)) in light.iter().zip(times) {
        t[k] = time;
    }
    t
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    // `--only uniform,2d,textbook,scenes,threads,memory`: those sections alone.
    let only: Option<Vec<String>> =
        args.iter().position(|a| a == "--only").map(|k| args[k + 1].split(',').map(str::to_owned).collect());
    let want = |name: &str| only.as_ref().is_none_or(|o| o.iter().any(|x| x == name));
    if std::env::args().any(|a| a == "--calibrate") {
        return calibrate(quick);
    }
    let big = if quick { 200_000 } else { 1_000_000 };
    let r = Runner { repeat: if quick { 3 } else { 7 } };
    println!("# broadphase targets ({} threads available)\n", rayon::current_num_threads());

    if want("uniform") {
        // 1. Uniform 3D: Auto against parry3d's Bvh and against a radix sort.
        println!("## Uniform 3D (unit cubes, L^3 = 8n/3), single thread\n");
        println!("| n | parry3d Bvh | Auto f32 | Auto f64 | Auto f32 fresh | radix sort of n keys | parry / Auto f32 | Auto f32 / sort |");
        println!("|---|---|---|---|---|---|---|---|");
        for n in [10_000, 100_000, big] {
            let b64 = Scene::Uniform.generate::<3>(n, 1);
            let b32 = to_f32(&b64);
            let mut out = Vec::new();
            let mut parry = || {
                out.clear();
                broadphase_bench::parry3d_pairs(&b32, &mut out);
                out.len()
            };
            let mut a32 = ours::<f32, 3>(Algorithm::Auto, false);
            let mut a64 = ours::<f64, 3>(Algorithm::Auto, false);
            let fresh = PairFinder::new(Algorithm::Auto);
            let keys = keys_of(&b32);
            let (mut items, mut scratch) = (keys.clone(), Vec::new());
            let res = {
                r.race(&mut [
                    &mut parry,
                    &mut || a32(&b32),
                    &mut || a64(&b64),
                    &mut || fresh.find(&b32).unwrap().len(),
                    &mut || {
                        items.copy_from_slice(&keys);
                        broadphase_bench::radix_sort_keys(&mut items, &mut scratch);
                        items.len()
                    },
                ])
            };
            assert_eq!(res[0].1, res[1].1, "parry and broadphase disagree on the f32 boxes");
            assert!(items.windows(2).all(|w| w[0] >> 32 <= w[1] >> 32), "the radix sort left keys out of order");
            println!(
                "| {n} | {} | {} | {} | {} | {} | {:.1}x | {:.1}x |",
                ms(res[0].0),
                ms(res[1].0),
                ms(res[2].0),
                ms(res[3].0),
                ms(res[4].0),
                res[0].0 / res[1].0,
                res[1].0 / res[4].0
            );
        }
    }
    if want("2d") {
        // 2. Uniform 2D at the large size against broccoli.
        println!("\n## Uniform 2D (L^2 = 4n/3), n = {big}, single thread\n");
        {
            let b64 = Scene::Uniform.generate::<2>(big, 1);
            let b32 = to_f32(&b64);
            let mut out = Vec::new();
            let mut out2 = Vec::new();
            let mut a32 = ours::<f32, 2>(Algorithm::Auto, false);
            let res = {
                r.race(&mut [
                    &mut || {
                        out.clear();
                        broadphase_bench::broccoli_pairs(&b32, &mut out);
                        out.len()
                    },
                    &mut || {
                        out2.clear();
                        broadphase_bench::parry2d_pairs(&b32, &mut out2);
                        out2.len()
                    },
                    &mut || a32(&b32),
                ])
            };
            println!("| broccoli | parry2d | Auto f32 | broccoli / Auto | pairs |\n|---|---|---|---|---|");
            println!(
                "| {} | {} | {} | {:.1}x | {} (broccoli {}, parry2d {}) |",
                ms(res[0].0),
                ms(res[1].0),
                ms(res[2].0),
                res[0].0 / res[2].0,
                res[2].1,
                res[0].1,
                res[1].1
            );
        }
    }
    if want("textbook") {
        // 3. Sort-and-sweep against the textbook version.
        println!(
            "\n## SortAndSweep against the textbook sweep (comparison sort, full-box tests, pushes), uniform 3D\n"
        );
        println!("| n | scalar | textbook | SortAndSweep | ratio |\n|---|---|---|---|---|");
        for n in [10_000, 100_000] {
            let b = Scene::Uniform.generate::<3>(n, 1);
            let mut sap = ours::<f64, 3>(Algorithm::SortAndSweep, false);
            let res = r.race(&mut [&mut || textbook_sort_and_sweep(&b).len(), &mut || sap(&b)]);
            assert_eq!(res[0].1, res[1].1);
            println!("| {n} | f64 | {} | {} | {:.1}x |", ms(res[0].0), ms(res[1].0), res[0].0 / res[1].0);
            // Both in f32 too (the scalar of game engines): the SIMD sweep
            // tests twice the lanes per instruction, the textbook one gains
            // little.
            let b = to_f32(&b);
            let mut sap = ours::<f32, 3>(Algorithm::SortAndSweep, false);
            let res = r.race(&mut [&mut || textbook_sort_and_sweep(&b).len(), &mut || sap(&b)]);
            assert_eq!(res[0].1, res[1].1);
            println!("| {n} | f32 | {} | {} | {:.1}x |", ms(res[0].0), ms(res[1].0), res[0].0 / res[1].0);
        }
    }
    if want("scenes") {
        // 4. Every scene at 1e5, 3D and 2D: each algorithm, Auto against the best.
        scenes_table::<3>(quick);
        scenes_table::<2>(quick);
    }
    if want("scenes") {
        // 5. Sticks: box-intersect against sort-and-sweep.
        println!("\n(sticks: box-intersect / sort-and-sweep ratio is in the table above)");
    }

    if want("threads") {
        // 6. Threads.
        println!(
            "\n## Threads: 1 against {} at n = {big}, uniform, f64 unless stated\n",
            rayon::current_num_threads().max(2)
        );
        println!("Blocks: each form run three times in a row, the first run of a block not counted. Alternated: one run of each in turn.\n");
        println!("| algorithm | 1 thread (blocks) | threaded (blocks) | speed-up (blocks) | 1 thread (alternated) | threaded (alternated) | speed-up (alternated) |");
        println!("|---|---|---|---|---|---|---|");
        let b = Scene::Uniform.generate::<3>(big, 1);
        let b2 = Scene::Uniform.generate::<2>(big, 1);
        threads_row(&r, "grid (3D)", Algorithm::Grid, &b);
        threads_row(&r, "sort-and-sweep (2D)", Algorithm::SortAndSweep, &b2);
        // The grid by rows (`f32` in 3D, and 2D): the other forms of the
        // grid's threaded build.
        threads_row(&r, "grid (3D f32, by rows)", Algorithm::Grid, &to_f32(&b));
        threads_row(&r, "grid (2D f32, by rows)", Algorithm::Grid, &to_f32(&b2));
        threads_row(&r, "grid (2D f64, by rows)", Algorithm::Grid, &b2);
    }
    if want("memory") {
        // 7. Memory.
        println!("\n## Peak memory beyond input and output, n = {big}, uniform 3D\n");
        println!("| search | bytes per box |\n|---|---|");
        for (name, alg) in
            [("grid", Algorithm::Grid), ("sort-and-sweep", Algorithm::SortAndSweep), ("auto", Algorithm::Auto)]
        {
            let mut out: Vec<Pair> = Vec::with_capacity(2 * big);
            let b64 = &Scene::Uniform.generate::<3>(big, 1);
            let base = alloc::reset_peak();
            let finder = PairFinder::new(alg);
            let mut ws = Workspace::new();
            finder.find_with(&mut ws, b64, &mut out).unwrap();
            let extra = alloc::peak() - base;
            drop(ws);
            let b32 = to_f32(b64);
            out.clear();
            let base = alloc::reset_peak();
            let mut ws = Workspace::new();
            finder.find_with(&mut ws, &b32, &mut out).unwrap();
            let extra32 = alloc::peak() - base;
            println!("| {name} | {:.1} (f64), {:.1} (f32) |", extra as f64 / big as f64, extra32 as f64 / big as f64);
        }
    }
}

/// Every scene at 1e5 in `D` dimensions (`f64`, one thread): each
/// algorithm, and `Auto` against the best of them.
fn scenes_table<const D: usize>(quick: bool) {
    let n = 100_000;
    println!("\n## Every scene, {D}D f64, n = {n}, single thread: Auto against the best\n");
    println!("| scene | sort-and-sweep | grid | bvh | box-intersect | auto (chose) | auto / best |\n|---|---|---|---|---|---|---|");
    for scene in Scene::ALL {
        let b = scene.generate::<D>(n, 1);
        let mut runs: Vec<Box<dyn FnMut() -> usize>> = Vec::new();
        for alg in [Algorithm::SortAndSweep, Algorithm::Grid, Algorithm::Bvh, Algorithm::BoxIntersect, Algorithm::Auto]
        {
            let mut f = ours::<f64, D>(alg, false);
            let bb = b.clone();
            runs.push(Box::new(move || f(&bb)));
        }
        let chose = match PairFinder::new(Algorithm::Auto).find_into(&b, &mut Vec::new()).unwrap().algorithm {
            // Auto reports itself when it split the boxes by shape.
            Algorithm::Auto => "split by shape".to_string(),
            a => a.to_string(),
        };
        let mut refs: Vec<&mut dyn FnMut() -> usize> =
            runs.iter_mut().map(|f| &mut **f as &mut dyn FnMut() -> usize).collect();
        let rr = Runner { repeat: if quick { 1 } else { 3 } };
        let res = rr.race(&mut refs);
        assert!(res.windows(2).all(|w| w[0].1 == w[1].1), "{scene}: algorithms disagree");
        let best = res[..4].iter().map(|x| x.0).fold(f64::INFINITY, f64::min);
        println!(
            "| {scene} | {} | {} | {} | {} | {} ({chose}) | {:.2} |",
            ms(res[0].0),
            ms(res[1].0),
            ms(res[2].0),
            ms(res[3].0),
            ms(res[4].0),
            res[4].0 / best
        );
    }
}
