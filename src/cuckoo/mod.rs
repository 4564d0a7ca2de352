//! Cuckoo filters (RedisBloom's type `MBbloomCF`) in the module: the data
//! type, so that RDB files, DUMP payloads and AOF files holding Cuckoo
//! filters load, save and move byte for byte (the structure is
//! `ferrobloom_core::cuckoo`). The CF.* commands come next.

pub mod datatype;
mod value;

pub use value::Cuckoo;
