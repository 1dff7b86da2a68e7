//! Integer cell coordinates shared by the hash grid and the multi-region
//! SAP: clamped so that huge coordinates cannot overflow, packed into a
//! 64-bit key, and iterated over a box's range of cells.

/// Cell coordinates are clamped to ±`LIMIT` (21 bits with the sign), so that
/// `D ≤ 3` of them pack into one `u64`.
pub const LIMIT: i64 = (1 << 20) - 1;

/// An inclusive range of cells: lower and upper corner.
pub type CellRange<const D: usize> = ([i64; D], [i64; D]);

/// The cell of coordinate `v` for cells of size `1 / inv` (monotone, so a
/// box's range covers every cell it meets).
#[inline]
pub fn coord(v: f64, inv: f64) -> i64 {
    // Clamped first, then floored by truncation and a correction: the same
    // result as `floor` then clamp (the bounds are integers; NaN gives 0
    // both ways), without a call to `floor` (a library call on x86-64
    // without SSE4.1, the default target, where re-filed proxies spend it).
    let x = (v * inv).clamp(-(LIMIT as f64), LIMIT as f64);
    let t = x as i64;
    t - i64::from((t as f64) > x)
}

/// The smallest value of `S` whose cell (of size `1 / inv`) is at least
/// `c`, for `c` above `-LIMIT`: `v >= start::<S>(c, inv)` exactly when
/// `v.to_f64() * inv >= c`, the comparison `coord` makes (its clamp at
/// `-LIMIT` cannot lift a value to a higher cell; at `+LIMIT` it lowers only
/// values at or above it). A test of one value against it replaces a
/// conversion and a multiplication per value.
pub fn start<S: crate::Scalar>(c: i64, inv: f64) -> S {
    let target = c as f64;
    let at = |o: i64| S::from_ordered(o).to_f64() * inv >= target;
    let (bottom, top) = (S::from_f64(f64::NEG_INFINITY).ordered(), S::INFINITY.ordered());
    // The estimate is within a few ulps of the answer, except where the
    // product underflows (then galloping finds it in a few dozen steps).
    let guess = S::from_f64(target / inv).ordered().clamp(bottom, top);
    // Bracket the answer by galloping: `lo` fails, `hi` holds.
    let (mut lo, mut hi);
    if at(guess) {
        hi = guess;
        let mut step = 1;
        loop {
            lo = hi.saturating_sub(step).max(bottom);
            if lo == bottom || !at(lo) {
                break;
            }
            hi = lo;
            step = step.saturating_mul(2);
        }
    } else {
        lo = guess;
        let mut step = 1;
        loop {
            hi = lo.saturating_add(step).min(top);
            if hi == top || at(hi) {
                break;
            }
            lo = hi;
            step = step.saturating_mul(2);
        }
    }
    // `at(bottom)` fails (-∞) and `at(top)` holds (+∞): a bracket.
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if at(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    S::from_ordered(hi)
}

/// The packed key of a cell.
#[inline]
pub fn key<const D: usize>(c: &[i64; D]) -> u64 {
    c.iter().fold(0u64, |k, &x| k << 21 | (x + LIMIT) as u64)
}

/// The cell of a packed key.
pub fn decode<const D: usize>(key: u64) -> [i64; D] {
    let mut c = [0i64; D];
    for (k, x) in c.iter_mut().enumerate() {
        *x = ((key >> (21 * (D - 1 - k))) & ((1 << 21) - 1)) as i64 - LIMIT;
    }
    c
}

/// Whether cell `c` lies in the range.
#[inline]
pub fn inside<const D: usize>(r: &CellRange<D>, c: &[i64; D]) -> bool {
    (0..D).all(|k| r.0[k] <= c[k] && c[k] <= r.1[k])
}

/// Whether the range spans at least `span + 1` cells on some axis.
#[inline]
pub fn wider_than<const D: usize>(r: &CellRange<D>, span: i64) -> bool {
    (0..D).any(|k| r.1[k] - r.0[k] >= span)
}

/// Calls `f` with every cell of the range, first axis fastest.
#[inline]
pub fn each<const D: usize>(r: &CellRange<D>, mut f: impl FnMut(&[i64; D])) {
    let mut c = r.0;
    loop {
        f(&c);
        let mut k = 0;
        loop {
            if k == D {
                return;
            }
            if c[k] < r.1[k] {
                c[k] += 1;
                break;
            }
            c[k] = r.0[k];
            k += 1;
        }
    }
}

/// A bucket of [`CellTable`]: a key and its list side by side, aligned so
/// that the two share one cache line.
#[derive(Clone, Debug)]
#[repr(align(32))]
struct Bucket<E> {
    key: u64,
    list: Vec<E>,
}

/// The key of an empty bucket (no packed key reaches it: `D ≤ 3` coordinates
/// of 21 bits fill at most 63 bits).
const EMPTY: u64 = u64::MAX;

/// Lists by packed cell key: an open-addressing table (linear probing,
/// deletion by backward shift, no tombstones, at most half full) whose
/// buckets hold the key and the list's header together. Finding a cell's
/// list is one cache line, whose address follows from the key alone, so a
/// caller can prefetch it before it needs it (a general hash map hides the
/// bucket, and a map to list indices adds a second dependent miss). Emptied
/// lists keep their allocation in a pool for the next new cell.
#[derive(Clone, Debug)]
pub struct CellTable<E> {
    buckets: Vec<Bucket<E>>,
    len: usize,
    /// `64 - log2(buckets.len())`: the home bucket is the top bits of the hash.
    shift: u32,
    pool: Vec<Vec<E>>,
}

impl<E> Default for CellTable<E> {
    fn default() -> Self {
        Self { buckets: Vec::new(), len: 0, shift: 64, pool: Vec::new() }
    }
}

impl<E> CellTable<E> {
    /// The number of cells (non-empty lists, by the callers' contract).
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    fn home(&self, key: u64) -> usize {
        // A multiplicative hash; the high bits of the key folded in first.
        let x = (key ^ (key >> 29)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        (x >> self.shift) as usize
    }

    /// Starts loading the bucket where the search for `key` begins.
    #[inline]
    pub fn prefetch(&self, key: u64) {
        if !self.buckets.is_empty() {
            crate::sweep::prefetch(&self.buckets[self.home(key)]);
        }
    }

    /// The bucket holding `key`.
    #[inline]
    pub fn find(&self, key: u64) -> Option<usize> {
        if self.buckets.is_empty() {
            return None;
        }
        let mask = self.buckets.len() - 1;
        let mut i = self.home(key);
        loop {
            let k = self.buckets[i].key;
            if k == key {
                return Some(i);
            }
            if k == EMPTY {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    /// The list of `key`, if the table holds it.
    #[inline]
    pub fn get(&self, key: u64) -> Option<&Vec<E>> {
        self.find(key).map(|b| &self.buckets[b].list)
    }

    /// The list in bucket `b` (from [`find`](Self::find)).
    #[inline]
    pub fn at_mut(&mut self, b: usize) -> &mut Vec<E> {
        &mut self.buckets[b].list
    }

    /// The list of `key`, a new empty one (from the pool) if absent.
    #[inline]
    pub fn list(&mut self, key: u64) -> &mut Vec<E> {
        debug_assert_ne!(key, EMPTY);
        if (self.len + 1) * 2 > self.buckets.len() {
            self.grow();
        }
        let mask = self.buckets.len() - 1;
        let mut i = self.home(key);
        loop {
            let k = self.buckets[i].key;
            if k == key {
                break;
            }
            if k == EMPTY {
                let b = &mut self.buckets[i];
                b.key = key;
                b.list = self.pool.pop().unwrap_or_default();
                self.len += 1;
                break;
            }
            i = (i + 1) & mask;
        }
        &mut self.buckets[i].list
    }

    /// Makes room for `cells` cells in all (a rebuild): the buckets grown
    /// once, not by doubling as the cells arrive.
    pub fn prepare(&mut self, cells: usize) {
        while (cells + 1) * 2 > self.buckets.len() {
            self.grow();
        }
    }

    /// Removes the cell in bucket `b`; its list (cleared) goes to the pool.
    pub fn remove_at(&mut self, mut b: usize) {
        let mask = self.buckets.len() - 1;
        let mut list = core::mem::take(&mut self.buckets[b].list);
        list.clear();
        self.pool.push(list);
        self.buckets[b].key = EMPTY;
        self.len -= 1;
        // Backward shift: a later bucket of the same probe run moves into
        // the hole unless its home lies after the hole (cyclically).
        let mut j = b;
        loop {
            j = (j + 1) & mask;
            let k = self.buckets[j].key;
            if k == EMPTY {
                return;
            }
            let home = self.home(k);
            if (j.wrapping_sub(home) & mask) >= (j.wrapping_sub(b) & mask) {
                self.buckets.swap(b, j);
                b = j;
            }
        }
    }

    fn grow(&mut self) {
        let cap = (self.buckets.len() * 2).max(16);
        let old =
            core::mem::replace(&mut self.buckets, (0..cap).map(|_| Bucket { key: EMPTY, list: Vec::new() }).collect());
        self.shift = 64 - cap.trailing_zeros();
        let mask = cap - 1;
        for b in old.into_iter().filter(|b| b.key != EMPTY) {
            let mut i = self.home(b.key);
            while self.buckets[i].key != EMPTY {
                i = (i + 1) & mask;
            }
            self.buckets[i] = b;
        }
    }

    /// Removes every cell (lists to the pool, buckets kept).
    pub fn clear(&mut self) {
        for b in &mut self.buckets {
            if b.key != EMPTY {
                b.key = EMPTY;
                let mut list = core::mem::take(&mut b.list);
                list.clear();
                self.pool.push(list);
            }
        }
        self.len = 0;
    }

    /// Every cell: its key and list.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &Vec<E>)> {
        self.buckets.iter().filter(|b| b.key != EMPTY).map(|b| (b.key, &b.list))
    }

    /// Bytes held: buckets, lists and pooled lists.
    pub fn memory(&self) -> usize {
        let lists = |v: &Vec<E>| v.capacity() * core::mem::size_of::<E>();
        self.buckets.capacity() * core::mem::size_of::<Bucket<E>>()
            + self.buckets.iter().map(|b| lists(&b.list)).sum::<usize>()
            + self.pool.iter().map(|l| lists(l) + core::mem::size_of::<Vec<E>>()).sum::<usize>()
            + self.pool.capacity() * core::mem::size_of::<Vec<E>>()
    }

    /// Checks the table's invariants: every key reachable from its home
    /// without crossing an empty bucket, the count right.
    pub fn validate(&self) -> Result<(), String> {
        let mask = self.buckets.len().wrapping_sub(1);
        let mut n = 0;
        for (i, b) in self.buckets.iter().enumerate() {
            if b.key == EMPTY {
                continue;
            }
            n += 1;
            let mut j = self.home(b.key);
            while j != i {
                if self.buckets[j].key == EMPTY {
                    return Err(format!("cell table: key {} cut off from its home", b.key));
                }
                j = (j + 1) & mask;
            }
        }
        if n != self.len {
            return Err(format!("cell table: {n} keys, count says {}", self.len));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_ranges_cover() {
        for c in [[0i64, 0, 0], [-LIMIT, LIMIT, 5], [7, -3, -LIMIT]] {
            assert_eq!(decode::<3>(key(&c)), c);
        }
        assert_eq!(coord(1e300, 1.0), LIMIT);
        assert_eq!(coord(-1e300, 1.0), -LIMIT);
        assert_eq!(coord(-0.5, 1.0), -1);
        // The floor of every kind of value, as `floor` then clamp gives it.
        for v in [-3.0, -2.5, -1e-300, -0.0, 0.0, 1e-300, 0.5, 2.0, 2.999, 1e19, -1e19, f64::NAN, f64::INFINITY] {
            let want = v.floor().clamp(-(LIMIT as f64), LIMIT as f64) as i64;
            assert_eq!(coord(v, 1.0), want, "{v}");
        }
        let r = ([0i64, -1], [2, 0]);
        let mut seen = Vec::new();
        each(&r, |c| seen.push(*c));
        assert_eq!(seen.len(), 6);
        assert!(seen.iter().all(|c| inside(&r, c)));
        assert!(wider_than(&r, 2) && !wider_than(&r, 3));
    }

    #[test]
    fn cell_table_matches_a_map_under_random_inserts_and_removals() {
        use std::collections::BTreeMap;
        let mut t: CellTable<u32> = CellTable::default();
        let mut m: BTreeMap<u64, Vec<u32>> = BTreeMap::new();
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for step in 0..20_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Few distinct keys (long probe runs, many removals), some huge.
            let key = if x.is_multiple_of(7) { (x >> 8) % 300 + (1 << 62) } else { (x >> 8) % 300 };
            if x.is_multiple_of(3) {
                if let Some(b) = t.find(key) {
                    t.remove_at(b);
                }
                m.remove(&key);
            } else {
                t.list(key).push(step);
                m.entry(key).or_default().push(step);
            }
            if step % 1000 == 0 {
                t.validate().unwrap();
            }
        }
        t.validate().unwrap();
        assert_eq!(t.len(), m.len());
        for (k, v) in &m {
            assert_eq!(t.get(*k), Some(v));
        }
        let mut keys: Vec<u64> = t.iter().map(|(k, _)| k).collect();
        keys.sort_unstable();
        assert!(keys.iter().eq(m.keys()));
        assert_eq!(t.get(12345), None);
        t.clear();
        assert_eq!((t.len(), t.iter().count(), t.get(5)), (0, 0, None));
        t.validate().unwrap();
    }

    #[test]
    fn cell_starts_split_values_as_coord_does() {
        fn check<S: crate::Scalar>(inv: f64, cs: &[i64]) {
            for &c in cs {
                let v: S = start(c, inv);
                assert!(v.to_f64() * inv >= c as f64, "c {c} inv {inv}: {v:?} is below");
                let below = S::from_ordered(v.ordered() - 1);
                assert!(below.to_f64() * inv < c as f64, "c {c} inv {inv}: {below:?} is above");
                if c > -LIMIT {
                    assert!(coord(v.to_f64(), inv) >= c && coord(below.to_f64(), inv) < c, "c {c} inv {inv}");
                }
            }
        }
        let cs = [-LIMIT + 1, -1000, -3, -1, 0, 1, 2, 7, 99_999, LIMIT];
        for inv in [1.0, 1.0 / 2.4, 1.0 / 3.0, 1e-30, 1e30, 1e-300, 3e300, 0.1] {
            check::<f32>(inv, &cs);
            check::<f64>(inv, &cs);
        }
    }
}
