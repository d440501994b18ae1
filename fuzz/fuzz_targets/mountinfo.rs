#![no_main]
//! Coverage-guided fuzzing of `peerpath::fuzzing::mountinfo`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| peerpath::fuzzing::mountinfo(data));
