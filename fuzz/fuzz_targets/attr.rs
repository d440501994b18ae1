#![no_main]
//! Coverage-guided fuzzing of `peerpath::fuzzing::attr`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| peerpath::fuzzing::attr(data));
