//! A tenant's outcome histories as one decision reads them: once per candidate, thousands of
//! times. The colony keeps them in a `BTreeMap` (ordered, for its stored form), whose search
//! compares the name with ~6 others byte by byte; a hash of the names costs one pass over each.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use crate::heuristic::OutcomeStats;

pub(super) enum OutcomeIndex<'c> {
    /// Few lookups beside many histories: building the hash would cost more than it saves.
    Ordered(&'c BTreeMap<String, OutcomeStats>),
    Hashed(FxHashMap<&'c str, &'c OutcomeStats>),
}

impl<'c> OutcomeIndex<'c> {
    /// The index for `lookups` lookups into `outcomes`.
    pub(super) fn new(outcomes: &'c BTreeMap<String, OutcomeStats>, lookups: usize) -> Self {
        // A hashed name costs about a sixth of an ordered search, its insert about as much.
        if outcomes.is_empty() || outcomes.len() > 4 * lookups {
            return Self::Ordered(outcomes);
        }
        Self::Hashed(outcomes.iter().map(|(k, v)| (k.as_str(), v)).collect())
    }

    pub(super) fn get(&self, node: &str) -> Option<&'c OutcomeStats> {
        match self {
            Self::Ordered(map) => map.get(node),
            Self::Hashed(map) => map.get(node).copied(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms_find_what_the_map_holds() {
        let outcomes: BTreeMap<String, OutcomeStats> = (0..10)
            .map(|i| {
                let stats = OutcomeStats {
                    failures: f64::from(i),
                    ..Default::default()
                };
                (format!("node-{i}"), stats)
            })
            .collect();
        let hashed = OutcomeIndex::new(&outcomes, 10);
        let ordered = OutcomeIndex::new(&outcomes, 1);
        assert!(matches!(hashed, OutcomeIndex::Hashed(_)));
        assert!(matches!(ordered, OutcomeIndex::Ordered(_)));
        for name in ["node-0", "node-7", "node-10", "node", ""] {
            assert_eq!(hashed.get(name), outcomes.get(name), "{name}");
            assert_eq!(ordered.get(name), outcomes.get(name), "{name}");
        }
    }
}
