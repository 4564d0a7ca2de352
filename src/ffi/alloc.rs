//! The module's global allocator: Redis' allocator inside a server, so all
//! memory shows in `used_memory` and `MEMORY USAGE`; the system allocator
//! when there is no server (unit tests of this crate).
//!
//! Zeroed blocks go through `RedisModule_TryCalloc` where the server has it
//! (Redis 7.4+, Valkey 8+), so a bit array the allocator cannot provide
//! comes back as an error reply instead of aborting the server; elsewhere
//! through `RedisModule_Calloc` (Redis 7.0, where the memory guard alone
//! protects). Either way a large new filter gets fresh zero pages from the
//! kernel instead of being written with zeros.
//!
//! Every block is counted at the size the allocator really gave it
//! (`RedisModule_MallocSize`, what `used_memory` counts: jemalloc's size
//! class, not the size asked for): `INFO bf`'s `bf_allocated_bytes`, next
//! to the sizes RedisBloom reports (`bf_bytes`, `bf_cuckoo_bytes`). Blocks
//! Redis allocated and the module adopts (a loaded RDB string) or moves
//! (defragmentation) are counted by [`adopted`] and [`moved`].

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use redis_module::raw;

pub struct RedisAllocator;

/// Bytes of the blocks the module holds (wrapping: frees on the lazy-free
/// thread may be counted before the allocation they undo is read).
static HELD: AtomicU64 = AtomicU64::new(0);

/// The bytes the module holds from the allocator.
pub fn held_bytes() -> u64 {
    HELD.load(Relaxed)
}

/// The size the allocator gave the block at `ptr` (`requested` where the
/// server cannot tell, or without a server).
///
/// # Safety
/// `ptr` is a live block of the allocator in use (Redis' when the API
/// table is filled).
#[inline]
unsafe fn block_size(ptr: *mut u8, requested: usize) -> usize {
    // SAFETY: the caller's guarantee; the function is read from the API
    // table like the allocation functions (see below).
    match (raw::RedisModule_MallocSize, raw::RedisModule_Alloc) {
        (Some(size), Some(_)) => size(ptr.cast()),
        _ => requested,
    }
}

#[inline]
fn count_in(bytes: usize) {
    HELD.fetch_add(bytes as u64, Relaxed);
}

#[inline]
fn count_out(bytes: usize) {
    HELD.fetch_sub(bytes as u64, Relaxed);
}

/// Counts a block Redis allocated that the module now owns and will free
/// through this allocator.
///
/// # Safety
/// `ptr` is a live block of Redis' allocator, of at least `len` bytes.
pub unsafe fn adopted(ptr: *mut u8, len: usize) {
    // SAFETY: the caller's guarantee.
    count_in(unsafe { block_size(ptr, len) });
}

/// The size of a block about to be handed to the defragmenter, for
/// [`moved`].
///
/// # Safety
/// As [`adopted`].
pub unsafe fn size_of_block(ptr: *mut u8, len: usize) -> usize {
    // SAFETY: the caller's guarantee.
    unsafe { block_size(ptr, len) }
}

/// Counts a block the defragmenter moved to `to` (it was `before` bytes).
///
/// # Safety
/// `to` is the live block that replaced it.
pub unsafe fn moved(before: usize, to: *mut u8, len: usize) {
    count_out(before);
    // SAFETY: the caller's guarantee.
    count_in(unsafe { block_size(to, len) });
}

/// jemalloc aligns every block of 16 bytes or more to 16 bytes; larger
/// alignments are met by rounding the size up to a multiple of the
/// alignment, which puts the block in a size class aligned to it.
fn padded_size(layout: Layout) -> usize {
    let align = layout.align();
    (layout.size() + align - 1) & !(align - 1)
}

// SAFETY: GlobalAlloc's contract is met by each method below, whose own
// note says how; all rely on this: the Redis allocator functions are read
// from the module API table, filled once by RedisModule_Init before any command
// or callback of the module runs; they are then never changed. A block is
// freed by the same allocator family that made it: before Init the module
// makes no allocation that outlives OnLoad's first steps, and in a process
// without Redis the table stays empty, so System is used throughout.
unsafe impl GlobalAlloc for RedisAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: Redis' block is at least the padded size, which meets the
        // alignment (padded_size); System gets the caller's layout as is.
        let ptr: *mut u8 = match raw::RedisModule_Alloc {
            Some(alloc) => alloc(padded_size(layout)).cast(),
            None => System.alloc(layout),
        };
        if !ptr.is_null() {
            // SAFETY: ptr is the live block just made.
            count_in(block_size(ptr, padded_size(layout)));
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as alloc; calloc'ed blocks are zeroed; TryCalloc returns
        // null instead of aborting, which GlobalAlloc allows.
        let ptr: *mut u8 = match (raw::RedisModule_TryCalloc, raw::RedisModule_Calloc) {
            (Some(try_calloc), _) => try_calloc(1, padded_size(layout)).cast(),
            (None, Some(calloc)) => calloc(1, padded_size(layout)).cast(),
            (None, None) => System.alloc_zeroed(layout),
        };
        if !ptr.is_null() {
            // SAFETY: ptr is the live block just made.
            count_in(block_size(ptr, padded_size(layout)));
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: ptr came from this allocator, so from the same family as
        // the one freeing it (see above); its size is read before the free.
        count_out(block_size(ptr, padded_size(layout)));
        match raw::RedisModule_Free {
            Some(free) => free(ptr.cast()),
            None => System.dealloc(ptr, layout),
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: ptr came from this allocator with `layout`; Redis' realloc
        // keeps alignments up to 16, larger ones are moved by hand with the
        // caller's sizes; new_size is non-zero (GlobalAlloc's contract).
        match raw::RedisModule_Realloc {
            Some(realloc) if layout.align() <= 16 => {
                let before = block_size(ptr, padded_size(layout));
                let new_ptr: *mut u8 = realloc(ptr.cast(), new_size).cast();
                if !new_ptr.is_null() {
                    let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
                    count_out(before);
                    count_in(block_size(new_ptr, padded_size(new_layout)));
                }
                new_ptr
            }
            Some(_) => {
                // Over-aligned: allocate, copy, free (rare; never on a hot path).
                let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
                let new_ptr = self.alloc(new_layout);
                if !new_ptr.is_null() {
                    std::ptr::copy_nonoverlapping(ptr, new_ptr, layout.size().min(new_size));
                    self.dealloc(ptr, layout);
                }
                new_ptr
            }
            None => {
                let new_ptr = System.realloc(ptr, layout, new_size);
                if !new_ptr.is_null() {
                    let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
                    count_out(padded_size(layout));
                    count_in(padded_size(new_layout));
                }
                new_ptr
            }
        }
    }
}
