#![no_main]
//! Coverage-guided fuzzing of `peerpath::fuzzing::fabric_map`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| peerpath::fuzzing::fabric_map(data));
