#![no_main]
//! Coverage-guided fuzzing of `peerpath::fuzzing::evidence`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| peerpath::fuzzing::evidence(data));
