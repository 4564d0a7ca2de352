//! Active defragmentation of filters: the value box and every link's bit
//! array are handed to Redis' defragmenter, which moves a block when that
//! reduces fragmentation. Large chains are done incrementally: the cursor is
//! the index of the next link, so the main thread is never held for long.

use std::ffi::{c_int, c_ulong, c_void};
use std::ptr::NonNull;

use ferrobloom_core::BitArray;
use redis_module::raw::{RedisModuleDefragCtx, RedisModuleString};

use crate::ffi::api;
use crate::filter::Filter;

/// Moves `ptr` if the defragmenter wants to; returns the new address.
///
/// # Safety
/// `ptr` is a live block of Redis' allocator owned by the caller; after a
/// move the old address is freed and must not be used.
unsafe fn relocate(ctx: *mut RedisModuleDefragCtx, ptr: *mut c_void) -> Option<*mut c_void> {
    let moved = api!(RedisModule_DefragAlloc)(ctx, ptr);
    (!moved.is_null()).then_some(moved)
}

/// The type's defrag callback: 0 when done, 1 when more remains (Redis
/// calls again later with the cursor set).
pub extern "C" fn defrag(
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
            // SAFETY: *value is the Box<Filter> of this key (datatype
            // invariant 5), allocated by Redis' allocator; Redis takes the
            // new address from *value.
            if let Some(moved) = unsafe { relocate(ctx, *value) } {
                unsafe { *value = moved };
            }
        }
        // SAFETY: as above, after the possible move.
        let filter = unsafe { &mut *(*value).cast::<Filter>() };
        let links = filter.chain.links_mut();
        let mut index = cursor as usize;
        while index < links.len() {
            links[index].relocate_data(|array| {
                if array.is_empty() {
                    return array;
                }
                let (ptr, len) = array.into_raw_parts();
                // SAFETY: the array's block is from Redis' allocator and we own
                // it; after a move, the new block has the same size and bytes.
                match unsafe { relocate(ctx, ptr.as_ptr().cast()) } {
                    Some(moved) => unsafe {
                        BitArray::from_raw_parts(NonNull::new_unchecked(moved.cast()), len)
                    },
                    None => unsafe { BitArray::from_raw_parts(ptr, len) },
                }
            });
            index += 1;
            // SAFETY: (1) of ffi.
            if index < links.len() && unsafe { api!(RedisModule_DefragShouldStop)(ctx) } != 0 {
                // SAFETY: (1) of ffi.
                unsafe { api!(RedisModule_DefragCursorSet)(ctx, index as c_ulong) };
                return 1;
            }
        }
        0
    };
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).unwrap_or(0)
}
