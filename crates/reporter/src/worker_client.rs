//! HTTP to the Worker: bearer token, HTTPS with the system roots plus an optional CA.

use std::time::Duration;

use aco_core::api::error::ErrorBody;
use serde::Serialize;

/// The header the Worker reads a request id from (`aco_core::request_log`).
pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// What the Worker answered (or `status: None` when it could not be reached).
#[derive(Debug, Clone, Default)]
pub struct Answer {
    pub status: Option<u16>,
    pub retry_after: Option<String>,
    /// The Worker's error body, when it answered one.
    pub error: Option<ErrorBody>,
    pub body: String,
    pub bytes_sent: usize,
    /// The `x-request-id` the request carried (made here, one per request): the Worker logs it
    /// on its line for the request and answers it back, so a delivery is found in both logs.
    pub request_id: String,
}

impl Answer {
    pub fn ok(&self) -> bool {
        self.status.is_some_and(|s| (200..300).contains(&s))
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

#[derive(Clone)]
pub struct WorkerClient {
    http: reqwest::Client,
    base: String,
    /// The bearer token; replaced by [`WorkerClient::set_token`] when the mounted Secret rotates.
    token: std::sync::Arc<std::sync::RwLock<String>>,
}

impl WorkerClient {
    pub fn new(
        base: &str,
        token: String,
        ca_pem: Option<&[u8]>,
        timeout: Duration,
    ) -> anyhow::Result<Self> {
        let mut builder = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(5)));
        if let Some(pem) = ca_pem {
            for cert in reqwest::Certificate::from_pem_bundle(pem)? {
                builder = builder.add_root_certificate(cert);
            }
        }
        Ok(WorkerClient {
            http: builder.build()?,
            base: base.trim_end_matches('/').to_string(),
            token: std::sync::Arc::new(std::sync::RwLock::new(token)),
        })
    }

    /// Uses `token` from now on; `true` when it differs from the one in use.
    pub fn set_token(&self, token: String) -> bool {
        let mut current = self.token.write().unwrap_or_else(|e| e.into_inner());
        let changed = *current != token;
        *current = token;
        changed
    }

    pub async fn send<T: Serialize>(
        &self,
        method: reqwest::Method,
        path: &str,
        body: &T,
    ) -> Answer {
        match serde_json::to_vec(body) {
            Ok(bytes) => self.request(method, path, Some(bytes)).await,
            Err(e) => Answer {
                body: format!("serialising: {e}"),
                ..Default::default()
            },
        }
    }

    /// A GET, without a body.
    pub async fn get(&self, path: &str) -> Answer {
        self.request(reqwest::Method::GET, path, None).await
    }

    async fn request(&self, method: reqwest::Method, path: &str, body: Option<Vec<u8>>) -> Answer {
        let bytes_sent = body.as_ref().map_or(0, Vec::len);
        let request_id = format!("{:032x}", rand::random::<u128>());
        let token = self.token.read().unwrap_or_else(|e| e.into_inner()).clone();
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(token)
            .header(REQUEST_ID_HEADER, &request_id);
        if let Some(bytes) = body {
            request = request
                .header("content-type", "application/json")
                .body(bytes);
        }
        let result = request.send().await;
        let response = match result {
            Ok(r) => r,
            Err(e) => {
                return Answer {
                    body: e.to_string(),
                    bytes_sent,
                    request_id,
                    ..Default::default()
                }
            }
        };
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .map(String::from);
        let body = response.text().await.unwrap_or_default();
        let error = (!(200..300).contains(&status))
            .then(|| ErrorBody::parse(&body))
            .flatten();
        Answer {
            status: Some(status),
            retry_after,
            error,
            body,
            bytes_sent,
            request_id,
        }
    }
}
