//! The Colony Durable Object: one instance per tenant (`id_from_name(tenant)`), holding that
//! tenant's pheromone table, per-node outcome history, remembered decisions and counters.
//! A Durable Object runs one event at a time, so updates are serialised without locks; all
//! storage calls here are synchronous SQLite statements, so no other event can interleave
//! between reading and writing the table.
//!
//! Internal API (JSON over the stub's fetch), used only by the Worker:
//! `POST /prioritize`, `POST /placements`, `GET|DELETE /pheromones`, `GET /metrics`.

use std::cell::{Cell, RefCell};
use std::fmt::Write;

use aco_core::colony::{Decision, Outcome, PlacementEffect, TenantColony, Trail};
use aco_core::config::Config;
use aco_core::demand::WorkloadClass;
use aco_core::heuristic::{NodeFeatures, OutcomeStats};
use aco_core::wire::HostPriority;
use rand::{rngs::SmallRng, SeedableRng};
use serde::{Deserialize, Serialize};
use worker::{durable_object, DurableObject, Env, Method, Request, Response, Result, SqlStorage, SqlStorageValue, State};

use crate::env_config;
use crate::http::{json_response, text_response};
use crate::metrics_text::label_value;

pub const BINDING: &str = "COLONY";

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PrioritizeRequest {
    pub tenant: String,
    pub key: String,
    pub workload: WorkloadClass,
    pub features: Vec<NodeFeatures>,
    pub now_ms: u64,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PrioritizeResponse {
    pub priorities: Vec<HostPriority>,
    pub explored: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlacementItem {
    pub key: String,
    pub node: String,
    pub outcome: Option<Outcome>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlacementsRequest {
    pub tenant: String,
    pub items: Vec<PlacementItem>,
    pub now_ms: u64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlacementsResponse {
    pub deposited: u64,
    pub unknown_pod: u64,
    pub not_a_candidate: u64,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TrailView {
    pub node: String,
    pub tau: f64,
    pub successes: f64,
    pub failures: f64,
}

#[derive(Deserialize)]
struct TrailRow {
    node: String,
    tau: f64,
    epoch: f64,
}

#[derive(Deserialize)]
struct OutcomeRow {
    node: String,
    successes: f64,
    failures: f64,
}

#[derive(Deserialize)]
struct ValueRow {
    value: String,
}

#[durable_object]
pub struct Colony {
    state: State,
    env: Env,
    sql: SqlStorage,
    colony: RefCell<Option<TenantColony>>,
    /// An alarm is known to be armed (saves a storage round trip per decision).
    alarm_armed: Cell<bool>,
}

const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS trails(node TEXT PRIMARY KEY, tau REAL NOT NULL, epoch INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS outcomes(node TEXT PRIMARY KEY, successes REAL NOT NULL, failures REAL NOT NULL);
    CREATE TABLE IF NOT EXISTS decisions(key TEXT PRIMARY KEY, created_ms INTEGER NOT NULL, body TEXT NOT NULL);
    CREATE INDEX IF NOT EXISTS decisions_by_age ON decisions(created_ms);
    CREATE TABLE IF NOT EXISTS meta(name TEXT PRIMARY KEY, value TEXT NOT NULL);
";

impl Colony {
    fn config(&self) -> Result<std::rc::Rc<Config>> {
        env_config::config(&self.env).map_err(|e| worker::Error::RustError(e.to_string()))
    }

    /// Loads the colony from SQLite on first use in this instance's lifetime.
    fn with_colony<T>(&self, f: impl FnOnce(&mut TenantColony) -> T) -> Result<T> {
        let mut slot = self.colony.borrow_mut();
        if slot.is_none() {
            self.sql.exec(SCHEMA, None)?;
            let mut colony = TenantColony::default();
            for row in self.sql.exec("SELECT node, tau, epoch FROM trails", None)?.to_array::<TrailRow>()? {
                colony.pheromones.trails.insert(row.node, Trail { tau: row.tau, epoch: row.epoch as u64 });
            }
            for row in self.sql.exec("SELECT node, successes, failures FROM outcomes", None)?.to_array::<OutcomeRow>()? {
                colony.outcomes.insert(row.node, OutcomeStats { successes: row.successes, failures: row.failures });
            }
            let meta = |name: &str| -> Result<Option<String>> {
                let rows: Vec<ValueRow> = self.sql.exec("SELECT value FROM meta WHERE name = ?", Some(vec![name.into()]))?.to_array()?;
                Ok(rows.into_iter().next().map(|r| r.value))
            };
            if let Some(epoch) = meta("epoch")? {
                colony.pheromones.epoch = epoch.parse().unwrap_or(0);
            }
            if let Some(counters) = meta("counters")? {
                colony.counters = serde_json::from_str(&counters).unwrap_or_default();
            }
            *slot = Some(colony);
        }
        Ok(f(slot.as_mut().expect("loaded above")))
    }

    fn set_meta(&self, name: &str, value: String) -> Result<()> {
        self.sql.exec("INSERT OR REPLACE INTO meta(name, value) VALUES(?, ?)", Some(vec![name.into(), value.into()]))?;
        Ok(())
    }

    fn persist_counters(&self) -> Result<()> {
        let counters = self.with_colony(|c| serde_json::to_string(&c.counters))??;
        self.set_meta("counters", counters)
    }

    async fn prioritize(&self, req: PrioritizeRequest) -> Result<Response> {
        let config = self.config()?;
        let mut rng = SmallRng::seed_from_u64(getrandom::u64().unwrap_or(req.now_ms));
        let prioritized = self.with_colony(|c| c.prioritize(&req.features, req.workload, req.now_ms, &config, &mut rng))?;
        self.set_meta("tenant", req.tenant.clone())?;
        self.persist_counters()?;
        self.sql.exec(
            "INSERT OR REPLACE INTO decisions(key, created_ms, body) VALUES(?, ?, ?)",
            Some(vec![
                req.key.into(),
                SqlStorageValue::Integer(req.now_ms as i64),
                serde_json::to_string(&prioritized.decision)?.into(),
            ]),
        )?;
        self.ensure_alarm(&config).await?;
        Ok(json_response(200, &PrioritizeResponse { priorities: prioritized.priorities, explored: prioritized.explored }))
    }

    fn take_decision(&self, key: &str, now_ms: u64, ttl_ms: u64) -> Result<Option<Decision>> {
        let rows: Vec<ValueRow> = self
            .sql
            .exec(
                "SELECT body AS value FROM decisions WHERE key = ? AND created_ms >= ?",
                Some(vec![key.into(), SqlStorageValue::Integer(now_ms.saturating_sub(ttl_ms) as i64)]),
            )?
            .to_array()?;
        Ok(rows.into_iter().next().and_then(|r| serde_json::from_str(&r.value).ok()))
    }

    fn placements(&self, req: PlacementsRequest) -> Result<Response> {
        let config = self.config()?;
        self.set_meta("tenant", req.tenant.clone())?;
        let mut out = PlacementsResponse::default();
        for item in &req.items {
            let decision = self.take_decision(&item.key, req.now_ms, config.decision_ttl_ms)?;
            let effect = self
                .with_colony(|c| c.confirm(decision.as_ref(), &item.node, item.outcome, &config))?
                .map_err(worker::Error::RustError)?;
            match effect {
                PlacementEffect::Deposited { node, trail, .. } => {
                    out.deposited += 1;
                    self.sql.exec(
                        "INSERT OR REPLACE INTO trails(node, tau, epoch) VALUES(?, ?, ?)",
                        Some(vec![node.clone().into(), trail.tau.into(), SqlStorageValue::Integer(trail.epoch as i64)]),
                    )?;
                    if item.outcome.is_some() {
                        let stats = self.with_colony(|c| c.outcomes.get(&node).copied().unwrap_or_default())?;
                        self.sql.exec(
                            "INSERT OR REPLACE INTO outcomes(node, successes, failures) VALUES(?, ?, ?)",
                            Some(vec![node.into(), stats.successes.into(), stats.failures.into()]),
                        )?;
                    }
                    // One deposit per pod: a repeated report finds no decision and is counted as unknown.
                    self.sql.exec("DELETE FROM decisions WHERE key = ?", Some(vec![item.key.clone().into()]))?;
                }
                PlacementEffect::UnknownPod => out.unknown_pod += 1,
                PlacementEffect::NotACandidate => out.not_a_candidate += 1,
            }
        }
        let epoch = self.with_colony(|c| c.pheromones.epoch)?;
        self.set_meta("epoch", epoch.to_string())?;
        self.persist_counters()?;
        Ok(json_response(200, &out))
    }

    fn table(&self) -> Result<Response> {
        let config = self.config()?;
        let tenant = self.tenant()?;
        let pending = self.sql.exec("SELECT COUNT(*) AS value FROM decisions", None)?.to_array::<serde_json::Value>()?;
        let pending = pending.first().and_then(|v| v.get("value")).and_then(|v| v.as_u64()).unwrap_or(0);
        let body = self.with_colony(|c| {
            let nodes: Vec<TrailView> = c
                .pheromones
                .snapshot(&config)
                .into_iter()
                .map(|(node, tau)| {
                    let o = c.outcomes.get(&node).copied().unwrap_or_default();
                    TrailView { node, tau, successes: o.successes, failures: o.failures }
                })
                .collect();
            serde_json::json!({
                "tenant": tenant,
                "epoch": c.pheromones.epoch,
                "tauInitialNow": c.pheromones.tau("", &config),
                "bounds": {"tauMin": config.tau_min, "tauMax": config.tau_max, "rho": config.rho},
                "nodes": nodes,
                "counters": c.counters,
                "pendingDecisions": pending,
            })
        })?;
        Ok(json_response(200, &body))
    }

    fn tenant(&self) -> Result<String> {
        self.sql.exec(SCHEMA, None)?;
        let rows: Vec<ValueRow> = self.sql.exec("SELECT value FROM meta WHERE name = 'tenant'", None)?.to_array()?;
        Ok(rows.into_iter().next().map(|r| r.value).unwrap_or_default())
    }

    fn reset(&self) -> Result<Response> {
        let tenant = self.tenant()?;
        for table in ["trails", "outcomes", "decisions", "meta"] {
            self.sql.exec(&format!("DELETE FROM {table}"), None)?;
        }
        if !tenant.is_empty() {
            self.set_meta("tenant", tenant)?;
        }
        *self.colony.borrow_mut() = None;
        Ok(json_response(200, &serde_json::json!({"reset": true})))
    }

    fn metrics(&self) -> Result<Response> {
        let config = self.config()?;
        let tenant = label_value(&self.tenant()?);
        let text = self.with_colony(|c| {
            let mut out = String::new();
            let k = &c.counters;
            for (name, value) in [
                ("aco_colony_decisions_total", k.decisions),
                ("aco_colony_explorations_total", k.explorations),
                ("aco_colony_deposits_total", k.deposits),
                ("aco_colony_approximate_deposits_total", k.approximate_deposits),
                ("aco_colony_unknown_placements_total", k.unknown_placements),
                ("aco_colony_non_candidate_placements_total", k.non_candidate_placements),
                ("aco_colony_failed_outcomes_total", k.failed_outcomes),
            ] {
                let _ = writeln!(out, "{name}{{tenant=\"{tenant}\"}} {value}");
            }
            let _ = writeln!(out, "aco_colony_epoch{{tenant=\"{tenant}\"}} {}", c.pheromones.epoch);
            for (node, tau) in c.pheromones.snapshot(&config) {
                let _ = writeln!(out, "aco_pheromone{{tenant=\"{tenant}\",node=\"{}\"}} {tau}", label_value(&node));
            }
            out
        })?;
        Ok(text_response(200, text, "text/plain"))
    }

    async fn ensure_alarm(&self, config: &Config) -> Result<()> {
        if self.alarm_armed.get() {
            return Ok(());
        }
        let storage = self.state.storage();
        if storage.get_alarm().await?.is_none() {
            storage.set_alarm(config.decision_ttl_ms.min(i64::MAX as u64) as i64).await?;
        }
        self.alarm_armed.set(true);
        Ok(())
    }
}

impl DurableObject for Colony {
    fn new(state: State, env: Env) -> Self {
        let sql = state.storage().sql();
        Self { state, env, sql, colony: RefCell::new(None), alarm_armed: Cell::new(false) }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        match (req.method(), req.path().as_str()) {
            (Method::Post, "/prioritize") => self.prioritize(req.json().await?).await,
            (Method::Post, "/placements") => self.placements(req.json().await?),
            (Method::Get, "/pheromones") => self.table(),
            (Method::Delete, "/pheromones") => self.reset(),
            (Method::Get, "/metrics") => self.metrics(),
            _ => Ok(text_response(404, "unknown colony route".into(), "text/plain")),
        }
    }

    /// Drops decisions older than DECISION_TTL_MS (pods never confirmed) and re-arms while any remain.
    async fn alarm(&self) -> Result<Response> {
        self.alarm_armed.set(false);
        let config = self.config()?;
        let now = worker::Date::now().as_millis();
        self.sql.exec(SCHEMA, None)?;
        self.sql.exec(
            "DELETE FROM decisions WHERE created_ms < ?",
            Some(vec![SqlStorageValue::Integer(now.saturating_sub(config.decision_ttl_ms) as i64)]),
        )?;
        let left = self.sql.exec("SELECT COUNT(*) AS value FROM decisions", None)?.to_array::<serde_json::Value>()?;
        if left.first().and_then(|v| v.get("value")).and_then(|v| v.as_u64()).unwrap_or(0) > 0 {
            self.state.storage().set_alarm(config.decision_ttl_ms as i64).await?;
            self.alarm_armed.set(true);
        }
        Response::ok("pruned")
    }
}
