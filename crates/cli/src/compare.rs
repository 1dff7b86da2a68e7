//! `broadphase compare`: every algorithm on generated scenes, timed, with a
//! check that they all report the same pairs.

use std::time::Instant;

use broadphase::{Aabb, Algorithm, Pair, PairFinder, Scalar, Workspace};
use broadphase_scenes::{to_f32, Scene};

use crate::{with_threads, CompareArgs};

/// Brute force is left out above this many boxes (it would take minutes).
const BRUTE_MAX: usize = 20_000;

pub fn run(a: &CompareArgs) -> Result<(), String> {
    let scenes: Vec<Scene> = if a.scene.iter().any(|s| s == "all") {
        Scene::ALL.to_vec()
    } else {
        a.scene.iter().map(|s| s.parse::<Scene>().map_err(|e| e.to_string())).collect::<Result<_, _>>()?
    };
    let algorithms: Vec<Algorithm> = if a.algorithm.iter().any(|s| s == "all") {
        Algorithm::ALL.into_iter().filter(|&x| x != Algorithm::BruteForce || a.n <= BRUTE_MAX).collect()
    } else {
        a.algorithm.iter().map(|s| s.parse::<Algorithm>().map_err(|e| e.to_string())).collect::<Result<_, _>>()?
    };
    let mut all_agree = true;
    for scene in scenes {
        let agree = match (a.dim, a.f32) {
            (2, false) => one(a, scene, &scene.generate::<2>(a.n, a.seed), &algorithms)?,
            (2, true) => one(a, scene, &to_f32(&scene.generate::<2>(a.n, a.seed)), &algorithms)?,
            (_, false) => one(a, scene, &scene.generate::<3>(a.n, a.seed), &algorithms)?,
            (_, true) => one(a, scene, &to_f32(&scene.generate::<3>(a.n, a.seed)), &algorithms)?,
        };
        all_agree &= agree;
    }
    if all_agree {
        Ok(())
    } else {
        Err("the algorithms disagree (see above)".into())
    }
}

/// An order-independent hash of a pair set.
fn pair_hash(pairs: &[Pair]) -> u64 {
    pairs.iter().fold(0u64, |h, p| {
        let mut z = ((p.a() as u64) << 32 | p.b() as u64).wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        h.wrapping_add(z ^ (z >> 31))
    })
}

fn one<S: Scalar, const D: usize>(
    a: &CompareArgs,
    scene: Scene,
    boxes: &[Aabb<S, D>],
    algorithms: &[Algorithm],
) -> Result<bool, String> {
    println!(
        "scene {scene}, {D}D, {}, n = {}, {} thread{}, median of {}",
        if a.f32 { "f32" } else { "f64" },
        boxes.len(),
        a.threads,
        if a.threads == 1 { "" } else { "s" },
        a.repeat
    );
    println!(
        "  {:<15} {:>11} {:>9} {:>9} {:>11} {:>18}  ran",
        "algorithm", "median ms", "min ms", "ns/box", "pairs", "pair-set hash"
    );
    let mut rows = Vec::new();
    for &alg in algorithms {
        let finder = PairFinder::new(alg).parallel(a.threads != 1);
        let mut times = Vec::new();
        let mut result = None;
        // One workspace and output buffer per algorithm, reused across the
        // runs, as a caller searching every frame would.
        let mut ws = Workspace::new();
        let mut out = Vec::new();
        // One pool for all the runs of an algorithm (see `with_threads`).
        let runs = with_threads(a.threads, || {
            (0..a.repeat)
                .map(|_| {
                    out.clear();
                    let t = Instant::now();
                    let r = finder.find_with(&mut ws, boxes, &mut out);
                    (t.elapsed().as_secs_f64(), r)
                })
                .collect::<Vec<_>>()
        })?;
        for (t, r) in runs {
            times.push(t);
            result = Some(r.map_err(|e| e.to_string())?);
        }
        times.sort_by(f64::total_cmp);
        let report = result.expect("repeat >= 1");
        let pairs = out;
        let median = times[times.len() / 2];
        let hash = pair_hash(&pairs);
        println!(
            "  {:<15} {:>11.3} {:>9.3} {:>9.1} {:>11} {:>#18x}  {}",
            alg.name(),
            median * 1e3,
            times[0] * 1e3,
            median * 1e9 / boxes.len().max(1) as f64,
            pairs.len(),
            hash,
            report.algorithm
        );
        rows.push((alg, median, pairs.len(), hash));
    }
    let agree = rows.windows(2).all(|w| (w[0].2, w[0].3) == (w[1].2, w[1].3));
    if let Some(best) = rows.iter().min_by(|x, y| x.1.total_cmp(&y.1)) {
        if agree {
            println!(
                "  all {} algorithms found the same {} pairs; fastest: {} ({:.3} ms)\n",
                rows.len(),
                best.2,
                best.0,
                best.1 * 1e3
            );
        } else {
            println!("  MISMATCH: the algorithms found different pair sets\n");
        }
    }
    Ok(agree)
}
