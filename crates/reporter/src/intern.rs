//! Shared copies of the strings that repeat across cached objects: namespaces, node names,
//! controller kinds and names, label keys and values, container names, reasons. 150,000 pods
//! name a few dozen namespaces and a few thousand nodes: each is kept once and every record
//! holds a reference to it (16 bytes) instead of its own copy.
//!
//! A string no record holds any more (a deleted ReplicaSet's name) is dropped by the next
//! sweep, which runs when the table has doubled since the last one: the table stays within
//! twice the strings in use, at a cost amortised over the insertions.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// The smallest table size at which a sweep runs.
const MIN_SWEEP: usize = 1_024;

#[derive(Debug, Default)]
pub struct Interner {
    table: Mutex<Table>,
}

#[derive(Debug, Default)]
struct Table {
    strings: HashSet<Arc<str>>,
    /// Size after the last sweep.
    swept_at: usize,
}

impl Interner {
    /// The shared copy of `s`.
    pub fn get(&self, s: &str) -> Arc<str> {
        let mut t = self.table.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(shared) = t.strings.get(s) {
            return shared.clone();
        }
        if t.strings.len() >= (2 * t.swept_at).max(MIN_SWEEP) {
            t.strings.retain(|s| Arc::strong_count(s) > 1);
            t.swept_at = t.strings.len();
        }
        let shared: Arc<str> = Arc::from(s);
        t.strings.insert(shared.clone());
        shared
    }

    /// Strings in the table (some may be held by nothing else until the next sweep).
    pub fn len(&self) -> usize {
        self.table
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .strings
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_copy_per_string_and_unused_ones_are_swept() {
        let i = Interner::default();
        let a = i.get("team-a");
        let b = i.get("team-a");
        assert!(Arc::ptr_eq(&a, &b));
        // Fill past the sweep threshold with strings nobody keeps: the table does not grow
        // beyond twice what is in use (here: "team-a" and the newest).
        for n in 0..10 * MIN_SWEEP {
            i.get(&format!("rs-{n}"));
        }
        assert!(i.len() <= MIN_SWEEP + 1, "{}", i.len());
        assert!(Arc::ptr_eq(&a, &i.get("team-a")), "a held string survives");
    }
}
