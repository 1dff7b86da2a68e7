//! Pairs of overlapping boxes.

/// An unordered pair of distinct boxes of one set, stored canonically as
/// `a < b` (indices into the slice that was searched).
///
/// ```
/// use broadphase::Pair;
/// let p = Pair::new(7, 3).unwrap();
/// assert_eq!((p.a(), p.b()), (3, 7));
/// assert!(Pair::new(4, 4).is_none());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(C)]
pub struct Pair {
    a: u32,
    b: u32,
}

impl Pair {
    /// The canonical pair of `x` and `y`, or `None` when `x == y`.
    #[inline]
    pub fn new(x: u32, y: u32) -> Option<Self> {
        (x != y).then(|| Self::ordered(x, y))
    }

    /// Orders two distinct indices without a branch. The caller guarantees
    /// `x != y`.
    #[inline(always)]
    pub(crate) fn ordered(x: u32, y: u32) -> Self {
        debug_assert_ne!(x, y);
        Self { a: x.min(y), b: x.max(y) }
    }

    /// The smaller index.
    #[inline]
    pub fn a(self) -> u32 {
        self.a
    }

    /// The larger index.
    #[inline]
    pub fn b(self) -> u32 {
        self.b
    }
}

/// A pair between two sets: `a` indexes the first set, `b` the second.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[repr(C)]
pub struct CrossPair {
    /// Index into the first set.
    pub a: u32,
    /// Index into the second set.
    pub b: u32,
}

/// The pair types the kernels write: `Pair` for one set, `CrossPair` for two.
/// The kernels see two indices, the first from the "left" side of a sweep
/// and the second from the "right"; `make` builds the output pair.
pub(crate) trait OutPair: Copy + Send + Sync + 'static {
    fn make(left: u32, right: u32) -> Self;
}

impl OutPair for Pair {
    #[inline(always)]
    fn make(left: u32, right: u32) -> Self {
        Pair::ordered(left, right)
    }
}

impl OutPair for CrossPair {
    #[inline(always)]
    fn make(left: u32, right: u32) -> Self {
        CrossPair { a: left, b: right }
    }
}

// The flat output buffers are written by the kernels as 8-byte records.
const _: () = assert!(core::mem::size_of::<Pair>() == 8 && core::mem::size_of::<CrossPair>() == 8);
