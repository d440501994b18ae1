#![no_main]
//! Coverage-guided fuzzing of `peerpath::fuzzing::control`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| peerpath::fuzzing::control(data));
