//! The `bf` INFO section (`INFO bf`, also in `INFO modules` and
//! `INFO everything`): server-wide totals an exporter can alert on, all read
//! from counters kept up to date, never from a keyspace scan.

use std::ffi::{c_int, CStr};

use redis_module::raw::RedisModuleInfoCtx;

use super::api;
use crate::metrics::{self, TOTALS};

fn add_u64(ctx: *mut RedisModuleInfoCtx, name: &CStr, value: u64) {
    // SAFETY: (1) of ffi; ctx is the INFO context of the running callback;
    // Redis copies the name.
    unsafe { api!(RedisModule_InfoAddFieldULongLong)(ctx, name.as_ptr(), value) };
}

/// Doubles in their shortest exact form (`0.9`, not `0.90000000000000002`).
fn add_f64(ctx: *mut RedisModuleInfoCtx, name: &CStr, value: f64) {
    let text = std::ffi::CString::new(crate::command::format_double(value)).expect("no NUL");
    // SAFETY: as add_u64; Redis copies the value.
    unsafe { api!(RedisModule_InfoAddFieldCString)(ctx, name.as_ptr(), text.as_ptr()) };
}

fn add_text(ctx: *mut RedisModuleInfoCtx, name: &CStr, value: &str) {
    let text = std::ffi::CString::new(value).expect("no NUL");
    // SAFETY: as add_u64; Redis copies the value.
    unsafe { api!(RedisModule_InfoAddFieldCString)(ctx, name.as_ptr(), text.as_ptr()) };
}

/// Top-K sketches: how many, their buckets and heap records, where they
/// came from, the items counted and those expelled from a list.
fn topk_fields(ctx: *mut RedisModuleInfoCtx) {
    let t = &metrics::TOPK;
    add_u64(ctx, c"topk_sketches", t.sketches.get());
    add_u64(ctx, c"topk_bytes", t.bytes.get());
    add_u64(ctx, c"topk_created", t.created.get());
    add_u64(ctx, c"topk_loaded", t.loaded.get());
    add_u64(ctx, c"topk_copied", t.copied.get());
    add_u64(ctx, c"topk_adds", t.adds.get());
    add_u64(ctx, c"topk_expelled", t.expelled.get());
}

/// The INFO callback. Field names get the module prefix: `bf_filters`.
pub extern "C" fn info(ctx: *mut RedisModuleInfoCtx, _for_crash_report: c_int) {
    let work = || {
        // SAFETY: (1) of ffi; a null name makes the section `bf`.
        unsafe { api!(RedisModule_InfoAddSection)(ctx, std::ptr::null()) };
        let t = &TOTALS;
        let levels = metrics::snapshot();
        let windows = metrics::window_snapshot();
        // FerroBloom's own version: MODULE LIST shows RedisBloom's number
        // (20802), which clients gate features on.
        add_text(ctx, c"version", env!("CARGO_PKG_VERSION"));
        add_u64(ctx, c"filters", t.filters.get());
        add_u64(ctx, c"filters_exact", t.filters_exact.get());
        add_u64(ctx, c"filters_pow2", t.filters_pow2.get());
        add_u64(ctx, c"links", t.links.get());
        add_u64(ctx, c"bytes", t.bytes.get());
        add_u64(ctx, c"items", t.items.get());
        add_u64(ctx, c"capacity", t.capacity.get());
        add_u64(ctx, c"pow2_rounding_bytes", t.pow2_rounding_bytes.get());
        // What the allocator really holds for the module (size classes,
        // boxes, vectors, LOADCHUNK progress), next to the sizes above,
        // which are RedisBloom's.
        add_u64(ctx, c"allocated_bytes", super::alloc::held_bytes());
        add_f64(ctx, c"fill_warning_threshold", levels.warning);
        add_f64(ctx, c"fill_alert_threshold", levels.alert);
        // Windowed filters count in the totals alerts watch, at their own
        // levels (metrics::WindowLevel); max_fill_ratio stays the plain
        // filters' (an item window is full by design).
        add_u64(
            ctx,
            c"filters_over_warning",
            levels.above_warning + windows.over_warning,
        );
        add_u64(
            ctx,
            c"filters_over_alert",
            levels.above_alert + windows.over_alert,
        );
        add_f64(ctx, c"max_fill_ratio", levels.max_fill);
        add_f64(
            ctx,
            c"max_estimated_fpr",
            levels.max_fpr.max(windows.max_fpr),
        );
        add_u64(ctx, c"scale_outs", t.scale_outs.get());
        add_u64(ctx, c"guard_refusals", t.guard_refusals.get());
        add_u64(
            ctx,
            c"fill_warning_crossings",
            t.fill_warning_crossings.get(),
        );
        add_u64(ctx, c"fill_alert_crossings", t.fill_alert_crossings.get());
        add_u64(ctx, c"filters_loading", t.filters_loading.get());
        add_u64(ctx, c"loading_bytes", t.loading_bytes.get());
        add_u64(ctx, c"windows", t.windows.get());
        add_u64(ctx, c"window_bytes", t.window_bytes.get());
        add_u64(ctx, c"window_rotations", t.window_rotations.get());
        add_u64(ctx, c"window_forgotten", t.window_forgotten.get());
        add_u64(ctx, c"window_growths", t.window_growths.get());
        add_u64(ctx, c"windows_over_warning", windows.over_warning);
        add_u64(ctx, c"windows_over_alert", windows.over_alert);
        add_f64(ctx, c"window_max_load", windows.max_load);
        add_f64(ctx, c"window_max_estimated_fpr", windows.max_fpr);
        let (items, slots) = (t.cuckoo_items.get(), t.cuckoo_slots.get());
        add_u64(ctx, c"cuckoo_filters", t.cuckoo_filters.get());
        add_u64(ctx, c"cuckoo_sub_filters", t.cuckoo_sub_filters.get());
        add_u64(ctx, c"cuckoo_bytes", t.cuckoo_bytes.get());
        add_u64(ctx, c"cuckoo_items", items);
        add_u64(ctx, c"cuckoo_slots", slots);
        // Items per slot over all Cuckoo filters: inserts start to need
        // kick-outs and new sub-filters as it nears the bucket size's limit
        // (docs/sizing.md).
        add_f64(
            ctx,
            c"cuckoo_load_factor",
            if slots == 0 {
                0.0
            } else {
                items as f64 / slots as f64
            },
        );
        add_u64(ctx, c"cuckoo_deletes", t.cuckoo_deletes.get());
        add_u64(ctx, c"cuckoo_expansions", t.cuckoo_expansions.get());
        add_u64(
            ctx,
            c"cuckoo_insert_failures",
            t.cuckoo_insert_failures.get(),
        );
        // Count-Min sketches: how many, their cell bytes and N, and how
        // close their fullest cells are to the cell size's maximum (see
        // cms::value for when that is exact).
        let sketches = metrics::cms_snapshot(levels.warning, levels.alert);
        add_u64(ctx, c"cms_sketches", t.cms_sketches.get());
        add_u64(ctx, c"cms_bytes", t.cms_bytes.get());
        add_u64(ctx, c"cms_count", t.cms_count.get());
        add_u64(ctx, c"cms_over_warning", sketches.over_warning);
        add_u64(ctx, c"cms_over_alert", sketches.over_alert);
        add_f64(ctx, c"cms_max_fill_ratio", sketches.max_fill);
        add_u64(ctx, c"cms_created", t.cms_created.get());
        add_u64(ctx, c"cms_loaded", t.cms_loaded.get());
        add_u64(ctx, c"cms_copied", t.cms_copied.get());
        add_u64(ctx, c"cms_merges", t.cms_merges.get());
        add_u64(ctx, c"cms_overflows", t.cms_overflows.get());
        add_u64(ctx, c"cms_underflows", t.cms_underflows.get());
        topk_fields(ctx);
        // t-digests: how many, their node arrays, their observations
        // (tdigest::counted).
        add_u64(ctx, c"tdigest_digests", t.tdigest_digests.get());
        add_u64(ctx, c"tdigest_bytes", t.tdigest_bytes.get());
        add_u64(ctx, c"tdigest_observations", t.tdigest_observations.get());
        add_u64(ctx, c"tdigest_created", t.tdigest_created.get());
        add_u64(ctx, c"tdigest_loaded", t.tdigest_loaded.get());
        add_u64(ctx, c"tdigest_copied", t.tdigest_copied.get());
        add_u64(ctx, c"tdigest_merges", t.tdigest_merges.get());
        add_u64(ctx, c"tdigest_resets", t.tdigest_resets.get());
        add_u64(ctx, c"tdigest_overflows", t.tdigest_overflows.get());
        add_u64(
            ctx,
            c"max_filter_bytes",
            crate::config::settings().max_filter_bytes,
        );
        if let Some(budget) = crate::guard::budget() {
            add_u64(ctx, c"memory_limit", budget.limit.bytes);
            add_text(ctx, c"memory_limit_source", budget.limit.source.name());
            add_u64(ctx, c"memory_allowed", budget.allowed);
        }
    };
    // A panic must not unwind into Redis; INFO then lacks the section.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
}
