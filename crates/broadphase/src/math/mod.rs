//! Geometry: scalars and boxes.

mod aabb;
mod scalar;

pub use aabb::{aabbs_from_bounds, Aabb, Aabb2, Aabb3};
pub(crate) use scalar::f32_from_key;
pub use scalar::Scalar;
