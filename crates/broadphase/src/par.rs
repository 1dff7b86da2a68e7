//! Running work in fixed pieces, on threads when asked, with output in the
//! same order either way.
//!
//! Every multi-threaded variant cuts its work into pieces whose number does
//! not depend on the thread count, lets each piece write its own pairs, and
//! concatenates the pieces in order. The single-threaded run walks the same
//! pieces in the same order, so both produce identical output.

/// Runs `piece(k, out)` for `k in 0..pieces`, appending to `out` in order.
pub(crate) fn pieces<P: Send>(
    parallel: bool,
    pieces: usize,
    out: &mut Vec<P>,
    piece: impl Fn(usize, &mut Vec<P>) + Sync,
) {
    #[cfg(feature = "parallel")]
    if parallel && pieces > 1 && rayon::current_num_threads() > 1 {
        use rayon::prelude::*;
        let parts: Vec<Vec<P>> = (0..pieces)
            .into_par_iter()
            .map(|k| {
                let mut v = Vec::new();
                piece(k, &mut v);
                v
            })
            .collect();
        out.reserve(parts.iter().map(Vec::len).sum());
        for mut p in parts {
            out.append(&mut p);
        }
        return;
    }
    let _ = parallel;
    for k in 0..pieces {
        piece(k, out);
    }
}

/// How many pieces to cut `n` units of work into: about `per` units each,
/// at least one. Fixed by the input, never by the thread count.
pub(crate) fn piece_count(n: usize, per: usize) -> usize {
    n.div_ceil(per).max(1)
}
