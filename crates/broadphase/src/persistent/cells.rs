//! Integer cell coordinates shared by the hash grid and the multi-region
//! SAP: clamped so that huge coordinates cannot overflow, packed into a
//! 64-bit key, and iterated over a box's range of cells.

/// Cell coordinates are clamped to ±`LIMIT` (21 bits with the sign), so that
/// `D ≤ 3` of them pack into one `u64`.
pub const LIMIT: i64 = (1 << 20) - 1;

/// An inclusive range of cells: lower and upper corner.
pub type CellRange<const D: usize> = ([i64; D], [i64; D]);

/// The cell of coordinate `v` for cells of size `1 / inv` (monotone, so a
/// box's range covers every cell it meets).
#[inline]
pub fn coord(v: f64, inv: f64) -> i64 {
    // Clamped first, then floored by truncation and a correction: the same
    // result as `floor` then clamp (the bounds are integers; NaN gives 0
    // both ways), without a call to `floor` (a library call on x86-64
    // without SSE4.1, the default target, where re-filed proxies spend it).
    let x = (v * inv).clamp(-(LIMIT as f64), LIMIT as f64);
    let t = x as i64;
    t - i64::from((t as f64) > x)
}

/// The packed key of a cell.
#[inline]
pub fn key<const D: usize>(c: &[i64; D]) -> u64 {
    c.iter().fold(0u64, |k, &x| k << 21 | (x + LIMIT) as u64)
}

/// The cell of a packed key.
pub fn decode<const D: usize>(key: u64) -> [i64; D] {
    let mut c = [0i64; D];
    for (k, x) in c.iter_mut().enumerate() {
        *x = ((key >> (21 * (D - 1 - k))) & ((1 << 21) - 1)) as i64 - LIMIT;
    }
    c
}

/// Whether cell `c` lies in the range.
#[inline]
pub fn inside<const D: usize>(r: &CellRange<D>, c: &[i64; D]) -> bool {
    (0..D).all(|k| r.0[k] <= c[k] && c[k] <= r.1[k])
}

/// Whether the range spans at least `span + 1` cells on some axis.
#[inline]
pub fn wider_than<const D: usize>(r: &CellRange<D>, span: i64) -> bool {
    (0..D).any(|k| r.1[k] - r.0[k] >= span)
}

/// Calls `f` with every cell of the range, first axis fastest.
#[inline]
pub fn each<const D: usize>(r: &CellRange<D>, mut f: impl FnMut(&[i64; D])) {
    let mut c = r.0;
    loop {
        f(&c);
        let mut k = 0;
        loop {
            if k == D {
                return;
            }
            if c[k] < r.1[k] {
                c[k] += 1;
                break;
            }
            c[k] = r.0[k];
            k += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_ranges_cover() {
        for c in [[0i64, 0, 0], [-LIMIT, LIMIT, 5], [7, -3, -LIMIT]] {
            assert_eq!(decode::<3>(key(&c)), c);
        }
        assert_eq!(coord(1e300, 1.0), LIMIT);
        assert_eq!(coord(-1e300, 1.0), -LIMIT);
        assert_eq!(coord(-0.5, 1.0), -1);
        // The floor of every kind of value, as `floor` then clamp gives it.
        for v in [-3.0, -2.5, -1e-300, -0.0, 0.0, 1e-300, 0.5, 2.0, 2.999, 1e19, -1e19, f64::NAN, f64::INFINITY] {
            let want = v.floor().clamp(-(LIMIT as f64), LIMIT as f64) as i64;
            assert_eq!(coord(v, 1.0), want, "{v}");
        }
        let r = ([0i64, -1], [2, 0]);
        let mut seen = Vec::new();
        each(&r, |c| seen.push(*c));
        assert_eq!(seen.len(), 6);
        assert!(seen.iter().all(|c| inside(&r, c)));
        assert!(wider_than(&r, 2) && !wider_than(&r, 3));
    }
}
