//! Servers in their own process group: the one place the test harnesses start and stop
//! processes — the Worker on Miniflare ([`crate::worker`]) and the control plane, kwok and
//! metrics-server ([`crate::kube`]).
//!
//! A [`ProcessGroup`] is a child that leads a new process group, so that everything it starts
//! (workerd under node, the server under `scripts/kube/run-bound`) is signalled together.
//! [`ProcessGroup::stop`] sends SIGTERM to the group, SIGKILL after a grace period, and reaps the
//! leader; dropping the value does the same, also while a failing test unwinds.

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

/// How long a process group gets to exit after SIGTERM before it is SIGKILLed.
pub const TERM_GRACE: Duration = Duration::from_secs(5);

/// A port that was free on 127.0.0.1 a moment ago (the OS picks it; the caller binds it next).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The peak resident memory (`VmHWM`) of the process named `comm` in process group `pgid`, in
/// bytes; None if there is none or it cannot be read (not Linux).
pub fn peak_rss_bytes(pgid: Pid, comm: &str) -> Option<u64> {
    let pgid = pgid.as_raw().to_string();
    let tail = format!("({comm}");
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let dir = entry.path();
            let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
            // `pid (comm) state ppid pgrp …`: comm may hold spaces, so split after its `)`.
            let (head, rest) = stat.rsplit_once(')')?;
            let pgrp = rest.split_whitespace().nth(2)?;
            if pgrp != pgid || !head.ends_with(&tail) {
                return None;
            }
            let status = std::fs::read_to_string(dir.join("status")).ok()?;
            let kib = status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?;
            Some(
                kib.trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .ok()?
                    * 1024,
            )
        })
}

/// A running child that leads its own process group.
pub struct ProcessGroup {
    pgid: Pid,
    child: Child,
    status: Option<ExitStatus>,
    stopped: bool,
}

impl ProcessGroup {
    /// Spawns `cmd` as the leader of a new process group (pipes and the like are the caller's
    /// business: take them from [`ProcessGroup::child_mut`]).
    pub fn spawn(cmd: &mut Command) -> std::io::Result<ProcessGroup> {
        let child = cmd.process_group(0).spawn()?;
        Ok(ProcessGroup {
            pgid: Pid::from_raw(child.id() as i32),
            child,
            status: None,
            stopped: false,
        })
    }

    pub fn pgid(&self) -> Pid {
        self.pgid
    }

    pub fn child_mut(&mut self) -> &mut Child {
        &mut self.child
    }

    /// The leader's exit status if it has exited; never blocks.
    pub fn try_status(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.status = self.child.try_wait().ok().flatten();
        }
        self.status
    }

    /// Waits up to `timeout` for the leader to exit.
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(s) = self.try_status() {
                return Some(s);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILL to the whole group at once (a crash: no chance to shut down gracefully); reaps
    /// the leader. Idempotent.
    pub fn kill(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        let _ = killpg(self.pgid, Signal::SIGKILL);
        if self.status.is_none() {
            self.status = self.child.wait().ok();
        }
    }

    /// SIGTERM to the group; SIGKILL to the group if the leader has not exited after `grace`,
    /// and once more at the end so that no member outlives the leader. Reaps the leader.
    /// Returns true when SIGKILL was needed. Idempotent.
    pub fn stop(&mut self, grace: Duration) -> bool {
        if self.stopped {
            return false;
        }
        self.stopped = true;
        let _ = killpg(self.pgid, Signal::SIGTERM);
        let mut killed = false;
        if self.wait_timeout(grace).is_none() {
            killed = true;
            let _ = killpg(self.pgid, Signal::SIGKILL);
            if self.status.is_none() {
                self.status = self.child.wait().ok();
            }
        }
        // The leader is gone; make sure the rest of its group is too (ESRCH: already empty).
        let _ = killpg(self.pgid, Signal::SIGKILL);
        killed
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.stop(TERM_GRACE);
    }
}
