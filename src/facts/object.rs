//! The Facts Durable Object: one instance per cluster (`get_by_name(cluster)`), the single writer
//! of that cluster's node facts. Every node's `NodeFacts` lives in memory (an
//! `aco_core::facts_shards::FactsTable`, loaded from SQLite on first use) and is persisted packed
//! into `SHARDS` rows of the table `shards(id, body)`, each row the JSON array of its nodes.
//!
//! Memory is authoritative. A batch rewrites only the rows of shards in which a node changed
//! materially (see `facts_shards`): so a restart of this object loses at most the non-material
//! changes — observation times less than `stamp_lag_ms` (60 s) newer than the stored ones,
//! utilisation EMA movement within `LOAD_DEADBAND`, `updatedAtMs` — never a node, a label, an
//! allocatable or requested amount, a latency or a GPU share.
//!
//! A batch is validated whole, then applied to copies, its rows written in one SQLite
//! transaction (`transactionSync`), and only then applied to memory: a failed request changes
//! nothing. Every reply carries `x-aco-rows-written`, the SQLite rows the request wrote.
//!
//! Internal API (`api.rs`, used only by `client.rs`): `/nodes` (`PutNodes`: the `PUT /v1/nodes`
//! batch as received), `/node` (one node's record), `/snapshot` (shards rewritten since the
//! reader's version of this instance, or all, and the spot pools' history). The spot pools
//! (`aco_core::heuristic::spot_risk::SpotPools`) are kept in one more row of the same table, id
//! `POOLS_ROW`.

use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::rc::Rc;

use aco_core::api::nodes::{NodesBatch, NodesReply};
use aco_core::facts_shards::{
    decode_pools, decode_shard, stamp_lag_ms, FactsTable, POOLS_ROW, SHARDS,
};
use aco_core::facts_wire::{write_snapshot, FactsVersion, NodeRequest, PutNodes, SnapshotRequest};
use aco_core::heuristic::spot_risk::SpotPools;
use serde::{Deserialize, Serialize};
use worker::{
    durable_object, DurableObject, Env, Request, Response, Result, SqlStorage, SqlStorageValue,
    State,
};

use super::api::{FactsApi, Route};
use crate::bindings::ROWS_WRITTEN_HEADER;
use crate::env_config;
use crate::http::text_response;
use crate::object_call::{self, Incoming, ObjectCall};
use crate::sql_transaction::run_in_transaction;

#[derive(Deserialize)]
struct ShardRow {
    id: f64,
    body: String,
}

const SCHEMA: &str =
    "CREATE TABLE IF NOT EXISTS shards(id INTEGER PRIMARY KEY, body TEXT NOT NULL)";
const UPSERT: &str =
    "INSERT INTO shards(id, body) VALUES(?, ?) ON CONFLICT(id) DO UPDATE SET body = excluded.body";

/// Prefix of the error answered when a stored row does not parse.
const CORRUPT: &str = "corrupt facts state";

/// A reply, with the rows it wrote.
struct Reply {
    status: u16,
    body: String,
    rows_written: u64,
}

fn reply<C: ObjectCall>(value: &C::Reply, rows_written: u64) -> Reply {
    match object_call::reply::<C>(value) {
        Ok(body) => Reply {
            status: 200,
            body,
            rows_written,
        },
        Err(e) => refuse(503, None, format!("serialisation failed: {e}")),
    }
}

fn json<T: Serialize>(status: u16, value: &T, rows_written: u64) -> Reply {
    let body = serde_json::to_string(value)
        .unwrap_or_else(|e| format!(r#"{{"error":"serialisation failed: {e}"}}"#));
    Reply {
        status,
        body,
        rows_written,
    }
}

fn refuse(status: u16, field: Option<&str>, message: String) -> Reply {
    json(
        status,
        &serde_json::json!({"error": message, "field": field}),
        0,
    )
}

fn sql_error(e: impl std::fmt::Display) -> worker::Error {
    worker::Error::RustError(e.to_string())
}

/// A shard's JSON and the shard's sequence number when it was encoded.
type EncodedShard = (u64, Rc<str>);

#[durable_object]
pub struct Facts {
    state: State,
    env: Env,
    sql: SqlStorage,
    table: RefCell<Option<FactsTable>>,
    /// Shards whose stored row does not match the current sharding: rewritten by the next batch.
    misplaced: RefCell<BTreeSet<usize>>,
    /// Identifies this instance's sequence numbers: a reader holding another instance's (this
    /// object restarted) gets everything.
    instance: u64,
    schema_ready: Cell<bool>,
    /// Each shard's JSON as last served, with the shard's sequence number then.
    encoded: RefCell<Vec<Option<EncodedShard>>>,
}

impl Facts {
    fn ensure_schema(&self) -> Result<()> {
        if !self.schema_ready.get() {
            self.sql.exec(SCHEMA, None)?;
            self.schema_ready.set(true);
        }
        Ok(())
    }

    fn stamp_lag(&self) -> Result<u64> {
        let config = env_config::config(&self.env).map_err(sql_error)?;
        Ok(stamp_lag_ms(config.facts.facts_ttl_ms))
    }

    /// Runs `f` on the table, loading it from SQLite on first use in this instance's lifetime. A
    /// row that does not parse is an error naming it: serving a cluster with nodes silently
    /// missing would be worse than refusing.
    fn with_table<T>(&self, f: impl FnOnce(&FactsTable) -> T) -> Result<T> {
        let mut slot = self.table.borrow_mut();
        if slot.is_none() {
            let mut rows = Vec::new();
            let mut pools = SpotPools::default();
            for row in self
                .sql
                .exec("SELECT id, body FROM shards", None)?
                .to_array::<ShardRow>()?
            {
                if row.id as usize == POOLS_ROW {
                    pools = decode_pools(&row.body).map_err(|e| {
                        sql_error(format!("{CORRUPT}: the spot pools row does not parse: {e}"))
                    })?;
                    continue;
                }
                let nodes = decode_shard(&row.body).map_err(|e| {
                    sql_error(format!("{CORRUPT}: shards[{}] does not parse: {e}", row.id))
                })?;
                rows.push((row.id as i64, nodes));
            }
            let (table, misplaced) = FactsTable::from_rows(rows, self.stamp_lag()?);
            let table = table.with_pools(pools);
            *self.misplaced.borrow_mut() = misplaced;
            *slot = Some(table);
        }
        match slot.as_ref() {
            Some(table) => Ok(f(table)),
            None => Err(sql_error("facts table not loaded")),
        }
    }

    fn put(&self, body: &str, now_ms: u64) -> Result<Reply> {
        // Node names are typed: a bad one is refused here, at its path (`deleted[1]`).
        let batch: NodesBatch = match aco_core::k8s::parse_json_at::<NodesBatch>(body) {
            Ok(b) => b,
            Err((field, message)) => {
                return Ok(refuse(
                    400,
                    field.as_deref(),
                    format!("invalid node facts batch: {message}"),
                ))
            }
        };
        if let Err(e) = batch.validate(now_ms) {
            return Ok(refuse(e.status, Some(&e.field), e.message));
        }
        let config = env_config::config(&self.env).map_err(sql_error)?;
        let planned = self.with_table(|t| {
            let mut plan = t.plan(&batch, now_ms, &config);
            t.force_rewrite(&mut plan, self.misplaced.borrow().iter().copied());
            let rows = t.rows(&plan);
            (plan, rows)
        })?;
        let (plan, rows) = planned;
        // Too large a shard: the cluster outgrew the store; nothing is written.
        let rows = rows.map_err(sql_error)?;
        let rows_written = self.write(&rows)?;
        let (stored, forgotten) = (plan.stored(), plan.forgotten());
        let nodes = {
            let mut slot = self.table.borrow_mut();
            match slot.as_mut() {
                Some(t) => {
                    t.commit(plan);
                    t.len()
                }
                None => 0,
            }
        };
        if !rows.is_empty() {
            self.misplaced.borrow_mut().clear();
        }
        Ok(reply::<PutNodes>(
            &NodesReply {
                stored,
                forgotten,
                rows_written,
                nodes,
            },
            rows_written,
        ))
    }

    /// Writes the rows in one transaction: all of them or, on the first error, none (the table
    /// in memory is updated only after this succeeds). Returns the SQLite rows written.
    fn write(&self, rows: &[(usize, String)]) -> Result<u64> {
        if rows.is_empty() {
            return Ok(0);
        }
        let statements: Vec<(&'static str, Vec<SqlStorageValue>)> = rows
            .iter()
            .map(|(id, text)| {
                (
                    UPSERT,
                    vec![SqlStorageValue::Integer(*id as i64), text.as_str().into()],
                )
            })
            .collect();
        Ok(run_in_transaction(&self.state.storage(), &self.sql, &statements)? as u64)
    }

    fn get(&self, name: &str) -> Result<Reply> {
        self.with_table(|t| reply::<NodeRequest>(&t.get(name).cloned(), 0))
    }

    /// The shards changed since the reader's version, as `SnapshotReply` JSON. A shard's JSON
    /// is encoded once per change and kept (`encoded`), not per request: busy isolates each ask
    /// every `FACTS_CACHE_MS`, and re-serialising 5,000 nodes per request was most of its cost.
    fn snapshot(&self, request: SnapshotRequest) -> Result<Reply> {
        let since = request
            .since
            .filter(|v| v.instance == self.instance)
            .map(|v| v.seq);
        self.with_table(|t| {
            let mut encoded = self.encoded.borrow_mut();
            encoded.resize(SHARDS, None);
            let shards: Vec<(usize, Rc<str>)> = t
                .changed_since(since)
                .into_iter()
                .map(|(id, nodes)| {
                    let seq = t.shard_seq(id);
                    let text = match &encoded[id] {
                        Some((at, text)) if *at == seq => text.clone(),
                        _ => {
                            let text: Rc<str> = serde_json::to_string(&nodes)
                                .unwrap_or_else(|_| "[]".into())
                                .into();
                            encoded[id] = Some((seq, text.clone()));
                            text
                        }
                    };
                    (id, text)
                })
                .collect();
            let version = FactsVersion {
                instance: self.instance,
                seq: t.seq(),
            };
            Reply {
                status: 200,
                body: write_snapshot(
                    version,
                    since.is_none(),
                    t.pools(),
                    shards.iter().map(|(id, text)| (*id, &**text)),
                ),
                rows_written: 0,
            }
        })
    }

    async fn route(&self, mut req: Request) -> Result<Reply> {
        self.ensure_schema()?;
        let incoming = Incoming::<FactsApi>::read(&mut req).await?;
        let bad = |e: String| sql_error(e);
        match incoming.route {
            Route::Put => {
                let put: PutNodes = incoming.call().map_err(bad)?;
                self.put(put.batch.get(), put.now_ms)
            }
            Route::Node => {
                let node: NodeRequest = incoming.call().map_err(bad)?;
                self.get(&node.name)
            }
            Route::Snapshot => self.snapshot(incoming.call().map_err(bad)?),
        }
    }
}

impl DurableObject for Facts {
    fn new(state: State, env: Env) -> Self {
        let sql = state.storage().sql();
        let schema_ready = sql.exec(SCHEMA, None).is_ok();
        let instance = getrandom::u64().unwrap_or_else(|_| worker::Date::now().as_millis());
        Self {
            state,
            env,
            sql,
            table: RefCell::new(None),
            misplaced: RefCell::new(BTreeSet::new()),
            instance,
            schema_ready: Cell::new(schema_ready),
            encoded: RefCell::new(Vec::new()),
        }
    }

    async fn fetch(&self, req: Request) -> Result<Response> {
        let request_id = crate::log::forwarded_id(&req);
        let r = match self.route(req).await {
            Ok(r) => r,
            Err(e) => {
                let message = e.to_string();
                crate::log::error("facts", request_id.as_deref(), &message);
                refuse(503, None, message)
            }
        };
        let resp = text_response(r.status, r.body, "application/json");
        let _ = resp
            .headers()
            .set(ROWS_WRITTEN_HEADER, &r.rows_written.to_string());
        Ok(resp)
    }
}
