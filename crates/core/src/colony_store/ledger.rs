//! The rows' contents: a ledger entry (one commit) and the snapshot (the whole state).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::explained::ConfirmedExplanation;
use super::pod_index::IndexChange;
use super::schema::SnapshotRow;
use super::{corrupt, CorruptState, StoreMeta};
use crate::colony::{Decision, TenantColony};
use crate::names::PodKey;

/// One commit. Absolute values throughout: replaying an entry over a state that already has it
/// changes nothing.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LedgerEntry {
    pub seq: u64,
    pub at_ms: u64,
    pub meta: StoreMeta,
    /// JSON merge patch of `TenantColony` since the previous entry (τ, history, counters, epoch).
    #[serde(default)]
    pub colony: Value,
    /// Decisions remembered (`Some`) or forgotten (`None`: confirmed, evicted) by pod key.
    #[serde(default)]
    pub decisions: Vec<(PodKey, Option<Decision>)>,
    /// Pods remembered: confirmations, outcomes recorded, shadow records.
    #[serde(default)]
    pub records: Vec<IndexChange>,
    /// Confirmed pods' explanations gathered by this commit (`explained.rs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub explained: Vec<ConfirmedExplanation>,
    /// This commit wrote every explanation gathered before it into `explained` rows.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub explained_flushed: bool,
}

/// The whole state as of ledger entry `seq` (the pod index lives in the segments).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotBody {
    pub seq: u64,
    pub at_ms: u64,
    pub meta: StoreMeta,
    pub colony: TenantColony,
    #[serde(default)]
    pub pending: Vec<(PodKey, Decision)>,
    /// Confirmed pods' explanations gathered and not yet in an `explained` row.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub explained: Vec<ConfirmedExplanation>,
}

/// The snapshot's text from its parts, checked to be one complete snapshot.
pub fn join_parts(rows: &[SnapshotRow]) -> Result<String, CorruptState> {
    let Some(first) = rows.first() else {
        return Ok(String::new());
    };
    let complete = rows.len() as i64 == first.parts
        && rows
            .iter()
            .enumerate()
            .all(|(i, r)| r.part == i as i64 && r.seq == first.seq && r.parts == first.parts);
    if !complete {
        return Err(corrupt(
            format!("snapshot[{}]", first.seq),
            format!(
                "{} parts stored of {} (parts {:?})",
                rows.len(),
                first.parts,
                rows.iter().map(|r| (r.part, r.seq)).collect::<Vec<_>>()
            ),
        ));
    }
    Ok(rows.iter().map(|r| r.body.as_str()).collect())
}
