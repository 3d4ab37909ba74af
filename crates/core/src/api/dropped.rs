//! Why a colony refused an item of a batch: the key of every `dropped` map a colony answers and
//! stores, and the `reason` label of `aco_colony_items_dropped_total`. An enum, so that a reason
//! is spelled once and a reply cannot carry one the metric does not know.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DropReason {
    /// A decision record (a copy's or the colony's own) that does not validate.
    InvalidDecision,
    /// A placement report that does not validate.
    InvalidPlacement,
    /// A shadow report that does not validate.
    InvalidShadowReport,
}

impl DropReason {
    /// The label value, as serde spells it.
    pub fn label(self) -> &'static str {
        match self {
            DropReason::InvalidDecision => "invalid_decision",
            DropReason::InvalidPlacement => "invalid_placement",
            DropReason::InvalidShadowReport => "invalid_shadow_report",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn the_label_is_the_wire_spelling_and_a_map_keyed_by_reason_reads_back() {
        for r in [
            DropReason::InvalidDecision,
            DropReason::InvalidPlacement,
            DropReason::InvalidShadowReport,
        ] {
            assert_eq!(
                serde_json::to_string(&r).unwrap(),
                format!("\"{}\"", r.label())
            );
        }
        let stored = r#"{"invalid_decision":2,"invalid_shadow_report":1}"#;
        let map: BTreeMap<DropReason, u64> = serde_json::from_str(stored).unwrap();
        assert_eq!(serde_json::to_string(&map).unwrap(), stored);
        assert!(serde_json::from_str::<BTreeMap<DropReason, u64>>(r#"{"other":1}"#).is_err());
    }
}
