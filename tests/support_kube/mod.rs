//! A real Kubernetes control plane for the end-to-end tests: etcd, kube-apiserver and
//! kube-scheduler built by `scripts/build-kube` (pinned in `scripts/kube/go.mod`), plus
//! `aco-netem-proxy` (delay / failure injection between kube-scheduler and the Worker).
//!
//! Every server binds 127.0.0.1 on a free port, runs in its own process group under
//! `scripts/kube/run-bound` (which stops the group when the test process goes away, even on
//! SIGKILL) and is stopped by process-group id on drop, also while a failing test unwinds.
//! The flags mirror `scripts/kube-up`; keep them in step.
//!
//! [`kwok`] adds fake kubelets (kwok) and metrics-server behind the aggregation layer.
//!
//! The kube-scheduler configuration is `k8s/scheduler-config.yaml` — the file the shipped
//! ConfigMap is generated from — with only the local differences applied
//! ([`SchedulerConfig::render`]).
#![allow(dead_code)]

use std::fs::File;
use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

pub use crate::support::process::free_port;
use crate::support::process::ProcessGroup;

pub const SCHEDULER_NAME: &str = "aco-scheduler";

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Directory with etcd, kube-apiserver, kube-scheduler, aco-netem-proxy: `$KUBE_BIN`, else the
/// one `scripts/build-kube` prints (building them on a cold machine takes a while).
pub fn kube_bin() -> PathBuf {
    if let Some(dir) = std::env::var_os("KUBE_BIN") {
        return PathBuf::from(dir);
    }
    let out = Command::new("bash")
        .arg(repo_root().join("scripts/build-kube"))
        .stderr(Stdio::inherit())
        .output()
        .expect("run scripts/build-kube");
    assert!(out.status.success(), "scripts/build-kube failed");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let dir = stdout
        .lines()
        .find_map(|l| l.strip_prefix("KUBE_BIN="))
        .expect("scripts/build-kube prints KUBE_BIN=<dir>");
    PathBuf::from(dir.trim())
}

/// Polls `check` every 100-500 ms until it returns `Some`, for at most `timeout`.
pub async fn wait_for<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_millis(100);
    loop {
        if let Some(v) = check().await {
            return v;
        }
        if Instant::now() > deadline {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(500));
    }
}

/// Polls `ready` until it returns true, failing at once (with the log) if `server` exits.
pub async fn wait_ready<F, Fut>(server: &mut Server, timeout: Duration, mut ready: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if ready().await {
            return;
        }
        server.assert_running();
        if Instant::now() > deadline {
            panic!(
                "{} not ready after {timeout:?}; log tail:\n{}",
                server.name,
                server.log_tail(40)
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

// ---------------------------------------------------------------------------------------------
// processes

/// A server in its own process group (under `scripts/kube/run-bound`), logging to
/// `<dir>/<name>.log`. Stopped on drop.
pub struct Server {
    pub name: String,
    pub log: PathBuf,
    group: Option<ProcessGroup>,
    // run-bound stops the group when this pipe closes (the test process died).
    _stdin: Option<ChildStdin>,
}

impl Server {
    pub fn spawn(name: &str, dir: &Path, program: &Path, args: &[String]) -> Server {
        Server::spawn_with_env(name, dir, program, args, &[])
    }

    /// [`Server::spawn`] with extra environment variables.
    pub fn spawn_with_env(
        name: &str,
        dir: &Path,
        program: &Path,
        args: &[String],
        env: &[(&str, &Path)],
    ) -> Server {
        let log = dir.join(format!("{name}.log"));
        let out = File::create(&log).expect("create log");
        let mut cmd = Command::new("bash");
        cmd.arg(repo_root().join("scripts/kube/run-bound"))
            .arg(program)
            .args(args)
            .envs(env.iter().map(|(k, v)| (*k, *v)))
            .stdin(Stdio::piped())
            .stdout(out.try_clone().unwrap())
            .stderr(out);
        let mut group = ProcessGroup::spawn(&mut cmd)
            .unwrap_or_else(|e| panic!("spawn {}: {e}", program.display()));
        let stdin = group.child_mut().stdin.take();
        Server {
            name: name.to_owned(),
            log,
            group: Some(group),
            _stdin: stdin,
        }
    }

    pub fn log_text(&self) -> String {
        let mut s = String::new();
        if let Ok(mut f) = File::open(&self.log) {
            let _ = f.read_to_string(&mut s);
        }
        s
    }

    pub fn log_tail(&self, lines: usize) -> String {
        let text = self.log_text();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Panics with the log tail if the process has exited.
    pub fn assert_running(&mut self) {
        if let Some(status) = self.group.as_mut().and_then(|g| g.try_status()) {
            panic!(
                "{} exited ({status}); log tail:\n{}",
                self.name,
                self.log_tail(40)
            );
        }
    }

    /// The pid of the group's leader (the `run-bound` wrapper; the program is its child).
    pub fn pid(&self) -> Option<u32> {
        self.group.as_ref().map(|g| g.pgid().as_raw() as u32)
    }

    /// SIGKILL to the group at once: a crash, no graceful shutdown.
    pub fn kill(&mut self) {
        if let Some(mut group) = self.group.take() {
            group.kill();
        }
        self._stdin = None;
    }

    /// SIGTERM to the group, SIGKILL after 5 s.
    pub fn stop(&mut self) {
        if let Some(mut group) = self.group.take() {
            group.stop(crate::support::process::TERM_GRACE);
        }
        self._stdin = None;
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
        if std::thread::panicking() {
            eprintln!(
                "---- {} log tail ({}) ----\n{}",
                self.name,
                self.log.display(),
                self.log_tail(30)
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// control plane

/// Paths of the throwaway PKI made by `scripts/kube/gen-certs`.
#[derive(Clone, Debug)]
pub struct Pki {
    pub dir: PathBuf,
}

impl Pki {
    pub fn path(&self, file: &str) -> PathBuf {
        self.dir.join(file)
    }
    pub fn ca_pem(&self) -> Vec<u8> {
        std::fs::read(self.path("ca.crt")).unwrap()
    }
    /// `(key, cert)` for the Worker's HTTPS listener, as `StartOptions::https` wants it.
    pub fn worker_tls(&self) -> (PathBuf, PathBuf) {
        (self.path("worker.key"), self.path("worker.crt"))
    }
}

/// How the control plane is set up.
#[derive(Clone, Debug, Default)]
pub struct ControlPlaneOptions {
    /// A real cluster's controls: `--authorization-mode=Node,RBAC`, the ServiceAccount and
    /// TaintNodesByCondition admission plugins on, and kube-controller-manager running
    /// (Deployments, ReplicaSets, Jobs, PodGC, the node lifecycle and taint eviction controllers,
    /// service accounts and their tokens). Off: AlwaysAllow, no controllers (the older suites).
    pub controllers: bool,
}

pub struct ControlPlane {
    pub dir: PathBuf,
    pub bin: PathBuf,
    pub pki: Pki,
    pub api_url: String,
    pub kubeconfig: PathBuf,
    pub kube: Kube,
    // Dropped in reverse order of start: apiserver before etcd.
    apiserver: Server,
    apiserver_args: Vec<String>,
    /// kube-controller-manager, with [`ControlPlaneOptions::controllers`].
    controller_manager: Option<Server>,
    etcd: Server,
    _temp: tempfile::TempDir,
}

impl ControlPlane {
    /// Starts etcd and kube-apiserver and waits until the API serves.
    pub async fn start() -> ControlPlane {
        ControlPlane::start_with(ControlPlaneOptions::default()).await
    }

    /// [`ControlPlane::start`] with `options` (RBAC and kube-controller-manager).
    pub async fn start_with(options: ControlPlaneOptions) -> ControlPlane {
        let bin = kube_bin();
        // ACO_E2E_KEEP=1 keeps the directory (every server's full log) for a post-mortem.
        let temp = tempfile::Builder::new()
            .prefix("aco-kube-")
            .disable_cleanup(std::env::var_os("ACO_E2E_KEEP").is_some())
            .tempdir()
            .unwrap();
        let dir = temp.path().to_path_buf();
        let pki_dir = dir.join("pki");
        let st = Command::new("bash")
            .arg(repo_root().join("scripts/kube/gen-certs"))
            .arg(&pki_dir)
            .status()
            .expect("run gen-certs");
        assert!(st.success(), "scripts/kube/gen-certs failed");
        let pki = Pki { dir: pki_dir };

        let etcd_port = free_port();
        let peer_port = free_port();
        let etcd_url = format!("http://127.0.0.1:{etcd_port}");
        let peer_url = format!("http://127.0.0.1:{peer_port}");
        let etcd = Server::spawn(
            "etcd",
            &dir,
            &bin.join("etcd"),
            &strings(&[
                "--name",
                "default",
                "--data-dir",
                &dir.join("etcd-data").to_string_lossy(),
                "--listen-client-urls",
                &etcd_url,
                "--advertise-client-urls",
                &etcd_url,
                "--listen-peer-urls",
                &peer_url,
                "--initial-advertise-peer-urls",
                &peer_url,
                "--initial-cluster",
                &format!("default={peer_url}"),
                "--unsafe-no-fsync",
                "--log-level",
                "warn",
            ]),
        );
        let plain = reqwest::Client::new();
        let mut etcd = etcd;
        wait_ready(&mut etcd, Duration::from_secs(30), || {
            let r = plain.get(format!("{etcd_url}/health")).send();
            async move { r.await.is_ok_and(|r| r.status().is_success()) }
        })
        .await;

        let api_port = free_port();
        let p = |f: &str| pki.path(f).to_string_lossy().into_owned();
        let apiserver_args = strings(&[
            "--etcd-servers",
            &etcd_url,
            "--bind-address",
            "127.0.0.1",
            "--advertise-address",
            "127.0.0.1",
            "--secure-port",
            &api_port.to_string(),
            "--tls-cert-file",
            &p("apiserver.crt"),
            "--tls-private-key-file",
            &p("apiserver.key"),
            "--client-ca-file",
            &p("ca.crt"),
            "--service-account-issuer",
            "https://kubernetes.default.svc",
            "--service-account-key-file",
            &p("sa.pub"),
            "--service-account-signing-key-file",
            &p("sa.key"),
            "--service-cluster-ip-range",
            "10.0.0.0/24",
            "--authorization-mode",
            if options.controllers {
                "Node,RBAC"
            } else {
                "AlwaysAllow"
            },
            // The aggregation layer (metrics-server as v1beta1.metrics.k8s.io): the front
            // proxy's CA and allowed name, as kubeadm sets them, and the client cert the
            // apiserver presents to aggregated APIs. Aggregator routing stays off (the
            // default): metrics-server listens on 127.0.0.1, which Endpoints/EndpointSlices
            // may not name, so its Service is an ExternalName (see start_metrics_server).
            "--requestheader-client-ca-file",
            &p("front-proxy-ca.crt"),
            "--requestheader-allowed-names",
            "front-proxy-client",
            "--requestheader-username-headers",
            "X-Remote-User",
            "--requestheader-group-headers",
            "X-Remote-Group",
            "--requestheader-extra-headers-prefix",
            "X-Remote-Extra-",
            "--proxy-client-cert-file",
            &p("front-proxy-client.crt"),
            "--proxy-client-key-file",
            &p("front-proxy-client.key"),
            // Without kube-controller-manager no controller creates service accounts (pods
            // could not be admitted) and no node lifecycle controller lifts the not-ready taint
            // new nodes get; with it, both plugins stay on as in a real cluster.
            "--disable-admission-plugins",
            if options.controllers {
                ""
            } else {
                "ServiceAccount,TaintNodesByCondition"
            },
            // The default reconciler refuses a loopback advertise address.
            "--endpoint-reconciler-type",
            "none",
            "--profiling=false",
        ]);
        let apiserver = Server::spawn(
            "kube-apiserver",
            &dir,
            &bin.join("kube-apiserver"),
            &apiserver_args,
        );
        let api_url = format!("https://127.0.0.1:{api_port}");
        let kube = Kube::new(&api_url, &pki);
        let mut apiserver = apiserver;
        wait_ready(&mut apiserver, Duration::from_secs(120), || {
            let kube = kube.clone();
            async move { kube.get_raw("/readyz").await.is_ok_and(|(s, _)| s == 200) }
        })
        .await;
        // The apiserver creates "default" itself a moment after it is ready.
        wait_for("namespace default", Duration::from_secs(60), || {
            let kube = kube.clone();
            async move { kube.get("/api/v1/namespaces/default").await.ok() }
        })
        .await;

        let kubeconfig = dir.join("kubeconfig");
        std::fs::write(
            &kubeconfig,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: local\n  cluster:\n    server: {api_url}\n    certificate-authority: {}\nusers:\n- name: admin\n  user:\n    client-certificate: {}\n    client-key: {}\ncontexts:\n- name: local\n  context: {{cluster: local, user: admin}}\ncurrent-context: local\n",
                p("ca.crt"),
                p("admin.crt"),
                p("admin.key")
            ),
        )
        .unwrap();

        let mut cp = ControlPlane {
            dir,
            bin,
            pki,
            api_url,
            kubeconfig,
            kube,
            apiserver,
            apiserver_args,
            controller_manager: None,
            etcd,
            _temp: temp,
        };
        if options.controllers {
            cp.controller_manager = Some(cp.start_controller_manager().await);
        }
        cp
    }

    /// kube-controller-manager of the same version, with the admin credentials (its
    /// controllers are not what the tests check) and the service-account signing key (tokens
    /// for ServiceAccounts); the node lifecycle controller keeps its defaults (kwok renews the
    /// node Leases).
    async fn start_controller_manager(&self) -> Server {
        let port = free_port();
        let p = |f: &str| self.pki.path(f).to_string_lossy().into_owned();
        let kubeconfig = self.kubeconfig.to_string_lossy().into_owned();
        let mut server = Server::spawn(
            "kube-controller-manager",
            &self.dir,
            &self.bin.join("kube-controller-manager"),
            &strings(&[
                "--kubeconfig",
                &kubeconfig,
                "--authentication-kubeconfig",
                &kubeconfig,
                "--authorization-kubeconfig",
                &kubeconfig,
                "--bind-address",
                "127.0.0.1",
                "--secure-port",
                &port.to_string(),
                "--service-account-private-key-file",
                &p("sa.key"),
                "--root-ca-file",
                &p("ca.crt"),
                "--use-service-account-credentials=false",
                "--leader-elect=false",
                "--profiling=false",
            ]),
        );
        let insecure = reqwest::Client::builder()
            .danger_accept_invalid_certs(true)
            .build()
            .unwrap();
        wait_ready(&mut server, Duration::from_secs(120), || {
            let r = insecure
                .get(format!("https://127.0.0.1:{port}/healthz"))
                .send();
            async move { r.await.is_ok_and(|r| r.status().is_success()) }
        })
        .await;
        server
    }

    /// A kubeconfig with a token of ServiceAccount `ns/name` (TokenRequest, 1 h): a client
    /// holding it has exactly the RBAC bound to that ServiceAccount.
    pub async fn service_account_kubeconfig(&self, ns: &str, name: &str) -> PathBuf {
        let reply = self
            .kube
            .post(
                &format!("/api/v1/namespaces/{ns}/serviceaccounts/{name}/token"),
                &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                        "spec": {"expirationSeconds": 3600}}),
            )
            .await;
        let token = reply["status"]["token"].as_str().expect("token").to_owned();
        let path = self.dir.join(format!("kubeconfig-{ns}-{name}"));
        std::fs::write(
            &path,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: local\n  cluster:\n    server: {}\n    certificate-authority: {}\nusers:\n- name: {name}\n  user:\n    token: {token}\ncontexts:\n- name: local\n  context: {{cluster: local, user: {name}, namespace: {ns}}}\ncurrent-context: local\n",
                self.api_url,
                self.pki.path("ca.crt").display()
            ),
        )
        .unwrap();
        path
    }

    /// Stops kube-apiserver (SIGTERM): every client's requests fail until
    /// [`ControlPlane::start_apiserver_again`].
    pub fn stop_apiserver(&mut self) {
        self.apiserver.stop();
    }

    /// Stops kube-apiserver (SIGTERM) and starts it again on the same port and etcd, waiting
    /// until it serves: every watch of every client breaks and must resume.
    pub async fn restart_apiserver(&mut self) {
        self.apiserver.stop();
        self.start_apiserver_again().await;
    }

    /// Starts kube-apiserver again on the same port and etcd after
    /// [`ControlPlane::stop_apiserver`], waiting until it serves.
    pub async fn start_apiserver_again(&mut self) {
        // The killed process may hold its listening socket a moment longer: wait until the port
        // is free again (a bind succeeds) before starting the new one on it.
        let addr = host_port(&self.api_url);
        wait_for(
            "the apiserver's port to be free",
            Duration::from_secs(30),
            || {
                let free = TcpListener::bind(&addr).is_ok();
                async move { free.then_some(()) }
            },
        )
        .await;
        let mut apiserver = Server::spawn(
            "kube-apiserver-2",
            &self.dir,
            &self.bin.join("kube-apiserver"),
            &self.apiserver_args,
        );
        let kube = self.kube.clone();
        wait_ready(&mut apiserver, Duration::from_secs(120), || {
            let kube = kube.clone();
            async move { kube.get_raw("/readyz").await.is_ok_and(|(s, _)| s == 200) }
        })
        .await;
        self.apiserver = apiserver;
    }

    /// Starts kube-scheduler as the second scheduler with `config` and waits for /readyz.
    pub async fn start_scheduler(&self, name: &str, config: &SchedulerConfig) -> Server {
        let cfg_path = self.dir.join(format!("{name}.yaml"));
        std::fs::write(&cfg_path, config.render(&self.kubeconfig)).unwrap();
        let port = free_port();
        let mut sched = Server::spawn(
            name,
            &self.dir,
            &self.bin.join("kube-scheduler"),
            &strings(&[
                "--config",
                &cfg_path.to_string_lossy(),
                "--leader-elect=false",
                "--bind-address",
                "127.0.0.1",
                "--secure-port",
                &port.to_string(),
                "-v=2",
            ]),
        );
        let insecure = reqwest::Client::builder()
            .danger_accept_invalid_certs(true)
            .build()
            .unwrap();
        wait_ready(&mut sched, Duration::from_secs(60), || {
            let r = insecure
                .get(format!("https://127.0.0.1:{port}/readyz"))
                .send();
            async move { r.await.is_ok_and(|r| r.status().is_success()) }
        })
        .await;
        sched
    }

    /// Starts `aco-netem-proxy` in front of `upstream` (`host:port`).
    pub fn start_proxy(&self, name: &str, upstream: &str, delay: Duration) -> Proxy {
        let args = strings(&[
            "-upstream",
            upstream,
            "-delay",
            &format!("{}us", delay.as_micros()),
            "-tls-cert",
            &self.pki.path("worker.crt").to_string_lossy(),
            "-tls-key",
            &self.pki.path("worker.key").to_string_lossy(),
        ]);
        let mut server = Server::spawn(name, &self.dir, &self.bin.join("aco-netem-proxy"), &args);
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(line) = server.log_text().lines().find(|l| l.starts_with("READY ")) {
                let mut it = line.split_whitespace().skip(1);
                let addr = it.next().unwrap().to_owned();
                let control = it.next().unwrap().to_owned();
                return Proxy {
                    server,
                    addr,
                    control,
                };
            }
            server.assert_running();
            assert!(
                Instant::now() < deadline,
                "aco-netem-proxy printed no READY"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// `host:port` of a URL such as `https://127.0.0.1:1234`.
pub fn host_port(url: &str) -> String {
    let rest = url.split("://").nth(1).unwrap_or(url);
    rest.split('/').next().unwrap().to_owned()
}

pub struct Proxy {
    pub server: Server,
    /// `127.0.0.1:port` kube-scheduler connects to.
    pub addr: String,
    control: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProxyMode {
    Pass,
    /// Accept and reset: the Worker is unreachable.
    Refuse,
    /// Accept and never answer: kube-scheduler's httpTimeout fires.
    Blackhole,
    /// TLS-terminate and answer HTTP 500.
    Error,
}

impl Proxy {
    pub async fn set_mode(&self, mode: ProxyMode) {
        let m = match mode {
            ProxyMode::Pass => "pass",
            ProxyMode::Refuse => "refuse",
            ProxyMode::Blackhole => "blackhole",
            ProxyMode::Error => "error",
        };
        self.control(&format!("mode?m={m}")).await;
    }
    pub async fn set_delay(&self, rtt: Duration) {
        self.control(&format!("delay?d={}us", rtt.as_micros()))
            .await;
    }
    pub async fn set_upstream(&self, upstream: &str) {
        self.control(&format!("upstream?a={upstream}")).await;
    }
    async fn control(&self, q: &str) {
        let r = reqwest::Client::new()
            .post(format!("http://{}/{q}", self.control))
            .send()
            .await
            .expect("proxy control");
        assert!(r.status().is_success(), "proxy control {q}: {}", r.status());
    }
}

// ---------------------------------------------------------------------------------------------
// scheduler configuration

/// Where the extender stanza of `k8s/scheduler-config.yaml` points in a test.
#[derive(Clone, Debug)]
pub enum Extender {
    /// No extender at all: kube-scheduler alone (the baseline).
    Off,
    /// The Worker at `url_prefix` (e.g. `https://127.0.0.1:1234/v1`), trusted through `ca_pem`.
    Worker {
        url_prefix: String,
        ca_pem: Vec<u8>,
        node_cache_capable: bool,
    },
}

#[derive(Clone, Debug)]
pub struct SchedulerConfig {
    pub extender: Extender,
    /// Overrides `httpTimeout` (None: keep the shipped value).
    pub http_timeout: Option<String>,
    /// Overrides `clientConnection.qps` (burst = 2 x qps). kube-scheduler's default of 50 caps
    /// bindings at ~50 pods/s, which hides everything else in a throughput benchmark.
    pub client_qps: Option<u32>,
    /// Overrides the profile's `schedulerName` (None: the shipped `aco-scheduler`), e.g.
    /// `default-scheduler` with [`Extender::Off`]: the cluster's default scheduler, alone.
    pub scheduler_name: Option<String>,
}

impl SchedulerConfig {
    pub fn worker(url_prefix: String, ca_pem: Vec<u8>, node_cache_capable: bool) -> Self {
        SchedulerConfig {
            extender: Extender::Worker {
                url_prefix,
                ca_pem,
                node_cache_capable,
            },
            http_timeout: None,
            client_qps: None,
            scheduler_name: None,
        }
    }
    pub fn off() -> Self {
        SchedulerConfig {
            extender: Extender::Off,
            http_timeout: None,
            client_qps: None,
            scheduler_name: None,
        }
    }

    /// Kube-scheduler alone as the cluster's `default-scheduler` (no extender): what binds pods
    /// that name no scheduler.
    pub fn default_scheduler() -> Self {
        SchedulerConfig {
            scheduler_name: Some("default-scheduler".into()),
            ..SchedulerConfig::off()
        }
    }

    /// The shipped `k8s/scheduler-config.yaml`, unchanged but for: kubeconfig (a file instead of
    /// the in-cluster service account), and for the extender urlPrefix, nodeCacheCapable and a
    /// private CA (`enableHTTPS: true` + `tlsConfig.caData`) — or no extender for the baseline.
    pub fn render(&self, kubeconfig: &Path) -> String {
        let text = std::fs::read_to_string(repo_root().join("k8s/scheduler-config.yaml")).unwrap();
        let mut doc: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
        doc["clientConnection"]["kubeconfig"] = kubeconfig.to_string_lossy().into_owned().into();
        if let Some(qps) = self.client_qps {
            doc["clientConnection"]["qps"] = qps.into();
            doc["clientConnection"]["burst"] = (2 * qps).into();
        }
        let profiles = doc["profiles"].as_sequence().expect("profiles");
        assert_eq!(profiles[0]["schedulerName"].as_str(), Some(SCHEDULER_NAME));
        if let Some(name) = &self.scheduler_name {
            doc["profiles"][0]["schedulerName"] = name.clone().into();
        }
        match &self.extender {
            Extender::Off => {
                doc.as_mapping_mut().unwrap().remove("extenders");
            }
            Extender::Worker {
                url_prefix,
                ca_pem,
                node_cache_capable,
            } => {
                let ext = &mut doc["extenders"][0];
                assert_eq!(
                    ext["ignorable"].as_bool(),
                    Some(true),
                    "shipped extender must be ignorable"
                );
                ext["urlPrefix"] = url_prefix.clone().into();
                ext["nodeCacheCapable"] = (*node_cache_capable).into();
                ext["enableHTTPS"] = true.into();
                let mut tls = serde_yaml::Mapping::new();
                tls.insert("caData".into(), base64(ca_pem).into());
                ext["tlsConfig"] = serde_yaml::Value::Mapping(tls);
                if let Some(t) = &self.http_timeout {
                    ext["httpTimeout"] = t.clone().into();
                }
            }
        }
        serde_yaml::to_string(&doc).unwrap()
    }
}

fn base64(data: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

// ---------------------------------------------------------------------------------------------
// Kubernetes API (plain HTTPS + JSON with the admin client certificate)

#[derive(Clone)]
pub struct Kube {
    base: String,
    http: reqwest::Client,
}

impl Kube {
    pub fn new(base: &str, pki: &Pki) -> Kube {
        let mut identity = std::fs::read(pki.path("admin.crt")).unwrap();
        identity.extend(std::fs::read(pki.path("admin.key")).unwrap());
        let http = reqwest::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(&pki.ca_pem()).unwrap())
            .identity(reqwest::Identity::from_pem(&identity).unwrap())
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap();
        Kube {
            base: base.to_owned(),
            http,
        }
    }

    pub async fn get_raw(&self, path: &str) -> reqwest::Result<(u16, String)> {
        let r = self.http.get(format!("{}{path}", self.base)).send().await?;
        Ok((r.status().as_u16(), r.text().await?))
    }

    async fn send(&self, req: reqwest::RequestBuilder, what: &str) -> Result<Value, String> {
        let r = req.send().await.map_err(|e| format!("{what}: {e}"))?;
        let status = r.status();
        let text = r.text().await.map_err(|e| format!("{what}: {e}"))?;
        if !status.is_success() {
            return Err(format!("{what}: HTTP {status}: {text}"));
        }
        serde_json::from_str(&text).map_err(|e| format!("{what}: {e}: {text}"))
    }

    pub async fn get(&self, path: &str) -> Result<Value, String> {
        self.send(
            self.http.get(format!("{}{path}", self.base)),
            &format!("GET {path}"),
        )
        .await
    }
    pub async fn post(&self, path: &str, body: &Value) -> Value {
        self.send(
            self.http.post(format!("{}{path}", self.base)).json(body),
            &format!("POST {path}"),
        )
        .await
        .unwrap()
    }
    pub async fn merge_patch(&self, path: &str, body: &Value) -> Value {
        let req = self
            .http
            .patch(format!("{}{path}", self.base))
            .header("Content-Type", "application/merge-patch+json")
            .body(body.to_string());
        self.send(req, &format!("PATCH {path}")).await.unwrap()
    }
    pub async fn delete(&self, path: &str) -> Result<Value, String> {
        let req = self
            .http
            .delete(format!("{}{path}", self.base))
            .json(&json!({"gracePeriodSeconds": 0}));
        self.send(req, &format!("DELETE {path}")).await
    }

    pub async fn create_namespace(&self, name: &str) {
        self.post(
            "/api/v1/namespaces",
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
        )
        .await;
    }

    /// Waits for ServiceAccount `ns/name` (the controller-manager creates `default` in every
    /// namespace; the ServiceAccount admission plugin refuses pods until it exists).
    pub async fn wait_service_account(&self, ns: &str, name: &str) {
        let k = self.clone();
        wait_for(
            &format!("service account {ns}/{name}"),
            Duration::from_secs(60),
            || {
                let k = k.clone();
                let path = format!("/api/v1/namespaces/{ns}/serviceaccounts/{name}");
                async move { k.get(&path).await.ok().map(|_| ()) }
            },
        )
        .await;
    }

    /// Creates the Node and sets `status.allocatable`/`capacity` (no kubelet does it here).
    pub async fn create_node(&self, node: &Value) {
        let name = node["metadata"]["name"].as_str().unwrap().to_owned();
        let mut spec = node.clone();
        spec.as_object_mut().unwrap().remove("status");
        self.post("/api/v1/nodes", &spec).await;
        let status = &node["status"];
        self.merge_patch(
            &format!("/api/v1/nodes/{name}/status"),
            &json!({"status": {"allocatable": status["allocatable"], "capacity": status["capacity"]}}),
        )
        .await;
    }

    pub async fn create_pod(&self, pod: &Value) -> Value {
        let ns = pod["metadata"]["namespace"]
            .as_str()
            .expect("pod namespace");
        self.post(&format!("/api/v1/namespaces/{ns}/pods"), pod)
            .await
    }

    pub async fn pod(&self, ns: &str, name: &str) -> Value {
        self.get(&format!("/api/v1/namespaces/{ns}/pods/{name}"))
            .await
            .unwrap()
    }

    pub async fn pods(&self, ns: &str) -> Vec<Value> {
        let list = self
            .get(&format!("/api/v1/namespaces/{ns}/pods"))
            .await
            .unwrap();
        list["items"].as_array().cloned().unwrap_or_default()
    }

    /// Deletes every pod of the namespace at once (grace period 0: there is no kubelet).
    pub async fn delete_pods(&self, ns: &str) {
        self.delete(&format!("/api/v1/namespaces/{ns}/pods"))
            .await
            .unwrap();
        let k = self.clone();
        let ns = ns.to_owned();
        wait_for("pods deleted", Duration::from_secs(60), || {
            let (k, ns) = (k.clone(), ns.clone());
            async move { k.pods(&ns).await.is_empty().then_some(()) }
        })
        .await;
    }

    /// Events about a pod (core/v1 view of what kube-scheduler records).
    pub async fn pod_events(&self, ns: &str, pod: &str) -> Vec<Value> {
        let list = self
            .get(&format!(
                "/api/v1/namespaces/{ns}/events?fieldSelector=involvedObject.name%3D{pod}"
            ))
            .await
            .unwrap();
        list["items"].as_array().cloned().unwrap_or_default()
    }

    /// Waits until the pod has a node, returns the node name.
    pub async fn wait_bound(&self, ns: &str, name: &str, timeout: Duration) -> String {
        wait_for(
            &format!("pod {ns}/{name} to be bound"),
            timeout,
            || async move {
                let pod = self.pod(ns, name).await;
                pod["spec"]["nodeName"].as_str().map(str::to_owned)
            },
        )
        .await
    }

    /// Waits until every pod of `names` is bound; returns their node names in order.
    pub async fn wait_all_bound(
        &self,
        ns: &str,
        names: &[String],
        timeout: Duration,
    ) -> Vec<String> {
        let mut out = Vec::new();
        let deadline = Instant::now() + timeout;
        for n in names {
            let left = deadline
                .saturating_duration_since(Instant::now())
                .max(Duration::from_secs(1));
            out.push(self.wait_bound(ns, n, left).await);
        }
        out
    }

    /// Waits until kube-scheduler has marked the pod unschedulable; returns the condition message.
    pub async fn wait_unschedulable(&self, ns: &str, name: &str, timeout: Duration) -> String {
        wait_for(
            &format!("pod {ns}/{name} to be Unschedulable"),
            timeout,
            || async move {
                let pod = self.pod(ns, name).await;
                assert!(
                    pod["spec"]["nodeName"].as_str().is_none(),
                    "pod {ns}/{name} was bound: {}",
                    pod["spec"]["nodeName"]
                );
                pod["status"]["conditions"]
                    .as_array()?
                    .iter()
                    .find_map(|c| {
                        (c["type"] == "PodScheduled"
                            && c["status"] == "False"
                            && c["reason"] == "Unschedulable")
                            .then(|| c["message"].as_str().unwrap_or_default().to_owned())
                    })
            },
        )
        .await
    }
}
pub mod fixtures;
pub mod install;
pub mod kwok;
pub mod reporter;
