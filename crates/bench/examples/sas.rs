use broadphase::{Aabb, Algorithm, PairFinder, Scalar, Workspace};
use broadphase_scenes::{to_f32, Scene};
use std::time::Instant;
fn run<S: Scalar, const D: usize>(b: &[Aabb<S, D>], alg: Algorithm, reps: usize) {
    let f = PairFinder::new(alg);
    let mut ws = Workspace::new();
    let mut out = Vec::new();
    let mut all = Vec::new();
    for _ in 0..reps {
        out.clear();
        let t = Instant::now();
        f.find_with(&mut ws, b, &mut out).unwrap();
        all.push(t.elapsed().as_secs_f64());
    }
    all.sort_by(f64::total_cmp);
    println!(
        "n {} pairs {} best {:.4} ms p25 {:.4} median {:.4} ms",
        b.len(),
        out.len(),
        all[0] * 1e3,
        all[all.len() / 4] * 1e3,
        all[all.len() / 2] * 1e3
    );
}
fn go<const D: usize>(n: usize, reps: usize, alg: Algorithm, f32: bool) {
    let sc = match std::env::var("SCENE").as_deref() {
        Ok("sticks") => Scene::Sticks,
        Ok("clustered") => Scene::Clustered,
        Ok("duplicates") => Scene::Duplicates,
        Ok("heavy") => Scene::HeavyTailed,
        _ => Scene::Uniform,
    };
    let mut b64 = sc.generate::<D>(n, 1);
    if let Ok(v) = std::env::var("COPIES") {
        // COPIES=apart:K or adjacent:K: n boxes, each of n/K distinct ones K times.
        let (how, k) = v.split_once(':').unwrap();
        let k: usize = k.parse().unwrap();
        let base = Scene::Uniform.generate::<D>(n.div_ceil(k), 1);
        b64 = if how == "apart" {
            (0..k).flat_map(|_| base.iter().copied()).take(n).collect()
        } else {
            base.iter().flat_map(|b| std::iter::repeat_n(*b, k)).take(n).collect()
        };
    }
    if f32 {
        run(&to_f32(&b64), alg, reps)
    } else {
        run(&b64, alg, reps)
    }
}
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let n = a[1].parse::<f64>().unwrap() as usize;
    let reps: usize = a[2].parse().unwrap();
    let alg = match a[3].as_str() {
        "auto" => Algorithm::Auto,
        "sas" => Algorithm::SortAndSweep,
        "grid" => Algorithm::Grid,
        "bi" => Algorithm::BoxIntersect,
        _ => panic!(),
    };
    let f32 = a[4] == "f32";
    if a.get(5).map(String::as_str) == Some("2") {
        go::<2>(n, reps, alg, f32)
    } else {
        go::<3>(n, reps, alg, f32)
    }
}
