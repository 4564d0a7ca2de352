//! Active defragmentation of every data type's values: the value box and
//! each array the type names (`DataType::has_part` / `relocate_part`) are
//! handed to Redis' defragmenter, which moves a block when that reduces
//! fragmentation. Large values are done incrementally: the cursor is the
//! index of the next array, so the main thread is never held for long.
//! `ffi::datatype` registers the callback that calls [`defrag_value`].

use std::ffi::{c_int, c_ulong, c_void};
use std::ptr::NonNull;

use ferrobloom_core::BitArray;
use redis_module::raw::RedisModuleDefragCtx;

use super::{alloc, api};
use crate::datatype::DataType;

/// Moves `ptr` if the defragmenter wants to; returns the new address.
///
/// # Safety
/// `ptr` is a live block of Redis' allocator owned by the caller; after a
/// move the old address is freed and must not be used.
unsafe fn relocate(ctx: *mut RedisModuleDefragCtx, ptr: *mut c_void) -> Option<*mut c_void> {
    // SAFETY: the caller's guarantee on ptr (live, ours).
    let before = unsafe { alloc::size_of_block(ptr.cast(), 0) };
    // SAFETY: (1) of ffi; ctx is the running defrag callback's context, and
    // the caller's guarantee on ptr.
    let moved = unsafe { api!(RedisModule_DefragAlloc)(ctx, ptr) };
    if moved.is_null() {
        return None;
    }
    // SAFETY: `moved` is the live block that replaced ptr.
    unsafe { alloc::moved(before, moved.cast(), 0) };
    Some(moved)
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

/// One step of defragmenting a value of `V`: 0 when done, 1 when more
/// remains (Redis calls again later with the cursor set).
///
/// # Safety
/// `ctx` is the running defrag callback's context and `value` Redis' slot
/// for the key's value, a live `Box<V>` allocated by Redis' allocator
/// (invariant 5 of `ffi::datatype`), which nothing else uses during the
/// callback.
pub unsafe fn defrag_value<V: DataType>(
    ctx: *mut RedisModuleDefragCtx,
    value: *mut *mut c_void,
) -> c_int {
    let mut cursor: c_ulong = 0;
    // SAFETY: (1) of ffi; ctx is valid during the callback. Get fails
    // (cursor stays 0) when this is a fresh pass.
    unsafe { api!(RedisModule_DefragCursorGet)(ctx, &mut cursor) };
    if cursor == 0 {
        // SAFETY: *value is the Box<V> of this key, allocated by Redis'
        // allocator (the caller's guarantee).
        if let Some(moved) = unsafe { relocate(ctx, *value) } {
            // SAFETY: value is Redis' slot for the key's value, valid for
            // the callback; Redis takes the new address from it.
            unsafe { *value = moved };
        }
    }
    // SAFETY: as above, after the possible move: the slot holds the live
    // Box<V>, which nothing else uses during the callback.
    let value = unsafe { &mut *(*value).cast::<V>() };
    let mut index = cursor as usize;
    while value.has_part(index) {
        value.relocate_part(index, |array| relocate_array(ctx, array));
        index += 1;
        if value.has_part(index) && should_stop(ctx) {
            // SAFETY: (1) of ffi; ctx is valid during the callback.
            unsafe { api!(RedisModule_DefragCursorSet)(ctx, index as c_ulong) };
            return 1;
        }
    }
    0
}
