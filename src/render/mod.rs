//! Renderers: each turns the model (or analysis results) into one output format. No renderer
//! computes anything the model or analysis did not.

pub mod audit;
pub mod cabling;
pub mod diff;
pub mod dot;
pub mod dra;
pub mod escape;
pub mod evidence;
pub mod fleet;
pub mod gres;
pub mod html;
pub mod layout;
pub mod matrix;
pub mod nccl_xml;
pub mod nfd;
pub mod place;
pub mod png;
pub mod png_cull;
pub mod png_deflate;
pub mod probe;
pub mod prom;
pub mod rails;
pub mod rocm_smi;
pub mod schedtopo;
pub mod storage_probe;
pub mod svg;
pub mod terminal;
pub mod tree;
