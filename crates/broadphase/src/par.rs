//! Running work in fixed pieces, on threads when asked, with output in the
//! same order either way.
//!
//! Every multi-threaded variant cuts its work into pieces whose number does
//! not depend on the thread count, lets each piece write its own pairs, and
//! concatenates the pieces in order. The single-threaded run walks the same
//! pieces in the same order, so both produce identical output.

/// The fewest items from which a threaded path whose native threshold is
/// `native` is taken: `native`, except under Miri, which interprets the
/// code thousands of times slower than it runs, where the threaded paths
/// are taken from [`MIRI_THREADS_FROM`] items on, so that its checks (data
/// races, accesses out of bounds or to uninitialised memory) reach them
/// in tests of a few hundred boxes. Nothing else changes under Miri.
#[cfg(feature = "parallel")]
pub(crate) const fn threads_from(native: usize) -> usize {
    if cfg!(miri) {
        MIRI_THREADS_FROM
    } else {
        native
    }
}

/// See [`threads_from`].
#[cfg(feature = "parallel")]
const MIRI_THREADS_FROM: usize = 256;

/// Runs `piece(k, out)` for `k in 0..pieces`, appending to `out` in order.
/// With threads, each piece writes into its own buffer of `parts` (kept for
/// the next call), and the buffers are then joined.
pub(crate) fn pieces<P: Send + Sync + Copy>(
    parallel: bool,
    pieces: usize,
    out: &mut Vec<P>,
    parts: &mut Vec<Vec<P>>,
    piece: impl Fn(usize, &mut Vec<P>) + Sync,
) {
    pieces_with(parallel, pieces, out, parts, || (), |_, k, out| piece(k, out));
}

/// [`pieces`] with working state made by `init`: once for a run on the
/// calling thread, once per batch of pieces a thread takes with threads.
pub(crate) fn pieces_with<P: Send + Sync + Copy, T>(
    parallel: bool,
    pieces: usize,
    out: &mut Vec<P>,
    parts: &mut Vec<Vec<P>>,
    init: impl Fn() -> T + Sync + Send,
    piece: impl Fn(&mut T, usize, &mut Vec<P>) + Sync,
) {
    #[cfg(feature = "parallel")]
    if parallel && pieces > 1 && rayon::current_num_threads() > 1 {
        use rayon::prelude::*;
        if parts.len() < pieces {
            parts.resize_with(pieces, Vec::new);
        }
        let parts = &mut parts[..pieces];
        parts.par_iter_mut().enumerate().for_each_init(&init, |t, (k, v)| {
            v.clear();
            piece(t, k, v);
        });
        let parts = &*parts;
        // Concatenate in order, the copies in parallel: each part owns its
        // own range of the spare capacity.
        let total: usize = parts.iter().map(Vec::len).sum();
        out.reserve(total);
        let len = out.len();
        let mut ranges = Vec::with_capacity(parts.len());
        let mut rest = &mut out.spare_capacity_mut()[..total];
        for p in parts {
            let (head, tail) = rest.split_at_mut(p.len());
            ranges.push(head);
            rest = tail;
        }
        ranges.into_par_iter().zip(parts.par_iter()).for_each(|(dst, src)| {
            for (d, s) in dst.iter_mut().zip(src) {
                d.write(*s);
            }
        });
        // SAFETY: the ranges tile the first `total` slots of the spare
        // capacity, and each was filled from a part of the same length.
        unsafe { out.set_len(len + total) };
        return;
    }
    let _ = (parallel, parts);
    let mut t = init();
    for k in 0..pieces {
        piece(&mut t, k, out);
    }
}

/// How many pieces to cut `n` units of work into: about `per` units each,
/// at least one. Fixed by the input, never by the thread count.
/// Under Miri, pieces hold at most [`MIRI_PIECE`] units, so that small
/// tests cut their work into several pieces and join them with threads
/// (the output does not depend on the number of pieces).
pub(crate) fn piece_count(n: usize, per: usize) -> usize {
    let per = if cfg!(miri) { per.clamp(1, MIRI_PIECE) } else { per };
    n.div_ceil(per).max(1)
}

/// See [`piece_count`].
const MIRI_PIECE: usize = 64;
