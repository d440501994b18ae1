//! A value that was read, or the reason it could not be.

use serde::{Deserialize, Serialize};

/// A fact about the machine: either its value, or why peerpath could not read it
/// (not root, file absent, VM). Never a default that looks like a fact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fact<T> {
    /// The value, as read.
    Known(T),
    /// The reason the value is unknown.
    Unknown(String),
}

impl<T> Fact<T> {
    /// The value if known.
    pub fn known(&self) -> Option<&T> {
        match self {
            Fact::Known(v) => Some(v),
            Fact::Unknown(_) => None,
        }
    }
    /// The reason if unknown.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Fact::Known(_) => None,
            Fact::Unknown(r) => Some(r),
        }
    }
    /// Maps the known value.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Fact<U> {
        match self {
            Fact::Known(v) => Fact::Known(f(v)),
            Fact::Unknown(r) => Fact::Unknown(r),
        }
    }
}

impl<T> Default for Fact<T> {
    fn default() -> Self {
        Fact::Unknown("not read".into())
    }
}
