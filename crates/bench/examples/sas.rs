use broadphase::{Aabb, Algorithm, PairFinder, Scalar, Workspace};
use broadphase_scenes::{to_f32, Scene};
use std::time::Instant;
fn run<S: Scalar>(b: &[Aabb<S, 3>], alg: Algorithm, reps: usize) {
    let f = PairFinder::new(alg).parallel(std::env::var_os("PAR").is_some());
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
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let n = a[1].parse::<f64>().unwrap() as usize;
    let reps: usize = a[2].parse().unwrap();
    let alg = match a[3].as_str() {
        "auto" => Algorithm::Auto,
        "sas" => Algorithm::SortAndSweep,
        "grid" => Algorithm::Grid,
        _ => panic!(),
    };
    let scene: Scene = a.get(5).map_or(Scene::Uniform, |x| x.parse().unwrap());
    let b64 = scene.generate::<3>(n, 1);
    if a[4] == "f32" {
        run(&to_f32(&b64), alg, reps)
    } else {
        run(&b64, alg, reps)
    }
}
