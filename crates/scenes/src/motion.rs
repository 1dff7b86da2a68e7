//! Motion models for per-frame benchmarks of persistent broad phases: which
//! boxes move each frame, and how.

use broadphase::{Aabb, Scalar};
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;

/// How the moving boxes move.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Motion {
    /// Each moving box keeps a random direction, steps `speed` per frame and
    /// bounces off the walls of the world (coherent motion).
    Steady {
        /// The share of boxes that move, in `[0, 1]`.
        fraction: f64,
        /// The step per frame, in box units.
        speed: f64,
    },
    /// Each moving box steps `speed` in a new random direction every frame
    /// (jitter: no coherence for predictions to use).
    Jitter {
        /// The share of boxes that move, in `[0, 1]`.
        fraction: f64,
        /// The step per frame.
        speed: f64,
    },
    /// Each moving box falls along the last axis at its own steady pace,
    /// between half and one and a half times `speed` per frame, and
    /// reappears at the top of the world when it has fallen through the
    /// floor (rain: coherent motion, with teleports).
    Rain {
        /// The share of boxes that move, in `[0, 1]`.
        fraction: f64,
        /// The mean fall per frame.
        speed: f64,
    },
    /// Surges: every `period`-th frame (the first included) the share
    /// `fraction` of the boxes moves as in `Steady`, on the other frames
    /// only some of those, the share `calm` of all the boxes: a world whose
    /// changes hover about a level (bursts of activity every other frame, a
    /// crowd that stops and goes), which a persistent broad phase must not
    /// answer by rebuilding its structures every burst.
    Pulse {
        /// The share of boxes that move on a busy frame, in `[0, 1]`.
        fraction: f64,
        /// The share of boxes that move on the other frames (at most
        /// `fraction`).
        calm: f64,
        /// One busy frame in this many (at least 1).
        period: u32,
        /// The step per frame.
        speed: f64,
    },
}

impl Motion {
    /// The share of boxes that move.
    pub fn fraction(&self) -> f64 {
        match *self {
            Motion::Steady { fraction, .. }
            | Motion::Jitter { fraction, .. }
            | Motion::Rain { fraction, .. }
            | Motion::Pulse { fraction, .. } => fraction,
        }
    }

    /// The (mean) step per frame.
    pub fn speed(&self) -> f64 {
        match *self {
            Motion::Steady { speed, .. }
            | Motion::Jitter { speed, .. }
            | Motion::Rain { speed, .. }
            | Motion::Pulse { speed, .. } => speed,
        }
    }
}

/// Moves a set of boxes frame by frame, reproducibly from a seed.
pub struct Mover<S: Scalar, const D: usize> {
    boxes: Vec<Aabb<S, D>>,
    vel: Vec<[f64; D]>,
    moving: Vec<u32>,
    /// The boxes that move on the calm frames of `Pulse` (a part of
    /// `moving`), and the frames stepped.
    calm: Vec<u32>,
    frame: u64,
    lo: [f64; D],
    hi: [f64; D],
    motion: Motion,
    rng: Pcg64,
}

fn direction<const D: usize>(rng: &mut Pcg64, speed: f64) -> [f64; D] {
    loop {
        let d: [f64; D] = core::array::from_fn(|_| rng.random::<f64>() * 2.0 - 1.0);
        let len = d.iter().map(|v| v * v).sum::<f64>().sqrt();
        if len > 1e-3 && len <= 1.0 {
            return d.map(|v| v / len * speed);
        }
    }
}

impl<S: Scalar, const D: usize> Mover<S, D> {
    /// Picks the moving boxes (a random subset of the given share) and their
    /// directions. The world is the boxes' bounding box.
    pub fn new(boxes: Vec<Aabb<S, D>>, motion: Motion, seed: u64) -> Self {
        let mut rng = Pcg64::seed_from_u64(seed);
        let (fraction, speed) = (motion.fraction(), motion.speed());
        let n = boxes.len();
        let k = ((n as f64) * fraction.clamp(0.0, 1.0)).round() as usize;
        let mut order: Vec<u32> = (0..n as u32).collect();
        for i in (1..n).rev() {
            order.swap(i, rng.random_range(0..=i));
        }
        order.truncate(k);
        let mut calm = match motion {
            Motion::Pulse { calm, .. } => {
                order[..(((n as f64) * calm.clamp(0.0, 1.0)).round() as usize).min(k)].to_vec()
            }
            _ => Vec::new(),
        };
        calm.sort_unstable();
        order.sort_unstable();
        let vel = (0..n)
            .map(|_| match motion {
                Motion::Rain { .. } => {
                    let mut v = [0.0; D];
                    v[D - 1] = -speed * (0.5 + rng.random::<f64>());
                    v
                }
                _ => direction::<D>(&mut rng, speed),
            })
            .collect();
        let (mut lo, mut hi) = ([f64::INFINITY; D], [f64::NEG_INFINITY; D]);
        for b in &boxes {
            for k in 0..D {
                lo[k] = lo[k].min(b.min()[k].to_f64());
                hi[k] = hi[k].max(b.max()[k].to_f64());
            }
        }
        Self { boxes, vel, moving: order, calm, frame: 0, lo, hi, motion, rng }
    }

    /// The boxes as they are now.
    pub fn boxes(&self) -> &[Aabb<S, D>] {
        &self.boxes
    }

    /// The indices of the moving boxes (those of a busy frame, for
    /// [`Motion::Pulse`]).
    pub fn moving(&self) -> &[u32] {
        &self.moving
    }

    /// Advances one frame; `moves` receives `(index, new box)` of each box
    /// that moved.
    pub fn step(&mut self, moves: &mut Vec<(u32, Aabb<S, D>)>) {
        moves.clear();
        let speed = self.motion.speed();
        let rain = matches!(self.motion, Motion::Rain { .. });
        let active = match self.motion {
            Motion::Pulse { period, .. } if !self.frame.is_multiple_of(u64::from(period.max(1))) => &self.calm,
            _ => &self.moving,
        };
        self.frame += 1;
        for &i in active {
            let i = i as usize;
            if matches!(self.motion, Motion::Jitter { .. }) {
                self.vel[i] = direction::<D>(&mut self.rng, speed);
            }
            let b = self.boxes[i];
            let (mut min, mut max) = (*b.min(), *b.max());
            if rain {
                // Fall; through the floor, reappear at the top.
                let top = D - 1;
                let (mut l, mut h) = (min[top].to_f64() + self.vel[i][top], max[top].to_f64() + self.vel[i][top]);
                if h < self.lo[top] {
                    let extent = h - l;
                    h = self.hi[top];
                    l = h - extent;
                }
                min[top] = S::from_f64(l);
                max[top] = S::from_f64(h);
            } else {
                for k in 0..D {
                    let v = &mut self.vel[i][k];
                    let (l, h) = (min[k].to_f64() + *v, max[k].to_f64() + *v);
                    if l < self.lo[k] || h > self.hi[k] {
                        *v = -*v;
                    }
                    min[k] = S::from_f64(min[k].to_f64() + *v);
                    max[k] = S::from_f64(max[k].to_f64() + *v);
                }
            }
            let nb = Aabb::new(min, max).unwrap_or(b);
            self.boxes[i] = nb;
            moves.push((i as u32, nb));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Scene;

    #[test]
    fn moves_the_chosen_share_and_stays_in_the_world() {
        let boxes = Scene::Uniform.generate::<3>(1000, 3);
        let mut m = Mover::new(boxes, Motion::Steady { fraction: 0.1, speed: 0.5 }, 9);
        let mut moves = Vec::new();
        for _ in 0..200 {
            m.step(&mut moves);
            assert_eq!(moves.len(), 100);
        }
        let (lo, hi) = (m.lo, m.hi);
        for b in m.boxes() {
            for k in 0..3 {
                assert!(b.min()[k] >= lo[k] - 0.5 - 1e-9 && b.max()[k] <= hi[k] + 0.5 + 1e-9);
            }
        }
        let mut j = Mover::new(Scene::Uniform.generate::<2>(100, 1), Motion::Jitter { fraction: 1.0, speed: 0.1 }, 2);
        let mut moves2 = Vec::new();
        j.step(&mut moves2);
        assert_eq!(moves2.len(), 100);
    }

    #[test]
    fn pulses_move_the_busy_share_every_period_and_a_part_of_it_between() {
        let boxes = Scene::Uniform.generate::<3>(1000, 3);
        let motion = Motion::Pulse { fraction: 0.3, calm: 0.1, period: 3, speed: 0.05 };
        let mut m = Mover::new(boxes, motion, 9);
        let busy: Vec<u32> = m.moving().to_vec();
        let mut moves = Vec::new();
        let mut calm_sets = Vec::new();
        for f in 0..9 {
            m.step(&mut moves);
            let moved: Vec<u32> = moves.iter().map(|m| m.0).collect();
            if f % 3 == 0 {
                assert_eq!(moved, busy);
            } else {
                assert_eq!(moved.len(), 100);
                assert!(moved.iter().all(|i| busy.binary_search(i).is_ok()));
                calm_sets.push(moved);
            }
        }
        // The same calm set every calm frame.
        assert!(calm_sets.windows(2).all(|w| w[0] == w[1]));
    }

    #[test]
    fn rain_falls_and_wraps_to_the_top() {
        let boxes = Scene::Uniform.generate::<3>(500, 4);
        let mut m = Mover::new(boxes.clone(), Motion::Rain { fraction: 1.0, speed: 0.5 }, 5);
        let (lo, hi) = (m.lo, m.hi);
        let mut moves = Vec::new();
        let mut wrapped = 0;
        for _ in 0..400 {
            let before = m.boxes().to_vec();
            m.step(&mut moves);
            assert_eq!(moves.len(), 500);
            for &(i, b) in &moves {
                let a = before[i as usize];
                // Only the last axis changes; sizes are kept.
                assert_eq!(a.min()[..2], b.min()[..2]);
                let fall = a.min()[2] - b.min()[2];
                if fall < 0.0 {
                    wrapped += 1;
                    assert!((b.max()[2] - hi[2]).abs() < 1e-9);
                } else {
                    assert!((0.25 - 1e-9..=0.75 + 1e-9).contains(&fall), "fall {fall}");
                }
                assert!(b.max()[2] >= lo[2] - 1.0);
                assert!(((b.max()[2] - b.min()[2]) - (a.max()[2] - a.min()[2])).abs() < 1e-9);
            }
        }
        assert!(wrapped > 500, "every box fell through the floor at least once: {wrapped}");
    }
}
