//! Geometry: scalars and boxes.

mod aabb;
mod scalar;

pub use aabb::{aabbs_from_bounds, Aabb, Aabb2, Aabb3};
pub use scalar::Scalar;
