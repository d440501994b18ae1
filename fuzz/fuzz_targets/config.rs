#![no_main]
//! Coverage-guided fuzzing of `peerpath::fuzzing::config`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| peerpath::fuzzing::config(data));
