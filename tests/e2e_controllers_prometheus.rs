//! End-to-end, aco-reporter under real controllers with Prometheus as the load source: a real
//! Prometheus scraping an exporter that serves dcgm-exporter's and OpenCost's series; the Worker
//! gets the GPU load and the price.
//!
//! The cluster of these tests (`aco_testkit::kube::controllers::Cluster`) is a real one's:
//! kube-apiserver with `--authorization-mode=Node,RBAC` and the ServiceAccount admission plugin,
//! **kube-controller-manager**, kube-scheduler through the Worker, kwok's fake kubelets, and the
//! reporter **installed** from `k8s/` as a user does it, running with the token of its
//! ServiceAccount: a missing verb in the shipped RBAC breaks a watch or the Lease and fails the
//! test. Run with `scripts/e2e`.

#![allow(clippy::await_holding_lock)]

use std::time::Duration;

use aco_testkit::api::WorkerHttp;
use aco_testkit::kube::fixtures::*;

use aco_testkit::nodes::name_of;
use aco_testkit::openb::pick_gpu_nodes;

use aco_testkit::kube::controllers::*;
use aco_testkit::kube::kwok::JobStages;
use aco_testkit::kube::serial;
use aco_testkit::kube::wait_for;
use serde_json::Value;

// ---------------------------------------------------------------------------------------------
// 6. Prometheus (DCGM GPU series) as the load source, OpenCost prices

/// Serves `text` at `/metrics` (any path) until dropped: an exporter with dcgm-exporter's and
/// OpenCost's series names and labels.
async fn exporter(text: String) -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                break;
            };
            let text = text.clone();
            tokio::spawn(async move {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let mut buf = [0u8; 4096];
                let _ = sock.read(&mut buf).await;
                let reply = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                    text.len()
                );
                let _ = sock.write_all(reply.as_bytes()).await;
            });
        }
    });
    (format!("http://{addr}"), task)
}

#[tokio::test]
async fn prometheus_dcgm_series_are_the_gpu_load_and_opencost_the_price() {
    let _serial = serial();
    let nodes: Vec<Value> = pick_gpu_nodes(&["T4", "T4"])
        .into_iter()
        .map(|n| kwok_node(label_node(n, 1.0, 300, false)))
        .collect();
    let (busy, idle) = (name_of(&nodes[0]), name_of(&nodes[1]));
    let c = Cluster::start(&nodes, JobStages::default(), false, &[]).await;
    let series = format!(
        "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n\
DCGM_FI_DEV_GPU_UTIL{{gpu=\"0\",UUID=\"GPU-a\",device=\"nvidia0\",modelName=\"Tesla T4\",Hostname=\"{busy}\"}} 90\n\
DCGM_FI_DEV_GPU_UTIL{{gpu=\"1\",UUID=\"GPU-b\",device=\"nvidia1\",modelName=\"Tesla T4\",Hostname=\"{busy}\"}} 70\n\
DCGM_FI_DEV_GPU_UTIL{{gpu=\"0\",UUID=\"GPU-c\",device=\"nvidia0\",modelName=\"Tesla T4\",Hostname=\"{idle}\"}} 10\n\
# TYPE DCGM_FI_DEV_FB_USED gauge\n\
DCGM_FI_DEV_FB_USED{{gpu=\"0\",UUID=\"GPU-a\",modelName=\"Tesla T4\",Hostname=\"{busy}\"}} 1000\n\
DCGM_FI_DEV_FB_USED{{gpu=\"0\",UUID=\"GPU-c\",modelName=\"Tesla T4\",Hostname=\"{idle}\"}} 500\n\
# TYPE DCGM_FI_DEV_FB_FREE gauge\n\
DCGM_FI_DEV_FB_FREE{{gpu=\"0\",UUID=\"GPU-a\",modelName=\"Tesla T4\",Hostname=\"{busy}\"}} 15000\n\
DCGM_FI_DEV_FB_FREE{{gpu=\"0\",UUID=\"GPU-c\",modelName=\"Tesla T4\",Hostname=\"{idle}\"}} 15500\n\
# TYPE node_total_hourly_cost gauge\n\
node_total_hourly_cost{{node=\"{busy}\",instance_type=\"g4dn.12xlarge\",region=\"eu-west-1\"}} 2.5\n\
node_total_hourly_cost{{node=\"{idle}\",instance_type=\"g4dn.xlarge\",region=\"eu-west-1\"}} 0.75\n"
    );
    let (url, _server) = exporter(series).await;
    let prometheus =
        aco_testkit::prometheus::Prometheus::start(&[aco_testkit::prometheus::ScrapeJob::new(
            "dcgm", &url,
        )]);
    wait_for(
        "Prometheus to scrape the exporter",
        Duration::from_secs(60),
        || async {
            let r = prometheus.query("DCGM_FI_DEV_GPU_UTIL").await.ok()?;
            (r.len() == 3).then_some(())
        },
    )
    .await;
    // No node-exporter here: CPU and memory queries off, GPU utilisation and memory on.
    let mut r = c
        .reporter(
            "aco-reporter-0",
            None,
            &[
                "--metrics-source",
                "prometheus",
                "--prometheus-url",
                &prometheus.base_url,
                "--prometheus-window",
                "1m",
                "--promql-cpu",
                "",
                "--promql-memory",
                "",
                "--prices-from-opencost",
            ],
        )
        .await;
    r.wait_nodes_reported(nodes.len(), Duration::from_secs(90))
        .await;
    let facts = |name: String| {
        let api = &c.env.api;
        async move {
            let f = api.try_node_facts(&name).await?;
            let level = f.load?.value.level?;
            let price = f.labels.get("aco/cost-per-hour")?.clone();
            Some((level, price))
        }
    };
    let (busy_load, busy_price) =
        wait_for("the busy node's GPU load and price", TENANT_WAIT, || {
            facts(busy.clone())
        })
        .await;
    let (idle_load, idle_price) =
        wait_for("the idle node's GPU load and price", TENANT_WAIT, || {
            facts(idle.clone())
        })
        .await;
    eprintln!(
        "{busy}: load {busy_load} price {busy_price}; {idle}: load {idle_load} price {idle_price}"
    );
    // Busy: mean of 90 % and 70 % = 0.8 (memory 1000/16000 is less); idle: 0.1.
    assert!((busy_load - 0.8).abs() < 1e-9, "{busy_load}");
    assert!((idle_load - 0.1).abs() < 1e-9, "{idle_load}");
    assert_eq!(
        (busy_price.as_str(), idle_price.as_str()),
        ("2.5", "0.75"),
        "OpenCost's, not the 1.0 label"
    );
    assert_eq!(
        r.metric("aco_reporter_source_healthy{kind=\"node_metrics\"}")
            .await,
        1.0
    );
    r.server.assert_running();
}
