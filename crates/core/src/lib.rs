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
//! - [`window`]: Bloom filters that forget items older than a retention
//!   window (generations of plain Bloom filters in fixed memory).
//! - Shared: [`hash`] (MurmurHash64A / MurmurHash2), [`bitarray`] (fallibly
//!   allocated, huge-page-advised, prefetchable bit arrays), [`modulus`]
//!   (division-free reduction to a table size), [`format`](mod@format) (C's `%g`),
//!   [`rdb_io`] (the typed reads and writes of a module value), [`received`]
//!   (the progress of a LOADCHUNK sequence) and
//!   [`dump_format`] (Redis' DUMP framing of a module value).
//!
//! Every layout and formula here is RedisBloom's, so filters move between
//! the two modules byte for byte.
//!
//! The Bloom modules are also reachable at the crate's top
//! (`ferrobloom_core::chain`, `ferrobloom_core::scandump`, ...), the paths
//! the module, the tool and the tests use.

pub mod bitarray;
pub mod bloom;
pub mod cuckoo;
pub mod dump_format;
pub mod format;
pub mod hash;
pub mod modulus;
pub mod rdb_io;
pub mod received;
pub mod window;

#[doc(hidden)]
pub use bloom::fuzzing;
pub use bloom::{chain, link, load_progress, plan, rdb, scandump, sizing, stats};

/// DUMP payloads: the shared framing and the Bloom filter's payload.
pub mod dump {
    pub use crate::bloom::dump::*;
    pub use crate::dump_format::*;
}

pub use bitarray::{AllocError, BitArray};
pub use chain::{
    AddOutcome, AllocGuard, AllocRequest, Chain, ChainParams, CreateError, Refusal, RefusalKind,
    Unguarded,
};
pub use hash::{HashPair, HashWidth};
pub use sizing::{LinkSpec, Policy, SizingError};
