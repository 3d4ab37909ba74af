use serde::{Deserialize, Serialize};

use crate::demand::WorkloadClass;

/// What the colony remembers about one prioritize call, keyed by pod UID, until the placement
/// is confirmed or the decision expires. Only the best `decision_keep_top` candidates' η are
/// kept (bounded storage per pod); kube-scheduler nearly always binds one of those.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    pub created_ms: u64,
    pub workload: WorkloadClass,
    pub candidate_count: usize,
    /// (node, η) of the best-scored candidates, best first.
    pub etas: Vec<(String, f64)>,
}

impl Decision {
    /// The quality of a placement on `node`: its η at decision time. For a node outside the
    /// remembered set, the smallest remembered η (it scored no better than those). `exact` tells
    /// which case applied; `None` when the node was not a candidate at all.
    pub fn quality_of(&self, node: &str) -> Option<(f64, bool)> {
        if let Some((_, eta)) = self.etas.iter().find(|(n, _)| n == node) {
            return Some((*eta, true));
        }
        if self.candidate_count > self.etas.len() {
            let floor = self.etas.iter().map(|(_, e)| *e).fold(f64::INFINITY, f64::min);
            return floor.is_finite().then_some((floor, false));
        }
        None
    }
}
