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

#[derive(Default)]
pub(crate) struct PairCache {
    pairs: Vec<ProxyPair>,
    links: Vec<Links>,
    heads: Vec<u32>,
    index: HashMap<u64, u32, BuildHasherDefault<KeyHasher>>,
}

impl PairCache {
    pub fn pairs(&self) -> &[ProxyPair] {
        &self.pairs
    }

    /// Makes room for `slots` slots.
    pub fn grow(&mut self, slots: usize) {
        if self.heads.len() < slots {
            self.heads.resize(slots, NIL);
        }
    }

    #[inline]
    pub fn contains(&self, x: u32, y: u32) -> bool {
        self.index.contains_key(&key(x, y))
    }

    /// Which half of a pair's links belongs to slot `s`.
    #[inline]
    fn side(&self, pos: u32, s: u32) -> usize {
        if self.pairs[pos as usize].a.index() == s {
            0
        } else {
            2
        }
    }

    /// Adds a pair that is not present.
    pub fn add(&mut self, p: ProxyPair) {
        let pos = self.pairs.len() as u32;
        let (sa, sb) = (p.a.index(), p.b.index());
        let prev = self.index.insert(key(sa, sb), pos);
        debug_assert!(prev.is_none(), "pair added twice");
        self.pairs.push(p);
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
        let p = self.pairs[from as usize];
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
        *self.index.get_mut(&key(p.a.index(), p.b.index())).expect("indexed pair") = to;
    }

    /// Removes the pair of slots `x`, `y` if present, returning it.
    pub fn remove(&mut self, x: u32, y: u32) -> Option<ProxyPair> {
        let pos = self.index.remove(&key(x, y))?;
        let p = self.pairs[pos as usize];
        self.unlink(pos, p.a.index());
        self.unlink(pos, p.b.index());
        let last = self.pairs.len() as u32 - 1;
        if pos != last {
            // `pos` is unlinked, so no list still refers to it; point the
            // last pair's neighbours and index entry at its new place.
            self.relocate(last, pos);
        }
        self.pairs.swap_remove(pos as usize);
        self.links.swap_remove(pos as usize);
        Some(p)
    }

    /// Appends the partner slots of slot `s` to `out`.
    pub fn partners(&self, s: u32, out: &mut Vec<u32>) {
        let mut pos = self.heads[s as usize];
        while pos != NIL {
            let p = self.pairs[pos as usize];
            let side = self.side(pos, s);
            out.push(if side == 0 { p.b.index() } else { p.a.index() });
            pos = self.links[pos as usize][side + 1];
        }
    }

    pub fn memory(&self) -> usize {
        use core::mem::size_of;
        self.pairs.capacity() * size_of::<ProxyPair>()
            + self.links.capacity() * size_of::<Links>()
            + self.heads.capacity() * 4
            // hashbrown: a key, a value and a control byte per bucket.
            + self.index.capacity() * (size_of::<(u64, u32)>() + 1)
    }

    /// Checks the index and the lists against the array.
    pub fn validate(&self) -> Result<(), String> {
        if self.index.len() != self.pairs.len() || self.links.len() != self.pairs.len() {
            return Err(format!(
                "pair cache: {} pairs, {} indexed, {} links",
                self.pairs.len(),
                self.index.len(),
                self.links.len()
            ));
        }
        for (pos, p) in self.pairs.iter().enumerate() {
            if p.a.index() >= p.b.index() {
                return Err(format!("pair {pos} {p:?} is not ordered by slot"));
            }
            if self.index.get(&key(p.a.index(), p.b.index())) != Some(&(pos as u32)) {
                return Err(format!("pair {pos} {p:?} is not indexed at its position"));
            }
        }
        let mut seen = vec![0u8; self.pairs.len()];
        for s in 0..self.heads.len() as u32 {
            let mut pos = self.heads[s as usize];
            let mut prev = NIL;
            while pos != NIL {
                if pos as usize >= self.pairs.len() {
                    return Err(format!("slot {s}: list points past the pairs"));
                }
                let p = self.pairs[pos as usize];
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
