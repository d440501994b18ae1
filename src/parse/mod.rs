//! Pure parsers of kernel file formats: bytes in, typed values out. No file I/O here; the
//! sources read files and hand the bytes to these functions.

pub mod aer;
pub mod attr;
pub mod config;
pub mod cpulist;
pub mod ib;
pub mod resource;
