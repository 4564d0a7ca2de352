//! FerroBloom's core, with no Redis dependency.
//!
//! The tree shows the architecture: one folder per data type, the parts any
//! type may use beside them.
//!
//! - [`bloom`]: the scalable Bloom filter (sizing, links, the chain with its
//!   add and lookup engines, planning, stats, and its SCANDUMP, RDB and DUMP
//!   codecs). A new type (Cuckoo, Count-Min, ...) is a new folder like it.
//! - [`cuckoo`]: the Cuckoo filter (sub-filters of one-byte fingerprint
//!   slots, kick-outs, compaction, and its SCANDUMP, RDB and DUMP codecs).
//! - [`cms`]: the Count-Min sketch (RedisBloom 2.8.2's cells and RDB
//!   bytes, 8.12's cell sizes, signed increments and atomic overflow; its
//!   merge, planning, stats, and RDB and DUMP codecs).
//! - [`topk`]: Top-K (HeavyKeeper as RedisBloom 2.8.2 runs it: its
//!   buckets, heap and RDB bytes, with a deterministic decay coin,
//!   binary-safe items, planning, stats, and RDB and DUMP codecs).
//! - [`tdigest`]: the t-digest (RedisBloom 2.8.2's merging t-digest with
//!   its exact doubles and RDB bytes; compress apart from evaluation so
//!   reads need not change the stored digest; merge, planning, stats,
//!   Redis' double formats, and RDB and DUMP codecs).
//! - [`window`]: Bloom filters that forget items older than a retention
//!   window (generations of plain Bloom filters in fixed memory).
//! - Shared: [`alloc_guard`] (what every engine asks before it allocates),
//!   [`hash`] (MurmurHash64A / MurmurHash2), [`bitarray`] (fallibly
//!   allocated, huge-page-advised, prefetchable bit arrays), [`modulus`]
//!   (division-free reduction to a table size), [`format`](mod@format) (C's `%g`),
//!   [`rdb_io`] (the typed reads and writes of a module value), [`received`]
//!   (the progress of a LOADCHUNK sequence) and
//!   [`dump_format`] (Redis' DUMP framing of a module value).
//!
//! Every layout and formula here is RedisBloom's, so filters move between
//! the two modules byte for byte.
//!
//! A type's modules are reached through its folder
//! (`ferrobloom_core::bloom::rdb`, `ferrobloom_core::cuckoo::rdb`, ...), so
//! that every type can have an `rdb`, a `scandump` or a `plan` of its own.
//! The crate's top re-exports only types whose names say what they are.

pub mod alloc_guard;
pub mod bitarray;
pub mod bloom;
pub mod cms;
pub mod cuckoo;
pub mod dump_format;
pub mod format;
pub mod hash;
pub mod modulus;
pub mod rdb_io;
pub mod received;
pub mod tdigest;
pub mod topk;
pub mod window;

pub use alloc_guard::{AllocGuard, AllocRequest, Refusal, RefusalKind, Unguarded};
pub use bitarray::{AllocError, BitArray};
pub use bloom::chain::{AddOutcome, Chain, ChainParams, CreateError};
pub use bloom::sizing::{LinkSpec, Policy, SizingError};
pub use hash::{HashPair, HashWidth};
