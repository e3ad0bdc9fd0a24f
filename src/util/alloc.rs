//! A global allocator that can hold the process's heap to a limit: the system allocator plus a
//! byte count that is kept only once [`count`] turned it on. The `agent` binary installs it
//! (`main.rs`); the jq worker turns it on and sets its limit, so a filter that allocates without
//! end fails at the configured memory limit (an allocation past it fails, and Rust aborts with
//! "memory allocation of N bytes failed") instead of at an address-space limit that must leave
//! room for the binary and its stacks. Until then it costs one relaxed load per allocation.
//!
//! Without the allocator installed (tests, benches) [`count`] and [`limit`] change nothing.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering};

/// The system allocator with an optional limit (see the module doc).
pub struct Counting;

/// Whether allocations are counted.
static ON: AtomicBool = AtomicBool::new(false);
/// Bytes allocated since counting started (freed memory allocated before makes it negative).
static USED: AtomicIsize = AtomicIsize::new(0);
/// Most bytes `USED` may reach.
static LIMIT: AtomicUsize = AtomicUsize::new(usize::MAX);

/// Starts counting allocations (there is no stopping).
pub fn count() {
    ON.store(true, Ordering::SeqCst);
}

/// Bytes allocated since [`count`] (negative when more was freed than allocated since).
pub fn used() -> isize {
    USED.load(Ordering::Relaxed)
}

/// From now on an allocation that would take [`used`] past `bytes` fails.
pub fn limit(bytes: usize) {
    LIMIT.store(bytes, Ordering::SeqCst);
}

fn isize_of(n: usize) -> isize {
    isize::try_from(n).unwrap_or(isize::MAX)
}

/// What an allocation of `size` bytes takes from the system allocator: glibc's chunk (the size
/// plus an 8-byte header, rounded up to 16, at least 32). Small allocations cost up to twice
/// their size, so counting only the size would let the heap pass the limit by that much.
fn cost(size: usize) -> usize {
    size.saturating_add(8 + 15).max(32) & !15
}

/// Counts `n` more bytes, unless that passes the limit.
fn reserve(n: usize) -> bool {
    let n = isize_of(n);
    let before = USED.fetch_add(n, Ordering::Relaxed);
    let limit = isize_of(LIMIT.load(Ordering::Relaxed));
    if before.saturating_add(n) > limit {
        USED.fetch_sub(n, Ordering::Relaxed);
        return false;
    }
    true
}

fn release(n: usize) {
    USED.fetch_sub(isize_of(n), Ordering::Relaxed);
}

// SAFETY: every call goes to `System` with the caller's own layout and pointer; the count only
// decides whether an allocation is attempted at all (a refused one returns null, as `System`
// may).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let counted = ON.load(Ordering::Relaxed);
        if counted && !reserve(cost(layout.size())) {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller's layout, as `GlobalAlloc::alloc` requires.
        let p = unsafe { System.alloc(layout) };
        if p.is_null() && counted {
            release(cost(layout.size()));
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let counted = ON.load(Ordering::Relaxed);
        if counted && !reserve(cost(layout.size())) {
            return std::ptr::null_mut();
        }
        // SAFETY: as above.
        let p = unsafe { System.alloc_zeroed(layout) };
        if p.is_null() && counted {
            release(cost(layout.size()));
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by this allocator (that is, by `System`) with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        if ON.load(Ordering::Relaxed) {
            release(cost(layout.size()));
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let counted = ON.load(Ordering::Relaxed);
        let (old, new) = (cost(layout.size()), cost(new_size));
        let grow = new.saturating_sub(old);
        if counted && grow > 0 && !reserve(grow) {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller's pointer, layout and size, as `GlobalAlloc::realloc` requires.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if counted {
            if p.is_null() {
                release(grow);
            } else {
                release(old.saturating_sub(new));
            }
        }
        p
    }
}
