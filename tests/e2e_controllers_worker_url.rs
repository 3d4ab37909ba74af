//! End-to-end, aco-reporter as installed: a misconfigured Worker URL refuses to start, naming the
//! variable.
//!
//! The cluster of these tests (`aco_testkit::kube::controllers::Cluster`) is a real one's:
//! kube-apiserver with `--authorization-mode=Node,RBAC` and the ServiceAccount admission plugin,
//! **kube-controller-manager**, kube-scheduler through the Worker, kwok's fake kubelets, and the
//! reporter **installed** from `k8s/` as a user does it, running with the token of its
//! ServiceAccount: a missing verb in the shipped RBAC breaks a watch or the Lease and fails the
//! test. Run with `scripts/e2e`.

#![allow(clippy::await_holding_lock)]

use aco_testkit::kube::serial;

// ---------------------------------------------------------------------------------------------
// 5. a misconfigured Worker URL

#[tokio::test]
async fn a_worker_url_ending_in_v1_is_refused_at_start() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(aco_testkit::kube::reporter::reporter_bin(false))
        .env("ACO_WORKER_URL", "https://aco.example.workers.dev/v1")
        .env("ACO_ADMIN_TOKEN", "t")
        .env("KUBECONFIG", dir.path().join("none"))
        .args(["--log-format", "text"])
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("ACO_WORKER_URL") && text.contains("/v1"),
        "{text}"
    );
}
