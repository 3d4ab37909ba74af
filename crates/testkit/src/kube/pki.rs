//! The throwaway PKI of a control plane (made by `scripts/kube/gen-certs`).

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
}
