//! Integration-test harness: runs the built Worker (`build/`, from `bash scripts/build-worker`)
//! in Miniflare through `crates/testkit/miniflare.mjs`, which takes every binding and `[vars]`
//! from `wrangler.toml`; the test secrets come from here ([`StartOptions`]).
//!
//! In a `#[tokio::test]` (compiled here, not run: it needs the built Worker):
//!
//! ```no_run
//! # async fn livez() {
//! use aco_testkit::{StartOptions, WorkerProcess};
//!
//! let worker = WorkerProcess::start(StartOptions::default());
//! let res = reqwest::get(worker.url("/livez")).await.unwrap();
//! assert_eq!(res.status(), 200);
//! # }
//! ```
//!
//! Each `WorkerProcess` is its own Node + workerd process group on a free port, with Durable
//! Object and KV state in a per-test temporary directory (or `StartOptions::persist_dir`), so
//! tests run in parallel and [`WorkerProcess::restart`] keeps state. Dropping it — including
//! while a failing test unwinds — stops the whole process group; a panicking test also gets the
//! Worker's log printed. Starting and stopping are blocking (a second or two), which is fine
//! inside `#[tokio::test]`.
//!
//! [`crate::process`] holds the process-group handling (spawn, stop, free ports) that this
//! harness and the control plane's ([`crate::kube`]) share.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::process::{ProcessGroup, TERM_GRACE};
use crate::{repo_root, ADMIN_TOKEN, METRICS_TOKEN};

/// How long Miniflare may take to print `READY` (workerd compiles the wasm on start).
const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// What the Worker logs when it refuses a binding operation beyond the platform's limits per
/// invocation (`BUDGET_EXCEEDED` in src/bindings.rs). Miniflare does not enforce the limit, the
/// Worker does; a test whose Worker logged this fails when the Worker is dropped, even if the
/// test did not look at the refused request (e.g. work done after the response).
pub const BUDGET_EXCEEDED: &str = "binding operation budget exceeded";
/// Cap on the Worker log kept in memory for failure messages (the oldest half is dropped).
const LOG_CAP: usize = 1 << 20;

/// How to start the Worker: `wrangler.toml` (its bindings and `[vars]`) plus `vars`.
///
/// `wrangler.toml` is the production configuration and holds no secret, so [`Default`] adds
/// what a test Worker needs, as bindings: the secrets [`ADMIN_TOKEN`] and [`METRICS_TOKEN`], and
/// `EXTENDER_AUTH=none` (open verbs) for the Miniflare suite, which calls the verbs directly.
/// Tests of authentication set their own `EXTENDER_AUTH`; the kube suites run
/// `path-token` ([`crate::kube::fixtures::worker_options`]); [`StartOptions::shipped`] adds nothing.
#[derive(Debug, Clone)]
pub struct StartOptions {
    /// Durable Object + KV state directory. `None`: a fresh temporary directory owned by the
    /// `WorkerProcess` (kept across `restart`, deleted on drop).
    pub persist_dir: Option<PathBuf>,
    /// Added to / overriding `wrangler.toml` `[vars]` (secrets included: to the Worker both are
    /// bindings).
    pub vars: serde_json::Map<String, serde_json::Value>,
    /// `(key.pem, cert.pem)`: serve HTTPS with this certificate instead of HTTP.
    pub https: Option<(PathBuf, PathBuf)>,
    /// The `request.cf` object of every incoming request (e.g. `{"tlsClientAuth": {...}}`).
    pub cf: Option<serde_json::Value>,
}

impl Default for StartOptions {
    /// Temporary state, HTTP, `wrangler.toml` plus the test secrets and open verbs.
    fn default() -> Self {
        StartOptions::shipped()
            .var("ADMIN_TOKEN", ADMIN_TOKEN)
            .var("METRICS_TOKEN", METRICS_TOKEN)
            .var("EXTENDER_AUTH", "none")
    }
}

impl StartOptions {
    /// `wrangler.toml` exactly as shipped, nothing added: a deployment before any
    /// `wrangler secret put`. Add what a deployer sets with [`StartOptions::var`].
    pub fn shipped() -> Self {
        StartOptions {
            persist_dir: None,
            vars: serde_json::Map::new(),
            https: None,
            cf: None,
        }
    }

    /// Convenience: `StartOptions::default().var("ALPHA", "0.3")`.
    pub fn var(mut self, name: &str, value: impl Into<serde_json::Value>) -> Self {
        self.vars.insert(name.to_owned(), value.into());
        self
    }
}

/// A running Worker. `base_url` has no trailing slash, e.g. `http://127.0.0.1:40123`.
pub struct WorkerProcess {
    pub base_url: String,
    persist_dir: PathBuf,
    options: StartOptions,
    running: Option<Running>,
    logs: Arc<Mutex<String>>,
    // Declared last so that it is removed after the process is gone.
    _temp_dir: Option<TempDir>,
}

struct Running {
    group: ProcessGroup,
    // Held open: miniflare.mjs (--watch-stdin) exits when it closes, so even a test binary
    // killed with SIGKILL does not leave servers behind.
    _stdin: ChildStdin,
}

impl WorkerProcess {
    /// Starts the Worker and waits for it to serve. Panics (with the Worker's log) on failure.
    pub fn start(options: StartOptions) -> WorkerProcess {
        let entry = repo_root().join("build/index.js");
        assert!(
            entry.is_file(),
            "{} is missing: build the Worker first with `bash scripts/build-worker` \
             (`bash scripts/test` does this for you)",
            entry.display()
        );
        let (temp_dir, persist_dir) = match &options.persist_dir {
            Some(dir) => (None, dir.clone()),
            None => {
                let temp = tempfile::Builder::new()
                    .prefix("aco-worker-state-")
                    .tempdir()
                    .expect("create temporary persist dir");
                let path = temp.path().to_path_buf();
                (Some(temp), path)
            }
        };
        let mut worker = WorkerProcess {
            base_url: String::new(),
            persist_dir,
            options,
            running: None,
            logs: Arc::new(Mutex::new(String::new())),
            _temp_dir: temp_dir,
        };
        worker.spawn();
        worker
    }

    /// Stops the Worker and starts it again on the same state directory (and options).
    /// The new instance listens on a new port: use `base_url` afresh afterwards.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }

    /// `kill -9` of the whole process group (node and workerd, no chance to flush anything),
    /// then a start on the same state directory (on a new port).
    pub fn crash_and_restart(&mut self) {
        if let Some(mut running) = self.running.take() {
            running.group.kill();
        }
        self.base_url.clear();
        append_log(&self.logs, "[harness] kill -9 of the process group\n");
        self.spawn();
    }

    /// Stops the Worker, runs `f` on its state directory (e.g. to corrupt a stored value), and
    /// starts it again on the same state (on a new port).
    pub fn while_stopped<T>(&mut self, f: impl FnOnce(&Path) -> T) -> T {
        self.stop();
        let out = f(&self.persist_dir);
        self.spawn();
        out
    }

    /// `base_url` + `path` (`path` starts with `/`).
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base_url, path)
    }

    /// A binding this Worker was started with on top of `wrangler.toml` (a test secret or an
    /// override), as text; `None` when the test did not set it.
    pub fn var(&self, name: &str) -> Option<String> {
        self.options.vars.get(name).map(|v| match v {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        })
    }

    /// Where this Worker serves the extender verbs: `/t/<token>/v1` under `path-token`, else `/v1`.
    pub fn verb_root(&self) -> String {
        crate::verb_root(
            self.var("EXTENDER_AUTH").as_deref(),
            self.var("EXTENDER_TOKENS").as_deref(),
        )
    }

    /// Directory holding Durable Object (`do/`) and KV (`kv/`) state.
    pub fn persist_dir(&self) -> &Path {
        &self.persist_dir
    }

    /// The peak resident memory (`VmHWM`) of the workerd process serving this Worker, in bytes:
    /// everything the runtime holds — the isolates' JavaScript heaps and wasm memories (locally
    /// the Durable Objects' too) and the runtime itself. None if it cannot be read (not Linux).
    pub fn workerd_peak_rss_bytes(&self) -> Option<u64> {
        crate::process::peak_rss_bytes(self.running.as_ref()?.group.pgid(), "workerd")
    }

    /// Everything Miniflare, workerd and the Worker wrote to stderr so far (all instances).
    pub fn logs(&self) -> String {
        self.logs.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn spawn(&mut self) {
        assert!(self.running.is_none(), "worker already running");
        let root = repo_root();
        let node = std::env::var_os("NODE").unwrap_or_else(|| "node".into());
        let mut cmd = Command::new(node);
        cmd.current_dir(&root)
            .arg(root.join("crates/testkit/miniflare.mjs"))
            .arg("--watch-stdin")
            .arg("--persist")
            .arg(&self.persist_dir);
        if !self.options.vars.is_empty() {
            cmd.arg("--vars")
                .arg(serde_json::Value::Object(self.options.vars.clone()).to_string());
        }
        if let Some(cf) = &self.options.cf {
            cmd.arg("--cf").arg(cf.to_string());
        }
        if let Some((key, cert)) = &self.options.https {
            cmd.arg("--https-key")
                .arg(key)
                .arg("--https-cert")
                .arg(cert);
        }
        // Own process group: node and workerd are stopped together via kill(-pgid).
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut group = ProcessGroup::spawn(&mut cmd).unwrap_or_else(|e| {
            panic!("cannot run node (install Node.js >= 20, then `bash scripts/setup`): {e}")
        });
        let child = group.child_mut();
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");

        // stderr → shared log buffer, drained for the whole life of the process.
        let (stderr_done_tx, stderr_done) = mpsc::channel::<()>();
        let logs = Arc::clone(&self.logs);
        thread::spawn(move || {
            drain_into(stderr, &logs);
            let _ = stderr_done_tx.send(());
        });
        // stdout → lines on a channel (first the READY line); keeps draining afterwards.
        let (line_tx, lines) = mpsc::channel::<String>();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                // Nobody listens after READY; keep draining anyway so the child never blocks.
                let _ = line_tx.send(line);
            }
        });
        self.running = Some(Running {
            group,
            _stdin: stdin,
        });

        let deadline = Instant::now() + READY_TIMEOUT;
        let failure = loop {
            match lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(line) => match line.strip_prefix("READY ") {
                    Some(url) => {
                        self.base_url = url.trim().trim_end_matches('/').to_owned();
                        return;
                    }
                    None => append_log(&self.logs, &format!("[stdout] {line}\n")),
                },
                Err(RecvTimeoutError::Disconnected) => {
                    let status = self
                        .running
                        .as_mut()
                        .and_then(|r| r.group.wait_timeout(TERM_GRACE))
                        .map(|s| format!("{s:?}"))
                        .unwrap_or_else(|| "unknown status".into());
                    break format!("miniflare.mjs exited before READY ({status})");
                }
                Err(RecvTimeoutError::Timeout) => {
                    break format!("miniflare.mjs printed no READY line within {READY_TIMEOUT:?}");
                }
            }
        };
        self.stop();
        // The stderr pipe closes once every process of the group is gone.
        let _ = stderr_done.recv_timeout(TERM_GRACE);
        panic!("{failure}; its stderr:\n{}", self.logs());
    }

    /// SIGTERM to the process group, SIGKILL if it is still there after a grace period.
    fn stop(&mut self) {
        let Some(mut running) = self.running.take() else {
            return;
        };
        // Also makes sure no workerd outlives node.
        if running.group.stop(TERM_GRACE) {
            append_log(
                &self.logs,
                "[harness] no exit after SIGTERM; sent SIGKILL\n",
            );
        }
        self.base_url.clear();
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        self.stop();
        if thread::panicking() {
            eprintln!(
                "---- Worker log ({}) ----\n{}",
                self.persist_dir.display(),
                self.logs()
            );
        } else if self.logs().contains(BUDGET_EXCEEDED) {
            panic!(
                "the Worker refused a binding operation beyond the platform's limits per invocation (10,000 subrequests, 1,000 KV operations); its log:\n{}",
                self.logs()
            );
        }
    }
}

fn drain_into(mut pipe: impl Read, logs: &Mutex<String>) {
    let mut buf = [0u8; 8192];
    loop {
        match pipe.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => append_log(logs, &String::from_utf8_lossy(&buf[..n])),
        }
    }
}

fn append_log(logs: &Mutex<String>, text: &str) {
    let mut logs = logs.lock().unwrap_or_else(|e| e.into_inner());
    if logs.len() + text.len() > LOG_CAP {
        let mut cut = logs.len() / 2;
        while !logs.is_char_boundary(cut) {
            cut += 1;
        }
        // The dropped half may hold the budget marker, which the drop check must still see.
        let note = if logs[..cut].contains(BUDGET_EXCEEDED) {
            format!("[...] {BUDGET_EXCEEDED} (earlier)\n")
        } else {
            "[...]\n".into()
        };
        logs.replace_range(..cut, &note);
    }
    logs.push_str(text);
}
