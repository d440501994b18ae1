#![no_main]
//! Coverage-guided fuzzing of `peerpath::fuzzing::bdf`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| peerpath::fuzzing::bdf(data));
