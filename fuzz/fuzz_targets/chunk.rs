#![no_main]
//! See ferrobloom_core::bloom::fuzzing::chunk.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ferrobloom_core::bloom::fuzzing::chunk(data));
