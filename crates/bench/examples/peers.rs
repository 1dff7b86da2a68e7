use broadphase::{Algorithm, PairFinder};
use broadphase_scenes::{to_f32, Scene};
use std::time::Instant;
fn main() {
    let n: usize = std::env::args().nth(1).map(|s| s.parse().unwrap()).unwrap_or(100_000);
    let b3 = to_f32(&Scene::Uniform.generate::<3>(n, 1));
    let b2 = to_f32(&Scene::Uniform.generate::<2>(n, 1));
    for _ in 0..3 {
        let mut out = Vec::new();
        let t = Instant::now();
        broadphase_bench::parry3d_pairs(&b3, &mut out);
        let p3 = t.elapsed();
        let np3 = out.len();
        let mut out2 = Vec::new();
        let t = Instant::now();
        broadphase_bench::parry2d_pairs(&b2, &mut out2);
        let p2 = t.elapsed();
        let mut out3 = Vec::new();
        let t = Instant::now();
        broadphase_bench::broccoli_pairs(&b2, &mut out3);
        let br = t.elapsed();
        let t = Instant::now();
        let g3 = PairFinder::new(Algorithm::Grid).find(&b3).unwrap();
        let tg3 = t.elapsed();
        let t = Instant::now();
        let g2 = PairFinder::new(Algorithm::Grid).find(&b2).unwrap();
        let tg2 = t.elapsed();
        println!("n={n} parry3d {:.2} ms ({np3})  grid3 {:.2} ms ({}) | parry2d {:.2} ms ({}) broccoli {:.2} ms ({}) grid2 {:.2} ms ({})",
          p3.as_secs_f64()*1e3, tg3.as_secs_f64()*1e3, g3.len(), p2.as_secs_f64()*1e3, out2.len(), br.as_secs_f64()*1e3, out3.len(), tg2.as_secs_f64()*1e3, g2.len());
    }
}
