//! Uniform grid (the seeds' "bins"), with every cell kept sorted and swept.
//!
//! The grid cuts the *cross* axes (all but the sweep axis) into cells of a
//! size chosen from the data; along the sweep axis the cells are unbounded
//! and each is kept sorted, so pairs inside a cell are found by a sweep
//! rather than by testing all of them. In 3D a cell is a column, in 2D a
//! strip, in 1D there is one cell and the grid is a sort-and-sweep.
//!
//! **Each box is stored once**, in its *home* cell: the cell holding its min
//! corner. Boxes that reach beyond the next cell on some cross axis are
//! *oversized* and handled apart (below); every other box spans at most two
//! cells per axis. Two boxes overlap only if they share a point, and the
//! cell of the min corner of their intersection, their *reference cell*, is
//! the componentwise maximum of their home cells (cell indices are a
//! monotone function of the coordinate). So each overlapping pair has home
//! cells at most one apart on every axis, and the grid finds it exactly once
//! by sweeping every cell with itself and with its *forward* neighbours
//! (half of the 3^(D-1) - 1 neighbours: the ones after it in cell order).
//! This is the reference-point rule of seed 003 ("report a pair only in the
//! cell holding the min corner of the intersection") without storing a box
//! in several cells: no copies, no duplicate test.
//!
//! Oversized boxes (the heavy tail of a size distribution, a huge ground box)
//! are tested against the cells their cross range can reach, with a binary
//! search on each cell's sorted starts, and against each other by a
//! sort-and-sweep. Their cost grows with the area they cover, not with n.
//!
//! **Robust to any coordinates.** The cell of a value is
//! `clamp(floor((x - origin) / size), 0, cells - 1)` in `f64`: every step is
//! monotone in `x` (rounding included, and infinities from overflow clamp),
//! which is all the correctness argument needs; there is no integer
//! arithmetic that could overflow, and the number of cells is capped.
//!
//! Cost: O(n) to place and sort (radix sort on a key made of the home cell
//! and the quantised start), then O(n + c) to sweep, where c is the number
//! of pairs within neighbouring cells that overlap on the sweep axis: for n
//! boxes of similar size about 3.4 candidates per box in 3D at any n. Pick it
//! for many boxes of similar size; it degrades when sizes vary by orders of
//! magnitude (many oversized boxes) or the boxes crowd into a few cells.

mod build;
pub(crate) mod kernel;
pub(crate) mod oneshot;
