//! The scalar types boxes are made of: `f32` and `f64`.

use core::fmt::{Debug, Display};
use core::ops::{Add, Mul, Neg, Sub};

mod sealed {
    #[cfg(target_arch = "x86_64")]
    use crate::grid::kernel::Soa;
    #[cfg(target_arch = "x86_64")]
    use crate::Pair;
    #[cfg(target_arch = "x86_64")]
    use core::ops::Range;

    /// Implemented for `f32` and `f64` only; carries the per-type SIMD
    /// kernels.
    pub trait Sealed: Sized {
        /// Rows per group in the sweep kernel (one AVX-512 register).
        const GROUP: usize;
        /// Whether a value is its own sort-and-sweep column value (`f32`);
        /// `f64` columns are `f32` values rounded outward, and the pairs they
        /// find are re-tested on the exact boxes.
        const COLUMN_EXACT: bool;
        /// The sort-and-sweep column value of a start: the largest `f32` at
        /// or below it.
        fn column_lower(self) -> f32;
        /// The column value of an end: the smallest `f32` at or above it
        /// (at most `f32::MAX`).
        fn column_upper(self) -> f32;
        /// The SIMD sweep kernel: AVX-512 when `avx512`, else AVX2.
        /// Returns the group steps taken where the kernel counts them (the
        /// AVX2 `f64` one), else 0.
        ///
        /// # Safety
        /// The CPU must have the features of the level asked for
        /// (`grid::kernel::Simd::detect`).
        #[cfg(target_arch = "x86_64")]
        unsafe fn sweep_simd(b: &Soa<Self>, rows: Range<usize>, avx512: bool, out: &mut Vec<Pair>) -> usize;
    }

    impl Sealed for f32 {
        const GROUP: usize = 16;
        const COLUMN_EXACT: bool = true;
        #[inline]
        fn column_lower(self) -> f32 {
            self
        }
        #[inline]
        fn column_upper(self) -> f32 {
            self
        }
        #[cfg(target_arch = "x86_64")]
        unsafe fn sweep_simd(b: &Soa<Self>, rows: Range<usize>, avx512: bool, out: &mut Vec<Pair>) -> usize {
            use crate::grid::kernel::x86;
            // SAFETY: the caller checked the features of the level.
            unsafe {
                if avx512 && b.all_home() {
                    match b.grid() {
                        1 => x86::avx512_f32::<true, 1>(b, rows, out),
                        8 => x86::avx512_f32::<true, 8>(b, rows, out),
                        16 => x86::avx512_f32::<true, 16>(b, rows, out),
                        _ => x86::avx512_f32::<true, 0>(b, rows, out),
                    }
                } else if avx512 {
                    x86::avx512_f32::<false, 0>(b, rows, out)
                } else if b.grid() != 0 {
                    // A grid comes with every row at home (`fill_sorted`).
                    debug_assert!(b.all_home());
                    match b.grid() {
                        1 => x86::avx2_grid::<1>(b, rows, out),
                        8 => x86::avx2_grid::<8>(b, rows, out),
                        _ => x86::avx2_grid::<16>(b, rows, out),
                    }
                } else {
                    x86::avx2_f32(b, rows, out)
                }
            }
            0
        }
    }

    impl Sealed for f64 {
        const GROUP: usize = 8;
        const COLUMN_EXACT: bool = false;
        #[inline]
        fn column_lower(self) -> f32 {
            crate::grid::kernel::lower_f32(self)
        }
        #[inline]
        fn column_upper(self) -> f32 {
            crate::grid::kernel::upper_f32(self)
        }
        #[cfg(target_arch = "x86_64")]
        unsafe fn sweep_simd(b: &Soa<Self>, rows: Range<usize>, avx512: bool, out: &mut Vec<Pair>) -> usize {
            use crate::grid::kernel::x86;
            // SAFETY: the caller checked the features of the level.
            unsafe {
                // Sort-and-sweep sweeps `f32` columns: `f64` ones are the
                // grid's cells, never all at home, no long runs.
                if avx512 {
                    x86::avx512_f64(b, rows, out);
                    0
                } else {
                    x86::avx2_f64(b, rows, b.branchless, out)
                }
            }
        }
    }
}

/// A floating-point coordinate type: implemented for `f32` and `f64` only.
///
/// The trait is sealed; the algorithms rely on IEEE-754 semantics (exact
/// negation, monotone rounding) that user types could not promise.
pub trait Scalar:
    sealed::Sealed
    + Copy
    + PartialOrd
    + Debug
    + Display
    + Send
    + Sync
    + 'static
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Neg<Output = Self>
{
    /// `0`.
    const ZERO: Self;
    /// `+∞`, used only for internal sentinels, never accepted in a box.
    const INFINITY: Self;
    /// Whether [`Scalar::sort_key`] is injective on finite values (up to the
    /// sign of zero). When it is not, equal keys may hide different values and
    /// the sorts refine runs of equal keys with exact comparisons.
    const KEY_IS_EXACT: bool;

    /// The value as `f64` (exact for both types).
    fn to_f64(self) -> f64;
    /// The nearest value to `v`.
    fn from_f64(v: f64) -> Self;
    /// Neither NaN nor infinite.
    fn is_finite(self) -> bool;
    /// NaN.
    fn is_nan(self) -> bool;
    /// The smaller of two non-NaN values.
    #[inline]
    fn min_of(self, other: Self) -> Self {
        if other < self {
            other
        } else {
            self
        }
    }
    /// The larger of two non-NaN values.
    #[inline]
    fn max_of(self, other: Self) -> Self {
        if other > self {
            other
        } else {
            self
        }
    }
    /// A 32-bit radix key that is monotone: `x <= y` implies
    /// `x.sort_key() <= y.sort_key()` for all non-NaN `x`, `y` (`-0.0` and
    /// `0.0` get the same key). Consequently `x.sort_key() < y.sort_key()`
    /// implies `x < y`, so sorting by key and then refining equal keys by value
    /// yields the exact order.
    fn sort_key(self) -> u32;
    /// An integer of the same order as the value, one apart for neighbours:
    /// a monotone bijection of the non-NaN values (`-0.0` just below
    /// `0.0`) onto an interval of `i64`, for searches over values by ulps.
    #[doc(hidden)]
    fn ordered(self) -> i64;
    /// The inverse of [`Scalar::ordered`].
    #[doc(hidden)]
    fn from_ordered(o: i64) -> Self;
}

/// Maps an `f32` to a `u32` whose unsigned order is the float order,
/// with `-0.0` folded onto `0.0`.
#[inline]
fn f32_key(x: f32) -> u32 {
    // Adding +0.0 turns -0.0 into +0.0 (round-to-nearest) and leaves every other
    // value unchanged.
    let bits = (x + 0.0).to_bits();
    if bits & 0x8000_0000 != 0 {
        !bits
    } else {
        bits | 0x8000_0000
    }
}

/// The `f32` whose [`Scalar::sort_key`] is `k` (`+0.0` for the key of both
/// zeros): the inverse of the `f32` key on every key of a finite value.
#[inline]
pub(crate) fn f32_from_key(k: u32) -> f32 {
    f32::from_bits(if k & 0x8000_0000 != 0 { k & 0x7FFF_FFFF } else { !k })
}

impl Scalar for f32 {
    const ZERO: Self = 0.0;
    const INFINITY: Self = f32::INFINITY;
    const KEY_IS_EXACT: bool = true;

    #[inline]
    fn to_f64(self) -> f64 {
        self as f64
    }
    #[inline]
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    #[inline]
    fn is_finite(self) -> bool {
        f32::is_finite(self)
    }
    #[inline]
    fn is_nan(self) -> bool {
        f32::is_nan(self)
    }
    #[inline]
    fn sort_key(self) -> u32 {
        f32_key(self)
    }
    #[inline]
    fn ordered(self) -> i64 {
        let i = self.to_bits() as i32;
        i64::from(if i < 0 { !(i & i32::MAX) } else { i })
    }
    #[inline]
    fn from_ordered(o: i64) -> Self {
        let o = o as i32;
        f32::from_bits(if o < 0 { (!o as u32) | 0x8000_0000 } else { o as u32 })
    }
}

impl Scalar for f64 {
    const ZERO: Self = 0.0;
    const INFINITY: Self = f64::INFINITY;
    const KEY_IS_EXACT: bool = false;

    #[inline]
    fn to_f64(self) -> f64 {
        self
    }
    #[inline]
    fn from_f64(v: f64) -> Self {
        v
    }
    #[inline]
    fn is_finite(self) -> bool {
        f64::is_finite(self)
    }
    #[inline]
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
    #[inline]
    fn sort_key(self) -> u32 {
        // `as f32` rounds to nearest, a monotone map (values beyond the f32
        // range go to ±∞, tiny ones to ±0 or subnormals), so the key stays
        // monotone; it just merges values that round alike.
        f32_key(self as f32)
    }
    #[inline]
    fn ordered(self) -> i64 {
        let i = self.to_bits() as i64;
        if i < 0 {
            !(i & i64::MAX)
        } else {
            i
        }
    }
    #[inline]
    fn from_ordered(o: i64) -> Self {
        f64::from_bits(if o < 0 { (!o as u64) | (1 << 63) } else { o as u64 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_ordered<S: Scalar>(values: &[S]) {
        for &x in values {
            let o = x.ordered();
            assert_eq!(S::from_ordered(o).to_f64().to_bits(), x.to_f64().to_bits(), "{x:?} round trip");
            // The neighbours are the next values up and down.
            let (up, down) = (S::from_ordered(o + 1), S::from_ordered(o - 1));
            if x.to_f64() != f64::INFINITY {
                assert!(up > x || (x.to_f64() == 0.0 && x.to_f64().is_sign_negative()), "{x:?} up {up:?}");
            }
            if x.to_f64() != f64::NEG_INFINITY {
                assert!(down < x || (x.to_f64() == 0.0 && x.to_f64().is_sign_positive()), "{x:?} down {down:?}");
            }
            for &y in values {
                // Equal values apart from ±0 have equal integers.
                assert_eq!(x < y, x.ordered() < y.ordered() && x != y, "{x:?} {y:?}");
                assert!(x.ordered() >= y.ordered() || x <= y, "{x:?} {y:?}");
            }
        }
        assert_eq!(S::from_f64(-0.0).ordered() + 1, S::ZERO.ordered());
    }

    #[test]
    fn ordered_integers_follow_the_values() {
        let v =
            [f64::NEG_INFINITY, -1e300, -1.0, -1e-310, -0.0, 0.0, 5e-324, 1e-310, 1.0, 3.5, f64::MAX, f64::INFINITY];
        check_ordered::<f64>(&v);
        check_ordered::<f32>(&v.map(|x| x as f32));
        assert_eq!(f32::from_ordered(1.0f32.ordered() + 1), f32::from_bits(1.0f32.to_bits() + 1));
        assert_eq!(f64::from_ordered((-2.0f64).ordered() - 1), f64::from_bits((-2.0f64).to_bits() + 1));
    }

    fn check_monotone<S: Scalar>(values: &[S]) {
        for &x in values {
            for &y in values {
                if x <= y {
                    assert!(x.sort_key() <= y.sort_key(), "{x:?} <= {y:?} but keys disagree");
                }
                if x.sort_key() < y.sort_key() {
                    assert!(x < y, "key({x:?}) < key({y:?}) but {x:?} >= {y:?}");
                }
            }
        }
    }

    #[test]
    fn f32_keys_are_monotone() {
        check_monotone::<f32>(&[
            f32::MIN,
            -1e30,
            -1.0,
            -f32::MIN_POSITIVE,
            -1e-45,
            -0.0,
            0.0,
            1e-45,
            f32::MIN_POSITIVE,
            1.0,
            1.0000001,
            3e38,
            f32::MAX,
        ]);
        assert_eq!((-0.0f32).sort_key(), 0.0f32.sort_key());
    }

    #[test]
    fn f32_keys_invert() {
        for x in [f32::MIN, -1e30, -1.0, -f32::MIN_POSITIVE, -1e-45, 0.0, 1e-45, f32::MIN_POSITIVE, 1.0, 3e38, f32::MAX]
        {
            assert_eq!(f32_from_key(x.sort_key()).to_bits(), x.to_bits(), "{x:?}");
        }
        assert_eq!(f32_from_key((-0.0f32).sort_key()).to_bits(), 0.0f32.to_bits());
        let mut seed = crate::Lcg::new(7);
        for _ in 0..10_000 {
            let x = f32::from_bits(seed.bits() as u32);
            if x.is_finite() && x != 0.0 {
                assert_eq!(f32_from_key(x.sort_key()).to_bits(), x.to_bits(), "{x:?}");
            }
        }
    }

    #[test]
    fn f64_keys_are_monotone() {
        check_monotone::<f64>(&[
            f64::MIN,
            -1e300,
            -3.5e38,
            -1.0,
            -1e-300,
            -5e-324,
            -0.0,
            0.0,
            5e-324,
            1e-300,
            1e-45,
            1.0,
            1.0 + f64::EPSILON,
            1e30,
            3.5e38,
            1e300,
            f64::MAX,
        ]);
        assert_eq!((-0.0f64).sort_key(), 0.0f64.sort_key());
    }
}
