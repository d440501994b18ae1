//! Renderers: each turns the model (or analysis results) into one output format. No renderer
//! computes anything the model or analysis did not.

pub mod linkfmt;
pub mod matrix;
pub mod tree;
pub mod audit;
