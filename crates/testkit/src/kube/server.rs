//! A server in its own process group under `scripts/kube/run-bound`, logging to a file, and
//! the polling helpers the launchers wait with.

use std::ffi::OsStr;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use crate::process::ProcessGroup;
use crate::repo_root;

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

/// A server in its own process group (under `scripts/kube/run-bound`), logging to
/// `<dir>/<name>.log`. Stopped on drop.
pub struct Server {
    pub name: String,
    pub log: PathBuf,
    /// The port it serves on, when its launcher records one (kube-scheduler's secure port).
    pub port: u16,
    group: Option<ProcessGroup>,
    // run-bound stops the group when this pipe closes (the test process died).
    _stdin: Option<ChildStdin>,
}

impl Server {
    pub fn spawn(name: &str, dir: &Path, program: &Path, args: &[String]) -> Server {
        Server::spawn_with_env::<&Path>(name, dir, program, args, &[])
    }

    /// [`Server::spawn`] with extra environment variables (paths or text).
    pub fn spawn_with_env<V: AsRef<OsStr>>(
        name: &str,
        dir: &Path,
        program: &Path,
        args: &[String],
        env: &[(&str, V)],
    ) -> Server {
        let log = dir.join(format!("{name}.log"));
        let out = File::create(&log).expect("create log");
        let mut cmd = Command::new("bash");
        cmd.arg(repo_root().join("scripts/kube/run-bound"))
            .arg(program)
            .args(args)
            .envs(env.iter().map(|(k, v)| (*k, v.as_ref())))
            .stdin(Stdio::piped())
            .stdout(out.try_clone().unwrap())
            .stderr(out);
        let mut group = ProcessGroup::spawn(&mut cmd)
            .unwrap_or_else(|e| panic!("spawn {}: {e}", program.display()));
        let stdin = group.child_mut().stdin.take();
        Server {
            name: name.to_owned(),
            log,
            port: 0,
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

    /// Whether the process has exited.
    pub fn exited(&mut self) -> bool {
        self.group
            .as_mut()
            .is_some_and(|g| g.try_status().is_some())
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
            group.stop(crate::process::TERM_GRACE);
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
