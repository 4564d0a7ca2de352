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

use std::ffi::CStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::command::Env;
use crate::memory_limit::{self, LimitSource, MemoryLimit};
use ferrobloom_core::{AllocGuard, AllocRequest, Refusal, RefusalKind};

/// The share of the memory limit filters may bring the server to. The rest
/// stays for what Redis needs beside its data: client and replication
/// buffers, the allocator's fragmentation, the kernel's own use of the
/// cgroup's pages; a filter that would take the server past it is refused.
pub const ALLOWED_PERCENT: u64 = 90;

/// How long a memory limit read from `/proc` and `/sys` is trusted: a
/// container's limit may be changed while the server runs.
const LIMIT_TTL: Duration = Duration::from_secs(10);

/// How long a reading of `used_memory` is trusted. The bytes every guard
/// admitted since (of any type: Bloom filters and their links, Cuckoo
/// sub-filters, windowed filters, copies, loaded values) are added to it,
/// so a burst of allocations within this window is counted in full; only
/// other data written within it goes unseen. Reading INFO on every
/// allocation would cost more than creating a small filter.
const USED_TTL: Duration = Duration::from_millis(250);

/// Every byte a guard admitted (or a load brought in) since the server
/// started, whatever the type: a later type's allocations count as soon as
/// they go through [`CommandGuard`] or [`LoadGuard`].
static PROMISED: AtomicU64 = AtomicU64::new(0);

/// Every byte of the values freed since the server started (see
/// [`release`]), so that a filter deleted just before another is created
/// does not count against it until the next reading.
static RELEASED: AtomicU64 = AtomicU64::new(0);

/// Counts `bytes` as promised (see [`PROMISED`]).
pub fn promise(bytes: u64) {
    PROMISED.fetch_add(bytes, Ordering::Relaxed);
}

/// Counts the `bytes` of a value being freed (its drop; may run on the
/// lazy-free thread). A type that does not call it only makes the
/// estimate err high until the next reading.
pub fn release(bytes: u64) {
    RELEASED.fetch_add(bytes, Ordering::Relaxed);
}

/// The bytes promised and released since the server started.
pub fn promised() -> (u64, u64) {
    (
        PROMISED.load(Ordering::Relaxed),
        RELEASED.load(Ordering::Relaxed),
    )
}

/// How many allocations [`CommandGuard`] refused so far: the command layer
/// compares it before and after a command to enforce the propagation
/// rule. Commands and their callbacks run on the server's main thread, so
/// in the module this is the server-wide count INFO reports (one load,
/// where a thread-local of a loaded library is a call on every command).
#[cfg(not(test))]
#[inline]
pub fn refusals_so_far() -> u64 {
    crate::metrics::TOTALS.guard_refusals.get()
}

// Unit tests run commands on many threads at once: there each thread
// counts its own refusals.
#[cfg(test)]
thread_local! {
    static REFUSALS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many allocations [`CommandGuard`] refused on this test's thread.
#[cfg(test)]
pub fn refusals_so_far() -> u64 {
    REFUSALS.with(std::cell::Cell::get)
}

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

/// The server's memory, as the guard reads it: the FFI layer asks the
/// server; unit tests give numbers.
pub trait ServerMemory {
    /// `used_memory` and `maxmemory`, read now, when a maxmemory is set.
    fn maxmemory_state(&self) -> Option<(u64, u64)>;
    /// `used_memory` now (see [`cached_used_memory`]).
    fn used_memory(&self) -> Option<u64>;
    /// What the machine or the cgroup allows (see [`budget`]).
    fn budget(&self) -> Option<Budget>;
}

/// A reading of `used_memory`, with the bytes promised and released at
/// that time.
#[derive(Clone, Copy)]
struct UsedReading {
    used: u64,
    promised: u64,
    released: u64,
}

static USED: Mutex<Option<Cached<UsedReading>>> = Mutex::new(None);

/// `used_memory` now: read (by `read`) at most every [`USED_TTL`], plus the
/// bytes promised since, less the bytes of values freed since (other frees,
/// a Cuckoo filter's compaction, a window's retired growth, are not
/// subtracted: the estimate errs high).
pub fn cached_used_memory(read: impl FnOnce() -> Option<u64>) -> Option<u64> {
    let (promised, released) = promised();
    let mut cached = USED.lock().unwrap_or_else(|e| e.into_inner());
    let reading = match cached.as_ref().filter(|c| c.at.elapsed() < USED_TTL) {
        Some(c) => c.value,
        None => {
            let used = read()?;
            let reading = UsedReading {
                used,
                promised,
                released,
            };
            *cached = Some(Cached {
                value: reading,
                at: Instant::now(),
            });
            reading
        }
    };
    Some(estimate(&reading, promised, released))
}

/// `used_memory` as of `reading`, plus what was promised and less what was
/// released since.
fn estimate(reading: &UsedReading, promised: u64, released: u64) -> u64 {
    reading
        .used
        .saturating_add(promised.saturating_sub(reading.promised))
        .saturating_sub(released.saturating_sub(reading.released))
}

/// Whether `request` fits: the per-filter cap `cap` (0: none), then
/// maxmemory, then the machine's budget.
pub fn check(memory: &dyn ServerMemory, cap: u64, request: AllocRequest) -> Result<(), Refusal> {
    if cap > 0 && request.filter_size_after > cap {
        return Err(Refusal {
            kind: RefusalKind::FilterCap,
            needed: request.filter_size_after,
            limit: cap,
            in_use: 0,
        });
    }
    let fresh = memory.maxmemory_state();
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
    let Some(budget) = memory.budget() else {
        return Ok(());
    };
    let used = match fresh {
        Some((used, _)) => used,
        None => memory.used_memory().unwrap_or(0),
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

/// The guard of a command (and of COPY): clients are refused what does not
/// fit, and each refusal is counted; commands from a master or an AOF never
/// are (see [`LoadGuard`]): this is the one place that decides it, for
/// every command and every type. Where the command comes from is only
/// looked up when an allocation is actually requested, so adds that
/// allocate nothing pay nothing. Every admitted request counts as promised
/// (see [`cached_used_memory`]).
pub struct CommandGuard<'a, E: Env + ?Sized> {
    pub env: &'a E,
    /// The key the memory is for, named in the warning of a load.
    pub key: &'a [u8],
    /// What the value is ("Bloom filter", "Cuckoo filter", ...), named in
    /// the warning of a load.
    pub what: &'static str,
}

impl<'a, E: Env + ?Sized> CommandGuard<'a, E> {
    pub fn new(env: &'a E, key: &'a [u8], what: &'static str) -> Self {
        CommandGuard { env, key, what }
    }
}

impl<E: Env + ?Sized> AllocGuard for CommandGuard<'_, E> {
    fn admit(&self, request: AllocRequest) -> Result<(), Refusal> {
        if self.env.replicated_or_loading() {
            return LoadGuard {
                env: self.env,
                key: self.key,
                what: self.what,
            }
            .admit(request);
        }
        let result = check(
            self.env.memory(),
            self.env.settings().max_filter_bytes,
            request,
        );
        match result {
            Ok(()) => promise(request.bytes),
            Err(_) => {
                crate::metrics::TOTALS.guard_refusals.incr();
                #[cfg(test)]
                REFUSALS.with(|r| r.set(r.get() + 1));
            }
        }
        result
    }
}

/// The guard of loading and replication: never refuses, since refusing
/// would lose data (and make a replica or an AOF replay differ from what
/// its master applied); logs what it would have refused, naming the key.
pub struct LoadGuard<'a, E: Env + ?Sized> {
    pub env: &'a E,
    pub key: &'a [u8],
    pub what: &'static str,
}

impl<E: Env + ?Sized> AllocGuard for LoadGuard<'_, E> {
    fn admit(&self, request: AllocRequest) -> Result<(), Refusal> {
        promise(request.bytes);
        let memory = self.env.memory();
        if let Err(refusal) = check(memory, self.env.settings().max_filter_bytes, request) {
            self.env.log_warning(&loading_over_limit(
                self.what,
                self.key,
                request.bytes,
                &refusal,
                memory,
            ));
        }
        Ok(())
    }
}

/// The one warning a load over a limit logs.
fn loading_over_limit(
    what: &str,
    key: &[u8],
    bytes: u64,
    refusal: &Refusal,
    memory: &dyn ServerMemory,
) -> String {
    format!(
        "loading {what} '{}' ({bytes} bytes) over a memory limit, allowed because \
         loading and replication are never refused: {}",
        printable(key),
        refusal_detail(refusal, memory)
    )
}

/// After an RDB or RESTORE value of `what` was read (its memory is already
/// in use): the warning of [`LoadGuard`] when the value is over the
/// per-filter cap or the server over its budget. Small values are not
/// checked, so that loading millions of them costs no INFO reading each;
/// every value's bytes count as promised.
pub fn check_loaded(
    env: &(impl Env + ?Sized),
    what: &str,
    key: &[u8],
    data_bytes: u64,
    reported_size: u64,
) {
    const CHECKED_FROM: u64 = 1 << 20;
    promise(data_bytes);
    if data_bytes < CHECKED_FROM {
        return;
    }
    let request = AllocRequest {
        bytes: 0,
        filter_size_after: reported_size,
    };
    let memory = env.memory();
    if let Err(refusal) = check(memory, env.settings().max_filter_bytes, request) {
        env.log_warning(&loading_over_limit(what, key, data_bytes, &refusal, memory));
    }
}

/// What a refusal says after the common prefix.
fn refusal_detail(refusal: &Refusal, memory: &dyn ServerMemory) -> String {
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
            let (source, total) = match memory.budget() {
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

/// The words RedisBloom answers a filter creation that cannot be allocated
/// with (2.8.2 for its Cuckoo filters; later versions for both types).
pub const CREATE_WORDS: &CStr = c"ERR Insufficient memory to create filter";

/// The words RedisBloom answers a Cuckoo filter's failed growth with.
pub const GROWTH_WORDS: &CStr = c"ERR Insufficient memory";

/// The error a client gets for a refused allocation: `words`, RedisBloom's
/// own reply to the command whose allocation failed (clients match on
/// them), then what was needed and which limit it would cross.
pub fn refusal_reply(words: &CStr, refusal: &Refusal, memory: &dyn ServerMemory) -> String {
    format!(
        "{}: {}",
        words.to_string_lossy(),
        refusal_detail(refusal, memory)
    )
}

/// The error a client gets for a refused creation (RESERVE, INSERT or an
/// add creating its filter, COPY).
pub fn refusal_message(refusal: &Refusal, memory: &dyn ServerMemory) -> String {
    refusal_reply(CREATE_WORDS, refusal, memory)
}

/// The error a client gets when a filter may not grow (a Cuckoo filter's
/// new sub-filter).
pub fn growth_refusal_message(refusal: &Refusal, memory: &dyn ServerMemory) -> String {
    refusal_reply(GROWTH_WORDS, refusal, memory)
}

/// The error when the allocator itself could not provide the memory (where
/// the server has a fallible calloc (see `ffi::alloc`), a failed allocation
/// comes back instead of aborting the server): `words` as in
/// [`refusal_reply`], then the bytes.
pub fn allocation_failed_reply(words: &CStr, bytes: u64) -> String {
    format!(
        "{}: the allocator could not provide {bytes} bytes",
        words.to_string_lossy()
    )
}

/// [`allocation_failed_reply`] of a creation.
pub fn allocation_failed_message(bytes: u64) -> String {
    allocation_failed_reply(CREATE_WORDS, bytes)
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// Fixed memory readings.
    #[derive(Clone, Copy, Default)]
    pub struct FixedMemory {
        /// (used_memory, maxmemory) when a maxmemory is set.
        pub maxmemory: Option<(u64, u64)>,
        pub used: Option<u64>,
        /// The machine limit (its 90% is allowed).
        pub machine: Option<u64>,
    }

    impl ServerMemory for FixedMemory {
        fn maxmemory_state(&self) -> Option<(u64, u64)> {
            self.maxmemory
        }
        fn used_memory(&self) -> Option<u64> {
            self.used
        }
        fn budget(&self) -> Option<Budget> {
            self.machine.map(|bytes| Budget {
                limit: MemoryLimit {
                    bytes,
                    source: LimitSource::CgroupV2,
                },
                allowed: bytes / 100 * ALLOWED_PERCENT,
            })
        }
    }

    fn request(bytes: u64, filter_size_after: u64) -> AllocRequest {
        AllocRequest {
            bytes,
            filter_size_after,
        }
    }

    #[test]
    fn checks_in_order() {
        let none = FixedMemory::default();
        let maxmemory = FixedMemory {
            maxmemory: Some((900, 1000)),
            used: Some(10),
            machine: Some(10_000),
        };
        let machine = FixedMemory {
            used: Some(8_950),
            machine: Some(10_000),
            ..FixedMemory::default()
        };
        let refusal = |kind, needed, limit, in_use| {
            Err(Refusal {
                kind,
                needed,
                limit,
                in_use,
            })
        };
        #[allow(clippy::type_complexity)]
        let cases: [(&str, FixedMemory, u64, AllocRequest, Result<(), Refusal>); 8] = [
            ("no limits", none, 0, request(1 << 40, 1 << 40), Ok(())),
            ("under the cap", none, 1000, request(10, 1000), Ok(())),
            (
                "over the cap",
                none,
                1000,
                request(10, 1001),
                refusal(RefusalKind::FilterCap, 1001, 1000, 0),
            ),
            (
                "the cap first",
                maxmemory,
                1000,
                request(500, 1001),
                refusal(RefusalKind::FilterCap, 1001, 1000, 0),
            ),
            ("fits maxmemory", maxmemory, 0, request(100, 100), Ok(())),
            (
                "over maxmemory",
                maxmemory,
                0,
                request(101, 101),
                refusal(RefusalKind::MaxMemory, 101, 1000, 900),
            ),
            ("fits the machine", machine, 0, request(50, 50), Ok(())),
            (
                "over the machine",
                machine,
                0,
                request(51, 51),
                refusal(RefusalKind::MachineMemory, 51, 9000, 8950),
            ),
        ];
        for (name, memory, cap, req, expected) in cases {
            assert_eq!(check(&memory, cap, req), expected, "{name}");
        }
    }

    /// Whatever a guard admits counts as promised, of any type (other
    /// tests running at the same time only add to it); between two
    /// readings of used_memory, the promised bytes are added and the
    /// released ones subtracted.
    #[test]
    fn admitted_bytes_of_any_type_count_until_the_next_reading() {
        use crate::command::testing::TestEnv;
        let env = TestEnv::with(|e| e.settings.max_filter_bytes = 10_000);
        let admit = |what, bytes| CommandGuard::new(&env, b"k", what).admit(request(bytes, bytes));
        let (before, _) = promised();
        assert!(admit("Cuckoo filter", 500).is_ok());
        assert!(admit("windowed filter", 700).is_ok());
        assert!(admit("Bloom filter", 20_000).is_err());
        assert!(promised().0 - before >= 1_200);
        let reading = UsedReading {
            used: 1_000,
            promised: 50,
            released: 10,
        };
        assert_eq!(estimate(&reading, 50, 10), 1_000);
        assert_eq!(estimate(&reading, 1_250, 10), 2_200);
        assert_eq!(estimate(&reading, 1_250, 710), 1_500);
        assert_eq!(estimate(&reading, 50, 5_010), 0);
    }

    #[test]
    fn refusals_name_their_numbers() {
        let memory = FixedMemory {
            machine: Some(10_000),
            ..FixedMemory::default()
        };
        let refusal = |kind| Refusal {
            kind,
            needed: 51,
            limit: 9000,
            in_use: 8950,
        };
        assert_eq!(
            refusal_message(&refusal(RefusalKind::MachineMemory), &memory),
            "ERR Insufficient memory to create filter: it needs 51 bytes and 8950 are in use, \
             over the 9000 bytes the server may use (90% of the cgroup memory limit, 10000 bytes)"
        );
        assert_eq!(
            refusal_message(&refusal(RefusalKind::FilterCap), &memory),
            "ERR Insufficient memory to create filter: the filter would take 51 bytes, over \
             bf.max-filter-bytes (9000 bytes)"
        );
        assert_eq!(
            refusal_message(&refusal(RefusalKind::MaxMemory), &memory),
            "ERR Insufficient memory to create filter: it needs 51 bytes and 8950 are in use, \
             over maxmemory (9000 bytes)"
        );
        // Other commands' words come first, the same numbers after them.
        assert_eq!(
            refusal_reply(
                c"ERR received bad data",
                &refusal(RefusalKind::FilterCap),
                &memory
            ),
            "ERR received bad data: the filter would take 51 bytes, over bf.max-filter-bytes \
             (9000 bytes)"
        );
        assert_eq!(
            growth_refusal_message(&refusal(RefusalKind::MaxMemory), &memory),
            "ERR Insufficient memory: it needs 51 bytes and 8950 are in use, over maxmemory \
             (9000 bytes)"
        );
        assert_eq!(
            allocation_failed_reply(c"Couldn't create filter!", 1 << 40),
            "Couldn't create filter!: the allocator could not provide 1099511627776 bytes"
        );
    }
}
