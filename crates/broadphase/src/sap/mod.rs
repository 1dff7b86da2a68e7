//! Sort-and-sweep (also called sweep-and-prune or box pruning).
//!
//! The one-shot form sorts the boxes by their start on one axis and sweeps:
//! each box scans forward through the boxes that start before it ends, and
//! tests the other axes. This is the method of the seeds (Baraff's and
//! Terdiman's "box pruning"), done the way the fast implementations do it:
//!
//! - the sweep axis is picked from the data: the axis on which the fewest
//!   sampled pairs overlap (for similar boxes: the widest spread of centres);
//! - the keys are radix-sorted (O(n)), see [`crate::sort`];
//! - the sorted boxes are laid out in columns and swept by the SIMD kernel
//!   shared with the grid (`grid::kernel`): blocks of boxes against their
//!   successors, the cross axes tested by four comparisons without branches,
//!   pairs left-packed into a flat buffer; AVX-512 or AVX2 when the CPU has
//!   them, with a portable kernel that produces the same output.
//!
//! The bipartite form merges the two sorted lists (`crate::sweep`); its
//! threaded variant cuts the merged order by merge-path search.
//!
//! Cost: O(n + c) after the sort, where c is the number of pairs that overlap
//! on the sweep axis. That is what limits it: in a 3D scene of n similar
//! boxes each one meets about n^(2/3) others on any one axis, and when every
//! axis projection is dense (long thin "sticks", everything on one x-interval)
//! c approaches n². Pick it for small sets, for sets spread along one axis,
//! and as a building block; the grid and the segment-tree algorithm cover the
//! rest.

pub(crate) mod oneshot;
