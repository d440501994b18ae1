#![no_main]
//! Coverage-guided fuzzing of `peerpath::fuzzing::aer`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| peerpath::fuzzing::aer(data));
