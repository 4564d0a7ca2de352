#![no_main]
//! See ferrobloom_core::topk::fuzzing::rdb.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ferrobloom_core::topk::fuzzing::rdb(data));
