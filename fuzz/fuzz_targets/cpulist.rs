#![no_main]
//! Coverage-guided fuzzing of `peerpath::fuzzing::cpulist`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| peerpath::fuzzing::cpulist(data));
