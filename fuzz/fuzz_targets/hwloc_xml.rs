#![no_main]
//! Coverage-guided fuzzing of `peerpath::fuzzing::hwloc_xml` (hwloc XML).
libfuzzer_sys::fuzz_target!(|data: &[u8]| peerpath::fuzzing::hwloc_xml(data));
