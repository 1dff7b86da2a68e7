//! A set of slots marked in the current update, as a bitset: testing a
//! slot reads one bit of an array an eighth of a kilobyte per thousand
//! slots (cache-resident where a per-slot stamp would miss), and clearing
//! it costs the number of marks, not of slots.

#[derive(Clone, Debug, Default)]
pub(crate) struct Marks {
    bits: Vec<u64>,
    /// The marked slots, to clear them.
    set: Vec<u32>,
}

impl Marks {
    /// Unmarks every slot.
    pub fn clear(&mut self) {
        if self.set.len() >= self.bits.len() {
            self.bits.fill(0);
        } else {
            for &s in &self.set {
                self.bits[(s / 64) as usize] = 0;
            }
        }
        self.set.clear();
    }

    /// Marks slot `s`; whether it was unmarked.
    #[inline]
    pub fn mark(&mut self, s: u32) -> bool {
        let w = (s / 64) as usize;
        if self.bits.len() <= w {
            self.bits.resize(w + 1, 0);
        }
        let bit = 1u64 << (s % 64);
        let fresh = self.bits[w] & bit == 0;
        if fresh {
            self.bits[w] |= bit;
            self.set.push(s);
        }
        fresh
    }

    /// Whether slot `s` is marked.
    #[inline]
    pub fn has(&self, s: u32) -> bool {
        self.bits.get((s / 64) as usize).is_some_and(|w| w & (1u64 << (s % 64)) != 0)
    }

    pub fn memory(&self) -> usize {
        self.bits.capacity() * 8 + self.set.capacity() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::Marks;

    #[test]
    fn marks_set_and_clear() {
        let mut m = Marks::default();
        for s in [0u32, 63, 64, 1000] {
            assert!(m.mark(s), "{s} was unmarked");
        }
        assert!(!m.mark(63), "63 was marked");
        assert!(m.has(0) && m.has(63) && m.has(64) && m.has(1000));
        assert!(!m.has(1) && !m.has(65) && !m.has(5000));
        m.clear();
        assert!(!m.has(0) && !m.has(1000));
        for s in 0..200 {
            m.mark(s);
        }
        m.clear();
        assert!((0..200).all(|s| !m.has(s)));
    }
}
