//! The memory guard: decides, before a filter allocates, whether the
//! allocation may happen, so a mistyped capacity or a runaway scaling filter
//! gets an error naming the numbers instead of an out-of-memory abort of the
//! whole server.
//!
//! Checks, in order: the per-filter cap (`bf.max-filter-bytes`), the
//! server's `maxmemory` (used memory plus the new bytes), and what the
//! machine could ever provide.

use std::ffi::c_int;
use std::ptr;

use ferrobloom_core::{AllocGuard, AllocRequest, Refusal, RefusalKind};
use redis_module::raw::RedisModuleCtx;

use crate::config;
use crate::ffi::{api, log, LogLevel};

/// Physical memory of the machine, read once.
fn machine_memory() -> u64 {
    use std::sync::OnceLock;
    static TOTAL: OnceLock<u64> = OnceLock::new();
    *TOTAL.get_or_init(|| {
        // SAFETY: sysconf has no preconditions; it returns -1 on error.
        let (pages, page_size) = unsafe {
            (
                libc::sysconf(libc::_SC_PHYS_PAGES),
                libc::sysconf(libc::_SC_PAGESIZE),
            )
        };
        if pages > 0 && page_size > 0 {
            (pages as u64).saturating_mul(page_size as u64)
        } else {
            u64::MAX
        }
    })
}

/// `used_memory` and `maxmemory` when a maxmemory is set.
fn memory_state(ctx: *mut RedisModuleCtx) -> Option<(u64, u64)> {
    // SAFETY: (1) of ffi. The ratio is 0 when no maxmemory is set, which
    // spares building the INFO data on every allocation.
    let ratio = unsafe { api!(RedisModule_GetUsedMemoryRatio)() };
    if ratio <= 0.0 {
        return None;
    }
    // SAFETY: (1), (2) of ffi; the data is freed below, fields read before.
    unsafe {
        let info = api!(RedisModule_GetServerInfo)(ctx, c"memory".as_ptr());
        if info.is_null() {
            return None;
        }
        let mut err: c_int = 0;
        let used =
            api!(RedisModule_ServerInfoGetFieldUnsigned)(info, c"used_memory".as_ptr(), &mut err);
        let used_ok = err == 0;
        let max =
            api!(RedisModule_ServerInfoGetFieldUnsigned)(info, c"maxmemory".as_ptr(), &mut err);
        let max_ok = err == 0;
        api!(RedisModule_FreeServerInfo)(ctx, info);
        (used_ok && max_ok && max > 0).then_some((used, max))
    }
}

fn check(ctx: *mut RedisModuleCtx, request: AllocRequest) -> Result<(), Refusal> {
    let cap = config::settings().max_filter_bytes;
    if cap > 0 && request.filter_size_after > cap {
        return Err(Refusal {
            kind: RefusalKind::FilterCap,
            needed: request.filter_size_after,
            limit: cap,
            in_use: 0,
        });
    }
    if let Some((used, max)) = memory_state(ctx) {
        if used.saturating_add(request.bytes) > max {
            return Err(Refusal {
                kind: RefusalKind::MaxMemory,
                needed: request.bytes,
                limit: max,
                in_use: used,
            });
        }
    }
    machine_check(request)
}

fn machine_check(request: AllocRequest) -> Result<(), Refusal> {
    let limit = machine_memory();
    if request.bytes > limit {
        return Err(Refusal {
            kind: RefusalKind::MachineMemory,
            needed: request.bytes,
            limit,
            in_use: 0,
        });
    }
    Ok(())
}

/// The guard of commands run by clients.
pub struct CommandGuard {
    pub ctx: *mut RedisModuleCtx,
}

impl AllocGuard for CommandGuard {
    fn admit(&self, request: AllocRequest) -> Result<(), Refusal> {
        let result = check(self.ctx, request);
        if result.is_err() {
            crate::metrics::TOTALS.guard_refusals.incr();
        }
        result
    }
}

/// The guard of loading and replication: never refuses what the machine
/// could hold, since refusing would lose data; logs what it would have
/// refused.
pub struct LoadGuard {
    pub ctx: *mut RedisModuleCtx,
}

impl AllocGuard for LoadGuard {
    fn admit(&self, request: AllocRequest) -> Result<(), Refusal> {
        if let Err(refusal) = check(self.ctx, request) {
            if refusal.kind == RefusalKind::MachineMemory {
                return Err(refusal);
            }
            log(
                ptr::null_mut(),
                LogLevel::Warning,
                &format!(
                    "allowing a filter allocation while loading or replicating: {}",
                    refusal_message("over a limit", &refusal)
                ),
            );
        }
        Ok(())
    }
}

/// The error a client gets for a refused allocation: what was needed and
/// which limit it would cross.
pub fn refusal_message(what: &str, refusal: &Refusal) -> String {
    match refusal.kind {
        RefusalKind::FilterCap => format!(
            "ERR {what}: the filter would take {} bytes, over bf.max-filter-bytes ({} bytes)",
            refusal.needed, refusal.limit
        ),
        RefusalKind::MaxMemory => format!(
            "ERR {what}: it needs {} bytes and {} are in use, over maxmemory ({} bytes)",
            refusal.needed, refusal.in_use, refusal.limit
        ),
        RefusalKind::MachineMemory => format!(
            "ERR {what}: it needs {} bytes, over the machine's physical memory ({} bytes)",
            refusal.needed, refusal.limit
        ),
    }
}
