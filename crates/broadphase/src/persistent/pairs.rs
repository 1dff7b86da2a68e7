//! The pair cache: tracked pairs as records, a per-proxy array of
//! `(partner, record)` entries, and the reported pairs as a flat array.
//!
//! A proxy's pairs are contiguous, so walking them issues independent loads
//! (the partners' boxes) that the processor overlaps, instead of chasing a
//! linked list one cache miss at a time. Whether a pair is tracked is found
//! by scanning the shorter of the two proxies' arrays (a few entries; a huge
//! ground box meets a small box's short array), so no hash table is needed.
//! Adding, flagging and removing a pair are O(1) after that lookup. Removal
//! swaps the last entry of each partner array (and of the exact array) into
//! the hole and patches its back reference, so those stay dense and
//! [`BroadPhase::pairs`](super::BroadPhase::pairs) is a plain slice; the
//! removed record itself becomes a hole that the next added pair reuses, so
//! record numbers never change while a pair is tracked (a frame's updates can
//! be collected by record first and applied later, prefetched). The
//! per-proxy arrays share one pool ([`Lists`]): no allocation per proxy.

use crate::mem::HugeVec;
use std::hash::Hasher;

use super::marks::Marks;
use crate::ProxyId;

/// A pair of live proxies, ordered `a < b`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(C)] // four `u32`s, no padding: compared as words in bulk (engine's event diff)
pub struct ProxyPair {
    a: ProxyId,
    b: ProxyId,
}

impl ProxyPair {
    /// The pairs as words, four per pair: equal words, equal pairs.
    #[inline]
    pub(crate) fn words(pairs: &[ProxyPair]) -> &[u32] {
        const _: () = assert!(core::mem::size_of::<ProxyPair>() == 16 && core::mem::align_of::<ProxyPair>() == 4);
        // SAFETY: `ProxyPair` is `repr(C)` over two `repr(C)` `ProxyId`s of
        // two `u32` each: 16 bytes, all of them initialised `u32`s, no
        // padding, alignment 4 (asserted above); the slice covers exactly
        // the memory of `pairs`, borrowed for as long.
        unsafe { core::slice::from_raw_parts(pairs.as_ptr().cast::<u32>(), pairs.len() * 4) }
    }

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

    /// The pair of `a < b`, already in order.
    #[inline]
    pub(crate) fn ordered(a: ProxyId, b: ProxyId) -> Self {
        debug_assert!(a < b);
        Self { a, b }
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

/// A multiplicative hash of a 64-bit key (cell coordinates).
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

/// The flag bit of an entry's record field: the exact boxes overlap.
const EXACT: u32 = 1 << 31;

/// A tracked pair: its ids, its position in the exact array (or `NIL`), and
/// where its entries sit in the arrays of `a` and of `b`. A free record (a
/// hole) has `at[0] == NIL` and the next free record in `at[1]`.
#[derive(Clone, Copy, Debug)]
struct Rec {
    pair: ProxyPair,
    exact: u32,
    at: [u32; 2],
}

/// The record field of an entry: record `pos`, flagged where the exact
/// boxes overlap.
#[inline(always)]
fn entry_field(pos: u32, exact: bool) -> u32 {
    if exact {
        pos | EXACT
    } else {
        pos
    }
}

/// Records the verdict on entry `[partner, record | flag]`: an untrack, or
/// a flag to set where it differs from the entry's.
#[inline(always)]
fn take_verdict(flags: &mut Vec<(u32, bool)>, gone: &mut Vec<u32>, entry: [u32; 2], verdict: Verdict) {
    let r = entry[1];
    match verdict {
        Verdict::Untrack => gone.push(r & !EXACT),
        Verdict::Keep(on) => {
            if on != (r & EXACT != 0) {
                flags.push((r & !EXACT, on));
            }
        }
    }
}

/// What to do with a tracked pair during a walk of a proxy's pairs.
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
pub(crate) struct PairCache {
    recs: HugeVec<Rec>,
    /// The first free record (`NIL`: none) and the number of tracked pairs.
    free: u32,
    live: usize,
    /// Per slot: `[partner, record | EXACT?]`.
    adj: Lists,
    exact: HugeVec<ProxyPair>,
    /// Record of each exact pair.
    exact_of: HugeVec<u32>,
    /// Verdicts collected by [`defer`](Self::defer), not yet applied:
    /// flags to set, as `(record, on)`, and records to untrack.
    flags: Vec<(u32, bool)>,
    gone: Vec<u32>,
    /// Buffers of [`remove_batch`](Self::remove_batch): the removed slots,
    /// the pairs that stay.
    doomed: Marks,
    keep: Vec<(ProxyPair, bool)>,
}

/// A batch of removals is taken by a rebuild only from this many entries
/// on (below, the pass over the records is not worth it; in debug builds,
/// the tests', from one).
const BATCH_MIN: usize = if cfg!(debug_assertions) { 1 } else { 1024 };
/// Nor for fewer entries than one in this many slots: clearing a slot's
/// header costs about a nanosecond, removing a pair one by one some 300
/// (unloading 1e5 of 1.1e6 proxies, `frames`).
const SLOTS_PER_ENTRY: usize = 128;

impl Default for PairCache {
    fn default() -> Self {
        Self {
            recs: HugeVec::new(),
            free: NIL,
            live: 0,
            adj: Lists::default(),
            exact: HugeVec::new(),
            exact_of: HugeVec::new(),
            flags: Vec::new(),
            gone: Vec::new(),
            doomed: Marks::default(),
            keep: Vec::new(),
        }
    }
}

impl PairCache {
    /// The pairs whose exact boxes overlap.
    pub fn pairs(&self) -> &[ProxyPair] {
        &self.exact
    }

    pub fn tracked_len(&self) -> usize {
        self.live
    }

    /// Whether record `pos` is a hole.
    #[inline]
    fn is_free(&self, pos: u32) -> bool {
        self.recs[pos as usize].at[0] == NIL
    }

    /// Makes room for `slots` slots.
    pub fn grow(&mut self, slots: usize) {
        self.adj.grow(slots);
    }

    /// The record of the pair of slots `x`, `y`, if tracked.
    #[inline]
    pub fn position(&self, x: u32, y: u32) -> Option<u32> {
        // PERF: callers pass the slot whose pairs they are working on as
        // `x` (its array is in the cache): a short one is scanned without
        // reading `y`'s array header, a cache miss.
        let lx = &self.adj[x as usize];
        let (list, t) =
            if lx.len() <= 16 || lx.len() <= self.adj[y as usize].len() { (lx, y) } else { (&self.adj[y as usize], x) };
        list.iter().find(|e| e[0] == t).map(|e| e[1] & !EXACT)
    }

    /// Sets the entry flags of record `pos` on both sides.
    #[inline]
    fn mark(&mut self, pos: u32, on: bool) {
        let r = self.recs[pos as usize];
        let v = entry_field(pos, on);
        self.adj[r.pair.a.index() as usize][r.at[0] as usize][1] = v;
        self.adj[r.pair.b.index() as usize][r.at[1] as usize][1] = v;
    }

    /// Flags or unflags record `pos`; returns whether it changed.
    fn set_exact(&mut self, pos: u32, on: bool) -> bool {
        let cur = self.recs[pos as usize].exact;
        if on == (cur != NIL) {
            return false;
        }
        if on {
            let p = self.recs[pos as usize].pair;
            self.recs[pos as usize].exact = self.push_exact(pos, p);
        } else {
            let last = self.exact.len() as u32 - 1;
            if cur != last {
                let moved = self.exact_of[last as usize];
                self.recs[moved as usize].exact = cur;
            }
            self.exact.swap_remove(cur as usize);
            self.exact_of.swap_remove(cur as usize);
            self.recs[pos as usize].exact = NIL;
        }
        self.mark(pos, on);
        true
    }

    /// Trims every array to its length.
    pub fn shrink(&mut self) {
        if self.live == 0 {
            self.recs = HugeVec::new();
            self.free = NIL;
        }
        self.recs.shrink_to_fit();
        self.exact.shrink_to_fit();
        self.exact_of.shrink_to_fit();
        self.flags = Vec::new();
        self.gone = Vec::new();
        self.doomed = Marks::default();
        self.keep = Vec::new();
        self.adj.shrink();
    }

    /// Forgets every pair (keeping the memory).
    pub fn clear(&mut self) {
        let tracked = self.live != 0;
        self.recs.clear();
        self.free = NIL;
        self.live = 0;
        self.exact.clear();
        self.exact_of.clear();
        // Partner lists hold entries only for tracked pairs: with none
        // tracked (frames in flat mode) there is nothing to walk.
        if tracked {
            self.adj.clear();
        }
    }

    /// Makes room for `pairs` more tracked pairs, all of them possibly
    /// flagged, so that a batch of additions (the pairs of a level streamed
    /// in) does not grow the records and arrays by doubling, each doubling
    /// a copy and fresh pages.
    pub fn reserve(&mut self, pairs: usize) {
        self.recs.reserve(pairs);
        self.exact.reserve(pairs);
        self.exact_of.reserve(pairs);
        self.adj.reserve(pairs.saturating_mul(2));
    }

    /// Tracks a pair that is not tracked, flagged `exact` or not.
    pub fn add(&mut self, p: ProxyPair, exact: bool) {
        debug_assert!(self.position(p.a.index(), p.b.index()).is_none(), "pair tracked twice");
        let (sa, sb) = (p.a.index() as usize, p.b.index() as usize);
        let at = [self.adj[sa].len() as u32, self.adj[sb].len() as u32];
        // PERF: the entries are written flagged (not flagged after by
        // `set_exact`, which reads the record back and writes both entries
        // again). With the prefetching in `Engine::begin_inserted`:
        // tracking the 2.8e5 pairs of 1e5 proxies streamed into 1e6 static
        // ones (incremental SAP) 30-33 -> 27.5-29.5 ms.
        let rec = Rec { pair: p, exact: NIL, at };
        let pos = if self.free != NIL {
            let pos = self.free;
            self.free = self.recs[pos as usize].at[1];
            self.recs[pos as usize] = rec;
            pos
        } else {
            self.recs.push(rec);
            self.recs.len() as u32 - 1
        };
        self.live += 1;
        let v = entry_field(pos, exact);
        self.adj.push(sa, [sb as u32, v]);
        self.adj.push(sb, [sa as u32, v]);
        if exact {
            self.recs[pos as usize].exact = self.push_exact(pos, p);
        }
    }

    /// Tracks the pair of slots `slots(item)` (`a < b`) of every item, each
    /// pair once, none tracked before: `pair` gives each one's ids and whether
    /// its exact boxes overlap. The same state as [`add`](Self::add) for
    /// each in turn (records and exact pairs in this order), but each slot's
    /// array placed once, with the room `add`'s doublings would have given
    /// it, instead of moving as it grows.
    pub fn add_all<T: Copy>(
        &mut self,
        items: &[T],
        slots: impl Fn(T) -> (u32, u32),
        mut pair: impl FnMut(u32, u32) -> (ProxyPair, bool),
    ) {
        debug_assert!(self.live == 0 && self.recs.is_empty() && self.exact.is_empty());
        self.adj.place(items.iter().flat_map(|&t| {
            let (a, b) = slots(t);
            [a, b]
        }));
        self.recs.reserve(items.len());
        self.exact.reserve(items.len());
        self.exact_of.reserve(items.len());
        for &t in items {
            let (a, b) = slots(t);
            let (p, exact) = pair(a, b);
            debug_assert!(p.a.index() == a && p.b.index() == b);
            let pos = self.recs.len() as u32;
            let v = entry_field(pos, exact);
            let at = [self.adj.push_placed(a as usize, [b, v]), self.adj.push_placed(b as usize, [a, v])];
            let exact = if exact { self.push_exact(pos, p) } else { NIL };
            self.recs.push(Rec { pair: p, exact, at });
        }
        self.live = items.len();
    }

    /// Appends pair `p` of record `pos` to the exact array; returns its
    /// place there.
    #[inline]
    fn push_exact(&mut self, pos: u32, p: ProxyPair) -> u32 {
        self.exact.push(p);
        self.exact_of.push(pos);
        self.exact.len() as u32 - 1
    }

    /// Removes entry `i` of slot `s`'s array, patching the entry moved into
    /// its place.
    fn drop_entry(&mut self, s: u32, i: u32) {
        self.adj.swap_remove(s as usize, i as usize);
        if let Some(&[_, r]) = self.adj[s as usize].get(i as usize) {
            let rec = &mut self.recs[(r & !EXACT) as usize];
            let side = usize::from(rec.pair.a.index() != s);
            rec.at[side] = i;
        }
    }

    /// Stops tracking record `pos` (which becomes a hole); returns its pair
    /// if it was flagged.
    fn remove_at(&mut self, pos: u32) -> Option<ProxyPair> {
        let was_exact = self.set_exact(pos, false);
        let r = self.recs[pos as usize];
        self.drop_entry(r.pair.a.index(), r.at[0]);
        self.drop_entry(r.pair.b.index(), r.at[1]);
        self.recs[pos as usize].at = [NIL, self.free];
        self.free = pos;
        self.live -= 1;
        was_exact.then_some(r.pair)
    }

    /// Walks slot `s`'s tracked pairs, asking `verdict` about each partner;
    /// sets flags and untracks as told, reporting every change
    /// ([`defer`](Self::defer) then [`apply`](Self::apply)).
    pub fn walk(&mut self, s: u32, verdict: impl FnMut(u32) -> Verdict, report: impl FnMut(PairEvent)) {
        self.defer(s, verdict);
        self.apply(report);
    }

    /// Takes the verdicts of a walk of slot `s`'s tracked pairs without
    /// applying them: the flags to set and the records to untrack, kept
    /// until [`apply`](Self::apply), which may come after the walks of every
    /// proxy of a frame, so that the records of all of them can be
    /// prefetched ahead of their updates. A pair walked from both sides gets
    /// the same verdict twice (its boxes are final), or an untrack from one
    /// side and "apart" from the other; both are harmless, since flags are
    /// set, not flipped, and a hole is not untracked twice (no pair is added
    /// between the walks and `apply`).
    ///
    /// PERF: the verdicts are taken in a read-only pass over the contiguous
    /// entries, so the partners' boxes are loaded independently (the misses
    /// overlap); the rare changes are applied afterwards.
    #[inline]
    pub fn defer(&mut self, s: u32, mut verdict: impl FnMut(u32) -> Verdict) {
        let (flags, gone) = (&mut self.flags, &mut self.gone);
        for &e in &self.adj[s as usize] {
            take_verdict(flags, gone, e, verdict(e[0]));
        }
    }

    /// Copies the entries of the slots `slot(0..n)` into `buf`, one run per
    /// slot, and the end of each run into `ends`: the walks of many proxies
    /// then read their partners from one contiguous buffer and give their
    /// verdicts by [`note`](Self::note).
    ///
    /// PERF: a proxy's entries are two dependent misses away (its array
    /// header, then the array), which a walk that also loads each partner's
    /// boxes cannot hide: here nothing else waits on them, and the headers
    /// are prefetched 32 slots ahead, the arrays 16 ahead.
    pub fn gather(&self, slot: impl Fn(usize) -> u32, n: usize, buf: &mut Vec<[u32; 2]>, ends: &mut Vec<u32>) {
        buf.clear();
        ends.clear();
        for i in 0..n {
            if i + 32 < n {
                self.prefetch_head(slot(i + 32));
            }
            if i + 16 < n {
                self.prefetch_entries(slot(i + 16));
            }
            self.adj.append_to(slot(i) as usize, buf);
            ends.push(buf.len() as u32);
        }
    }

    /// Takes the verdict on one entry of a gathered walk, as
    /// [`defer`](Self::defer) does for each entry it walks.
    #[inline(always)]
    pub fn note(&mut self, entry: [u32; 2], verdict: Verdict) {
        take_verdict(&mut self.flags, &mut self.gone, entry, verdict);
    }

    /// Applies what [`defer`](Self::defer) collected: the flags first, then
    /// the untracks (records do not move, so the record numbers hold);
    /// reports every change once.
    pub fn apply(&mut self, mut report: impl FnMut(PairEvent)) {
        let (mut flags, gone) = (core::mem::take(&mut self.flags), core::mem::take(&mut self.gone));
        // PERF: unflagging a pair moves the exact array's last pair into
        // its place, whose record (anywhere) learns its new position: a
        // miss nothing can prefetch. Flagged first, the new pairs make that
        // tail, their records just loaded (10% of 1e5 moving, about 2200
        // changes a frame: this pass 0.14-0.19 -> 0.11-0.13 ms, one binary
        // alternating the two ways, three rounds).
        let mut on = 0;
        for i in 0..flags.len() {
            if flags[i].1 {
                flags.swap(on, i);
                on += 1;
            }
        }
        self.apply_flags(&flags[..on], &mut report);
        self.apply_flags(&flags[on..], &mut report);
        for (i, &pos) in gone.iter().enumerate() {
            if let Some(&p) = gone.get(i + 8) {
                crate::sweep::prefetch(&self.recs[p as usize]);
            }
            if let Some(&p) = gone.get(i + 4) {
                let r = &self.recs[p as usize];
                if r.at[0] != NIL {
                    self.adj.prefetch_head(r.pair.a.index() as usize);
                    self.adj.prefetch_head(r.pair.b.index() as usize);
                }
            }
            if let Some(&p) = gone.get(i + 2) {
                let r = &self.recs[p as usize];
                if r.at[0] != NIL {
                    let (a, b) = (&self.adj[r.pair.a.index() as usize], &self.adj[r.pair.b.index() as usize]);
                    crate::sweep::prefetch(a.as_ptr().wrapping_add(r.at[0] as usize));
                    crate::sweep::prefetch(b.as_ptr().wrapping_add(r.at[1] as usize));
                    crate::sweep::prefetch(a.as_ptr().wrapping_add(a.len().wrapping_sub(1)));
                    crate::sweep::prefetch(b.as_ptr().wrapping_add(b.len().wrapping_sub(1)));
                }
            }
            if !self.is_free(pos) {
                if let Some(p) = self.remove_at(pos) {
                    report(PairEvent::End(p));
                }
            }
        }
        (self.flags, self.gone) = (flags, gone);
        self.flags.clear();
        self.gone.clear();
    }

    /// Sets the flags of `flags` (`(record, on)`), reporting each change.
    ///
    /// PERF: each update touches a record, the exact array and two entry
    /// arrays, all at random: the records are prefetched 64 steps ahead,
    /// then the entry arrays' headers (32), then their entries (16).
    fn apply_flags(&mut self, flags: &[(u32, bool)], report: &mut impl FnMut(PairEvent)) {
        for (i, &(pos, on)) in flags.iter().enumerate() {
            if let Some(&(p, _)) = flags.get(i + 64) {
                crate::sweep::prefetch(&self.recs[p as usize]);
            }
            if let Some(&(p, _)) = flags.get(i + 32) {
                let r = &self.recs[p as usize];
                self.adj.prefetch_head(r.pair.a.index() as usize);
                self.adj.prefetch_head(r.pair.b.index() as usize);
                if r.exact != NIL {
                    crate::sweep::prefetch(&self.exact_of[r.exact as usize]);
                    crate::sweep::prefetch(&self.exact[r.exact as usize]);
                }
            }
            if let Some(&(p, _)) = flags.get(i + 16) {
                let r = &self.recs[p as usize];
                crate::sweep::prefetch(self.adj[r.pair.a.index() as usize].as_ptr().wrapping_add(r.at[0] as usize));
                crate::sweep::prefetch(self.adj[r.pair.b.index() as usize].as_ptr().wrapping_add(r.at[1] as usize));
            }
            if self.set_exact(pos, on) {
                let p = self.recs[pos as usize].pair;
                report(if on { PairEvent::Begin(p) } else { PairEvent::End(p) });
            }
        }
    }

    /// Prefetches slot `s`'s array header.
    #[inline]
    pub fn prefetch_head(&self, s: u32) {
        self.adj.prefetch_head(s as usize);
    }

    /// Prefetches the end of slot `s`'s entries, where a new pair goes
    /// (reads the header).
    #[inline]
    pub fn prefetch_tail(&self, s: u32) {
        if let Some(e) = self.adj.get(s as usize).and_then(|l| l.last()) {
            crate::sweep::prefetch(e);
        }
    }

    /// Prefetches slot `s`'s entries (reads the header).
    #[inline]
    pub fn prefetch_entries(&self, s: u32) {
        if let Some(list) = self.adj.get(s as usize) {
            let p = list.as_ptr().cast::<u8>();
            for off in (0..core::mem::size_of_val(list).min(256)).step_by(64) {
                crate::sweep::prefetch(p.wrapping_add(off));
            }
        }
    }

    /// Prefetches the records of slot `s`'s pairs (reads its entries).
    #[inline]
    pub fn prefetch_records(&self, s: u32) {
        if let Some(list) = self.adj.get(s as usize) {
            for e in list.iter().take(8) {
                crate::sweep::prefetch(&self.recs[(e[1] & !EXACT) as usize]);
            }
        }
    }

    /// Untracks every pair of the slots `removed`, reporting those that
    /// end. Pair by pair (as [`remove_all`](Self::remove_all), prefetched)
    /// where the batch holds a small share of the tracked pairs; where it
    /// holds at least half of them (a level unloaded), by one pass over the
    /// records and a rebuild from the pairs that stay: each pair removed
    /// one by one writes to both partners' arrays and the exact array at
    /// random, some eight cache misses.
    pub fn remove_batch(&mut self, removed: &[u32], mut report: impl FnMut(PairEvent)) {
        if removed.is_empty() {
            return;
        }
        // The entries of the removed slots: each of their pairs once or
        // twice (both sides removed).
        let mut entries = 0;
        for (i, &s) in removed.iter().enumerate() {
            if let Some(&t) = removed.get(i + 16) {
                self.prefetch_head(t);
            }
            entries += self.adj.get(s as usize).map_or(0, |l| l.len());
        }
        // The rebuild clears every slot's array header: not for a batch
        // whose pairs are few beside the slots (a few removed from a big,
        // mostly static world).
        if entries < self.live.max(BATCH_MIN) || entries * SLOTS_PER_ENTRY < self.adj.slots() {
            for i in 0..removed.len() {
                if let Some(&s) = removed.get(i + 8) {
                    self.prefetch_head(s);
                }
                if let Some(&s) = removed.get(i + 4) {
                    self.prefetch_entries(s);
                }
                if let Some(&s) = removed.get(i + 2) {
                    self.prefetch_records(s);
                }
                self.remove_all(removed[i], &mut report);
            }
            return;
        }
        let mut doomed = core::mem::take(&mut self.doomed);
        for &s in removed {
            doomed.mark(s);
        }
        let mut keep = core::mem::take(&mut self.keep);
        keep.clear();
        for r in self.recs.iter().filter(|r| r.at[0] != NIL) {
            let exact = r.exact != NIL;
            if doomed.has(r.pair.a.index()) || doomed.has(r.pair.b.index()) {
                if exact {
                    report(PairEvent::End(r.pair));
                }
            } else {
                keep.push((r.pair, exact));
            }
        }
        doomed.clear();
        self.clear();
        for &(p, exact) in &keep {
            self.add(p, exact);
        }
        (self.doomed, self.keep) = (doomed, keep);
    }

    /// Untracks every pair of `s`, reporting those that end.
    fn remove_all(&mut self, s: u32, report: &mut impl FnMut(PairEvent)) {
        while let Some(&[_, r]) = self.adj[s as usize].last() {
            if let Some(p) = self.remove_at(r & !EXACT) {
                report(PairEvent::End(p));
            }
        }
    }

    /// Every tracked pair with its record, as slots.
    pub fn tracked(&self) -> impl Iterator<Item = (u32, u32, u32)> + '_ {
        self.recs
            .iter()
            .enumerate()
            .filter(|(_, r)| r.at[0] != NIL)
            .map(|(i, r)| (i as u32, r.pair.a.index(), r.pair.b.index()))
    }

    pub fn memory(&self) -> usize {
        use core::mem::size_of;
        self.recs.capacity() * size_of::<Rec>()
            + self.exact.capacity() * size_of::<ProxyPair>()
            + (self.exact_of.capacity() + self.gone.capacity()) * 4
            + self.flags.capacity() * 8
            + self.doomed.memory()
            + self.keep.capacity() * core::mem::size_of::<(ProxyPair, bool)>()
            + self.adj.memory()
    }

    /// Checks records, entries and the exact array against each other.
    pub fn validate(&self) -> Result<(), String> {
        let mut holes = 0;
        let mut f = self.free;
        while f != NIL {
            match self.recs.get(f as usize) {
                Some(r) if r.at[0] == NIL && holes < self.recs.len() => f = r.at[1],
                _ => return Err(format!("pair cache: free list broken at record {f}")),
            }
            holes += 1;
        }
        if holes + self.live != self.recs.len() || self.recs.iter().filter(|r| r.at[0] == NIL).count() != holes {
            return Err(format!("pair cache: {} records, {} tracked, {holes} free", self.recs.len(), self.live));
        }
        for (pos, r) in self.recs.iter().enumerate() {
            if r.at[0] == NIL {
                continue;
            }
            let p = &r.pair;
            if p.a.index() >= p.b.index() {
                return Err(format!("pair {pos} {p:?} is not ordered by slot"));
            }
            let flag = if r.exact != NIL { EXACT } else { 0 };
            for (side, (s, t)) in [(p.a.index(), p.b.index()), (p.b.index(), p.a.index())].into_iter().enumerate() {
                let e = self.adj.get(s as usize).and_then(|l| l.get(r.at[side] as usize));
                if e != Some(&[t, pos as u32 | flag]) {
                    return Err(format!("pair {pos} {p:?}: entry {side} is {e:?}"));
                }
            }
            if r.exact != NIL
                && (self.exact.get(r.exact as usize) != Some(p) || self.exact_of[r.exact as usize] != pos as u32)
            {
                return Err(format!("pair {pos} {p:?}: broken exact entry {}", r.exact));
            }
        }
        self.adj.validate()?;
        let entries: usize = self.adj.iter().map(<[_]>::len).sum();
        if entries != 2 * self.live {
            return Err(format!("pair cache: {entries} entries for {} pairs", self.live));
        }
        if self.exact.len() != self.exact_of.len()
            || self.exact.len() != self.recs.iter().filter(|r| r.at[0] != NIL && r.exact != NIL).count()
        {
            return Err("pair cache: exact array and flags disagree".into());
        }
        for (s, list) in self.adj.iter().enumerate() {
            let mut partners: Vec<u32> = list.iter().map(|e| e[0]).collect();
            partners.sort_unstable();
            if partners.windows(2).any(|w| w[0] == w[1]) {
                return Err(format!("slot {s}: a partner listed twice"));
            }
        }
        Ok(())
    }
}

/// Where one slot's array sits in a [`Lists`] pool: `len` entries from
/// `start`, room for `cap`.
#[derive(Clone, Copy, Debug, Default)]
struct Head {
    start: u32,
    len: u32,
    cap: u32,
}

impl Head {
    /// Where the array's entries sit in the pool.
    #[inline(always)]
    fn entries(&self) -> core::ops::Range<usize> {
        self.start as usize..(self.start + self.len) as usize
    }
}

/// Per slot, a short array of entries, all of them in one pool.
///
/// PERF: a `Vec` per slot costs an allocation when a slot gets its first
/// pair and a reallocation at every doubling, and its header (24 bytes) is
/// one more place to miss: tracking the pairs of 1e5 proxies streamed into
/// a world of 1e6 static ones allocated an array for most of the statics.
/// Here an array that outgrows its room moves to the end of the pool (or
/// grows in place when it is the last one), leaving a hole; when the holes
/// are more than half the pool, every array is copied down, in slot order.
#[derive(Debug, Default)]
pub(crate) struct Lists {
    pool: HugeVec<[u32; 2]>,
    heads: HugeVec<Head>,
    /// Entries of the pool in holes.
    holes: usize,
}

impl Lists {
    /// The number of slots with room.
    pub fn slots(&self) -> usize {
        self.heads.len()
    }

    /// Makes room for `slots` slots.
    pub fn grow(&mut self, slots: usize) {
        if self.heads.len() < slots {
            self.heads.resize(slots, Head::default());
        }
    }

    /// Slot `s`'s array, if `s` has room.
    #[inline]
    pub fn get(&self, s: usize) -> Option<&[[u32; 2]]> {
        self.heads.get(s).map(|h| &self.pool[h.entries()])
    }

    /// Every slot's array, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = &[[u32; 2]]> + '_ {
        self.heads.iter().map(|h| &self.pool[h.entries()])
    }

    /// Appends slot `s`'s array to `buf`.
    ///
    /// PERF: most arrays hold a few entries, and a copy of a length known
    /// only at run time is a call to `memmove`: those of at most
    /// `SHORT` (8) entries are copied as a block of that many (the pool's
    /// entries after an array are initialised, whatever they hold) and the
    /// excess cut off. 10% of 1e5 proxies moving (`frames`, hash grid,
    /// alone, four runs alternated): the median frame 0.648-0.703 ->
    /// 0.629-0.660 ms, `memmove` 3.8% -> 1.7% of the profile.
    #[inline]
    pub fn append_to(&self, s: usize, buf: &mut Vec<[u32; 2]>) {
        const SHORT: usize = 8;
        let h = self.heads[s];
        let (start, len) = (h.start as usize, h.len as usize);
        if len <= SHORT {
            if let Some(block) = self.pool.get(start..start + SHORT) {
                let block: &[[u32; 2]; SHORT] = block.try_into().expect("a block of SHORT entries");
                let at = buf.len();
                buf.extend_from_slice(block);
                buf.truncate(at + len);
                return;
            }
        }
        buf.extend_from_slice(&self.pool[start..start + len]);
    }

    /// Makes room for `entries` more entries, and for the arrays that move
    /// as they grow (as much again).
    pub fn reserve(&mut self, entries: usize) {
        self.pool.reserve(entries.saturating_mul(2));
    }

    /// Appends `e` to slot `s`'s array.
    #[inline]
    pub fn push(&mut self, s: usize, e: [u32; 2]) {
        let h = self.heads[s];
        if h.len == h.cap {
            self.relocate(s);
        }
        let h = &mut self.heads[s];
        self.pool[(h.start + h.len) as usize] = e;
        h.len += 1;
    }

    /// Empties every array and lays out new ones for the entries `slots`
    /// names (a slot once per entry it will get), each with the room
    /// [`push`](Self::push) would have grown it to (four, then doubling),
    /// one after the other in slot order: [`push_placed`](Self::push_placed)
    /// then fills them without moving any.
    pub fn place(&mut self, slots: impl Iterator<Item = u32>) {
        self.clear();
        for s in slots {
            self.heads[s as usize].cap += 1;
        }
        let mut start = 0usize;
        for h in self.heads.iter_mut() {
            let need = h.cap;
            h.cap = if need == 0 { 0 } else { need.max(4).next_power_of_two() };
            h.start = start as u32;
            start += h.cap as usize;
        }
        assert!(start <= u32::MAX as usize, "more than 2^32 pair entries");
        self.pool.resize(start, [0; 2]);
    }

    /// Appends `e` to slot `s`'s array, which has room for it (see
    /// [`place`](Self::place)); returns its place in the array.
    #[inline]
    pub fn push_placed(&mut self, s: usize, e: [u32; 2]) -> u32 {
        let h = &mut self.heads[s];
        debug_assert!(h.len < h.cap);
        let at = h.len;
        self.pool[(h.start + at) as usize] = e;
        h.len += 1;
        at
    }

    /// Gives slot `s`'s full array twice the room (four entries at first).
    #[cold]
    fn relocate(&mut self, s: usize) {
        let h = self.heads[s];
        let cap = if h.cap == 0 { 4 } else { h.cap * 2 };
        if h.cap > 0 && (h.start + h.cap) as usize == self.pool.len() {
            // The last array in the pool grows where it is.
            self.pool.resize((h.start + cap) as usize, [0; 2]);
            self.heads[s].cap = cap;
            return;
        }
        if self.holes > 4096 && 2 * self.holes > self.pool.len() {
            self.compact(false);
        }
        let h = self.heads[s];
        let start = self.pool.len();
        assert!(start + cap as usize <= u32::MAX as usize, "more than 2^32 pair entries");
        self.pool.extend_from_within(h.entries());
        self.pool.resize(start + cap as usize, [0; 2]);
        self.holes += h.cap as usize;
        self.heads[s] = Head { start: start as u32, len: h.len, cap };
    }

    /// Copies every array down into a new pool, in slot order, with its
    /// room (`tight`: no more room than entries).
    fn compact(&mut self, tight: bool) {
        let room: usize = self.heads.iter().map(|h| if tight { h.len } else { h.cap } as usize).sum();
        let mut pool = HugeVec::new();
        pool.reserve(room);
        for h in self.heads.iter_mut() {
            let start = pool.len();
            pool.extend_from_slice(&self.pool[h.entries()]);
            if tight {
                h.cap = h.len;
            }
            pool.resize(start + h.cap as usize, [0; 2]);
            h.start = start as u32;
        }
        self.pool = pool;
        self.holes = 0;
    }

    /// Removes entry `i` of slot `s`'s array, the last one taking its place.
    #[inline]
    pub fn swap_remove(&mut self, s: usize, i: usize) {
        let h = &mut self.heads[s];
        assert!(i < h.len as usize, "entry {i} of an array of {}", h.len);
        h.len -= 1;
        let (hole, last) = (h.start as usize + i, (h.start + h.len) as usize);
        self.pool[hole] = self.pool[last];
    }

    /// Empties every array (keeping the pool's memory).
    pub fn clear(&mut self) {
        self.pool.clear();
        self.heads.fill(Head::default());
        self.holes = 0;
    }

    /// Trims the pool to the entries.
    pub fn shrink(&mut self) {
        self.compact(true);
        self.pool.shrink_to_fit();
        self.heads.shrink_to_fit();
    }

    /// Starts loading slot `s`'s head.
    #[inline]
    pub fn prefetch_head(&self, s: usize) {
        if let Some(h) = self.heads.get(s) {
            crate::sweep::prefetch(h);
        }
    }

    pub fn memory(&self) -> usize {
        self.pool.capacity() * 8 + self.heads.capacity() * core::mem::size_of::<Head>()
    }

    /// Checks that the arrays lie in the pool, apart, with the holes counted.
    pub fn validate(&self) -> Result<(), String> {
        if self.heads.iter().any(|h| h.len > h.cap || h.start as usize + h.cap as usize > self.pool.len()) {
            return Err("pair cache: an array overflows its room or the pool".into());
        }
        let mut spans: Vec<(u32, u32)> = self.heads.iter().filter(|h| h.cap > 0).map(|h| (h.start, h.cap)).collect();
        spans.sort_unstable();
        if spans.windows(2).any(|w| w[0].0 + w[0].1 > w[1].0) {
            return Err("pair cache: two arrays overlap in the pool".into());
        }
        let room: usize = spans.iter().map(|s| s.1 as usize).sum();
        if room + self.holes != self.pool.len() {
            return Err(format!("pair cache: room {room} and holes {} in a pool of {}", self.holes, self.pool.len()));
        }
        Ok(())
    }
}

impl core::ops::Index<usize> for Lists {
    type Output = [[u32; 2]];

    #[inline]
    fn index(&self, s: usize) -> &[[u32; 2]] {
        let h = self.heads[s];
        &self.pool[h.entries()]
    }
}

impl core::ops::IndexMut<usize> for Lists {
    #[inline]
    fn index_mut(&mut self, s: usize) -> &mut [[u32; 2]] {
        let h = self.heads[s];
        &mut self.pool[h.entries()]
    }
}

#[cfg(test)]
mod tests {
    use super::{Lists, PairCache, PairEvent, ProxyPair};
    use crate::ProxyId;

    /// A cache over `slots` slots tracking every pair `(x, y)` with
    /// `x < y`, `(x + y) % 3 == 0`, flagged when `x * y` is even.
    fn sample(slots: u32) -> PairCache {
        let mut c = PairCache::default();
        c.grow(slots as usize);
        for x in 0..slots {
            for y in x + 1..slots {
                if (x + y) % 3 == 0 {
                    c.add(ProxyPair::new(ProxyId::new(x, 0), ProxyId::new(y, 0)), x * y % 2 == 0);
                }
            }
        }
        c
    }

    fn state(c: &PairCache) -> (Vec<(u32, u32)>, Vec<ProxyPair>) {
        let mut tracked: Vec<_> = c.tracked().map(|(_, a, b)| (a, b)).collect();
        let mut exact = c.pairs().to_vec();
        tracked.sort_unstable();
        exact.sort_unstable();
        (tracked, exact)
    }

    #[test]
    fn batch_removal_matches_one_by_one() {
        // Few of the pairs (one by one), then most of them (a rebuild).
        for removed in [vec![5u32], (0..40).filter(|s| s % 4 != 1).collect::<Vec<_>>()] {
            let (mut batch, mut single) = (sample(48), sample(48));
            let (mut eb, mut es) = (Vec::new(), Vec::new());
            batch.remove_batch(&removed, |e| eb.push(e));
            for &s in &removed {
                single.remove_all(s, &mut |e| es.push(e));
            }
            batch.validate().unwrap();
            single.validate().unwrap();
            assert_eq!(state(&batch), state(&single));
            eb.sort_unstable();
            es.sort_unstable();
            assert!(!eb.is_empty() && eb.iter().all(|e| matches!(e, PairEvent::End(_))));
            assert_eq!(eb, es);
            assert!(batch.tracked().all(|(_, a, b)| !removed.contains(&a) && !removed.contains(&b)));
        }
    }

    /// The pairs of `sample(slots)`, in its order, as `(x, y, exact)`.
    fn sample_pairs(slots: u32) -> Vec<(u32, u32, bool)> {
        (0..slots)
            .flat_map(|x| (x + 1..slots).filter(move |y| (x + y) % 3 == 0).map(move |y| (x, y, x * y % 2 == 0)))
            .collect()
    }

    #[test]
    fn add_all_matches_one_by_one() {
        let want = sample(60);
        let pairs = sample_pairs(60);
        // Into an empty cache, and into one that tracked pairs and lost them
        // all (its arrays keep their room), after a clear.
        let mut used = sample(30);
        let gone: Vec<u32> = (0..30).collect();
        used.remove_batch(&gone, |_| {});
        used.grow(60);
        for mut c in [PairCache::default(), used] {
            c.grow(60);
            c.clear();
            c.add_all(
                &pairs,
                |(x, y, _)| (x, y),
                |x, y| {
                    let e = pairs.iter().find(|p| (p.0, p.1) == (x, y)).expect("a listed pair").2;
                    (ProxyPair::new(ProxyId::new(x, 0), ProxyId::new(y, 0)), e)
                },
            );
            c.validate().unwrap();
            assert_eq!(c.tracked_len(), want.tracked_len());
            assert_eq!(c.pairs(), want.pairs(), "the exact pairs in the same order");
            assert_eq!(state(&c), state(&want));
            for &(x, y, _) in &pairs {
                assert_eq!(c.position(x, y), want.position(x, y));
            }
            // Arrays placed with room grow and shrink as usual afterwards.
            for x in (0..20).filter(|x| (x + 59) % 3 != 0) {
                c.add(ProxyPair::new(ProxyId::new(x, 0), ProxyId::new(59, 0)), true);
            }
            let mut ends = Vec::new();
            c.remove_all(3, &mut |e| ends.push(e));
            c.validate().unwrap();
            assert!(!ends.is_empty() && c.tracked().all(|(_, a, b)| a != 3 && b != 3));
        }
    }

    #[test]
    fn lists_grow_move_and_compact() {
        let mut l = Lists::default();
        l.grow(3);
        // Interleaved pushes make every growth but the last array's move an
        // array, leaving holes, enough of them to compact.
        for k in 0..30_000u32 {
            l.push((k % 3) as usize, [k, k]);
        }
        l.validate().unwrap();
        for s in 0..3 {
            let want: Vec<[u32; 2]> = (0..30_000u32).filter(|k| (k % 3) as usize == s).map(|k| [k, k]).collect();
            assert_eq!(&l[s], &want[..]);
        }
        // 29 998 is the last entry of slot 1: it takes the first one's place.
        l.swap_remove(1, 0);
        assert_eq!(l[1][0], [29_998, 29_998]);
        l.shrink();
        l.validate().unwrap();
        assert_eq!(l.iter().map(<[_]>::len).sum::<usize>(), 29_999);
        assert_eq!(l.memory(), 29_999 * 8 + 3 * 12);
        l.clear();
        l.validate().unwrap();
        assert!(l.iter().all(<[_]>::is_empty));
    }
}
