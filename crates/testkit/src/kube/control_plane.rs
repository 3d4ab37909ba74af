//! etcd, kube-apiserver, kube-controller-manager and kube-scheduler, built by
//! `scripts/build-kube`. The flags mirror `scripts/kube-up` (a by-hand playground, AlwaysAllow);
//! keep them in step.
//!
//! The API server always enforces RBAC (`--authorization-mode=Node,RBAC`), and the
//! ServiceAccounts and RBAC of the shipped `k8s/` (rendered by the pinned kustomize,
//! [`super::install::identities`]) are applied at start: kube-scheduler runs as `aco-scheduler`
//! and the reporter as `aco-reporter`, each with its ServiceAccount's token, so a permission
//! missing from `k8s/` fails the test that needs it. The tests themselves, kwok,
//! metrics-server and kube-controller-manager act as cluster admins (system:masters).

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;

use super::{host_port, strings, wait_for, wait_ready, Kube, Pki, SchedulerConfig, Server};
use crate::process::free_port;
use crate::repo_root;

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

/// How the control plane is set up (RBAC is always on).
#[derive(Clone, Debug, Default)]
pub struct ControlPlaneOptions {
    /// A real cluster's controllers: the ServiceAccount and TaintNodesByCondition admission
    /// plugins on, and kube-controller-manager running (Deployments, ReplicaSets, Jobs, PodGC,
    /// the node lifecycle and taint eviction controllers, service accounts and their tokens).
    /// Off: no controllers, pods created directly.
    pub controllers: bool,
    /// The Priority admission plugin off, so a pod's own `spec.priority` and
    /// `spec.preemptionPolicy` stand (it would set them from a PriorityClass and refuse pods
    /// that give them): the trace replay orders kube-scheduler's queue with them.
    pub priority_in_pod_spec: bool,
}

/// How long the tokens of the shipped ServiceAccounts are valid: longer than any test or
/// benchmark run (a kubeconfig holds a fixed token; client-go does not renew it).
const TOKEN_SECONDS: u64 = 7 * 24 * 3600;

pub struct ControlPlane {
    pub dir: PathBuf,
    pub bin: PathBuf,
    pub pki: Pki,
    pub api_url: String,
    /// The admin's kubeconfig (system:masters).
    pub kubeconfig: PathBuf,
    /// kube-scheduler's: a token of ServiceAccount kube-system/aco-scheduler (`k8s/base/rbac.yaml`).
    pub scheduler_kubeconfig: PathBuf,
    /// The reporter's: a token of ServiceAccount kube-system/aco-reporter (`k8s/base/reporter.yaml`).
    pub reporter_kubeconfig: PathBuf,
    pub kube: Kube,
    // Dropped in reverse order of start: apiserver before etcd.
    apiserver: Server,
    apiserver_args: Vec<String>,
    /// kube-controller-manager, with [`ControlPlaneOptions::controllers`].
    controller_manager: Option<Server>,
    // Held to be stopped on drop, after the apiserver.
    _etcd: Server,
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
        let pki = Pki::generate(&dir.join("pki"));

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
        let mut disabled_admission = Vec::new();
        if !options.controllers {
            disabled_admission.extend(["ServiceAccount", "TaintNodesByCondition"]);
        }
        if options.priority_in_pod_spec {
            disabled_admission.push("Priority");
        }
        let disabled_admission = disabled_admission.join(",");
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
            "Node,RBAC",
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
            &disabled_admission,
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
        // The apiserver creates "default" and "kube-system" (where k8s/ installs) itself a
        // moment after it is ready.
        for ns in ["default", "kube-system"] {
            wait_for(&format!("namespace {ns}"), Duration::from_secs(60), || {
                let kube = kube.clone();
                async move { kube.get(&format!("/api/v1/namespaces/{ns}")).await.ok() }
            })
            .await;
        }

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
            scheduler_kubeconfig: PathBuf::new(),
            reporter_kubeconfig: PathBuf::new(),
            kube,
            apiserver,
            apiserver_args,
            controller_manager: None,
            _etcd: etcd,
            _temp: temp,
        };
        if options.controllers {
            cp.controller_manager = Some(cp.start_controller_manager().await);
        }
        cp.install_identities().await;
        cp
    }

    /// Applies the ServiceAccounts and RBAC of the shipped `k8s/` (the pinned kustomize's
    /// rendering, as `kubectl apply -k` would create them) and writes kube-scheduler's and the
    /// reporter's kubeconfigs with those ServiceAccounts' tokens.
    async fn install_identities(&mut self) {
        let objects = super::install::render_overlay(
            &self.bin,
            &self.dir.join("identities-overlay"),
            "https://aco-edge-extender.example.workers.dev",
            "aco-reporter:test",
            "",
        );
        super::install::apply(&self.kube, &super::install::identities(&objects)).await;
        self.scheduler_kubeconfig = self
            .service_account_kubeconfig("kube-system", "aco-scheduler")
            .await;
        self.reporter_kubeconfig = self
            .service_account_kubeconfig("kube-system", "aco-reporter")
            .await;
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

    /// A token of ServiceAccount `ns/name` (TokenRequest, valid for a week).
    pub async fn service_account_token(&self, ns: &str, name: &str) -> String {
        let reply = self
            .kube
            .post(
                &format!("/api/v1/namespaces/{ns}/serviceaccounts/{name}/token"),
                &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                        "spec": {"expirationSeconds": TOKEN_SECONDS}}),
            )
            .await;
        reply["status"]["token"].as_str().expect("token").to_owned()
    }

    /// A kubeconfig with a token of ServiceAccount `ns/name` (TokenRequest, valid for a week):
    /// a client holding it has exactly the RBAC bound to that ServiceAccount.
    pub async fn service_account_kubeconfig(&self, ns: &str, name: &str) -> PathBuf {
        let token = self.service_account_token(ns, name).await;
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

    /// Starts kube-scheduler as the second scheduler with `config` and waits for /readyz. It
    /// runs as ServiceAccount `aco-scheduler` (its token, the RBAC of `k8s/base/rbac.yaml`), also for
    /// the delegated authentication and authorization of its secure port, as in a pod (where
    /// the in-cluster config gives it the same identity). The returned server's `port` is that
    /// secure port (`/metrics`).
    pub async fn start_scheduler(&self, name: &str, config: &SchedulerConfig) -> Server {
        self.start_scheduler_binary(
            name,
            "kube-scheduler",
            &config.render(&self.scheduler_kubeconfig),
        )
        .await
    }

    /// Starts `binary` (kube-scheduler, or a build of it with more plugins) from [`Self::bin`]
    /// with the KubeSchedulerConfiguration `config_yaml` and waits for /readyz; its secure port
    /// authenticates and authorizes as ServiceAccount `aco-scheduler` (see [`Self::start_scheduler`]),
    /// whose kubeconfig [`Self::scheduler_kubeconfig`] the config's clientConnection should name.
    pub async fn start_scheduler_binary(
        &self,
        name: &str,
        binary: &str,
        config_yaml: &str,
    ) -> Server {
        self.start_scheduler_binary_args(name, binary, config_yaml, &[])
            .await
    }

    /// [`ControlPlane::start_scheduler_binary`] with more flags after ours (a later flag wins,
    /// e.g. `-v=3`).
    pub async fn start_scheduler_binary_args(
        &self,
        name: &str,
        binary: &str,
        config_yaml: &str,
        extra: &[&str],
    ) -> Server {
        let cfg_path = self.dir.join(format!("{name}.yaml"));
        std::fs::write(&cfg_path, config_yaml).unwrap();
        let identity = self.scheduler_kubeconfig.to_string_lossy().into_owned();
        let port = free_port();
        let mut args = strings(&[
            "--config",
            &cfg_path.to_string_lossy(),
            "--leader-elect=false",
            "--bind-address",
            "127.0.0.1",
            "--secure-port",
            &port.to_string(),
            "--authentication-kubeconfig",
            &identity,
            "--authorization-kubeconfig",
            &identity,
            "-v=2",
        ]);
        args.extend(strings(extra));
        let mut sched = Server::spawn(name, &self.dir, &self.bin.join(binary), &args);
        sched.port = port;
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
}
