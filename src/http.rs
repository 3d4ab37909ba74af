//! JSON responses and errors. Every failure the client can cause is a 4xx with a JSON body
//! `{"error": "...", "field": "..."}`; failures of our own dependencies are 503, never a bare 500.

use serde::Serialize;
use worker::{Request, Response};

use aco_core::api::error::ErrorBody;
use aco_core::colony_store::wire::ColonyFailure;
use aco_core::extender::BadRequest;

#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: u16,
    pub field: Option<String>,
    /// In a batch, the index of the one item refused (`ErrorBody::item`).
    pub item: Option<usize>,
    pub message: String,
    /// Set when a tenant's colony failed (`corrupt_state`, `error`, `unreachable`): counted in
    /// `aco_colony_errors_total{reason}`.
    pub colony_failure: Option<ColonyFailure>,
    /// Extra JSON members of the error body (e.g. per-tenant results of a placement batch).
    pub detail: Option<serde_json::Value>,
}

impl ApiError {
    pub fn new(status: u16, message: impl Into<String>) -> Self {
        Self {
            status,
            field: None,
            item: None,
            message: message.into(),
            colony_failure: None,
            detail: None,
        }
    }

    pub fn field(status: u16, field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            status,
            field: Some(field.into()),
            item: None,
            message: message.into(),
            colony_failure: None,
            detail: None,
        }
    }

    /// A dependency (KV, a Durable Object) failed: the request may be retried.
    pub fn unavailable(what: &str, e: impl std::fmt::Display) -> Self {
        Self::new(503, format!("{what} unavailable: {e}"))
    }

    /// The same error, about item `index` of a batch.
    pub fn for_item(self, index: usize) -> Self {
        Self {
            item: Some(index),
            ..self
        }
    }

    pub fn into_response(self) -> Response {
        let body = ErrorBody {
            error: self.message,
            field: self.field,
            item: self.item,
        };
        let mut body = serde_json::to_value(body).unwrap_or_default();
        if let Some(serde_json::Value::Object(extra)) = self.detail {
            for (k, v) in extra {
                body[k] = v;
            }
        }
        json_response(self.status, &body)
    }
}

impl From<BadRequest> for ApiError {
    fn from(b: BadRequest) -> Self {
        Self {
            status: b.status,
            field: b.field,
            item: None,
            message: b.message,
            colony_failure: None,
            detail: None,
        }
    }
}

/// Serialises `value` as a JSON response. Serialising our own types cannot fail; if it ever
/// did, the client still gets JSON.
pub fn json_response<T: Serialize + ?Sized>(status: u16, value: &T) -> Response {
    let body = serde_json::to_vec(value)
        .unwrap_or_else(|e| format!(r#"{{"error":"serialisation failed: {e}"}}"#).into_bytes());
    json_bytes_response(status, body)
}

/// The prioritize reply ([`aco_core::wire::write_priorities`]: serde_json's bytes, written
/// without serde, one entry per candidate).
pub fn priorities_response(priorities: &[aco_core::wire::HostPriority]) -> Response {
    let mut body = Vec::new();
    aco_core::wire::write_priorities(priorities, &mut body);
    json_bytes_response(200, body)
}

/// A JSON body already written.
fn json_bytes_response(status: u16, body: Vec<u8>) -> Response {
    let headers = worker::Headers::new();
    let _ = headers.set("content-type", "application/json");
    worker::ResponseBuilder::new()
        .with_status(status)
        .with_headers(headers)
        .fixed(body)
}

/// A 200 JSON reply sent chunk by chunk as the client reads it (each chunk copied to the
/// runtime when it is pulled), for replies that are mostly the request's own bytes.
pub fn stream_response(
    chunks: impl Iterator<Item = Vec<u8>> + 'static,
) -> Result<Response, ApiError> {
    let headers = worker::Headers::new();
    let _ = headers.set("content-type", "application/json");
    worker::ResponseBuilder::new()
        .with_status(200)
        .with_headers(headers)
        .from_stream(futures::stream::iter(chunks.map(Ok::<_, worker::Error>)))
        .map_err(|e| ApiError::new(503, format!("reply stream: {e}")))
}

pub fn text_response(status: u16, body: String, content_type: &str) -> Response {
    // `ResponseBuilder::fixed` cannot fail; a header that cannot be set leaves the body intact.
    let headers = worker::Headers::new();
    let _ = headers.set("content-type", content_type);
    worker::ResponseBuilder::new()
        .with_status(status)
        .with_headers(headers)
        .fixed(body.into_bytes())
}

/// Reads the body as UTF-8, keeping at most `limit` bytes (413 above it). A body whose
/// Content-Length is over the limit is refused before any of it is kept; one that declares less
/// than it sends is cut off by the same limit while streaming, keeping at most `limit` bytes.
/// An oversized body is still drained, without being stored, so the client receives the 413
/// and its message instead of a connection reset in the middle of its upload.
pub async fn read_body(req: &mut Request, limit: usize) -> Result<String, ApiError> {
    use futures::StreamExt;
    let unreadable =
        |e: worker::Error| ApiError::new(400, format!("cannot read request body: {e}"));
    // Sized once from Content-Length (never above the limit): growing by doubling would briefly
    // hold twice the body, and wasm memory keeps its high-water mark.
    let declared = req
        .headers()
        .get("content-length")
        .ok()
        .flatten()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    if declared > limit {
        drain(req).await;
        return Err(too_large(
            &format!("{declared} bytes (Content-Length)"),
            limit,
        ));
    }
    let mut body = Vec::with_capacity(declared);
    let mut total = 0usize;
    let mut stream = req.stream().map_err(unreadable)?;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(unreadable)?;
        total = total.saturating_add(chunk.len());
        if total <= limit {
            body.extend_from_slice(&chunk);
        }
    }
    if total > limit {
        return Err(too_large(&format!("{total} bytes"), limit));
    }
    String::from_utf8(body)
        .map_err(|e| ApiError::new(400, format!("request body is not UTF-8: {e}")))
}

fn too_large(size: &str, limit: usize) -> ApiError {
    ApiError::new(
        413,
        format!("request body of {size} exceeds the limit of {limit} bytes (MAX_BODY_BYTES)"),
    )
}

/// Consumes whatever is left of the request body, so that answering early (401, 404, 405…)
/// does not make the runtime drop the client's keep-alive connection. Errors mean the body was
/// already read.
pub async fn drain(req: &mut Request) {
    use futures::StreamExt;
    if let Ok(mut stream) = req.stream() {
        while let Some(Ok(_)) = stream.next().await {}
    }
}

/// Parses a JSON body into `T`, naming the problem on failure: the path of the offending field
/// (`placements[2].node`, where a typed name refused its value) and, in a batch, the item's index.
pub fn parse_json<'a, T: serde::Deserialize<'a>>(body: &'a str, what: &str) -> Result<T, ApiError> {
    aco_core::k8s::parse_json_at(body).map_err(|(path, message)| ApiError {
        item: path.as_deref().and_then(item_of),
        field: path,
        ..ApiError::new(400, format!("invalid {what}: {message}"))
    })
}

/// The index of a batch's item a field path is in: `3` of `placements[3].node`.
fn item_of(path: &str) -> Option<usize> {
    let (_, rest) = path.split_once('[')?;
    let (index, _) = rest.split_once(']')?;
    index.parse().ok()
}
