#![no_main]
//! Coverage-guided fuzzing of `peerpath::fuzzing::sosreport`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| peerpath::fuzzing::sosreport(data));
