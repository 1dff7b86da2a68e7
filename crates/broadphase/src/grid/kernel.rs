//! The grid's cell kernel: all pairs of one cell whose reference cell it is.
//!
//! A cell's list (positions of the boxes that reach the cell, sorted by
//! their start on the sweep axis, with home flags) is first gathered into a
//! structure-of-arrays buffer that stays in L1. Each box then tests the boxes
//! after it a block of lanes at a time: start within its interval, the four
//! cross-axis comparisons, and the reference-cell rule (on each cross axis at
//! least one of the two is at home in this cell), all without branches. A
//! box goes on to the next block only when the block's last start still lies
//! within its interval, which for boxes of similar size is rare: no loop exit
//! to mispredict per box. Hits are left-packed into the output.
//!
//! On x86-64 with AVX2 (detected at run time) the blocks are 4 lanes for
//! `f64` and 8 for `f32`, left-packed with a permutation table; elsewhere a
//! portable kernel computes the same pairs in the same order.

use crate::sweep::Entry;
use crate::{Pair, Scalar};

/// Home flags of a list element, in its top two bits.
pub(crate) const HOME_Y: u32 = 1 << 31;
pub(crate) const HOME_Z: u32 = 1 << 30;
pub(crate) const POSITION: u32 = HOME_Z - 1;
const HOME_BOTH: u32 = 3;

/// Padding after a cell's boxes: the widest block.
const PAD: usize = 8;

/// One cell's boxes in contiguous columns, followed by [`PAD`] sentinels
/// whose start is `+∞`. Reused from cell to cell.
pub struct CellBuf<S> {
    lo: Vec<S>,
    hi: Vec<S>,
    /// `min_y, min_z, -max_y, -max_z`, one column each.
    c: [Vec<S>; 4],
    id: Vec<u32>,
    /// Home flags: bit 1 = home on the first cross axis, bit 0 = the second.
    home: Vec<u32>,
    len: usize,
}

impl<S: Scalar> CellBuf<S> {
    pub(crate) fn new() -> Self {
        Self {
            lo: Vec::new(),
            hi: Vec::new(),
            c: [Vec::new(), Vec::new(), Vec::new(), Vec::new()],
            id: Vec::new(),
            home: Vec::new(),
            len: 0,
        }
    }

    /// Gathers the boxes of `list` (positions into `entries`, without the
    /// list's sentinel).
    pub(crate) fn fill(&mut self, entries: &[Entry<S>], list: &[u32]) {
        let m = list.len();
        let cap = m + PAD;
        if self.lo.len() < cap {
            self.lo.resize(cap, S::ZERO);
            self.hi.resize(cap, S::ZERO);
            for col in self.c.iter_mut() {
                col.resize(cap, S::ZERO);
            }
            self.id.resize(cap, 0);
            self.home.resize(cap, 0);
        }
        let [c0, c1, c2, c3] = &mut self.c;
        let (lo, hi, id, home) = (&mut self.lo[..cap], &mut self.hi[..cap], &mut self.id[..cap], &mut self.home[..cap]);
        let (c0, c1, c2, c3) = (&mut c0[..cap], &mut c1[..cap], &mut c2[..cap], &mut c3[..cap]);
        for (k, &p) in list.iter().enumerate() {
            let e = &entries[(p & POSITION) as usize];
            lo[k] = e.lo;
            hi[k] = e.hi;
            c0[k] = e.cross[0];
            c1[k] = e.cross[1];
            c2[k] = e.cross[2];
            c3[k] = e.cross[3];
            id[k] = e.id;
            home[k] = p >> 30;
        }
        for k in m..cap {
            lo[k] = S::INFINITY;
            home[k] = 0;
            id[k] = 0;
        }
        self.len = m;
    }
}

/// The portable kernel: the reference the SIMD kernels must match, pair for
/// pair and in order. Boxes are taken in groups of `S::LANES` rows; for
/// `d = 1, 2, ...` each row `r` of the group is tested against box `r + d`,
/// until no row of the group has a successor left within its interval.
pub(crate) fn sweep_portable<S: Scalar>(b: &CellBuf<S>, out: &mut Vec<Pair>) {
    let m = b.len;
    let group = S::LANES;
    let mut i = 0;
    while i < m {
        let rows = (m - i).min(group);
        let mut d = 1;
        loop {
            let mut going = false;
            for r in i..i + rows {
                let j = r + d;
                if b.lo[j] > b.hi[r] {
                    continue;
                }
                going = true;
                let ok = (b.c[0][j] <= -b.c[2][r])
                    & (b.c[1][j] <= -b.c[3][r])
                    & (b.c[2][j] <= -b.c[0][r])
                    & (b.c[3][j] <= -b.c[1][r])
                    & ((b.home[j] | b.home[r]) == HOME_BOTH);
                if ok {
                    out.push(Pair::ordered(b.id[r], b.id[j]));
                }
            }
            if !going {
                break;
            }
            d += 1;
        }
        i += group;
    }
}

/// Runs the kernel for the cell in `b`: the SIMD one when `simd` (which the
/// caller sets from [`simd_available`]), else the portable one.
#[inline]
pub(crate) fn sweep<S: Scalar>(b: &CellBuf<S>, simd: bool, out: &mut Vec<Pair>) {
    if simd && simd_available() {
        // SAFETY: just checked (the detection result is cached by std).
        unsafe { S::sweep_cell_simd(b, out) }
    } else {
        sweep_portable(b, out);
    }
}

/// Whether the SIMD kernels can run here.
pub(crate) fn simd_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod avx2 {
    //! AVX2 kernels. Each is `unsafe` only because it needs AVX2: the caller
    //! checks [`super::simd_available`] first.
    use super::{CellBuf, HOME_BOTH};
    use crate::Pair;
    use core::arch::x86_64::*;

    /// For each 4-bit mask, the 32-bit lane indices that left-pack the
    /// selected 64-bit pairs.
    const PACK4: [[i32; 8]; 16] = {
        let mut t = [[0i32; 8]; 16];
        let mut m = 0;
        while m < 16 {
            let mut k = 0;
            let mut l = 0;
            while l < 4 {
                if m & (1 << l) != 0 {
                    t[m][2 * k] = 2 * l;
                    t[m][2 * k + 1] = 2 * l + 1;
                    k += 1;
                }
                l += 1;
            }
            m += 1;
        }
        t
    };

    /// Writes the pairs `(a[l], b[l])` (ordered) for the set bits `l` of
    /// the 4-bit `mask`, left-packed, at the end of `out`, which must have
    /// room for 4 more pairs.
    #[inline(always)]
    unsafe fn emit4(out: &mut Vec<Pair>, mask: u32, a: __m128i, b: __m128i) {
        let mn = _mm_min_epu32(a, b);
        let mx = _mm_max_epu32(a, b);
        let pairs = _mm256_set_m128i(_mm_unpackhi_epi32(mn, mx), _mm_unpacklo_epi32(mn, mx));
        let perm = _mm256_loadu_si256(PACK4[mask as usize].as_ptr() as *const __m256i);
        let packed = _mm256_permutevar8x32_epi32(pairs, perm);
        let len = out.len();
        _mm256_storeu_si256(out.as_mut_ptr().add(len) as *mut __m256i, packed);
        out.set_len(len + mask.count_ones() as usize);
    }

    /// The `f64` kernel: four boxes `i..i + 4` at a time, each against its
    /// `d`-th successor for `d = 1, 2, ...` (contiguous loads, no
    /// broadcast), until none of the four has a successor left within its
    /// interval. Starts are sorted, so a lane that runs out stays out.
    ///
    /// # Safety
    /// AVX2 must be available; `b` is filled (padded by `PAD` sentinels).
    #[target_feature(enable = "avx2")]
    pub(crate) unsafe fn sweep_f64(b: &CellBuf<f64>, out: &mut Vec<Pair>) {
        let m = b.len;
        let (lo, hi, c0, c1, c2, c3) =
            (b.lo.as_ptr(), b.hi.as_ptr(), b.c[0].as_ptr(), b.c[1].as_ptr(), b.c[2].as_ptr(), b.c[3].as_ptr());
        let (idp, homep) = (b.id.as_ptr(), b.home.as_ptr());
        let both = _mm_set1_epi32(HOME_BOTH as i32);
        let neg = _mm256_set1_pd(-0.0);
        let mut i = 0;
        while i < m {
            // Rows i..i+4 (rows past m are sentinels: their start is +inf,
            // hence their `hi` never matters; mask them out explicitly).
            let rows = (m - i).min(4);
            let live = (1u32 << rows) - 1;
            let vhi = _mm256_loadu_pd(hi.add(i));
            // Query: [max_y, max_z, -min_y, -min_z] = -[c2, c3, c0, c1].
            let q0 = _mm256_xor_pd(_mm256_loadu_pd(c2.add(i)), neg);
            let q1 = _mm256_xor_pd(_mm256_loadu_pd(c3.add(i)), neg);
            let q2 = _mm256_xor_pd(_mm256_loadu_pd(c0.add(i)), neg);
            let q3 = _mm256_xor_pd(_mm256_loadu_pd(c1.add(i)), neg);
            let home = _mm_loadu_si128(homep.add(i) as *const __m128i);
            let ids = _mm_loadu_si128(idp.add(i) as *const __m128i);
            let mut d = 1;
            loop {
                let j = i + d;
                let within = _mm256_cmp_pd::<_CMP_LE_OQ>(_mm256_loadu_pd(lo.add(j)), vhi);
                let going = _mm256_movemask_pd(within) as u32 & live;
                if going == 0 {
                    break;
                }
                let mut ok = _mm256_and_pd(within, _mm256_cmp_pd::<_CMP_LE_OQ>(_mm256_loadu_pd(c0.add(j)), q0));
                ok = _mm256_and_pd(ok, _mm256_cmp_pd::<_CMP_LE_OQ>(_mm256_loadu_pd(c1.add(j)), q1));
                ok = _mm256_and_pd(ok, _mm256_cmp_pd::<_CMP_LE_OQ>(_mm256_loadu_pd(c2.add(j)), q2));
                ok = _mm256_and_pd(ok, _mm256_cmp_pd::<_CMP_LE_OQ>(_mm256_loadu_pd(c3.add(j)), q3));
                let h = _mm_loadu_si128(homep.add(j) as *const __m128i);
                let hok = _mm_cmpeq_epi32(_mm_or_si128(h, home), both);
                let mask = _mm256_movemask_pd(ok) as u32 & _mm_movemask_ps(_mm_castsi128_ps(hok)) as u32 & live;
                if mask != 0 {
                    out.reserve(4);
                    emit4(out, mask, ids, _mm_loadu_si128(idp.add(j) as *const __m128i));
                }
                d += 1;
            }
            i += 4;
        }
    }

    /// The `f32` kernel: as [`sweep_f64`] with eight rows at a time.
    ///
    /// # Safety
    /// AVX2 must be available; `b` is filled (padded by `PAD` sentinels).
    #[target_feature(enable = "avx2")]
    pub(crate) unsafe fn sweep_f32(b: &CellBuf<f32>, out: &mut Vec<Pair>) {
        let m = b.len;
        let (lo, hi, c0, c1, c2, c3) =
            (b.lo.as_ptr(), b.hi.as_ptr(), b.c[0].as_ptr(), b.c[1].as_ptr(), b.c[2].as_ptr(), b.c[3].as_ptr());
        let (idp, homep) = (b.id.as_ptr(), b.home.as_ptr());
        let both = _mm256_set1_epi32(HOME_BOTH as i32);
        let neg = _mm256_set1_ps(-0.0);
        let mut i = 0;
        while i < m {
            let rows = (m - i).min(8);
            let live = (1u32 << rows) - 1;
            let vhi = _mm256_loadu_ps(hi.add(i));
            let q0 = _mm256_xor_ps(_mm256_loadu_ps(c2.add(i)), neg);
            let q1 = _mm256_xor_ps(_mm256_loadu_ps(c3.add(i)), neg);
            let q2 = _mm256_xor_ps(_mm256_loadu_ps(c0.add(i)), neg);
            let q3 = _mm256_xor_ps(_mm256_loadu_ps(c1.add(i)), neg);
            let home = _mm256_loadu_si256(homep.add(i) as *const __m256i);
            let ids = idp.add(i) as *const __m128i;
            let (ids_lo, ids_hi) = (_mm_loadu_si128(ids), _mm_loadu_si128(ids.add(1)));
            let mut d = 1;
            loop {
                let j = i + d;
                let within = _mm256_cmp_ps::<_CMP_LE_OQ>(_mm256_loadu_ps(lo.add(j)), vhi);
                let going = _mm256_movemask_ps(within) as u32 & live;
                if going == 0 {
                    break;
                }
                let mut ok = _mm256_and_ps(within, _mm256_cmp_ps::<_CMP_LE_OQ>(_mm256_loadu_ps(c0.add(j)), q0));
                ok = _mm256_and_ps(ok, _mm256_cmp_ps::<_CMP_LE_OQ>(_mm256_loadu_ps(c1.add(j)), q1));
                ok = _mm256_and_ps(ok, _mm256_cmp_ps::<_CMP_LE_OQ>(_mm256_loadu_ps(c2.add(j)), q2));
                ok = _mm256_and_ps(ok, _mm256_cmp_ps::<_CMP_LE_OQ>(_mm256_loadu_ps(c3.add(j)), q3));
                let h = _mm256_loadu_si256(homep.add(j) as *const __m256i);
                let hok = _mm256_cmpeq_epi32(_mm256_or_si256(h, home), both);
                let mask = _mm256_movemask_ps(_mm256_and_ps(ok, _mm256_castsi256_ps(hok))) as u32 & live;
                if mask != 0 {
                    out.reserve(8);
                    let other = idp.add(j) as *const __m128i;
                    emit4(out, mask & 15, ids_lo, _mm_loadu_si128(other));
                    emit4(out, mask >> 4, ids_hi, _mm_loadu_si128(other.add(1)));
                }
                d += 1;
            }
            i += 8;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::Axes;
    use crate::Aabb;

    fn lcg(s: &mut u64) -> f64 {
        *s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (*s >> 11) as f64 / (1u64 << 53) as f64
    }

    /// The SIMD kernels report the portable kernel's pairs, in its order.
    fn check<S: Scalar>(to: impl Fn(f64) -> S) {
        if !simd_available() {
            return;
        }
        let mut s = 3;
        for n in [0usize, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 40, 200] {
            for spread in [0.5, 3.0, 20.0] {
                let axes = Axes::new(3, 0);
                let mut boxes: Vec<Aabb<S, 3>> = (0..n)
                    .map(|_| {
                        let p: [f64; 3] = core::array::from_fn(|_| (lcg(&mut s) * spread * 4.0).round() / 4.0);
                        let w: [f64; 3] = core::array::from_fn(|_| (lcg(&mut s) * 4.0).round() / 4.0);
                        Aabb::new(p.map(&to), core::array::from_fn(|k| to(p[k] + w[k]))).unwrap()
                    })
                    .collect();
                boxes.sort_by(|a, b| a.min()[0].partial_cmp(&b.min()[0]).unwrap());
                let entries: Vec<Entry<S>> =
                    boxes.iter().enumerate().map(|(i, b)| Entry::new(b, &axes, i as u32)).collect();
                let list: Vec<u32> = (0..n as u32).map(|p| p | (((lcg(&mut s) * 4.0) as u32) << 30)).collect();
                let mut buf = CellBuf::new();
                buf.fill(&entries, &list);
                let (mut a, mut b) = (Vec::new(), Vec::new());
                sweep_portable(&buf, &mut a);
                sweep(&buf, true, &mut b);
                assert_eq!(a, b, "n={n} spread={spread}");
            }
        }
    }

    #[test]
    fn simd_matches_portable_f64() {
        check::<f64>(|v| v);
    }

    #[test]
    fn simd_matches_portable_f32() {
        check::<f32>(|v| v as f32);
    }
}
