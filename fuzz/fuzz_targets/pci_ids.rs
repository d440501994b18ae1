#![no_main]
//! Coverage-guided fuzzing of `peerpath::fuzzing::pci_ids`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| peerpath::fuzzing::pci_ids(data));
