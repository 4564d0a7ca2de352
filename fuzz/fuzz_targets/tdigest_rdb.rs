#![no_main]
//! See ferrobloom_core::tdigest::fuzzing::rdb.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ferrobloom_core::tdigest::fuzzing::rdb(data));
