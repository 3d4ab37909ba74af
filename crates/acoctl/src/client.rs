//! HTTP to the Worker's admin routes: the bearer token, the cluster's path prefix, and a refusal
//! turned into the Worker's own message (with the field it names and the request id).

use std::path::Path;
use std::time::Duration;

use aco_core::api::error::ErrorBody;
use aco_core::cluster::{validate_cluster, DEFAULT_CLUSTER};
use aco_core::request_log::REQUEST_ID_HEADER;
use reqwest::blocking::Client as Http;
use reqwest::Method;

use crate::cli::Args;
use crate::Failure;

/// The environment variable holding the admin token when no `--token-file` is given.
pub const TOKEN_ENV: &str = "ACO_ADMIN_TOKEN";

/// The admin token: the file's content (trimmed) if a file is given, else `env`.
pub fn token(file: Option<&Path>, env: Option<String>) -> Result<String, Failure> {
    let token = match file {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| Failure::usage(format!("--token-file {}: {e}", path.display())))?,
        None => env.ok_or_else(|| {
            Failure::usage(format!(
                "no admin token: set {TOKEN_ENV} or pass --token-file (the Worker's ADMIN_TOKEN)"
            ))
        })?,
    };
    let token = token.trim().to_string();
    if token.is_empty() {
        return Err(Failure::usage("the admin token is empty"));
    }
    Ok(token)
}

pub struct Client {
    http: Http,
    base: String,
    token: String,
    /// `/c/<cluster>`, or nothing for the default cluster.
    prefix: String,
    pub cluster: String,
}

impl Client {
    pub fn new(args: &Args) -> Result<Self, Failure> {
        let token = token(args.token_file.as_deref(), std::env::var(TOKEN_ENV).ok())?;
        let cluster = args.cluster.clone().unwrap_or(DEFAULT_CLUSTER.into());
        let prefix = if cluster == DEFAULT_CLUSTER {
            String::new()
        } else {
            validate_cluster(&cluster).map_err(|e| Failure::usage(format!("--cluster: {e}")))?;
            format!("/c/{cluster}")
        };
        let http = Http::builder()
            .timeout(Duration::from_secs(args.timeout))
            .build()
            .map_err(|e| Failure::remote(format!("HTTP client: {e}")))?;
        Ok(Self {
            http,
            base: args.url.trim_end_matches('/').to_string(),
            token,
            prefix,
            cluster,
        })
    }

    /// `method` of the cluster's `path` (`/v1/…`), with `body`: the reply's text on 2xx.
    pub fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<String, Failure> {
        self.send(method, &format!("{}{path}", self.prefix), body)
    }

    /// As [`Client::call`], outside any cluster (`/v1/clusters`).
    pub fn call_global(&self, method: Method, path: &str) -> Result<String, Failure> {
        self.send(method, path, None)
    }

    fn send(&self, method: Method, path: &str, body: Option<Vec<u8>>) -> Result<String, Failure> {
        let url = format!("{}{path}", self.base);
        let mut req = self
            .http
            .request(method.clone(), &url)
            .bearer_auth(&self.token);
        if let Some(b) = body {
            req = req.header("content-type", "application/json").body(b);
        }
        let resp = req
            .send()
            .map_err(|e| Failure::remote(format!("{method} {url}: {e}")))?;
        let status = resp.status();
        let id = resp
            .headers()
            .get(REQUEST_ID_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(String::from);
        let text = resp
            .text()
            .map_err(|e| Failure::remote(format!("{method} {url}: reading the reply: {e}")))?;
        if status.is_success() {
            return Ok(text);
        }
        Err(Failure::remote(refusal(
            &format!("{method} {path}"),
            status.as_u16(),
            &text,
            id.as_deref(),
        )))
    }
}

/// The Worker's refusal as one line: status, its message, the field it names, the request id.
pub fn refusal(what: &str, status: u16, body: &str, request_id: Option<&str>) -> String {
    let error = ErrorBody::parse(body);
    let message = error.as_ref().map_or(body, |e| e.error.as_str());
    let mut line = format!("{what}: HTTP {status}: {message}");
    if let Some(field) = error.as_ref().and_then(|e| e.field.as_deref()) {
        line.push_str(&format!(" (field {field})"));
    }
    if let Some(id) = request_id {
        line.push_str(&format!(" [request id {id}]"));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_comes_from_the_file_else_the_environment_and_never_empty() {
        let dir = std::env::temp_dir().join(format!("acoctl-token-{}", std::process::id()));
        std::fs::write(&dir, "from-file\n").unwrap();
        assert_eq!(token(Some(&dir), Some("env".into())).unwrap(), "from-file");
        assert_eq!(token(None, Some(" env ".into())).unwrap(), "env");
        let none = token(None, None).unwrap_err();
        assert_eq!(none.code, 2);
        assert!(none.message.contains(TOKEN_ENV), "{}", none.message);
        std::fs::write(&dir, "  \n").unwrap();
        assert_eq!(token(Some(&dir), None).unwrap_err().code, 2);
        std::fs::remove_file(&dir).unwrap();
        assert_eq!(token(Some(&dir), None).unwrap_err().code, 2);
    }

    #[test]
    fn a_refusal_names_the_field_and_the_request() {
        let line = refusal(
            "PUT /v1/tenants/ml/import",
            409,
            r#"{"error":"the file is the colony of tenant \"a\"","field":"tenant"}"#,
            Some("abc"),
        );
        assert_eq!(
            line,
            "PUT /v1/tenants/ml/import: HTTP 409: the file is the colony of tenant \"a\" (field tenant) [request id abc]"
        );
        assert!(refusal("GET /x", 502, "bad gateway", None).ends_with("HTTP 502: bad gateway"));
    }
}
