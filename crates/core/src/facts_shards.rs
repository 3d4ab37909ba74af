//! How the cluster's node facts are stored: the ingest batch (`PUT /v1/nodes`), validated whole,
//! and [`FactsTable`], every node's [`NodeFacts`] packed into [`SHARDS`] rows by a stable hash
//! of the node name, each row rewritten only when one of its nodes changed materially.
//!
//! Why shards: storage pricing counts rows written, and Workers count binding operations per
//! invocation. One row per node would make a report of N nodes N writes; one row per cluster
//! would exceed SQLite's 2 MB row limit. A fixed number of shards makes the rows written per
//! report at most `SHARDS`, whatever the node count. 16: with realistic utilisation noise and
//! pod churn every shard of a 1,000-node cluster changes in every report (docs/cost.md), so the
//! rows written per month are `SHARDS` × reports; 16 keeps that at 2.8 M at a 15 s interval,
//! while 10,000 nodes still take under a quarter of the row limit per shard.
//!
//! Why a deadband: the reporter re-sends every node every push interval, and most of what changes
//! between two pushes is a newer timestamp or a slightly different utilisation average. Such a
//! change is kept in memory (the table is authoritative; readers fetching deltas see it at once)
//! and reaches the row only with the next material change of the shard. The persisted copy of a node therefore never lags its memory
//! copy by more than [`stamp_lag_ms`] in any observation time, nor by more than
//! [`LOAD_DEADBAND`] in its utilisation EMA (level or volatility): that is what a restart of the
//! store can lose. `updatedAtMs`, which no decision reads, is persisted only along with other
//! changes.

use std::collections::{BTreeMap, BTreeSet};

use crate::api::nodes::NodesBatch;
use crate::config::Config;
use crate::facts::{FactsError, NodeFacts, Observed};
use crate::heuristic::spot_risk::SpotPools;
use crate::names::NodeName;
use crate::predict::Ema;

/// Rows the cluster's facts are packed into. Changing it re-shards on the next load (a row whose
/// nodes hash elsewhere is rewritten), so it is safe but costs one rewrite of everything.
pub const SHARDS: usize = 16;
/// Durable Object SQLite's limit on one string or row. A shard that would exceed it is refused.
pub const MAX_ROW_BYTES: usize = 2_000_000;
/// Utilisation EMA movement (level or volatility, as a fraction of capacity) below which a report
/// does not rewrite its shard.
pub const LOAD_DEADBAND: f64 = 0.02;
/// Default of how far an observation time may run ahead of its persisted copy (see [`stamp_lag_ms`]).
pub const MAX_STAMP_LAG_MS: u64 = 60_000;
/// Node reports (and, separately, deleted names) accepted in one `PUT /v1/nodes`.
pub const MAX_BATCH: usize = 10_000;
/// Row id of the spot pools' history (`SpotPools`), apart from the node shards.
pub const POOLS_ROW: usize = 1_000_000;
/// The pools row is rewritten at a reclamation, else at most this often as exposure accrues:
/// a restart loses at most this much exposure, never a reclamation.
pub const POOLS_PERSIST_MS: u64 = 600_000;

/// How far an observation time may run ahead of its persisted copy before the shard is
/// rewritten: 60 s, or a quarter of `FACTS_TTL_MS` if that is shorter, so that neither a reader
/// of the persisted view nor a restart can make a fresh measurement look stale.
pub fn stamp_lag_ms(facts_ttl_ms: u64) -> u64 {
    MAX_STAMP_LAG_MS.min(facts_ttl_ms / 4)
}

/// The shard of a node: FNV-1a (64 bit) of the name, modulo [`SHARDS`]. Stable across builds and
/// platforms, unlike `std`'s hasher, because it decides which stored row holds the node.
pub fn shard_of(name: &str) -> usize {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    (h % SHARDS as u64) as usize
}

/// A batch that cannot be applied; `status` is 400 or 413.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchError {
    pub status: u16,
    pub field: String,
    pub message: String,
}

impl NodesBatch {
    /// Checks every report and name before anything is applied, so that a bad batch changes
    /// nothing.
    pub fn validate(&self, now_ms: u64) -> Result<(), BatchError> {
        let too_many = |field: &str, what: &str| BatchError {
            status: 413,
            field: field.into(),
            message: format!("at most {MAX_BATCH} {what} per request"),
        };
        if self.nodes.len() > MAX_BATCH {
            return Err(too_many("nodes", "nodes"));
        }
        if self.deleted.len() > MAX_BATCH {
            return Err(too_many("deleted", "deleted nodes"));
        }
        if self.reclaimed.len() > MAX_BATCH {
            return Err(too_many("reclaimed", "reclaimed nodes"));
        }
        let bad = |e: FactsError| BatchError {
            status: 400,
            message: e.to_string(),
            field: e.field,
        };
        for (i, report) in self.nodes.iter().enumerate() {
            report
                .validate(&format!("nodes[{i}]"), now_ms)
                .map_err(bad)?;
        }
        let reported: BTreeSet<&str> = self.nodes.iter().map(|r| r.name.as_str()).collect();
        let gone = self.deleted.iter().map(|n| ("deleted", n));
        let reclaimed = self.reclaimed.iter().map(|n| ("reclaimed", n));
        let mut index = BTreeMap::<&str, usize>::new();
        for (list, name) in gone.chain(reclaimed) {
            let i = index.entry(list).or_default();
            let field = format!("{list}[{i}]");
            *i += 1;
            // Names are typed (valid as the batch was read); what is left is their combination.
            if reported.contains(name.as_str()) {
                return Err(BatchError {
                    status: 400,
                    field,
                    message: format!("node {name:?} is both reported and {list}"),
                });
            }
        }
        Ok(())
    }
}

/// The spot pools' row ([`POOLS_ROW`]) as stored.
pub fn decode_pools(text: &str) -> Result<SpotPools, serde_json::Error> {
    serde_json::from_str(text)
}

/// Whether `now` differs from `persisted` enough to rewrite its shard.
pub fn differs_materially(persisted: &NodeFacts, now: &NodeFacts, stamp_lag_ms: u64) -> bool {
    fn observed<T: PartialEq>(a: &Option<Observed<T>>, b: &Option<Observed<T>>, lag: u64) -> bool {
        match (a, b) {
            (None, None) => false,
            (Some(a), Some(b)) => a.value != b.value || a.at_ms.abs_diff(b.at_ms) > lag,
            _ => true,
        }
    }
    fn load(a: &Option<Observed<Ema>>, b: &Option<Observed<Ema>>, lag: u64) -> bool {
        match (a, b) {
            (None, None) => false,
            (Some(a), Some(b)) => {
                let moved = match (a.value.level, b.value.level) {
                    (Some(x), Some(y)) => (x - y).abs() > LOAD_DEADBAND,
                    (x, y) => x.is_some() != y.is_some(),
                };
                moved
                    || (a.value.volatility - b.value.volatility).abs() > LOAD_DEADBAND
                    || a.value.alpha != b.value.alpha
                    || a.at_ms.abs_diff(b.at_ms) > lag
            }
            _ => true,
        }
    }
    persisted.labels != now.labels
        || persisted.allocatable != now.allocatable
        || observed(&persisted.requested, &now.requested, stamp_lag_ms)
        || observed(&persisted.latency_us, &now.latency_us, stamp_lag_ms)
        || observed(&persisted.gpu_free_milli, &now.gpu_free_milli, stamp_lag_ms)
        || load(&persisted.load, &now.load, stamp_lag_ms)
}

/// A shard row's text: the JSON array of its nodes, refused above [`MAX_ROW_BYTES`].
pub fn encode_shard<'a>(
    shard: usize,
    nodes: impl Iterator<Item = &'a NodeFacts>,
) -> Result<String, String> {
    let nodes: Vec<&NodeFacts> = nodes.collect();
    let text = serde_json::to_string(&nodes).map_err(|e| format!("shard {shard}: {e}"))?;
    if text.len() > MAX_ROW_BYTES {
        return Err(format!(
            "shard {shard} would hold {} nodes in {} bytes, above the {MAX_ROW_BYTES}-byte row limit; the store is full",
            nodes.len(),
            text.len()
        ));
    }
    Ok(text)
}

pub fn decode_shard(text: &str) -> Result<Vec<NodeFacts>, serde_json::Error> {
    serde_json::from_str(text)
}

/// The effect of one batch, computed without changing the table ([`FactsTable::plan`]); applied
/// by [`FactsTable::commit`] once its rows are stored.
#[derive(Debug, Default)]
pub struct Plan {
    /// New state of every reported node.
    records: BTreeMap<String, NodeFacts>,
    /// Distinct deleted names (known or not).
    deleted: BTreeSet<String>,
    /// Shards whose row must be rewritten.
    rewrite: BTreeSet<usize>,
    /// The spot pools after the batch, and whether their row is rewritten.
    pools: SpotPools,
    persist_pools: bool,
    now_ms: u64,
}

impl Plan {
    /// Distinct nodes reported.
    pub fn stored(&self) -> usize {
        self.records.len()
    }

    /// Distinct names deleted (a name never seen counts too: forgetting it is harmless).
    pub fn forgotten(&self) -> usize {
        self.deleted.len()
    }

    pub fn rewrites(&self) -> &BTreeSet<usize> {
        &self.rewrite
    }
}

/// Every node of one cluster, in memory and authoritative, with the copy last persisted of each
/// shard and a sequence number per shard for readers that fetch only what changed.
#[derive(Debug, Clone)]
pub struct FactsTable {
    /// Authoritative state, by shard.
    shards: Vec<BTreeMap<String, NodeFacts>>,
    /// What each shard's row holds (for the deadband).
    persisted: Vec<BTreeMap<String, NodeFacts>>,
    /// `seq` of each shard's last rewrite (0: as loaded).
    shard_seq: Vec<u64>,
    seq: u64,
    stamp_lag_ms: u64,
    /// Every spot pool's exposure and reclamations (`heuristic::spot_risk`), and when its row
    /// was last written — or, before that, when this table first saw exposure grow: exposure
    /// alone waits `POOLS_PERSIST_MS` for a row (a restart loses at most that much of it).
    pools: SpotPools,
    pools_persisted_ms: Option<u64>,
    /// Total reclamations and exposure in the stored row.
    pools_persisted_totals: (f64, f64),
}

impl FactsTable {
    pub fn new(stamp_lag_ms: u64) -> Self {
        Self {
            shards: vec![BTreeMap::new(); SHARDS],
            persisted: vec![BTreeMap::new(); SHARDS],
            shard_seq: vec![0; SHARDS],
            seq: 0,
            stamp_lag_ms,
            pools: SpotPools::default(),
            pools_persisted_ms: None,
            pools_persisted_totals: (0.0, 0.0),
        }
    }

    /// The spot pools' history as stored in the [`POOLS_ROW`] row.
    pub fn with_pools(mut self, pools: SpotPools) -> Self {
        self.pools_persisted_totals = pools.totals();
        self.pools = pools;
        self
    }

    /// Every spot pool's exposure and reclamations, as η's spot risk reads them.
    pub fn pools(&self) -> &SpotPools {
        &self.pools
    }

    /// The table from stored rows `(row id, nodes)`. Returns the shards whose row does not match
    /// the current sharding (a node stored in another row, a row id out of range): rewrite them.
    pub fn from_rows(
        rows: impl IntoIterator<Item = (i64, Vec<NodeFacts>)>,
        stamp_lag_ms: u64,
    ) -> (Self, BTreeSet<usize>) {
        let mut table = Self::new(stamp_lag_ms);
        let mut misplaced = BTreeSet::new();
        for (id, nodes) in rows {
            for facts in nodes {
                let s = shard_of(&facts.name);
                if usize::try_from(id).ok() != Some(s) {
                    misplaced.insert(s);
                    if let Ok(old) = usize::try_from(id) {
                        if old < SHARDS {
                            misplaced.insert(old);
                        }
                    }
                }
                table.persisted[s].insert(facts.name.clone(), facts.clone());
                table.shards[s].insert(facts.name.clone(), facts);
            }
        }
        (table, misplaced)
    }

    pub fn get(&self, name: &str) -> Option<&NodeFacts> {
        self.shards[shard_of(name)].get(name)
    }

    pub fn len(&self) -> usize {
        self.shards.iter().map(BTreeMap::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// The sequence number of shard `s`'s last change in memory (what a cached encoding of the
    /// shard is valid for).
    pub fn shard_seq(&self, s: usize) -> u64 {
        self.shard_seq.get(s).copied().unwrap_or(0)
    }

    /// Merges a validated batch into copies of the affected records (EMA folded on write, as
    /// `NodeFacts::apply` does), and decides which shards to rewrite. The table is unchanged.
    /// Takes the whole Config: it reads the load model, node keys, spot pools and facts freshness.
    pub fn plan(&self, batch: &NodesBatch, now_ms: u64, config: &Config) -> Plan {
        let mut plan = Plan::default();
        for report in &batch.nodes {
            let record = plan
                .records
                .entry(report.name.to_string())
                .or_insert_with(|| self.get(&report.name).cloned().unwrap_or_default());
            record.apply(report, now_ms, &config.load);
        }
        for (name, record) in &plan.records {
            let s = shard_of(name);
            let material = match self.persisted[s].get(name) {
                Some(persisted) => differs_materially(persisted, record, self.stamp_lag_ms),
                None => true,
            };
            if material {
                plan.rewrite.insert(s);
            }
        }
        plan.pools = self.pools.clone();
        // A reclamation counts against the pool of the node's known labels, once: named twice,
        // or again by a retried batch (the node is forgotten by then), it is not counted again.
        let reclaimed: BTreeSet<&str> = batch.reclaimed.iter().map(NodeName::as_str).collect();
        for name in reclaimed {
            if let Some(known) = self.get(name) {
                plan.pools
                    .reclaimed(&known.labels, &config.node_keys, &config.spot);
            }
        }
        for name in batch.deleted.iter().chain(&batch.reclaimed) {
            let s = shard_of(name);
            if self.shards[s].contains_key(name.as_str())
                || self.persisted[s].contains_key(name.as_str())
            {
                plan.rewrite.insert(s);
            }
            plan.deleted.insert(name.to_string());
        }
        self.plan_pools(&mut plan, now_ms, config);
        plan
    }

    /// Accrues each reported node's spot exposure since its previous observation (busy then:
    /// something requested), and decides whether the pools' row is rewritten: at a
    /// reclamation, else when exposure grew and [`POOLS_PERSIST_MS`] passed since it last was.
    fn plan_pools(&self, plan: &mut Plan, now_ms: u64, config: &Config) {
        for (name, record) in &plan.records {
            let Some(before) = self.get(name) else {
                continue;
            };
            let (Some(then), Some(now)) = (&before.requested, &record.requested) else {
                continue;
            };
            let busy = then.value.any_positive();
            plan.pools
                .observed(&before.labels, busy, then.at_ms, now.at_ms, config);
        }
        let (reclaimed, exposed) = plan.pools.totals();
        let (stored_reclaimed, stored_exposed) = self.pools_persisted_totals;
        plan.persist_pools = reclaimed != stored_reclaimed
            || (exposed != stored_exposed
                && self
                    .pools_persisted_ms
                    .is_some_and(|at| now_ms.saturating_sub(at) >= POOLS_PERSIST_MS));
        plan.now_ms = now_ms;
    }

    /// Adds shards to rewrite whatever their content (e.g. misplaced rows found on load).
    pub fn force_rewrite(&self, plan: &mut Plan, shards: impl IntoIterator<Item = usize>) {
        plan.rewrite
            .extend(shards.into_iter().filter(|s| *s < SHARDS));
    }

    /// The rows a plan writes: `(shard, encoded nodes)` for every shard to rewrite, as it will be
    /// after the plan (an emptied shard is an empty array). Fails if a row would be too large.
    pub fn rows(&self, plan: &Plan) -> Result<Vec<(usize, String)>, String> {
        let mut reported: BTreeMap<usize, Vec<(&str, &NodeFacts)>> = BTreeMap::new();
        for (name, record) in &plan.records {
            reported
                .entry(shard_of(name))
                .or_default()
                .push((name.as_str(), record));
        }
        plan.rewrite
            .iter()
            .map(|&s| {
                let mut nodes: BTreeMap<&str, &NodeFacts> = self.shards[s]
                    .iter()
                    .map(|(n, f)| (n.as_str(), f))
                    .collect();
                nodes.extend(reported.get(&s).into_iter().flatten().copied());
                for name in &plan.deleted {
                    nodes.remove(name.as_str());
                }
                Ok((s, encode_shard(s, nodes.into_values())?))
            })
            .chain(plan.persist_pools.then(|| {
                serde_json::to_string(&plan.pools)
                    .map(|text| (POOLS_ROW, text))
                    .map_err(|e| format!("spot pools do not encode: {e}"))
            }))
            .collect()
    }

    /// Applies a plan whose rows were stored: memory takes the new records, rewritten shards
    /// become their persisted copies. Every shard whose memory changed — materially or not —
    /// gets a new sequence number, so readers always see memory (persistence is what the
    /// deadband saves, not freshness).
    pub fn commit(&mut self, plan: Plan) {
        // What a decision reads changed (a newer `updatedAtMs` alone is not news to readers).
        let news = |name: &str, record: &NodeFacts| match self.shards[shard_of(name)].get(name) {
            Some(old) => {
                NodeFacts {
                    updated_at_ms: record.updated_at_ms,
                    ..old.clone()
                } != *record
            }
            None => true,
        };
        let mut touched: BTreeSet<usize> = plan
            .records
            .iter()
            .filter(|(name, r)| news(name, r))
            .map(|(name, _)| shard_of(name))
            .collect();
        touched.extend(plan.deleted.iter().map(|n| shard_of(n)));
        touched.extend(plan.rewrite.iter().copied());
        if !touched.is_empty() {
            self.seq += 1;
        }
        for (name, record) in plan.records {
            self.shards[shard_of(&name)].insert(name, record);
        }
        for name in &plan.deleted {
            self.shards[shard_of(name)].remove(name);
        }
        for s in plan.rewrite {
            self.persisted[s] = self.shards[s].clone();
        }
        for s in touched {
            self.shard_seq[s] = self.seq;
        }
        if plan.persist_pools {
            self.pools_persisted_ms = Some(plan.now_ms);
            self.pools_persisted_totals = plan.pools.totals();
        } else if self.pools_persisted_ms.is_none() && plan.pools.totals() != self.pools.totals() {
            self.pools_persisted_ms = Some(plan.now_ms);
        }
        self.pools = plan.pools;
    }

    /// Shards changed in memory after `since` (all shards when `since` is `None`), with their
    /// nodes.
    pub fn changed_since(&self, since: Option<u64>) -> Vec<(usize, Vec<&NodeFacts>)> {
        (0..SHARDS)
            .filter(|&s| since.is_none_or(|seq| self.shard_seq[s] > seq))
            .map(|s| (s, self.shards[s].values().collect()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::nodes::NodeReport;

    fn report(name: &str, at_ms: u64, util: f64) -> NodeReport {
        serde_json::from_value(serde_json::json!({
            "name": name,
            "labels": {"aco/gpu-type": "A10", "aco/latency-us": "80", "aco/cost-per-hour": "1.25", "aco/instance-type": "on-demand"},
            "allocatable": {"cpu": "64", "memory": "256Gi", "nvidia.com/gpu": "8", "pods": "110"},
            "requested": {"cpu": "12500m", "memory": "48Gi", "nvidia.com/gpu": "3"},
            "latencyUs": 80.0,
            "observedAtMs": at_ms,
            "utilisation": [{"atMs": at_ms, "value": util}],
            "gpuFreeMilli": [1000, 1000, 500, 0, 0, 1000, 250, 1000],
        }))
        .unwrap()
    }

    fn batch(reports: Vec<NodeReport>, deleted: &[&str]) -> NodesBatch {
        NodesBatch {
            nodes: reports,
            deleted: deleted
                .iter()
                .map(|s| NodeName::parse(s).unwrap())
                .collect(),
            reclaimed: Vec::new(),
        }
    }

    fn apply(table: &mut FactsTable, b: &NodesBatch, now_ms: u64) -> usize {
        let plan = table.plan(b, now_ms, &Config::default());
        let rows = table.rows(&plan).unwrap().len();
        table.commit(plan);
        rows
    }

    #[test]
    fn shards_are_stable_and_spread() {
        // Pinned: the hash decides which stored row holds a node, so it must never change.
        assert_eq!(
            [
                shard_of("node-0"),
                shard_of("node-1"),
                shard_of("bench-node-00042"),
                shard_of("")
            ],
            [0, 3, 3, 5]
        );
        let mut counts = [0usize; SHARDS];
        for i in 0..10_000 {
            counts[shard_of(&format!("ip-10-0-{}-{}.ec2.internal", i / 250, i % 250))] += 1;
        }
        let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
        assert!(*min > 550 && *max < 700, "{min}..{max}");
    }

    #[test]
    fn an_identical_report_rewrites_nothing_and_a_material_change_rewrites_one_shard() {
        let mut t = FactsTable::new(MAX_STAMP_LAG_MS);
        let first = batch(
            (0..500)
                .map(|i| report(&format!("n{i}"), 1_000, 0.5))
                .collect(),
            &[],
        );
        assert_eq!(apply(&mut t, &first, 2_000), SHARDS);
        assert_eq!((t.len(), t.seq()), (500, 1));
        assert_eq!(
            apply(&mut t, &first, 3_000),
            0,
            "the same samples are not folded twice; updatedAtMs alone is not material"
        );
        assert_eq!(t.seq(), 1);
        assert_eq!(
            t.get("n7").unwrap().updated_at_ms,
            3_000,
            "memory is authoritative"
        );

        // Utilisation within the deadband: memory moves, no row is rewritten.
        let mut small = report("n7", 2_000, 0.51);
        small.labels = None;
        assert_eq!(apply(&mut t, &batch(vec![small], &[]), 4_000), 0);
        assert!(t.get("n7").unwrap().load.as_ref().unwrap().value.samples == 2);
        // ...but readers see it: the shard is news to them.
        assert_eq!(
            t.changed_since(Some(1))
                .iter()
                .map(|(s, _)| *s)
                .collect::<Vec<_>>(),
            vec![shard_of("n7")]
        );
        let seen = t.seq();
        // A new label is material: exactly the node's shard, and readers see only it.
        let mut relabelled = report("n7", 2_000, 0.51);
        relabelled
            .labels
            .as_mut()
            .unwrap()
            .insert("aco/gpu-type".into(), "T4".into());
        assert_eq!(apply(&mut t, &batch(vec![relabelled], &[]), 5_000), 1);
        let changed = t.changed_since(Some(seen));
        assert_eq!(changed.len(), 1);
        assert_eq!(changed[0].0, shard_of("n7"));
        assert_eq!(t.changed_since(None).len(), SHARDS);
    }

    #[test]
    fn drift_beyond_the_deadband_or_the_stamp_lag_is_material() {
        let t0 = FactsTable::new(MAX_STAMP_LAG_MS);
        let mut t = t0.clone();
        apply(&mut t, &batch(vec![report("n", 1_000, 0.5)], &[]), 1_000);
        // Each sample moves the EMA (α = 0.5) by 0.01: below the deadband one at a time, but
        // they add up against the persisted copy, not the previous report.
        let mut rewrites = Vec::new();
        for k in 1..=6u64 {
            rewrites.push(apply(
                &mut t,
                &batch(vec![report("n", 1_000 + k, 0.5 + 0.02 * k as f64)], &[]),
                1_000 + k,
            ));
        }
        assert!(
            rewrites.contains(&1) && rewrites.contains(&0),
            "{rewrites:?}"
        );
        // The same value observed later than the stamp lag is material; within it, not.
        let mut u = t0.clone();
        let mut steady = |at: u64| apply(&mut u, &batch(vec![report("m", at, 0.5)], &[]), at);
        assert_eq!(steady(0), 1);
        let runs: Vec<usize> = (1..=8).map(|k| steady(k * 15_000)).collect();
        // Reports every 15 s: a rewrite once the newest observation is more than 60 s ahead.
        assert_eq!(runs, vec![0, 0, 0, 0, 1, 0, 0, 0]);
    }

    #[test]
    fn deletions_and_new_nodes_rewrite_their_shards_and_unknown_deletions_nothing() {
        let mut t = FactsTable::new(MAX_STAMP_LAG_MS);
        apply(
            &mut t,
            &batch(vec![report("a", 1, 0.1), report("b", 1, 0.1)], &[]),
            10,
        );
        let plan = t.plan(&batch(vec![], &["a", "never-seen"]), 20, &Config::default());
        assert_eq!(
            (
                plan.forgotten(),
                plan.rewrites().iter().copied().collect::<Vec<_>>()
            ),
            (2, vec![shard_of("a")])
        );
        t.commit(plan);
        assert!(t.get("a").is_none() && t.get("b").is_some());
    }

    fn spot(name: &str, pool: &str, at_ms: u64) -> NodeReport {
        serde_json::from_value(serde_json::json!({
            "name": name,
            "labels": {"aco/instance-type": "spot", "node.kubernetes.io/instance-type": pool},
            "allocatable": {"cpu": "8"},
            "requested": {"cpu": "1"},
            "observedAtMs": at_ms,
        }))
        .unwrap()
    }

    #[test]
    fn spot_pools_accrue_busy_node_hours_count_each_reclamation_once_and_survive_a_restart() {
        let c = Config::default();
        let mut t = FactsTable::new(MAX_STAMP_LAG_MS);
        let minute = 60_000;
        let rows_of = |t: &mut FactsTable, b: &NodesBatch, now: u64| {
            let plan = t.plan(b, now, &c);
            let rows = t.rows(&plan).unwrap();
            t.commit(plan);
            rows
        };
        let both = batch(vec![spot("a", "g4dn", 0), spot("b", "g4dn", 0)], &[]);
        let first = rows_of(&mut t, &both, 0);
        assert!(
            first.iter().all(|(id, _)| *id != POOLS_ROW),
            "no exposure yet"
        );
        // Two busy spot nodes for 5 minutes: 10 node-minutes, in memory only.
        let later = batch(
            vec![spot("a", "g4dn", 5 * minute), spot("b", "g4dn", 5 * minute)],
            &[],
        );
        let rows = rows_of(&mut t, &later, 5 * minute);
        assert!(rows.iter().all(|(id, _)| *id != POOLS_ROW), "{rows:?}");
        let h = t.pools().pools["g4dn/"];
        assert!((h.node_hours - 10.0 / 60.0).abs() < 1e-9, "{h:?}");
        // Exposure is written once POOLS_PERSIST_MS passed since it first grew.
        let at = |m: u64| batch(vec![spot("a", "g4dn", m * minute)], &[]);
        assert!(rows_of(&mut t, &at(14), 14 * minute)
            .iter()
            .all(|(id, _)| *id != POOLS_ROW));
        assert!(rows_of(&mut t, &at(15), 15 * minute)
            .iter()
            .any(|(id, _)| *id == POOLS_ROW));
        assert!(rows_of(&mut t, &at(16), 16 * minute)
            .iter()
            .all(|(id, _)| *id != POOLS_ROW));
        // A reclamation is written at once and counted once, whatever the retries.
        let reclaim: NodesBatch =
            serde_json::from_value(serde_json::json!({"reclaimed": ["a", "a"], "deleted": ["a"]}))
                .unwrap();
        let rows = rows_of(&mut t, &reclaim, 17 * minute);
        let pools_row = rows
            .iter()
            .find(|(id, _)| *id == POOLS_ROW)
            .unwrap()
            .1
            .clone();
        rows_of(&mut t, &reclaim, 17 * minute + 1);
        assert_eq!(t.pools().pools["g4dn/"].reclamations, 1.0);
        assert!(t.get("a").is_none());
        // A restart reads the row back.
        let restarted =
            FactsTable::new(MAX_STAMP_LAG_MS).with_pools(decode_pools(&pools_row).unwrap());
        assert_eq!(restarted.pools().pools["g4dn/"].reclamations, 1.0);
        // On-demand nodes accrue nothing.
        let mut od = FactsTable::new(MAX_STAMP_LAG_MS);
        rows_of(&mut od, &batch(vec![report("x", 0, 0.5)], &[]), 0);
        rows_of(&mut od, &batch(vec![report("x", minute, 0.5)], &[]), minute);
        assert!(od.pools().pools.is_empty());
    }

    #[test]
    fn reclaimed_nodes_are_forgotten_and_validated_like_deleted_ones() {
        let mut t = FactsTable::new(MAX_STAMP_LAG_MS);
        apply(&mut t, &batch(vec![report("a", 1, 0.1)], &[]), 10);
        let b: NodesBatch =
            serde_json::from_value(serde_json::json!({"deleted": ["a"], "reclaimed": ["a"]}))
                .unwrap();
        b.validate(20).unwrap();
        let plan = t.plan(&b, 20, &Config::default());
        assert_eq!(plan.forgotten(), 1, "a name in both lists is one node");
        t.commit(plan);
        assert!(t.get("a").is_none());
        let both: NodesBatch = serde_json::from_value(serde_json::json!({
            "nodes": [{"name": "b"}], "reclaimed": ["x", "b"]
        }))
        .unwrap();
        let e = both.validate(20).unwrap_err();
        assert_eq!((e.status, e.field.as_str()), (400, "reclaimed[1]"));
        assert!(
            e.message.contains("reported and reclaimed"),
            "{}",
            e.message
        );
    }

    #[test]
    fn rows_round_trip_and_a_restart_keeps_what_was_persisted() {
        let mut t = FactsTable::new(MAX_STAMP_LAG_MS);
        let b = batch(
            (0..200)
                .map(|i| report(&format!("n{i}"), 1_000, 0.3))
                .collect(),
            &[],
        );
        let plan = t.plan(&b, 2_000, &Config::default());
        let rows = t.rows(&plan).unwrap();
        t.commit(plan);
        let decoded = rows
            .iter()
            .map(|(s, text)| (*s as i64, decode_shard(text).unwrap()));
        let (loaded, misplaced) = FactsTable::from_rows(decoded, MAX_STAMP_LAG_MS);
        assert!(misplaced.is_empty());
        assert_eq!(loaded.get("n42"), t.get("n42"));
        assert_eq!(loaded.len(), 200);
        // A row stored under the wrong id (e.g. another SHARDS) is rewritten on the next batch.
        let n = t.get("n1").unwrap().clone();
        let wrong = (shard_of("n1") as i64 + 1) % SHARDS as i64;
        let (_, misplaced) = FactsTable::from_rows([(wrong, vec![n])], MAX_STAMP_LAG_MS);
        assert_eq!(misplaced, BTreeSet::from([shard_of("n1"), wrong as usize]));
    }

    #[test]
    fn ten_thousand_real_shaped_nodes_fit_the_row_limit_with_room_to_spare() {
        let t = FactsTable::new(MAX_STAMP_LAG_MS);
        let names: Vec<String> = (0..10_000)
            .map(|i| {
                format!(
                    "gke-prod-pool-gpu-a10-{:08x}-{i:05}.europe-west4-a.c.project.internal",
                    i * 2_654_435_761u64
                )
            })
            .collect();
        let b = batch(names.iter().map(|n| report(n, 1_000, 0.42)).collect(), &[]);
        let plan = t.plan(&b, 2_000, &Config::default());
        let rows = t.rows(&plan).unwrap();
        let largest = rows.iter().map(|(_, text)| text.len()).max().unwrap();
        let total: usize = rows.iter().map(|(_, text)| text.len()).sum();
        eprintln!(
            "10,000 nodes: {} rows, largest {largest} B, total {total} B",
            rows.len()
        );
        // At most a quarter of the limit: room for 4× the nodes or much larger label sets.
        assert!(largest < MAX_ROW_BYTES / 4, "{largest}");
    }

    #[test]
    fn an_oversized_shard_is_refused_naming_it() {
        let huge = NodeFacts {
            name: "n".into(),
            labels: [("k".to_string(), "v".repeat(MAX_ROW_BYTES))].into(),
            ..Default::default()
        };
        let e = encode_shard(shard_of("n"), [&huge].into_iter()).unwrap_err();
        assert!(
            e.contains("row limit") && e.contains(&format!("shard {}", shard_of("n"))),
            "{e}"
        );
    }

    #[test]
    fn batch_validation_names_the_field_and_caps_the_size() {
        let both = batch(vec![report("x", 1, 0.1)], &["y", "x"]);
        let e = both.validate(10).unwrap_err();
        assert_eq!((e.status, e.field.as_str()), (400, "deleted[1]"));
        let many = NodesBatch {
            nodes: vec![report("n", 1, 0.1); MAX_BATCH + 1],
            ..NodesBatch::default()
        };
        assert_eq!(many.validate(10).unwrap_err().status, 413);
        let full = NodesBatch {
            nodes: (0..MAX_BATCH)
                .map(|i| NodeReport::named(NodeName::parse(&format!("n{i}")).unwrap()))
                .collect(),
            ..NodesBatch::default()
        };
        assert!(full.validate(10).is_ok());
    }
}
