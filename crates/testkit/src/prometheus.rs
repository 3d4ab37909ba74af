//! A real Prometheus (the Debian `prometheus` binary; `scripts/setup` installs it) on 127.0.0.1
//! and a free port, scraping the given targets every second, optionally evaluating rule files
//! every second. It runs in its own process group with its state in a temporary directory, and
//! is stopped (SIGTERM, then SIGKILL) on drop, also while a failing test unwinds.
//!
//! Used by the Miniflare suite (`tests/metrics.rs`: a deposit counter read back through
//! Prometheus) and the observability end-to-end test (`tests/e2e_observability_panels.rs`: every
//! dashboard panel's query against scrapes of the Worker and the reporter).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::process::{free_port, ProcessGroup};

/// `promtool check metrics` on a scrape's text: `Err` with promtool's complaints (a family
/// written twice, a bad line, a lint problem) unless it is clean.
pub fn check_metrics(text: &str) -> Result<(), String> {
    use std::io::Write;
    let mut child = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool (Debian package prometheus; scripts/setup installs it)");
    // promtool reads all of stdin before it answers, so writing first cannot deadlock.
    let mut stdin = child.stdin.take().expect("piped stdin");
    stdin.write_all(text.as_bytes()).expect("write to promtool");
    drop(stdin);
    let out = child.wait_with_output().expect("promtool runs");
    let complaints = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() && complaints.trim().is_empty() {
        Ok(())
    } else {
        Err(complaints)
    }
}

/// One scrape job: `url` is the target's base URL (`http://…` or `https://…`, no path);
/// `ca_file` the CA that signed an HTTPS target's certificate; `bearer` the token sent as
/// `Authorization: Bearer`, written to a file Prometheus reads (`authorization.credentials_file`,
/// as a production scrape config reads it from a mounted Secret).
#[derive(Clone, Debug)]
pub struct ScrapeJob {
    pub name: String,
    pub url: String,
    pub ca_file: Option<PathBuf>,
    pub bearer: Option<String>,
}

impl ScrapeJob {
    pub fn new(name: &str, url: &str) -> Self {
        ScrapeJob {
            name: name.to_owned(),
            url: url.trim_end_matches('/').to_owned(),
            ca_file: None,
            bearer: None,
        }
    }

    /// A test Worker's `/metrics`: with its scrape credential ([`crate::METRICS_TOKEN`]).
    pub fn worker(name: &str, url: &str) -> Self {
        ScrapeJob::new(name, url).bearer(crate::METRICS_TOKEN)
    }

    pub fn ca_file(mut self, path: &Path) -> Self {
        self.ca_file = Some(path.to_path_buf());
        self
    }

    pub fn bearer(mut self, token: &str) -> Self {
        self.bearer = Some(token.to_owned());
        self
    }

    /// The job's `scrape_configs` entry; a bearer token goes to a file in `dir`.
    fn config(&self, dir: &Path) -> Value {
        let (scheme, host) = self.url.split_once("://").unwrap_or(("http", &self.url));
        let mut job = json!({
            "job_name": self.name,
            "scheme": scheme,
            "metrics_path": "/metrics",
            "static_configs": [{"targets": [host]}],
        });
        if let Some(ca) = &self.ca_file {
            job["tls_config"] = json!({"ca_file": ca});
        }
        if let Some(token) = &self.bearer {
            let file = dir.join(format!("{}.credentials", self.name));
            std::fs::write(&file, token).unwrap();
            job["authorization"] = json!({"type": "Bearer", "credentials_file": file});
        }
        job
    }
}

pub struct Prometheus {
    /// `http://127.0.0.1:PORT`
    pub base_url: String,
    http: reqwest::Client,
    _group: ProcessGroup,
    // Declared last: removed after the process is gone.
    dir: tempfile::TempDir,
}

impl Prometheus {
    /// Starts Prometheus scraping `jobs` every second.
    pub fn start(jobs: &[ScrapeJob]) -> Self {
        Self::start_with_rules(jobs, &[])
    }

    /// [`Prometheus::start`], also evaluating `rule_files` (plain Prometheus rule files) every
    /// second.
    pub fn start_with_rules(jobs: &[ScrapeJob], rule_files: &[PathBuf]) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("aco-prometheus-")
            .tempdir()
            .unwrap();
        let config = json!({
            "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
            "rule_files": rule_files,
            "scrape_configs": jobs.iter().map(|j| j.config(dir.path())).collect::<Vec<_>>(),
        });
        let config_path = dir.path().join("prometheus.yml");
        std::fs::write(&config_path, serde_yaml::to_string(&config).unwrap()).unwrap();
        let port = free_port();
        let log = std::fs::File::create(dir.path().join("prometheus.log")).unwrap();
        let mut cmd = std::process::Command::new("prometheus");
        cmd.arg(format!("--config.file={}", config_path.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdin(std::process::Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        let group = ProcessGroup::spawn(&mut cmd)
            .expect("prometheus (Debian package; scripts/setup installs it)");
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap();
        Prometheus {
            base_url: format!("http://127.0.0.1:{port}"),
            http,
            _group: group,
            dir,
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("prometheus.log")).unwrap_or_default()
    }

    /// `GET /api/v1/<path>` with `query` parameters: the reply's `data`, read as `T`
    /// ([`Targets`], [`Rules`], or `Value`).
    pub async fn api<T: DeserializeOwned>(
        &self,
        path: &str,
        query: &[(&str, &str)],
    ) -> Result<T, ApiError> {
        let reply = self
            .http
            .get(format!("{}/api/v1/{path}", self.base_url))
            .query(query)
            .send()
            .await
            .map_err(|e| ApiError::Unavailable(e.to_string()))?;
        let body: Reply<T> = reply
            .json()
            .await
            .map_err(|e| ApiError::Unavailable(format!("reply is not one: {e}")))?;
        match body {
            Reply {
                data: Some(data), ..
            } if body.status == "success" => Ok(data),
            _ => Err(ApiError::Refused {
                error_type: body.error_type,
                error: body.error,
            }),
        }
    }

    /// An instant query: the series of the resulting vector.
    pub async fn query(&self, expr: &str) -> Result<Vec<Sample>, ApiError> {
        let data: QueryData = self.api("query", &[("query", expr)]).await?;
        Ok(data.result)
    }
}

/// The envelope of every Prometheus HTTP API reply.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Reply<T> {
    status: String,
    data: Option<T>,
    #[serde(default)]
    error_type: String,
    #[serde(default)]
    error: String,
}

#[derive(Deserialize)]
struct QueryData {
    #[serde(default)]
    result: Vec<Sample>,
}

/// One series of an instant vector: its labels and its value at the query's time.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Sample {
    pub metric: BTreeMap<String, String>,
    /// Unix seconds and the value as Prometheus writes it (`"2"`, `"0.25"`, `"NaN"`).
    pub value: (f64, String),
}

/// `GET /api/v1/targets`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Targets {
    pub active_targets: Vec<Target>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Target {
    pub labels: TargetLabels,
    pub scrape_url: String,
    /// `up`, `down` or `unknown`.
    pub health: String,
    pub last_error: String,
}

/// A target's labels: `job` always (Prometheus sets it from the scrape config), the rest as
/// they come.
#[derive(Debug, Clone, Deserialize)]
pub struct TargetLabels {
    pub job: String,
    #[serde(flatten)]
    pub other: BTreeMap<String, String>,
}

/// `GET /api/v1/rules`.
#[derive(Debug, Clone, Deserialize)]
pub struct Rules {
    pub groups: Vec<RuleGroup>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct RuleGroup {
    pub name: String,
    pub rules: Vec<Rule>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Rule {
    pub name: String,
    /// `ok`, `err` or `unknown` (not evaluated yet).
    pub health: String,
    #[serde(default)]
    pub last_error: String,
}

/// Why an API call gave no data.
#[derive(Debug, Clone)]
pub enum ApiError {
    /// Prometheus is not (yet) answering.
    Unavailable(String),
    /// Prometheus answered with an error, e.g. `bad_data` for a query that does not parse.
    Refused { error_type: String, error: String },
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ApiError::Unavailable(e) => write!(f, "Prometheus not answering: {e}"),
            ApiError::Refused { error_type, error } => write!(f, "{error_type}: {error}"),
        }
    }
}
