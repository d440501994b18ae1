#![no_main]
//! Coverage-guided fuzzing of `peerpath::fuzzing::lspci_text`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| peerpath::fuzzing::lspci_text(data));
