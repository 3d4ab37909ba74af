//! Node facts, per cluster: written through the cluster's Facts Durable Object (`facts_do`, the
//! single writer, one request per `PUT /v1/nodes` whatever its size), read on the hot path from a
//! per-isolate copy of the cluster's snapshot.
//!
//! The copy is kept for `FACTS_CACHE_MS`. On a miss the isolate asks the object for the shards
//! rewritten since the version it holds (all of them the first time, or after the object
//! restarted) in ONE request, so a filter over 5,000 candidates costs at most one binding
//! operation. A shard is rewritten when one of its nodes changes materially (`facts_shards`), so
//! a reader sees a material change within `FACTS_CACHE_MS` of its report, and the small movements
//! (observation times, utilisation within the deadband) no later than the next material change
//! of the shard — at most `stamp_lag_ms` (60 s) behind in any observation time. A `PUT` marks this
//! isolate's copy stale, so that the isolate reads its own writes.
//!
//! Verbs read the copy in place, through the cluster's pipeline (`crate::pipeline`, the copy an
//! `aco_core::pipeline::ClusterFacts`): a refresh builds the next version beside the current one,
//! sharing the shards it did not rewrite, so a request that holds the old one keeps reading a
//! consistent snapshot.
//!
//! Concurrent misses in one isolate each make their own request rather than awaiting a shared
//! one: a Rust waker fired by one request's fetch would poll the other request inside the first
//! one's I/O context, which workerd refuses or warns about ("a promise was resolved from a
//! different request context"). Such fetches are deltas from the same version, and a reply older
//! than the copy is not applied, so they cost one operation each and never go back in time.

use std::collections::HashMap;
use std::rc::Rc;

use aco_core::api::nodes::NodesReply;
use aco_core::cluster::ClusterId;
use aco_core::config::Config;
use aco_core::facts::NodeFacts;
use aco_core::facts_wire::{FactsVersion, NodeRequest, PutNodes, SnapshotRequest};
use serde_json::value::RawValue;

use crate::bindings::Bindings;
use crate::http::ApiError;
use crate::object_call;
use crate::pipeline;

/// Brings `cluster`'s facts copy up to date first when it is older than `cache_ms`; the verbs
/// then read it in place through the cluster's pipeline (`crate::pipeline`).
pub async fn load(
    bindings: &Bindings,
    cluster: &ClusterId,
    now_ms: u64,
    config: &Rc<Config>,
) -> Result<(), ApiError> {
    let fresh = pipeline::with(cluster, |s| {
        s.fetched_at_ms
            .is_some_and(|at| now_ms.saturating_sub(at) <= config.facts.facts_cache_ms)
    });
    if !fresh {
        refresh(bindings, cluster, now_ms, config).await?;
    }
    pipeline::with(cluster, |s| s.read_under(config));
    Ok(())
}

/// Facts of every node of `cluster` (shadow mode scores a pod against the whole cluster, not a
/// candidate list): the same copy and the same single refresh request as [`load`].
pub async fn load_all(
    bindings: &Bindings,
    cluster: &ClusterId,
    now_ms: u64,
    config: &Rc<Config>,
) -> Result<HashMap<String, NodeFacts>, ApiError> {
    load(bindings, cluster, now_ms, config).await?;
    Ok(pipeline::with(cluster, |s| {
        s.pipeline
            .facts()
            .nodes()
            .map(|f| (f.name.clone(), f.clone()))
            .collect()
    }))
}

/// Brings this isolate's copy up to date with one request to the cluster's Facts object.
async fn refresh(
    bindings: &Bindings,
    cluster: &ClusterId,
    now_ms: u64,
    config: &Rc<Config>,
) -> Result<(), ApiError> {
    let (version, generation) = pipeline::with(cluster, |s| (s.facts_version, s.generation));
    let since = version.map(|(instance, seq)| FactsVersion { instance, seq });
    let reply = object_call::call(bindings, cluster.as_str(), &SnapshotRequest { since }).await?;
    pipeline::with(cluster, |s| {
        let newer = match s.facts_version {
            Some((instance, seq)) => reply.instance != instance || reply.seq > seq,
            None => true,
        };
        // A reply older than the copy (a concurrent fetch finished first) is not applied.
        if newer {
            // A new version beside the one requests may still hold (copying 16 pointers).
            s.read_under(config);
            s.pipeline.update(|facts, pools| {
                if reply.full {
                    *facts = Default::default();
                }
                for shard in reply.shards {
                    facts.replace_shard(shard.id, shard.nodes, &config.node_keys, &config.spot);
                }
                *pools = reply.pools;
            });
            s.facts_version = Some((reply.instance, reply.seq));
        }
        if s.generation == generation {
            s.fetched_at_ms = Some(now_ms);
        }
    });
    Ok(())
}

/// Stores a `PUT /v1/nodes` batch (the body as received; the Facts object validates it whole
/// and answers 4xx naming the field) in one request, and marks this isolate's copy stale.
pub async fn put(
    bindings: &Bindings,
    cluster: &ClusterId,
    batch: String,
    now_ms: u64,
) -> Result<NodesReply, ApiError> {
    // Only that it is JSON is checked here (it travels inside the request's JSON); what it
    // says, the object reads once.
    let batch = RawValue::from_string(batch)
        .map_err(|e| ApiError::new(400, format!("invalid node facts batch: {e}")))?;
    let sent = object_call::call(bindings, cluster.as_str(), &PutNodes { now_ms, batch }).await;
    // Even a refused batch may have raced a write by another request: re-read either way.
    pipeline::with(cluster, |s| {
        s.fetched_at_ms = None;
        s.generation += 1;
    });
    sent
}

/// The authoritative record of one node (from the Facts object, not this isolate's copy).
pub async fn get(
    bindings: &Bindings,
    cluster: &ClusterId,
    name: &str,
) -> Result<Option<NodeFacts>, ApiError> {
    let request = NodeRequest {
        name: name.to_string(),
    };
    object_call::call(bindings, cluster.as_str(), &request).await
}
