//! Subcommand implementations too long for `main.rs`.

pub mod audit;
