//! Subcommand implementations (argument structs and their `run`).

pub mod export;
pub mod place;
pub mod rails;
