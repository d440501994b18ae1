//! The warnings of one source (the KFD topology, the GDS files and mount table), capped: the
//! first [`MAX_WARNINGS_PER_SOURCE`] are kept with their path, the rest counted and said in one
//! last warning, so that a tree of a million bad files costs a count, not a million messages
//! (issue 41: 200 KFD io_links naming one file of bad lines made 10^8 warnings).

use crate::model::topology::Warning;

/// Warnings one source keeps; the rest are counted.
pub const MAX_WARNINGS_PER_SOURCE: usize = 100;

/// The warnings of one source as it reads.
#[derive(Debug)]
pub struct SourceWarnings {
    list: Vec<Warning>,
    dropped: usize,
    source: &'static str,
    root: String,
}

impl SourceWarnings {
    /// An empty list for `source` (`KFD topology`), whose warnings lie under `root` (the path
    /// the summary names).
    pub fn new(source: &'static str, root: impl Into<String>) -> Self {
        SourceWarnings {
            list: Vec::new(),
            dropped: 0,
            source,
            root: root.into(),
        }
    }

    /// Adds a warning; the message is only built while fewer than the cap are kept.
    pub fn push(&mut self, path: impl std::fmt::Display, message: impl FnOnce() -> String) {
        if self.list.len() < MAX_WARNINGS_PER_SOURCE {
            self.list.push(Warning {
                path: path.to_string(),
                message: message(),
            });
        } else {
            self.dropped += 1;
        }
    }

    /// Warnings counted past the cap.
    pub fn dropped(&self) -> usize {
        self.dropped
    }

    /// The kept warnings, and one more saying how many were not kept.
    pub fn finish(mut self) -> Vec<Warning> {
        if self.dropped > 0 {
            self.list.push(Warning {
                path: self.root,
                message: format!(
                    "{} more warning(s) of the {} not listed (the first {MAX_WARNINGS_PER_SOURCE} are)",
                    self.dropped, self.source
                ),
            });
        }
        self.list
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_the_cap_warnings_are_counted_and_said() {
        let mut w = SourceWarnings::new("KFD topology", "/sys/class/kfd");
        let mut built = 0;
        for i in 0..1000 {
            w.push(i, || {
                built += 1;
                "bad".into()
            });
        }
        assert_eq!(built, MAX_WARNINGS_PER_SOURCE);
        let l = w.finish();
        assert_eq!(l.len(), MAX_WARNINGS_PER_SOURCE + 1);
        assert!(
            l.last()
                .unwrap()
                .message
                .starts_with("900 more warning(s) of the KFD topology")
        );
    }
}
