//! Axis-aligned boxes, generic over scalar and dimension.

use super::Scalar;
use crate::error::{AabbError, Bound, BoxError};

/// A closed axis-aligned box `[min, max]` in `D` dimensions.
///
/// Every `Aabb` is valid by construction: its bounds are finite and
/// `min[k] <= max[k]` on every axis. A box with `min == max` on some axes (a
/// point, a segment, a flat box) is valid. Boxes are closed: two boxes that
/// only touch (a shared face, edge or corner) overlap.
///
/// ```
/// use broadphase::Aabb3;
/// let a = Aabb3::new([0.0, 0.0, 0.0], [1.0, 1.0, 1.0]).unwrap();
/// let b = Aabb3::new([1.0, 0.5, 0.5], [2.0, 2.0, 2.0]).unwrap(); // touches a's face
/// assert!(a.overlaps(&b));
/// assert!(Aabb3::new([0.0, f64::NAN, 0.0], [1.0, 1.0, 1.0]).is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C)]
pub struct Aabb<S: Scalar, const D: usize> {
    min: [S; D],
    max: [S; D],
}

/// A 2D box.
pub type Aabb2<S = f64> = Aabb<S, 2>;
/// A 3D box.
pub type Aabb3<S = f64> = Aabb<S, 3>;

impl<S: Scalar, const D: usize> Aabb<S, D> {
    /// A box from its corners, rejecting NaN, infinities and `min > max` with
    /// an error naming the axis.
    pub fn new(min: [S; D], max: [S; D]) -> Result<Self, AabbError> {
        for axis in 0..D {
            check_bound(min[axis], axis, Bound::Min)?;
            check_bound(max[axis], axis, Bound::Max)?;
            if min[axis] > max[axis] {
                return Err(AabbError::Inverted { axis, min: min[axis].to_f64(), max: max[axis].to_f64() });
            }
        }
        Ok(Self { min, max })
    }

    /// The zero-size box at `p`.
    pub fn point(p: [S; D]) -> Result<Self, AabbError> {
        Self::new(p, p)
    }

    /// The lower corner.
    #[inline]
    pub fn min(&self) -> &[S; D] {
        &self.min
    }

    /// The upper corner.
    #[inline]
    pub fn max(&self) -> &[S; D] {
        &self.max
    }

    /// Whether the closed boxes share at least one point.
    #[inline]
    pub fn overlaps(&self, other: &Self) -> bool {
        let mut ok = true;
        for k in 0..D {
            ok &= (self.min[k] <= other.max[k]) & (other.min[k] <= self.max[k]);
        }
        ok
    }

    /// Whether `p` lies in the closed box.
    #[inline]
    pub fn contains_point(&self, p: &[S; D]) -> bool {
        (0..D).all(|k| self.min[k] <= p[k] && p[k] <= self.max[k])
    }

    /// Whether `other` lies entirely inside this box.
    #[inline]
    pub fn contains(&self, other: &Self) -> bool {
        (0..D).all(|k| self.min[k] <= other.min[k] && other.max[k] <= self.max[k])
    }

    /// This box grown by `m` (not negative, maybe infinite) on every side,
    /// except where a bound would no longer be finite (it stays).
    #[inline]
    pub(crate) fn grown(&self, m: S) -> Self {
        debug_assert!(!m.is_nan() && m >= S::ZERO);
        let mut out = *self;
        for k in 0..D {
            let (lo, hi) = (self.min[k] - m, self.max[k] + m);
            // `lo <= min <= max <= hi`: still a valid box.
            if lo.is_finite() {
                out.min[k] = lo;
            }
            if hi.is_finite() {
                out.max[k] = hi;
            }
        }
        out
    }

    /// The smallest box holding both.
    #[inline]
    pub fn union(&self, other: &Self) -> Self {
        let mut out = *self;
        for k in 0..D {
            out.min[k] = out.min[k].min_of(other.min[k]);
            out.max[k] = out.max[k].max_of(other.max[k]);
        }
        out
    }

    /// The extent `max - min` on `axis`, computed in `f64` (it may overflow
    /// to `+∞` for boxes spanning most of the `f64` range).
    #[inline]
    pub fn extent(&self, axis: usize) -> f64 {
        self.max[axis].to_f64() - self.min[axis].to_f64()
    }

    /// The centre on `axis`, computed in `f64` without overflow.
    #[inline]
    pub fn center(&self, axis: usize) -> f64 {
        0.5 * self.min[axis].to_f64() + 0.5 * self.max[axis].to_f64()
    }

    /// Half the surface area (2D: half the perimeter), the SAH cost measure,
    /// in `f64`.
    pub(crate) fn half_area(&self) -> f64 {
        match D {
            1 => self.extent(0),
            2 => self.extent(0) + self.extent(1),
            _ => {
                let mut s = 0.0;
                for i in 0..D {
                    for j in i + 1..D {
                        s += self.extent(i) * self.extent(j);
                    }
                }
                s
            }
        }
    }
}

fn check_bound<S: Scalar>(v: S, axis: usize, bound: Bound) -> Result<(), AabbError> {
    if v.is_nan() {
        Err(AabbError::Nan { axis, bound })
    } else if !v.is_finite() {
        Err(AabbError::Infinite { axis, bound, value: v.to_f64() })
    } else {
        Ok(())
    }
}

/// Validates a sequence of `(min, max)` corners into boxes; the error names the
/// first bad box by position and says what is wrong with it.
///
/// ```
/// use broadphase::aabbs_from_bounds;
/// let err = aabbs_from_bounds([([0.0, 0.0], [1.0, 1.0]), ([2.0, 0.0], [1.0, 1.0])]).unwrap_err();
/// assert_eq!(err.to_string(), "box 1: axis 0: min 2 is greater than max 1");
/// ```
pub fn aabbs_from_bounds<S: Scalar, const D: usize>(
    bounds: impl IntoIterator<Item = ([S; D], [S; D])>,
) -> Result<Vec<Aabb<S, D>>, BoxError> {
    bounds
        .into_iter()
        .enumerate()
        .map(|(index, (min, max))| Aabb::new(min, max).map_err(|error| BoxError { index, error }))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_bounds_naming_the_axis() {
        assert_eq!(
            Aabb::<f64, 3>::new([0.0, f64::NAN, 0.0], [1.0; 3]),
            Err(AabbError::Nan { axis: 1, bound: Bound::Min })
        );
        assert_eq!(
            Aabb::<f32, 2>::new([0.0; 2], [1.0, f32::INFINITY]),
            Err(AabbError::Infinite { axis: 1, bound: Bound::Max, value: f64::INFINITY })
        );
        assert_eq!(
            Aabb::<f64, 2>::new([0.0, 3.0], [1.0, 2.0]),
            Err(AabbError::Inverted { axis: 1, min: 3.0, max: 2.0 })
        );
        assert_eq!(
            Aabb::<f64, 1>::new([f64::NEG_INFINITY], [0.0]),
            Err(AabbError::Infinite { axis: 0, bound: Bound::Min, value: f64::NEG_INFINITY })
        );
    }

    #[test]
    fn closed_overlap() {
        let a = Aabb::<f64, 2>::new([0.0, 0.0], [1.0, 1.0]).unwrap();
        let corner = Aabb::<f64, 2>::point([1.0, 1.0]).unwrap();
        let apart = Aabb::<f64, 2>::new([1.0 + f64::EPSILON, 0.0], [2.0, 1.0]).unwrap();
        assert!(a.overlaps(&corner) && corner.overlaps(&a));
        assert!(!a.overlaps(&apart) && !apart.overlaps(&a));
        assert!(corner.overlaps(&corner));
        let neg_zero = Aabb::<f64, 2>::new([-0.0, -0.0], [-0.0, -0.0]).unwrap();
        let zero = Aabb::<f64, 2>::point([0.0, 0.0]).unwrap();
        assert!(neg_zero.overlaps(&zero));
    }

    #[test]
    fn union_and_measures() {
        let a = Aabb::<f64, 3>::new([0.0, 0.0, 0.0], [1.0, 2.0, 3.0]).unwrap();
        let b = Aabb::<f64, 3>::new([-1.0, 1.0, 1.0], [0.5, 4.0, 2.0]).unwrap();
        let u = a.union(&b);
        assert_eq!(u.min(), &[-1.0, 0.0, 0.0]);
        assert_eq!(u.max(), &[1.0, 4.0, 3.0]);
        assert!(u.contains(&a) && u.contains(&b));
        assert_eq!(a.half_area(), 2.0 + 3.0 + 6.0);
        assert_eq!(a.center(2), 1.5);
        let huge = Aabb::<f64, 1>::new([-f64::MAX], [f64::MAX]).unwrap();
        assert_eq!(huge.center(0), 0.0);
        assert_eq!(huge.extent(0), f64::INFINITY);
    }
}
