//! Seeded box scenes shared by the tests, the benchmarks and the CLI.
//!
//! Every scene is a pure function of `(scene, n, seed, D)`: the same
//! arguments give the same boxes, bit for bit, on every machine. Sizes are
//! chosen so that a typical box has a few overlap partners, as in a physics
//! scene, unless the scene is about something else (touching lattices,
//! duplicates).

#![deny(missing_docs)]

use std::fmt;
use std::str::FromStr;

use broadphase::{Aabb, Pair, Scalar};
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;

pub mod motion;

/// The scenes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scene {
    /// Unit boxes, min corners uniform in a world of side `L` with
    /// `L^D = 2^D n / 3`: about 3 overlap partners per box. The reference
    /// scene of the benchmarks (in 3D: `L³ = 8n/3`).
    Uniform,
    /// Unit boxes in Gaussian clusters of about 256, cluster centres uniform
    /// in the uniform scene's world: dense spots, empty space between.
    Clustered,
    /// Cubes whose sides follow a Pareto law (α = 2, minimum 0.5, capped at
    /// a quarter of the world): many small boxes, a few huge ones over them.
    HeavyTailed,
    /// Every box has the same x-interval `[0, 1]`; the other axes are
    /// uniform with about 3 partners per box. Defeats a sweep along x.
    SharedX,
    /// Long thin boxes in D families, each long along one axis and of unit
    /// thickness across: every axis projection is dense, true overlaps are
    /// few. Defeats any single-axis sweep. In 3D a stick is half the world
    /// long (two sticks meet only if two thin coordinates coincide); in 2D
    /// perpendicular sticks meet whenever their long ranges cross, so they
    /// are `2.5 / sqrt(n)` of the world long, which keeps a few partners per
    /// stick.
    Sticks,
    /// The k×k(×k) lattice of touching unit cubes (seed 001's 10×10×10 cube
    /// for n = 1000): every face, edge and corner contact is a pair.
    /// `n` is rounded to a D-th power.
    Lattice,
    /// A guillotine partition of a box into `n` boxes (repeated random cuts
    /// of the largest piece): they tile space, neighbours share exact faces.
    Guillotine,
    /// Points, segments and flat boxes on an integer lattice: zero-size
    /// boxes that touch.
    Degenerate,
    /// Uniform boxes, each repeated 4 times (identical copies overlap).
    Duplicates,
}

impl Scene {
    /// Every scene.
    pub const ALL: [Scene; 9] = [
        Scene::Uniform,
        Scene::Clustered,
        Scene::HeavyTailed,
        Scene::SharedX,
        Scene::Sticks,
        Scene::Lattice,
        Scene::Guillotine,
        Scene::Degenerate,
        Scene::Duplicates,
    ];

    /// The scene's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Scene::Uniform => "uniform",
            Scene::Clustered => "clustered",
            Scene::HeavyTailed => "heavy-tailed",
            Scene::SharedX => "shared-x",
            Scene::Sticks => "sticks",
            Scene::Lattice => "lattice",
            Scene::Guillotine => "guillotine",
            Scene::Degenerate => "degenerate",
            Scene::Duplicates => "duplicates",
        }
    }

    /// The scene's boxes in `D` dimensions (`D >= 1`), `f64`.
    pub fn generate<const D: usize>(self, n: usize, seed: u64) -> Vec<Aabb<f64, D>> {
        let mut rng = Pcg64::seed_from_u64(seed ^ (self as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let world = uniform_side(n, D);
        match self {
            Scene::Uniform => (0..n).map(|_| cube(uniform_point(&mut rng, world - 1.0), 1.0)).collect(),
            Scene::Clustered => clustered(&mut rng, n, world),
            Scene::HeavyTailed => (0..n)
                .map(|_| {
                    let u: f64 = 1.0 - rng.random::<f64>(); // (0, 1]
                    let side = (0.5 / u.sqrt()).min(world / 4.0);
                    cube(uniform_point(&mut rng, world), side)
                })
                .collect(),
            Scene::SharedX => {
                let side = ((2f64.powi(D as i32 - 1) * n as f64) / 3.0).powf(1.0 / (D as f64 - 1.0).max(1.0));
                (0..n)
                    .map(|_| {
                        let mut p = uniform_point::<D>(&mut rng, side - 1.0);
                        p[0] = 0.0;
                        cube(p, 1.0)
                    })
                    .collect()
            }
            Scene::Sticks => sticks(&mut rng, n),
            Scene::Lattice => lattice(n),
            Scene::Guillotine => guillotine(&mut rng, n, world),
            Scene::Degenerate => degenerate(&mut rng, n),
            Scene::Duplicates => {
                let distinct = n.div_ceil(4);
                let base = Scene::Uniform.generate::<D>(distinct, seed);
                base.iter().flat_map(|b| [*b; 4]).take(n).collect()
            }
        }
    }
}

impl fmt::Display for Scene {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A scene name that is not one of [`Scene::ALL`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownScene(pub String);

impl fmt::Display for UnknownScene {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = Scene::ALL.iter().map(|s| s.name()).collect();
        write!(f, "unknown scene {:?} (expected one of: {})", self.0, names.join(", "))
    }
}

impl std::error::Error for UnknownScene {}

impl FromStr for Scene {
    type Err = UnknownScene;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Scene::ALL.into_iter().find(|x| x.name() == s).ok_or_else(|| UnknownScene(s.to_string()))
    }
}

/// The side `L` of the uniform scene's world: `L^D = 2^D n / 3`, so that a
/// unit box meets about 3 others.
pub fn uniform_side(n: usize, dim: usize) -> f64 {
    (2f64.powi(dim as i32) * n.max(1) as f64 / 3.0).powf(1.0 / dim as f64)
}

/// Converts boxes to `f32`, rounding the min corner down and the max corner
/// up so that no box shrinks (the pair set may grow by near-touches).
pub fn to_f32<const D: usize>(boxes: &[Aabb<f64, D>]) -> Vec<Aabb<f32, D>> {
    boxes
        .iter()
        .map(|b| {
            let lo = b.min().map(down_f32);
            let hi = b.max().map(up_f32);
            Aabb::new(lo, hi).expect("rounding outward keeps a finite box valid")
        })
        .collect()
}

fn down_f32(v: f64) -> f32 {
    let f = <f32 as Scalar>::from_f64(v);
    if (f as f64) > v {
        f.next_down()
    } else {
        f
    }
}

fn up_f32(v: f64) -> f32 {
    let f = <f32 as Scalar>::from_f64(v);
    if (f as f64) < v {
        f.next_up()
    } else {
        f
    }
}

fn uniform_point<const D: usize>(rng: &mut Pcg64, side: f64) -> [f64; D] {
    core::array::from_fn(|_| rng.random::<f64>() * side.max(0.0))
}

fn cube<const D: usize>(min: [f64; D], side: f64) -> Aabb<f64, D> {
    Aabb::new(min, min.map(|v| v + side)).expect("finite generated box")
}

/// A standard normal sample (Box–Muller).
fn normal(rng: &mut Pcg64) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

fn clustered<const D: usize>(rng: &mut Pcg64, n: usize, world: f64) -> Vec<Aabb<f64, D>> {
    const PER_CLUSTER: usize = 256;
    let clusters = n.div_ceil(PER_CLUSTER).max(1);
    let centres: Vec<[f64; D]> = (0..clusters).map(|_| uniform_point(rng, world)).collect();
    // Spread so that a cluster of 256 unit boxes gives each about 8 partners.
    let sigma = 0.5 * (PER_CLUSTER as f64 * 2f64.powi(D as i32) / 8.0).powf(1.0 / D as f64) / 2.5;
    (0..n)
        .map(|i| {
            let c = centres[i % clusters];
            let p = core::array::from_fn(|k| c[k] + sigma * normal(rng));
            cube(p, 1.0)
        })
        .collect()
}

fn sticks<const D: usize>(rng: &mut Pcg64, n: usize) -> Vec<Aabb<f64, D>> {
    // In 3D a stick is half the world long and a pair of sticks from
    // different families overlaps with probability about 1 / (2L) (one
    // shared thin axis must coincide): L = n / 9 gives a few partners per
    // stick. In 2D two perpendicular sticks overlap when their long ranges
    // cross, with probability (length / L)^2: the length shrinks with n.
    let world = (n as f64 / 9.0).max(8.0);
    let fraction = if D >= 3 { 0.5 } else { (2.5 / (n.max(1) as f64).sqrt()).min(0.5) };
    let length = world * fraction;
    (0..n)
        .map(|i| {
            let long = i % D;
            let mut lo = [0.0; D];
            let mut hi = [0.0; D];
            for k in 0..D {
                if k == long {
                    lo[k] = rng.random::<f64>() * (world - length);
                    hi[k] = lo[k] + length;
                } else {
                    lo[k] = rng.random::<f64>() * (world - 1.0);
                    hi[k] = lo[k] + 1.0;
                }
            }
            Aabb::new(lo, hi).expect("finite generated box")
        })
        .collect()
}

fn lattice<const D: usize>(n: usize) -> Vec<Aabb<f64, D>> {
    if n == 0 {
        return Vec::new();
    }
    let k = ((n.max(1) as f64).powf(1.0 / D as f64).round() as usize).max(1);
    let total = k.pow(D as u32);
    (0..total)
        .map(|mut i| {
            let p = core::array::from_fn(|_| {
                let c = (i % k) as f64;
                i /= k;
                c
            });
            cube(p, 1.0)
        })
        .collect()
}

fn guillotine<const D: usize>(rng: &mut Pcg64, n: usize, world: f64) -> Vec<Aabb<f64, D>> {
    use std::collections::BinaryHeap;
    if n == 0 {
        return Vec::new();
    }
    let mut pieces: Vec<([f64; D], [f64; D])> = vec![([0.0; D], [world.max(1.0); D])];
    // The largest side of each piece, as sortable bits (positive floats order
    // like their bit patterns), with the piece's index as a tie-break.
    let largest = |lo: &[f64; D], hi: &[f64; D]| {
        (0..D).map(|k| (hi[k] - lo[k], k)).fold((f64::NEG_INFINITY, 0), |a, b| if b.0 > a.0 { b } else { a })
    };
    let mut heap = BinaryHeap::new();
    heap.push((largest(&pieces[0].0, &pieces[0].1).0.to_bits(), usize::MAX));
    // Cut the piece with the largest side, across that side, at a random
    // fraction in [1/4, 3/4] (a multiple of 1/64): both halves share the
    // exact cut value, so neighbours touch exactly.
    while pieces.len() < n {
        let (_, rev) = heap.pop().expect("a piece is always there");
        let idx = usize::MAX - rev;
        let (lo, hi) = pieces[idx];
        let axis = largest(&lo, &hi).1;
        let frac = (16 + rng.random_range(0..33u32)) as f64 / 64.0;
        let cut = lo[axis] + (hi[axis] - lo[axis]) * frac;
        let mut left_hi = hi;
        left_hi[axis] = cut;
        let mut right_lo = lo;
        right_lo[axis] = cut;
        pieces[idx] = (lo, left_hi);
        pieces.push((right_lo, hi));
        for i in [idx, pieces.len() - 1] {
            heap.push((largest(&pieces[i].0, &pieces[i].1).0.to_bits(), usize::MAX - i));
        }
    }
    pieces.into_iter().map(|(lo, hi)| Aabb::new(lo, hi).expect("finite generated box")).collect()
}

fn degenerate<const D: usize>(rng: &mut Pcg64, n: usize) -> Vec<Aabb<f64, D>> {
    // Integer corners in a small lattice, sides of 0 or 1 per axis: points,
    // segments and flat boxes that touch exactly.
    let side = ((n.max(1) as f64) / 2.0).powf(1.0 / D as f64).ceil().max(1.0) as u32;
    (0..n)
        .map(|_| {
            let lo: [f64; D] = core::array::from_fn(|_| rng.random_range(0..side) as f64);
            let hi = core::array::from_fn(|k| lo[k] + if rng.random_range(0..3u32) == 0 { 1.0 } else { 0.0 });
            Aabb::new(lo, hi).expect("finite generated box")
        })
        .collect()
}

/// Sort-and-sweep as the textbooks write it: a comparison sort of the boxes
/// by their start on axis 0, then for each box a scan of the later ones that
/// start before it ends, testing the full box and pushing each pair. The
/// baseline the benchmarks compare the tuned sweep against, and an
/// independent reference for inputs too large for brute force.
pub fn textbook_sort_and_sweep<S: Scalar, const D: usize>(boxes: &[Aabb<S, D>]) -> Vec<Pair> {
    let mut order: Vec<usize> = (0..boxes.len()).collect();
    order.sort_by(|&a, &b| boxes[a].min()[0].partial_cmp(&boxes[b].min()[0]).expect("boxes are never NaN"));
    let mut pairs = Vec::new();
    for (k, &i) in order.iter().enumerate() {
        for &j in &order[k + 1..] {
            if boxes[j].min()[0] > boxes[i].max()[0] {
                break;
            }
            if boxes[i].overlaps(&boxes[j]) {
                pairs.push(Pair::new(i as u32, j as u32).expect("distinct boxes"));
            }
        }
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenes_are_deterministic_and_sized() {
        for scene in Scene::ALL {
            let a = scene.generate::<3>(1000, 7);
            let b = scene.generate::<3>(1000, 7);
            assert_eq!(a, b, "{scene}");
            assert_eq!(a.len(), 1000, "{scene}");
            if scene != Scene::Lattice {
                assert_ne!(a, scene.generate::<3>(1000, 8), "{scene}");
            }
            assert_eq!(scene.generate::<2>(0, 1).len(), 0, "{scene}");
        }
    }

    #[test]
    fn names_round_trip() {
        for scene in Scene::ALL {
            assert_eq!(scene.name().parse::<Scene>(), Ok(scene));
        }
        assert!("nope".parse::<Scene>().is_err());
    }

    #[test]
    fn f32_conversion_never_shrinks() {
        let boxes = Scene::HeavyTailed.generate::<2>(500, 3);
        for (a, b) in boxes.iter().zip(to_f32(&boxes)) {
            for k in 0..2 {
                assert!((b.min()[k] as f64) <= a.min()[k] && (b.max()[k] as f64) >= a.max()[k]);
            }
        }
    }
}
