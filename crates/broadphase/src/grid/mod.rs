//! Uniform grid (the seeds' "bins"), with every cell kept sorted and swept.
//!
//! The grid cuts the *cross* axes (all but the sweep axis) into cells of a
//! size chosen from the data (twice the 90th percentile of the sampled
//! extents, up to 3.5 times where boxes of that size would fill little of
//! the bounds, as uniform boxes in 2D and 3D do); along the sweep axis the
//! cells are unbounded and each is kept sorted, so the pairs inside a cell
//! are found by a sweep rather than by testing all of them. In 3D a cell
//! is a column, in 2D a strip; in 1D there is one cell and the grid is a
//! sort-and-sweep.
//!
//! **Each pair is reported once: in its reference cell**, the cell holding
//! the min corner of the two boxes' intersection (seed 003's rule). A box
//! is listed in every cell it reaches, with a flag per cross axis saying
//! whether the cell is its *home* there (the cell of its min corner); the
//! reference cell of two boxes is, on each axis, the larger of their home
//! cells (both reach it: each box's cells run from its home to the cell of
//! its max, and the cell of a value is monotone), so a cell reports a pair
//! exactly when on each axis at least one of the two is at home in it. No
//! pair is reported twice and no comparison of cell indices is needed in
//! the kernel.
//!
//! **No merging.** The cells' lists must be sorted by start. One global
//! radix sort of the boxes by start, then one pass in that order that
//! appends each box to the lists of the cells it reaches, gives every list
//! sorted at once (see [`build`]). Each box is stored once (in its home
//! cell's range of an entries array); the lists hold positions.
//!
//! **By rows, for large sets.** From [`rows::ROWS_MIN`] boxes on, when no
//! box is oversized (see [`rows::pays`]), the global sort is replaced by a
//! build that never
//! reads the boxes at random: the boxes are bucketed by row of cells in
//! input order (one record per row reached, 32 bytes for `f32` in 3D), and each
//! row is sorted and split into its cells in the caches (see [`rows`]). It
//! gives the same pairs in the same order.
//!
//! **Sweep.** A cell's boxes are gathered into columns and swept by the SIMD
//! kernel of [`kernel`], the same one sort-and-sweep uses: blocks of boxes
//! against their successors, branch-free, AVX-512 or AVX2 when the CPU has
//! them.
//!
//! **Wide boxes.** A box may reach up to eight cells on each cross axis
//! (seven past its home): it is listed in all of them, with its home flags
//! set only in its home row and column, so the rule above still picks one
//! cell per pair. Boxes of one or two cells per axis (nearly all, since the
//! cell size comes from the 90th percentile) take a branch-free path; the
//! wider ones a loop.
//!
//! **Large boxes.** Boxes that reach more than eight cells on some cross
//! axis are *oversized*: each is tested against the boxes at home in the
//! cells it can reach (from seven cells before its own, skipping the cells
//! whose boxes do not reach that far; a binary search on each cell's sorted
//! starts, then a scan with a branch-free test), and the oversized boxes
//! against each other by a sort-and-sweep. They query in the order of the
//! cell of their min corner, so that one after another they search the same
//! cells while those are in cache (at 1e6 heavy-tailed boxes this halved
//! the oversized queries). Their cost grows with the area they cover.
//!
//! **Robust to any coordinates.** The cell of a value is
//! `clamp(floor((x - origin) / size), 0, cells - 1)` in `f64`: every step is
//! monotone in `x` (rounding included; infinities from overflow clamp),
//! which is all the correctness argument needs. There is no integer
//! arithmetic that could overflow, and the number of cells is capped.
//!
//! Cost: O(n) to place and sort, then O(n + c) to sweep, c the candidate
//! pairs (boxes sharing a cell and overlapping on the sweep axis): for boxes
//! of similar size a few per box at any n. Pick it for many boxes of similar
//! size; it degrades when sizes vary by orders of magnitude (many oversized
//! boxes) or when long boxes make every cell's sweep dense.

mod build;
pub(crate) mod kernel;
pub(crate) mod oneshot;
pub(crate) mod rows;
