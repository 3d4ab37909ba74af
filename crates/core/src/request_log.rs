//! What the Worker logs, as JSON lines: one per request it served ([`RequestLine`]) and one per
//! error ([`ErrorLine`]), each carrying the request id that ties a kube-scheduler call, the
//! Worker's line, the Durable Object's error and the reporter's delivery together. The id is the
//! caller's `x-request-id` when it is a plausible one ([`accepted_request_id`]), else one the
//! Worker makes; it goes back in the response's header. The Worker prints the lines
//! (`console.log`); their shape is here, tested natively.
//!
//! Never logged: the path (it carries the extender's path token under `EXTENDER_AUTH=path-token`),
//! headers, bodies.

use serde::Serialize;

/// The header a request id travels in, both ways (and to the Worker's Durable Objects).
pub const REQUEST_ID_HEADER: &str = "x-request-id";
/// The longest request id accepted from a caller.
pub const MAX_REQUEST_ID_LEN: usize = 128;

/// The caller's request id if it is 1–128 characters of `[A-Za-z0-9._:-]` (a UUID, a trace id,
/// kube's own); anything else is replaced, so a log line never carries what a caller invented
/// to break it.
pub fn accepted_request_id(header: &str) -> Option<&str> {
    let ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-');
    (!header.is_empty() && header.len() <= MAX_REQUEST_ID_LEN && header.chars().all(ok))
        .then_some(header)
}

/// A request id made of 16 random bytes (hex).
pub fn request_id_from(bytes: [u8; 16]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// One request served.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestLine<'a> {
    pub level: &'static str,
    pub msg: &'static str,
    pub request_id: &'a str,
    pub method: &'a str,
    /// The route's label (`prioritize`, `pheromones`, … `unknown` when none matched).
    pub route: &'a str,
    /// Absent for the default cluster.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<&'a str>,
    /// Where known: the path's tenant, or the pod's for prioritize.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<&'a str>,
    pub status: u16,
    pub duration_ms: u64,
    /// KV and Durable Object operations the invocation made before answering.
    pub binding_ops: u32,
}

impl<'a> RequestLine<'a> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        request_id: &'a str,
        method: &'a str,
        route: &'a str,
        cluster: Option<&'a str>,
        tenant: Option<&'a str>,
        status: u16,
        duration_ms: u64,
        binding_ops: u32,
    ) -> Self {
        Self {
            level: if status >= 500 { "error" } else { "info" },
            msg: "request",
            request_id,
            method,
            route,
            cluster,
            tenant,
            status,
            duration_ms,
            binding_ops,
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// An error the Worker or one of its objects met, with the request it met it in when known.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorLine<'a> {
    pub level: &'static str,
    /// Where: `prioritize`, `colony`, `facts`, `telemetry`, …
    pub msg: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<&'a str>,
    /// The object's name when a Durable Object logs (a colony's cluster/tenant).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<&'a str>,
    pub error: &'a str,
}

impl<'a> ErrorLine<'a> {
    pub fn new(msg: &'a str, request_id: Option<&'a str>, error: &'a str) -> Self {
        Self {
            level: "error",
            msg,
            request_id,
            object: None,
            error,
        }
    }

    pub fn object(self, object: &'a str) -> Self {
        Self {
            object: Some(object),
            ..self
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plausible_request_ids_are_taken_from_callers() {
        for ok in ["3f2c9a1e-5b7d-4c8e-9f01-23456789abcd", "abc", "trace:1.2_x"] {
            assert_eq!(accepted_request_id(ok), Some(ok));
        }
        let long = "a".repeat(MAX_REQUEST_ID_LEN + 1);
        for bad in ["", "a b", "x\"}", "ü", "a\nb", long.as_str()] {
            assert_eq!(accepted_request_id(bad), None, "{bad:?}");
        }
        assert_eq!(request_id_from([0xab; 16]), "ab".repeat(16));
    }

    #[test]
    fn a_request_line_is_one_line_of_json_with_every_field() {
        let line = RequestLine::new(
            "id-1",
            "POST",
            "prioritize",
            Some("eu"),
            Some("ml"),
            200,
            7,
            2,
        )
        .to_json();
        assert!(!line.contains('\n'));
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"level": "info", "msg": "request", "requestId": "id-1", "method": "POST",
                "route": "prioritize", "cluster": "eu", "tenant": "ml", "status": 200, "durationMs": 7,
                "bindingOps": 2})
        );
        let line = RequestLine::new("i", "GET", "unknown", None, None, 503, 0, 0).to_json();
        assert!(
            line.contains(r#""level":"error""#) && !line.contains("cluster"),
            "{line}"
        );
        let e = ErrorLine::new("colony", Some("i"), "boom \"quoted\"\nnext").object("eu/ml");
        let v: serde_json::Value = serde_json::from_str(&e.to_json()).unwrap();
        assert_eq!(v["error"], "boom \"quoted\"\nnext");
        assert_eq!(v["object"], "eu/ml");
    }
}
