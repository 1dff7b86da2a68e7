//! The brute-force index: no structure at all. Every changed proxy is tested
//! against every indexed one, and queries scan every slot. It never takes the
//! one-shot path, so it stays an independent reference for the others.

use super::engine::{sealed::IndexImpl, Frame};
use super::query::Region;
use super::store::{State, Store};
use crate::Scalar;

/// The index of [`BruteForce`](super::BruteForce): none.
#[derive(Clone, Copy, Debug, Default)]
pub struct BruteIndex;

impl<S: Scalar, const D: usize> IndexImpl<S, D> for BruteIndex {
    const NAME: &'static str = "brute";
    const ONESHOT: bool = false;

    fn update(&mut self, store: &Store<S, D>, frame: &Frame<S, D>, out: &mut Vec<(u32, u32)>) {
        let inserted: &[u32] = if frame.inserted_candidates { &frame.inserted } else { &[] };
        let changed =
            frame.moved.iter().map(|m| m.0).chain(inserted.iter().copied()).chain(frame.refiltered.iter().copied());
        for s in changed {
            let b = &store.aabb[s as usize];
            for t in 0..store.slots() as u32 {
                if t != s && store.meta[t as usize].state == State::Live && b.overlaps(&store.aabb[t as usize]) {
                    out.push((s, t));
                }
            }
        }
    }

    fn empty_like(&self) -> Self {
        BruteIndex
    }

    fn rebuild(&mut self, _store: &Store<S, D>) {}

    fn query(&self, store: &Store<S, D>, region: &Region<D>, f: &mut dyn FnMut(u32) -> bool) {
        for s in 0..store.slots() as u32 {
            if store.indexed(s) && region.overlaps(&store.aabb[s as usize]) && !f(s) {
                return;
            }
        }
    }

    fn validate(&self, _store: &Store<S, D>) -> Result<(), String> {
        Ok(())
    }

    fn memory(&self) -> usize {
        0
    }
}
