//! Radix sort of keyed indices, the first step of every sweep.
//!
//! Items are `u64`s holding a monotone 32-bit key ([`Scalar::sort_key`]) in
//! the high half and a payload (a box index) in the low half. An LSD radix
//! sort on the key (three passes of 11, 11 and 10 bits, or four of 8 bits
//! from half a million items on, skipping passes whose digit is the same
//! for every item) orders them stably in O(n). Because the
//! key of an `f64` is its rounding to `f32`, equal keys can hide different
//! values; [`refine_equal_keys`] then orders those runs exactly, so the result
//! is the exact order of the values, ties kept in input order.

use crate::Scalar;

/// From this many items on, four passes of 8 bits. Scattering to 2048
/// places at once costs more than a fourth pass once the buffers are
/// megabytes long (a pass then misses the TLB on most writes): measured
/// on random keys on the 2-vCPU AVX2 machine (standalone, medians of 9),
/// 8 bits against 11 at 2e5 items 2.1-2.9 against 1.9-2.3 ms, at 5e5
/// 6.1-7.6 against 7.0-9.6 ms, at 1e6 14.0-18.2 against 19.8-26.0 ms, at
/// 4e6 49-60 against 74-79 ms; in the grid at 1e6, alternated, the sort
/// took 18.9-21.1 ms against 22.2-23.9 ms.
const BYTE_PASSES_MIN: usize = 1 << 19;

const BUCKETS: usize = 1 << 11;
/// Below this, a comparison sort wins.
const SMALL: usize = 256;
/// Below this, threads do not pay for themselves (the serial sort of 1e5
/// items took 0.7-1.1 ms, the threaded one on two cores 1.1-1.9 ms here
/// and 1.5-1.7 ms on the lent Xeon); from here on both take bytes.
#[cfg(feature = "parallel")]
const PAR_MIN: usize = crate::par::threads_from(BYTE_PASSES_MIN);
/// Below this, refining equal keys with threads does not pay.
#[cfg(feature = "parallel")]
const REFINE_PAR_MIN: usize = crate::par::threads_from(1 << 16);

/// Packs a key and a payload into a sortable item.
#[inline(always)]
pub(crate) fn keyed(key: u32, payload: u32) -> u64 {
    ((key as u64) << 32) | payload as u64
}

/// The payload of an item.
#[inline(always)]
pub(crate) fn payload(item: u64) -> u32 {
    item as u32
}

/// Sorts `items` stably by their high 32 bits. `scratch` is working memory
/// (grown to `items.len()` if shorter, its contents are overwritten).
pub(crate) fn sort_keyed(items: &mut Vec<u64>, scratch: &mut Vec<u64>, parallel: bool) {
    let n = items.len();
    if n <= SMALL {
        // PERF: with the payloads increasing (positions, or slots pushed in
        // order), sorting the whole words is this stable sort by key, and
        // faster: an integer sort with no comparator. Random 24-bit keys,
        // 2000 arrays each, three rounds: 100 items 10.5-11.1 -> 6.5-6.6 ns
        // an item, 256 items 11.9-12.2 -> 7.4. The grid by rows sorts its
        // rows this way (`Auto`, uniform 3D `f32` 1e6: 51.8-52.1 ->
        // 44.2-45.9 ms), and a multi-region SAP each region's few arrivals
        // per axis.
        if items.windows(2).all(|w| payload(w[0]) < payload(w[1])) {
            items.sort_unstable();
        } else {
            items.sort_by_key(|&x| x >> 32);
        }
        return;
    }
    if scratch.len() < n {
        crate::mem::resize(scratch, n, 0);
    }
    #[cfg(feature = "parallel")]
    if parallel && n >= PAR_MIN && rayon::current_num_threads() > 1 {
        par::sort(items, scratch);
        return;
    }
    let _ = parallel;
    if n >= BYTE_PASSES_MIN {
        lsd::<8, 4>(items, scratch);
    } else {
        lsd::<11, 3>(items, scratch);
    }
}

/// The serial LSD radix sort on the key, `P` passes of `BITS`-bit digits
/// from the lowest (the last pass may hold fewer bits), each skipped when
/// every item has the same digit there.
///
/// PERF: the digit layout is a constant, so the counting pass computes
/// every digit with constant shifts, and the offsets are `u32` (half the
/// room in the first-level cache of `usize`, which the scatter reads and
/// writes at every item). Against the same sort with the passes as a
/// runtime table and `usize` offsets (checked stores), on the 2-vCPU AVX2
/// VM, best of many, keys of random `f32` coordinates: 1e4 items 66
/// against 94 µs, 3e4 192 against 277, 1e5 651 against 929 (11-bit
/// digits); 1e6 14.8 against 20.3 ms (8-bit; 9.4 against 17.4 ms on
/// uniformly random 32-bit keys).
fn lsd<const BITS: u32, const P: usize>(items: &mut Vec<u64>, scratch: &mut Vec<u64>) {
    let n = items.len();
    // The counts and offsets below are `u32`; the payloads are box
    // indices, so no caller sorts this many.
    assert!(n < u32::MAX as usize, "too many items for a keyed sort");
    let mask = (1u64 << BITS) - 1;
    // On the stack: a frame's sort of its changes allocates nothing.
    let mut hist = [[0u32; BUCKETS]; P];
    for &x in items.iter() {
        for (p, h) in hist.iter_mut().enumerate() {
            h[((x >> (32 + BITS as usize * p)) & mask) as usize] += 1;
        }
    }
    let mut in_items = true;
    let mut offsets = [0u32; BUCKETS];
    for (p, h) in hist.iter().enumerate() {
        let shift = 32 + BITS as usize * p;
        let digit = |x: u64| ((x >> shift) & mask) as usize;
        let first = if in_items { items[0] } else { scratch[0] };
        if h[digit(first)] as usize == n {
            continue; // every item has this digit
        }
        // The counts sum to `n` (every item counted once per pass).
        let mut sum = 0u32;
        for (o, &c) in offsets.iter_mut().zip(h.iter()) {
            *o = sum;
            sum += c;
        }
        let (src, dst) = if in_items { (&items[..], &mut scratch[..n]) } else { (&scratch[..n], &mut items[..]) };
        let out = dst.as_mut_ptr();
        for &x in src {
            let o = &mut offsets[digit(x)];
            // SAFETY: `src` is a permutation of the items counted in `h`,
            // so digit `d` is met `h[d]` times and its offsets run over
            // `start(d)..start(d) + h[d]`; those ranges tile `0..n`, and
            // `dst` is `n` long: every write is in bounds, each slot once.
            unsafe { out.add(*o as usize).write(x) };
            *o += 1;
        }
        in_items = !in_items;
    }
    if !in_items {
        // The result is in the scratch buffer: swap the buffers.
        core::mem::swap(items, scratch);
        items.truncate(n);
    }
}

/// Orders runs of equal keys by the exact value `value(payload)`, stably, so
/// that after [`sort_keyed`] the items are in exact value order. `exact`
/// says the keys already are exact (equal keys mean equal values): then
/// there is nothing to do.
pub(crate) fn refine_equal_keys<'a, S: Scalar + 'a>(
    items: &mut [u64],
    exact: bool,
    parallel: bool,
    value: impl Fn(u32) -> &'a S + Sync,
) {
    if exact {
        return;
    }
    #[cfg(feature = "parallel")]
    if parallel && items.len() >= REFINE_PAR_MIN && rayon::current_num_threads() > 1 {
        use rayon::prelude::*;
        // Cut into pieces at key changes, so that no run is split.
        let pieces = rayon::current_num_threads() * 4;
        let target = (items.len() / pieces).max(1);
        let mut chunks = Vec::with_capacity(pieces + 1);
        let mut rest = &mut items[..];
        while !rest.is_empty() {
            let mut cut = target.min(rest.len());
            while cut < rest.len() && rest[cut] >> 32 == rest[cut - 1] >> 32 {
                cut += 1;
            }
            let (head, tail) = rest.split_at_mut(cut);
            chunks.push(head);
            rest = tail;
        }
        chunks.into_par_iter().for_each(|c| refine_runs(c, &value));
        return;
    }
    let _ = parallel;
    refine_runs(items, &value);
}

/// Orders each run of equal keys by value, stably.
///
/// PERF: the runs are found first, in one pass over the keys (all that is
/// done when every key differs), then refined with the first values of the
/// run eight ahead prefetched (values are read in sorted order, that is, at
/// random). Most runs need nothing (copies of one value, as in scenes with duplicates, are in order
/// already), which one pass over the run finds; the others are sorted on
/// their values gathered once, instead of by a comparison that looks both
/// up at every step. Duplicates 3D at 1e5 (f64, grid, runs of four equal
/// keys): refinement fell from 19% of the search's samples to 5-8%.
fn refine_runs<'a, S: Scalar + 'a>(items: &mut [u64], value: &impl Fn(u32) -> &'a S) {
    // The runs of two or more equal keys first: one quick pass, and no
    // more when every key differs (the common case).
    let n = items.len();
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let mut k = 0;
    while k + 1 < n {
        let key = items[k] >> 32;
        if items[k + 1] >> 32 != key {
            k += 1;
            continue;
        }
        let start = k;
        k += 2;
        while k < n && items[k] >> 32 == key {
            k += 1;
        }
        runs.push((start, k));
    }
    const AHEAD: usize = 8;
    let mut buf: Vec<(S, u64)> = Vec::new();
    for r in 0..runs.len() {
        if let Some(&(s, e)) = runs.get(r + AHEAD) {
            for &x in &items[s..e.min(s + 4)] {
                crate::sweep::prefetch(value(payload(x)));
            }
        }
        let (s, e) = runs[r];
        refine_run(&mut items[s..e], value, &mut buf);
    }
}

/// Sorts one run stably by value (see [`refine_runs`]).
fn refine_run<'a, S: Scalar + 'a>(run: &mut [u64], value: &impl Fn(u32) -> &'a S, buf: &mut Vec<(S, u64)>) {
    let mut prev = *value(payload(run[0]));
    let mut sorted = true;
    for &x in &run[1..] {
        let v = *value(payload(x));
        sorted &= prev <= v;
        prev = v;
    }
    if sorted {
        return;
    }
    buf.clear();
    buf.extend(run.iter().map(|&x| (*value(payload(x)), x)));
    // Stable: equal values keep their order in the run.
    buf.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(core::cmp::Ordering::Equal));
    for (x, &(_, y)) in run.iter_mut().zip(buf.iter()) {
        *x = y;
    }
}

/// Sorts each run of equal keys (high 32 bits) stably by `cmp` of the
/// payloads.
pub(crate) fn sort_runs_by(items: &mut [u64], cmp: impl Fn(u32, u32) -> core::cmp::Ordering) {
    let mut start = 0;
    while start < items.len() {
        let key = items[start] >> 32;
        let mut end = start + 1;
        while end < items.len() && items[end] >> 32 == key {
            end += 1;
        }
        if end - start > 1 {
            items[start..end].sort_by(|&x, &y| cmp(payload(x), payload(y)));
        }
        start = end;
    }
}

/// Below this many items, [`sort_by_small_key`] takes a comparison sort.
const BY_KEY_SMALL: usize = 64;

/// Sorts `items` stably by `key(item)`, a key below `2^bits`: an LSD radix
/// sort of 8-bit digits, or from [`BY_KEY_WIDE`] items on 11-bit ones (12-bit
/// ones where that spares a pass: keys of 12, 23-24 or 34-36 bits) (a pass
/// whose digit is the same for every item is skipped), through
/// `scratch` (grown as needed). Below [`BY_KEY_SMALL`] items, a comparison
/// sort on the key.
///
/// PERF: an update's events (a few thousand with 10% of 1e5 proxies
/// moving) were sorted by their derived order, about 30 ns an event; here
/// by a key of their kind and two slots, five passes at 1e5 slots.
pub(crate) fn sort_by_small_key<T: Copy>(items: &mut [T], scratch: &mut Vec<T>, bits: u32, key: impl Fn(&T) -> u64) {
    let n = items.len();
    if n < BY_KEY_SMALL {
        items.sort_by_key(&key);
        return;
    }
    assert!(n < u32::MAX as usize, "too many items for a keyed sort");
    // PERF: the events of 1e5 proxies streamed into 1e6 static ones
    // (2.9e5, keys of 43 bits), three alternated runs each way: six passes
    // of 8 bits 4.7-5.2 ms (dynamic tree, hash grid), four of 11 bits
    // 3.5-4.4 ms; removing them again 4.9-6.2 against 3.6-4.3 ms. The
    // slot pairs of 1e5 proxies (34 bits) in three passes of 12 bits
    // instead of four of 11: every box moving (`frames`, hash grid, 154 000
    // pairs a frame), five runs alternated, the frame 4.95-5.15 -> 4.85-5.04
    // ms.
    if n >= BY_KEY_WIDE && bits.div_ceil(12) < bits.div_ceil(11) && bits <= 36 {
        lsd_by::<T, 12, 3, 4096>(items, scratch, bits, key);
    } else if n >= BY_KEY_WIDE {
        lsd_by::<T, 11, 6, 2048>(items, scratch, bits, key);
    } else {
        lsd_by::<T, 8, 8, 256>(items, scratch, bits, key);
    }
}

/// From this many items, [`sort_by_small_key`] takes 11-bit digits.
const BY_KEY_WIDE: usize = 1 << 15;

/// The passes of [`sort_by_small_key`]: digits of `BITS` bits (`B` =
/// `2^BITS` buckets), at most `P` of them.
fn lsd_by<T: Copy, const BITS: u32, const P: usize, const B: usize>(
    items: &mut [T],
    scratch: &mut Vec<T>,
    bits: u32,
    key: impl Fn(&T) -> u64,
) {
    let n = items.len();
    let mask = (1u64 << BITS) - 1;
    let passes = (bits.div_ceil(BITS) as usize).clamp(1, P);
    debug_assert_eq!(B, 1 << BITS);
    // On the stack: a frame's sort of its events allocates nothing.
    let mut hist = [[0u32; B]; P];
    for x in items.iter() {
        let k = key(x);
        for (p, h) in hist[..passes].iter_mut().enumerate() {
            h[((k >> (BITS as usize * p)) & mask) as usize] += 1;
        }
    }
    scratch.clear();
    scratch.extend_from_slice(items);
    let mut in_items = true;
    for (p, h) in hist[..passes].iter().enumerate() {
        let digit = |x: &T| ((key(x) >> (BITS as usize * p)) & mask) as usize;
        if h[digit(&items[0])] as usize == n {
            continue; // every item has this digit (the same in both buffers)
        }
        let mut offsets = [0u32; B];
        let mut sum = 0u32;
        for (o, &c) in offsets.iter_mut().zip(h.iter()) {
            *o = sum;
            sum += c;
        }
        let (src, dst): (&[T], &mut [T]) =
            if in_items { (&*items, &mut scratch[..n]) } else { (&scratch[..n], &mut *items) };
        for x in src {
            let o = &mut offsets[digit(x)];
            dst[*o as usize] = *x;
            *o += 1;
        }
        in_items = !in_items;
    }
    if !in_items {
        items.copy_from_slice(&scratch[..n]);
    }
}

#[cfg(feature = "parallel")]
mod par {
    use rayon::prelude::*;

    /// A raw pointer that may be shared between the threads of one scatter
    /// pass, each writing its own disjoint set of slots.
    #[derive(Clone, Copy)]
    struct Slots(*mut u64);
    // SAFETY: only used by `scatter`, whose threads write disjoint indices of
    // one live buffer; no slot is read while the pass runs.
    unsafe impl Send for Slots {}
    // SAFETY: as for `Send`: shared only to write disjoint slots.
    unsafe impl Sync for Slots {}

    /// Digits of the threaded sort: four passes of a byte (it runs from
    /// `BYTE_PASSES_MIN` items on, where the serial sort takes bytes too).
    const BITS: usize = 8;
    const WIDTH: usize = 1 << BITS;
    const PASSES: usize = 4;

    #[inline(always)]
    fn byte(x: u64, pass: usize) -> usize {
        ((x >> (32 + BITS * pass)) & (WIDTH as u64 - 1)) as usize
    }

    /// Parallel LSD radix sort on bytes: the items are cut into chunks
    /// (twice as many as threads, each a power of two long), each chunk
    /// scatters concurrently to offsets laid out digit-major then
    /// chunk-major (so the result is the stable order, whatever the number
    /// of chunks), and counts, per chunk of its output, the digits of the
    /// next pass as it goes: every pass reads its input once, as in the
    /// serial sort.
    ///
    /// PERF: the sort this replaced (11-bit digits below half a million
    /// items, four chunks per thread, the digit layout read at run time,
    /// every pass's digits counted up front) did 1.3-1.5x the serial
    /// sort's work at 1e6 items and 2.5x at 1e5 (timed with two threads on
    /// one CPU), so that on two cores it was little or no faster than one
    /// (1e6 items on the lent Xeon: 11.7-12.0 ms threaded, 11.6-13.5 ms
    /// serial). This one, on the 2-vCPU VM (best of many, three rounds):
    /// 1e6 items 7.3-7.4 ms against 10.6-10.7 ms for the one replaced and
    /// 12.8-15.2 ms serial; 6e5 items 4.6-4.8 ms against 7.1-8.4 ms
    /// serial; 3e6 items, bound by memory, 34-36 ms against 42-46 ms.
    pub(super) fn sort(items: &mut Vec<u64>, scratch: &mut Vec<u64>) {
        let n = items.len();
        assert!(n < u32::MAX as usize, "too many items for a keyed sort");
        let shift = n.div_ceil(rayon::current_num_threads() * 2).next_power_of_two().trailing_zeros();
        let chunk_len = 1usize << shift;
        // The passes whose digit is not the same for every item (which
        // the permutations of earlier passes do not change): the bytes
        // where some key bit differs from another's.
        let (or, and) = items
            .par_chunks(chunk_len)
            .map(|c| c.iter().fold((0u64, u64::MAX), |(o, a), &x| (o | x, a & x)))
            .reduce(|| (0, u64::MAX), |(o1, a1), (o2, a2)| (o1 | o2, a1 & a2));
        let passes: Vec<usize> = (0..PASSES).filter(|&p| byte(or ^ and, p) != 0).collect();
        let Some(&first) = passes.first() else { return };
        // Per chunk, the digits of the first pass; the scatters count the
        // others.
        let mut hist: Vec<[u32; WIDTH]> = items
            .par_chunks(chunk_len)
            .map(|c| {
                let mut h = [0u32; WIDTH];
                for &x in c {
                    h[byte(x, first)] += 1;
                }
                h
            })
            .collect();
        let mut in_items = true;
        for (k, &p) in passes.iter().enumerate() {
            let (src, dst) = if in_items { (&items[..], &mut scratch[..n]) } else { (&scratch[..n], &mut items[..]) };
            hist = scatter(src, dst, shift, &hist, p, passes.get(k + 1).copied());
            in_items = !in_items;
        }
        if !in_items {
            core::mem::swap(items, scratch);
            items.truncate(n);
        }
    }

    /// One pass on byte `pass`: chunk `c` of `src` (chunks `1 << shift`
    /// long) holds `hist[c][d]` items of digit `d`. Returns, per chunk of
    /// `dst`, the counts of the digits of pass `next` (empty when none).
    fn scatter(
        src: &[u64],
        dst: &mut [u64],
        shift: u32,
        hist: &[[u32; WIDTH]],
        pass: usize,
        next: Option<usize>,
    ) -> Vec<[u32; WIDTH]> {
        let chunks = hist.len();
        // offsets[c][d]: where chunk c writes its first item of digit d.
        let mut offsets = vec![[0u32; WIDTH]; chunks];
        let mut sum = 0u32;
        for d in 0..WIDTH {
            for (c, h) in hist.iter().enumerate() {
                offsets[c][d] = sum;
                sum += h[d];
            }
        }
        assert_eq!(sum as usize, dst.len());
        let out = Slots(dst.as_mut_ptr());
        let parts: Vec<Vec<[u32; WIDTH]>> = src
            .par_chunks(1 << shift)
            .zip(offsets.into_par_iter())
            .map(move |(c, mut off)| {
                let out = out;
                // This chunk's counts of the next digits, per chunk of `dst`.
                let mut counts = vec![[0u32; WIDTH]; if next.is_some() { chunks } else { 0 }];
                for &x in c {
                    let o = &mut off[byte(x, pass)];
                    let at = *o as usize;
                    // SAFETY: the offsets give every (chunk, digit) its own
                    // range of `dst`, sized by the counts of that chunk, and
                    // the ranges tile `0..dst.len()` (asserted above), so each
                    // slot is written exactly once, by one thread, in bounds.
                    unsafe { out.0.add(at).write(x) };
                    *o += 1;
                    if let Some(q) = next {
                        counts[at >> shift][byte(x, q)] += 1;
                    }
                }
                counts
            })
            .collect();
        if next.is_none() {
            return Vec::new();
        }
        let mut total = vec![[0u32; WIDTH]; chunks];
        total.par_iter_mut().enumerate().for_each(|(c, t)| {
            for p in &parts {
                for (a, b) in t.iter_mut().zip(&p[c]) {
                    *a += b;
                }
            }
        });
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(keys: impl Fn(&mut crate::Lcg) -> u32, n: usize, parallel: bool) {
        // Payloads in increasing order (positions), and not (the small
        // sort's two paths).
        check_payloads(&keys, n, parallel, |i| i);
        check_payloads(&keys, n, parallel, |i| ((u64::from(i) * 7919) % (n as u64).max(1)) as u32 ^ 1);
    }

    fn check_payloads(keys: impl Fn(&mut crate::Lcg) -> u32, n: usize, parallel: bool, pay: impl Fn(u32) -> u32) {
        let mut seed = crate::Lcg::new(42);
        let items: Vec<u64> = (0..n as u32).map(|i| keyed(keys(&mut seed), pay(i))).collect();
        let mut expect = items.clone();
        expect.sort_by_key(|&x| x >> 32); // stable: the reference order
        let sorted = |items: &[u64]| {
            let (mut items, mut scratch) = (items.to_vec(), Vec::new());
            sort_keyed(&mut items, &mut scratch, parallel);
            items
        };
        assert_eq!(sorted(&items), expect);
        // With threads (from `PAR_MIN` items on): on pools of 2 threads
        // and of 24 (chunks of uneven counts), whatever this machine has.
        #[cfg(feature = "parallel")]
        if parallel {
            for threads in [2, 24] {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                assert_eq!(pool.install(|| sorted(&items)), expect, "{threads} threads");
            }
        }
    }

    #[test]
    fn sorts_by_a_small_key_stably() {
        let mut rng = crate::Lcg::new(7);
        for &(n, bits) in &[
            (0usize, 8u32),
            (1, 8),
            (63, 35),
            (64, 35),
            (700, 35),
            (700, 3),
            (5000, 63),
            (300, 64),
            (40_000, 43),
            (40_000, 64),
            (40_000, 11),
            // 12-bit digits: three passes instead of four.
            (40_000, 34),
            (40_000, 36),
            (40_000, 24),
        ] {
            let items: Vec<(u64, u32)> = (0..n as u32)
                .map(|i| {
                    let k = ((rng.bits() << 11) ^ rng.bits()) >> (64 - bits.max(1));
                    (k >> (i % 3), i) // some equal keys: stability shows
                })
                .collect();
            let mut expect = items.clone();
            expect.sort_by_key(|x| x.0);
            let (mut got, mut scratch) = (items.clone(), Vec::new());
            sort_by_small_key(&mut got, &mut scratch, bits, |x| x.0);
            assert_eq!(got, expect, "n {n} bits {bits}");
        }
    }

    #[test]
    fn sorts_stably_like_a_stable_comparison_sort() {
        for &n in &[0, 1, 2, 255, 256, 257, 1000, 70_000] {
            for parallel in [false, true] {
                check(|s| s.bits() as u32, n, parallel);
                check(|s| (s.bits() % 7) as u32, n, parallel); // many ties
                check(|s| 0xABCD_0000 | (s.bits() % 3) as u32, n, parallel); // skipped passes
                check(|s| ((s.bits() % 2048) << 11) as u32, n, parallel); // the middle pass alone
                check(|s| ((s.bits() % 1024) << 22) as u32 | 7, n, parallel); // the last pass alone
                check(|s| (s.bits() as u32) & 0xFFC0_07FF, n, parallel); // the first and last
                check(|_| 5, n, parallel); // all equal
            }
        }
    }

    #[test]
    fn sorts_large_inputs_by_bytes_stably() {
        // From `BYTE_PASSES_MIN` on, four passes of 8 bits: each byte alone,
        // ties, and random keys.
        let n = BYTE_PASSES_MIN + 3;
        for parallel in [false, true] {
            check(|s| s.bits() as u32, n, parallel);
            check(|s| (s.bits() % 5) as u32, n, parallel);
            for byte in 0..4 {
                check(|s| ((s.bits() % 256) as u32) << (8 * byte), n, parallel);
            }
        }
    }

    #[test]
    fn refinement_sorts_runs_stably_by_value() {
        // Keys that collide in runs of every length (1 to 200), values
        // drawn from a few, so that runs hold equal values (in order or
        // not), distinct ones, and runs already in order.
        let mut seed = crate::Lcg::new(7);
        for n in [0, 1, 2, 17, 100, 3000] {
            for spread in [1u64, 3, 50] {
                let vals: Vec<f64> = (0..n).map(|_| (seed.bits() % spread) as f64 * 0.25).collect();
                let mut items = Vec::new();
                let mut i = 0u32;
                while (i as usize) < n {
                    let run = 1 + (seed.bits() % 200) as u32;
                    let key = (seed.bits() % 1000) as u32;
                    for j in i..(i + run).min(n as u32) {
                        items.push(keyed(key, j));
                    }
                    i += run;
                }
                sort_keyed(&mut items, &mut Vec::new(), false);
                let mut expect = items.clone();
                // Stable by (key, value): ties keep the sorted order.
                expect.sort_by(|&x, &y| {
                    (x >> 32).cmp(&(y >> 32)).then(vals[payload(x) as usize].total_cmp(&vals[payload(y) as usize]))
                });
                refine_equal_keys(&mut items, false, false, |i| &vals[i as usize]);
                assert_eq!(items, expect, "n {n} spread {spread}");
            }
        }
    }

    #[test]
    fn refinement_gives_exact_order() {
        // Distinct f64 values that share an f32 key.
        let vals = [1.0 + 3e-16, 1.0, 1.0 + 1e-16, 1.0 + 2e-16, -0.0, 0.0, 1e-300, 5e-324];
        let mut items: Vec<u64> = vals.iter().enumerate().map(|(i, v)| keyed(v.sort_key(), i as u32)).collect();
        sort_keyed(&mut items, &mut Vec::new(), false);
        refine_equal_keys(&mut items, false, false, |i| &vals[i as usize]);
        let sorted: Vec<f64> = items.iter().map(|&x| vals[payload(x) as usize]).collect();
        for w in sorted.windows(2) {
            assert!(w[0] <= w[1], "{sorted:?}");
        }
        // Ties (-0.0 == 0.0) keep input order.
        let pos = |i: u32| items.iter().position(|&x| payload(x) == i).unwrap();
        assert!(pos(4) < pos(5));
    }
}
