//! Laying the boxes out in the grid's cells.
//!
//! 1. **Place** every box (home cell, reach) and count, per cell, the boxes
//!    at home there and the boxes reaching it.
//! 2. **Sort** the boxes by their start on the sweep axis (radix sort, then
//!    exact refinement of equal keys).
//! 3. **Distribute**: in that order, give each box a position in its home
//!    cell's range of `entries` (its index written to `order` there), and
//!    append that position to the list of every cell it reaches. Every list
//!    comes out sorted by start: one global sort gives all the per-cell
//!    orders, with no merging.
//! 4. **Fill** the entries from `order`, in entry order.
//!
//! With threads, placing works on chunks of the input and distributing on
//! chunks of the sorted order; each distributing chunk first counts the
//! cells it writes to, so that it writes to its own ranges, and the layout
//! is the same as the single-threaded one.

use super::kernel::{HOME_Y, HOME_Z};
use super::oneshot::{spans, Layout, HOME, OVERSIZED};
use crate::sort::{keyed, payload, refine_equal_keys, sort_keyed};
use crate::sweep::{prefetch, Entry};
use crate::workspace::Side;
use crate::{Aabb, Scalar};

/// Below this many boxes threads do not pay for themselves.
#[cfg(feature = "parallel")]
const PAR_MIN: usize = crate::par::threads_from(1 << 15);

/// Lays `boxes` out in `side` (see the module notes).
pub(super) fn build<S: Scalar, const D: usize>(
    boxes: &[Aabb<S, D>],
    layout: &Layout,
    keys: &mut Vec<u64>,
    scratch: &mut Vec<u64>,
    side: &mut Side<S>,
    parallel: bool,
) {
    let pieces = pieces(boxes.len(), parallel);
    let (any_wide, split) = place(boxes, layout, keys, side, pieces);
    sort_keyed(keys, scratch, parallel);
    // Oversized boxes carry the key `u32::MAX`, which no finite start has:
    // they sort last, in input order. Take them off the end.
    let normal = keys.partition_point(|&x| (x >> 32) as u32 != u32::MAX);
    side.oversized.clear();
    side.oversized.extend(keys[normal..].iter().map(|&x| payload(x)));
    keys.truncate(normal);
    refine_equal_keys(keys, S::KEY_IS_EXACT, parallel, |i| &boxes[i as usize].min()[layout.axes.sweep]);
    distribute(boxes, layout, keys, side, pieces, any_wide, split);
}

fn pieces(n: usize, parallel: bool) -> usize {
    #[cfg(feature = "parallel")]
    if parallel && n >= PAR_MIN {
        return rayon::current_num_threads().max(1);
    }
    let _ = (n, parallel);
    1
}

/// The cells a placed box that reaches at most one cell past its home on
/// each axis (nearly all of them) may reach, with the flags of its list
/// element there: `(cell, reached, flags)`; a cell not reached has
/// `reached == 0` (and an index that may lie past the last cell).
#[inline(always)]
fn reach(info: u32, nz: usize) -> [(usize, u32, u32); 4] {
    let h = (info & HOME) as usize;
    let (sy, sz) = spans(info);
    debug_assert!(sy <= 1 && sz <= 1);
    [(h, 1, HOME_Y | HOME_Z), (h + 1, sz, HOME_Y), (h + nz, sy, HOME_Z), (h + nz + 1, sy & sz, 0)]
}

/// Whether a placed box reaches more than one cell past its home.
#[inline(always)]
fn wide(info: u32) -> bool {
    let (sy, sz) = spans(info);
    (sy | sz) > 1
}

/// Calls `f(cell, flags)` for every cell a wide box reaches, row by row.
#[inline(never)]
fn each_wide_cell(info: u32, nz: usize, mut f: impl FnMut(usize, u32)) {
    let h = (info & HOME) as usize;
    let (sy, sz) = spans(info);
    for y in 0..=sy as usize {
        for z in 0..=sz as usize {
            let flags = if y == 0 { HOME_Y } else { 0 } | if z == 0 { HOME_Z } else { 0 };
            f(h + y * nz + z, flags);
        }
    }
}

/// Places boxes `base..base + boxes.len()`: their `info`, their sort keys
/// (an oversized box gets the key `u32::MAX`), and the per-cell counts
/// (`homes[c + 1]`, `reached[c + 1]`; both padded past the last cell).
/// `CUT`: the counts are kept apart per piece of the sorted order, the
/// piece of a key being how many of the `cuts` are at or below it (piece
/// `p` counts at `p * padded + c + 1`). Returns whether some box is wide.
#[allow(clippy::too_many_arguments)]
fn place_range<S: Scalar, const D: usize, const CUT: bool>(
    boxes: &[Aabb<S, D>],
    base: usize,
    layout: &Layout,
    cuts: &[u32],
    info: &mut [u32],
    keys: &mut [u64],
    homes: &mut [u32],
    reached: &mut [u32],
) -> bool {
    let nz = layout.cells[1] as usize;
    let padded = homes.len() / (cuts.len() + 1);
    let sweep = layout.axes.sweep;
    let mut any_wide = false;
    for (((i, b), slot), key) in boxes.iter().enumerate().zip(info.iter_mut()).zip(keys.iter_mut()) {
        let id = (base + i) as u32;
        let inf = layout.place(b);
        *slot = inf;
        if inf == OVERSIZED {
            *key = keyed(u32::MAX, id);
            continue;
        }
        let k = layout.sweep_key(b.min()[sweep]);
        *key = keyed(k, id);
        let at = if CUT { cuts.iter().map(|&t| (t <= k) as usize).sum::<usize>() * padded + 1 } else { 1 };
        homes[(inf & HOME) as usize + at] += 1;
        if wide(inf) {
            each_wide_cell(inf, nz, |c, _| reached[c + at] += 1);
            any_wide = true;
            continue;
        }
        for (c, on, _) in reach(inf, nz) {
            reached[c + at] += on;
        }
    }
    any_wide
}

/// Where the threads cut the sorted order for the distribution, when they
/// count their cells while placing: the piece of a box is the number of
/// cuts at or below its sort key. The cuts are quantiles of a sample of the
/// keys, so the pieces come out of similar size; equal keys share a piece.
/// Empty when there is one piece, or when the per-piece counts would take
/// more memory than half the sort keys (fine grids): the distribution then
/// counts the cells of its pieces in a pass of its own.
#[cfg(feature = "parallel")]
fn cuts<S: Scalar, const D: usize>(boxes: &[Aabb<S, D>], layout: &Layout, pieces: usize, padded: usize) -> Vec<u32> {
    if pieces == 1 || pieces * pieces * padded * 8 > boxes.len() * 4 {
        return Vec::new();
    }
    let mut sample: Vec<u32> = crate::stats::sample_indices(boxes.len(), 256 * pieces)
        .map(|i| &boxes[i])
        .filter(|b| layout.place(b) != OVERSIZED)
        .map(|b| layout.sweep_key(b.min()[layout.axes.sweep]))
        .collect();
    if sample.is_empty() {
        return Vec::new();
    }
    sample.sort_unstable();
    (1..pieces).map(|p| sample[p * sample.len() / pieces]).collect()
}

/// How the threads cut the sorted order: the cuts (see [`cuts`]) and, per
/// piece, the boxes at home in each cell and the boxes reaching it.
#[cfg_attr(not(feature = "parallel"), allow(dead_code))]
struct Split {
    cuts: Vec<u32>,
    homes: Vec<Vec<u32>>,
    reached: Vec<Vec<u32>>,
}

fn place<S: Scalar, const D: usize>(
    boxes: &[Aabb<S, D>],
    layout: &Layout,
    keys: &mut Vec<u64>,
    side: &mut Side<S>,
    pieces: usize,
) -> (bool, Option<Split>) {
    let n = boxes.len();
    let ncells = layout.cell_count();
    let padded = ncells + layout.cells[1] as usize + 3;
    // Every slot is overwritten: keep what is there, only adjust the length.
    crate::mem::resize(&mut side.info, n, 0);
    crate::mem::resize(keys, n, 0);
    reset(&mut side.starts, padded);
    reset(&mut side.list_starts, padded);
    let mut any_wide = false;
    #[cfg_attr(not(feature = "parallel"), allow(unused_mut))]
    let mut split = None;
    if pieces == 1 {
        let (h, r) = (&mut side.starts, &mut side.list_starts);
        any_wide = place_range::<S, D, false>(boxes, 0, layout, &[], &mut side.info, keys, h, r);
    } else {
        #[cfg(feature = "parallel")]
        {
            use rayon::prelude::*;
            let cuts = cuts(boxes, layout, pieces, padded);
            let per = (cuts.len() + 1) * padded;
            let chunk = n.div_ceil(pieces);
            let parts: Vec<_> = boxes
                .par_chunks(chunk)
                .zip(side.info.par_chunks_mut(chunk))
                .zip(keys.par_chunks_mut(chunk))
                .enumerate()
                .map(|(p, ((b, info), k))| {
                    let (mut h, mut r) = (vec![0u32; per], vec![0u32; per]);
                    let w = if cuts.is_empty() {
                        place_range::<S, D, false>(b, p * chunk, layout, &cuts, info, k, &mut h, &mut r)
                    } else {
                        place_range::<S, D, true>(b, p * chunk, layout, &cuts, info, k, &mut h, &mut r)
                    };
                    (h, r, w)
                })
                .collect();
            let mut homes = vec![vec![0u32; padded]; cuts.len() + 1];
            let mut reached = homes.clone();
            for (h, r, w) in &parts {
                any_wide |= w;
                for (q, (hq, rq)) in h.chunks(padded).zip(r.chunks(padded)).enumerate() {
                    for (a, b) in homes[q].iter_mut().zip(hq) {
                        *a += b;
                    }
                    for (a, b) in reached[q].iter_mut().zip(rq) {
                        *a += b;
                    }
                }
            }
            for (hq, rq) in homes.iter().zip(&reached) {
                for (a, b) in side.starts.iter_mut().zip(hq) {
                    *a += b;
                }
                for (a, b) in side.list_starts.iter_mut().zip(rq) {
                    *a += b;
                }
            }
            if !cuts.is_empty() {
                split = Some(Split { cuts, homes, reached });
            }
        }
    }
    side.starts.truncate(ncells + 1);
    side.list_starts.truncate(ncells + 1);
    (any_wide, split)
}

fn reset(v: &mut Vec<u32>, len: usize) {
    v.clear();
    v.resize(len, 0);
}

/// Slots of a buffer written concurrently at disjoint indices, for as long
/// as the buffer is borrowed.
pub(super) struct Scatter<'a, T> {
    ptr: *mut T,
    len: usize,
    _buffer: core::marker::PhantomData<&'a mut [T]>,
}

// SAFETY: a `Scatter` is only shared between the threads of one pass that
// write disjoint indices and read none (the global build's distribution,
// see `distribute`, and the bucketing by rows, see `super::rows`).
unsafe impl<T: Send> Send for Scatter<'_, T> {}
// SAFETY: as for `Send`.
unsafe impl<T: Send> Sync for Scatter<'_, T> {}

impl<'a, T> Scatter<'a, T> {
    pub(super) fn new(v: &'a mut [T]) -> Self {
        Self { ptr: v.as_mut_ptr(), len: v.len(), _buffer: core::marker::PhantomData }
    }

    /// # Safety
    /// `i < len`, and no other thread writes or reads slot `i` meanwhile.
    #[inline(always)]
    pub(super) unsafe fn write(&self, i: usize, v: T) {
        debug_assert!(i < self.len);
        // SAFETY: in bounds and exclusive, by the caller's contract.
        unsafe { self.ptr.add(i).write(v) }
    }

    /// Starts loading slot `i` (any index: a prefetch reads nothing).
    #[inline(always)]
    pub(super) fn prefetch(&self, i: usize) {
        crate::sweep::prefetch(self.ptr.wrapping_add(i));
    }
}

/// Distributes the boxes of `keys` (a piece of the sorted order): each box's
/// index at its home cell's cursor in `order` (its entry's position), that
/// position at the cursor of every cell it reaches.
///
/// PERF: only 4-byte indices are scattered here, to one cursor per cell:
/// scattering the entries themselves (28 to 56 bytes) to thousands of cells
/// at once missed the cache on most writes (40% of a search at 1e6). The
/// entries are filled afterwards in entry order ([`fill_entries`]).
///
/// # Safety
/// The cursors give this piece ranges of `order` and `lists` that no other
/// piece writes, sized by exactly what this piece writes.
#[allow(clippy::too_many_arguments)]
unsafe fn distribute_range<const WIDE: bool>(
    layout: &Layout,
    info: &[u32],
    keys: &[u64],
    cursors: &mut [u32],
    list_cursors: &mut [u32],
    order: &Scatter<'_, u32>,
    lists: &Scatter<'_, u32>,
) {
    let nz = layout.cells[1] as usize;
    // The placements are read in sorted order, that is, at random: fetch
    // ahead.
    const AHEAD: usize = 12;
    for (k, &item) in keys.iter().enumerate() {
        if let Some(&next) = keys.get(k + AHEAD) {
            prefetch(info.as_ptr().wrapping_add(payload(next) as usize));
        }
        let i = payload(item);
        let inf = info[i as usize];
        let home = (inf & HOME) as usize;
        let pos = cursors[home];
        cursors[home] += 1;
        // SAFETY: `pos` is in this piece's range of the home cell (caller).
        unsafe { order.write(pos as usize, i) };
        if WIDE && wide(inf) {
            each_wide_cell(inf, nz, |c, flags| {
                let at = list_cursors[c];
                list_cursors[c] = at + 1;
                // SAFETY: `at` is in this piece's range of cell `c` (caller).
                unsafe { lists.write(at as usize, pos | flags) };
            });
            continue;
        }
        for (c, on, flags) in reach(inf, nz) {
            if on == 1 {
                let at = list_cursors[c];
                list_cursors[c] = at + 1;
                // SAFETY: `at` is in this piece's range of cell `c` (caller).
                unsafe { lists.write(at as usize, pos | flags) };
            }
        }
    }
}

fn distribute<S: Scalar, const D: usize>(
    boxes: &[Aabb<S, D>],
    layout: &Layout,
    keys: &[u64],
    side: &mut Side<S>,
    pieces: usize,
    any_wide: bool,
    split: Option<Split>,
) {
    let ncells = layout.cell_count();
    let nz = layout.cells[1] as usize;
    // Prefix sums; each list gets one more slot, for its sentinel.
    let (mut home_sum, mut list_sum) = (0u32, 0u32);
    for c in 0..ncells {
        let (h, l) = (side.starts[c + 1], side.list_starts[c + 1]);
        side.starts[c] = home_sum;
        side.list_starts[c] = list_sum;
        home_sum += h;
        list_sum += l + 1;
    }
    side.starts[ncells] = home_sum;
    side.list_starts[ncells] = list_sum;
    // Every order and list slot is written below but the lists' last slots,
    // which hold the sentinel: keep the old contents, adjust the lengths.
    let sentinel = keys.len() as u32;
    crate::mem::resize(&mut side.order, keys.len(), 0);
    crate::mem::resize(&mut side.lists, list_sum as usize, 0);
    for c in 0..ncells {
        side.lists[side.list_starts[c + 1] as usize - 1] = sentinel | HOME_Y | HOME_Z;
    }
    let order = Scatter::new(&mut side.order);
    let lists = Scatter::new(&mut side.lists);
    let info = &side.info;
    // Cursors of a piece, padded past the last cell (reach() may name cells
    // beyond it, never written).
    let padded = ncells + nz + 2;
    let start_cursors = |homes: &[u32], lists: &[u32]| -> (Vec<u32>, Vec<u32>) {
        let mut h = homes[..ncells].to_vec();
        let mut l = lists[..ncells].to_vec();
        h.resize(padded, 0);
        l.resize(padded, 0);
        (h, l)
    };
    if pieces == 1 {
        let (mut cur, mut lcur) = start_cursors(&side.starts, &side.list_starts);
        // SAFETY: one piece writes everything, from the starts of the ranges.
        unsafe {
            if any_wide {
                distribute_range::<true>(layout, info, keys, &mut cur, &mut lcur, &order, &lists)
            } else {
                distribute_range::<false>(layout, info, keys, &mut cur, &mut lcur, &order, &lists)
            }
        };
        let _ = split; // none with one piece
        fill_entries(boxes, layout, side, false);
        return;
    }
    #[cfg(feature = "parallel")]
    {
        use rayon::prelude::*;
        // The pieces, and what each writes per cell: from the counts taken
        // while placing, or counted here.
        // Per piece: entries and list slots it writes, per cell.
        type Counts = (Vec<u32>, Vec<u32>);
        let (parts, counts): (Vec<&[u64]>, Vec<Counts>) = match split {
            Some(Split { cuts, homes, reached }) => {
                // Cells are counted at `c + 1` there.
                let counts: Vec<_> =
                    homes.into_iter().zip(reached).map(|(h, r)| (h[1..].to_vec(), r[1..].to_vec())).collect();
                let mut parts = Vec::with_capacity(cuts.len() + 1);
                let mut rest = keys;
                for &t in &cuts {
                    let (head, tail) = rest.split_at(rest.partition_point(|&x| ((x >> 32) as u32) < t));
                    parts.push(head);
                    rest = tail;
                }
                parts.push(rest);
                // The writes below stay in bounds only if the counts are
                // exact: check what is cheap to check.
                for (part, (h, _)) in parts.iter().zip(&counts) {
                    assert_eq!(part.len(), h.iter().map(|&x| x as usize).sum::<usize>());
                }
                (parts, counts)
            }
            None => {
                let parts: Vec<&[u64]> = keys.chunks(keys.len().div_ceil(pieces).max(1)).collect();
                let counts = parts
                    .par_iter()
                    .map(|part| {
                        let (mut h, mut l) = (vec![0u32; padded], vec![0u32; padded]);
                        for &item in *part {
                            let inf = info[payload(item) as usize];
                            h[(inf & HOME) as usize] += 1;
                            if any_wide && wide(inf) {
                                each_wide_cell(inf, nz, |c, _| l[c] += 1);
                                continue;
                            }
                            for (c, on, _) in reach(inf, nz) {
                                l[c] += on;
                            }
                        }
                        (h, l)
                    })
                    .collect();
                (parts, counts)
            }
        };
        // Each piece starts where the pieces before it end, cell by cell.
        let (mut cur, mut lcur) = start_cursors(&side.starts, &side.list_starts);
        let mut starts = Vec::with_capacity(counts.len());
        for (h, l) in &counts {
            starts.push((cur.clone(), lcur.clone()));
            for c in 0..ncells {
                cur[c] += h[c];
                lcur[c] += l[c];
            }
        }
        parts.into_par_iter().zip(starts).for_each(|(part, (mut cur, mut lcur))| {
            // SAFETY: the cursors of this piece start after everything the
            // earlier pieces write to each cell, and it writes exactly its
            // counted number of slots per cell, so the ranges are disjoint.
            unsafe {
                if any_wide {
                    distribute_range::<true>(layout, info, part, &mut cur, &mut lcur, &order, &lists)
                } else {
                    distribute_range::<false>(layout, info, part, &mut cur, &mut lcur, &order, &lists)
                }
            };
        });
        fill_entries(boxes, layout, side, true);
    }
}

/// The entries of the distributed boxes, in entry order, and the sentinel
/// after them.
fn fill_entries<S: Scalar, const D: usize>(boxes: &[Aabb<S, D>], layout: &Layout, side: &mut Side<S>, parallel: bool) {
    let n = side.order.len();
    // Every entry is written below: keep the old contents, adjust the length.
    crate::mem::resize(&mut side.entries, n + 1, Entry::sentinel());
    side.entries[n] = Entry::sentinel();
    let fill = |order: &[u32], entries: &mut [Entry<S>]| {
        // The boxes are read in entry order, that is, at random: fetch
        // ahead.
        const AHEAD: usize = 12;
        for (k, (e, &i)) in entries.iter_mut().zip(order).enumerate() {
            if let Some(&j) = order.get(k + AHEAD) {
                prefetch(boxes.as_ptr().wrapping_add(j as usize));
            }
            *e = Entry::new(&boxes[i as usize], &layout.axes, i);
        }
    };
    #[cfg(feature = "parallel")]
    if parallel {
        use rayon::prelude::*;
        let chunk = n.div_ceil(rayon::current_num_threads().max(1) * 4).max(1 << 12);
        side.order.par_chunks(chunk).zip(side.entries[..n].par_chunks_mut(chunk)).for_each(|(o, e)| fill(o, e));
        return;
    }
    let _ = parallel;
    fill(&side.order, &mut side.entries[..n]);
}
