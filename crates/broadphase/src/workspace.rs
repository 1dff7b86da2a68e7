//! Reusable working memory.

use crate::grid::kernel::Soa;
use crate::sweep::Entry;
use crate::{CrossPair, Pair, Scalar};

/// Reusable working memory for pair searches.
///
/// A search needs scratch space in proportion to the number of boxes (for
/// the grid about 80 bytes per `f64` box: sort keys, the boxes laid out by
/// cell, the cells' lists; a threaded search also keeps its pieces' pairs,
/// as many as it reports, to join them into the output). [`PairFinder::find_into`](crate::PairFinder::find_into)
/// allocates it afresh on every call; passing the same `Workspace` to
/// repeated searches ([`PairFinder::find_with`](crate::PairFinder::find_with),
/// once per frame, say) reuses it instead. Fresh memory is not free: the
/// operating system must map every page on first touch, which on some
/// machines costs as much as the search itself.
///
/// ```
/// use broadphase::{Aabb2, PairFinder, Workspace};
/// let boxes = vec![Aabb2::new([0.0, 0.0], [1.0, 1.0]).unwrap(); 3];
/// let finder = PairFinder::default();
/// let mut ws = Workspace::new();
/// let mut pairs = Vec::new();
/// for _frame in 0..3 {
///     pairs.clear();
///     finder.find_with(&mut ws, &boxes, &mut pairs).unwrap();
///     assert_eq!(pairs.len(), 3);
/// }
/// ```
pub struct Workspace<S: Scalar> {
    pub(crate) keys: Vec<u64>,
    pub(crate) scratch: Vec<u64>,
    pub(crate) sides: [Side<S>; 2],
    /// Sorted boxes in `f32` columns (sort-and-sweep; `f64` boxes rounded
    /// outward, see `sap::oneshot::complete`).
    pub(crate) soa: Soa<f32>,
    /// The pieces' pairs in a threaded search, before they are joined.
    pub(crate) parts: Parts,
}

/// Per-piece output buffers of the threaded searches, kept so that the
/// next search writes into memory already mapped.
#[derive(Default)]
pub(crate) struct Parts {
    pub pairs: Vec<Vec<Pair>>,
    pub cross: Vec<Vec<CrossPair>>,
    /// A bipartite search's pairs as the kernels write them (indices into
    /// both sets, one after the other), before they become cross pairs (the
    /// grid by rows, sort-and-sweep over both sets at once).
    pub flat: Vec<Pair>,
}

impl Parts {
    fn bytes(&self) -> usize {
        let pairs: usize = self.pairs.iter().map(Vec::capacity).sum();
        let cross: usize = self.cross.iter().map(Vec::capacity).sum();
        (pairs + cross + self.flat.capacity()) * 8
    }
}

/// Buffers for one set of boxes (a bipartite search uses two).
pub(crate) struct Side<S> {
    /// Per box: its placement in the grid.
    pub info: Vec<u32>,
    /// The boxes as sweep entries.
    pub entries: Vec<Entry<S>>,
    /// Per entry: the index of its box (the distribution's output, from
    /// which the entries are filled in one sequential pass).
    pub order: Vec<u32>,
    /// Per grid cell: positions in `entries`, with flags.
    pub lists: Vec<u32>,
    pub starts: Vec<u32>,
    pub list_starts: Vec<u32>,
    pub cursors: Vec<u32>,
    pub list_cursors: Vec<u32>,
    /// Indices of the boxes too large for the grid's cells.
    pub oversized: Vec<u32>,
    /// The boxes bucketed by grid row (the grid's build by rows).
    pub recs: Vec<crate::grid::rows::Rec<S>>,
    /// The same in 2D.
    pub flat: Vec<crate::grid::rows::Flat<S>>,
    /// The threads' working memory for the rows.
    pub work: crate::grid::rows::WorkPool<S>,
    /// Per cell, how many cells past it its boxes reach at most on each
    /// cross axis.
    pub far: Vec<[u8; 2]>,
    /// Per row of the build by rows of a bipartite search: whether it holds
    /// boxes of both sets.
    pub rows_both: Vec<bool>,
}

impl<S: Scalar> Side<S> {
    fn new() -> Self {
        Self {
            info: Vec::new(),
            entries: Vec::new(),
            order: Vec::new(),
            lists: Vec::new(),
            starts: Vec::new(),
            list_starts: Vec::new(),
            cursors: Vec::new(),
            list_cursors: Vec::new(),
            oversized: Vec::new(),
            recs: Vec::new(),
            flat: Vec::new(),
            work: Default::default(),
            far: Vec::new(),
            rows_both: Vec::new(),
        }
    }

    fn bytes(&self) -> usize {
        use core::mem::size_of;
        self.info.capacity() * 4
            + self.entries.capacity() * size_of::<Entry<S>>()
            + (self.lists.capacity()
                + self.starts.capacity()
                + self.list_starts.capacity()
                + self.cursors.capacity()
                + self.list_cursors.capacity()
                + self.oversized.capacity()
                + self.order.capacity())
                * 4
            + self.far.capacity() * 2
            + self.rows_both.capacity()
            + self.recs.capacity() * size_of::<crate::grid::rows::Rec<S>>()
            + self.flat.capacity() * size_of::<crate::grid::rows::Flat<S>>()
            + self.work.lock().map_or(0, |w| w.iter().map(crate::grid::rows::RowWork::bytes).sum())
    }
}

impl<S: Scalar> Workspace<S> {
    /// An empty workspace; it grows to what the searches need.
    pub fn new() -> Self {
        Self {
            keys: Vec::new(),
            scratch: Vec::new(),
            sides: [Side::new(), Side::new()],
            soa: Soa::new(),
            parts: Parts::default(),
        }
    }

    /// Bytes of memory the workspace holds.
    pub fn memory(&self) -> usize {
        (self.keys.capacity() + self.scratch.capacity()) * 8
            + self.sides.iter().map(Side::bytes).sum::<usize>()
            + self.soa.bytes()
            + self.parts.bytes()
    }
}

impl<S: Scalar> Default for Workspace<S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S: Scalar> core::fmt::Debug for Workspace<S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Workspace").field("bytes", &self.memory()).finish()
    }
}
