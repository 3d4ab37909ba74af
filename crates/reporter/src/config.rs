//! Flags and environment. The Worker's own settings (`TENANT_SOURCE`, `TENANT_LABEL`,
//! `GPU_RESOURCES`, label keys, `DECISION_TTL_MS`, …) are read from the same variable names as
//! the Worker's `[vars]`, through the core's `Config`, so that the reporter names tenants and
//! picks labels by exactly the Worker's rules: give both the same values.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

fn duration(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text).map_err(|e| format!("{text:?}: {e} (e.g. 15s, 500ms, 10m)"))
}

#[derive(Debug, Clone, Parser)]
#[command(
    name = "aco-reporter",
    version,
    about = "Reports node facts, placements and outcomes to the aco-edge-extender Worker"
)]
pub struct Args {
    /// Base URL of the Worker, e.g. https://aco.example.workers.dev, or
    /// https://aco.example.workers.dev/c/<cluster> for a named cluster (paths /v1/... are
    /// appended: not the scheduler's urlPrefix, which ends in /v1).
    #[arg(long, env = "ACO_WORKER_URL")]
    pub worker_url: String,
    /// File holding the Worker's admin token (a mounted Secret); wins over --token.
    #[arg(long, env = "ACO_TOKEN_FILE")]
    pub token_file: Option<PathBuf>,
    /// The Worker's admin token.
    #[arg(long, env = "ACO_ADMIN_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Extra CA certificate (PEM) for the Worker's HTTPS certificate, beside the system roots.
    #[arg(long, env = "ACO_CA_FILE")]
    pub ca_file: Option<PathBuf>,
    /// Schedulers whose pods are reported (`spec.schedulerName`), comma-separated.
    #[arg(
        long,
        env = "ACO_SCHEDULER_NAMES",
        value_delimiter = ',',
        default_value = "aco-scheduler"
    )]
    pub scheduler_names: Vec<String>,
    /// Shadow mode: schedulers whose bound pods are reported to `POST /v1/shadow` (with the pod)
    /// to be scored as the tenant's colony would have, without steering them, e.g.
    /// `default-scheduler`. Comma-separated; empty (the default) is off. May not name one of
    /// `--scheduler-names`.
    #[arg(
        long,
        env = "ACO_SHADOW_SCHEDULER_NAMES",
        value_delimiter = ',',
        default_value = ""
    )]
    pub shadow_scheduler_names: Vec<String>,
    /// How often node facts are pushed (each push is jittered by ±10%).
    #[arg(long, env = "ACO_PUSH_INTERVAL", value_parser = duration, default_value = "15s")]
    pub push_interval: Duration,
    /// Every node is re-sent at least this often (keep it below the Worker's FACTS_TTL_MS).
    #[arg(long, env = "ACO_FULL_REFRESH", value_parser = duration, default_value = "2m")]
    pub full_refresh: Duration,
    /// Pods are re-scanned at least this often (for "ran healthy for N minutes").
    #[arg(long, env = "ACO_SCAN_INTERVAL", value_parser = duration, default_value = "5s")]
    pub scan_interval: Duration,
    /// NodeMetrics samples older than this are not sent (counted as stale).
    #[arg(long, env = "ACO_METRICS_MAX_AGE", value_parser = duration, default_value = "2m")]
    pub metrics_max_age: Duration,
    /// Do not read any load source (no utilisation samples); same as `--metrics-source none`.
    #[arg(long, env = "ACO_NO_NODE_METRICS")]
    pub no_node_metrics: bool,
    /// Where node load comes from: `metrics-server` (metrics.k8s.io NodeMetrics), `prometheus`
    /// (PromQL per resource, DCGM GPU series included: `--prometheus-*`), or `none`.
    #[arg(long, env = "ACO_METRICS_SOURCE", default_value = "metrics-server")]
    pub metrics_source: String,
    /// Prometheus base URL (e.g. http://prometheus.monitoring:9090), for `--metrics-source
    /// prometheus` and `--prices-from-opencost`.
    #[arg(long, env = "ACO_PROMETHEUS_URL")]
    pub prometheus_url: Option<String>,
    /// The averaging window put in place of `{window}` in the queries: 5m, 10m or 15m as
    /// Trimaran's load-watcher.
    #[arg(long, env = "ACO_PROMETHEUS_WINDOW", value_parser = duration, default_value = "5m")]
    pub prometheus_window: Duration,
    /// The label carrying the node name in every query's result.
    #[arg(long, env = "ACO_PROMETHEUS_NODE_LABEL", default_value = "node")]
    pub prometheus_node_label: String,
    /// Busy fraction of CPU per node (empty: not read).
    #[arg(long, env = "ACO_PROMQL_CPU", default_value = crate::prometheus::DEFAULT_CPU)]
    pub promql_cpu: String,
    /// Busy fraction of memory per node (empty: not read).
    #[arg(long, env = "ACO_PROMQL_MEMORY", default_value = crate::prometheus::DEFAULT_MEMORY)]
    pub promql_memory: String,
    /// GPU utilisation per node, 0–1, from dcgm-exporter (empty: not read).
    #[arg(long, env = "ACO_PROMQL_GPU_UTIL", default_value = crate::prometheus::DEFAULT_GPU_UTIL)]
    pub promql_gpu_util: String,
    /// GPU memory in use per node, 0–1, from dcgm-exporter (empty: not read).
    #[arg(long, env = "ACO_PROMQL_GPU_MEMORY", default_value = crate::prometheus::DEFAULT_GPU_MEMORY)]
    pub promql_gpu_memory: String,
    /// Send each node's price from OpenCost (`--promql-price`) as the cost label, instead of the
    /// node's hand-set label.
    #[arg(long, env = "ACO_PRICES_FROM_OPENCOST")]
    pub prices_from_opencost: bool,
    /// $/h per node.
    #[arg(long, env = "ACO_PROMQL_PRICE", default_value = crate::prometheus::DEFAULT_PRICE)]
    pub promql_price: String,
    /// Node label carrying network latency in µs (the latency source, for now).
    #[arg(long, env = "ACO_LATENCY_LABEL", default_value = "aco/latency-us")]
    pub latency_label: String,
    /// A pod Running and Ready this long without restarts is a success.
    #[arg(long, env = "ACO_HEALTHY_AFTER", value_parser = duration, default_value = "10m")]
    pub healthy_after: Duration,
    /// A pod label naming the pod's workload (run-time medians, failure history); without it, or
    /// on pods without the label, the pod's controller (Job, ReplicaSet, …) is its workload.
    #[arg(long, env = "ACO_WORKLOAD_LABEL")]
    pub workload_label: Option<String>,
    /// More container restarts than this is a failure.
    #[arg(long, env = "ACO_MAX_RESTARTS", default_value_t = 3)]
    pub max_restarts: i32,
    /// Outcomes of pods bound longer ago than this are not sent (the Worker's CONFIRMED_TTL_MS).
    #[arg(long, env = "ACO_OUTCOME_WINDOW", value_parser = duration, default_value = "6h")]
    pub outcome_window: Duration,
    /// At most this many placement/outcome reports wait in memory (more stay owed, not lost).
    #[arg(long, env = "ACO_QUEUE_CAPACITY", default_value_t = 10_000)]
    pub queue_capacity: usize,
    /// Placement/outcome reports per request (one tenant's).
    #[arg(long, env = "ACO_BATCH_SIZE", default_value_t = 500)]
    pub batch_size: usize,
    /// A tenant's reports go at most once per this interval (all it has due in one request, one
    /// colony commit), at once when it sent nothing in the last interval or a full batch waits.
    #[arg(long, env = "ACO_TENANT_INTERVAL", value_parser = duration, default_value = "1s")]
    pub tenant_interval: Duration,
    /// Node reports per request. A batch is one request to the Worker's Facts Durable Object
    /// whatever its size, and the Worker accepts up to 10,000 reports per request, so a cluster
    /// of up to 10,000 nodes is pushed in one request (about 6 MB, under MAX_BODY_BYTES).
    #[arg(long, env = "ACO_NODE_BATCH_SIZE", default_value_t = 10_000)]
    pub node_batch_size: usize,
    /// Timeout of one request to the Worker.
    #[arg(long, env = "ACO_REQUEST_TIMEOUT", value_parser = duration, default_value = "10s")]
    pub request_timeout: Duration,
    /// Backoff after a failed delivery: first wait, and the cap.
    #[arg(long, env = "ACO_BACKOFF_BASE", value_parser = duration, default_value = "500ms")]
    pub backoff_base: Duration,
    #[arg(long, env = "ACO_BACKOFF_MAX", value_parser = duration, default_value = "30s")]
    pub backoff_max: Duration,
    /// /metrics, /livez, /readyz.
    #[arg(long, env = "ACO_LISTEN", default_value = "0.0.0.0:8080")]
    pub listen: SocketAddr,
    /// Elect a leader with a coordination.k8s.io Lease; only the leader reports.
    #[arg(long, env = "ACO_LEADER_ELECT", default_value_t = true, action = clap::ArgAction::Set)]
    pub leader_elect: bool,
    #[arg(long, env = "ACO_LEASE_NAME", default_value = "aco-reporter")]
    pub lease_name: String,
    #[arg(long, env = "POD_NAMESPACE", default_value = "default")]
    pub lease_namespace: String,
    /// A new leader takes over at most this long after the old one stopped renewing.
    #[arg(long, env = "ACO_LEASE_DURATION", value_parser = duration, default_value = "15s")]
    pub lease_duration: Duration,
    /// The leader renews this long before its lease expires (so every duration − grace: 5 s).
    #[arg(long, env = "ACO_LEASE_GRACE", value_parser = duration, default_value = "10s")]
    pub lease_grace: Duration,
    /// The leader stops reporting when its Lease was not renewed for this long (client-go's
    /// RenewDeadline): shorter than the lease duration, so it has stopped before a standby
    /// can take the lease; longer than the renewal period (duration − grace).
    #[arg(long, env = "ACO_RENEW_DEADLINE", value_parser = duration, default_value = "10s")]
    pub renew_deadline: Duration,
    /// This replica's identity in the Lease (defaults to the pod name).
    #[arg(long, env = "POD_NAME")]
    pub identity: Option<String>,
    /// `json` (default) or `text`.
    #[arg(long, env = "ACO_LOG_FORMAT", default_value = "json")]
    pub log_format: String,
    /// The mutating admission webhook (`POST /mutate`, HTTPS) that writes pods' GPU-model and
    /// latency constraints into their required node affinity: on when both files are given.
    #[arg(long, env = "ACO_WEBHOOK_LISTEN", default_value = "0.0.0.0:8443")]
    pub webhook_listen: SocketAddr,
    /// The webhook's serving certificate (PEM chain), re-read when it changes.
    #[arg(long, env = "ACO_WEBHOOK_CERT_FILE", requires = "webhook_key_file")]
    pub webhook_cert_file: Option<PathBuf>,
    /// The webhook's private key (PEM).
    #[arg(long, env = "ACO_WEBHOOK_KEY_FILE", requires = "webhook_cert_file")]
    pub webhook_key_file: Option<PathBuf>,
}

impl Args {
    /// The admin token, from the file if given (trailing newline trimmed), else the flag/env.
    pub fn admin_token(&self) -> anyhow::Result<String> {
        if let Some(path) = &self.token_file {
            let text = std::fs::read_to_string(path)
                .map_err(|e| anyhow::anyhow!("--token-file {}: {e}", path.display()))?;
            return Ok(text.trim().to_string());
        }
        self.token
            .clone()
            .filter(|t| !t.is_empty())
            .ok_or_else(|| anyhow::anyhow!("need --token-file or ACO_ADMIN_TOKEN"))
    }

    /// `--shadow-scheduler-names` without empty entries (`""` and `a,,b` mean nothing more).
    pub fn shadow_schedulers(&self) -> Vec<String> {
        self.shadow_scheduler_names
            .iter()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    }

    /// `--metrics-source`, with `--no-node-metrics` meaning `none`.
    pub fn load_source(&self) -> &str {
        if self.no_node_metrics {
            "none"
        } else {
            self.metrics_source.as_str()
        }
    }

    /// The Prometheus client, when a Prometheus source is configured.
    pub fn prometheus(&self) -> anyhow::Result<Option<crate::prometheus::Prometheus>> {
        let load = self.load_source() == "prometheus";
        if !load && !self.prices_from_opencost {
            return Ok(None);
        }
        let url = self.prometheus_url.as_deref().ok_or_else(|| {
            anyhow::anyhow!("--prometheus-url (ACO_PROMETHEUS_URL) is needed for --metrics-source prometheus and --prices-from-opencost")
        })?;
        let load_queries = if load {
            [
                ("cpu", &self.promql_cpu),
                ("memory", &self.promql_memory),
                ("gpu_util", &self.promql_gpu_util),
                ("gpu_memory", &self.promql_gpu_memory),
            ]
            .into_iter()
            .filter(|(_, q)| !q.trim().is_empty())
            .map(|(k, q)| (k.to_string(), q.clone()))
            .collect()
        } else {
            Vec::new()
        };
        let queries = crate::prometheus::Queries {
            load: load_queries,
            price: self.prices_from_opencost.then(|| self.promql_price.clone()),
        };
        Ok(Some(crate::prometheus::Prometheus::new(
            url,
            &self.prometheus_node_label,
            self.prometheus_window,
            queries,
            self.request_timeout,
        )?))
    }

    pub fn validate(&self) -> anyhow::Result<()> {
        worker_base(&self.worker_url)?;
        anyhow::ensure!(
            matches!(self.load_source(), "metrics-server" | "prometheus" | "none"),
            "--metrics-source: metrics-server, prometheus or none"
        );
        anyhow::ensure!(
            self.prometheus_window >= Duration::from_secs(60),
            "--prometheus-window: at least 1m (5m, 10m, 15m as load-watcher)"
        );
        self.prometheus()?;
        anyhow::ensure!(
            !self.scheduler_names.is_empty(),
            "--scheduler-names: at least one scheduler"
        );
        if let Some(both) = self
            .shadow_schedulers()
            .into_iter()
            .find(|s| self.scheduler_names.contains(s))
        {
            anyhow::bail!("--shadow-scheduler-names: {both:?} is also in --scheduler-names (a scheduler's pods are either steered or shadowed)");
        }
        anyhow::ensure!(
            self.batch_size > 0 && self.node_batch_size > 0,
            "batch sizes must be positive"
        );
        anyhow::ensure!(
            self.lease_grace < self.lease_duration,
            "--lease-grace must be shorter than --lease-duration"
        );
        anyhow::ensure!(
            self.renew_deadline < self.lease_duration
                && self.renew_deadline > self.lease_duration - self.lease_grace,
            "--renew-deadline must be shorter than --lease-duration and longer than the renewal period (--lease-duration − --lease-grace)"
        );
        anyhow::ensure!(
            !self.push_interval.is_zero(),
            "--push-interval must be positive"
        );
        anyhow::ensure!(
            matches!(self.log_format.as_str(), "json" | "text"),
            "--log-format: json or text"
        );
        Ok(())
    }
}

/// Checks `--worker-url` / `ACO_WORKER_URL`: an http(s) base URL whose path is empty or
/// `/c/<cluster>` with a valid cluster id, so that `/v1/...` appended reaches the Worker's API.
/// A trailing `/v1` (the scheduler's urlPrefix copied) would make every request a 404.
pub fn worker_base(url: &str) -> anyhow::Result<()> {
    let bad = |why: &str| anyhow::anyhow!("ACO_WORKER_URL (--worker-url) {url:?}: {why}");
    let parsed = reqwest::Url::parse(url).map_err(|e| bad(&e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(bad("must be an http:// or https:// URL"));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(bad("has no host"));
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(bad("may not have a query or fragment"));
    }
    let segments: Vec<&str> = parsed
        .path_segments()
        .map(|s| s.filter(|p| !p.is_empty()).collect())
        .unwrap_or_default();
    match segments.as_slice() {
        [] => Ok(()),
        ["c", cluster] => aco_core::cluster::validate_cluster(cluster).map_err(|e| bad(&e)),
        [.., "v1"] => Err(bad(
            "ends in /v1: give the Worker's base URL (the reporter appends /v1/...), not the scheduler's urlPrefix",
        )),
        _ => Err(bad(
            "the path may only be empty or /c/<cluster> (the reporter appends /v1/...)",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_webhook_is_on_with_both_files_and_refused_with_one() {
        let base = ["aco-reporter", "--worker-url", "https://w"];
        let off = Args::try_parse_from(base).unwrap();
        assert_eq!(off.webhook_cert_file, None);
        let with = |extra: &[&str]| Args::try_parse_from(base.iter().chain(extra));
        let on = with(&[
            "--webhook-cert-file",
            "c.pem",
            "--webhook-key-file",
            "k.pem",
        ])
        .unwrap();
        assert_eq!(on.webhook_key_file, Some(PathBuf::from("k.pem")));
        assert!(with(&["--webhook-cert-file", "c.pem"]).is_err());
        assert!(with(&["--webhook-key-file", "k.pem"]).is_err());
    }

    #[test]
    fn defaults_and_durations() {
        let a = Args::try_parse_from([
            "aco-reporter",
            "--worker-url",
            "https://w",
            "--push-interval",
            "500ms",
        ])
        .unwrap();
        assert_eq!(a.push_interval, Duration::from_millis(500));
        assert_eq!(a.full_refresh, Duration::from_secs(120));
        assert_eq!(a.scheduler_names, ["aco-scheduler"]);
        assert!(a.leader_elect);
        a.validate().unwrap();
        let e = Args::try_parse_from([
            "aco-reporter",
            "--worker-url",
            "https://w",
            "--push-interval",
            "soon",
        ])
        .unwrap_err();
        assert!(e.to_string().contains("soon"));
        let two = Args::try_parse_from([
            "aco-reporter",
            "--worker-url",
            "https://w",
            "--scheduler-names",
            "a,b",
            "--leader-elect",
            "false",
        ])
        .unwrap();
        assert_eq!(two.scheduler_names, ["a", "b"]);
        assert!(!two.leader_elect);
        assert!(
            a.shadow_schedulers().is_empty(),
            "shadow mode is off by default"
        );
    }

    #[test]
    fn shadow_schedulers_are_a_comma_list_disjoint_from_ours() {
        let parse = |v: &[&str]| {
            Args::try_parse_from([&["aco-reporter", "--worker-url", "https://w"], v].concat())
                .unwrap()
        };
        let a = parse(&["--shadow-scheduler-names", "default-scheduler,batch-sched"]);
        assert_eq!(a.shadow_schedulers(), ["default-scheduler", "batch-sched"]);
        a.validate().unwrap();
        assert!(parse(&["--shadow-scheduler-names", ""])
            .shadow_schedulers()
            .is_empty());
        assert_eq!(
            parse(&["--shadow-scheduler-names", "x,,y"]).shadow_schedulers(),
            ["x", "y"]
        );
        let both = parse(&[
            "--shadow-scheduler-names",
            "default-scheduler,aco-scheduler",
        ]);
        let e = both.validate().unwrap_err().to_string();
        assert!(
            e.contains("aco-scheduler") && e.contains("--scheduler-names"),
            "{e}"
        );
    }

    #[test]
    fn the_worker_url_is_checked_at_start_naming_the_variable() {
        for ok in [
            "https://aco.example.workers.dev",
            "https://aco.example.workers.dev/",
            "http://127.0.0.1:8787",
            "https://aco.example.workers.dev/c/prod-eu",
        ] {
            worker_base(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
        for (bad, says) in [
            ("https://aco.example.workers.dev/v1", "ends in /v1"),
            ("https://aco.example.workers.dev/c/prod/v1/", "ends in /v1"),
            ("https://aco.example.workers.dev/c/Prod_EU", "DNS label"),
            (
                "https://aco.example.workers.dev/api",
                "only be empty or /c/<cluster>",
            ),
            ("aco.example.workers.dev", "relative URL"),
            ("ftp://aco.example", "http"),
            ("https://aco.example/?x=1", "query"),
        ] {
            let e = worker_base(bad).unwrap_err().to_string();
            assert!(
                e.contains("ACO_WORKER_URL") && e.contains(says),
                "{bad}: {e}"
            );
        }
        let a = Args::try_parse_from(["aco-reporter", "--worker-url", "https://w/v1"]).unwrap();
        assert!(a.validate().unwrap_err().to_string().contains("/v1"));
    }
}
