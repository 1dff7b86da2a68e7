//! Generational proxy handles.

use core::fmt;

/// The handle of a proxy in a persistent broad phase.
///
/// A slot index and a generation: when a proxy is removed its slot may be
/// reused, but with a new generation, so an old handle is recognised as stale
/// and rejected with an error rather than naming another object. Handles order
/// by slot first, and two live proxies never share a slot, so a
/// [`ProxyPair`](crate::ProxyPair) of live proxies is ordered by slot.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(C)] // two `u32`s, no padding: compared as words in bulk (engine's event diff)
pub struct ProxyId {
    index: u32,
    generation: u32,
}

impl ProxyId {
    #[inline]
    pub(crate) fn new(index: u32, generation: u32) -> Self {
        Self { index, generation }
    }

    /// The slot: dense, reused after removal, below the number of slots ever
    /// allocated. Useful to index side tables.
    #[inline]
    pub fn index(self) -> u32 {
        self.index
    }

    /// How many times the slot was freed before this proxy took it.
    #[inline]
    pub fn generation(self) -> u32 {
        self.generation
    }
}

impl fmt::Debug for ProxyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}v{}", self.index, self.generation)
    }
}

impl fmt::Display for ProxyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}
