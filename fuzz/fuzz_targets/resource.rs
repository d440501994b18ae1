#![no_main]
//! Coverage-guided fuzzing of `peerpath::fuzzing::resource`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| peerpath::fuzzing::resource(data));
