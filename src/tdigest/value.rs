//! The value stored under a key of type `TDIS-TYPE`, and how reads and
//! writes keep a master's answers 2.8.2's while its replicas and AOF stay
//! in step ("compress lazily, propagate with the next write").
//!
//! RedisBloom 2.8.2 compresses the stored digest on every read (QUANTILE,
//! CDF, RANK, REVRANK, BYRANK, BYREVRANK, TRIMMED_MEAN, MERGE's sources),
//! and nothing of it reaches replicas or the AOF. A read here never
//! changes the stored digest `S` (a read is `readonly`: it may run during
//! `CLIENT PAUSE WRITE` or in a read-only script, where nothing may be
//! propagated). Instead the value holds:
//!
//! - a **view**: compress(S), made by the first read after a change of
//!   `S` that has points to merge, kept for the reads that follow until the
//!   next change (so repeated reads cost what 2.8.2's do), asked of the
//!   memory guard, counted in MEMORY USAGE;
//! - **pending** (P): on this master, a read by a client allowed to write
//!   the key has compressed the digest as its clients see it: the value
//!   they see is compress(S). The next client write installs compress(S)
//!   as `S` and propagates a compressing read (the marker, `TDIGEST.QUANTILE
//!   key 0`) before itself, so replicas and the AOF compress at the same
//!   place. A FerroBloom replica or an AOF load compresses `S` on a
//!   compressing read from the master link or the load; RedisBloom 2.8.2
//!   compresses on any read, so its replicas follow too.
//!
//! On a replica, for a user who may not write the key, or when no user is
//! known, a read uses the view only and P stays as it was: such a read
//! changes nothing anywhere. Writes from the master link or a load ignore
//! P (their master decided) and clear it.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use ferrobloom_core::tdigest::{CompressError, Compressed, CreateError, Info, ReadError, TDigest};
use ferrobloom_core::{AllocGuard, AllocRequest};

use super::counted::Counted;

/// Counts the saves this process began: a fork (BGSAVE, a replica's full
/// sync, an AOF rewrite) or a save in the main process (SAVE, DEBUG
/// RELOAD, shutdown). Saves write compress(S) in 2.8.2's bytes, the only
/// encoding 2.8.2 loads, so whatever loads one (a replica after its full
/// sync, an AOF replay with an RDB preamble, this server restarted) holds
/// compress(S): a value changed before the latest save is owed a compress
/// like a read's (see [`TDigestValue::owes_compress`]).
#[cfg(not(test))]
static SAVES_BEGUN: AtomicU64 = AtomicU64::new(0);

// Unit tests run side by side on threads of one process: each has its own
// count, so one test's save does not change another's values.
#[cfg(test)]
thread_local! {
    static SAVES_BEGUN: AtomicU64 = const { AtomicU64::new(0) };
}

fn saves_begun() -> u64 {
    #[cfg(not(test))]
    return SAVES_BEGUN.load(Relaxed);
    #[cfg(test)]
    return SAVES_BEGUN.with(|n| n.load(Relaxed));
}

/// A save begins (called from the server's fork and persistence events,
/// in the main process, before the save reads any value).
pub fn save_begins() {
    #[cfg(not(test))]
    SAVES_BEGUN.fetch_add(1, Relaxed);
    #[cfg(test)]
    SAVES_BEGUN.with(|n| n.fetch_add(1, Relaxed));
}

/// compress(S), kept for the reads until the next change of S.
#[derive(Debug)]
struct View {
    digest: TDigest,
    /// What the guard admitted for it (released on drop).
    bytes: u64,
}

impl Drop for View {
    fn drop(&mut self) {
        crate::guard::release(self.bytes);
    }
}

#[derive(Debug)]
pub struct TDigestValue {
    digest: TDigest,
    view: Option<View>,
    pending: bool,
    /// The count of saves begun when S last changed: a save begun since then wrote
    /// compress(S).
    changed_before_save: u64,
    /// What INFO bf counts for it (`super::counted`).
    pub(super) counted: Counted,
}

/// What a read does to the value besides answering (see the module
/// documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadEffect {
    /// Answer from the view (or S when compressed); change nothing.
    ViewOnly,
    /// A client's read on a master, by a user who may write the key: the
    /// clients' digest is compress(S) from now on (P).
    Pend,
    /// From the master link or a load: compress S itself, as the master
    /// did when it sent this read.
    CompressStored,
}

impl TDigestValue {
    pub fn new(digest: TDigest) -> Box<TDigestValue> {
        let counted = Counted::enter(&digest);
        Box::new(TDigestValue {
            digest,
            view: None,
            pending: false,
            changed_before_save: saves_begun(),
            counted,
        })
    }

    /// A value read from RDB or RESTORE data (made by
    /// [`TDigestValue::loaded`]). A compressed digest with centroids may be
    /// the save of a master's pending value (saved as its clients saw it),
    /// whose replicas still hold it uncompressed: it is pending, so the
    /// next client write sends the marker (a no-op where the digest
    /// already is compressed).
    pub fn as_loaded(mut self: Box<Self>) -> Box<Self> {
        self.pending = self.digest.merged_nodes() > 0 && self.digest.unmerged_nodes() == 0;
        self
    }

    /// A COPY of `original` (made by [`TDigestValue::copied`]) keeps its
    /// P: the copy owes its replicas the same compress (they copy S).
    pub fn with_pending_of(mut self: Box<Self>, original: &TDigestValue) -> Box<Self> {
        self.pending = original.pending;
        self
    }

    /// The stored digest S (what replicas hold).
    #[inline]
    pub fn digest(&self) -> &TDigest {
        &self.digest
    }

    /// S, for a write: the view no longer is compress(S) and goes. P is
    /// the write's to handle ([`TDigestValue::before_write`]).
    #[inline]
    pub fn digest_mut(&mut self) -> &mut TDigest {
        self.view = None;
        self.changed_before_save = saves_begun();
        &mut self.digest
    }

    /// Whether the digest as clients see it on a master is compress(S)
    /// while S has points to merge: a read left it so (P), or a save begun
    /// since S last changed wrote compress(S), which whatever loads that
    /// save holds. The next client write then installs compress(S) and
    /// sends the marker, so every copy continues from the same digest.
    /// (P alone when S is compressed: a value loaded compressed may be the
    /// save of a master whose replicas hold it uncompressed.)
    fn owes_compress(&self) -> bool {
        self.pending || (!self.digest.is_compressed() && self.changed_before_save != saves_begun())
    }

    /// Whether a read left a compress owed to replicas (P).
    #[cfg(test)]
    pub fn pending(&self) -> bool {
        self.pending
    }

    /// Whether a compress is owed to replicas, by a read or a save.
    #[cfg(test)]
    pub fn owes(&self) -> bool {
        self.owes_compress()
    }

    /// Before a write changes S: with P set and the write from a client
    /// (`from_client`), S becomes compress(S), P is cleared and the result
    /// is true: the write must propagate the marker first. From the master
    /// link or a load, P is only cleared. Err: the compress failed
    /// (unreachable with 64-bit weights), nothing changed but P.
    pub fn before_write(&mut self, from_client: bool) -> Result<bool, CompressError> {
        let owed = self.owes_compress() && from_client;
        self.pending = false;
        if owed {
            self.compress_stored()?;
        }
        Ok(owed)
    }

    /// S becomes compress(S) (from the view when there is one), P is
    /// cleared. True when S changed.
    pub fn compress_stored(&mut self) -> Result<bool, CompressError> {
        self.pending = false;
        self.changed_before_save = saves_begun();
        if self.digest.is_compressed() {
            self.view = None;
            return Ok(false);
        }
        match self.view.take() {
            Some(view) => self.digest.install(&view.digest),
            None => self.digest.compress()?,
        }
        Ok(true)
    }

    /// What a compressing read does, decided from where it runs: see
    /// [`ReadEffect`]. `user_may_write` is asked only when the answer
    /// depends on it (a client on a master, S not compressed, P not set).
    pub fn read_effect(
        &self,
        replicated_or_loading: bool,
        is_master: bool,
        user_may_write: impl FnOnce() -> Option<bool>,
    ) -> ReadEffect {
        if replicated_or_loading {
            return ReadEffect::CompressStored;
        }
        if !is_master || self.owes_compress() || self.digest.is_compressed() {
            return ReadEffect::ViewOnly;
        }
        match user_may_write() {
            Some(true) => ReadEffect::Pend,
            _ => ReadEffect::ViewOnly,
        }
    }

    /// compress(S) for a read: S itself when compressed, else the view,
    /// made (through `guard`) when missing.
    pub fn compressed(&mut self, guard: &dyn AllocGuard) -> Result<Compressed<'_>, ReadError> {
        if self.digest.is_compressed() {
            return Ok(self.digest.view().expect("a compressed digest has a view"));
        }
        if self.view.is_none() {
            let bytes = self.digest.compressed_copy_bytes();
            guard
                .admit(AllocRequest {
                    bytes,
                    filter_size_after: self.digest.memory_usage() as u64 + bytes,
                })
                .map_err(|r| ReadError::Scratch(CreateError::Refused(r)))?;
            let digest = self
                .digest
                .compressed_copy(&ferrobloom_core::Unguarded)
                .inspect_err(|_| crate::guard::release(bytes))?;
            self.view = Some(View { digest, bytes });
        }
        let view = self.view.as_ref().expect("made above");
        Ok(view.digest.view().expect("a compressed copy is compressed"))
    }

    /// Sets P: a client's read on this master compressed the digest its
    /// clients see.
    pub fn set_pending(&mut self) {
        if !self.digest.is_compressed() {
            self.pending = true;
        }
    }

    /// TDIGEST.INFO's numbers: compress(S)'s when P is set on a master
    /// (2.8.2's INFO after a read), S's otherwise.
    pub fn info(&mut self, is_master: bool, guard: &dyn AllocGuard) -> Result<Info, ReadError> {
        if is_master && self.owes_compress() {
            return self.compressed(guard).map(|c| c.digest().info());
        }
        Ok(self.digest.info())
    }

    /// `f` on compress(S), without changing the value: S, the view, or a
    /// scratch copy (not asked of the guard: saves and DEBUG DIGEST must
    /// not fail).
    pub fn with_compressed<R>(&self, f: impl FnOnce(&TDigest) -> R) -> R {
        if self.digest.is_compressed() {
            return f(&self.digest);
        }
        if let Some(view) = &self.view {
            return f(&view.digest);
        }
        match self.digest.compressed_copy(&ferrobloom_core::Unguarded) {
            Ok(copy) => f(&copy),
            // Unreachable with 64-bit weights; the state as it is beats
            // no answer.
            Err(_) => f(&self.digest),
        }
    }

    /// The bytes of the node array (what the guard admitted for it).
    pub fn node_bytes(&self) -> u64 {
        16 * self.digest.capacity() as u64
    }

    /// The view's bytes while it exists.
    pub fn view_bytes(&self) -> u64 {
        self.view.as_ref().map_or(0, |v| v.bytes)
    }
}

impl Drop for TDigestValue {
    fn drop(&mut self) {
        // May run on the lazy-free thread: only the shared counters (the
        // view releases its own bytes).
        crate::guard::release(self.node_bytes());
        self.counted.leave();
    }
}
