//! How a colony (one per cluster × tenant) is kept: in memory, authoritative, and persisted as a ledger — the
//! Facts object's pattern (`facts_shards`) for the Colony object. Pure: the Worker's
//! `src/colony/object.rs` loads the rows, hands requests to [`ColonyStore`], runs the
//! statements a [`Commit`] lists in one transaction, and tells the store it committed.
//!
//! Why: rows written are what the colony costs (every insert, index insert and delete is a
//! row), and persisting each decision, confirmation and trail on its own made ~32 rows per pod.
//! Here a commit is **one row** whatever it holds — the decisions accepted since the last one,
//! the placements' confirmations, the outcome events, the colony's values they touched (a JSON
//! merge patch of `TenantColony`, absolute, so a replay is idempotent) — and commits are grouped:
//! decisions are committed at most every [`COMMIT_INTERVAL_MS`] (or by the Worker's alarm after
//! [`COMMIT_BACKSTOP_MS`] when no request comes), placements always before their reply (and a
//! decision whose held placements it applied, `early.rs`, before its own). Every
//! [`SNAPSHOT_EVERY_MS`] (or [`SNAPSHOT_EVERY_COMMITS`] commits) the state is written whole and
//! the pod index changes since the last snapshot become one immutable segment row; the ledger
//! ring's older slots are then free to be overwritten. So rows scale with time and tenants, not
//! with pods.
//!
//! What a restart loses: changes accepted but not yet committed — decisions at most
//! [`COMMIT_INTERVAL_MS`] old while requests flow, [`COMMIT_BACKSTOP_MS`] when they stop. The
//! isolate that sent them keeps them until a reply of the same incarnation says they are durable
//! ([`wire::Durability`]) and sends them again otherwise; a placement is always durable before
//! its reply, so at-least-once delivery never counts one twice — except one held for its
//! decision, which lives in memory until the decision comes: a restart loses it (that pod's
//! learning), never counts it twice.

mod early;
pub mod explained;
mod ledger;
pub mod merge;
mod pending;
pub mod pod_index;
pub mod schema;
pub mod wire;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::colony_export::ExportedState;
use crate::api::dropped::DropReason;
use crate::api::pheromones::{NodeTrail, PheromoneTableReply};
use crate::colony::{Decision, PodRecord, ReportEffect, TenantColony};
use crate::config::{CostModel, Retention, StateBounds};
use crate::names::validate_node_name;
use crate::names::PodKey;
pub use crate::names::MAX_POD_KEY_LEN;
use crate::shadow::{ShadowEffect, ShadowReport, ShadowSummary};

use early::{EarlyPlacements, Hold};
pub use early::{HOLD_MS, MAX_HELD};
use explained::{ConfirmedExplanation, Explained, ExplainedPlan, ExplainedRow, Found};
pub use ledger::{LedgerEntry, SnapshotBody};
use pending::Pending;
pub use pending::EXPLANATIONS_KEPT;
use pod_index::{key_hash, IndexChange, PodIndex};
use schema::{LedgerRow, SegmentRow, SnapshotRow, Statement, MAX_PART_BYTES};
use wire::{
    ColonyReport, ColonySnapshot, ConfirmedView, DecisionLookup, DecisionRecord, Durability,
    PlacementItem, PlacementsReply, ShadowItem, ShadowReply,
};

/// Decisions are committed at most this often while requests keep coming.
pub const COMMIT_INTERVAL_MS: u64 = 1_000;
/// Uncommitted decisions are committed by the object's alarm this long after the first of them,
/// when no request committed them sooner.
pub const COMMIT_BACKSTOP_MS: u64 = 2_000;
/// Decisions waiting that make a commit due at once: 64 × ~19 KB at most is ~1.2 MB of entry.
pub const DECISIONS_PER_COMMIT: usize = 64;
/// A snapshot at least this often while the colony changes.
pub const SNAPSHOT_EVERY_MS: u64 = 60_000;
/// ... and at least every this many commits (half the ledger ring).
pub const SNAPSHOT_EVERY_COMMITS: u64 = schema::LEDGER_SLOTS / 2;
/// Pod index changes per segment row before a snapshot is forced (a change is ≤ ~450 bytes of
/// JSON with a 253-character node name, so a segment row stays below the row limit).
pub const SEGMENT_CHANGES_MAX: usize = 4_000;
/// Remembered pods (confirmed or shadow) per tenant; beyond, the oldest are forgotten early (a
/// replay of such a pod is then unknown, never a second deposit). ~130 B each in memory.
pub const MAX_PODS_REMEMBERED: usize = 200_000;
/// Largest decision accepted (JSON): 64 candidates with every explanation are ~19 KB.
pub const MAX_DECISION_BYTES: usize = 128 * 1024;

/// What a colony's report is compared by ([`ColonyStore::report_if_changed`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ReportKey {
    version: u64,
    counters: crate::colony::ColonyCounters,
    trails: usize,
    rows_written: u64,
    pending: usize,
    held: usize,
    remembered: usize,
    dropped: u64,
    shadow: ShadowSummary,
    tenant_named: bool,
}

/// Confirmed explanations are answered if made at or after this.
fn explained_since(now_ms: u64, retention: &Retention) -> u64 {
    now_ms.saturating_sub(retention.confirmed_explanations_ttl_ms)
}

/// A decision the colony can keep: valid candidate names, a bounded size (its key is a
/// [`PodKey`], valid as it was read).
fn validate_decision(r: &DecisionRecord) -> Result<(), String> {
    for (node, eta) in &r.decision.etas {
        // The candidates are kube-scheduler's node names, which the extender verbs read as text
        // (a name of other characters is no 400 there: kube-scheduler sends what its informer
        // holds); one the colony could never see confirmed is not kept.
        validate_node_name(node).map_err(|e| format!("decision for {}: {e}", r.key))?;
        if !eta.is_finite() {
            return Err(format!("decision for {}: η of {node} is not finite", r.key));
        }
    }
    let size = serde_json::to_string(&r.decision).map_or(usize::MAX, |t| t.len());
    if size > MAX_DECISION_BYTES {
        return Err(format!(
            "decision for {} is {size} bytes (at most {MAX_DECISION_BYTES})",
            r.key
        ));
    }
    Ok(())
}

/// What the colony keeps beside `TenantColony`, written whole in every ledger entry (small).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StoreMeta {
    pub tenant: String,
    /// Bumped by every change to what isolates score with, and by a reset.
    pub version: u64,
    pub shadow: ShadowSummary,
    /// Items refused as invalid, by reason.
    pub dropped: BTreeMap<DropReason, u64>,
    /// Remembered pods forgotten early (beyond [`MAX_PODS_REMEMBERED`]).
    pub forgotten_pods: u64,
}

/// One planned commit: the statements to run in one transaction, then [`ColonyStore::committed`].
#[derive(Debug)]
pub struct Commit {
    pub seq: u64,
    pub statements: Vec<Statement>,
    /// Whether this commit writes a snapshot.
    pub snapshot: bool,
    colony: Value,
    now_ms: u64,
    explained: ExplainedPlan,
}

/// A stored row that does not parse (or contradicts the others): the colony refuses to work on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorruptState {
    pub what: String,
    pub detail: String,
}

impl std::fmt::Display for CorruptState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} does not parse: {}", self.what, self.detail)
    }
}

fn corrupt(what: impl Into<String>, detail: impl std::fmt::Display) -> CorruptState {
    let detail: String = detail.to_string().chars().take(200).collect();
    CorruptState {
        what: what.into(),
        detail,
    }
}

/// One colony (a cluster × tenant) and everything it remembers, with what is not yet committed.
#[derive(Debug, Clone)]
pub struct ColonyStore {
    meta: StoreMeta,
    colony: TenantColony,
    pending: Pending,
    /// Placements that came before their decision (memory only, see `early.rs`).
    early: EarlyPlacements,
    index: PodIndex,
    /// Confirmed pods' explanations (`explained.rs`).
    explained: Explained,
    /// Set by the Worker per load: identifies what [`Durability::durable_seq`] refers to.
    incarnation: u64,
    /// Last committed ledger sequence number, and the snapshot's.
    seq: u64,
    snapshot_seq: u64,
    snapshot_at_ms: u64,
    last_commit_ms: u64,
    /// `TenantColony` as of `seq`, serialised: what the next entry's patch is computed against.
    committed_colony: Value,
    /// Changes since the last commit: decisions added (Some) or removed (None) by key.
    changed_decisions: BTreeMap<PodKey, Option<Decision>>,
    changed_records: Vec<IndexChange>,
    /// Pod index changes committed since the last snapshot (the next segment row).
    segment: Vec<IndexChange>,
    reset: bool,
    /// The stored ledger is unreadable and must go with the reset's snapshot.
    clear_ledger: bool,
    /// When the first uncommitted change was made.
    dirty_since_ms: Option<u64>,
    /// A decision's held placements moved the colony (a new version): commit before replying,
    /// as for placements, so that no isolate sees a version a restart could take back.
    must_commit: bool,
}

impl ColonyStore {
    /// An empty colony (nothing stored yet).
    pub fn new(incarnation: u64) -> Self {
        let colony = TenantColony::default();
        Self {
            committed_colony: serde_json::to_value(&colony).unwrap_or(Value::Null),
            colony,
            meta: StoreMeta::default(),
            pending: Pending::default(),
            early: EarlyPlacements::default(),
            index: PodIndex::default(),
            explained: Explained::default(),
            incarnation,
            seq: 0,
            snapshot_seq: 0,
            snapshot_at_ms: 0,
            last_commit_ms: 0,
            changed_decisions: BTreeMap::new(),
            changed_records: Vec::new(),
            segment: Vec::new(),
            reset: false,
            clear_ledger: false,
            dirty_since_ms: None,
            must_commit: false,
        }
    }

    /// A reset over stored state that cannot be read: nothing is kept, the stored ledger is
    /// deleted with the first commit, and the version starts past any isolate's copy (`now_ms`;
    /// versions count commits, far fewer than milliseconds).
    pub fn reset_unreadable(tenant: &str, incarnation: u64, now_ms: u64) -> Self {
        let mut store = Self::new(incarnation);
        store.meta.tenant = tenant.to_string();
        store.meta.version = now_ms;
        store.reset = true;
        store.clear_ledger = true;
        store.touch(now_ms);
        store
    }

    /// The sequence number after which ledger rows must be read: the snapshot's.
    pub fn ledger_after(snapshot: &[SnapshotRow]) -> i64 {
        snapshot.first().map_or(0, |r| r.seq)
    }

    /// The colony from its rows (`schema::SELECT_*`). Expired decisions and pods are dropped.
    #[allow(clippy::too_many_arguments)]
    pub fn load(
        snapshot: Vec<SnapshotRow>,
        segments: Vec<SegmentRow>,
        ledger: Vec<LedgerRow>,
        explained: Vec<ExplainedRow>,
        incarnation: u64,
        now_ms: u64,
        retention: &Retention,
        bounds: &StateBounds,
    ) -> Result<Self, CorruptState> {
        let mut store = Self::new(incarnation);
        if snapshot.is_empty() {
            if let Some(r) = ledger.first() {
                return Err(corrupt(
                    format!("ledger[{}]", r.seq),
                    "ledger entries without a snapshot",
                ));
            }
            return Ok(store);
        }
        let body = ledger::join_parts(&snapshot)?;
        let snap: SnapshotBody = serde_json::from_str(&body)
            .map_err(|e| corrupt(format!("snapshot[{}]", snapshot[0].seq), e))?;
        store.seq = snap.seq;
        store.snapshot_seq = snap.seq;
        store.snapshot_at_ms = snap.at_ms;
        store.last_commit_ms = snap.at_ms;
        store.meta = snap.meta;
        let mut colony = serde_json::to_value(&snap.colony)
            .map_err(|e| corrupt(format!("snapshot[{}].colony", snap.seq), e))?;
        let cap = bounds.max_decisions_per_tenant as usize;
        for (key, d) in snap.pending {
            store.pending.insert(key, d, cap);
        }
        store.explained.load_gathered(snap.explained, false);
        store
            .explained
            .load_rows(explained)
            .map_err(|(id, e)| corrupt(format!("explained[{id}]"), e))?;
        for row in segments {
            let changes: Vec<IndexChange> = serde_json::from_str(&row.body)
                .map_err(|e| corrupt(format!("segments[{}]", row.id), e))?;
            for c in &changes {
                store.index.apply(c, MAX_PODS_REMEMBERED);
            }
        }
        for row in ledger {
            let entry: LedgerEntry = serde_json::from_str(&row.body)
                .map_err(|e| corrupt(format!("ledger[{}]", row.seq), e))?;
            if entry.seq <= store.seq {
                continue;
            }
            if entry.seq != store.seq + 1 {
                return Err(corrupt(
                    format!("ledger[{}]", entry.seq),
                    format!("entry {} is missing", store.seq + 1),
                ));
            }
            merge::apply(&mut colony, &entry.colony);
            store.meta = entry.meta;
            for (key, d) in entry.decisions {
                match d {
                    Some(d) => {
                        store.pending.insert(key, d, cap);
                    }
                    None => {
                        store.pending.remove(&key);
                    }
                }
            }
            for c in entry.records {
                store.index.apply(&c, MAX_PODS_REMEMBERED);
                store.segment.push(c);
            }
            store
                .explained
                .load_gathered(entry.explained, entry.explained_flushed);
            store.seq = entry.seq;
            store.last_commit_ms = entry.at_ms;
        }
        store.colony = serde_json::from_value(colony.clone())
            .map_err(|e| corrupt(format!("ledger[{}].colony", store.seq), e))?;
        store.committed_colony = colony;
        store.expire(now_ms, retention);
        Ok(store)
    }

    fn expire(&mut self, now_ms: u64, retention: &Retention) {
        self.pending
            .expire(now_ms.saturating_sub(retention.decision_ttl_ms));
        self.index
            .expire(now_ms.saturating_sub(retention.confirmed_ttl_ms));
    }

    pub fn colony(&self) -> &TenantColony {
        &self.colony
    }

    pub fn meta(&self) -> &StoreMeta {
        &self.meta
    }

    pub fn version(&self) -> u64 {
        self.meta.version
    }

    pub fn pending_decisions(&self) -> usize {
        self.pending.len()
    }

    /// Placements waiting for their decision (`early.rs`).
    pub fn held_placements(&self) -> usize {
        self.early.len()
    }

    pub fn remembered_pods(&self) -> usize {
        self.index.len()
    }

    /// Confirmed pods whose explanation is kept (`explained.rs`).
    pub fn explained_pods(&self) -> usize {
        self.explained.len()
    }

    /// The colony for an isolate's copy.
    pub fn copy(&self) -> ColonySnapshot {
        ColonySnapshot {
            version: self.meta.version,
            colony: self.colony.clone(),
        }
    }

    /// Names the tenant, the first time (the object's name is the caller's, once per request).
    pub fn name_tenant(&mut self, tenant: &str, now_ms: u64) {
        if self.meta.tenant != tenant && !tenant.is_empty() {
            self.meta.tenant = tenant.to_string();
            self.touch(now_ms);
        }
    }

    fn touch(&mut self, now_ms: u64) {
        self.dirty_since_ms.get_or_insert(now_ms);
    }

    fn drop_item(&mut self, reason: DropReason, dropped: &mut BTreeMap<DropReason, u64>) {
        *self.meta.dropped.entry(reason).or_default() += 1;
        *dropped.entry(reason).or_default() += 1;
    }

    /// Where this store's writes stand for a request whose changes are in the next commit (or
    /// already committed when nothing is pending).
    pub fn durability(&self) -> Durability {
        Durability {
            incarnation: self.incarnation,
            durable_seq: self.seq,
            accepted_seq: if self.is_dirty() {
                self.seq + 1
            } else {
                self.seq
            },
        }
    }

    /// Remembers decisions (at most `MAX_DECISIONS_PER_TENANT`, oldest evicted). With
    /// `from_copy`, a decision is applied only if it is newer than what the pod has — a
    /// remembered decision or a confirmation — so one delivered twice, or after its placement
    /// was confirmed, changes nothing. An invalid one is dropped and counted. Returns the
    /// reasons of what was dropped.
    pub fn record_decisions(
        &mut self,
        records: Vec<DecisionRecord>,
        from_copy: bool,
        now_ms: u64,
        retention: &Retention,
        bounds: &StateBounds,
        cost: &CostModel,
    ) -> BTreeMap<DropReason, u64> {
        let mut dropped = BTreeMap::new();
        let cap = bounds.max_decisions_per_tenant as usize;
        self.expire_held(now_ms);
        for r in records {
            if validate_decision(&r).is_err() {
                self.drop_item(DropReason::InvalidDecision, &mut dropped);
                self.touch(now_ms);
                continue;
            }
            if from_copy {
                let hash = key_hash(&r.key);
                let confirmed = self.index.confirmed(hash, 0);
                // A pod named by its UID is bound once: a decision that reaches the colony after
                // its confirmation was made before the binding (kube-scheduler scored it again
                // in a retry, and that decision waited in an isolate's window), whatever the
                // clocks say. A `namespace/name` key can be a new pod of the same name.
                if confirmed.is_some() && !r.key.contains('/') {
                    continue;
                }
                let latest = self
                    .pending
                    .created_ms(&r.key)
                    .into_iter()
                    .chain(self.pending.evicted_ms(&r.key))
                    .chain(confirmed.map(|c| c.confirmed_ms))
                    .max();
                if latest.is_some_and(|t| t >= r.decision.created_ms) {
                    continue;
                }
            }
            let counters = &mut self.colony.counters;
            counters.decisions += 1;
            counters.candidates += r.decision.candidate_count as u64;
            counters.explorations += r.explored as u64;
            for key in self.pending.insert(r.key.clone(), r.decision.clone(), cap) {
                self.colony.counters.evicted_decisions += 1;
                self.changed_decisions.insert(key, None);
            }
            // Placements that came first are applied once it is in, as if they had come second.
            let held = self.early.take(&r.key);
            self.changed_decisions.insert(r.key, Some(r.decision));
            self.touch(now_ms);
            if !held.is_empty() {
                let mut applied = PlacementsReply::default();
                for item in &held {
                    self.apply_placement(item, now_ms, retention, cost, &mut applied);
                }
                if applied.deposited + applied.outcomes > 0 {
                    self.meta.version += 1;
                    self.must_commit = true;
                }
            }
        }
        dropped
    }

    /// The unexpired decision and confirmation remembered for a pod key.
    pub fn record_of(&self, key: &str, now_ms: u64, retention: &Retention) -> PodRecord {
        PodRecord {
            decision: self
                .pending
                .get(key, now_ms.saturating_sub(retention.decision_ttl_ms))
                .cloned(),
            confirmed: self
                .index
                .confirmed(
                    key_hash(key),
                    now_ms.saturating_sub(retention.confirmed_ttl_ms),
                )
                .cloned(),
        }
    }

    /// What is remembered of a pod: its decision, its confirmation, and its confirmed
    /// explanation if that is in memory (else [`ColonyStore::explained_row`] says which row).
    pub fn lookup(&self, key: &str, now_ms: u64, retention: &Retention) -> DecisionLookup {
        let r = self.record_of(key, now_ms, retention);
        let explained = match self.explained.find(key, explained_since(now_ms, retention)) {
            Some(Found::Memory(e)) => Some(e.clone()),
            _ => None,
        };
        DecisionLookup {
            decision: r.decision,
            confirmed: r.confirmed.map(|c| ConfirmedView {
                node: c.node,
                confirmed_ms: c.confirmed_ms,
            }),
            explained,
        }
    }

    /// The `explained` row holding the pod's confirmed explanation, when it is not in memory.
    pub fn explained_row(&self, key: &str, now_ms: u64, retention: &Retention) -> Option<i64> {
        match self
            .explained
            .find(key, explained_since(now_ms, retention))?
        {
            Found::Row(id) => Some(id),
            Found::Memory(_) => None,
        }
    }

    /// The pod's confirmed explanation in the body of `explained` row `id`.
    pub fn explained_in_row(
        id: i64,
        body: &str,
        key: &str,
        now_ms: u64,
        retention: &Retention,
    ) -> Result<Option<ConfirmedExplanation>, CorruptState> {
        Explained::in_row(body, key, explained_since(now_ms, retention))
            .map_err(|e| corrupt(format!("explained[{id}]"), e))
    }

    fn remember(&mut self, change: IndexChange) {
        let forgotten = self.index.apply(&change, MAX_PODS_REMEMBERED);
        self.meta.forgotten_pods += forgotten;
        self.changed_records.push(change);
    }

    /// Applies one tenant's placement reports (see `colony::report` for what each does). An item
    /// the colony refuses (an invalid outcome) is dropped and counted; the rest
    /// proceed. A report for a pod whose decision has not arrived is held for it (`early.rs`).
    /// The caller commits before replying.
    pub fn placements(
        &mut self,
        items: &[PlacementItem],
        now_ms: u64,
        retention: &Retention,
        cost: &CostModel,
    ) -> PlacementsReply {
        let mut out = PlacementsReply::default();
        self.expire_held(now_ms);
        for item in items {
            // Key and node are typed (valid as read); the outcome's value is checked here.
            if item.outcome.map(|o| o.quality()).transpose().is_err() {
                self.drop_item(DropReason::InvalidPlacement, &mut out.dropped);
                self.touch(now_ms);
                continue;
            }
            if self.decision_may_come(&item.key, now_ms, retention) {
                match self.early.hold(item, now_ms) {
                    Hold::Held { pushed_out } => {
                        out.held += 1;
                        self.count_unknown(pushed_out, now_ms);
                    }
                    Hold::AlreadyHeld => {
                        out.duplicates += 1;
                        self.colony.counters.duplicate_reports += 1;
                        self.touch(now_ms);
                    }
                }
                continue;
            }
            self.apply_placement(item, now_ms, retention, cost, &mut out);
        }
        if out.deposited + out.outcomes > 0 {
            self.meta.version += 1;
        }
        out.version = self.meta.version;
        out
    }

    /// Nothing is known of the pod yet — no decision (expired or evicted ones included) and no
    /// confirmation — so its decision may still be on its way from an isolate.
    fn decision_may_come(&self, key: &str, now_ms: u64, retention: &Retention) -> bool {
        let confirmed_since = now_ms.saturating_sub(retention.confirmed_ttl_ms);
        self.pending.created_ms(key).is_none()
            && self.pending.evicted_ms(key).is_none()
            && self
                .index
                .confirmed(key_hash(key), confirmed_since)
                .is_none()
    }

    /// Held placements whose decision never came count as unknown, late.
    fn expire_held(&mut self, now_ms: u64) {
        let expired = self.early.expire(now_ms);
        self.count_unknown(expired, now_ms);
    }

    fn count_unknown(&mut self, placements: usize, now_ms: u64) {
        if placements > 0 {
            self.colony.counters.unknown_placements += placements as u64;
            self.touch(now_ms);
        }
    }

    /// One valid placement report against what the colony remembers of its pod.
    fn apply_placement(
        &mut self,
        item: &PlacementItem,
        now_ms: u64,
        retention: &Retention,
        cost: &CostModel,
        out: &mut PlacementsReply,
    ) {
        let mut record = self.record_of(&item.key, now_ms, retention);
        let before = record.clone();
        // Confirmed no earlier than the decision it confirms: a request's clock can be older
        // than a decision it carries (or one that came while a placement was held), and a
        // redelivery of that decision must be known as old.
        let at_ms = record
            .decision
            .as_ref()
            .map_or(now_ms, |d| now_ms.max(d.created_ms));
        let effect = match self
            .colony
            .report(&mut record, &item.node, item.outcome, at_ms, cost)
        {
            Ok(e) => e,
            Err(_) => {
                self.drop_item(DropReason::InvalidPlacement, &mut out.dropped);
                self.touch(now_ms);
                return;
            }
        };
        match effect {
            ReportEffect::Placed { .. } => out.deposited += 1,
            ReportEffect::OutcomeRecorded { .. } => out.outcomes += 1,
            ReportEffect::Duplicate => out.duplicates += 1,
            ReportEffect::UnknownPod => out.unknown_pod += 1,
            ReportEffect::NotACandidate => out.not_a_candidate += 1,
        }
        if before.decision.is_some() && record.decision.is_none() {
            self.pending.remove(&item.key);
            self.changed_decisions.insert(item.key.clone(), None);
            // The decision goes; why the pod landed where it did is kept (`explained.rs`).
            if let (Some(decision), Some(c)) = (before.decision, &record.confirmed) {
                self.explained.add(
                    ConfirmedExplanation {
                        key: item.key.clone(),
                        node: c.node.clone(),
                        confirmed_ms: c.confirmed_ms,
                        decision,
                    },
                    retention,
                );
            }
        }
        if record.confirmed != before.confirmed {
            self.remember(IndexChange {
                hash: key_hash(&item.key),
                confirmed: record.confirmed,
                shadow: None,
            });
        }
        // Counters move on every report (duplicates, unknown pods too).
        self.touch(now_ms);
    }

    /// Applies scored shadow reports (`shadow::report`): the summary and a record per pod, and
    /// their outcomes deposited on the trail (the shadow placements themselves deposit nothing).
    pub fn shadow(
        &mut self,
        items: &[ShadowItem],
        now_ms: u64,
        retention: &Retention,
        cost: &CostModel,
    ) -> ShadowReply {
        let mut out = ShadowReply::default();
        let mut outcomes = false;
        for item in items {
            if item.outcome.map(|o| o.quality()).transpose().is_err() {
                self.drop_item(DropReason::InvalidShadowReport, &mut out.dropped);
                self.touch(now_ms);
                continue;
            }
            let hash = key_hash(&item.key);
            let mut record = self
                .index
                .shadow(hash, now_ms.saturating_sub(retention.confirmed_ttl_ms))
                .cloned();
            let before = record.clone();
            let effect = match crate::shadow::report(
                &mut self.colony,
                &mut self.meta.shadow,
                &mut record,
                ShadowReport {
                    node: &item.node,
                    score: &item.score,
                    outcome: item.outcome,
                },
                now_ms,
                cost,
            ) {
                Ok(e) => e,
                Err(_) => {
                    self.drop_item(DropReason::InvalidShadowReport, &mut out.dropped);
                    continue;
                }
            };
            match effect {
                ShadowEffect::Scored { outcome } => {
                    out.scored += 1;
                    outcomes |= outcome;
                }
                ShadowEffect::NotFeasible { outcome } => {
                    out.not_feasible += 1;
                    outcomes |= outcome;
                }
                ShadowEffect::Outcome => {
                    out.outcomes += 1;
                    outcomes = true;
                }
                ShadowEffect::UnknownPod => out.unknown_pod += 1,
                ShadowEffect::Duplicate => out.duplicates += 1,
            }
            if record != before {
                if let Some(r) = record {
                    self.remember(IndexChange {
                        hash,
                        confirmed: None,
                        shadow: Some(r),
                    });
                }
            }
            self.touch(now_ms);
        }
        // Reliability moved: isolates scoring from a copy learn of it through the version.
        if outcomes {
            self.meta.version += 1;
        }
        out.version = self.meta.version;
        out
    }

    /// Forgets everything but the tenant's name; a new version, so no isolate keeps scoring
    /// with the old table. The next commit writes a snapshot and drops every segment.
    pub fn reset(&mut self, now_ms: u64) {
        let tenant = std::mem::take(&mut self.meta.tenant);
        let version = self.meta.version + 1;
        self.meta = StoreMeta {
            tenant,
            version,
            ..StoreMeta::default()
        };
        self.colony = TenantColony::default();
        self.pending.clear();
        self.early.clear();
        self.index.clear();
        self.explained.clear();
        self.changed_decisions.clear();
        self.changed_records.clear();
        self.segment.clear();
        self.reset = true;
        self.touch(now_ms);
    }

    /// The learned state an export carries (`api::colony_export`).
    pub fn export(&self) -> ExportedState {
        ExportedState {
            colony: self.colony.clone(),
            shadow: self.meta.shadow.clone(),
        }
    }

    /// Replaces the colony by an exported state (validated by the caller): a reset — pending
    /// decisions, held placements, remembered pods and kept explanations go, the version moves
    /// on — then the state. Returns false, changing nothing, when the colony already holds
    /// exactly that state, so that an import repeated is one import.
    pub fn import(&mut self, state: ExportedState, now_ms: u64) -> bool {
        if self.colony == state.colony && self.meta.shadow == state.shadow {
            return false;
        }
        self.reset(now_ms);
        self.colony = state.colony;
        self.meta.shadow = state.shadow;
        true
    }

    /// The admin view of the colony (`GET …/pheromones`), at `now_ms` (reliability fades).
    pub fn table(&self, now_ms: u64, cost: &CostModel) -> PheromoneTableReply {
        let c = &self.colony;
        let nodes = c
            .pheromones
            .snapshot(now_ms, cost)
            .into_iter()
            .map(|(node, tau)| {
                let o = c.pheromones.trails[&node];
                let now = o.at(now_ms, cost);
                NodeTrail {
                    tau,
                    successes: o.successes,
                    failures: o.failures,
                    outcomes_as_of_ms: o.as_of_ms,
                    slowdown: o.slowdown(),
                    reliability: Some(crate::heuristic::reliability(Some(&now), cost)),
                    node,
                }
            })
            .collect();
        let d = self.durability();
        PheromoneTableReply {
            tenant: self.meta.tenant.clone(),
            nodes,
            counters: c.counters.clone(),
            dropped: self.meta.dropped.clone(),
            pending_decisions: self.pending.len() as u64,
            held_placements: self.held_placements() as u64,
            confirmed_pods: self.index.len() as u64,
            explained_pods: self.explained.len() as u64,
            version: self.meta.version,
            uncommitted: self.is_dirty(),
            durable_seq: d.durable_seq,
        }
    }

    /// What a scrape reads.
    /// The colony's report if it differs from the one last given (`last`), which it then
    /// replaces: what a reply carries to the Telemetry object. The comparison reads only
    /// counters and sizes (cheap on every reply); the report's trails are built only when
    /// something changed, and trails change only with what changes those.
    pub fn report_if_changed(
        &self,
        cost: &CostModel,
        rows_written: u64,
        last: &mut Option<ReportKey>,
    ) -> Option<ColonyReport> {
        let key = ReportKey {
            version: self.meta.version,
            counters: self.colony.counters.clone(),
            trails: self.colony.pheromones.trails.len(),
            rows_written,
            pending: self.pending.len(),
            held: self.held_placements(),
            remembered: self.index.len(),
            dropped: self.meta.dropped.values().sum(),
            shadow: self.meta.shadow.clone(),
            tenant_named: !self.meta.tenant.is_empty(),
        };
        if last.as_ref() == Some(&key) {
            return None;
        }
        *last = Some(key);
        Some(self.report(cost, rows_written))
    }

    pub fn report(&self, cost: &CostModel, rows_written: u64) -> ColonyReport {
        ColonyReport {
            tenant: self.meta.tenant.clone(),
            counters: self.colony.counters.clone(),
            pheromones: {
                let mut bytes = 0;
                // Each trail as of its own last deposit: the report is rebuilt only when the
                // colony changed (`report_if_changed`), so a time-faded value would go stale.
                let mut trails = self.colony.pheromones.snapshot(0, cost);
                trails.truncate(wire::TRAILS_SCRAPED);
                trails.retain(|(node, _)| {
                    bytes += node.len();
                    bytes <= wire::REPORT_NODE_BYTES
                });
                trails
            },
            trails: self.colony.pheromones.trails.len() as u64,
            shadow: self.meta.shadow.clone(),
            dropped: self.meta.dropped.clone(),
            rows_written,
            pending_decisions: self.pending.len() as u64,
            held_placements: self.held_placements() as u64,
            confirmed_pods: self.index.len() as u64,
        }
    }

    /// Something is not committed yet.
    pub fn is_dirty(&self) -> bool {
        self.dirty_since_ms.is_some()
    }

    /// A request that only adds decisions commits now if the last commit is
    /// [`COMMIT_INTERVAL_MS`] old, or if [`DECISIONS_PER_COMMIT`] are waiting (so that an entry
    /// stays well below the row limit), or if a decision's held placements moved the colony
    /// (a new version, durable before any reply shows it); else a later request or the
    /// backstop alarm does.
    pub fn commit_due(&self, now_ms: u64) -> bool {
        self.is_dirty()
            && (self.must_commit
                || now_ms.saturating_sub(self.last_commit_ms) >= COMMIT_INTERVAL_MS
                || self.changed_decisions.len() >= DECISIONS_PER_COMMIT)
    }

    /// When the alarm must commit what is uncommitted, if anything is.
    pub fn backstop_at(&self) -> Option<u64> {
        self.dirty_since_ms
            .map(|t| t.saturating_add(COMMIT_BACKSTOP_MS))
    }

    /// The statements of the next commit (nothing changes until [`ColonyStore::committed`]).
    pub fn plan_commit(&self, now_ms: u64, retention: &Retention) -> Result<Commit, String> {
        let seq = self.seq + 1;
        let colony = serde_json::to_value(&self.colony).map_err(|e| e.to_string())?;
        let segment_len = self.segment.len() + self.changed_records.len();
        let mut snapshot = self.reset
            || self.snapshot_seq == 0
            || seq - self.snapshot_seq >= SNAPSHOT_EVERY_COMMITS
            || now_ms.saturating_sub(self.snapshot_at_ms) >= SNAPSHOT_EVERY_MS
            || segment_len >= SEGMENT_CHANGES_MAX;
        let mut statements = Vec::new();
        let mut explained = self.explained.plan(seq, now_ms, retention);
        if !snapshot {
            let entry = LedgerEntry {
                seq,
                at_ms: now_ms,
                meta: self.meta.clone(),
                colony: merge::diff(&self.committed_colony, &colony),
                decisions: self.changed_decisions.clone().into_iter().collect(),
                records: self.changed_records.clone(),
                explained: if explained.flushed {
                    Vec::new()
                } else {
                    self.explained.uncommitted()
                },
                explained_flushed: explained.flushed,
            };
            let body = serde_json::to_string(&entry).map_err(|e| e.to_string())?;
            if body.len() <= MAX_PART_BYTES {
                statements.push(Statement::ledger(seq, body));
            } else {
                // Too large for one row: the snapshot holds it instead.
                snapshot = true;
            }
        }
        if snapshot {
            if self.reset {
                statements.push(Statement::delete_all_segments());
                statements.push(Statement::delete_all_explained());
            }
            if self.clear_ledger {
                statements.push(Statement::delete_ledger());
            }
            let changes: Vec<&IndexChange> =
                self.segment.iter().chain(&self.changed_records).collect();
            for (i, chunk) in changes.chunks(SEGMENT_CHANGES_MAX).enumerate() {
                let newest = chunk.iter().map(|c| c.at_ms()).max().unwrap_or(now_ms);
                let body = serde_json::to_string(chunk).map_err(|e| e.to_string())?;
                statements.push(Statement::segment(seq * 64 + i as u64, newest, body));
            }
            statements.push(Statement::expire_segments(
                now_ms.saturating_sub(retention.confirmed_ttl_ms),
            ));
            let body = SnapshotBody {
                seq,
                at_ms: now_ms,
                meta: self.meta.clone(),
                colony: self.colony.clone(),
                pending: self
                    .pending
                    .iter()
                    .map(|(k, d)| (k.clone(), d.clone()))
                    .collect(),
                explained: if explained.flushed {
                    Vec::new()
                } else {
                    self.explained.gathered()
                },
            };
            let text = serde_json::to_string(&body).map_err(|e| e.to_string())?;
            statements.extend(Statement::snapshot(seq, &text));
        }
        // After a reset's deletions: the rows this commit writes are the new ones.
        statements.append(&mut explained.statements);
        Ok(Commit {
            seq,
            statements,
            snapshot,
            colony,
            now_ms,
            explained,
        })
    }

    /// The commit's statements ran: memory is now what storage holds.
    pub fn committed(&mut self, commit: Commit, retention: &Retention) {
        self.must_commit = false;
        self.seq = commit.seq;
        self.committed_colony = commit.colony;
        self.explained.committed(commit.explained);
        let records = std::mem::take(&mut self.changed_records);
        if commit.snapshot {
            self.segment.clear();
            self.snapshot_seq = commit.seq;
            self.snapshot_at_ms = commit.now_ms;
            self.expire(commit.now_ms, retention);
        } else {
            self.segment.extend(records);
        }
        self.changed_decisions.clear();
        self.reset = false;
        self.clear_ledger = false;
        self.dirty_since_ms = None;
        self.last_commit_ms = commit.now_ms;
    }
}

#[cfg(test)]
mod tests;
