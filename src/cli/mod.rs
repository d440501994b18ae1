//! Subcommands of the `peerpath` binary that are more than a few lines.

pub mod audit;
pub mod capture;
pub mod classify;
pub mod evidence;
pub mod export;
pub mod fixture;
pub mod launch;
pub mod place;
pub mod probe;
pub mod rails;
pub mod report;
