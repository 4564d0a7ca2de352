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

use std::alloc::{GlobalAlloc, Layout, System};

use redis_module::raw;

pub struct RedisAllocator;

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
        match raw::RedisModule_Alloc {
            Some(alloc) => alloc(padded_size(layout)).cast(),
            None => System.alloc(layout),
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as alloc; calloc'ed blocks are zeroed; TryCalloc returns
        // null instead of aborting, which GlobalAlloc allows.
        match (raw::RedisModule_TryCalloc, raw::RedisModule_Calloc) {
            (Some(try_calloc), _) => try_calloc(1, padded_size(layout)).cast(),
            (None, Some(calloc)) => calloc(1, padded_size(layout)).cast(),
            (None, None) => System.alloc_zeroed(layout),
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: ptr came from this allocator, so from the same family as
        // the one freeing it (see above).
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
            Some(realloc) if layout.align() <= 16 => realloc(ptr.cast(), new_size).cast(),
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
            None => System.realloc(ptr, layout, new_size),
        }
    }
}
