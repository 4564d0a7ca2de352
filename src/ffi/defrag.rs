//! Active defragmentation of filters: the value box and every link's bit
//! array are handed to Redis' defragmenter, which moves a block when that
//! reduces fragmentation. Large chains are done incrementally: the cursor is
//! the index of the next link, so the main thread is never held for long.

use std::ffi::{c_int, c_ulong, c_void};
use std::ptr::NonNull;

use ferrobloom_core::BitArray;
use redis_module::raw::{RedisModuleDefragCtx, RedisModuleString};

use super::api;
use crate::bloom::Filter;

/// Moves `ptr` if the defragmenter wants to; returns the new address.
///
/// # Safety
/// `ptr` is a live block of Redis' allocator owned by the caller; after a
/// move the old address is freed and must not be used.
unsafe fn relocate(ctx: *mut RedisModuleDefragCtx, ptr: *mut c_void) -> Option<*mut c_void> {
    // SAFETY: (1) of ffi; ctx is the running defrag callback's context, and
    // the caller's guarantee on ptr.
    let moved = unsafe { api!(RedisModule_DefragAlloc)(ctx, ptr) };
    (!moved.is_null()).then_some(moved)
}

/// Moves a bit array's block if the defragmenter wants to.
fn relocate_array(ctx: *mut RedisModuleDefragCtx, array: BitArray) -> BitArray {
    if array.is_empty() {
        return array;
    }
    let (ptr, len) = array.into_raw_parts();
    // SAFETY: the array's block is from Redis' allocator (the module's global
    // allocator) and is ours: into_raw_parts gave up the array.
    match unsafe { relocate(ctx, ptr.as_ptr().cast()) } {
        // SAFETY: the new block has the same size and bytes, from the same
        // allocator; it is non-null (relocate returns moves only).
        Some(moved) => unsafe {
            BitArray::from_raw_parts(NonNull::new_unchecked(moved.cast()), len)
        },
        // SAFETY: not moved: the parts are the array's own, given back.
        None => unsafe { BitArray::from_raw_parts(ptr, len) },
    }
}

/// Whether the defragmenter wants the main thread back.
fn should_stop(ctx: *mut RedisModuleDefragCtx) -> bool {
    // SAFETY: (1) of ffi; ctx is the running defrag callback's context.
    unsafe { api!(RedisModule_DefragShouldStop)(ctx) != 0 }
}

/// The type's defrag callback: 0 when done, 1 when more remains (Redis
/// calls again later with the cursor set).
pub extern "C" fn defrag_filter(
    ctx: *mut RedisModuleDefragCtx,
    _key: *mut RedisModuleString,
    value: *mut *mut c_void,
) -> c_int {
    let work = || {
        let mut cursor: c_ulong = 0;
        // SAFETY: (1) of ffi; ctx is valid during the callback. Get fails
        // (cursor stays 0) when this is a fresh pass.
        unsafe { api!(RedisModule_DefragCursorGet)(ctx, &mut cursor) };
        if cursor == 0 {
            // SAFETY: *value is the Box<Filter> of this key (invariant 5 of
            // ffi::bloom), allocated by Redis' allocator.
            if let Some(moved) = unsafe { relocate(ctx, *value) } {
                // SAFETY: value is Redis' slot for the key's value, valid for
                // the callback; Redis takes the new address from it.
                unsafe { *value = moved };
            }
        }
        // SAFETY: as above, after the possible move: the slot holds the
        // live Box<Filter>, which nothing else uses during the callback.
        let filter = unsafe { &mut *(*value).cast::<Filter>() };
        let links = filter.links_for_defrag();
        let mut index = cursor as usize;
        while index < links.len() {
            links[index].relocate_data(|array| relocate_array(ctx, array));
            index += 1;
            if index < links.len() && should_stop(ctx) {
                // SAFETY: (1) of ffi; ctx is valid during the callback.
                unsafe { api!(RedisModule_DefragCursorSet)(ctx, index as c_ulong) };
                return 1;
            }
        }
        0
    };
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).unwrap_or(0)
}
