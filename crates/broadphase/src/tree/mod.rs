//! Bounding volume hierarchies.
//!
//! [`bvh`] is the static tree for one-shot pair finding: built top-down over
//! the boxes with the binned surface-area heuristic, then traversed against
//! itself (or against a second tree) by simultaneous descent. The dynamic
//! tree of the persistent broad phase will live beside it.

pub(crate) mod bvh;
