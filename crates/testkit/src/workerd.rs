//! The built Worker (`build/`, from `bash scripts/build-worker`) on workerd itself, run with the
//! self-hosted install's own configuration ([`CONFIG`]): no Miniflare and no entry worker in
//! front — the process kube-scheduler and the reporter talk to inside a cluster.
//!
//! ```no_run
//! # async fn livez(pki: aco_testkit::kube::Pki) {
//! use aco_testkit::workerd::{WorkerdOptions, WorkerdProcess};
//!
//! let workerd = WorkerdProcess::start(WorkerdOptions::new(pki.worker_tls())).await;
//! assert!(workerd.url("/livez").starts_with("https://127.0.0.1:"));
//! # }
//! ```
//!
//! workerd is started as the StatefulSet starts it (`workerd serve <config> -I <bundle root>
//! -I <TLS directory>`), from `node_modules/.bin/workerd` (the version package-lock.json pins),
//! with only what differs on a laptop given on its command line: the listening address
//! (`--socket-addr https=127.0.0.1:<free port>`, kept across restarts, as a Service name is) and
//! the state directory (`--directory-path state=<dir>`, the PersistentVolume's role). Secrets are
//! its environment, as the Secret gives them; extra `[vars]` are text bindings added to a copy
//! of the config. Each instance is its own process group under `scripts/kube/run-bound`
//! ([`Server`]): stopped by group id on drop, also when the test process dies.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tempfile::TempDir;

use crate::kube::{wait_ready, Server};
use crate::process::free_port;
use crate::{repo_root, ADMIN_TOKEN, EXTENDER_TOKEN, METRICS_TOKEN};

/// The self-hosted install's workerd configuration (the ConfigMap `aco-worker-config`).
pub const CONFIG: &str = "k8s/self-hosted/workerd.capnp";
/// The line of [`CONFIG`] after which its `[vars]` text bindings are listed.
const VARS_MARKER: &str = "# [vars]";
/// How long workerd may take to serve `/livez` (it compiles the 2.4 MB wasm on start; the
/// machine may be loaded).
const READY_TIMEOUT: Duration = Duration::from_secs(120);

/// How to start workerd: [`CONFIG`] with this TLS key pair, state, `[vars]` and secrets.
#[derive(Clone, Debug)]
pub struct WorkerdOptions {
    /// `(key.pem, cert.pem)` served on the `https` socket (the Secret `aco-worker-tls`).
    pub tls: (PathBuf, PathBuf),
    /// Durable Object state (the PersistentVolume). `None`: a temporary directory owned by the
    /// process value, kept across restarts.
    pub state_dir: Option<PathBuf>,
    /// Text bindings added to the config's `[vars]`, or replacing one of the same name.
    pub vars: Vec<(String, String)>,
    /// workerd's environment: the secrets its `fromEnvironment` bindings read.
    pub secrets: Vec<(String, String)>,
}

impl WorkerdOptions {
    /// The shipped config with the test secrets ([`ADMIN_TOKEN`], [`METRICS_TOKEN`], and
    /// [`EXTENDER_TOKEN`] as `EXTENDER_TOKENS`), serving HTTPS with `tls`.
    pub fn new(tls: (PathBuf, PathBuf)) -> Self {
        WorkerdOptions {
            tls,
            state_dir: None,
            vars: Vec::new(),
            secrets: [
                ("ADMIN_TOKEN", ADMIN_TOKEN),
                ("METRICS_TOKEN", METRICS_TOKEN),
                ("EXTENDER_TOKENS", EXTENDER_TOKEN),
            ]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        }
    }

    /// Sets a `[vars]` key.
    pub fn var(mut self, name: &str, value: &str) -> Self {
        self.vars.push((name.to_owned(), value.to_owned()));
        self
    }
}

/// A running workerd. `base_url` is `https://127.0.0.1:<port>`, the same after a restart.
pub struct WorkerdProcess {
    pub base_url: String,
    port: u16,
    options: WorkerdOptions,
    state_dir: PathBuf,
    /// Instances started so far (each logs to its own file).
    incarnation: u32,
    server: Option<Server>,
    // Declared after the server: removed once it has stopped.
    dir: TempDir,
    _state: Option<TempDir>,
}

impl WorkerdProcess {
    /// Starts workerd and waits until it serves `/livez`; panics with its log if it does not.
    pub async fn start(options: WorkerdOptions) -> WorkerdProcess {
        for file in ["build/index.js", "build/index_bg.wasm"] {
            assert!(
                repo_root().join(file).is_file(),
                "{file} is missing: build the Worker first with `bash scripts/build-worker`"
            );
        }
        let dir = tempfile::Builder::new()
            .prefix("aco-workerd-")
            .tempdir()
            .expect("temporary directory");
        // The TLS directory of the second import path, laid out as the Secret is mounted.
        let tls = dir.path().join("import/tls");
        std::fs::create_dir_all(&tls).unwrap();
        std::fs::copy(&options.tls.0, tls.join("tls.key")).expect("copy the TLS key");
        std::fs::copy(&options.tls.1, tls.join("tls.crt")).expect("copy the TLS certificate");
        std::fs::write(dir.path().join("workerd.capnp"), config_with(&options.vars))
            .expect("write the config");
        let (state, state_dir) = match &options.state_dir {
            Some(d) => (None, d.clone()),
            None => {
                let t = tempfile::Builder::new()
                    .prefix("aco-workerd-state-")
                    .tempdir()
                    .unwrap();
                let p = t.path().to_path_buf();
                (Some(t), p)
            }
        };
        let port = free_port();
        let mut workerd = WorkerdProcess {
            base_url: format!("https://127.0.0.1:{port}"),
            port,
            options,
            state_dir,
            incarnation: 0,
            server: None,
            dir,
            _state: state,
        };
        workerd.spawn().await;
        workerd
    }

    /// SIGTERM (as a rolling update or a drained node sends it), then a start on the same state
    /// and port.
    pub async fn restart(&mut self) {
        if let Some(mut s) = self.server.take() {
            s.stop();
        }
        self.spawn().await;
    }

    /// `kill -9` of the process group (no chance to flush anything), then a start on the same
    /// state and port.
    pub async fn crash_and_restart(&mut self) {
        if let Some(mut s) = self.server.take() {
            s.kill();
        }
        self.spawn().await;
    }

    /// `base_url` + `path` (`path` starts with `/`).
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    /// Where the extender verbs are served: `/t/<token>/v1` under the config's
    /// `EXTENDER_AUTH=path-token` (or a `[vars]` override), else `/v1`.
    pub fn verb_root(&self) -> String {
        let auth = self
            .options
            .vars
            .iter()
            .rev()
            .find(|(k, _)| k == "EXTENDER_AUTH")
            .map(|(_, v)| v.clone())
            .or_else(|| text_binding(&shipped_config(), "EXTENDER_AUTH"));
        let tokens = self
            .options
            .secrets
            .iter()
            .find(|(k, _)| k == "EXTENDER_TOKENS")
            .map(|(_, v)| v.as_str());
        crate::verb_root(auth.as_deref(), tokens)
    }

    /// The Durable Object state directory (one subdirectory per class, as
    /// [`crate::state::object_sqlite_files`] reads under `do/` of Miniflare's).
    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    /// The peak resident memory (`VmHWM`) of the running workerd, in bytes: the isolates'
    /// JavaScript heaps and wasm memories, SQLite's caches and the runtime — what the
    /// StatefulSet's memory request covers. None if it cannot be read (not Linux).
    pub fn peak_rss_bytes(&self) -> Option<u64> {
        let pgid = self.server.as_ref()?.pid()?;
        crate::process::peak_rss_bytes(nix::unistd::Pid::from_raw(pgid as i32), "workerd")
    }

    /// Everything every instance wrote (workerd's own messages and the Worker's errors).
    pub fn logs(&self) -> String {
        (1..=self.incarnation)
            .filter_map(|i| std::fs::read_to_string(self.log_path(i)).ok())
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn log_path(&self, incarnation: u32) -> PathBuf {
        self.dir.path().join(format!("workerd-{incarnation}.log"))
    }

    async fn spawn(&mut self) {
        assert!(self.server.is_none(), "workerd already running");
        self.incarnation += 1;
        let root = repo_root();
        let import = self.dir.path().join("import");
        let args = vec![
            "serve".to_owned(),
            self.dir.path().join("workerd.capnp").display().to_string(),
            format!("--import-path={}", root.display()),
            format!("--import-path={}", import.display()),
            format!("--directory-path=state={}", self.state_dir.display()),
            format!("--socket-addr=https=127.0.0.1:{}", self.port),
        ];
        let mut server = Server::spawn_with_env(
            &format!("workerd-{}", self.incarnation),
            self.dir.path(),
            &root.join("node_modules/.bin/workerd"),
            &args,
            &self
                .options
                .secrets
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect::<Vec<_>>(),
        );
        // Readiness as the StatefulSet's probe sees it (the kubelet does not verify the
        // certificate either); the clients of the tests do, with the CA.
        let probe = reqwest::Client::builder()
            .danger_accept_invalid_certs(true)
            .timeout(Duration::from_secs(5))
            .build()
            .unwrap();
        let livez = self.url("/livez");
        wait_ready(&mut server, READY_TIMEOUT, || {
            let (probe, livez) = (probe.clone(), livez.clone());
            async move {
                probe
                    .get(&livez)
                    .send()
                    .await
                    .is_ok_and(|r| r.status().is_success())
            }
        })
        .await;
        self.server = Some(server);
    }
}

fn shipped_config() -> String {
    std::fs::read_to_string(repo_root().join(CONFIG)).expect("k8s/self-hosted/workerd.capnp")
}

/// The value of a `(name = "<name>", text = "<value>")` binding of a config, if it has one.
pub fn text_binding(config: &str, name: &str) -> Option<String> {
    let prefix = format!("(name = \"{name}\", text = \"");
    config.lines().find_map(|l| {
        let rest = l.trim().strip_prefix(&prefix)?;
        Some(rest.split('"').next()?.to_owned())
    })
}

/// [`CONFIG`] with these `[vars]` as text bindings: one the config binds already is replaced,
/// the others are added after its `# [vars]` line.
pub fn config_with(vars: &[(String, String)]) -> String {
    let shipped = shipped_config();
    assert!(
        shipped.lines().any(|l| l.trim() == VARS_MARKER),
        "{CONFIG} has no `{VARS_MARKER}` line to add vars after"
    );
    let binding = |k: &str, v: &str| {
        let quoted = v.replace('\\', "\\\\").replace('"', "\\\"");
        format!("    (name = \"{k}\", text = \"{quoted}\"),")
    };
    let mut lines: Vec<String> = shipped
        .lines()
        .filter(|l| {
            !vars
                .iter()
                .any(|(k, _)| l.trim().starts_with(&format!("(name = \"{k}\", text = ")))
        })
        .map(str::to_owned)
        .collect();
    let at = lines.iter().position(|l| l.trim() == VARS_MARKER).unwrap() + 1;
    for (i, (k, v)) in vars.iter().enumerate() {
        lines.insert(at + i, binding(k, v));
    }
    lines.join("\n") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vars_are_added_after_the_marker_and_replace_a_binding_of_the_same_name() {
        let text = config_with(&[
            ("EXTENDER_AUTH".into(), "none".into()),
            ("TENANT_SOURCE".into(), "name\"space".into()),
        ]);
        assert_eq!(
            text_binding(&shipped_config(), "EXTENDER_AUTH").as_deref(),
            Some("path-token")
        );
        assert_eq!(
            text_binding(&text, "EXTENDER_AUTH").as_deref(),
            Some("none")
        );
        assert_eq!(text.matches("name = \"EXTENDER_AUTH\"").count(), 1);
        assert!(text.contains(r#"(name = "TENANT_SOURCE", text = "name\"space"),"#));
    }
}
