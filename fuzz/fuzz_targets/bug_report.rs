#![no_main]
//! Coverage-guided fuzzing of `peerpath::fuzzing::bug_report`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| peerpath::fuzzing::bug_report(data));
