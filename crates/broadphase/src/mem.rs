//! Large working buffers backed by huge pages where the system allows it.
//!
//! A search over a million boxes fills some 150 MB of fresh buffers when
//! its [`Workspace`](crate::Workspace) is new: with 4 KiB pages that is
//! tens of thousands of page faults, each zeroing its page, and it made a
//! first search half as slow again as a repeated one. Linux backs memory
//! with 2 MiB pages on request (`madvise(MADV_HUGEPAGE)`, the default
//! "madvise" mode of transparent huge pages), so the large buffers ask for
//! them before they are first written.

/// Buffers smaller than this are left alone (a huge page is 2 MiB).
const HUGE_MIN: usize = 4 << 20;

/// Reserves room for `n` elements in `v` and, when that takes a new large
/// buffer, asks for huge pages on it (Linux; elsewhere only reserves).
pub(crate) fn reserve<T>(v: &mut Vec<T>, n: usize) {
    if v.capacity() >= n {
        return;
    }
    v.reserve(n - v.len());
    advise_huge(v);
}

/// [`reserve`], then `Vec::resize`.
pub(crate) fn resize<T: Clone>(v: &mut Vec<T>, n: usize, value: T) {
    reserve(v, n);
    v.resize(n, value);
}

/// Makes room for `k` more elements in `v` once it is large (half of
/// [`HUGE_MIN`] or more), at least doubling its buffer (as `Vec` does), so
/// that the new buffer gets huge pages: for outputs that a kernel fills
/// through `Vec::reserve`, called often enough that their growth happens
/// here. Smaller vectors are left to grow as `Vec` grows them (a threaded
/// search keeps thousands of small outputs, one per piece, which must not
/// each take `k` elements of room).
pub(crate) fn spare<T>(v: &mut Vec<T>, k: usize) {
    let large = v.capacity() * core::mem::size_of::<T>() >= HUGE_MIN / 2;
    if large && v.capacity() - v.len() < k {
        let want = (v.capacity() * 2).max(v.len() + k);
        reserve(v, want);
    }
}

fn advise_huge<T>(v: &Vec<T>) {
    let bytes = v.capacity() * core::mem::size_of::<T>();
    if bytes < HUGE_MIN {
        return;
    }
    // The huge pages wholly inside the buffer.
    let start = v.as_ptr() as usize;
    let (from, to) = (start.next_multiple_of(HUGE_PAGE), (start + bytes) / HUGE_PAGE * HUGE_PAGE);
    if to > from {
        advise_range(from as *mut u8, to - from);
    }
}

/// A huge page, and the alignment of a [`HugeVec`]'s large buffers.
const HUGE_PAGE: usize = 2 << 20;

/// Whether [`HugeVec`] asks for huge pages: on Linux (not under Miri,
/// which has no `madvise`). Elsewhere its buffers are those of a `Vec`.
const HUGE_PAGES: bool = cfg!(all(target_os = "linux", not(miri)));

/// A [`HugeVec`]'s buffers from this size on are large.
const HUGE_VEC_MIN: usize = 512 << 10;

/// A growable array of `Copy` elements for the persistent broad phase's
/// per-proxy and per-pair arrays. On Linux its large buffers (from
/// [`HUGE_VEC_MIN`] bytes on) start on a huge-page boundary, span whole huge
/// pages (the room past the requested capacity becomes capacity too) and
/// are advised huge before they are first written; elsewhere, and for small
/// buffers, it allocates as a `Vec` does.
///
/// Why not `Vec` with [`reserve`]: an allocation of a few MiB starts
/// anywhere, so only the huge pages wholly inside it can be advised, and of
/// a buffer of 2-4 MiB (the boxes of 1e5 proxies) often none is. An update
/// reads these arrays at random (a moved proxy's box, its held box, its
/// pairs, its partners' boxes): with small pages nearly every such read
/// also misses the TLB, more so when other work between updates has
/// evicted it. 10% of 1e5 proxies moving, `frames` (each contender's frame
/// between the others'), three runs alternated: hash grid 1.08-1.22 ->
/// 0.88-0.91 ms, dynamic tree 1.45-1.49 -> 1.19-1.22 ms. With the
/// threshold at 2 MiB instead of 512 KiB (the heads of the pair arrays,
/// the generations and the exact pairs' records left in small pages) the
/// grid took 0.93-1.07 ms: the gain needs every array the update reads.
pub(crate) struct HugeVec<T: Copy> {
    ptr: core::ptr::NonNull<T>,
    len: usize,
    cap: usize,
    /// The layout of the buffer (when `cap > 0`).
    layout: std::alloc::Layout,
}

// SAFETY: a `HugeVec` owns its elements as a `Vec` does.
unsafe impl<T: Copy + Send> Send for HugeVec<T> {}
// SAFETY: shared access gives `&[T]` only.
unsafe impl<T: Copy + Sync> Sync for HugeVec<T> {}

impl<T: Copy> Default for HugeVec<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Copy + core::fmt::Debug> core::fmt::Debug for HugeVec<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<T: Copy> Clone for HugeVec<T> {
    fn clone(&self) -> Self {
        let mut v = Self::new();
        v.extend_from_slice(self);
        v
    }
}

impl<T: Copy> Drop for HugeVec<T> {
    fn drop(&mut self) {
        self.free();
    }
}

impl<T: Copy> core::ops::Deref for HugeVec<T> {
    type Target = [T];
    #[inline(always)]
    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` is valid for `len` initialised elements (dangling
        // and well aligned when `len == 0`).
        unsafe { core::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy> core::ops::DerefMut for HugeVec<T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, and `&mut self` is unique.
        unsafe { core::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy> Extend<T> for HugeVec<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, items: I) {
        let items = items.into_iter();
        self.reserve(items.size_hint().0);
        for x in items {
            self.push(x);
        }
    }
}

impl<T: Copy> HugeVec<T> {
    const SIZE: usize = {
        assert!(core::mem::size_of::<T>() > 0, "no zero-sized elements");
        core::mem::size_of::<T>()
    };

    /// An empty array (allocates nothing).
    pub const fn new() -> Self {
        Self { ptr: core::ptr::NonNull::dangling(), len: 0, cap: 0, layout: std::alloc::Layout::new::<()>() }
    }

    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// The layout of a buffer of room for `cap > 0` elements.
    fn layout_for(cap: usize) -> std::alloc::Layout {
        let bytes = cap.checked_mul(Self::SIZE).expect("capacity overflow");
        if HUGE_PAGES && bytes >= HUGE_VEC_MIN {
            std::alloc::Layout::from_size_align(bytes.next_multiple_of(HUGE_PAGE), HUGE_PAGE)
        } else {
            std::alloc::Layout::array::<T>(cap)
        }
        .expect("capacity overflow")
    }

    /// Gives the elements a buffer of room for `cap > 0` (at least `len`).
    fn reallocate(&mut self, cap: usize) {
        debug_assert!(cap > 0 && cap >= self.len);
        let layout = Self::layout_for(cap);
        // SAFETY: `layout` has a non-zero size (`cap > 0`, elements are not
        // zero-sized).
        let raw = unsafe { std::alloc::alloc(layout) };
        let Some(ptr) = core::ptr::NonNull::new(raw.cast::<T>()) else { std::alloc::handle_alloc_error(layout) };
        if layout.align() == HUGE_PAGE {
            advise_range(raw, layout.size());
        }
        // SAFETY: both buffers hold at least `len` elements and are
        // distinct allocations.
        unsafe { core::ptr::copy_nonoverlapping(self.ptr.as_ptr(), ptr.as_ptr(), self.len) };
        let len = self.len;
        self.free();
        (self.ptr, self.len, self.cap, self.layout) = (ptr, len, layout.size() / Self::SIZE, layout);
    }

    /// Frees the buffer; the array is then empty.
    fn free(&mut self) {
        if self.cap > 0 {
            // SAFETY: allocated with `self.layout` by `reallocate`.
            unsafe { std::alloc::dealloc(self.ptr.as_ptr().cast(), self.layout) };
        }
        // Field by field: assigning a whole value would drop this one.
        (self.ptr, self.len, self.cap) = (core::ptr::NonNull::dangling(), 0, 0);
    }

    /// Makes room for `additional` more elements, at least doubling.
    pub fn reserve(&mut self, additional: usize) {
        let need = self.len.checked_add(additional).expect("capacity overflow");
        if need > self.cap {
            self.reallocate(need.max(self.cap.saturating_mul(2)).max(4));
        }
    }

    #[inline]
    pub fn push(&mut self, x: T) {
        if self.len == self.cap {
            self.reserve(1);
        }
        // SAFETY: `len < cap`: in the buffer.
        unsafe { self.ptr.as_ptr().add(self.len).write(x) };
        self.len += 1;
    }

    pub fn extend_from_slice(&mut self, xs: &[T]) {
        self.reserve(xs.len());
        // SAFETY: room for `xs.len()` more after `len`; `xs` cannot lie in
        // that uninitialised room.
        unsafe { core::ptr::copy_nonoverlapping(xs.as_ptr(), self.ptr.as_ptr().add(self.len), xs.len()) };
        self.len += xs.len();
    }

    /// Appends a copy of the elements `range`.
    pub fn extend_from_within(&mut self, range: core::ops::Range<usize>) {
        assert!(range.start <= range.end && range.end <= self.len, "range out of bounds");
        let n = range.end - range.start;
        self.reserve(n);
        // SAFETY: the source is within `len`, the destination is the room
        // after it (the buffer as reserved).
        unsafe {
            let base = self.ptr.as_ptr();
            core::ptr::copy_nonoverlapping(base.add(range.start), base.add(self.len), n);
        }
        self.len += n;
    }

    pub fn resize(&mut self, n: usize, value: T) {
        if n <= self.len {
            self.len = n;
            return;
        }
        self.reserve(n - self.len);
        for i in self.len..n {
            // SAFETY: `i < n <= cap`.
            unsafe { self.ptr.as_ptr().add(i).write(value) };
        }
        self.len = n;
    }

    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Removes element `i`, the last one taking its place.
    pub fn swap_remove(&mut self, i: usize) -> T {
        let x = self[i];
        let last = self.len - 1;
        self[i] = self[last];
        self.len = last;
        x
    }

    /// Frees the room past the elements (a large buffer keeps the rest of
    /// its last huge page).
    pub fn shrink_to_fit(&mut self) {
        if self.len == 0 {
            self.free();
        } else if Self::layout_for(self.len).size() < self.layout.size() {
            self.reallocate(self.len);
        }
    }
}

/// Advises the huge pages of `bytes` bytes from `start`, a huge-page
/// boundary, all within one allocation of the caller's.
#[cfg(all(target_os = "linux", not(miri)))]
fn advise_range(start: *mut u8, bytes: usize) {
    // SAFETY: the range is one allocation of the caller's; the advice
    // changes how its pages are backed, never their contents, and a
    // refusal is harmless.
    unsafe { libc::madvise(start.cast(), bytes, libc::MADV_HUGEPAGE) };
}

#[cfg(not(all(target_os = "linux", not(miri))))]
fn advise_range(_: *mut u8, _: usize) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserve_and_spare_keep_contents_and_make_room() {
        // Small and large (past `HUGE_MIN`, advised on Linux) buffers alike.
        for n in [10, HUGE_MIN / 4 + 12_345] {
            let mut v: Vec<u32> = (0..7).collect();
            reserve(&mut v, n);
            assert!(v.capacity() >= n);
            assert_eq!(v, (0..7).collect::<Vec<_>>());
            v.resize(n, 3);
            assert_eq!(v[n - 1], 3);
            v.resize(v.capacity(), 4);
            let cap = v.capacity();
            spare(&mut v, 5);
            if cap * 4 >= HUGE_MIN / 2 {
                assert!(v.capacity() - v.len() >= 5);
                assert!(v.capacity() >= 2 * cap, "grows by doubling");
            } else {
                assert_eq!(v.capacity(), cap, "a small vector grows as `Vec` grows it");
            }
            assert_eq!(&v[..7], &[0, 1, 2, 3, 4, 5, 6]);
            let cap = v.capacity();
            spare(&mut v, 0);
            assert_eq!(v.capacity(), cap, "no growth without need");
        }
    }

    /// A `HugeVec` does what a `Vec` does with the same calls, small and
    /// past `HUGE_VEC_MIN` (a buffer aligned to a huge page, whole pages of
    /// capacity), growing, shrinking, cloning and freeing.
    #[test]
    fn huge_vec_matches_vec() {
        // Under Miri: a few hundred elements (the large branch is the same
        // code with another layout).
        let big = if cfg!(miri) { 300 } else { HUGE_VEC_MIN / 12 + 777 };
        for n in [0usize, 1, 5, 300, big] {
            let mut h: HugeVec<[u32; 3]> = HugeVec::new();
            let mut v: Vec<[u32; 3]> = Vec::new();
            for i in 0..n as u32 {
                h.push([i, i + 1, i + 2]);
                v.push([i, i + 1, i + 2]);
            }
            assert_eq!(&h[..], &v[..]);
            if HUGE_PAGES && n * 12 >= HUGE_VEC_MIN {
                assert_eq!(h.as_ptr() as usize % HUGE_PAGE, 0, "aligned to a huge page");
                assert_eq!((h.capacity() * 12).next_multiple_of(HUGE_PAGE), h.layout.size());
            }
            if n > 3 {
                assert_eq!(h.swap_remove(1), v.swap_remove(1));
                h.extend_from_within(0..3);
                v.extend_from_within(0..3);
            }
            h.extend_from_slice(&[[7; 3]; 9]);
            v.extend_from_slice(&[[7; 3]; 9]);
            h.extend((0..4).map(|i| [i; 3]));
            v.extend((0..4).map(|i| [i; 3]));
            h.resize(h.len() + 6, [9; 3]);
            v.resize(v.len() + 6, [9; 3]);
            assert_eq!(&h[..], &v[..]);
            let c = h.clone();
            assert_eq!(&c[..], &v[..]);
            h.resize(n / 2 + 1, [0; 3]);
            v.truncate(n / 2 + 1);
            h.shrink_to_fit();
            assert!(h.capacity() >= h.len());
            assert_eq!(&h[..], &v[..]);
            h.resize(2, [1; 3]);
            v.resize(2, [1; 3]);
            assert_eq!(&h[..], &v[..]);
            h.clear();
            h.shrink_to_fit();
            assert_eq!((h.len(), h.capacity()), (0, 0));
            h.reserve(10);
            assert!(h.capacity() >= 10 && h.is_empty());
            assert_eq!(format!("{c:?}").len(), format!("{:?}", &c[..]).len());
        }
    }
}
