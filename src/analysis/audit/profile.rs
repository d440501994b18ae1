//! Expected-layout profiles (placeholder until classify lands).

use super::{Ctx, Finding};

/// An expected layout.
#[derive(Debug, Clone, Default)]
pub struct Profile {
    /// Name.
    pub name: String,
}

/// Diffs the node against a profile.
pub fn diff(_ctx: &Ctx, _p: &Profile) -> Vec<Finding> {
    Vec::new()
}
