//! FerroBloom: a Redis module with RedisBloom's Bloom filter commands, data
//! type and formats, built on the Redis-free core in `ferrobloom-core`.
//!
//! Layers (docs/architecture.md):
//! - `command`: the command layer, with no Redis in it: arguments, the key
//!   as a slot (missing / this type / another), the environment, one error
//!   type, the reply tree and the `Outcome` every command returns.
//! - `datatype`: what every data type is to the server (the `DataType`
//!   trait: name, encoding version, RDB, AOF, memory, digest, copy,
//!   defrag) and the vocabulary its callbacks speak (`AofRecord`,
//!   `DigestSink`).
//! - one folder per data type: `bloom` (commands, grammar, creation and
//!   propagation decisions, the data type's callbacks, the filter wrapper),
//!   `cuckoo` (Cuckoo filters, type `MBbloomCF`, the CF.* commands),
//!   `window` (windowed filters, type `FBwindows`, under the same BF.*
//!   commands).
//! - shared parts: `config` (settings), `metrics` (INFO totals), `guard`
//!   (the memory guard) with `memory_limit`, `notify` (keyspace events).
//! - `ffi`: the only place that calls the Redis module API, with every
//!   `unsafe` block of the crate.

mod bloom;
mod cms;
mod command;
mod config;
mod cuckoo;
mod datatype;
mod ffi;
mod guard;
mod loading;
mod memory_limit;
mod metrics;
mod notify;
mod tdigest;
mod topk;
mod window;

use ffi::module::init;
use redis_module::redis_module;

/// RedisBloom's module version number: clients detect the module by its
/// name `bf` and gate features on this number.
pub const MODULE_VERSION: i32 = 20802;

redis_module! {
    name: "bf",
    version: MODULE_VERSION,
    allocator: (ffi::alloc::RedisAllocator, ffi::alloc::RedisAllocator),
    data_types: [],
    init: init,
    commands: [],
}
