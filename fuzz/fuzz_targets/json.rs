#![no_main]
//! Coverage-guided fuzzing of `peerpath::fuzzing::json`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| peerpath::fuzzing::json(data));
