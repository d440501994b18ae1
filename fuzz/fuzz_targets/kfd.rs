#![no_main]
//! Coverage-guided fuzzing of `peerpath::fuzzing::kfd`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| peerpath::fuzzing::kfd(data));
