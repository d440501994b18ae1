#![no_main]
//! Coverage-guided fuzzing of `peerpath::fuzzing::cufile`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| peerpath::fuzzing::cufile(data));
