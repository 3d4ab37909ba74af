//! What the closed loop buys: the same workload through the real kube-scheduler and the Worker,
//! with `aco-reporter` running and with it stopped, side by side in one run. A benchmark target
//! (`harness = false`), run by `scripts/bench-closed-loop`; not a test.
//!
//! Cluster (kwok + metrics-server): BENCH_NODES (24) OpenB CPU nodes priced 0.4–4.0 $/h; the
//! cheapest third is made hot by pods bound directly with high real usage (kwok usage
//! annotations, 90% of the node's CPU) but tiny requests, so that nothing in a Node object says
//! so. Workload: BENCH_PODS (120) pods, a quarter latency-critical, created in waves of 20.
//! Configurations, each on a fresh cluster:
//! - node objects (`nodeCacheCapable: false`), no reporter: the Worker sees labels and
//!   allocatable only — no usage, no requested, no learning;
//! - node objects with the reporter;
//! - node names (`nodeCacheCapable: true`) with the reporter (the recommended setup).
//!
//! Reports, per configuration: mean $/h of the nodes the pods landed on, distinct nodes used and
//! their total $/h, latency-critical pods on hot nodes, deposits. Writes
//! `target/bench-closed-loop.md`.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use aco_testkit::api::WorkerHttp;
use aco_testkit::kube::fixtures::*;

use aco_testkit::nodes::name_of;
use aco_testkit::openb::openb_cpu_nodes;

use aco_testkit::kube::kwok::{quantity, USAGE_CPU};
use aco_testkit::kube::reporter::Reporter;
use serde_json::Value;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

struct Outcome {
    name: &'static str,
    mean_cost: f64,
    nodes_used: usize,
    cost_of_used: f64,
    lc_total: usize,
    lc_on_hot: usize,
    deposits: u64,
}

async fn run(
    name: &'static str,
    names_mode: bool,
    with_reporter: bool,
    n_nodes: usize,
    n_pods: usize,
) -> Outcome {
    let env = Env::start().await;
    let _kwok = env.cp.start_kwok().await;
    let _ms = env.cp.start_metrics_server().await;
    let kube = env.kube();
    let hot_count = n_nodes / 3;
    let nodes: Vec<Value> = openb_cpu_nodes()
        .into_iter()
        .take(n_nodes)
        .enumerate()
        .map(|(i, n)| {
            kwok_node(label_node(
                n,
                0.4 + 3.6 * i as f64 / (n_nodes - 1) as f64,
                300,
                false,
            ))
        })
        .collect();
    let cost: BTreeMap<String, f64> = nodes
        .iter()
        .map(|n| (name_of(n), label(n, "aco/cost-per-hour").parse().unwrap()))
        .collect();
    let hot: BTreeSet<String> = nodes.iter().take(hot_count).map(name_of).collect();
    create_kwok_nodes(kube, &nodes).await;
    kube.create_namespace("hogs").await;
    kube.create_namespace("work").await;
    for n in nodes.iter().take(hot_count) {
        let node = name_of(n);
        let milli = quantity(n["status"]["allocatable"]["cpu"].as_str().unwrap()).unwrap() * 1000.0;
        for j in 0..3 {
            let mut p = pod(
                "hogs",
                &format!("hog-{node}-{j}"),
                PodOpts {
                    cpu: "10m",
                    memory: "16Mi",
                    ..Default::default()
                },
            );
            p["spec"]["schedulerName"] = "default-scheduler".into();
            p["spec"]["nodeName"] = node.clone().into();
            p["metadata"]["annotations"][USAGE_CPU] = format!("{}m", (milli * 0.3) as u64).into();
            kube.create_pod(&p).await;
        }
    }
    // metrics-server needs two scrapes to report a rate.
    aco_testkit::kube::wait_for(
        "NodeMetrics of the hot nodes",
        Duration::from_secs(120),
        || async {
            let first = hot.iter().next()?;
            let m = kube
                .get(&format!("/apis/metrics.k8s.io/v1beta1/nodes/{first}"))
                .await
                .ok()?;
            let cpu = quantity(m["usage"]["cpu"].as_str()?)?;
            (cpu > 1.0).then_some(())
        },
    )
    .await;

    let url = env.api.base.clone();
    let mut reporter = with_reporter
        .then(|| Reporter::start(&env.cp, &url, "reporter", &["--push-interval", "5s"], true));
    if let Some(r) = reporter.as_mut() {
        r.wait_nodes_reported(nodes.len(), Duration::from_secs(120))
            .await;
        // Until the hot nodes' utilisation reached the Worker.
        aco_testkit::kube::wait_for(
            "utilisation of the hot nodes at the Worker",
            Duration::from_secs(120),
            || async {
                let first = hot.iter().next()?;
                let f = env.api.try_node_facts(first).await?;
                f.load.is_some().then_some(())
            },
        )
        .await;
    }
    let _sched = env
        .cp
        .start_scheduler("scheduler", &env.worker_config(names_mode))
        .await;

    let mut placed: Vec<(bool, String)> = Vec::new();
    for wave in 0..n_pods.div_ceil(20) {
        let batch: Vec<(bool, Value)> = (0..20.min(n_pods - wave * 20))
            .map(|i| {
                let k = wave * 20 + i;
                let lc = k % 4 == 0;
                let mut labels = vec![("scheduling.aco/tenant-id", "bench".to_string())];
                if lc {
                    labels.push(("aco/workload-type", "latency-critical".into()));
                }
                (
                    lc,
                    pod(
                        "work",
                        &format!("w-{k:04}"),
                        PodOpts {
                            cpu: "500m",
                            memory: "512Mi",
                            labels,
                            ..Default::default()
                        },
                    ),
                )
            })
            .collect();
        let pods: Vec<Value> = batch.iter().map(|(_, p)| p.clone()).collect();
        let names = create_pods(kube, &pods).await;
        let nodes_of = kube
            .wait_all_bound("work", &names, Duration::from_secs(180))
            .await;
        placed.extend(batch.iter().map(|(lc, _)| *lc).zip(nodes_of));
    }
    let deposits = if with_reporter {
        // Let the last reports land.
        let want = placed.len() as u64;
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            let d = env.api.deposits("bench").await;
            if d >= want || std::time::Instant::now() > deadline {
                break d;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    } else {
        env.api.deposits("bench").await
    };
    let used: BTreeSet<&String> = placed.iter().map(|(_, n)| n).collect();
    Outcome {
        name,
        mean_cost: placed.iter().map(|(_, n)| cost[n]).sum::<f64>() / placed.len() as f64,
        nodes_used: used.len(),
        cost_of_used: used.iter().map(|n| cost[*n]).sum(),
        lc_total: placed.iter().filter(|(lc, _)| *lc).count(),
        lc_on_hot: placed
            .iter()
            .filter(|(lc, n)| *lc && hot.contains(n))
            .count(),
        deposits,
    }
}

#[tokio::main]
async fn main() {
    let n_nodes = env_usize("BENCH_NODES", 24);
    let n_pods = env_usize("BENCH_PODS", 120);
    let mut rows = Vec::new();
    for (name, names_mode, reporter) in [
        ("node objects, reporter stopped", false, false),
        ("node objects, reporter running", false, true),
        ("node names, reporter running", true, true),
    ] {
        let o = run(name, names_mode, reporter, n_nodes, n_pods).await;
        eprintln!(
            "{}: mean {:.3} $/h, {} nodes ({:.2} $/h), LC on hot {}/{}",
            o.name, o.mean_cost, o.nodes_used, o.cost_of_used, o.lc_on_hot, o.lc_total
        );
        rows.push(o);
    }
    let mut md = format!(
        "{n_nodes} kwok nodes at 0.4–4.0 $/h, the cheapest {} hot (90% CPU used, tiny requests); {n_pods} pods, a quarter latency-critical.\n\n| configuration | mean $/h of the pods' nodes | nodes used | their $/h | latency-critical pods on hot nodes | deposits |\n|---|---:|---:|---:|---:|---:|\n",
        n_nodes / 3
    );
    for o in &rows {
        md.push_str(&format!(
            "| {} | {:.3} | {} | {:.2} | {} / {} | {} |\n",
            o.name, o.mean_cost, o.nodes_used, o.cost_of_used, o.lc_on_hot, o.lc_total, o.deposits
        ));
    }
    println!("{md}");
    let _ = std::fs::write(
        aco_testkit::repo_root().join("target/bench-closed-loop.md"),
        &md,
    );
}
