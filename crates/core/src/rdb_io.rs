//! Typed reads and writes of a serialized module value, as the module API
//! offers them (RedisModule_Load* / RedisModule_Save*): the interface every
//! data type's RDB codec is written against, so that codecs run without a
//! server (the module implements it over the API, [`crate::dump_format`]
//! over DUMP payloads).

use crate::bitarray::BitArray;

/// A failed read (the module API reported an IO error), or data that does
/// not describe a valid filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RdbError {
    Io,
    Invalid(&'static str),
}

/// Typed reads from a serialized value (RedisModule_Load*).
pub trait RdbInput {
    fn read_unsigned(&mut self) -> Result<u64, RdbError>;
    fn read_double(&mut self) -> Result<f64, RdbError>;
    /// A string field, as an owned bit array (the module adopts the buffer
    /// Redis allocated instead of copying it).
    fn read_bit_array(&mut self) -> Result<BitArray, RdbError>;
}

/// Typed writes (RedisModule_Save*).
pub trait RdbOutput {
    fn write_unsigned(&mut self, value: u64);
    fn write_double(&mut self, value: f64);
    fn write_bytes(&mut self, bytes: &[u8]);
}
