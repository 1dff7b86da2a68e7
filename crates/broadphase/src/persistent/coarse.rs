//! Candidate pairs for runs of one-shot frames in which every proxy moves a
//! little (the engine's "coarse" frames).
//!
//! When most proxies move every frame, the engine finds the pairs by a
//! one-shot search over the exact boxes, then sorts them and merges them
//! with the last frame's to get the events. When the motion is coherent
//! (each proxy steps about as far as it did the frame before), one search
//! over boxes grown by a few steps of each proxy's own motion finds a
//! superset of the overlapping pairs that holds for several frames: as long
//! as every exact box stays inside its grown ("fat") box, two exact boxes
//! can only overlap if their fat boxes do. Each such frame is then one pass
//! over the sorted candidates, an exact box test each, that writes the
//! pairs in order and reports the changes as events directly: no search,
//! no sort, no merge.
//!
//! The set is valid until a proxy leaves its fat box, a proxy is inserted
//! or removed, or a filter changes; the next one-shot frame then builds a
//! new one (from that frame's steps). Builds that serve no frame (motion
//! that is not coherent: jitter far larger than the step, teleports) back
//! off: the next 8 builds are skipped, 64 after a second such build in a
//! row, so incoherent motion pays little more than plain one-shot frames.

use super::pairs::{PairEvent, ProxyPair};
use super::store::Store;
use crate::oneshot::Plan;
use crate::{Aabb, Scalar};

/// A fat box is the exact box grown on every side by this many steps of
/// the proxy's motion in the frame that built the set (the length of its
/// corners' largest displacement), so that a proxy that keeps its speed,
/// in any direction, stays inside for this many frames.
pub(super) const STEPS: f64 = 3.0;
/// The growth is at most this many extents of the box (its largest): a
/// teleport says nothing of the motion to come.
const CAP_EXTENTS: f64 = 2.0;
/// A set with more candidates than this many times the overlapping pairs
/// and the proxies together is dropped (and backs off as a set that served
/// no frame): it costs more to pass over than a search.
const CANDIDATES_MAX: usize = 4;
/// The candidates a pass takes at a time (see `pass`).
const BLOCK: usize = 1024;
/// How many candidates ahead a pass prefetches the second box.
const AHEAD: usize = 16;
/// The builds skipped after a set that served no frame: this many, and
/// this many times more after each such set in a row, up to
/// [`BACKOFF_MAX`]. (With 2 instead of 8, rain that wraps to the top, whose
/// every set is outrun by its teleports, paid a build at frames 1, 3, 6,
/// 11, 20 and 37: 40 frames after 20 of warm-up cost 5-10% more than plain
/// one-shot frames.)
const BACKOFF_GROWTH: u32 = 8;
/// The most builds skipped after sets that served no frame.
const BACKOFF_MAX: u32 = 64;

/// How an update's one-shot frame finds its pairs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    /// Not a one-shot frame, or one by a search over the exact boxes.
    Exact,
    /// A search over fat boxes that builds a new candidate set.
    Build,
    /// A set to check once the changes are applied (see [`Coarse::settle`]).
    Check,
    /// A pass over the candidate set of earlier frames.
    Reuse,
}

/// The candidate set and its fat boxes.
pub(super) struct Coarse<S: Scalar, const D: usize> {
    /// Per slot, the box the proxy's exact box must stay inside.
    pub fat: Vec<Aabb<S, D>>,
    /// Per slot, the step of the building frame (scratch of a build).
    pub step: Vec<f64>,
    /// Every allowed pair of live proxies whose fat boxes overlap, sorted.
    /// (As pairs of ids: keys of two slots, smaller, cost a pass two
    /// lookups of generations per candidate, and took it from 2.3 to 2.65
    /// ms a frame with 1e5 moving.)
    pub cand: Vec<ProxyPair>,
    /// Whether each candidate's exact boxes overlapped at the last update.
    hit: Vec<bool>,
    /// Whether `cand` holds for the current boxes.
    pub valid: bool,
    /// The frames the current set served after its build.
    served: u32,
    /// Builds to skip before the next one, and how many the last backoff
    /// skipped.
    skip: u32,
    backoff: u32,
    /// `Auto`'s choice for the searches over fat boxes.
    pub plan: Plan<D>,
    /// Whether sets are built at all (see `Engine::set_coarse_frames`).
    pub enabled: bool,
}

impl<S: Scalar, const D: usize> Default for Coarse<S, D> {
    fn default() -> Self {
        Self {
            fat: Vec::new(),
            step: Vec::new(),
            cand: Vec::new(),
            hit: Vec::new(),
            valid: false,
            served: 0,
            skip: 0,
            backoff: 0,
            plan: Plan::default(),
            enabled: true,
        }
    }
}

impl<S: Scalar, const D: usize> Coarse<S, D> {
    /// How the coming one-shot frame finds its pairs, before its changes
    /// are applied. `pure`: no proxy was inserted or removed since the last
    /// update, which was a one-shot frame too (with a valid set, its pairs
    /// are the candidates flagged in `hit`). `Check`: see [`settle`](Self::settle);
    /// `Build`: the changes' steps are to be recorded in `step`.
    pub fn mode(&mut self, store: &Store<S, D>, pure: bool) -> Mode {
        if pure && self.valid {
            return Mode::Check;
        }
        self.spent();
        if !pure || !self.enabled {
            // Arrivals or removals (level streaming): no motion to build on.
            return Mode::Exact;
        }
        let mode = self.build_or_skip();
        if mode == Mode::Build {
            self.step.clear();
            self.step.resize(store.slots(), 0.0);
        }
        mode
    }

    /// After a frame's changes were applied (`refiltered`: some changed a
    /// filter): how a frame that was to [check](Mode::Check) the set finds
    /// its pairs: by the set if every box stayed inside its fat box and no
    /// filter changed, else by a new set whose steps are those of the last
    /// build, or the mean motion of each proxy since if larger (or by the
    /// exact boxes, while backing off).
    pub fn settle(&mut self, aabb: &[Aabb<S, D>], refiltered: bool) -> Mode {
        if !refiltered && inside(&self.fat, aabb) {
            self.served += 1;
            return Mode::Reuse;
        }
        let frames = f64::from(self.served + 1);
        self.spent();
        // Each proxy's step at the last build, or its mean step since if
        // larger (a proxy that turned back, or walks at random, has a mean
        // smaller than its step).
        for ((f, b), step) in self.fat.iter().zip(aabb).zip(&mut self.step) {
            let sq: f64 = (0..D)
                .map(|k| {
                    let d = b.center(k) - f.center(k);
                    d * d
                })
                .sum();
            *step = step.max(sq.sqrt() / frames);
        }
        self.build_or_skip()
    }

    /// Ends the current set, if any: a set that served no frame makes the
    /// next builds back off.
    fn spent(&mut self) {
        if self.valid {
            if self.served == 0 {
                self.back_off();
            } else if self.served >= 2 {
                self.backoff = 0;
            }
        }
        self.valid = false;
    }

    /// Skips the next builds: [`BACKOFF_GROWTH`] times as many as the last
    /// backoff, at least that many, at most [`BACKOFF_MAX`].
    fn back_off(&mut self) {
        self.backoff = (self.backoff * BACKOFF_GROWTH).clamp(BACKOFF_GROWTH, BACKOFF_MAX);
        self.skip = self.backoff;
    }

    fn build_or_skip(&mut self) -> Mode {
        if self.skip > 0 {
            self.skip -= 1;
            Mode::Exact
        } else {
            Mode::Build
        }
    }

    /// The step of a proxy moving from `old` to `new`: the length of its
    /// corners' largest displacement on each axis.
    #[inline]
    pub fn step_of(old: &Aabb<S, D>, new: &Aabb<S, D>) -> f64 {
        let mut sq = 0.0;
        for k in 0..D {
            let lo = (new.min()[k].to_f64() - old.min()[k].to_f64()).abs();
            let hi = (new.max()[k].to_f64() - old.max()[k].to_f64()).abs();
            let d = lo.max(hi);
            sq += d * d;
        }
        sq.sqrt()
    }

    /// Grows every slot's box in `aabb` by [`STEPS`] of its step into `fat`.
    pub fn fatten_all(&mut self, aabb: &[Aabb<S, D>]) {
        self.fat.clear();
        self.fat.extend(aabb.iter().zip(&self.step).map(|(b, &s)| {
            let ext = (0..D).map(|k| b.extent(k)).fold(0.0, f64::max);
            let m = STEPS * s;
            let m = if ext > 0.0 { m.min(CAP_EXTENTS * ext) } else { m };
            b.grown(S::from_f64(m))
        }));
    }

    /// Takes `cand` (sorted) as the new set: flags each candidate by the
    /// exact test and writes the overlapping ones, in order, into `pairs`.
    /// Drops the set when it is too large to pay (see [`CANDIDATES_MAX`]).
    pub fn adopt(&mut self, aabb: &[Aabb<S, D>], live: usize, pairs: &mut Vec<ProxyPair>) {
        self.hit.clear();
        self.hit.resize(self.cand.len(), false);
        pass(&self.cand, &mut self.hit, aabb, pairs, None);
        self.served = 0;
        self.valid = self.cand.len() <= CANDIDATES_MAX * (pairs.len() + live);
        if !self.valid {
            self.back_off();
            self.cand.clear();
            self.hit.clear();
        }
    }

    /// One frame over the set: the overlapping pairs into `pairs` (sorted),
    /// the pairs that ended and began since the last update into `events`
    /// (ends, then begins, each in order; `begins` holds the begins
    /// meanwhile).
    pub fn reuse(
        &mut self,
        aabb: &[Aabb<S, D>],
        pairs: &mut Vec<ProxyPair>,
        events: &mut Vec<PairEvent>,
        begins: &mut Vec<ProxyPair>,
    ) {
        begins.clear();
        pass(&self.cand, &mut self.hit, aabb, pairs, Some((&mut *events, &mut *begins)));
        events.extend(begins.iter().map(|&p| PairEvent::Begin(p)));
    }

    /// Drops the set (the buffers stay).
    pub fn invalidate(&mut self) {
        self.valid = false;
        self.cand.clear();
        self.hit.clear();
    }

    /// Checks the set against the store and the reported pairs.
    pub fn validate(&self, store: &Store<S, D>, pairs: &[ProxyPair]) -> Result<(), String> {
        if !self.valid {
            return Ok(());
        }
        if self.hit.len() != self.cand.len() {
            return Err("coarse set: flags and candidates differ in number".into());
        }
        if !self.cand.windows(2).all(|w| w[0] < w[1]) {
            return Err("coarse set: candidates not sorted and distinct".into());
        }
        for s in 0..store.slots() as u32 {
            if store.indexed(s) && !self.fat[s as usize].contains(&store.aabb[s as usize]) {
                return Err(format!("coarse set: slot {s}'s box left its fat box"));
            }
        }
        let flagged = self.cand.iter().zip(&self.hit).filter(|(_, &h)| h).map(|(p, _)| p);
        if !flagged.eq(pairs.iter()) {
            return Err("coarse set: the flagged candidates are not the reported pairs".into());
        }
        Ok(())
    }

    pub fn memory(&self) -> usize {
        use core::mem::size_of;
        self.fat.capacity() * size_of::<Aabb<S, D>>()
            + self.step.capacity() * 8
            + self.cand.capacity() * size_of::<ProxyPair>()
            + self.hit.capacity()
            + self.plan.memory()
    }
}

/// The exact test of every candidate: the overlapping ones into `pairs`, in
/// order, their flags into `hit`, and with `events`, each change of flag as
/// an end (pushed) or a begin (held back).
///
/// PERF: the pairs are written without a branch on the test (its outcome is
/// as good as random); the candidates are sorted, so the first boxes are
/// read in order, and the second ones, prefetched [`AHEAD`] candidates
/// ahead, are near them (slots follow space after a batch insert).
fn pass<S: Scalar, const D: usize>(
    cand: &[ProxyPair],
    hit: &mut [bool],
    aabb: &[Aabb<S, D>],
    pairs: &mut Vec<ProxyPair>,
    mut events: Option<(&mut Vec<PairEvent>, &mut Vec<ProxyPair>)>,
) {
    debug_assert_eq!(cand.len(), hit.len());
    pairs.clear();
    let test = |i: usize, p: &ProxyPair| {
        if let Some(q) = cand.get(i + AHEAD) {
            crate::sweep::prefetch(&aabb[q.b().index() as usize]);
        }
        aabb[p.a().index() as usize].overlaps(&aabb[p.b().index() as usize])
    };
    // In blocks, each with room for all its candidates, so that `pairs`
    // grows by what it keeps (about half the candidates), not by all.
    for (b, (cand_b, hit_b)) in cand.chunks(BLOCK).zip(hit.chunks_mut(BLOCK)).enumerate() {
        crate::mem::spare(pairs, BLOCK);
        pairs.reserve(BLOCK);
        let out = pairs.spare_capacity_mut();
        let mut k = 0;
        let base = b * BLOCK;
        if let Some((ends, begins)) = events.as_mut() {
            for (j, (p, h)) in cand_b.iter().zip(hit_b.iter_mut()).enumerate() {
                let on = test(base + j, p);
                out[k].write(*p);
                k += on as usize;
                // (Few flags change from one frame to the next: a branch.)
                if on != *h {
                    *h = on;
                    if on {
                        begins.push(*p);
                    } else {
                        ends.push(PairEvent::End(*p));
                    }
                }
            }
        } else {
            for (j, (p, h)) in cand_b.iter().zip(hit_b.iter_mut()).enumerate() {
                let on = test(base + j, p);
                out[k].write(*p);
                k += on as usize;
                *h = on;
            }
        }
        // SAFETY: the first `k` elements of the spare capacity were
        // written above (each write at `k` before `k` advanced past it),
        // and `k` is at most the block's length, within the room reserved.
        unsafe { pairs.set_len(pairs.len() + k) };
    }
}

/// Whether every box of `aabb` lies inside the box of `fat` at its position
/// (a slot's box that did not move since the build still does).
fn inside<S: Scalar, const D: usize>(fat: &[Aabb<S, D>], aabb: &[Aabb<S, D>]) -> bool {
    // Blocks of tests without a branch each, and one branch a block.
    fat.chunks(64).zip(aabb.chunks(64)).all(|(f, b)| {
        f.iter().zip(b).fold(true, |ok, (f, b)| {
            let mut r = ok;
            for k in 0..D {
                r &= (f.min()[k] <= b.min()[k]) & (b.max()[k] <= f.max()[k]);
            }
            r
        })
    })
}
