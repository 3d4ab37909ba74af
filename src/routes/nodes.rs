//! `PUT /v1/nodes`: a batch of node facts from the in-cluster reporter, merged into the KV
//! records (utilisation samples folded into each node's EMA on write), and the names of nodes
//! that left the cluster, whose records are deleted. `GET /v1/nodes/{name}` shows one record.

use std::collections::{BTreeMap, BTreeSet};

use aco_core::facts::{validate_node_name, NodeFacts, NodeReport};
use serde::Deserialize;

use super::{Call, Handled};
use crate::auth::require_admin;
use crate::facts_store;
use crate::http::{json_response, parse_json, read_body, ApiError};

const MAX_BATCH: usize = 5_000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Batch {
    #[serde(default)]
    nodes: Vec<NodeReport>,
    /// Nodes that no longer exist: their facts are forgotten.
    #[serde(default)]
    deleted: Vec<String>,
}

pub async fn put_nodes(call: &mut Call) -> Handled {
    require_admin(&call.req, &call.env)?;
    let body = read_body(&mut call.req, call.config.max_body_bytes).await?;
    let batch: Batch = parse_json(&body, "node facts batch")?;
    if batch.nodes.len() > MAX_BATCH {
        return Err(ApiError::field(413, "nodes", format!("at most {MAX_BATCH} nodes per request")));
    }
    if batch.deleted.len() > MAX_BATCH {
        return Err(ApiError::field(413, "deleted", format!("at most {MAX_BATCH} deleted nodes per request")));
    }
    // Validate the whole batch first: a bad report or name stores and deletes nothing.
    for (i, report) in batch.nodes.iter().enumerate() {
        report.validate(&format!("nodes[{i}]"), call.now_ms).map_err(|e| ApiError::field(400, e.field.clone(), e.to_string()))?;
    }
    let reported: BTreeSet<&str> = batch.nodes.iter().map(|r| r.name.as_str()).collect();
    for (i, name) in batch.deleted.iter().enumerate() {
        let field = format!("deleted[{i}]");
        validate_node_name(name).map_err(|m| ApiError::field(400, field.clone(), m))?;
        if reported.contains(name.as_str()) {
            return Err(ApiError::field(400, field, format!("node {name:?} is both reported and deleted")));
        }
    }
    let deleted: BTreeSet<&str> = batch.deleted.iter().map(String::as_str).collect();
    let kv = &call.bindings;
    // Facts are read fresh (no isolate cache) so that a merge never builds on an old copy.
    let mut records: BTreeMap<String, NodeFacts> =
        facts_store::load(kv, batch.nodes.iter().map(|r| r.name.as_str()), call.now_ms, 0).await?.into_iter().collect();
    for report in &batch.nodes {
        records.entry(report.name.clone()).or_default().apply(report, call.now_ms, &call.config);
    }
    let records: Vec<NodeFacts> = records.into_values().collect();
    facts_store::store(kv, &records, call.now_ms).await?;
    facts_store::forget(kv, deleted.iter().copied(), call.now_ms).await?;
    call.event.count("aco_node_facts_stored_total", String::new(), records.len() as f64);
    call.event.count("aco_node_facts_forgotten_total", String::new(), deleted.len() as f64);
    Ok(json_response(200, &serde_json::json!({"stored": records.len(), "forgotten": deleted.len()})))
}

/// `GET /v1/nodes/{name}`: the stored facts of one node, read from KV (not the isolate cache).
pub async fn get_node(call: &mut Call, name: &str) -> Handled {
    require_admin(&call.req, &call.env)?;
    validate_node_name(name).map_err(|m| ApiError::field(400, "name", m))?;
    let mut found = facts_store::load(&call.bindings, std::iter::once(name), call.now_ms, 0).await?;
    match found.remove(name) {
        Some(facts) => Ok(json_response(200, &facts)),
        None => Err(ApiError::field(404, "name", format!("no facts stored for node {name:?}"))),
    }
}
