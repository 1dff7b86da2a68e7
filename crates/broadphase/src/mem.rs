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

#[cfg(target_os = "linux")]
fn advise_huge<T>(v: &Vec<T>) {
    const PAGE: usize = 2 << 20;
    let bytes = v.capacity() * core::mem::size_of::<T>();
    if bytes < HUGE_MIN {
        return;
    }
    let start = v.as_ptr() as usize;
    let (from, to) = (start.next_multiple_of(PAGE), (start + bytes) / PAGE * PAGE);
    if to > from {
        // SAFETY: `from..to` lies within the allocation of `v`, which this
        // borrow keeps alive; the advice changes how pages are backed,
        // never their contents, and a refusal (an error return) is
        // harmless.
        unsafe { libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_HUGEPAGE) };
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge<T>(_: &Vec<T>) {}

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
}
