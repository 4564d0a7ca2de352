#![no_main]
//! See ferrobloom_core::bloom::fuzzing::header.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ferrobloom_core::bloom::fuzzing::header(data));
