//! The `aco-reporter` binary as the end-to-end tests and the scale benchmark run it: built once
//! per process, started against the test control plane and a Worker URL, scraped on its ops port.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::{ControlPlane, Server};
use crate::process::free_port;
use crate::repo_root;

/// The reporter binary, built once per test process (`cargo build -p aco-reporter`, a no-op
/// when it is up to date), so that a stale binary is never tested. `release` for benchmarks.
pub fn reporter_bin(release: bool) -> PathBuf {
    static DEBUG: OnceLock<PathBuf> = OnceLock::new();
    static RELEASE: OnceLock<PathBuf> = OnceLock::new();
    let cell = if release { &RELEASE } else { &DEBUG };
    cell.get_or_init(|| {
        let root = repo_root();
        let mut cmd = std::process::Command::new(env!("CARGO"));
        cmd.args(["build", "-p", "aco-reporter", "--bin", "aco-reporter"])
            .current_dir(&root);
        // The test process carries the CARGO_* variables cargo set for it (package name,
        // manifest dir, …); build scripts that watch them would rebuild every time.
        for (key, _) in std::env::vars_os() {
            let key = key.to_string_lossy().into_owned();
            if key.starts_with("CARGO_")
                && !matches!(key.as_str(), "CARGO_HOME" | "CARGO_TARGET_DIR")
            {
                cmd.env_remove(key);
            }
        }
        if release {
            cmd.arg("--release");
        }
        let status = cmd.status().expect("run cargo build -p aco-reporter");
        assert!(status.success(), "cargo build -p aco-reporter failed");
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join("target"));
        target
            .join(if release { "release" } else { "debug" })
            .join("aco-reporter")
    })
    .clone()
}

/// A reporter replica, its ops port and its admission webhook's port (HTTPS, the
/// certificate of [`super::Pki::webhook_tls`]).
pub struct Reporter {
    pub server: Server,
    pub ops: u16,
    pub webhook: u16,
}

/// The reporter's loops at test speed (production: 15 s pushes, 2 min full refresh, 5 s scans,
/// 30 s backoff cap): shared by a locally launched reporter and the installed one.
pub const LOOP_SPEEDS: &[&str] = &[
    "--push-interval",
    "1s",
    "--full-refresh",
    "20s",
    "--scan-interval",
    "500ms",
    "--backoff-max",
    "2s",
];

/// Test-speed defaults of a locally launched reporter: [`LOOP_SPEEDS`] and text logs.
pub const TEST_FLAGS: &[&[&str]] = &[LOOP_SPEEDS, &["--log-format", "text"]];

impl Reporter {
    /// Starts a reporter named `name` against `cp` as ServiceAccount `aco-reporter` (the RBAC of
    /// `k8s/base/reporter.yaml`), reporting to `worker_url` (trusting the test CA) with the Worker's
    /// admin token, [`TEST_FLAGS`] and `extra` flags (later flags win).
    pub fn start(
        cp: &ControlPlane,
        worker_url: &str,
        name: &str,
        extra: &[&str],
        release: bool,
    ) -> Reporter {
        let ops = free_port();
        let webhook = free_port();
        let ca = cp.pki.path("ca.crt");
        let ca = ca.to_string_lossy().into_owned();
        let listen = format!("127.0.0.1:{ops}");
        let webhook_listen = format!("127.0.0.1:{webhook}");
        let (cert, key) = cp.pki.webhook_tls();
        let (cert, key) = (cert.to_string_lossy(), key.to_string_lossy());
        let mut defaults: Vec<&str> = vec![
            "--worker-url",
            worker_url,
            "--ca-file",
            &ca,
            "--token",
            crate::ADMIN_TOKEN,
            "--listen",
            &listen,
            "--leader-elect",
            "false",
            "--webhook-listen",
            &webhook_listen,
            "--webhook-cert-file",
            &cert,
            "--webhook-key-file",
            &key,
        ];
        defaults.extend(TEST_FLAGS.concat());
        // clap refuses a flag given twice: a flag in `extra` replaces the default (all of ours
        // take one value).
        let mut args: Vec<String> = Vec::new();
        for pair in defaults.chunks(2) {
            if !extra.contains(&pair[0]) {
                args.extend(pair.iter().map(|s| s.to_string()));
            }
        }
        args.extend(extra.iter().map(|s| s.to_string()));
        let server = Server::spawn_with_env(
            name,
            &cp.dir,
            &reporter_bin(release),
            &args,
            &[
                // As the Deployment runs it: ServiceAccount aco-reporter, k8s/base/reporter.yaml's RBAC.
                ("KUBECONFIG", cp.reporter_kubeconfig.as_path()),
                ("RUST_LOG", Path::new("info,aco_reporter=debug")),
            ],
        );
        Reporter {
            server,
            ops,
            webhook,
        }
    }

    /// Starts the reporter as the installed Deployment runs it: `env` and `args` from the
    /// rendered manifest ([`super::install`]), the API reached with `kubeconfig` (a
    /// ServiceAccount's token), the test CA trusted, plus `extra` flags (test speeds). The
    /// webhook's certificate files (the mounted Secret's) are the test's and it listens on a
    /// free loopback port.
    pub fn start_installed(
        cp: &ControlPlane,
        kubeconfig: &Path,
        name: &str,
        env: &[(String, PathBuf)],
        args: &[String],
        extra: &[&str],
    ) -> Reporter {
        let ops = free_port();
        let webhook = free_port();
        let listen = format!("127.0.0.1:{ops}");
        let ca = cp.pki.path("ca.crt");
        let (cert, key) = cp.pki.webhook_tls();
        let webhook_listen = PathBuf::from(format!("127.0.0.1:{webhook}"));
        let env: Vec<(String, PathBuf)> = env
            .iter()
            .map(|(k, v)| {
                let local = match k.as_str() {
                    "ACO_WEBHOOK_CERT_FILE" => cert.clone(),
                    "ACO_WEBHOOK_KEY_FILE" => key.clone(),
                    "ACO_WEBHOOK_LISTEN" => webhook_listen.clone(),
                    _ => v.clone(),
                };
                (k.clone(), local)
            })
            .collect();
        let mut all: Vec<String> = args.to_vec();
        all.extend(
            ["--listen", &listen, "--ca-file", &ca.to_string_lossy()]
                .iter()
                .map(|s| s.to_string()),
        );
        all.extend(extra.iter().map(|s| s.to_string()));
        let mut vars: Vec<(&str, &Path)> =
            env.iter().map(|(k, v)| (k.as_str(), v.as_path())).collect();
        vars.push(("KUBECONFIG", kubeconfig));
        vars.push(("RUST_LOG", Path::new("info,aco_reporter=debug")));
        let server = Server::spawn_with_env(name, &cp.dir, &reporter_bin(false), &all, &vars);
        Reporter {
            server,
            ops,
            webhook,
        }
    }

    pub async fn metrics(&self) -> String {
        let url = format!("http://127.0.0.1:{}/metrics", self.ops);
        match reqwest::get(&url).await {
            Ok(r) => r.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        }
    }

    /// The value of one series (`name{labels}`), 0 when absent.
    pub async fn metric(&self, series: &str) -> f64 {
        sample(&self.metrics().await, series)
    }

    /// Waits until at least `n` node reports were acknowledged by the Worker.
    pub async fn wait_nodes_reported(&mut self, n: usize, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            self.server.assert_running();
            if self
                .metric("aco_reporter_reports_sent_total{kind=\"nodes\"}")
                .await
                >= n as f64
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "reporter did not push {n} nodes; log:\n{}",
                self.server.log_tail(40)
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// One sample of an exposition text: the value on the line that starts with `series`.
pub fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| {
            l.strip_prefix(series)
                .filter(|rest| rest.starts_with(' '))
                .and_then(|rest| rest.trim().split(' ').next())
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0.0)
}
