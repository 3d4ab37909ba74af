//! `PUT /v1/nodes`: a batch of node facts from the in-cluster reporter (utilisation samples folded
//! into each node's EMA on write) and the names of nodes that left the cluster, whose facts are
//! forgotten; one request to the cluster's Facts Durable Object whatever the batch size, which
//! validates it whole (a bad report or name changes nothing). `GET /v1/nodes/{name}` shows the
//! authoritative record of one node.
//!
//! Both reply with `x-aco-wasm-memory-bytes`: this isolate's wasm linear memory, which only
//! grows, so it is the high-water mark of every request the isolate served so far (how the
//! memory of a 5,000-node filter is measured, docs/benchmarks.md).

use aco_core::metrics;
use aco_core::names::NodeName;
use worker::Response;

use super::{Call, Handled};
use crate::auth::require_admin;

use crate::http::{json_response, read_body, ApiError};

pub async fn put_nodes(call: &mut Call) -> Handled {
    require_admin(&call.req, &call.env)?;
    let body = read_body(&mut call.req, call.config.serving.max_body_bytes).await?;
    let reply = crate::facts::client::put(&call.bindings, &call.cluster, body, call.now_ms).await?;
    call.event
        .count(&metrics::NODE_FACTS_STORED, &[], reply.stored as f64);
    call.event
        .count(&metrics::NODE_FACTS_FORGOTTEN, &[], reply.forgotten as f64);
    Ok(with_memory(json_response(200, &reply)))
}

/// `GET /v1/nodes/{name}`: the stored facts of one node, read from its cluster's Facts object.
pub async fn get_node(call: &mut Call, name: &str) -> Handled {
    require_admin(&call.req, &call.env)?;
    // Where the name enters: a path segment.
    let name = NodeName::parse(name).map_err(|m| ApiError::field(400, "name", m))?;
    match crate::facts::client::get(&call.bindings, &call.cluster, &name).await? {
        Some(facts) => Ok(with_memory(json_response(200, &facts))),
        None => Err(ApiError::field(
            404,
            "name",
            format!("no facts stored for node {name:?}"),
        )),
    }
}

/// Adds `x-aco-wasm-memory-bytes` (wasm only: natively there is no linear memory to report).
fn with_memory(resp: Response) -> Response {
    #[cfg(target_arch = "wasm32")]
    {
        const WASM_MEMORY_HEADER: &str = "x-aco-wasm-memory-bytes";
        let bytes = core::arch::wasm32::memory_size(0) as u64 * 65_536;
        let _ = resp.headers().set(WASM_MEMORY_HEADER, &bytes.to_string());
    }
    resp
}
