//! The memory guard: decides, before a filter allocates, whether the
//! allocation may happen, so a mistyped capacity or a runaway scaling filter
//! gets an error naming the numbers instead of an out-of-memory kill of the
//! whole server. It holds with default settings.
//!
//! Checks, in order:
//! 1. the per-filter cap, `bf.max-filter-bytes` (4 GiB by default);
//! 2. the server's `maxmemory`, when set: used memory plus the new bytes;
//! 3. what the server can really get: used memory plus the new bytes
//!    against [`ALLOWED_PERCENT`] of the smaller of the physical memory and
//!    the cgroup memory limit ([`crate::memory_limit`]), whatever
//!    `maxmemory` says.
//!
//! Commands from clients are refused; loading (RDB, AOF) and replication
//! never are (refusing would lose data), but a load over a limit logs one
//! warning naming the key and the bytes.

use std::ffi::c_int;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ferrobloom_core::{AllocGuard, AllocRequest, Refusal, RefusalKind};
use redis_module::raw::RedisModuleCtx;

use crate::config;
use crate::ffi::{api, log, LogLevel};
use crate::memory_limit::{self, LimitSource, MemoryLimit};

/// The share of the memory limit filters may bring the server to. The rest
/// stays for what Redis needs beside its data: client and replication
/// buffers, the allocator's fragmentation, the kernel's own use of the
/// cgroup's pages; a filter that would take the server past it is refused.
pub const ALLOWED_PERCENT: u64 = 90;

/// How long a memory limit read from `/proc` and `/sys` is trusted: a
/// container's limit may be changed while the server runs.
const LIMIT_TTL: Duration = Duration::from_secs(10);

/// How long a reading of `used_memory` is trusted. Filters created since
/// are added to it from the module's own totals, so only other data written
/// within this window goes unseen; reading INFO on every allocation would
/// cost more than creating a small filter.
const USED_TTL: Duration = Duration::from_millis(250);

/// The memory the server may use, as the guard sees it.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    pub limit: MemoryLimit,
    /// [`ALLOWED_PERCENT`] of the limit.
    pub allowed: u64,
}

struct Cached<T> {
    value: T,
    at: Instant,
}

static BUDGET: Mutex<Option<Cached<Option<Budget>>>> = Mutex::new(None);

/// The current budget; None when no limit can be read (no `/proc`).
pub fn budget() -> Option<Budget> {
    let mut cached = BUDGET.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(c) = cached.as_ref().filter(|c| c.at.elapsed() < LIMIT_TTL) {
        return c.value;
    }
    let value = memory_limit::detect().map(|limit| Budget {
        limit,
        allowed: (limit.bytes / 100).saturating_mul(ALLOWED_PERCENT),
    });
    *cached = Some(Cached {
        value,
        at: Instant::now(),
    });
    value
}

/// `used_memory` and `maxmemory` of INFO memory.
fn server_memory(ctx: *mut RedisModuleCtx) -> Option<(u64, u64)> {
    // SAFETY: (1), (2) of ffi; a null ctx is accepted (the data is then not
    // auto-freed, and is freed below with the same null ctx); the fields
    // are read before the data is freed.
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
        (used_ok && max_ok).then_some((used, max))
    }
}

/// `used_memory` and `maxmemory`, read now, when a maxmemory is set.
fn maxmemory_state(ctx: *mut RedisModuleCtx) -> Option<(u64, u64)> {
    // SAFETY: (1) of ffi. The ratio is 0 when no maxmemory is set, which
    // spares building the INFO data then.
    let ratio = unsafe { api!(RedisModule_GetUsedMemoryRatio)() };
    if ratio <= 0.0 {
        return None;
    }
    server_memory(ctx).filter(|&(_, max)| max > 0)
}

/// A reading of `used_memory`, with the module's filter bytes at that time.
#[derive(Clone, Copy)]
struct UsedReading {
    used: u64,
    filter_bytes: u64,
}

static USED: Mutex<Option<Cached<UsedReading>>> = Mutex::new(None);

/// `used_memory` now: read at most every [`USED_TTL`], plus the filter
/// bytes created since (freed ones are not subtracted: the estimate errs
/// high).
fn used_memory(ctx: *mut RedisModuleCtx) -> Option<u64> {
    let filter_bytes = crate::metrics::TOTALS.bytes.get();
    let mut cached = USED.lock().unwrap_or_else(|e| e.into_inner());
    let reading = match cached.as_ref().filter(|c| c.at.elapsed() < USED_TTL) {
        Some(c) => c.value,
        None => {
            let (used, _) = server_memory(ctx)?;
            let reading = UsedReading { used, filter_bytes };
            *cached = Some(Cached {
                value: reading,
                at: Instant::now(),
            });
            reading
        }
    };
    Some(
        reading
            .used
            .saturating_add(filter_bytes.saturating_sub(reading.filter_bytes)),
    )
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
    let fresh = maxmemory_state(ctx);
    if let Some((used, max)) = fresh {
        if used.saturating_add(request.bytes) > max {
            return Err(Refusal {
                kind: RefusalKind::MaxMemory,
                needed: request.bytes,
                limit: max,
                in_use: used,
            });
        }
    }
    let Some(budget) = budget() else {
        return Ok(());
    };
    let used = match fresh {
        Some((used, _)) => used,
        None => used_memory(ctx).unwrap_or(0),
    };
    if used.saturating_add(request.bytes) > budget.allowed {
        return Err(Refusal {
            kind: RefusalKind::MachineMemory,
            needed: request.bytes,
            limit: budget.allowed,
            in_use: used,
        });
    }
    Ok(())
}

/// A key name for the log: printable ASCII as it is, other bytes escaped.
pub fn printable(key: &[u8]) -> String {
    key.escape_ascii().to_string()
}

/// The guard of commands run by clients (and of COPY).
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

/// The guard of loading and replication: never refuses, since refusing
/// would lose data; logs what it would have refused, naming the key.
pub struct LoadGuard<'a> {
    pub ctx: *mut RedisModuleCtx,
    pub key: &'a [u8],
}

impl AllocGuard for LoadGuard<'_> {
    fn admit(&self, request: AllocRequest) -> Result<(), Refusal> {
        if let Err(refusal) = check(self.ctx, request) {
            warn_loading_over_limit(self.key, request.bytes, &refusal);
        }
        Ok(())
    }
}

/// The one warning a load over a limit logs.
pub fn warn_loading_over_limit(key: &[u8], bytes: u64, refusal: &Refusal) {
    log(
        std::ptr::null_mut(),
        LogLevel::Warning,
        &format!(
            "loading Bloom filter '{}' ({bytes} bytes) over a memory limit, allowed because \
             loading and replication are never refused: {}",
            printable(key),
            refusal_detail(refusal)
        ),
    );
}

/// After an RDB or RESTORE value was read (its memory is already in use):
/// the warning of [`warn_loading_over_limit`] when the filter is over the
/// per-filter cap or the server over its budget. Small filters are not
/// checked, so that loading millions of them costs no INFO reading each.
pub fn check_loaded(key: &[u8], data_bytes: u64, reported_size: u64) {
    const CHECKED_FROM: u64 = 1 << 20;
    if data_bytes < CHECKED_FROM {
        return;
    }
    let request = AllocRequest {
        bytes: 0,
        filter_size_after: reported_size,
    };
    if let Err(refusal) = check(std::ptr::null_mut(), request) {
        warn_loading_over_limit(key, data_bytes, &refusal);
    }
}

/// What a refusal says after the common prefix.
fn refusal_detail(refusal: &Refusal) -> String {
    match refusal.kind {
        RefusalKind::FilterCap => format!(
            "the filter would take {} bytes, over bf.max-filter-bytes ({} bytes)",
            refusal.needed, refusal.limit
        ),
        RefusalKind::MaxMemory => format!(
            "it needs {} bytes and {} are in use, over maxmemory ({} bytes)",
            refusal.needed, refusal.in_use, refusal.limit
        ),
        RefusalKind::MachineMemory => {
            let (source, total) = match budget() {
                Some(b) => (b.limit.source, b.limit.bytes),
                None => (LimitSource::PhysicalMemory, refusal.limit),
            };
            format!(
                "it needs {} bytes and {} are in use, over the {} bytes the server may use \
                 ({ALLOWED_PERCENT}% of {}, {total} bytes)",
                refusal.needed,
                refusal.in_use,
                refusal.limit,
                source.describe()
            )
        }
    }
}

/// The error a client gets for a refused allocation: the words later
/// RedisBloom versions use, then what was needed and which limit it would
/// cross.
pub fn refusal_message(refusal: &Refusal) -> String {
    format!(
        "ERR Insufficient memory to create filter: {}",
        refusal_detail(refusal)
    )
}

/// The error when the allocator itself could not provide the memory (where
/// the server has `RedisModule_TryCalloc`, a failed allocation comes back
/// instead of aborting the server).
pub fn allocation_failed_message(bytes: u64) -> String {
    format!(
        "ERR Insufficient memory to create filter: the allocator could not provide {bytes} bytes"
    )
}
