#![no_main]
//! Coverage-guided fuzzing of `peerpath::fuzzing::ib`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| peerpath::fuzzing::ib(data));
