//! FerroBloom's Bloom filter core, with no Redis dependency: sizing,
//! hashing, bit arrays under two allocation policies, the scalable chain,
//! and the SCANDUMP and RDB codecs with their validation.
//!
//! Every layout and formula here is RedisBloom 2.8.2's, so filters move
//! between the two modules byte for byte.

pub mod bitarray;
pub mod chain;
pub mod dump;
pub mod format;
#[doc(hidden)]
pub mod fuzzing;
pub mod hash;
pub mod link;
pub mod load_progress;
pub mod modulus;
pub mod plan;
pub mod rdb;
pub mod scandump;
pub mod sizing;
pub mod stats;

pub use bitarray::{AllocError, BitArray};
pub use chain::{
    AddOutcome, AllocGuard, AllocRequest, Chain, ChainParams, CreateError, Refusal, RefusalKind,
    Unguarded,
};
pub use hash::{HashPair, HashWidth};
pub use sizing::{LinkSpec, Policy, SizingError};
