//! Why the threads table times in blocks: a threaded search straight after
//! a single-thread one runs slower on the measuring VM, and a thread that
//! keeps the second vCPU busy during the single-thread run takes that away.
//!
//! `cargo run --release -p broadphase-bench --example idle_vcpu [-- N ROUNDS]`
//!
//! Uniform 3D `f32` boxes (`Auto`, as the threads table's "grid by rows"
//! row), four ways, medians of the threaded runs:
//! - blocks: threaded runs back to back;
//! - alternated: one thread, then threaded, in turn;
//! - alternated, busy: the same, with a thread of this program spinning
//!   during each single-thread run (it sleeps otherwise);
//! - alternated, pause: the same, with a 20 ms sleep after each
//!   single-thread run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use broadphase::{Algorithm, Pair, PairFinder, Workspace};
use broadphase_scenes::{to_f32, Scene};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n = args.next().map_or(1_000_000, |s| s.parse::<f64>().expect("N") as usize);
    let rounds = args.next().map_or(20, |s| s.parse().expect("ROUNDS"));
    let boxes = to_f32(&Scene::Uniform.generate::<3>(n, 1));
    let (one, many) =
        (PairFinder::new(Algorithm::Auto).parallel(false), PairFinder::new(Algorithm::Auto).parallel(true));
    let (mut w1, mut w2) = (Workspace::new(), Workspace::new());
    let (mut o1, mut o2): (Vec<Pair>, Vec<Pair>) = (Vec::new(), Vec::new());
    let busy = Arc::new(AtomicBool::new(false));
    // The spinner parks between single-thread runs (no periodic wake-ups).
    let spinner = {
        let busy = busy.clone();
        std::thread::spawn(move || loop {
            std::thread::park();
            while busy.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        })
    };
    let run = |f: &PairFinder, w: &mut Workspace<f32>, o: &mut Vec<Pair>| {
        o.clear();
        let t = Instant::now();
        f.find_with(w, &boxes, o).unwrap();
        t.elapsed().as_secs_f64() * 1e3
    };
    run(&one, &mut w1, &mut o1);
    run(&many, &mut w2, &mut o2);
    assert_eq!(o1, o2);
    let blocks: Vec<f64> = (0..rounds).map(|_| run(&many, &mut w2, &mut o2)).collect();
    let single: Vec<f64> = (0..rounds).map(|_| run(&one, &mut w1, &mut o1)).collect();
    println!("n = {n}: one thread {:.2} ms (back to back)", median(single));
    println!("threaded, blocks              {:.2} ms", median(blocks));
    for (label, spin, pause) in
        [("alternated", false, 0), ("alternated, busy", true, 0), ("alternated, pause", false, 20)]
    {
        let mut t = Vec::new();
        for _ in 0..rounds {
            if spin {
                busy.store(true, Ordering::Relaxed);
                spinner.thread().unpark();
            }
            run(&one, &mut w1, &mut o1);
            busy.store(false, Ordering::Relaxed);
            if pause > 0 {
                std::thread::sleep(Duration::from_millis(pause));
            }
            t.push(run(&many, &mut w2, &mut o2));
        }
        println!("threaded, {label:20}{:.2} ms", median(t));
    }
}
