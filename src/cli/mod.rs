//! Subcommands of the `peerpath` binary that are more than a few lines.

pub mod audit;
pub mod classify;
pub mod fixture;
pub mod probe;
pub mod report;
