//! Typed errors, one enum per boundary.

use core::fmt;

/// Which side of an interval a value belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Bound {
    /// The lower end (`min`).
    Min,
    /// The upper end (`max`).
    Max,
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Bound::Min => "min",
            Bound::Max => "max",
        })
    }
}

/// Why a box was rejected by a validating constructor.
///
/// Values are reported as `f64` (exact for both scalar types).
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
pub enum AabbError {
    /// A bound is NaN.
    #[error("axis {axis}: {bound} is NaN")]
    Nan {
        /// The axis (0 = x, 1 = y, 2 = z).
        axis: usize,
        /// Which bound.
        bound: Bound,
    },
    /// A bound is +∞ or -∞.
    #[error("axis {axis}: {bound} is {value}, not a finite number")]
    Infinite {
        /// The axis (0 = x, 1 = y, 2 = z).
        axis: usize,
        /// Which bound.
        bound: Bound,
        /// The infinite value.
        value: f64,
    },
    /// `min > max` on an axis. (`min == max` is a valid, flat box.)
    #[error("axis {axis}: min {min} is greater than max {max}")]
    Inverted {
        /// The axis (0 = x, 1 = y, 2 = z).
        axis: usize,
        /// The lower bound given.
        min: f64,
        /// The upper bound given.
        max: f64,
    },
}

/// A box of a set was rejected: which one, and why.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
#[error("box {index}: {error}")]
pub struct BoxError {
    /// Position of the box in the input sequence.
    pub index: usize,
    /// What was wrong with it.
    #[source]
    pub error: AabbError,
}

/// Why a pair search refused its input.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
pub enum FindError {
    /// Pairs name boxes by `u32` index, so a set holds at most
    /// [`MAX_BOXES`](crate::MAX_BOXES) boxes.
    #[error("{len} boxes given, more than the {max} that pair indices (u32) can name")]
    TooManyBoxes {
        /// The number of boxes given.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A fixed sweep axis is not an axis of the boxes.
    #[error("sweep axis {axis} does not exist in {dim} dimensions")]
    AxisOutOfRange {
        /// The axis asked for.
        axis: usize,
        /// The dimension of the boxes.
        dim: usize,
    },
    /// The algorithms support 1, 2 and 3 dimensions.
    #[error("{dim}-dimensional boxes are not supported (1, 2 or 3)")]
    UnsupportedDimension {
        /// The dimension of the boxes.
        dim: usize,
    },
    /// A tuning parameter is out of range.
    #[error("{name} {value} is invalid: expected {expected}")]
    InvalidParameter {
        /// Which parameter.
        name: &'static str,
        /// The value given.
        value: f64,
        /// What is accepted.
        expected: &'static str,
    },
}

/// An algorithm name that [`Algorithm`](crate::Algorithm)'s `FromStr` does not know.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown algorithm {name:?} (expected one of: {expected})")]
pub struct ParseAlgorithmError {
    /// The name given.
    pub name: String,
    /// The accepted names, comma-separated.
    pub expected: &'static str,
}

/// Why a persistent broad phase refused a call. A refused call changes
/// nothing.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
pub enum ProxyError {
    /// The id names no live proxy: it was removed (perhaps its slot now holds
    /// another proxy), or it comes from another broad phase.
    #[error("proxy {id} is not live here (removed, or from another broad phase)")]
    Stale {
        /// The id given.
        id: crate::ProxyId,
    },
    /// A batch names the same proxy twice.
    #[error("proxy {id} appears twice in one batch")]
    Repeated {
        /// The id given twice.
        id: crate::ProxyId,
    },
    /// A velocity given with a box is NaN or infinite.
    #[error("proxy {id}: velocity on axis {axis} is {value}, not a finite number")]
    BadVelocity {
        /// The proxy.
        id: crate::ProxyId,
        /// The axis.
        axis: usize,
        /// The value.
        value: f64,
    },
    /// Slots are `u32` with a flag bit, so a broad phase holds at most this
    /// many proxies.
    #[error("too many proxies: at most {max} can live in one broad phase")]
    TooManyProxies {
        /// The limit.
        max: usize,
    },
}

/// Why a query shape was rejected.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
pub enum ShapeError {
    /// A coordinate is NaN or infinite.
    #[error("{what}: axis {axis} is {value}, not a finite number")]
    NotFinite {
        /// Which vector.
        what: &'static str,
        /// The axis.
        axis: usize,
        /// The value.
        value: f64,
    },
    /// A length is negative, NaN or infinite.
    #[error("{what} is {value}; expected a finite number at least 0")]
    BadLength {
        /// Which length.
        what: &'static str,
        /// The value.
        value: f64,
    },
    /// A ray's direction is zero.
    #[error("ray direction is zero")]
    ZeroDirection,
}
