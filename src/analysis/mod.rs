//! Analyses: pure functions of the model (classification, placement, rails).

pub mod cores;
pub mod place;
pub mod rails;
