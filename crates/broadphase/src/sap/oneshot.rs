//! One-shot sort-and-sweep, complete and bipartite.

use crate::grid::kernel::{sweep_rows, Simd, Soa};
use crate::par;
use crate::sort::{keyed, payload, refine_equal_keys, sort_keyed};
use crate::sweep::{merge_split, sweep_two_from, Axes, Entry};
use crate::workspace::Workspace;
use crate::{Aabb, CrossPair, Pair, Scalar};

/// Sweep work per parallel piece, in entries.
const PIECE: usize = 1 << 14;

/// Fills `keys` with the boxes (all, or those listed in `subset`) keyed by
/// their start on `axis` and sorts them: exact value order, ties in input
/// order.
fn sort_keys<S: Scalar, const D: usize>(
    boxes: &[Aabb<S, D>],
    subset: Option<&[u32]>,
    axis: usize,
    parallel: bool,
    keys: &mut Vec<u64>,
    scratch: &mut Vec<u64>,
) {
    let key = |i: u32| keyed(boxes[i as usize].min()[axis].sort_key(), i);
    let ids = |k: usize| subset.map_or(k as u32, |s| s[k]);
    let n = subset.map_or(boxes.len(), <[u32]>::len);
    keys.clear();
    #[cfg(feature = "parallel")]
    if parallel && n >= crate::par::threads_from(1 << 15) {
        use rayon::prelude::*;
        keys.par_extend((0..n).into_par_iter().map(|k| key(ids(k))));
    }
    if keys.len() != n {
        keys.extend((0..n).map(|k| key(ids(k))));
    }
    sort_keyed(keys, scratch, parallel);
    refine_equal_keys(keys, S::KEY_IS_EXACT, parallel, |i| &boxes[i as usize].min()[axis]);
}

/// Fills `entries` with the boxes (all, or those listed in `subset`) sorted
/// by their start on the sweep axis, in exact value order with ties in input
/// order, followed by a sentinel.
pub(crate) fn sort_entries<S: Scalar, const D: usize>(
    boxes: &[Aabb<S, D>],
    subset: Option<&[u32]>,
    axes: &Axes,
    parallel: bool,
    keys: &mut Vec<u64>,
    scratch: &mut Vec<u64>,
    entries: &mut Vec<Entry<S>>,
) {
    sort_keys(boxes, subset, axes.sweep, parallel, keys, scratch);
    entries.clear();
    entries.reserve_exact(keys.len() + 1);
    entries.extend(keys.iter().map(|&k| {
        let i = payload(k);
        Entry::new(&boxes[i as usize], axes, i)
    }));
    entries.push(Entry::sentinel());
}

/// [`sort_entries`] into a new vector.
pub(crate) fn sorted_entries<S: Scalar, const D: usize>(
    boxes: &[Aabb<S, D>],
    subset: Option<&[u32]>,
    axes: &Axes,
    parallel: bool,
    keys: &mut Vec<u64>,
    scratch: &mut Vec<u64>,
) -> Vec<Entry<S>> {
    let mut e = Vec::new();
    sort_entries(boxes, subset, axes, parallel, keys, scratch, &mut e);
    e
}

/// All overlapping pairs of `boxes`, sweeping along `axis`: radix sort,
/// then the columnar SIMD kernel (see `grid::kernel`) with every box at
/// home, in pieces of rows for threads.
///
/// The columns are `f32`: `f64` boxes are rounded outward (starts down,
/// ends up; see `grid::kernel::lower_f32`), twice the lanes per
/// instruction, and each pair the columns find is tested again on the exact
/// boxes: the rounded columns find every overlapping pair and, beyond them,
/// only pairs within an `f32` rounding of touching, so the re-test costs a
/// read of two boxes per pair found. With AVX-512 or AVX2 and long runs the cross
/// axes are tested on an 8- or 16-bit grid instead (`grid::kernel::Quant`),
/// which finds every overlapping pair and some pairs up to a grid cell
/// apart: those pairs are tested again in the same way, whatever the
/// scalar. The order is that of the `f32` kernel on every path.
pub(crate) fn complete<S: Scalar, const D: usize>(
    boxes: &[Aabb<S, D>],
    axis: usize,
    parallel: bool,
    ws: &mut Workspace<S>,
    out: &mut Vec<Pair>,
) {
    let axes = Axes::new(D, axis);
    let Workspace { keys, scratch, soa, parts, .. } = ws;
    sort_keys(boxes, None, axis, parallel, keys, scratch);
    let simd = Simd::detect();
    let quant = quant_for(boxes, keys, &axes, simd);
    soa.fill_sorted(boxes, keys, &axes, parallel, S::column_lower, S::column_upper, quant.as_ref());
    sweep_filled::<S, D, false>(boxes, soa, 0, simd, parallel, &mut parts.pairs, out);
}

/// Whether a complete sweep over the union of two sets of `a` and `b`
/// boxes beats the merge of their sorted lists (see [`bipartite`]).
fn union_pays(a: usize, b: usize) -> bool {
    a.min(b).saturating_mul(UNION_RATIO) >= a.max(b)
}

/// The bipartite search sweeps the union of both sets with the SIMD
/// kernels where the smaller set has at least a third of the larger one's
/// boxes; the merge of the two sorted lists tests only pairs across the
/// sets, one by one, and wins where one set is much smaller.
///
/// PERF: 1e5 boxes split, the first set 1/2, 1/10 and 1/100 of them, `f64`,
/// one thread, medians of 5, merge against union in ms: uniform 3D 80 / 9.6,
/// 31 / 9.0, 3.9 / 8.2; clustered 3D 83 / 23, 32 / 18, 4.3 / 15; shared-x
/// 3D 16 / 4.3, 6.2 / 3.9, 1.3 / 3.7; degenerate 3D 118 / 84, 45 / 81, 5.9 /
/// 82; uniform 2D 15 / 3.6, 5.8 / 3.4, 1.4 / 3.2; clustered 2D 17 / 12,
/// 6.5 / 9.6; shared-x 2D 1.5 / 1.4, 1.0 / 1.3; degenerate 2D 20 / 16,
/// 8.1 / 15. The union's cost hardly depends on the split, the merge's
/// falls with the smaller set: at 1/2 the union wins on those scenes, at
/// 1/10 on half of them. Where nearly every candidate is a pair, the union
/// loses, since it finds the pairs within each set too (in 3D, half and
/// half: lattice 6.9 against 12.2 ms; uniform 86 / 9.4, clustered 86 / 23,
/// heavy-tailed 86 / 67, shared-x 17 / 4.5, guillotine 121 / 39,
/// degenerate 124 / 89, duplicates 140 / 14).
const UNION_RATIO: usize = 3;

/// Sweeps the columns filled from `boxes`, in pieces of rows for threads,
/// and keeps the pairs whose exact boxes overlap where the columns are not
/// exact (`f64` boxes, or a grid); with `CROSS`, on a grid, also only the
/// pairs of a box below `first` and one from `first` on (without a grid
/// the rows' sides do that, see [`Soa::set_sides`]).
fn sweep_filled<S: Scalar, const D: usize, const CROSS: bool>(
    boxes: &[Aabb<S, D>],
    soa: &Soa<f32>,
    first: u32,
    simd: Simd,
    parallel: bool,
    parts: &mut Vec<Vec<Pair>>,
    out: &mut Vec<Pair>,
) {
    let n = soa.len();
    // Pieces start on group boundaries, so that they reproduce the order of
    // one run over all rows.
    let group = group::<f32>();
    let groups = n.div_ceil(group);
    let pieces = par::piece_count(n, PIECE);
    par::pieces(parallel, pieces, out, parts, |k, out| {
        let (g0, g1) = (k * groups / pieces, (k + 1) * groups / pieces);
        let start = out.len();
        sweep_rows(soa, g0 * group..g1 * group, simd, out);
        if !S::COLUMN_EXACT || soa.grid() != 0 {
            // Keep the pairs of this piece whose exact boxes overlap.
            let mut kept = start;
            for i in start..out.len() {
                // PERF: the boxes of the pair 8 ahead are loaded early (1e4
                // uniform f64: the search's best of 2000 runs 0.717-0.722 ->
                // 0.698-0.700 ms in three alternations; f32 unchanged).
                if let Some(q) = out.get(i + 8) {
                    crate::sweep::prefetch(&boxes[q.a() as usize]);
                    crate::sweep::prefetch(&boxes[q.b() as usize]);
                }
                let p = out[i];
                out[kept] = p;
                let across = !CROSS || soa.grid() == 0 || ((p.a() < first) != (p.b() < first));
                kept += usize::from(across && boxes[p.a() as usize].overlaps(&boxes[p.b() as usize]));
            }
            out.truncate(kept);
        }
    });
}

/// The grid the cross axes are tested on, where the runs are long (see
/// `grid::kernel::long_runs`); it serves the SIMD kernels (AVX-512 and
/// AVX2) only.
fn quant_for<S: Scalar, const D: usize>(
    boxes: &[Aabb<S, D>],
    keys: &[u64],
    axes: &Axes,
    simd: Simd,
) -> Option<crate::grid::kernel::Quant> {
    #[cfg(target_arch = "x86_64")]
    let gridded = simd != Simd::Portable;
    #[cfg(not(target_arch = "x86_64"))]
    let gridded = {
        let _ = simd;
        false
    };
    if gridded && crate::grid::kernel::long_runs(boxes, keys, axes.sweep) {
        crate::grid::kernel::Quant::fit(boxes, axes)
    } else {
        None
    }
}

/// Rows per kernel group of columns of `C`.
fn group<C: Scalar>() -> usize {
    C::GROUP
}

/// All overlapping pairs between `a` and `b`, sweeping along `axis`: where
/// the sets are of comparable sizes (see [`UNION_RATIO`]) both at once
/// through the columnar SIMD kernels as in [`complete`], the pairs within a
/// set left out; else by a merge of the two sorted lists.
pub(crate) fn bipartite<S: Scalar, const D: usize>(
    a: &[Aabb<S, D>],
    b: &[Aabb<S, D>],
    axis: usize,
    parallel: bool,
    ws: &mut Workspace<S>,
    out: &mut Vec<CrossPair>,
) {
    let axes = Axes::new(D, axis);
    if union_pays(a.len(), b.len()) {
        // Both sets in one set of columns, swept as one: on a grid (long
        // runs) every pair is tested again anyway, and those within a set
        // are dropped then; without one each row carries its side, and the
        // kernels pair rows of two sides (see `grid::kernel::SIDE_A`). The
        // sort and the fill read one slice: both sets are copied into it.
        let union: Vec<Aabb<S, D>> = a.iter().chain(b).copied().collect();
        let first = a.len() as u32;
        let Workspace { keys, scratch, soa, parts, .. } = ws;
        sort_keys(&union, None, axis, parallel, keys, scratch);
        let simd = Simd::detect();
        let quant = quant_for(&union, keys, &axes, simd);
        soa.fill_sorted(&union, keys, &axes, parallel, S::column_lower, S::column_upper, quant.as_ref());
        if quant.is_none() {
            soa.set_sides(first);
        }
        let flat = &mut parts.flat;
        flat.clear();
        sweep_filled::<S, D, true>(&union, soa, first, simd, parallel, &mut parts.pairs, flat);
        out.extend(flat.iter().map(|p| CrossPair { a: p.a(), b: p.b() - first }));
        return;
    }
    let Workspace { keys, scratch, sides, parts, .. } = ws;
    let [sa, sb] = sides;
    sort_entries(a, None, &axes, parallel, keys, scratch, &mut sa.entries);
    sort_entries(b, None, &axes, parallel, keys, scratch, &mut sb.entries);
    sweep_sorted_pair(&sa.entries, &sb.entries, parallel, &mut parts.cross, out);
}

/// The bipartite sweep of two sorted entry lists, cut into pieces of the
/// merged visit order (found by merge-path search) so that threads can share
/// it and the output order stays that of one sequential merge.
pub(crate) fn sweep_sorted_pair<S: Scalar, P: crate::pair::OutPair>(
    ea: &[Entry<S>],
    eb: &[Entry<S>],
    parallel: bool,
    parts: &mut Vec<Vec<P>>,
    out: &mut Vec<P>,
) {
    let total = ea.len() + eb.len() - 2;
    let pieces = par::piece_count(total, PIECE);
    par::pieces(parallel, pieces, out, parts, |k, out| {
        let (m0, m1) = (k * total / pieces, (k + 1) * total / pieces);
        let (i, j) = merge_split(ea, eb, m0);
        sweep_two_from(ea, eb, i, j, m1 - m0, out);
    });
}
