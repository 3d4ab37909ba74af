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

use aco_core::api::error::ErrorBody;
use aco_core::api::nodes::NodesReply;
use aco_core::config::Config;
use aco_core::facts::NodeFacts;
use worker::{Method, Request, RequestInit};

use crate::bindings::Bindings;
use crate::facts::{self, SnapshotReply};
use crate::http::ApiError;
use crate::pipeline;

/// Brings `cluster`'s facts copy up to date first when it is older than `cache_ms`; the verbs
/// then read it in place through the cluster's pipeline (`crate::pipeline`).
pub async fn load(
    bindings: &Bindings,
    cluster: &str,
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
    cluster: &str,
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
    cluster: &str,
    now_ms: u64,
    config: &Rc<Config>,
) -> Result<(), ApiError> {
    let (version, generation) = pipeline::with(cluster, |s| (s.facts_version, s.generation));
    let path = match version {
        Some((instance, seq)) => format!("/snapshot?instance={instance}&seq={seq}"),
        None => "/snapshot".to_string(),
    };
    let (status, text) = call(bindings, cluster, Method::Get, &path, None).await?;
    if status != 200 {
        return Err(refused(status, &text));
    }
    let reply: SnapshotReply<NodeFacts> =
        serde_json::from_str(&text).map_err(|e| ApiError::unavailable("facts snapshot", e))?;
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
                    facts.replace_shard(shard.id, shard.nodes, config);
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
    cluster: &str,
    batch: String,
    now_ms: u64,
) -> Result<NodesReply, ApiError> {
    let (status, text) = call(
        bindings,
        cluster,
        Method::Put,
        &format!("/nodes?now={now_ms}"),
        Some(batch),
    )
    .await?;
    // Even a refused batch may have raced a write by another request: re-read either way.
    pipeline::with(cluster, |s| {
        s.fetched_at_ms = None;
        s.generation += 1;
    });
    if status != 200 {
        return Err(refused(status, &text));
    }
    serde_json::from_str(&text).map_err(|e| ApiError::unavailable("facts reply", e))
}

/// The authoritative record of one node (from the Facts object, not this isolate's copy).
pub async fn get(
    bindings: &Bindings,
    cluster: &str,
    name: &str,
) -> Result<Option<NodeFacts>, ApiError> {
    let (status, text) = call(
        bindings,
        cluster,
        Method::Get,
        &format!("/nodes/{name}"),
        None,
    )
    .await?;
    match status {
        200 => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| ApiError::unavailable("facts reply", e)),
        404 => Ok(None),
        _ => Err(refused(status, &text)),
    }
}

/// A non-200 reply: the object's 4xx (a bad batch) is the client's, anything else ours (503).
fn refused(status: u16, text: &str) -> ApiError {
    match ErrorBody::parse(text) {
        Some(r) if (400..500).contains(&status) => ApiError {
            field: r.field,
            ..ApiError::new(status, r.error)
        },
        _ => ApiError::new(
            503,
            format!("facts Durable Object answered {status}: {text}"),
        ),
    }
}

async fn call(
    bindings: &Bindings,
    cluster: &str,
    method: Method,
    path: &str,
    body: Option<String>,
) -> Result<(u16, String), ApiError> {
    // `Bindings::do_fetch` labels failures as a colony's; facts are not a colony.
    let unavailable = |e: worker::Error| ApiError::unavailable("facts Durable Object", e);
    let mut init = RequestInit::new();
    init.with_method(method);
    if let Some(b) = body {
        init.with_body(Some(b.into()));
    }
    let req =
        Request::new_with_init(&format!("https://facts{path}"), &init).map_err(unavailable)?;
    let mut resp = bindings
        .do_fetch(facts::BINDING, facts::CLASS, cluster, req)
        .await
        .map_err(|e| ApiError {
            colony_failure: None,
            ..e
        })?;
    let text = resp.text().await.map_err(unavailable)?;
    Ok((resp.status_code(), text))
}
