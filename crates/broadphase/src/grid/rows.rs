//! The grid by rows: a build that moves each box's data in bulk, in a few
//! sequential passes, instead of sorting keys globally and gathering the
//! boxes at random afterwards.
//!
//! A *row* is the set of cells sharing a cell on the first cross axis (in
//! 2D, where the second cross axis keeps one cell, a row is one cell).
//!
//! 1. **Count**: per row, the boxes that reach it (a box reaching three
//!    rows counts in each).
//! 2. **Bucket**: in input order, each box's sweep entry is appended to the
//!    bucket of every row it reaches, with a note of its cells on the second
//!    cross axis and whether the row is its home there. The input is read
//!    in order and the writes go to one cursor per row: a few hundred
//!    streams at most for sets that fit the caches' write-combining, never
//!    a read at random.
//! 3. **Per row**, in the caches: the row's entries sorted by start (radix
//!    sort of keys, exact refinement of equal keys; ties in input order),
//!    distributed to the row's cells in that order, and each cell swept by
//!    the SIMD kernel as in [`super::oneshot`].
//!
//! Each cell's rows come out in the order of the global build (by start,
//! ties in input order) with the same home flags, and the cells are swept
//! in the same order, so the pairs and their order are those of the global
//! build. Oversized boxes (reaching more than [`MAX_SPAN`] cells past their
//! home) are left to the global build, which handles them.
//!
//! A **bipartite** search ([`bipartite`]) runs the same passes over both
//! sets at once, the second set's boxes indexed after the first's and
//! noted as such ([`SECOND`]). The kernel's columns then hold each row's
//! side beside its home flags ([`SIDE_A`], [`SIDE_B`]), and the kernel
//! pairs two rows only when their flags together make [`CROSS_BOTH`]: both
//! at home, of two sides; rows holding boxes of one set alone are skipped.
//! The global build's bipartite search swept each cell's two lists with a
//! scalar merge instead (1e5 against 1e6 uniform 3D `f32` boxes: 49-52 ms
//! by the global build, 31-33 by rows, where a complete search of all
//! 1.1e6 boxes takes 30).
//!
//! PERF: at 1e6 uniform 3D boxes (`f32`, one thread, Zen 4) the global
//! build spent 39 of 56 ms placing, sorting, distributing and filling, most
//! of it on reading the boxes' placements and the boxes themselves in
//! sorted order, that is at random (one cache line per box each time). By
//! rows the search takes 43-44 ms instead of 54, and 28.7-29.2 instead of
//! 44-45 in 2D. Tried and dropped: storing each box once, in its home row, with
//! the rows after it reading back the boxes that reach them (no faster, 3D
//! 48-58 against 47-50 ms); blocks of records chained per row, which spare
//! the counting pass (slower: 55-79 ms); 16-bit keys with 16-bit indices
//! for the rows' sorts (no faster, 3D slower from equal keys).

use super::build::Scatter;
use super::kernel::{Simd, Soa, CROSS_BOTH, HOME_Y, HOME_Z, POSITION, SIDE_A, SIDE_B};
use super::oneshot::{Layout, MAX_SPAN, OUT_SPARE};
use crate::sort::{keyed, payload, refine_equal_keys, sort_keyed};
use crate::sweep::Entry;
use crate::workspace::Side;
use crate::{par, Aabb, CrossPair, Pair, Scalar};

/// A row entry's note: its first cell on the second cross axis (low bits),
/// how many cells past it the box reaches there, and [`HOME_Y`] when the
/// row is the box's home row.
const Z_SPAN_SHIFT: u32 = 24;
/// In a bipartite search, the note of a box of the second set has this bit
/// (past the span's three bits).
const SECOND: u32 = 1 << 27;
/// Where [`Flat`] keeps [`SECOND`]: the bit below [`HOME_Y`] of its index
/// (indices stay below [`POSITION`]).
const FLAT_SECOND: u32 = HOME_Z;

/// A box's sweep entry in a row's bucket, with its note (see
/// [`Z_SPAN_SHIFT`]): the fields of an [`Entry`], the note in what would
/// be its padding for `f64`. 32 bytes for `f32`, 56 for `f64` (an entry
/// with a note beside it would take 64).
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub(crate) struct Rec<S> {
    lo: S,
    hi: S,
    cross: [S; 4],
    id: u32,
    note: u32,
}

/// A box as its rows hold it: its sweep entry and its note.
pub(crate) trait Record<S: Scalar>: Copy + Send + Sync {
    fn empty() -> Self;
    fn make(e: Entry<S>, note: u32) -> Self;
    /// The start on the sweep axis.
    fn lo(&self) -> &S;
    fn note(&self) -> u32;
    fn entry(&self) -> Entry<S>;
}

impl<S: Scalar> Record<S> for Rec<S> {
    /// A slot not yet written (trash slots and the room beyond): starting
    /// at `+∞` and ending at 0, as the kernel's padding rows, so that even
    /// read by mistake as a row it could not run the kernel's steps past
    /// its padding.
    fn empty() -> Self {
        Self::make(Entry { hi: S::ZERO, ..Entry::sentinel() }, 0)
    }

    #[inline(always)]
    fn make(e: Entry<S>, note: u32) -> Self {
        Self { lo: e.lo, hi: e.hi, cross: e.cross, id: e.id, note }
    }

    #[inline(always)]
    fn lo(&self) -> &S {
        &self.lo
    }

    #[inline(always)]
    fn note(&self) -> u32 {
        self.note
    }

    #[inline(always)]
    fn entry(&self) -> Entry<S> {
        Entry { lo: self.lo, hi: self.hi, cross: self.cross, id: self.id }
    }
}

/// A box's record in 2D, where the second cross axis repeats the first and
/// keeps one cell, so that the note is [`HOME_Y`] or nothing (kept in the
/// index's top bit): 20 bytes for `f32` where [`Rec`] takes 32, which the
/// bucketing writes and the rows read back (uniform 2D, 1e6 `f32` boxes:
/// 31.9-32.8 -> 28.7-29.2 ms, four runs each, alternated).
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub(crate) struct Flat<S> {
    lo: S,
    hi: S,
    /// `[min, -max]` on the cross axis.
    y: [S; 2],
    id: u32,
}

impl<S: Scalar> Record<S> for Flat<S> {
    /// As [`Rec`]'s.
    fn empty() -> Self {
        Self { lo: S::INFINITY, hi: S::ZERO, y: [S::ZERO; 2], id: 0 }
    }

    #[inline(always)]
    fn make(e: Entry<S>, note: u32) -> Self {
        debug_assert!(note & !(HOME_Y | SECOND) == 0, "one cell on the second cross axis");
        debug_assert!(e.id & (HOME_Y | FLAT_SECOND) == 0);
        let second = if note & SECOND != 0 { FLAT_SECOND } else { 0 };
        Self { lo: e.lo, hi: e.hi, y: [e.cross[0], e.cross[2]], id: e.id | (note & HOME_Y) | second }
    }

    #[inline(always)]
    fn lo(&self) -> &S {
        &self.lo
    }

    #[inline(always)]
    fn note(&self) -> u32 {
        (self.id & HOME_Y) | if self.id & FLAT_SECOND != 0 { SECOND } else { 0 }
    }

    #[inline(always)]
    fn entry(&self) -> Entry<S> {
        let [a, b] = self.y;
        Entry { lo: self.lo, hi: self.hi, cross: [a, a, b, b], id: self.id & !(HOME_Y | FLAT_SECOND) }
    }
}

/// The fewest boxes the grid builds by rows. Below, the boxes and the
/// global build's arrays fit the caches, and the global build is faster:
/// uniform boxes, one thread, Zen 4, `f32` (`f64`), global build against
/// rows in ms: 3D 1e4 0.38-0.42 against 0.47 (0.41-0.44 against
/// 0.52-0.53), 1e5 5.1-5.2 against 5.1-5.3 (6.5-6.8 both), 2e5 10.7-11.2
/// against 10.0-10.3 (14.0-14.1 against 13.6-13.8), 4e5 21.9-22.2 against
/// 19.3-19.5, 1e6 54 against 47-49 (71 both); 2D 1e4 0.30 against 0.48-0.50,
/// 1e5 3.9-4.9 against 3.7-4.4 (4.3-4.8 against 5.6), 3e5 12.9-13.9
/// against 11.9-13.0 (15.6-15.9 both), 1e6 44-45 against 34-35 (55 against
/// 47). On the lent 16-core Xeon (2 MB of L2 per core, 300 MB of L3, where
/// the global build's arrays stay in the caches) `f32` 3D gains as well
/// (1e6 81-84 against 71-82 ms, 4e5 28-37 against 26.3-26.8) but 2D does
/// not (1e6 67-72 against 66-81, 4e5 23.3-24.3 against 26.5-31.5).
///
/// Those were the first form of the rows, taken from 2^18 boxes. Their
/// later changes (one gather per row, the rows counted alone, 20-byte
/// records in 2D) moved the break-even down: `Auto`, best of a warm loop,
/// global build against rows in ms, 3D `f32` 16384 0.58 against 0.66,
/// 3e4 1.23 against 1.15, 5e4 2.03 against 1.87-1.93, 65536 2.66-2.68
/// against 2.46-2.49, 1e5 4.07-4.40 against 3.72-3.78, 2e5 9.6-9.8
/// against 8.1-8.4; 2D `f32` 3e4 0.89 against 0.92, 65536 1.97-2.01
/// against 1.86-1.89, 1e5 3.05-3.06 against 2.75-2.77; 2D `f64` 16384 0.49
/// against 0.60, 3e4 to 5e4 equal, 65536 2.19-2.28 against 2.09-2.15, 2e5
/// 9.1-9.5 against 8.2-8.3.
pub(crate) const ROWS_MIN: usize = 1 << 16;

/// The fewest boxes (both sets together) a bipartite search builds by
/// rows. Its other build, the global one, sweeps each cell's two lists with
/// a scalar merge where the rows run the SIMD kernel, so the rows pay from
/// far fewer boxes than for one set. Uniform sets split in two, `f32`,
/// `Auto`, one thread, medians of 7 (global build against rows): 3D 250 +
/// 250 boxes 0.025 against 0.027 ms, 500 + 500 0.053 against 0.051, 200 +
/// 1500 0.083 against 0.088, 1000 + 1000 0.145 against 0.089, 1e4 + 1e4
/// 1.33 against 0.60, 1e5 + 1e5 13.9 against 5.7, 5e5 + 5e5 73 against 29,
/// 1e4 + 1e6 37 against 27; 2D 1000 + 1000 0.096 against 0.063, 1e5 + 1e6
/// 42 against 19.
pub(crate) const BIPARTITE_ROWS_MIN: usize = 2000;

/// Whether to build by rows: from [`ROWS_MIN`] boxes on, in 2D and 3D,
/// `f32` and `f64`.
///
/// `f64` in 3D took the global build until 2026-11-27: its records then
/// took 64 bytes, and writing about 1.5 of them per box cancelled the gain
/// (1e6 uniform boxes, one thread: 71.4-71.8 ms by rows against 70.7-71.2
/// by the global build) and raised the peak memory from 89 to 98 bytes per
/// box. With the bucketing's prefetch (see [`WRITE_AHEAD`]) and records of
/// 56 bytes (see [`Rec`]), `Auto` on uniform 3D `f64`, one thread, global
/// build against rows in ms (three rounds): 7e4 boxes 4.1-5.7 against
/// 3.4-3.5, 1e5 5.9-7.0 against 5.0, 2e5 13.2-13.5 against 10.8-10.9, 4e5
/// 27.8-28.3 against 21.0-21.2, 1e6 69-75 against 52-61; peak memory at
/// 1e6 86.0 bytes per box (89.1 by the global build).
pub(crate) fn pays(n: usize) -> bool {
    n >= ROWS_MIN
}

/// Rows per parallel piece of the sweep, at most: one, since a row is the
/// unit of work (at 1e6 uniform 3D boxes there are 69 rows; four per piece
/// made 18 pieces, and 16 threads on the lent Xeon took 14.8-17.8 ms where
/// the global build's 244 pieces took 11.8-15.6; one row per piece
/// 12.2-14.1).
const PIECE_ROWS: usize = 1;

/// The rows (cells on the first cross axis) and the cells on the second
/// that box `b` reaches, or `None` when it is oversized.
#[inline(always)]
fn cover<S: Scalar, const D: usize>(layout: &Layout, b: &Aabb<S, D>) -> Option<[(u32, u32); 2]> {
    let s = layout.span(b);
    (s[0].1 - s[0].0 <= MAX_SPAN && s[1].1 - s[1].0 <= MAX_SPAN).then_some(s)
}

/// Counts a box in the cells (or rows) `first..=first + span` (at `c + 1`,
/// `counts` two longer than the cells): without a branch on the span where
/// it is 0 or 1 (nearly all boxes, about half of them 1 with cells twice
/// the typical box).
#[inline(always)]
fn count_span(counts: &mut [u32], first: usize, span: u32) {
    counts[first + 1] += 1;
    if span <= 1 {
        counts[first + 2] += span;
    } else {
        for c in &mut counts[first + 2..=first + span as usize + 1] {
            *c += 1;
        }
    }
}

/// Places a box in the cells (or rows) `first..=first + span` at their
/// cursors (`cursors` one longer than the cells), calling `write(slot,
/// flag)` for each, `flag` being `home` in the first and 0 in the others.
/// As in [`count_span`], a box reaching one cell past its first is placed
/// there without a branch on it: a box that does not writes its copy to
/// `trash` instead.
#[inline(always)]
fn place_span(cursors: &mut [u32], first: usize, span: u32, trash: u32, home: u32, mut write: impl FnMut(u32, u32)) {
    let at = cursors[first];
    cursors[first] = at + 1;
    write(at, home);
    if span <= 1 {
        let next = cursors[first + 1];
        cursors[first + 1] = next + span;
        write(if span == 1 { next } else { trash }, 0);
    } else {
        for cursor in &mut cursors[first + 1..=first + span as usize] {
            let at = *cursor;
            *cursor = at + 1;
            write(at, 0);
        }
    }
}

/// Counts, per row, the boxes of `boxes` reaching it (at `rows[y + 1]`);
/// `false` as soon as a box is oversized on the first cross axis (the
/// second is checked while bucketing).
fn count_rows<S: Scalar, const D: usize>(boxes: &[Aabb<S, D>], layout: &Layout, rows: &mut [u32]) -> bool {
    for b in boxes {
        let (y0, y1) = layout.span_first(b);
        if y1 - y0 > MAX_SPAN {
            return false;
        }
        count_span(rows, y0 as usize, y1 - y0);
    }
    true
}

/// How many records ahead of its cursor the bucketing starts loading a
/// row's lines.
///
/// PERF: each record written to a fresh line waits for that line to come
/// from memory (the row buffers dwarf the caches at 1e6 boxes), and with
/// some 70 rows written in turn the hardware prefetchers do not follow
/// the cursors (a standalone scatter of 1.45e6 records of 32 bytes into
/// 16 rows took 2.6 ms, into 70 rows 9.8 ms, into 256 rows 5.3 ms; with
/// this prefetch 2.5, 3.6 and 3.4 ms). `Auto`, uniform `f32`, one thread,
/// 1e6 boxes, three rounds alternated: 3D 42.8-43.8 -> 38.3-41.6 ms (the
/// bucketing's share of the profile 28.5% -> 16.8%), 2D 28.4-28.7 ->
/// 26.6-27.2 ms; 8 and 32 records ahead did as well as 16. (The same
/// prefetch in the radix sort's scatter, or ahead of the rows' gather in
/// sorted order, gained nothing.)
const WRITE_AHEAD: usize = 16;

/// Appends boxes `base..` to the buckets of the rows they reach, at the
/// rows' cursors (`cursors` has one more slot than there are rows; see
/// [`place_span`]). `false` as soon as a box is oversized on the second
/// cross axis (what is written is then to be dropped).
///
/// # Safety
/// The cursors give these boxes slots of `recs` that no other caller
/// writes, as many per row as the boxes reach; `trash` is a slot of them
/// that no other caller writes either.
unsafe fn bucket<S: Scalar, const D: usize, R: Record<S>, const NOTE: u32>(
    boxes: &[Aabb<S, D>],
    base: usize,
    layout: &Layout,
    cursors: &mut [u32],
    trash: u32,
    recs: &Scatter<'_, R>,
) -> bool {
    for (i, b) in boxes.iter().enumerate() {
        let Some([(y0, y1), (z0, z1)]) = cover(layout, b) else {
            return false;
        };
        let e = Entry::new(b, &layout.axes, (base + i) as u32);
        let note = z0 | ((z1 - z0) << Z_SPAN_SHIFT) | NOTE;
        place_span(cursors, y0 as usize, y1 - y0, trash, HOME_Y, |at, home| {
            // SAFETY: `at` is in this caller's range of a row the box
            // reaches, or its trash slot.
            unsafe { recs.write(at as usize, R::make(e, note | home)) };
            recs.prefetch(at as usize + WRITE_AHEAD);
        });
    }
    true
}

/// Fills `records` with the row buckets (`starts` bounding them, a trash
/// slot per chunk after them) of the boxes of `sets`, indexed one set after
/// the other (a bipartite search passes two sets, whose second set's notes
/// get [`SECOND`]). With two sets, `both[y]` tells whether row `y` holds
/// boxes of both. `false`, with nothing else to rely on, when some box is
/// oversized: the caller then takes the global build.
fn build_rows<S: Scalar, const D: usize, R: Record<S>>(
    sets: &[&[Aabb<S, D>]],
    layout: &Layout,
    starts: &mut Vec<u32>,
    records: &mut Vec<R>,
    both: &mut Vec<bool>,
    parallel: bool,
) -> bool {
    let nrows = layout.cells[0] as usize;
    // The chunks of the input, set by set.
    let mut pieces: Vec<Piece<'_, S, D>> = Vec::new();
    let mut base = 0;
    for (set, boxes) in sets.iter().enumerate() {
        let chunks = chunk_count(boxes.len(), parallel);
        let chunk = boxes.len().div_ceil(chunks).max(1);
        for (j, c) in boxes.chunks(chunk).enumerate() {
            pieces.push(Piece { boxes: c, base: base + j * chunk, set });
        }
        base += boxes.len();
    }
    let chunks = pieces.len().max(1);
    // Per chunk of the input, its count per row.
    let mut counts = vec![vec![0u32; nrows + 2]; chunks];
    let fits = {
        #[cfg(feature = "parallel")]
        if parallel && chunks > 1 {
            use rayon::prelude::*;
            pieces.par_iter().zip(counts.par_iter_mut()).all(|(p, c)| count_rows(p.boxes, layout, c))
        } else {
            pieces.iter().zip(counts.iter_mut()).all(|(p, c)| count_rows(p.boxes, layout, c))
        }
        #[cfg(not(feature = "parallel"))]
        pieces.iter().zip(counts.iter_mut()).all(|(p, c)| count_rows(p.boxes, layout, c))
    };
    if !fits {
        return false;
    }
    // The records, counted wide (boxes reaching several rows count in
    // each): every slot, trash slots included, must have a `u32` index, and
    // a row's positions must leave the cells' lists their two flag bits;
    // else the global build takes the set.
    let records_total: u64 = counts.iter().flat_map(|c| c.iter()).map(|&x| x as u64).sum();
    if records_total + chunks as u64 > POSITION as u64 {
        return false;
    }
    if sets.len() == 2 {
        both.clear();
        both.extend((0..nrows).map(|y| {
            let has = |set| pieces.iter().zip(&counts).any(|(p, c)| p.set == set && c[y + 1] > 0);
            has(0) && has(1)
        }));
    }
    // Row starts, and each chunk's cursors: after the chunks before it.
    starts.clear();
    starts.resize(nrows + 1, 0);
    let mut total = 0u32;
    let mut cursors = vec![vec![0u32; nrows + 1]; chunks];
    for y in 0..nrows {
        starts[y] = total;
        for (c, cur) in counts.iter().zip(cursors.iter_mut()) {
            cur[y] = total;
            total += c[y + 1];
        }
    }
    starts[nrows] = total;
    let len = total as usize;
    // Every slot is written below: keep the old contents, adjust the length.
    // Past the rows, a trash slot per chunk.
    crate::mem::resize(records, len + chunks, R::empty());
    let recs = Scatter::new(records);
    #[cfg(feature = "parallel")]
    if parallel && chunks > 1 {
        use rayon::prelude::*;
        return pieces.par_iter().zip(cursors.par_iter_mut()).enumerate().all(|(k, (p, cur))| {
            // SAFETY: each chunk writes its own counted slots of each row,
            // and its own trash slot.
            unsafe { bucket_piece(p, layout, cur, total + k as u32, &recs) }
        });
    }
    // SAFETY: the chunks in turn write their counted slots, from the rows'
    // starts, each its own trash slot.
    pieces
        .iter()
        .zip(cursors.iter_mut())
        .enumerate()
        .all(|(k, (p, cur))| unsafe { bucket_piece(p, layout, cur, total + k as u32, &recs) })
}

/// A chunk of the input of `build_rows`: its boxes, the index of the
/// first, and the set they belong to (0, or 1 for the second set of a
/// bipartite search).
struct Piece<'a, S: Scalar, const D: usize> {
    boxes: &'a [Aabb<S, D>],
    base: usize,
    set: usize,
}

/// [`bucket`] on a piece of `build_rows`, the second set's note bit
/// ([`SECOND`]) as a constant.
///
/// # Safety
/// As for [`bucket`].
unsafe fn bucket_piece<S: Scalar, const D: usize, R: Record<S>>(
    piece: &Piece<'_, S, D>,
    layout: &Layout,
    cursors: &mut [u32],
    trash: u32,
    recs: &Scatter<'_, R>,
) -> bool {
    let Piece { boxes, base, set } = *piece;
    // SAFETY: passed on.
    unsafe {
        if set == 0 {
            bucket::<S, D, R, 0>(boxes, base, layout, cursors, trash, recs)
        } else {
            bucket::<S, D, R, SECOND>(boxes, base, layout, cursors, trash, recs)
        }
    }
}

/// Chunks of the input for the counting and bucketing passes.
fn chunk_count(n: usize, parallel: bool) -> usize {
    #[cfg(feature = "parallel")]
    if parallel && n >= crate::par::threads_from(1 << 15) {
        return rayon::current_num_threads().max(1);
    }
    let _ = (n, parallel);
    1
}

/// Working memory of one thread's rows.
pub(crate) struct RowWork<S> {
    soa: Soa<S>,
    keys: Vec<u64>,
    scratch: Vec<u64>,
    /// Per cell of the row, the start of its list in `lists`.
    cells: Vec<u32>,
    lists: Vec<u32>,
    /// The row's boxes in sorted order.
    sorted: Vec<Rec<S>>,
}

impl<S: Scalar> RowWork<S> {
    fn new() -> Self {
        Self {
            soa: Soa::new(),
            keys: Vec::new(),
            scratch: Vec::new(),
            cells: Vec::new(),
            lists: Vec::new(),
            sorted: Vec::new(),
        }
    }

    /// Bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.soa.bytes()
            + (self.keys.capacity() + self.scratch.capacity()) * 8
            + (self.cells.capacity() + self.lists.capacity()) * 4
            + self.sorted.capacity() * core::mem::size_of::<Rec<S>>()
    }
}

/// The threads' working memory, kept from search to search, so that a
/// search with large rows does not allocate (and have the system map and
/// zero) their buffers again. In a loop of searches at 1e6 boxes it made
/// no measurable difference (49.5 against 49.2 ms).
pub(crate) type WorkPool<S> = std::sync::Mutex<Vec<RowWork<S>>>;

/// A [`RowWork`] taken from the pool, and put back when dropped.
struct Lease<'a, S: Scalar> {
    work: RowWork<S>,
    pool: &'a WorkPool<S>,
}

impl<'a, S: Scalar> Lease<'a, S> {
    fn take(pool: &'a WorkPool<S>) -> Self {
        // A poisoned pool (a thread panicked holding it) only loses the
        // buffers kept: start afresh.
        let work = pool.lock().ok().and_then(|mut p| p.pop()).unwrap_or_else(RowWork::new);
        Self { work, pool }
    }
}

impl<S: Scalar> Drop for Lease<'_, S> {
    fn drop(&mut self) {
        if let Ok(mut p) = self.pool.lock() {
            p.push(core::mem::replace(&mut self.work, RowWork::new()));
        }
    }
}

/// All overlapping pairs of `boxes` by rows, or `false` (nothing written)
/// when some box is oversized or the records would be too many (see
/// `build_rows`): the caller then takes the global build.
pub(super) fn complete<S: Scalar, const D: usize>(
    boxes: &[Aabb<S, D>],
    layout: &Layout,
    parallel: bool,
    side: &mut Side<S>,
    parts: &mut Vec<Vec<Pair>>,
    out: &mut Vec<Pair>,
) -> bool {
    sets_by_rows(&[boxes], layout, parallel, side, parts, out)
}

/// [`by_rows`] with the records of the dimension: 20-byte [`Flat`] ones in
/// 2D, [`Rec`] in 3D.
fn sets_by_rows<S: Scalar, const D: usize>(
    sets: &[&[Aabb<S, D>]],
    layout: &Layout,
    parallel: bool,
    side: &mut Side<S>,
    parts: &mut Vec<Vec<Pair>>,
    out: &mut Vec<Pair>,
) -> bool {
    if D == 2 {
        let Side { starts, flat, work, rows_both, .. } = side;
        by_rows(sets, layout, parallel, starts, flat, rows_both, work, parts, out)
    } else {
        let Side { starts, recs, work, rows_both, .. } = side;
        by_rows(sets, layout, parallel, starts, recs, rows_both, work, parts, out)
    }
}

/// Every overlapping pair of a box of `a` and a box of `b`, by rows over
/// both sets at once (see [`SIDE_A`]), or `false` (nothing written) as for
/// [`complete`]; `flat` is scratch space. The pairs come in the order of
/// [`complete`] over `a` then `b`, those within one set left out.
#[allow(clippy::too_many_arguments)]
pub(super) fn bipartite<S: Scalar, const D: usize>(
    a: &[Aabb<S, D>],
    b: &[Aabb<S, D>],
    layout: &Layout,
    parallel: bool,
    side: &mut Side<S>,
    parts: &mut Vec<Vec<Pair>>,
    flat: &mut Vec<Pair>,
    out: &mut Vec<CrossPair>,
) -> bool {
    flat.clear();
    if !sets_by_rows(&[a, b], layout, parallel, side, parts, flat) {
        return false;
    }
    // The kernels write each pair as (smaller, larger) index: the box of
    // `a`, then that of `b` after the `a.len()` of `a`.
    let first = a.len() as u32;
    out.extend(flat.iter().map(|p| {
        debug_assert!(p.a() < first && p.b() >= first);
        CrossPair { a: p.a(), b: p.b() - first }
    }));
    true
}

/// [`complete`] (one set) or [`bipartite`] (two) with records `R`.
#[allow(clippy::too_many_arguments)]
fn by_rows<S: Scalar, const D: usize, R: Record<S>>(
    sets: &[&[Aabb<S, D>]],
    layout: &Layout,
    parallel: bool,
    starts: &mut Vec<u32>,
    records: &mut Vec<R>,
    both: &mut Vec<bool>,
    pool: &WorkPool<S>,
    parts: &mut Vec<Vec<Pair>>,
    out: &mut Vec<Pair>,
) -> bool {
    if !build_rows(sets, layout, starts, records, both, parallel) {
        return false;
    }
    let two = sets.len() == 2;
    let (starts, records, both) = (&*starts, &*records, &*both);
    let nrows = layout.cells[0] as usize;
    let pieces = par::piece_count(nrows, PIECE_ROWS);
    let simd = Simd::detect();
    par::pieces_with(
        parallel,
        pieces,
        out,
        parts,
        || Lease::take(pool),
        |lease, p, out| {
            let w = &mut lease.work;
            // The hit rate of the lanes the kernel tested in the cells before,
            // decayed cell by cell: see `super::oneshot::BRANCHLESS_RATES`.
            let mut rate = super::oneshot::HitRate::new();
            for y in p * nrows / pieces..(p + 1) * nrows / pieces {
                // A bipartite search skips the rows of one set alone.
                if two && !both[y] {
                    continue;
                }
                let recs = &records[starts[y] as usize..starts[y + 1] as usize];
                if two {
                    sweep_row::<S, R, true>(layout, recs, w, &mut rate, simd, out);
                } else {
                    sweep_row::<S, R, false>(layout, recs, w, &mut rate, simd, out);
                }
            }
        },
    );
    true
}

/// A row's home flags in the kernel's columns, with its side in a
/// bipartite search (`TWO`).
#[inline(always)]
fn flags<const TWO: bool>(home: u32, note: u32) -> u32 {
    if !TWO {
        home
    } else if note & SECOND != 0 {
        home | SIDE_B
    } else {
        home | SIDE_A
    }
}

/// Sorts one row's entries by start and sweeps its cells in order; `TWO`:
/// the pairs of two sets alone (see [`bipartite`]).
fn sweep_row<S: Scalar, R: Record<S>, const TWO: bool>(
    layout: &Layout,
    recs: &[R],
    w: &mut RowWork<S>,
    rate: &mut super::oneshot::HitRate,
    simd: Simd,
    out: &mut Vec<Pair>,
) {
    let m = recs.len();
    if m < 2 {
        return;
    }
    let RowWork { soa, keys, scratch, cells, lists, sorted } = w;
    let nz = layout.cells[1] as usize;
    let span = |n: u32| ((n & ((1 << Z_SPAN_SHIFT) - 1)) as usize, (n >> Z_SPAN_SHIFT) & MAX_SPAN);
    // The keys, and how many boxes each cell of the row lists.
    keys.clear();
    cells.clear();
    cells.resize(nz + 2, 0);
    keys.extend(recs.iter().enumerate().map(|(k, r)| {
        let (z0, dz) = span(r.note());
        count_span(cells, z0, dz);
        keyed(layout.row_key(*r.lo()), k as u32)
    }));
    sort_keyed(keys, scratch, false);
    refine_equal_keys(keys, layout.row_key_exact::<S>(), false, |k| recs[k as usize].lo());
    if nz == 1 {
        // One cell: every entry is at home on the second axis.
        crate::mem::spare(out, OUT_SPARE);
        soa.fill_values(m, |j| {
            let r = &recs[payload(keys[j]) as usize];
            (r.entry(), flags::<TWO>((r.note() | HOME_Z) >> 30, r.note()))
        });
        if TWO {
            soa.both = CROSS_BOTH;
        }
        rate.sweep(soa, simd, out);
        return;
    }
    // The row in sorted order: one read at random per box, where the cells'
    // lists below then read their boxes in increasing positions.
    sorted.clear();
    sorted.extend(keys.iter().map(|&k| {
        let r = &recs[payload(k) as usize];
        Rec::make(r.entry(), r.note())
    }));
    // The cells' lists: positions in `sorted` with home flags, a trash slot
    // at the end (see `place_span`).
    for z in 0..nz {
        cells[z + 1] += cells[z];
    }
    let trash = cells[nz];
    crate::mem::resize(lists, trash as usize + 1, 0);
    //
    // PERF: written out rather than through `place_span`, which made the
    // compiler emit this loop worse (1e6 uniform 3D boxes: 44 -> 52 ms).
    for (j, r) in sorted.iter().enumerate() {
        let (z0, dz) = span(r.note);
        let item = j as u32 | (r.note & HOME_Y);
        let at = cells[z0];
        cells[z0] = at + 1;
        lists[at as usize] = item | HOME_Z;
        if dz <= 1 {
            let next = cells[z0 + 1];
            cells[z0 + 1] = next + dz;
            lists[if dz == 1 { next } else { trash } as usize] = item;
        } else {
            for cell in &mut cells[z0 + 1..=z0 + dz as usize] {
                lists[*cell as usize] = item;
                *cell += 1;
            }
        }
    }
    // `cells[z]` now ends cell `z`'s list.
    let mut start = 0;
    for &end in &cells[..nz] {
        let end = end as usize;
        let l = &lists[start..end];
        start = end;
        if l.len() >= 2 {
            crate::mem::spare(out, OUT_SPARE);
            soa.fill_values(l.len(), |j| {
                let r = &sorted[(l[j] & POSITION) as usize];
                (r.entry(), flags::<TWO>(l[j] >> 30, r.note))
            });
            if TWO {
                soa.both = CROSS_BOTH;
            }
            rate.sweep(soa, simd, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Profile;
    use crate::workspace::Workspace;

    /// Boxes of one scene: `kind` 0 uniform (random extents), 1 copies on
    /// a coarse lattice of starts (equal starts everywhere, touching
    /// faces, zero-size boxes), 2 wide boxes (up to seven cells past home
    /// with a fine cell), 3 everything in one cell, 4 and 5 uniform at
    /// huge and tiny scales.
    fn scene<S: Scalar, const D: usize>(kind: u32, n: usize, seed: u64, to: impl Fn(f64) -> S) -> Vec<Aabb<S, D>> {
        let mut r = crate::Lcg::new(seed);
        let side = (n as f64 * 2.0).powf(1.0 / D as f64).max(1.0);
        (0..n)
            .map(|_| {
                let (lo, w): ([f64; D], [f64; D]) = match kind {
                    0 => (core::array::from_fn(|_| r.unit() * side), core::array::from_fn(|_| r.unit() * 2.0)),
                    1 => (core::array::from_fn(|_| r.below(8) as f64), core::array::from_fn(|_| r.below(3) as f64)),
                    2 => (core::array::from_fn(|_| r.unit() * side), core::array::from_fn(|_| r.unit() * 6.0)),
                    3 => (core::array::from_fn(|_| r.unit() * 0.1), core::array::from_fn(|_| r.unit() * 0.1)),
                    // Huge and tiny coordinates, on both sides of zero.
                    k => {
                        let scale = if k == 4 { 1e30 } else { 1e-30 };
                        let lo = core::array::from_fn(|_| (r.unit() * side - side / 2.0) * scale);
                        (lo, core::array::from_fn(|_| r.unit() * 2.0 * scale))
                    }
                };
                Aabb::new(lo.map(&to), core::array::from_fn(|k| to(lo[k] + w[k]))).unwrap()
            })
            .collect()
    }

    /// The build by rows gives the global build's pairs in its order, with
    /// and without threads, and those pairs are brute force's; a set with
    /// an oversized box is left to the global build, untouched.
    fn check<S: Scalar, const D: usize>(to: impl Fn(f64) -> S + Copy) {
        for kind in 0..6 {
            for (n, seed) in [(0, 1), (1, 2), (2, 3), (17, 4), (300, 5), (3000, 6), (40_000, 7)] {
                // The dense scenes (every box meeting dozens or all of the
                // others) stay small.
                if (kind == 1 || kind == 3) && n > 3000 {
                    continue;
                }
                let boxes = scene::<S, D>(kind, n, seed, to);
                let profile = Profile::new(&boxes[..]);
                // The cell the data asks for, and a fine one (wide boxes).
                // (A cell of 1 makes the scaled boxes oversized.)
                let fine = if kind < 4 { Some(1.0) } else { None };
                for cell in [None, fine] {
                    let layout = Layout::new(&profile, cell);
                    let mut ws = Workspace::<S>::new();
                    let mut want = Vec::new();
                    super::super::oneshot::complete_global(&boxes, &layout, false, &mut ws, &mut want);
                    for parallel in [false, true] {
                        let mut got = Vec::new();
                        let side = &mut ws.sides[0];
                        assert!(complete(&boxes, &layout, parallel, side, &mut ws.parts.pairs, &mut got));
                        assert_eq!(got, want, "kind {kind} n {n} cell {cell:?} parallel {parallel}");
                    }
                    if n <= 3000 {
                        let mut brute = Vec::new();
                        crate::brute_force::complete(&boxes, &mut brute);
                        let mut sorted = want.clone();
                        sorted.sort_unstable();
                        brute.sort_unstable();
                        assert_eq!(sorted, brute, "kind {kind} n {n} cell {cell:?}");
                    }
                }
            }
        }
        // One box reaching far past the cells on every axis, or on one
        // cross axis alone (found while counting, or while bucketing), with
        // threads or not: oversized, nothing written to the output.
        for n in [500, 40_000] {
            let base = scene::<S, D>(0, n, 9, to);
            // (Any layout serves; this one's cells do not move with the long box.)
            let layout = Layout::new(&Profile::new(&base[..]), Some(0.5));
            let cross = layout.axes.cross;
            for long in [None, Some(cross[0]), Some(cross[D.min(3) - 2])] {
                let mut boxes = base.clone();
                let hi: [S; D] = core::array::from_fn(|k| to(if long.is_none_or(|a| a == k) { 1e3 } else { 1.0 }));
                boxes.insert(n / 2, Aabb::new([to(0.0); D], hi).unwrap());
                for parallel in [false, true] {
                    let mut ws = Workspace::<S>::new();
                    let mut got = Vec::new();
                    assert!(!complete(&boxes, &layout, parallel, &mut ws.sides[0], &mut ws.parts.pairs, &mut got));
                    assert!(got.is_empty());
                }
            }
        }
    }

    /// The grid's entry point takes the rows from `ROWS_MIN` boxes on (for
    /// `f32` boxes).
    #[test]
    fn large_sets_go_by_rows() {
        /// A set of `ROWS_MIN` boxes goes by rows (its records are there),
        /// with the global build's pairs in its order.
        fn by_rows<S: Scalar>(to: impl Fn(f64) -> S + Copy) {
            let boxes = scene::<S, 3>(0, ROWS_MIN, 11, to);
            let mut ws = Workspace::<S>::new();
            let mut got = Vec::new();
            super::super::oneshot::complete(&boxes, None, false, None, &mut ws, &mut got);
            assert_eq!(ws.sides[0].recs.len(), ws.sides[0].starts.last().copied().unwrap_or(0) as usize + 1);
            let layout = Layout::new(&Profile::new(&boxes[..]), None);
            let mut want = Vec::new();
            super::super::oneshot::complete_global(&boxes, &layout, false, &mut Workspace::new(), &mut want);
            assert_eq!(got, want);
        }
        by_rows::<f32>(|x| x as f32);
        by_rows::<f64>(|x| x);
    }

    /// The threaded bucketing and sweep (under Miri from a few hundred
    /// boxes, see `par::threads_from`; natively one chunk) give the global
    /// build's pairs: small enough for Miri to check their unsafe writes.
    #[test]
    fn small_sets_by_rows_with_threads() {
        fn run<S: Scalar, const D: usize>(to: impl Fn(f64) -> S + Copy) {
            let boxes = scene::<S, D>(0, 400, 21, to);
            let layout = Layout::new(&Profile::new(&boxes[..]), None);
            let mut ws = Workspace::<S>::new();
            let mut want = Vec::new();
            super::super::oneshot::complete_global(&boxes, &layout, false, &mut ws, &mut want);
            assert!(!want.is_empty());
            for parallel in [false, true] {
                let mut got = Vec::new();
                assert!(complete(&boxes, &layout, parallel, &mut ws.sides[0], &mut ws.parts.pairs, &mut got));
                assert_eq!(got, want, "parallel {parallel}");
            }
            // The same boxes as two sets (the bipartite search's bucketing
            // in chunks of both sets under Miri).
            let (a, b) = boxes.split_at(150);
            let mut brute = Vec::new();
            crate::brute_force::bipartite(a, b, &mut brute);
            brute.sort_unstable();
            assert!(!brute.is_empty());
            for parallel in [false, true] {
                let mut got = Vec::new();
                let Workspace { sides, parts, .. } = &mut ws;
                assert!(bipartite(a, b, &layout, parallel, &mut sides[0], &mut parts.pairs, &mut parts.flat, &mut got));
                got.sort_unstable();
                assert_eq!(got, brute, "bipartite, parallel {parallel}");
            }
        }
        run::<f32, 3>(|x| x as f32);
        run::<f64, 2>(|x| x);
    }

    /// The bipartite search by rows gives brute force's pairs, the same
    /// with threads or not, in the order of the complete search by rows
    /// over both sets (the pairs within one set left out); with an
    /// oversized box in either set it leaves the search to the global
    /// build, nothing written.
    fn check_bipartite<S: Scalar, const D: usize>(to: impl Fn(f64) -> S + Copy) {
        for kind in 0..6 {
            for (na, nb, seed) in
                [(0, 0, 1), (0, 5, 2), (1, 1, 3), (17, 3, 4), (300, 700, 5), (3000, 200, 6), (9000, 40_000, 7)]
            {
                if (kind == 1 || kind == 3) && na + nb > 3000 {
                    continue;
                }
                let a = scene::<S, D>(kind, na, seed, to);
                let b = scene::<S, D>(kind, nb, seed + 100, to);
                let both: Vec<_> = a.iter().chain(&b).copied().collect();
                let profile = Profile::bipartite(&a[..], &b[..]);
                let fine = if kind < 4 { Some(1.0) } else { None };
                for cell in [None, fine] {
                    let layout = Layout::new(&profile, cell);
                    let mut ws = Workspace::<S>::new();
                    let mut all = Vec::new();
                    assert!(complete(&both, &layout, false, &mut ws.sides[0], &mut ws.parts.pairs, &mut all));
                    let first = na as u32;
                    let want: Vec<CrossPair> = all
                        .iter()
                        .filter(|p| p.a() < first && p.b() >= first)
                        .map(|p| CrossPair { a: p.a(), b: p.b() - first })
                        .collect();
                    for parallel in [false, true] {
                        let mut got = Vec::new();
                        let Workspace { sides, parts, .. } = &mut ws;
                        let (pairs, flat) = (&mut parts.pairs, &mut parts.flat);
                        assert!(bipartite(&a, &b, &layout, parallel, &mut sides[1], pairs, flat, &mut got));
                        assert_eq!(got, want, "kind {kind} n {na}+{nb} cell {cell:?} parallel {parallel}");
                    }
                    if na + nb <= 4000 {
                        let mut brute = Vec::new();
                        crate::brute_force::bipartite(&a, &b, &mut brute);
                        let mut sorted = want.clone();
                        sorted.sort_unstable();
                        brute.sort_unstable();
                        assert_eq!(sorted, brute, "kind {kind} n {na}+{nb} cell {cell:?}");
                    }
                }
            }
        }
        // An oversized box in either set: nothing written.
        let base = scene::<S, D>(0, 2000, 9, to);
        let layout = Layout::new(&Profile::new(&base[..]), Some(0.5));
        let long = Aabb::new([to(0.0); D], [to(1e3); D]).unwrap();
        for (mut a, mut b, which) in [(base.clone(), base.clone(), 0), (base.clone(), base.clone(), 1)] {
            if which == 0 {
                a.insert(7, long)
            } else {
                b.insert(7, long)
            }
            for parallel in [false, true] {
                let mut ws = Workspace::<S>::new();
                let mut got = Vec::new();
                let Workspace { sides, parts, .. } = &mut ws;
                assert!(!bipartite(
                    &a,
                    &b,
                    &layout,
                    parallel,
                    &mut sides[0],
                    &mut parts.pairs,
                    &mut parts.flat,
                    &mut got
                ));
                assert!(got.is_empty());
            }
        }
    }

    #[test]
    fn bipartite_rows_give_brute_forces_pairs() {
        check_bipartite::<f32, 3>(|x| x as f32);
        check_bipartite::<f64, 3>(|x| x);
        check_bipartite::<f32, 2>(|x| x as f32);
        check_bipartite::<f64, 2>(|x| x);
    }

    /// The grid's bipartite entry point takes the rows from `ROWS_MIN`
    /// boxes in all (their records are there) and finds brute force's pairs.
    #[test]
    fn large_bipartite_sets_go_by_rows() {
        let a = scene::<f32, 3>(0, ROWS_MIN / 4, 12, |x| x as f32);
        let b = scene::<f32, 3>(0, ROWS_MIN - ROWS_MIN / 4, 13, |x| x as f32);
        let mut ws = Workspace::<f32>::new();
        let mut got = Vec::new();
        super::super::oneshot::bipartite(&a, &b, None, false, None, &mut ws, &mut got);
        // The rows, and a trash slot per set.
        assert_eq!(ws.sides[0].recs.len(), ws.sides[0].starts.last().copied().unwrap_or(0) as usize + 2);
        let mut want = Vec::new();
        crate::sap::oneshot::bipartite(&a, &b, 0, false, &mut Workspace::new(), &mut want);
        got.sort_unstable();
        want.sort_unstable();
        assert!(!want.is_empty());
        assert_eq!(got, want);
    }

    #[test]
    fn rows_give_the_global_builds_pairs_in_order() {
        check::<f32, 3>(|x| x as f32);
        check::<f64, 3>(|x| x);
        check::<f32, 2>(|x| x as f32);
        check::<f64, 2>(|x| x);
    }
}
