#![no_main]
//! Coverage-guided fuzzing of `peerpath::fuzzing::snapshot`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| peerpath::fuzzing::snapshot(data));
