//! The throwaway PKI of a control plane (made by `scripts/kube/gen-certs`, the admission
//! webhook's part by `scripts/webhook-cert`).

use std::path::PathBuf;

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
    /// `(cert, key)` of the reporter's admission webhook (127.0.0.1), made by the shipped
    /// `scripts/webhook-cert` under its own CA ([`Pki::webhook_ca_pem`]).
    pub fn webhook_tls(&self) -> (PathBuf, PathBuf) {
        (self.path("webhook/tls.crt"), self.path("webhook/tls.key"))
    }
    /// The webhook's CA: the `caBundle` of its `MutatingWebhookConfiguration`.
    pub fn webhook_ca_pem(&self) -> Vec<u8> {
        std::fs::read(self.path("webhook/ca.crt")).unwrap()
    }
}
