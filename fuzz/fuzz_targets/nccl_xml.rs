#![no_main]
//! Coverage-guided fuzzing of `peerpath::fuzzing::nccl_xml` (NCCL topology XML).
libfuzzer_sys::fuzz_target!(|data: &[u8]| peerpath::fuzzing::nccl_xml(data));
