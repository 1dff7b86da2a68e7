//! The pair cache: the current pairs as a flat array, a hash index from a
//! pair of slots to its position, and per-proxy intrusive lists.
//!
//! Every operation is O(1) except visiting a proxy's pairs, which is O(its
//! degree). Removal swaps the last pair into the hole and patches the lists,
//! so the array stays dense and [`BroadPhase::pairs`](super::BroadPhase::pairs)
//! is a plain slice. The hash index is never iterated, so its order cannot leak
//! into the results.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::ProxyId;

/// A pair of live proxies, ordered `a < b`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProxyPair {
    a: ProxyId,
    b: ProxyId,
}

impl ProxyPair {
    /// The canonical pair of two distinct proxies.
    #[inline]
    pub(crate) fn new(x: ProxyId, y: ProxyId) -> Self {
        debug_assert_ne!(x.index(), y.index());
        if x < y {
            Self { a: x, b: y }
        } else {
            Self { a: y, b: x }
        }
    }

    /// The smaller id.
    #[inline]
    pub fn a(self) -> ProxyId {
        self.a
    }

    /// The larger id.
    #[inline]
    pub fn b(self) -> ProxyId {
        self.b
    }
}

/// A change in the pair set, reported by [`BroadPhase::update`](super::BroadPhase::update).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PairEvent {
    /// The boxes stopped overlapping, a filter now rejects the pair, or a
    /// proxy was removed.
    End(ProxyPair),
    /// The boxes started overlapping (or a proxy arrived, or a filter now
    /// accepts the pair).
    Begin(ProxyPair),
}

impl PairEvent {
    /// The pair.
    pub fn pair(self) -> ProxyPair {
        match self {
            PairEvent::Begin(p) | PairEvent::End(p) => p,
        }
    }
}

pub(crate) const NIL: u32 = u32::MAX;

/// A multiplicative hash of a 64-bit key (the two slots).
#[derive(Default)]
pub(crate) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    #[inline]
    fn write_u64(&mut self, k: u64) {
        // Fold the high half in, then multiply; hashbrown takes the top 7
        // bits for tags and the low bits for buckets, both well mixed here.
        let x = (k ^ (k >> 29)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        self.0 = x ^ (x >> 32);
    }
}

#[inline]
fn key(x: u32, y: u32) -> u64 {
    let (lo, hi) = if x < y { (x, y) } else { (y, x) };
    (lo as u64) << 32 | hi as u64
}

/// Links of a pair in the lists of its two proxies: `[prev, next]` in `a`'s
/// list, then in `b`'s.
type Links = [u32; 4];

/// What to do with a tracked pair during a walk of a proxy's list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Stop tracking it (it ends if its boxes overlapped).
    Untrack,
    /// Keep tracking it; the exact boxes overlap or not.
    Keep(bool),
}

/// The tracked pairs: those the index holds as overlapping (the exact boxes
/// for sweep-and-prune, the fat boxes for the grid), each allowed by kinds and
/// filters, each flagged when the exact boxes overlap. The flagged ones are
/// the reported pairs, kept also as a dense array for [`PairCache::pairs`].
#[derive(Default)]
pub(crate) struct PairCache {
    tracked: Vec<ProxyPair>,
    links: Vec<Links>,
    /// Position in `exact`, or `NIL`.
    exact_pos: Vec<u32>,
    exact: Vec<ProxyPair>,
    /// Position in `tracked` of each exact pair.
    exact_of: Vec<u32>,
    heads: Vec<u32>,
    index: HashMap<u64, u32, BuildHasherDefault<KeyHasher>>,
    scratch: Vec<u32>,
}

impl PairCache {
    /// The pairs whose exact boxes overlap.
    pub fn pairs(&self) -> &[ProxyPair] {
        &self.exact
    }

    pub fn tracked_len(&self) -> usize {
        self.tracked.len()
    }

    /// Makes room for `slots` slots.
    pub fn grow(&mut self, slots: usize) {
        if self.heads.len() < slots {
            self.heads.resize(slots, NIL);
        }
    }

    #[inline]
    pub fn position(&self, x: u32, y: u32) -> Option<u32> {
        self.index.get(&key(x, y)).copied()
    }

    /// Which half of a pair's links belongs to slot `s`.
    #[inline]
    fn side(&self, pos: u32, s: u32) -> usize {
        if self.tracked[pos as usize].a.index() == s {
            0
        } else {
            2
        }
    }

    /// Flags or unflags the tracked pair at `pos`; returns whether it changed.
    #[inline]
    fn set_exact(&mut self, pos: u32, on: bool) -> bool {
        let cur = self.exact_pos[pos as usize];
        if on == (cur != NIL) {
            return false;
        }
        if on {
            self.exact_pos[pos as usize] = self.exact.len() as u32;
            self.exact.push(self.tracked[pos as usize]);
            self.exact_of.push(pos);
        } else {
            let last = self.exact.len() as u32 - 1;
            if cur != last {
                let moved = self.exact_of[last as usize];
                self.exact_pos[moved as usize] = cur;
            }
            self.exact.swap_remove(cur as usize);
            self.exact_of.swap_remove(cur as usize);
            self.exact_pos[pos as usize] = NIL;
        }
        true
    }

    /// Tracks a pair that is not tracked, flagged `exact` or not.
    pub fn add(&mut self, p: ProxyPair, exact: bool) {
        let pos = self.tracked.len() as u32;
        let (sa, sb) = (p.a.index(), p.b.index());
        let prev = self.index.insert(key(sa, sb), pos);
        debug_assert!(prev.is_none(), "pair tracked twice");
        self.tracked.push(p);
        self.exact_pos.push(NIL);
        let (ha, hb) = (self.heads[sa as usize], self.heads[sb as usize]);
        self.links.push([NIL, ha, NIL, hb]);
        if ha != NIL {
            let side = self.side(ha, sa);
            self.links[ha as usize][side] = pos;
        }
        if hb != NIL {
            let side = self.side(hb, sb);
            self.links[hb as usize][side] = pos;
        }
        self.heads[sa as usize] = pos;
        self.heads[sb as usize] = pos;
        if exact {
            self.set_exact(pos, true);
        }
    }

    /// Unlinks position `pos` from slot `s`'s list.
    fn unlink(&mut self, pos: u32, s: u32) {
        let side = self.side(pos, s);
        let [prev, next] = [self.links[pos as usize][side], self.links[pos as usize][side + 1]];
        if prev == NIL {
            self.heads[s as usize] = next;
        } else {
            let ps = self.side(prev, s);
            self.links[prev as usize][ps + 1] = next;
        }
        if next != NIL {
            let ns = self.side(next, s);
            self.links[next as usize][ns] = prev;
        }
    }

    /// Re-points everything that referred to position `from` at `to`.
    fn relocate(&mut self, from: u32, to: u32) {
        let p = self.tracked[from as usize];
        for (s, side) in [(p.a.index(), 0), (p.b.index(), 2)] {
            let [prev, next] = [self.links[from as usize][side], self.links[from as usize][side + 1]];
            if prev == NIL {
                self.heads[s as usize] = to;
            } else {
                let ps = self.side(prev, s);
                self.links[prev as usize][ps + 1] = to;
            }
            if next != NIL {
                let ns = self.side(next, s);
                self.links[next as usize][ns] = to;
            }
        }
        let e = self.exact_pos[from as usize];
        if e != NIL {
            self.exact_of[e as usize] = to;
        }
        *self.index.get_mut(&key(p.a.index(), p.b.index())).expect("indexed pair") = to;
    }

    /// Stops tracking the pair of slots `x`, `y`; returns it if its boxes
    /// overlapped (it ends).
    pub fn remove(&mut self, x: u32, y: u32) -> Option<ProxyPair> {
        let pos = self.index.remove(&key(x, y)).expect("tracked pair");
        let p = self.tracked[pos as usize];
        let was_exact = self.set_exact(pos, false);
        self.unlink(pos, p.a.index());
        self.unlink(pos, p.b.index());
        let last = self.tracked.len() as u32 - 1;
        if pos != last {
            // `pos` is unlinked, so no list still refers to it; point the
            // last pair's neighbours and index entry at its new place.
            self.relocate(last, pos);
        }
        self.tracked.swap_remove(pos as usize);
        self.links.swap_remove(pos as usize);
        self.exact_pos.swap_remove(pos as usize);
        was_exact.then_some(p)
    }

    /// Walks slot `s`'s tracked pairs, asking `verdict` about each partner;
    /// flips flags and untracks as told, reporting every change.
    pub fn walk(&mut self, s: u32, mut verdict: impl FnMut(u32) -> Verdict, mut report: impl FnMut(PairEvent)) {
        let mut untrack = core::mem::take(&mut self.scratch);
        untrack.clear();
        let mut pos = self.heads[s as usize];
        while pos != NIL {
            let p = self.tracked[pos as usize];
            let side = self.side(pos, s);
            let t = if side == 0 { p.b.index() } else { p.a.index() };
            match verdict(t) {
                Verdict::Untrack => untrack.push(t),
                Verdict::Keep(on) => {
                    if self.set_exact(pos, on) {
                        report(if on { PairEvent::Begin(p) } else { PairEvent::End(p) });
                    }
                }
            }
            pos = self.links[pos as usize][side + 1];
        }
        for &t in &untrack {
            if let Some(p) = self.remove(s, t) {
                report(PairEvent::End(p));
            }
        }
        self.scratch = untrack;
    }

    /// Untracks every pair of `s`, reporting those that end.
    pub fn remove_all(&mut self, s: u32, report: impl FnMut(PairEvent)) {
        self.walk(s, |_| Verdict::Untrack, report);
    }

    /// Sets the flag of an already tracked pair, reporting a change.
    pub fn update_exact(&mut self, pos: u32, on: bool) -> Option<PairEvent> {
        let p = self.tracked[pos as usize];
        self.set_exact(pos, on).then_some(if on { PairEvent::Begin(p) } else { PairEvent::End(p) })
    }

    /// Every tracked pair with its position, as slots.
    pub fn tracked(&self) -> impl Iterator<Item = (u32, u32, u32)> + '_ {
        self.tracked.iter().enumerate().map(|(i, p)| (i as u32, p.a.index(), p.b.index()))
    }

    pub fn memory(&self) -> usize {
        use core::mem::size_of;
        self.tracked.capacity() * size_of::<ProxyPair>()
            + self.links.capacity() * size_of::<Links>()
            + self.exact_pos.capacity() * 4
            + self.exact.capacity() * size_of::<ProxyPair>()
            + self.exact_of.capacity() * 4
            + (self.heads.capacity() + self.scratch.capacity()) * 4
            // hashbrown: a key, a value and a control byte per bucket.
            + self.index.capacity() * (size_of::<(u64, u32)>() + 1)
    }

    /// Checks the index, the lists and the exact array against the tracked
    /// array.
    pub fn validate(&self) -> Result<(), String> {
        let n = self.tracked.len();
        if self.index.len() != n || self.links.len() != n || self.exact_pos.len() != n {
            return Err(format!("pair cache: {n} tracked, {} indexed, {} links", self.index.len(), self.links.len()));
        }
        for (pos, p) in self.tracked.iter().enumerate() {
            if p.a.index() >= p.b.index() {
                return Err(format!("pair {pos} {p:?} is not ordered by slot"));
            }
            if self.index.get(&key(p.a.index(), p.b.index())) != Some(&(pos as u32)) {
                return Err(format!("pair {pos} {p:?} is not indexed at its position"));
            }
            let e = self.exact_pos[pos];
            if e != NIL && (self.exact.get(e as usize) != Some(p) || self.exact_of[e as usize] != pos as u32) {
                return Err(format!("pair {pos} {p:?}: broken exact entry {e}"));
            }
        }
        if self.exact.len() != self.exact_of.len()
            || self.exact.len() != self.exact_pos.iter().filter(|&&e| e != NIL).count()
        {
            return Err("pair cache: exact array and flags disagree".into());
        }
        let mut seen = vec![0u8; n];
        for s in 0..self.heads.len() as u32 {
            let mut pos = self.heads[s as usize];
            let mut prev = NIL;
            while pos != NIL {
                if pos as usize >= n {
                    return Err(format!("slot {s}: list points past the pairs"));
                }
                let p = self.tracked[pos as usize];
                if p.a.index() != s && p.b.index() != s {
                    return Err(format!("slot {s}: list holds {p:?}"));
                }
                let side = self.side(pos, s);
                if self.links[pos as usize][side] != prev {
                    return Err(format!("slot {s}: broken back link at pair {pos}"));
                }
                seen[pos as usize] += 1;
                if seen[pos as usize] > 2 {
                    return Err(format!("pair {pos} listed more than twice"));
                }
                prev = pos;
                pos = self.links[pos as usize][side + 1];
            }
        }
        if let Some(pos) = seen.iter().position(|&c| c != 2) {
            return Err(format!("pair {pos} is in {} lists, not 2", seen[pos]));
        }
        Ok(())
    }
}
