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
//! - the sweep reads a compact, sorted array of entries ending in a sentinel,
//!   tests the cross axes with four branch-free comparisons and writes pairs
//!   branch-free into a flat buffer, see [`crate::sweep`].
//!
//! Cost: O(n + c) after the sort, where c is the number of pairs that overlap
//! on the sweep axis. That is what limits it: in a 3D scene of n similar
//! boxes each one meets about n^(2/3) others on any one axis, and when every
//! axis projection is dense (long thin "sticks", everything on one x-interval)
//! c approaches n². Pick it for small sets, for sets spread along one axis,
//! and as a building block; the grid and the segment-tree algorithm cover the
//! rest.

pub(crate) mod oneshot;
