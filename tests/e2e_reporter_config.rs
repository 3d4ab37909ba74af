//! End-to-end: the reporter runs only while it reads the shared vars (label and annotation keys,
//! tenant source, GPU resources, decision TTL) as the Worker does — it asks the Worker's view
//! (`GET /v1/config/reporter`) before it sends anything. A real kube-apiserver, the Worker on
//! Miniflare with its own `[vars]`, the `aco-reporter` binary with its own environment.

use std::time::{Duration, Instant};

use aco_core::api::reporter_view::ReporterView;
use aco_testkit::api::WorkerHttp;
use aco_testkit::kube::fixtures::*;
use reqwest::Method;

const DEADLINE: Duration = Duration::from_secs(90);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reporter_that_reads_the_shared_vars_otherwise_refuses_to_run_naming_them() {
    // The Worker takes tenants from namespaces only; the reporter (no such env) from labels first.
    let mut env = Env::start_with_reporter_and_vars(&[], &[("TENANT_SOURCE", "namespace")]).await;
    let reporter = &mut env.reporter.as_mut().unwrap().server;
    let deadline = Instant::now() + DEADLINE;
    while !reporter.exited() {
        assert!(
            Instant::now() < deadline,
            "the reporter still runs against a Worker that reads TENANT_SOURCE otherwise:\n{}",
            reporter.log_tail(30)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let log = reporter.log_text();
    assert!(
        log.contains("TENANT_SOURCE: here \"label-then-namespace\", Worker \"namespace\""),
        "the refusal names the var and both values:\n{}",
        reporter.log_tail(30)
    );
    assert!(!log.contains("ALPHA"), "only the shared vars are compared");
    let view: ReporterView = env
        .api
        .admin_as(Method::GET, "/v1/config/reporter", None)
        .await;
    assert_eq!(
        view.vars.get("TENANT_SOURCE").map(String::as_str),
        Some("namespace"),
        "the Worker's own reading: {view:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_tuned_apart_from_the_shared_vars_is_served() {
    // ALPHA is the Worker's own: the reporter need not carry it.
    let mut env = Env::start_with_reporter_and_vars(&[], &[("ALPHA", "1")]).await;
    env.add_nodes(&[cpu_node("ext-0", "8", "32Gi")]).await;
    let reporter = env.reporter.as_mut().unwrap();
    reporter.wait_nodes_reported(1, DEADLINE).await;
    reporter.server.assert_running();
    assert!(
        reporter
            .server
            .log_text()
            .contains("the Worker reads the shared vars as this reporter does"),
        "{}",
        reporter.server.log_tail(30)
    );
}
