//! Proxy slots: boxes, kinds, filters, user data and generations in parallel
//! arrays, a LIFO free list, and the changes recorded since the last update.

use super::pairs::NIL;
use super::{BodyKind, Filter, Proxy};
use crate::mem::HugeVec;
use crate::sort::payload;
use crate::{Aabb, ProxyError, ProxyId, Scalar};

/// The most proxies one broad phase holds: slots are `u32` and the sorted
/// endpoints of sweep-and-prune keep a flag in the low bit.
pub const MAX_PROXIES: usize = (1 << 31) - 1;

/// The life of a slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// On the free list.
    Free,
    /// Inserted since the last update: not yet indexed, paired or queried.
    Inserting,
    /// Indexed and paired.
    Live,
    /// Removed since the last update: still indexed and paired (its pairs end
    /// at the update), no longer queried, its id already stale.
    Removing,
    /// Inserted and removed again before an update: never indexed.
    Cancelled,
}

/// The words of a slot that checking and recording a move read together,
/// in one array: the slot's state and its pending change (see
/// [`Store::meta`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meta {
    /// Position in `changes`, valid only while `epoch` is the store's.
    pending: u32,
    /// The store's epoch when `pending` was written.
    epoch: u16,
    pub state: State,
}

impl Meta {
    fn new(state: State) -> Self {
        Self { pending: NIL, epoch: 0, state }
    }
}

/// Typical sizes of a set of boxes (see [`Store::sizes`]).
#[derive(Clone, Copy, Debug)]
pub struct Sizes {
    pub q90: f64,
    pub spread: f64,
    pub count: usize,
}

/// A pending change of a live proxy: small, since a frame in which
/// everything moves writes one per proxy; the rarer filter and velocity
/// wait in an [`Extra`].
#[derive(Clone, Copy, Debug)]
pub struct Change<S: Scalar, const D: usize> {
    pub slot: u32,
    /// Position in `extras`, or `NIL`.
    extra: u32,
    pub aabb: Option<Aabb<S, D>>,
}

/// A pending filter change, or a velocity given with a box.
#[derive(Clone, Copy, Debug, Default)]
pub struct Extra<const D: usize> {
    pub filter: Option<Filter>,
    /// The caller's expected displacement per update, if given.
    pub velocity: Option<[f64; D]>,
}

/// What a batch of moves overwrote that a later refusal of the batch
/// restores (see [`Store::set_aabb_batch`]): the box of a slot still
/// inserting, or a change recorded before the batch with its extra.
#[derive(Clone, Copy, Debug)]
enum Undo<S: Scalar, const D: usize> {
    Box(u32, Aabb<S, D>),
    Change(u32, Change<S, D>, Option<Extra<D>>),
}

/// The slots. `aabb` and `filter` hold the *applied* values (those of the
/// last update) for live proxies, and the given ones for proxies still
/// inserting; pending changes of live proxies wait in `changes`.
pub struct Store<S: Scalar, const D: usize> {
    pub(crate) aabb: HugeVec<Aabb<S, D>>,
    pub filter: Vec<Filter>,
    pub kind: Vec<BodyKind>,
    /// State and pending change per slot.
    ///
    /// PERF: in one array, since a move reads both at one slot, at random
    /// (the caller's order), when it is recorded. Applying the changes
    /// reads neither: a pending mark is valid only in the epoch that wrote
    /// it (so the update clears them all by moving to the next epoch), and
    /// a removal voids its proxy's pending change (so no change is applied
    /// to a proxy that is not live).
    pub(crate) meta: HugeVec<Meta>,
    /// The epoch of the pending marks: advanced by each update that takes
    /// the changes, never 0 (the epoch of marks never written).
    epoch: u16,
    /// Extras of voided changes (named by no change any more).
    voided: usize,
    pub(crate) generation: HugeVec<u32>,
    pub user: Vec<u64>,
    pub changes: Vec<Change<S, D>>,
    pub extras: Vec<Extra<D>>,
    /// Slots inserted (maybe cancelled since) since the last update.
    pub inserted: Vec<u32>,
    /// Slots removed since the last update (state `Removing`).
    pub removed: Vec<u32>,
    /// Slots inserted and removed since the last update.
    pub cancelled: Vec<u32>,
    /// The undo log of the batch of moves in progress (empty between calls).
    undo: Vec<Undo<S, D>>,
    free: Vec<u32>,
    live: usize,
    /// Taken slots (not free) whose kind or filter can refuse a pair: not
    /// dynamic, or a filter other than `Filter::ALL`. At zero every pair is
    /// allowed and the engine skips the checks.
    special: usize,
    /// Taken slots whose filter is not `Filter::ALL` (at zero only the
    /// kinds can refuse a pair).
    filtered: usize,
}

/// Whether a proxy accepts every pair with a dynamic proxy of filter ALL
/// and is accepted by every other proxy's kind rule (dynamic, filter ALL).
#[inline]
fn plain(kind: BodyKind, filter: &Filter) -> bool {
    kind == BodyKind::Dynamic && *filter == Filter::ALL
}

impl<S: Scalar, const D: usize> Default for Store<S, D> {
    fn default() -> Self {
        Self {
            aabb: HugeVec::new(),
            filter: Vec::new(),
            kind: Vec::new(),
            meta: HugeVec::new(),
            epoch: 1,
            voided: 0,
            generation: HugeVec::new(),
            user: Vec::new(),
            changes: Vec::new(),
            extras: Vec::new(),
            inserted: Vec::new(),
            removed: Vec::new(),
            cancelled: Vec::new(),
            undo: Vec::new(),
            free: Vec::new(),
            live: 0,
            special: 0,
            filtered: 0,
        }
    }
}

impl<S: Scalar, const D: usize> Store<S, D> {
    /// Live proxies, counting those inserted since the last update.
    pub fn len(&self) -> usize {
        self.live
    }

    pub fn slots(&self) -> usize {
        self.meta.len()
    }

    /// Whether a slot is in the index (live, or removed since the update).
    #[inline]
    pub fn indexed(&self, s: u32) -> bool {
        matches!(self.meta[s as usize].state, State::Live | State::Removing)
    }

    #[inline]
    pub fn id(&self, s: u32) -> ProxyId {
        ProxyId::new(s, self.generation[s as usize])
    }

    /// The sizes an index is tuned by, over `slots`: the 90th percentile of
    /// the boxes' largest extents, the largest spread of the boxes on an
    /// axis, and the count. `None` for no slots.
    pub fn sizes(&self, slots: impl Iterator<Item = u32>) -> Option<Sizes> {
        let mut ext: Vec<f64> = Vec::new();
        let (mut lo, mut hi) = ([f64::INFINITY; D], [f64::NEG_INFINITY; D]);
        for s in slots {
            let b = &self.aabb[s as usize];
            ext.push((0..D).map(|k| b.extent(k)).fold(0.0, f64::max));
            for k in 0..D {
                lo[k] = lo[k].min(b.min()[k].to_f64());
                hi[k] = hi[k].max(b.max()[k].to_f64());
            }
        }
        let q = (ext.len() * 9 / 10).min(ext.len().checked_sub(1)?);
        let q90 = *ext.select_nth_unstable_by(q, f64::total_cmp).1;
        let spread = (0..D).map(|k| hi[k] - lo[k]).fold(0.0, f64::max);
        Some(Sizes { q90, spread, count: ext.len() })
    }

    /// Prefetches what checking and changing slot `s` reads.
    #[inline]
    pub fn prefetch(&self, s: u32) {
        let i = s as usize;
        if i < self.meta.len() {
            crate::sweep::prefetch(&self.generation[i]);
            crate::sweep::prefetch(&self.meta[i]);
        }
    }

    /// The slot of a live id.
    pub fn slot(&self, id: ProxyId) -> Result<u32, ProxyError> {
        let s = id.index() as usize;
        if s < self.meta.len()
            && self.generation[s] == id.generation()
            && matches!(self.meta[s].state, State::Inserting | State::Live)
        {
            Ok(id.index())
        } else {
            Err(ProxyError::Stale { id })
        }
    }

    pub fn check_room(&self, more: usize) -> Result<(), ProxyError> {
        if self.live + more > MAX_PROXIES {
            Err(ProxyError::TooManyProxies { max: MAX_PROXIES })
        } else {
            Ok(())
        }
    }

    /// Makes room for `more` proxies beyond the free slots in one step (a
    /// batch insert then grows no array proxy by proxy).
    pub fn reserve(&mut self, more: usize) {
        let more = more.saturating_sub(self.free.len());
        self.aabb.reserve(more);
        self.filter.reserve(more);
        self.kind.reserve(more);
        self.meta.reserve(more);
        self.generation.reserve(more);
        self.user.reserve(more);
        self.inserted.reserve(more);
    }

    /// Takes a slot for a new proxy (room checked by the caller).
    pub fn insert(&mut self, p: &Proxy<S, D>) -> ProxyId {
        let s = match self.free.pop() {
            Some(s) => {
                let i = s as usize;
                self.aabb[i] = p.aabb;
                self.filter[i] = p.filter;
                self.kind[i] = p.kind;
                self.meta[i].state = State::Inserting;
                self.user[i] = p.user;
                s
            }
            None => {
                let s = self.meta.len() as u32;
                self.aabb.push(p.aabb);
                self.filter.push(p.filter);
                self.kind.push(p.kind);
                self.meta.push(Meta::new(State::Inserting));
                self.generation.push(0);
                self.user.push(p.user);
                s
            }
        };
        if !plain(p.kind, &p.filter) {
            self.special += 1;
        }
        self.filtered += usize::from(p.filter != Filter::ALL);
        self.inserted.push(s);
        self.live += 1;
        self.id(s)
    }

    /// Inserts `proxies` taken in `order` (a permutation of their indices,
    /// in the payloads of sort keys) as [`insert`](Self::insert) one by one
    /// would, and writes each one's id to `ids[i]`: the first ones into the
    /// free slots, one by one, the others into new slots appended column by
    /// column (every column extended in one pass).
    ///
    /// PERF: before, a single free slot (one proxy removed since the last
    /// batch) sent the whole batch through `insert`, six pushes a proxy: 4%
    /// of the profile of 1e5 arrivals into 1e6 static proxies (`frames`,
    /// whose settled world has one). Three alternated rounds: tree
    /// 132.9-133.8 -> 128.5-133.1 ms, incremental SAP 120.4-121.2 ->
    /// 117.7-121.1 ms.
    pub fn insert_ordered(&mut self, proxies: &[Proxy<S, D>], order: &[u64], ids: &mut [ProxyId]) {
        debug_assert_eq!(order.len(), proxies.len());
        debug_assert_eq!(ids.len(), proxies.len());
        let (reuse, order) = order.split_at(self.free.len().min(order.len()));
        for &k in reuse {
            let i = payload(k) as usize;
            ids[i] = self.insert(&proxies[i]);
        }
        if order.is_empty() {
            return;
        }
        debug_assert!(self.free.is_empty());
        let first = self.meta.len();
        let n = order.len();
        self.aabb.reserve(n);
        self.filter.reserve(n);
        self.kind.reserve(n);
        self.user.reserve(n);
        // PERF: the proxies are read in `order`, that is, at random: one
        // pass, fetching ahead, copies each into every column.
        for (k, &key) in order.iter().enumerate() {
            if let Some(&ahead) = order.get(k + 32) {
                crate::sweep::prefetch(&proxies[payload(ahead) as usize]);
                crate::sweep::prefetch(&ids[payload(ahead) as usize]);
            }
            let i = payload(key);
            let p = &proxies[i as usize];
            self.aabb.push(p.aabb);
            self.filter.push(p.filter);
            self.kind.push(p.kind);
            self.user.push(p.user);
            self.special += usize::from(!plain(p.kind, &p.filter));
            self.filtered += usize::from(p.filter != Filter::ALL);
            ids[i as usize] = ProxyId::new((first + k) as u32, 0);
        }
        self.meta.resize(first + n, Meta::new(State::Inserting));
        self.generation.resize(first + n, 0);
        self.inserted.extend(first as u32..(first + n) as u32);
        self.live += n;
    }

    /// The position of slot `s`'s pending change, if it has one.
    #[inline]
    fn pending(&self, s: usize) -> Option<usize> {
        let m = &self.meta[s];
        (m.epoch == self.epoch).then_some(m.pending as usize)
    }

    /// The pending change record of a live slot, created on first use.
    fn change(&mut self, s: u32) -> &mut Change<S, D> {
        let i = s as usize;
        let p = match self.pending(i) {
            Some(p) => p,
            None => {
                let p = self.changes.len();
                self.meta[i].pending = p as u32;
                self.meta[i].epoch = self.epoch;
                self.changes.push(Change { slot: s, extra: NIL, aabb: None });
                p
            }
        };
        &mut self.changes[p]
    }

    /// Takes the recorded changes, for an update to apply, and voids every
    /// pending mark (by the next epoch).
    pub fn take_changes(&mut self) -> Vec<Change<S, D>> {
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            // After 65535 updates: every mark void by hand, once.
            self.meta.iter_mut().for_each(|m| m.epoch = 0);
            self.epoch = 1;
        }
        core::mem::take(&mut self.changes)
    }

    /// Hands back the buffer of the changes taken, applied, and drops
    /// their extras.
    pub fn finish_changes(&mut self, mut changes: Vec<Change<S, D>>) {
        changes.clear();
        self.changes = changes;
        self.extras.clear();
        self.voided = 0;
    }

    /// The extra record of a live slot's pending change, created on first use.
    fn extra(&mut self, s: u32) -> &mut Extra<D> {
        let n = self.extras.len() as u32;
        let c = self.change(s);
        if c.extra == NIL {
            c.extra = n;
        }
        let e = c.extra as usize;
        if e == self.extras.len() {
            self.extras.push(Extra::default());
        }
        &mut self.extras[e]
    }

    /// The filter and velocity of a change, if given.
    #[inline]
    pub fn extra_of(&self, c: &Change<S, D>) -> Extra<D> {
        if c.extra == NIL {
            Extra::default()
        } else {
            self.extras[c.extra as usize]
        }
    }

    /// Removes a proxy whose slot was checked.
    pub fn remove(&mut self, s: u32) {
        let i = s as usize;
        match self.meta[i].state {
            State::Inserting => {
                self.meta[i].state = State::Cancelled;
                self.cancelled.push(s);
            }
            State::Live => {
                self.meta[i].state = State::Removing;
                self.removed.push(s);
                // Its pending change, if any, is void: the update applies
                // changes without looking at states.
                if let Some(p) = self.pending(i) {
                    let c = &mut self.changes[p];
                    c.aabb = None;
                    if c.extra != NIL {
                        c.extra = NIL;
                        self.voided += 1;
                    }
                }
            }
            other => unreachable!("remove of a checked slot in state {other:?}"),
        }
        self.live -= 1;
    }

    pub fn set_aabb(&mut self, s: u32, aabb: Aabb<S, D>, velocity: Option<[f64; D]>) {
        if self.meta[s as usize].state == State::Inserting {
            self.aabb[s as usize] = aabb;
        } else {
            let c = self.change(s);
            c.aabb = Some(aabb);
            let has_extra = c.extra != NIL;
            // A box given without a velocity drops one given before.
            if velocity.is_some() || has_extra {
                self.extra(s).velocity = velocity;
            }
        }
    }

    /// Moves the proxies of `moves` as [`set_aabb`](Self::set_aabb) one by
    /// one would (a proxy moved twice takes its last box), or, if an id is
    /// stale, returns its error with the store as it was before the call.
    ///
    /// PERF: one pass checks and records each move, the slot's words
    /// prefetched 64 moves ahead; a refusal undoes the batch from a log of
    /// what it overwrote, which stays empty unless a proxy had a change
    /// pending or was still inserting. (Before, a first pass checked every
    /// id and a second recorded the moves, loading each slot's words twice:
    /// 10% of 1e5 moving, `frames`, the second pass took 0.15 of 0.29 ms.)
    pub fn set_aabb_batch(&mut self, moves: &[(ProxyId, Aabb<S, D>)]) -> Result<(), ProxyError> {
        let (changes, extras) = (self.changes.len(), self.extras.len());
        self.undo.clear();
        for (i, &(id, b)) in moves.iter().enumerate() {
            if let Some(&(ahead, _)) = moves.get(i + 64) {
                self.prefetch(ahead.index());
            }
            let s = match self.slot(id) {
                Ok(s) => s,
                Err(e) => {
                    self.undo_batch(changes, extras);
                    return Err(e);
                }
            };
            let i = s as usize;
            if self.meta[i].state == State::Inserting {
                self.undo.push(Undo::Box(s, self.aabb[i]));
            } else if let Some(p) = self.pending(i).filter(|&p| p < changes) {
                let c = self.changes[p];
                let extra = (c.extra != NIL && (c.extra as usize) < extras).then(|| self.extras[c.extra as usize]);
                self.undo.push(Undo::Change(p as u32, c, extra));
            }
            self.set_aabb(s, b, None);
        }
        self.undo.clear();
        Ok(())
    }

    /// Takes back the moves of a refused batch that started with `changes`
    /// changes and `extras` extras recorded.
    #[cold]
    fn undo_batch(&mut self, changes: usize, extras: usize) {
        while let Some(u) = self.undo.pop() {
            match u {
                Undo::Box(s, b) => self.aabb[s as usize] = b,
                Undo::Change(at, c, extra) => {
                    if let Some(e) = extra {
                        self.extras[c.extra as usize] = e;
                    }
                    self.changes[at as usize] = c;
                }
            }
        }
        for c in &self.changes[changes..] {
            self.meta[c.slot as usize].epoch = self.epoch.wrapping_sub(1);
        }
        self.changes.truncate(changes);
        self.extras.truncate(extras);
    }

    pub fn set_filter(&mut self, s: u32, filter: Filter) {
        if self.meta[s as usize].state == State::Inserting {
            self.write_filter(s, filter);
        } else {
            self.extra(s).filter = Some(filter);
        }
    }

    /// The latest box given to a live slot.
    pub fn latest_aabb(&self, s: u32) -> Aabb<S, D> {
        match self.pending(s as usize).and_then(|p| self.changes[p].aabb) {
            Some(b) => b,
            None => self.aabb[s as usize],
        }
    }

    /// Writes the filter a slot holds, keeping the count of special slots.
    pub fn write_filter(&mut self, s: u32, filter: Filter) {
        let i = s as usize;
        let kind = self.kind[i];
        self.special = self.special - usize::from(!plain(kind, &self.filter[i])) + usize::from(!plain(kind, &filter));
        self.filtered = self.filtered - usize::from(self.filter[i] != Filter::ALL) + usize::from(filter != Filter::ALL);
        self.filter[i] = filter;
    }

    /// Whether every pair of taken slots is allowed by kinds and filters
    /// (every proxy dynamic with filter ALL).
    #[inline]
    pub fn all_plain(&self) -> bool {
        self.special == 0
    }

    /// Whether every taken slot has the filter `Filter::ALL` (only kinds
    /// can refuse a pair).
    #[inline]
    pub fn no_filters(&self) -> bool {
        self.filtered == 0
    }

    /// The counts of special and filtered slots, counted again (for
    /// `validate`).
    fn check_special(&self) -> Result<(), String> {
        let taken = || (0..self.meta.len()).filter(|&i| self.meta[i].state != State::Free);
        let n = taken().filter(|&i| !plain(self.kind[i], &self.filter[i])).count();
        let f = taken().filter(|&i| self.filter[i] != Filter::ALL).count();
        if n != self.special {
            Err(format!("{} special slots counted, {n} found", self.special))
        } else if f != self.filtered {
            Err(format!("{} filtered slots counted, {f} found", self.filtered))
        } else {
            Ok(())
        }
    }

    /// Returns a slot to the free list with a new generation.
    pub fn free(&mut self, s: u32) {
        let i = s as usize;
        if !plain(self.kind[i], &self.filter[i]) {
            self.special -= 1;
        }
        self.filtered -= usize::from(self.filter[i] != Filter::ALL);
        self.meta[i].state = State::Free;
        self.generation[i] = self.generation[i].wrapping_add(1);
        self.free.push(s);
    }

    /// Trims every array to its length.
    pub fn shrink(&mut self) {
        self.aabb.shrink_to_fit();
        self.filter.shrink_to_fit();
        self.kind.shrink_to_fit();
        self.meta.shrink_to_fit();
        self.generation.shrink_to_fit();
        self.user.shrink_to_fit();
        self.changes.shrink_to_fit();
        self.extras.shrink_to_fit();
        self.inserted.shrink_to_fit();
        self.removed.shrink_to_fit();
        self.cancelled.shrink_to_fit();
        self.free.shrink_to_fit();
        self.undo = Vec::new();
    }

    pub fn memory(&self) -> usize {
        use core::mem::size_of;
        self.aabb.capacity() * size_of::<Aabb<S, D>>()
            + self.filter.capacity() * size_of::<Filter>()
            + self.kind.capacity() * size_of::<BodyKind>()
            + self.meta.capacity() * size_of::<Meta>()
            + self.generation.capacity() * 4
            + self.user.capacity() * 8
            + self.changes.capacity() * size_of::<Change<S, D>>()
            + self.extras.capacity() * size_of::<Extra<D>>()
            + self.undo.capacity() * size_of::<Undo<S, D>>()
            + (self.inserted.capacity() + self.removed.capacity() + self.cancelled.capacity() + self.free.capacity())
                * 4
    }

    pub fn validate(&self) -> Result<(), String> {
        let n = self.meta.len();
        if !self.undo.is_empty() {
            return Err(format!("store: {} undo records outside a batch", self.undo.len()));
        }
        for (name, len) in [
            ("aabb", self.aabb.len()),
            ("filter", self.filter.len()),
            ("kind", self.kind.len()),
            ("generation", self.generation.len()),
            ("user", self.user.len()),
        ] {
            if len != n {
                return Err(format!("store: {name} has {len} slots, meta has {n}"));
            }
        }
        let live = self.meta.iter().filter(|m| matches!(m.state, State::Inserting | State::Live)).count();
        if live != self.live {
            return Err(format!("store: {live} live slots, counted {}", self.live));
        }
        for &s in &self.free {
            if self.meta[s as usize].state != State::Free {
                return Err(format!("store: slot {s} is on the free list in state {:?}", self.meta[s as usize].state));
            }
        }
        if self.free.len() != self.meta.iter().filter(|m| m.state == State::Free).count() {
            return Err("store: free slots missing from the free list".into());
        }
        let mut extras = 0;
        for (c, ch) in self.changes.iter().enumerate() {
            if self.pending(ch.slot as usize) != Some(c) {
                return Err(format!("store: change {c} of slot {} is not its pending record", ch.slot));
            }
            if self.meta[ch.slot as usize].state == State::Removing && (ch.aabb.is_some() || ch.extra != NIL) {
                return Err(format!("store: change {c} of removed slot {} is not void", ch.slot));
            }
            if ch.extra != NIL {
                extras += 1;
                if ch.extra as usize >= self.extras.len() {
                    return Err(format!("store: change {c} names extra {} of {}", ch.extra, self.extras.len()));
                }
            }
        }
        if extras + self.voided != self.extras.len() {
            return Err(format!(
                "store: {} extras, {extras} named by changes, {} voided",
                self.extras.len(),
                self.voided
            ));
        }
        let pending = self.meta.iter().filter(|m| m.epoch == self.epoch).count();
        if pending != self.changes.len() {
            return Err(format!("store: {pending} pending marks, {} changes", self.changes.len()));
        }
        self.check_special().map_err(|e| format!("store: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cube(x: f64) -> Aabb<f64, 2> {
        Aabb::new([x, 0.0], [x + 1.0, 1.0]).unwrap()
    }

    /// Six proxies: slots 0-3 live (as an update leaves them), 4 and 5
    /// still inserting; slot 0 has a move pending with a velocity, slot 1
    /// one without.
    fn store() -> (Store<f64, 2>, Vec<ProxyId>) {
        let mut st = Store::default();
        let ids: Vec<_> = (0..6).map(|i| st.insert(&Proxy::new(cube(i as f64)))).collect();
        st.inserted.retain(|&s| s >= 4);
        for s in 0..4 {
            st.meta[s].state = State::Live;
        }
        st.set_aabb(0, cube(10.0), Some([1.0, 0.0]));
        st.set_aabb(1, cube(11.0), None);
        (st, ids)
    }

    fn snapshot(st: &Store<f64, 2>) -> String {
        let meta: Vec<_> = (0..st.slots()).map(|s| (st.meta[s].state, st.pending(s))).collect();
        format!("{:?} {:?} {:?} {:?}", st.aabb, meta, st.changes, st.extras)
    }

    #[test]
    fn a_batch_of_moves_is_its_moves_one_by_one_or_nothing() {
        let (mut st, ids) = store();
        st.validate().unwrap();
        let before = snapshot(&st);
        let stale = ProxyId::new(2, 7);
        let mut moves = vec![(ids[0], cube(20.0)), (ids[2], cube(21.0)), (ids[4], cube(22.0))];
        moves.extend([(ids[0], cube(23.0)), (ids[4], cube(24.0)), (ids[1], cube(25.0)), (ids[3], cube(26.0))]);
        // Refused at any position: the store as it was.
        for at in 0..=moves.len() {
            let mut bad = moves.clone();
            bad.insert(at, (stale, cube(0.0)));
            assert_eq!(st.set_aabb_batch(&bad), Err(ProxyError::Stale { id: stale }));
            assert_eq!(snapshot(&st), before, "refused at {at}");
            st.validate().unwrap();
        }
        // Accepted: the same as one call per move.
        st.set_aabb_batch(&moves).unwrap();
        st.validate().unwrap();
        let (mut one, _) = store();
        for &(id, b) in &moves {
            one.set_aabb(id.index(), b, None);
        }
        assert_eq!(snapshot(&st), snapshot(&one));
        assert_eq!(st.latest_aabb(0), cube(23.0));
        assert_eq!(st.latest_aabb(4), cube(24.0));
    }

    #[test]
    fn pending_marks_are_void_after_each_update_through_the_epochs_wrap() {
        let (mut st, _) = store();
        for k in 0..(1u32 << 16) + 10 {
            let changes = st.take_changes();
            st.finish_changes(changes);
            assert!((0..6).all(|s| st.pending(s).is_none()), "update {k}");
            st.set_aabb(2, cube(k as f64), None);
            assert_eq!(st.pending(2), Some(0));
            assert_eq!(st.latest_aabb(2), cube(k as f64));
            if k % 4096 == 0 || k >= (1 << 16) - 2 {
                st.validate().unwrap();
            }
        }
        // A removal voids the pending change, and its extra.
        st.set_aabb(3, cube(-1.0), Some([0.5, 0.0]));
        st.remove(3);
        st.validate().unwrap();
        assert!(st.changes.iter().all(|c| c.slot != 3 || (c.aabb.is_none() && c.extra == NIL)));
    }
}
