//! `Auto`'s merging of identical boxes.
//!
//! Sets where many boxes are exact copies of each other (a template placed
//! many times at one spot, bodies with several shapes under one box,
//! particles at their spawn point, rows repeated in a file) make every
//! algorithm pay for each copy: a box with `g` copies meets each partner `g`
//! times, and the copies crowd the cells and runs of the sweeps. Two facts
//! make them cheap instead: identical boxes always overlap each other
//! (boxes are closed, so even two copies of a point do), and a box overlaps
//! one copy of another box exactly when it overlaps all of them. So the
//! boxes are grouped by value (coordinate by coordinate, `-0.0 == 0.0`), one
//! representative per group is searched, and the pairs are expanded: every
//! two members of a group, and every member of one group with every member
//! of another for each pair of representatives. The result is exactly the
//! pairs of the whole set, each once.
//!
//! **When.** The grouping costs a hash and a radix sort of the boxes; it is
//! done only when a sample says that copies are common: the hashes of a
//! sample of the boxes (a thirty-second, at most [`SAMPLE`]) go into a
//! small table that every sixteenth box (between [`PROBES_MIN`] and
//! [`PROBES_MAX`] of them) is looked up in, which counts the copies of the
//! sampled boxes among those probed. About 1.5% of a search of distinct
//! boxes at 1e4 (10-15 µs), 0.1% at 1e6.
//!
//! **Order.** Groups are numbered by their first member and hold their
//! members in input order; the representatives are searched in input
//! order. The output is a function of the input only (threads change
//! nothing).

use crate::oneshot::PairFinder;
use crate::sort::{keyed, payload, sort_keyed};
use crate::sweep::prefetch;
use crate::workspace::Workspace;
use crate::{Aabb, Algorithm, CrossPair, Pair, Scalar};

/// Below this many boxes merging is not tried.
const DEDUP_MIN: usize = 1024;
/// Sampled boxes whose copies are counted: a thirty-second of them, at
/// most this many.
const SAMPLE: usize = 512;
/// Boxes looked up in the sample's table: a sixteenth of them, within
/// these bounds.
const PROBES_MIN: usize = 512;
const PROBES_MAX: usize = 8192;
/// Merging pays when a sampled box has on average at least this many
/// copies besides itself (counted among all boxes, estimated from the
/// probed ones), or [`COPIES_MIN_ADJACENT`] when most sampled boxes have a
/// copy beside them in the input (which the grouping finds in one pass).
/// Measured at 1e5 boxes (uniform 3D `f64`, best of 60, three rounds
/// alternated): every box twice, the copies half the set apart, 12.0-12.7
/// -> 13.3-13.4 ms (no gain: the grouping reads the copies at random);
/// three times apart 12.7 -> 10.0-12.0 ms, four times 12.4-12.9 -> 9.9-10.0
/// ms; twice side by side 12.2-12.4 -> 11.1-11.3 ms, three times 12.0 ->
/// 6.7-7.1 ms.
const COPIES_MIN: f64 = 1.5;
const COPIES_MIN_ADJACENT: f64 = 0.75;

/// The grouping sorts 22 bits of the hash (64 - 42): two radix passes below
/// half a million boxes, three above (the sort skips the top digit, the
/// same for all); boxes that differ but share those bits (a few thousand
/// at a million distinct boxes) are told apart by value.
const HASH_SHIFT: u32 = 42;

/// A coordinate's bits with `-0.0` taken as `0.0`, so that equal values
/// hash alike.
#[inline(always)]
fn bits<S: Scalar>(v: S) -> u64 {
    (v.to_f64() + 0.0).to_bits()
}

/// A hash of a box's values, consistent with `==` on boxes. The
/// coordinates are multiplied by different odd constants independently,
/// then mixed (a chain of dependent multiplications made the check twice
/// as slow).
#[inline]
fn hash<S: Scalar, const D: usize>(b: &Aabb<S, D>) -> u64 {
    const K: [u64; 6] = [
        0x9E37_79B9_7F4A_7C15,
        0xBF58_476D_1CE4_E5B9,
        0x94D0_49BB_1331_11EB,
        0xD6E8_FEB8_6659_FD93,
        0xA076_1D64_78BD_642F,
        0xE703_7ED1_A0B4_28DB,
    ];
    let (lo, hi) = (b.min(), b.max());
    let mut h = 0u64;
    for k in 0..D {
        // (`k % 3`: any D compiles; boxes have at most three axes.)
        h ^= bits(lo[k]).wrapping_mul(K[k % 3]) ^ bits(hi[k]).wrapping_mul(K[3 + k % 3]).rotate_left(32);
    }
    h = (h ^ (h >> 31)).wrapping_mul(K[0]);
    h ^ (h >> 29)
}

/// Whether merging identical boxes should pay (see the module notes).
pub(crate) fn worth_it<S: Scalar, const D: usize>(boxes: &[Aabb<S, D>]) -> bool {
    let n = boxes.len();
    if n < DEDUP_MIN {
        return false;
    }
    // Open addressing, a quarter full: (hash, sampled index + 1), 0 free.
    const SLOTS: usize = 4 * SAMPLE;
    // On the stack (32 KB): no allocation per search.
    let mut table = [(0u64, 0u32); SLOTS];
    let slot = |h: u64| (h >> 53) as usize % SLOTS;
    let mut adjacent = 0usize;
    let m = (n / 32).min(SAMPLE);
    for i in crate::stats::sample_indices(n, m) {
        let b = &boxes[i];
        adjacent += usize::from((i > 0 && boxes[i - 1] == *b) || boxes.get(i + 1) == Some(b));
        let h = hash(b);
        let mut s = slot(h);
        while table[s].1 != 0 {
            s = (s + 1) % SLOTS;
        }
        table[s] = (h, i as u32 + 1);
    }
    let probes = (n / 16).clamp(PROBES_MIN, PROBES_MAX).min(n);
    let mut copies = 0usize;
    // Probed at a fixed stride, which the hardware fetches ahead (at
    // random indices the probes missed the cache). The sampled boxes'
    // indices are spread over every residue of the stride, so each copy of
    // them is probed with the same chance wherever it lies.
    let stride = n / probes;
    for j in (0..probes).map(|k| stride / 2 + k * stride) {
        let b = &boxes[j];
        let h = hash(b);
        let mut s = slot(h);
        while table[s].1 != 0 {
            let (th, ti) = table[s];
            let i = ti as usize - 1;
            copies += usize::from(th == h && i != j && boxes[i] == *b);
            s = (s + 1) % SLOTS;
        }
    }
    // Each sampled box's copies were looked for among `probes` of the `n`.
    let sampled = m as f64;
    let least = if adjacent as f64 >= 0.5 * sampled { COPIES_MIN_ADJACENT } else { COPIES_MIN };
    copies as f64 * n as f64 / probes as f64 >= least * sampled
}

/// Boxes grouped by value: group `g` has the members
/// `members[start[g]..start[g + 1]]`, in ascending order, the first of them
/// its representative; groups are in the order of their representatives.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Groups {
    pub start: Vec<u32>,
    pub members: Vec<u32>,
}

impl Groups {
    pub fn len(&self) -> usize {
        self.start.len() - 1
    }

    #[inline]
    pub fn of(&self, g: usize) -> &[u32] {
        &self.members[self.start[g] as usize..self.start[g + 1] as usize]
    }
}

/// Groups `boxes` by value. `hash32` must give equal boxes equal values
/// (tests pass weak ones to reach the handling of collisions).
///
/// First the runs of adjacent copies are found in one pass (copies are
/// often listed together: a template's instances, a body's shapes), then
/// the first box of each run is grouped by a radix sort of the hashes, the
/// boxes of equal hashes compared by value.
pub(crate) fn group<S: Scalar, const D: usize>(
    boxes: &[Aabb<S, D>],
    hash32: impl Fn(&Aabb<S, D>) -> u32,
    keys: &mut Vec<u64>,
    scratch: &mut Vec<u64>,
    parallel: bool,
) -> Groups {
    let n = boxes.len();
    // Run r holds the boxes heads[r]..heads[r + 1].
    let mut heads: Vec<u32> = Vec::with_capacity(n / 2 + 2);
    for i in 0..n {
        if i == 0 || boxes[i] != boxes[i - 1] {
            heads.push(i as u32);
        }
    }
    let runs = heads.len();
    heads.push(n as u32);
    let first = |r: u32| &boxes[heads[r as usize] as usize];
    keys.clear();
    keys.extend((0..runs as u32).map(|r| keyed(hash32(first(r)), r)));
    // Stable: runs of equal hashes are in ascending order.
    sort_keyed(keys, scratch, parallel);
    // rep[r]: the first run whose boxes equal run r's.
    let mut rep: Vec<u32> = (0..runs as u32).collect();
    let (mut same, mut by_value) = (Vec::new(), Vec::new());
    let mut k = 0;
    while k < runs {
        let h = keys[k] >> 32;
        let mut e = k + 1;
        while e < runs && keys[e] >> 32 == h {
            e += 1;
        }
        if e - k > 1 {
            // Rare unless runs of copies lie apart: their boxes are read at
            // random, fetched ahead.
            for x in keys.iter().skip(e).take(8) {
                prefetch(first(payload(*x)));
            }
            same.clear();
            same.extend(keys[k..e].iter().map(|&x| payload(x)));
            group_run(first, &same, &mut rep, &mut by_value);
        }
        k = e;
    }
    // Number the groups by their first run, members in index order.
    let mut gid = vec![0u32; runs];
    let mut start = vec![0u32];
    for r in 0..runs {
        let q = rep[r] as usize;
        if q == r {
            gid[r] = (start.len() - 1) as u32;
            start.push(0);
        } else {
            gid[r] = gid[q];
        }
        start[gid[r] as usize + 1] += heads[r + 1] - heads[r];
    }
    for g in 1..start.len() {
        start[g] += start[g - 1];
    }
    let mut next = start.clone();
    let mut members = vec![0u32; n];
    for r in 0..runs {
        let g = gid[r] as usize;
        let (a, b) = (heads[r], heads[r + 1]);
        let at = next[g] as usize;
        for (m, i) in members[at..at + (b - a) as usize].iter_mut().zip(a..b) {
            *m = i;
        }
        next[g] += b - a;
    }
    Groups { start, members }
}

/// Sets `rep` for the runs `same` (ascending, their hashes collide): each
/// gets the first of them whose box (`first`) equals its own.
fn group_run<'a, S: Scalar + 'a, const D: usize>(
    first: impl Fn(u32) -> &'a Aabb<S, D>,
    same: &[u32],
    rep: &mut [u32],
    sorted: &mut Vec<([u64; 6], u32)>,
) {
    let b0 = first(same[0]);
    if same.iter().all(|&r| first(r) == b0) {
        // The common case: one group.
        for &r in &same[1..] {
            rep[r as usize] = same[0];
        }
        return;
    }
    // Collisions: order by value (ties by run), then take runs of equal
    // boxes. O(m log m) whatever the count.
    let key = |r: u32| {
        let b = first(r);
        let v: [u64; 6] = core::array::from_fn(|k| {
            if k < D {
                bits(b.min()[k])
            } else if k < 2 * D {
                bits(b.max()[k - D])
            } else {
                0
            }
        });
        (v, r)
    };
    sorted.clear();
    sorted.extend(same.iter().map(|&r| key(r)));
    sorted.sort_unstable();
    let mut head = sorted[0].1;
    for &(_, r) in &sorted[1..] {
        if first(r) == first(head) {
            rep[r as usize] = head;
        } else {
            head = r;
        }
    }
}

/// Every overlapping pair of `boxes` by a search of one box per group of
/// identical ones (`Auto`'s choice, split by shape when that pays),
/// expanded; appended to `out`. Returns the algorithm of that search.
pub(crate) fn complete<S: Scalar, const D: usize>(
    finder: &PairFinder,
    ws: &mut Workspace<S>,
    boxes: &[Aabb<S, D>],
    out: &mut Vec<Pair>,
) -> Algorithm {
    let (groups, distinct) = grouped(boxes, ws, finder.is_parallel());
    let mut found = Vec::new();
    let algorithm = finder.complete_auto(ws, &distinct, true, &mut found);
    out.reserve(found.len() + boxes.len());
    let (start, members) = (&groups.start, &groups.members);
    for (i, p) in found.iter().enumerate() {
        // PERF: the pairs name groups at random: their bounds are fetched
        // 16 pairs ahead, their members 8 ahead (1e6 boxes in groups of
        // four: the expansion was most of the search without).
        if let Some(q) = found.get(i + 16) {
            prefetch(&start[q.a() as usize]);
            prefetch(&start[q.b() as usize]);
        }
        if let Some(q) = found.get(i + 8) {
            prefetch(members.as_ptr().wrapping_add(start[q.a() as usize] as usize));
            prefetch(members.as_ptr().wrapping_add(start[q.b() as usize] as usize));
        }
        let (ga, gb) = (groups.of(p.a() as usize), groups.of(p.b() as usize));
        if let ([x], [y]) = (ga, gb) {
            out.push(Pair::ordered(*x, *y));
            continue;
        }
        for &x in ga {
            out.extend(gb.iter().map(|&y| Pair::ordered(x, y)));
        }
    }
    for g in 0..groups.len() {
        let m = groups.of(g);
        for (k, &x) in m.iter().enumerate() {
            // Members ascend: `x < y`.
            out.extend(m[k + 1..].iter().map(|&y| Pair::ordered(x, y)));
        }
    }
    algorithm
}

/// The groups of `boxes` and one box of each (its representative), in
/// group order.
fn grouped<S: Scalar, const D: usize>(
    boxes: &[Aabb<S, D>],
    ws: &mut Workspace<S>,
    parallel: bool,
) -> (Groups, Vec<Aabb<S, D>>) {
    let groups = group(boxes, |b| (hash(b) >> HASH_SHIFT) as u32, &mut ws.keys, &mut ws.scratch, parallel);
    let distinct = (0..groups.len()).map(|g| boxes[groups.of(g)[0] as usize]).collect();
    (groups, distinct)
}

/// Every overlapping pair between `a` and `b` by a search between one box
/// per group of identical ones of `a` (when `merge[0]`, else every box of
/// it) and of `b` (when `merge[1]`), expanded; appended to `out`. Returns
/// the algorithm of that search.
pub(crate) fn bipartite<S: Scalar, const D: usize>(
    finder: &PairFinder,
    ws: &mut Workspace<S>,
    a: &[Aabb<S, D>],
    b: &[Aabb<S, D>],
    merge: [bool; 2],
    out: &mut Vec<CrossPair>,
) -> Algorithm {
    let ma = merge[0].then(|| grouped(a, ws, finder.is_parallel()));
    let mb = merge[1].then(|| grouped(b, ws, finder.is_parallel()));
    let (da, db) = (ma.as_ref().map_or(a, |m| &m.1[..]), mb.as_ref().map_or(b, |m| &m.1[..]));
    let mut found = Vec::new();
    let algorithm = finder.bipartite_auto(ws, da, db, true, &mut found);
    // A box of a set not merged is its own group.
    fn members<'a>(m: &'a Option<(Groups, Vec<impl Sized>)>, i: &'a u32) -> &'a [u32] {
        m.as_ref().map_or(core::slice::from_ref(i), |(g, _)| g.of(*i as usize))
    }
    out.reserve(found.len());
    for p in &found {
        let (xs, ys) = (members(&ma, &p.a), members(&mb, &p.b));
        for &x in xs {
            out.extend(ys.iter().map(|&y| CrossPair { a: x, b: y }));
        }
    }
    algorithm
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cube(x: f64, y: f64, z: f64, s: f64) -> Aabb<f64, 3> {
        Aabb::new([x, y, z], [x + s, y + s, z + s]).unwrap()
    }

    /// The reference grouping: quadratic.
    fn naive(boxes: &[Aabb<f64, 3>]) -> Groups {
        let mut reps: Vec<u32> = Vec::new();
        let mut of: Vec<Vec<u32>> = Vec::new();
        for (i, b) in boxes.iter().enumerate() {
            match reps.iter().position(|&r| boxes[r as usize] == *b) {
                Some(g) => of[g].push(i as u32),
                None => {
                    reps.push(i as u32);
                    of.push(vec![i as u32]);
                }
            }
        }
        let mut start = vec![0u32];
        let mut members = Vec::new();
        for m in of {
            members.extend(m);
            start.push(members.len() as u32);
        }
        Groups { start, members }
    }

    fn lcg(s: &mut u64) -> u64 {
        *s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        *s >> 33
    }

    #[test]
    fn groups_match_the_quadratic_grouping_whatever_the_hash() {
        let mut s = 7;
        // Few distinct values: many copies, zero sizes, -0.0 beside 0.0.
        let boxes: Vec<Aabb<f64, 3>> = (0..600)
            .map(|_| {
                let x = (lcg(&mut s) % 5) as f64 - 2.0;
                let x = if x == 0.0 && lcg(&mut s).is_multiple_of(2) { -0.0 } else { x };
                cube(x, (lcg(&mut s) % 3) as f64, 0.5, (lcg(&mut s) % 2) as f64)
            })
            .collect();
        let expect = naive(&boxes);
        assert!(expect.len() < 100 && expect.len() > 10);
        let (mut keys, mut scratch) = (Vec::new(), Vec::new());
        // The real hash, a weak one (collisions between different boxes),
        // and a constant one (every box in one run).
        let got = group(&boxes, |b| hash(b) as u32, &mut keys, &mut scratch, false);
        assert_eq!(got, expect);
        let got = group(&boxes, |b| (hash(b) % 7) as u32, &mut keys, &mut scratch, false);
        assert_eq!(got, expect);
        let got = group(&boxes, |_| 42, &mut keys, &mut scratch, false);
        assert_eq!(got, expect);
    }

    fn brute<S: Scalar, const D: usize>(boxes: &[Aabb<S, D>]) -> Vec<Pair> {
        let mut v = Vec::new();
        crate::brute_force::complete(boxes, &mut v);
        v.sort_unstable();
        v
    }

    /// The merged search against brute force, and threaded against not
    /// (same pairs, same order).
    fn check<S: Scalar, const D: usize>(boxes: &[Aabb<S, D>], what: &str) {
        let mut ws = Workspace::new();
        let mut got = Vec::new();
        let finder = PairFinder::new(Algorithm::Auto);
        complete(&finder, &mut ws, boxes, &mut got);
        let mut threaded = Vec::new();
        complete(&finder.clone().parallel(true), &mut ws, boxes, &mut threaded);
        assert!(got == threaded, "{what}: threads changed the output");
        got.sort_unstable();
        assert!(got.windows(2).all(|w| w[0] != w[1]), "{what}: a pair twice");
        let expect = brute(boxes);
        assert!(got == expect, "{what}: {} pairs, brute force {}", got.len(), expect.len());
    }

    #[test]
    fn merged_search_finds_exactly_brute_forces_pairs() {
        let mut s = 11;
        let mut r = |m: u64| (lcg(&mut s) % m) as f64;
        // Unit cubes on a coarse lattice: copies, touching faces, groups of
        // every size.
        let lattice: Vec<Aabb<f64, 3>> = (0..3000).map(|_| cube(r(12), r(12), r(12), 1.0)).collect();
        check(&lattice, "lattice 3D f64");
        let f32s: Vec<Aabb<f32, 3>> =
            lattice.iter().map(|b| Aabb::new(b.min().map(|v| v as f32), b.max().map(|v| v as f32)).unwrap()).collect();
        check(&f32s, "lattice 3D f32");
        // 2D points and segments (zero sizes) with -0.0 beside 0.0.
        let flat: Vec<Aabb<f64, 2>> = (0..2500)
            .map(|_| {
                let x = r(6) - 3.0;
                let x = if x == 0.0 && r(2) == 0.0 { -0.0 } else { x };
                let y = r(6);
                Aabb::new([x, y], [x + r(2), y]).unwrap()
            })
            .collect();
        check(&flat, "points and segments 2D");
        // One box many times, and a few others.
        let mut same = vec![cube(0.0, 0.0, 0.0, 1.0); 1500];
        same.extend((0..50).map(|k| cube(k as f64 * 0.5, 0.0, 0.0, 0.25)));
        check(&same, "one box 1500 times");
        // No copies at all (the merge finds nothing to merge).
        let distinct: Vec<Aabb<f64, 3>> = (0..1500).map(|k| cube(k as f64 * 0.3, 0.0, 0.0, 1.0)).collect();
        check(&distinct, "no copies");
    }

    #[test]
    fn merged_bipartite_search_finds_exactly_brute_forces_pairs() {
        let mut s = 17;
        let mut r = |m: u64| (lcg(&mut s) % m) as f64;
        let copies: Vec<Aabb<f64, 3>> = (0..800).flat_map(|_| [cube(r(10), r(10), r(10), 1.0); 3]).collect();
        let plain: Vec<Aabb<f64, 3>> = (0..1500).map(|_| cube(r(100) * 0.1, r(100) * 0.1, r(100) * 0.1, 0.5)).collect();
        let brute_cross = |a: &[Aabb<f64, 3>], b: &[Aabb<f64, 3>]| {
            let mut v = Vec::new();
            for (i, x) in a.iter().enumerate() {
                for (j, y) in b.iter().enumerate() {
                    if x.overlaps(y) {
                        v.push(CrossPair { a: i as u32, b: j as u32 });
                    }
                }
            }
            v
        };
        let finder = PairFinder::new(Algorithm::Auto);
        let mut ws = Workspace::new();
        for (a, b, merge, what) in [
            (&copies, &plain, [true, false], "copies against plain"),
            (&plain, &copies, [false, true], "plain against copies"),
            (&copies, &copies, [true, true], "copies against copies"),
        ] {
            let mut got = Vec::new();
            bipartite(&finder, &mut ws, a, b, merge, &mut got);
            let mut threaded = Vec::new();
            bipartite(&finder.clone().parallel(true), &mut ws, a, b, merge, &mut threaded);
            assert!(got == threaded, "{what}: threads changed the output");
            got.sort_unstable();
            assert!(got == brute_cross(a, b), "{what}: {} pairs", got.len());
            // Through the public entry point (which decides to merge).
            let mut public = finder.find_bipartite(a, b).unwrap();
            public.sort_unstable();
            assert!(public == got, "{what}: the public search differs");
        }
        assert!(worth_it(&copies) && !worth_it(&plain));
    }

    /// The persistent broad phases' bulk frames search through a kept plan:
    /// a plan that merges finds the same pairs on every use.
    #[test]
    fn planned_searches_merge_and_stay_exact() {
        let mut s = 5;
        let mut boxes: Vec<Aabb<f64, 3>> =
            (0..1200).flat_map(|_| [cube((lcg(&mut s) % 20) as f64, (lcg(&mut s) % 20) as f64, 0.0, 1.5); 3]).collect();
        assert!(worth_it(&boxes));
        let mut plan = crate::oneshot::Plan::default();
        let mut ws = Workspace::new();
        let finder = PairFinder::new(Algorithm::Auto);
        for frame in 0..3 {
            let mut got = Vec::new();
            finder.find_planned(&mut plan, &mut ws, &boxes, &mut got).unwrap();
            got.sort_unstable();
            assert!(got == brute(&boxes), "frame {frame}");
            // Move a few copies off their groups.
            for b in boxes.iter_mut().step_by(97) {
                *b = cube(b.min()[0] + 0.25, b.min()[1], b.min()[2], 1.5);
            }
        }
    }

    #[test]
    fn negative_zero_hashes_as_zero() {
        let a = Aabb::new([0.0, -0.0], [1.0, 1.0]).unwrap();
        let b = Aabb::new([-0.0, 0.0], [1.0, 1.0]).unwrap();
        assert_eq!(a, b);
        assert_eq!(hash(&a), hash(&b));
    }

    #[test]
    fn merging_is_tried_only_where_copies_are_common() {
        let mut s = 3;
        let distinct: Vec<Aabb<f64, 3>> = (0..20_000)
            .map(|_| cube(lcg(&mut s) as f64 * 1e-5, lcg(&mut s) as f64 * 1e-5, lcg(&mut s) as f64 * 1e-5, 1.0))
            .collect();
        assert!(!worth_it(&distinct));
        // Every box twice, far apart in the input: not worth it; three
        // times: worth it.
        let twice: Vec<_> = distinct.iter().chain(&distinct).copied().collect();
        assert!(!worth_it(&twice));
        let thrice: Vec<_> = twice.iter().chain(&distinct).copied().collect();
        assert!(worth_it(&thrice));
        // Twice side by side: worth it.
        let pairs: Vec<_> = distinct.iter().flat_map(|b| [*b; 2]).collect();
        assert!(worth_it(&pairs));
        // Four copies of each, side by side.
        let four: Vec<_> = distinct[..5000].iter().flat_map(|b| [*b; 4]).collect();
        assert!(worth_it(&four));
        // As small as the scene tests' sets (which then run the merge).
        assert!(worth_it(&four[..1500]));
        // One copy of a tenth of the boxes: not worth it.
        let few: Vec<_> = distinct.iter().chain(&distinct[..2000]).copied().collect();
        assert!(!worth_it(&few));
        // Too small to try.
        assert!(!worth_it(&four[..DEDUP_MIN - 1]));
    }
}
