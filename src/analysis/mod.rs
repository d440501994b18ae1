//! Analyses: pure functions over a [`crate::model::Topology`] (plus probe evidence) that judge
//! paths and the node.

pub mod audit;
