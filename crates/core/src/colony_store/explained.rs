//! Why a confirmed pod landed where it did, kept after its decision is gone: confirming a
//! placement deletes the pod's decision (that is what makes a confirmation happen once), and with it
//! the explanation an operator asks for a day later. So the decision is kept here, with the node
//! it was bound on, for `CONFIRMED_EXPLANATIONS_TTL_MS` and at most
//! `CONFIRMED_EXPLANATIONS_MAX` pods per tenant (the newest).
//!
//! What it costs in rows (docs/cost.md): an explanation rides the ledger entry of the commit
//! that confirms its pod (that row is written anyway) and, until [`FLUSH_BYTES`] of them are
//! gathered, every snapshot's body; then they become one immutable row of the `explained` table
//! (`schema.rs`) in the commit that gathered the last of them, and that row is deleted as a whole
//! once its pods fall out of the window or the count. So ≈ 2 rows per megabyte of explanations
//! (one written, one deleted) — ~120 pods at 64 candidates —, not a row per pod.
//!
//! Memory: the gathered ones (≤ [`FLUSH_BYTES`] plus one commit's worth) and, per pod in a
//! segment row, its key hash (`pod_index::key_hash`) and the row's id. A lookup of a pod in a
//! row reads that one row (`SELECT_EXPLAINED_BODY`) and parses it.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use super::pod_index::key_hash;
use super::schema::Statement;
use crate::colony::{Decision, DecisionExplanation};
use crate::config::Retention;
use crate::names::PodKey;

/// Explanations are gathered until they make this many bytes of JSON, then written as a segment
/// row of their own. Small enough that the snapshot carrying them until then rarely needs a
/// second part; large enough that a row holds ~120 pods at 64 candidates.
pub const FLUSH_BYTES: usize = 1_000_000;
/// A segment row's body holds at most this many bytes (its keys beside them stay far below the
/// 2 MB row limit: a key hash is ≤ 21 bytes of JSON, an explanation ≥ ~300).
const ROW_BODY_BYTES: usize = 1_500_000;
/// Segment rows one commit may write (ids are `seq × ROWS_PER_COMMIT + i`): 10,000 pending
/// decisions of 128 KB each, all confirmed at once, would need 854.
const ROWS_PER_COMMIT: u64 = 4_096;

/// A confirmed pod's decision and where it was bound.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfirmedExplanation {
    pub key: PodKey,
    /// The node the placement was confirmed on.
    pub node: String,
    pub confirmed_ms: u64,
    pub decision: Decision,
}

impl ConfirmedExplanation {
    /// The explanation as `GET …/decisions/{podUid}` answers it for a confirmed pod: the
    /// decision's, with where it was bound and when.
    pub fn explain(&self, tenant: &str) -> DecisionExplanation {
        let mut e = self.decision.explain(&self.key, tenant);
        e.notes.push(format!(
            "confirmed on {} at {} ms; a confirmed pod's explanation is kept CONFIRMED_EXPLANATIONS_TTL_MS after its \
             confirmation, for the newest CONFIRMED_EXPLANATIONS_MAX pods of the tenant",
            self.node, self.confirmed_ms
        ));
        if e.answered_node.as_deref().is_some_and(|a| a != self.node) {
            e.notes.push(
                "boundNode is not answeredNode: kube-scheduler's own scores (or a failed binding) overruled the answer"
                    .into(),
            );
        }
        e.bound_node = Some(self.node.clone());
        e.confirmed_ms = Some(self.confirmed_ms);
        e
    }
}

/// An `explained` row as read back at load: which pods it explains (not its body).
#[derive(Debug, Clone)]
pub struct ExplainedRow {
    pub id: i64,
    pub newest_ms: i64,
    /// JSON array of the pods' key hashes.
    pub keys: String,
}

/// Where a pod's explanation is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Found<'a> {
    Memory(&'a ConfirmedExplanation),
    /// In the `explained` row of this id (read it with `schema::SELECT_EXPLAINED_BODY`).
    Row(i64),
}

#[derive(Debug, Clone)]
struct RowIndex {
    newest_ms: u64,
    hashes: Vec<u64>,
}

/// What a commit writes of the explanations and what it deletes.
#[derive(Debug, Clone, Default)]
pub struct ExplainedPlan {
    pub statements: Vec<Statement>,
    /// The gathered explanations went into rows: ledger entries after this commit start anew.
    pub flushed: bool,
    rows: Vec<(i64, RowIndex)>,
    delete_through: Option<i64>,
}

#[derive(Debug, Clone, Default)]
pub struct Explained {
    /// Gathered, not yet in a row, oldest first, with their size in JSON.
    gathered: Vec<(ConfirmedExplanation, usize)>,
    gathered_bytes: usize,
    /// How many of `gathered` a commit already holds (the rest go into the next ledger entry).
    committed: usize,
    rows: BTreeMap<i64, RowIndex>,
    /// Key hash → the newest row explaining that pod.
    by_hash: HashMap<u64, i64>,
    in_rows: usize,
}

impl Explained {
    /// Pods explained, gathered and in rows.
    pub fn len(&self) -> usize {
        self.gathered.len() + self.in_rows
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keeps `e` unless the config keeps none.
    pub fn add(&mut self, e: ConfirmedExplanation, retention: &Retention) {
        if retention.confirmed_explanations_ttl_ms == 0 || retention.confirmed_explanations_max == 0
        {
            return;
        }
        let bytes = serde_json::to_string(&e).map_or(0, |t| t.len());
        self.gathered_bytes += bytes;
        self.gathered.push((e, bytes));
    }

    /// The explanations a ledger entry must carry: those no commit holds yet.
    pub fn uncommitted(&self) -> Vec<ConfirmedExplanation> {
        self.gathered[self.committed..]
            .iter()
            .map(|(e, _)| e.clone())
            .collect()
    }

    /// The explanations a snapshot carries: every gathered one.
    pub fn gathered(&self) -> Vec<ConfirmedExplanation> {
        self.gathered.iter().map(|(e, _)| e.clone()).collect()
    }

    /// The pod's explanation if it was confirmed at or after `since_ms`. For one in a row the
    /// time is checked when the row is read ([`Explained::in_row`]).
    pub fn find(&self, key: &str, since_ms: u64) -> Option<Found<'_>> {
        if let Some((e, _)) = self.gathered.iter().rev().find(|(e, _)| e.key == key) {
            return (e.confirmed_ms >= since_ms).then_some(Found::Memory(e));
        }
        let id = *self.by_hash.get(&key_hash(key))?;
        let row = self.rows.get(&id)?;
        (row.newest_ms >= since_ms).then_some(Found::Row(id))
    }

    /// The pod's explanation in a row's body (the newest, if the row holds it twice).
    pub fn in_row(
        body: &str,
        key: &str,
        since_ms: u64,
    ) -> Result<Option<ConfirmedExplanation>, serde_json::Error> {
        let all: Vec<ConfirmedExplanation> = serde_json::from_str(body)?;
        Ok(all
            .into_iter()
            .rev()
            .find(|e| e.key == key)
            .filter(|e| e.confirmed_ms >= since_ms))
    }

    /// What the commit `seq` at `now_ms` writes: the gathered explanations as rows once they
    /// make [`FLUSH_BYTES`], and the deletion of the oldest rows whose pods are all out of the
    /// window, or beyond the count.
    pub fn plan(&self, seq: u64, now_ms: u64, retention: &Retention) -> ExplainedPlan {
        let mut plan = ExplainedPlan::default();
        let flush = !self.gathered.is_empty() && self.gathered_bytes >= FLUSH_BYTES;
        if flush {
            plan.flushed = true;
            let mut chunk: Vec<&ConfirmedExplanation> = Vec::new();
            let mut bytes = 0;
            let mut chunks = Vec::new();
            for (e, size) in &self.gathered {
                if !chunk.is_empty() && bytes + size > ROW_BODY_BYTES {
                    chunks.push(std::mem::take(&mut chunk));
                    bytes = 0;
                }
                chunk.push(e);
                bytes += size;
            }
            chunks.push(chunk);
            // Never more rows than ids: the newest are kept (the count would drop the oldest).
            let skip = chunks.len().saturating_sub(ROWS_PER_COMMIT as usize);
            for (i, chunk) in chunks.into_iter().skip(skip).enumerate() {
                let id = (seq * ROWS_PER_COMMIT + i as u64) as i64;
                let index = RowIndex {
                    newest_ms: chunk.iter().map(|e| e.confirmed_ms).max().unwrap_or(now_ms),
                    hashes: chunk.iter().map(|e| key_hash(&e.key)).collect(),
                };
                let body = serde_json::to_string(&chunk).unwrap_or_else(|_| "[]".into());
                let keys = serde_json::to_string(&index.hashes).unwrap_or_else(|_| "[]".into());
                plan.statements
                    .push(Statement::explained(id, index.newest_ms, keys, body));
                plan.rows.push((id, index));
            }
        }
        // The oldest rows go while all their pods are out of the window, or while more pods
        // than the count are kept.
        let since = now_ms.saturating_sub(retention.confirmed_explanations_ttl_ms);
        let mut kept = self.len();
        let max = retention.confirmed_explanations_max as usize;
        for (id, row) in self
            .rows
            .iter()
            .chain(plan.rows.iter().map(|(i, r)| (i, r)))
        {
            if row.newest_ms >= since && kept <= max {
                break;
            }
            kept -= row.hashes.len();
            plan.delete_through = Some(*id);
        }
        if let Some(id) = plan.delete_through {
            plan.statements
                .push(Statement::delete_explained_through(id));
        }
        plan
    }

    /// The plan's statements ran.
    pub fn committed(&mut self, plan: ExplainedPlan) {
        if plan.flushed {
            self.gathered.clear();
            self.gathered_bytes = 0;
            for (id, row) in plan.rows {
                self.add_row(id, row);
            }
        }
        self.committed = self.gathered.len();
        if let Some(through) = plan.delete_through {
            let gone: Vec<i64> = self.rows.range(..=through).map(|(id, _)| *id).collect();
            for id in gone {
                if let Some(row) = self.rows.remove(&id) {
                    self.in_rows -= row.hashes.len();
                    for h in row.hashes {
                        if self.by_hash.get(&h) == Some(&id) {
                            self.by_hash.remove(&h);
                        }
                    }
                }
            }
        }
    }

    fn add_row(&mut self, id: i64, row: RowIndex) {
        for h in &row.hashes {
            self.by_hash.insert(*h, id);
        }
        self.in_rows += row.hashes.len();
        self.rows.insert(id, row);
    }

    /// The rows' indexes, as stored (at load, oldest first).
    pub fn load_rows(&mut self, rows: Vec<ExplainedRow>) -> Result<(), (i64, serde_json::Error)> {
        for r in rows {
            let hashes: Vec<u64> = serde_json::from_str(&r.keys).map_err(|e| (r.id, e))?;
            let row = RowIndex {
                newest_ms: r.newest_ms.max(0) as u64,
                hashes,
            };
            self.add_row(r.id, row);
        }
        Ok(())
    }

    /// Explanations a snapshot or a ledger entry carried (at load, in commit order); `flushed`:
    /// the entry's commit wrote everything gathered before it into rows.
    pub fn load_gathered(&mut self, entries: Vec<ConfirmedExplanation>, flushed: bool) {
        if flushed {
            self.gathered.clear();
            self.gathered_bytes = 0;
        }
        for e in entries {
            let bytes = serde_json::to_string(&e).map_or(0, |t| t.len());
            self.gathered_bytes += bytes;
            self.gathered.push((e, bytes));
        }
        self.committed = self.gathered.len();
    }

    pub fn clear(&mut self) {
        *self = Self::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::demand::WorkloadClass;

    fn explained(key: &str, at: u64, padding: usize) -> ConfirmedExplanation {
        ConfirmedExplanation {
            key: PodKey::parse(key).unwrap(),
            node: "n".repeat(padding.max(1)),
            confirmed_ms: at,
            decision: Decision {
                created_ms: at,
                workload: WorkloadClass::Batch,
                candidate_count: 1,
                etas: vec![("a".into(), 0.5)],
                explanation: None,
            },
        }
    }

    #[test]
    fn gathered_explanations_become_a_row_once_they_weigh_enough_and_old_rows_go_whole() {
        let config = Config::default().with(|c| {
            c.retention.confirmed_explanations_max = 5;
            c.retention.confirmed_explanations_ttl_ms = 1_000;
        });
        let mut x = Explained::default();
        x.add(explained("p0", 10, 10), &config.retention);
        let plan = x.plan(1, 10, &config.retention);
        assert!(
            !plan.flushed && plan.statements.is_empty(),
            "small: gathered"
        );
        x.committed(plan);
        assert_eq!(x.uncommitted(), vec![]);
        assert!(matches!(x.find("p0", 0), Some(Found::Memory(_))));
        // Heavy ones: a row.
        for i in 1..4 {
            x.add(
                explained(&format!("p{i}"), 20, FLUSH_BYTES / 3),
                &config.retention,
            );
        }
        let plan = x.plan(2, 20, &config.retention);
        assert!(plan.flushed);
        assert_eq!(plan.statements.len(), 1);
        x.committed(plan);
        assert_eq!(x.len(), 4);
        assert_eq!(
            x.find("p2", 0),
            Some(Found::Row(2 * ROWS_PER_COMMIT as i64))
        );
        assert_eq!(x.find("p2", 21), None, "older than asked");
        // Beyond the count (5): the oldest row goes whole when the next one is written.
        for i in 4..7 {
            x.add(
                explained(&format!("p{i}"), 30, FLUSH_BYTES / 3),
                &config.retention,
            );
        }
        let plan = x.plan(3, 30, &config.retention);
        assert_eq!(plan.statements.len(), 2, "the new row and the deletion");
        x.committed(plan);
        assert_eq!(x.len(), 3);
        assert_eq!(x.find("p0", 0), None);
        assert!(x.find("p5", 0).is_some());
        // Out of the window: gone with the next commit.
        let plan = x.plan(4, 2_000, &config.retention);
        assert_eq!(plan.statements.len(), 1);
        x.committed(plan);
        assert!(x.is_empty());
    }

    #[test]
    fn a_row_body_finds_its_pod_and_nothing_is_kept_when_the_config_keeps_none() {
        let body = serde_json::to_string(&[explained("a", 5, 1), explained("b", 6, 1)]).unwrap();
        assert_eq!(
            Explained::in_row(&body, "b", 0)
                .unwrap()
                .unwrap()
                .confirmed_ms,
            6
        );
        assert_eq!(Explained::in_row(&body, "b", 7).unwrap(), None);
        assert_eq!(Explained::in_row(&body, "c", 0).unwrap(), None);
        assert!(Explained::in_row("nope", "a", 0).is_err());
        let off = Config::default().with(|c| c.retention.confirmed_explanations_max = 0);
        let mut x = Explained::default();
        x.add(explained("a", 1, 1), &off.retention);
        assert!(x.is_empty());
    }
}
