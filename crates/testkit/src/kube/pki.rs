//! The throwaway PKI of a control plane (made by `scripts/kube/gen-certs`).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::repo_root;

/// Paths of the throwaway PKI made by `scripts/kube/gen-certs`.
#[derive(Clone, Debug)]
pub struct Pki {
    pub dir: PathBuf,
}

impl Pki {
    /// Makes the PKI in `dir` (created if missing; a complete one is kept).
    pub fn generate(dir: &Path) -> Pki {
        let st = Command::new("bash")
            .arg(repo_root().join("scripts/kube/gen-certs"))
            .arg(dir)
            .status()
            .expect("run gen-certs");
        assert!(st.success(), "scripts/kube/gen-certs failed");
        Pki {
            dir: dir.to_path_buf(),
        }
    }

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
