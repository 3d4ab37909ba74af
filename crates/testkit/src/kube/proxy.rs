//! `aco-netem-proxy` between kube-scheduler and the Worker: delay and failure injection.

use std::time::{Duration, Instant};

use super::{strings, ControlPlane, Server};

impl ControlPlane {
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
