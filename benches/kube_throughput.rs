//! Scheduling throughput of a real kube-scheduler with and without the Worker as extender.
//! A benchmark target (`harness = false`), run by `scripts/bench-kube`.
//!
//! For each configuration: 1,000 identical pods (BENCH_PODS) are created while no scheduler runs,
//! then kube-scheduler starts with that configuration and the clock runs from the first binding to
//! the last (polling the API for unbound pods every 50 ms). Nodes: the first 500 (BENCH_NODES)
//! OpenB GPU nodes with cost/latency labels, facts pushed to the Worker. Configurations:
//! kube-scheduler alone; with the Worker (node objects / node names); the floor under names mode
//! (the Worker's `echo` route as both verbs: the same round trips, no verb work); and with the Worker behind
//! aco-netem-proxy adding 5, 20 and 50 ms round trip (BENCH_RTTS_MS) to model the edge distance.
//! BENCH_VARS (a JSON object) sets the Worker's [vars]. Prints a Markdown table and writes it to
//! `target/bench-kube.md`.

use std::time::{Duration, Instant};

use aco_testkit::kube::fixtures::*;
use aco_testkit::openb::openb_gpu_nodes;

use aco_testkit::kube::{host_port, Extender, Kube, SchedulerConfig};
use serde_json::Value;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Waits until every pod of `ns` is bound; returns (seconds from first to last binding, pods).
async fn time_scheduling(kube: &Kube, ns: &str, pods: usize, timeout: Duration) -> (f64, usize) {
    let unbound = format!("/api/v1/namespaces/{ns}/pods?fieldSelector=spec.nodeName%3D&limit=1");
    let bound = format!("/api/v1/namespaces/{ns}/pods?fieldSelector=spec.nodeName%21%3D&limit=1");
    let items = |v: Value| v["items"].as_array().map(|a| a.len()).unwrap_or(0);
    let deadline = Instant::now() + timeout;
    // First binding.
    loop {
        if items(kube.get(&bound).await.unwrap()) > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "no pod bound within {timeout:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let t0 = Instant::now();
    loop {
        if items(kube.get(&unbound).await.unwrap()) == 0 {
            break;
        }
        if Instant::now() > deadline {
            let left = kube
                .pods(ns)
                .await
                .iter()
                .filter(|p| p["spec"]["nodeName"].is_null())
                .count();
            eprintln!("timeout: {left} of {pods} pods unbound");
            return (t0.elapsed().as_secs_f64(), pods - left);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (t0.elapsed().as_secs_f64(), pods)
}

#[tokio::main]
async fn main() {
    let n_pods = env_usize("BENCH_PODS", 1000);
    let n_nodes = env_usize("BENCH_NODES", 500);
    let rtts: Vec<u64> = std::env::var("BENCH_RTTS_MS")
        .unwrap_or_else(|_| "5,20,50".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();

    // BENCH_VARS: Worker [vars] as a JSON object of strings, e.g. '{"ASSUMED_TTL_MS":"0"}'.
    let vars: Vec<(String, String)> = std::env::var("BENCH_VARS")
        .ok()
        .map(|v| {
            let map: serde_json::Map<String, Value> =
                serde_json::from_str(&v).expect("BENCH_VARS is a JSON object");
            map.into_iter()
                .map(|(k, v)| (k, v.as_str().map_or_else(|| v.to_string(), String::from)))
                .collect()
        })
        .unwrap_or_default();
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let env = Env::start_with(Default::default(), &vars).await;
    let kube = env.kube();
    let nodes: Vec<Value> = openb_gpu_nodes()
        .into_iter()
        .take(n_nodes)
        .enumerate()
        .map(|(i, n)| {
            // Deterministic spread of prices and latencies; a third spot.
            let cost = 0.5 + (i * 37 % 50) as f64 / 10.0;
            let latency = 50 + (i * 53 % 400) as u32;
            label_node(n, cost, latency, i % 3 == 0)
        })
        .collect();
    let t = Instant::now();
    env.add_nodes(&nodes).await;
    eprintln!(
        "{} nodes created and pushed in {:.1}s",
        nodes.len(),
        t.elapsed().as_secs_f64()
    );

    let proxy = env
        .cp
        .start_proxy("proxy", &host_port(&env.api.base), Duration::ZERO);
    let via_proxy = |node_cache_capable: bool| {
        let mut c = env.worker_config(node_cache_capable);
        if let Extender::Worker { url_prefix, .. } = &mut c.extender {
            // The same path (with its token), through the proxy.
            *url_prefix = url_prefix.replace(&env.api.base, &format!("https://{}", proxy.addr));
        }
        c
    };
    let mut runs: Vec<(String, SchedulerConfig, Option<u64>)> = vec![
        ("kube-scheduler alone".into(), SchedulerConfig::off(), None),
        (
            "extender, node objects (nodeCacheCapable: false)".into(),
            env.worker_config(false),
            None,
        ),
        (
            "extender, node names (nodeCacheCapable: true)".into(),
            env.worker_config(true),
            None,
        ),
        // The floor under names mode: the same round trips through workerd, no verb work.
        (
            "extender floor: echo as both verbs, node names".into(),
            SchedulerConfig {
                verbs: Some(("echo".into(), "echo".into())),
                ..env.worker_config(true)
            },
            None,
        ),
    ];
    for rtt in &rtts {
        runs.push((
            format!("extender, node objects, +{rtt} ms RTT"),
            via_proxy(false),
            Some(*rtt),
        ));
        runs.push((
            format!("extender, node names, +{rtt} ms RTT"),
            via_proxy(true),
            Some(*rtt),
        ));
    }
    if let Ok(only) = std::env::var("BENCH_ONLY") {
        // Comma-separated: a run is kept if its name contains any of them ("alone,names").
        runs.retain(|(name, _, _)| only.split(',').any(|o| name.contains(o)));
    }

    // BENCH_QPS: kube-scheduler's API client rate (default 50 = the shipped config, which caps
    // bindings near 50 pods/s); e.g. BENCH_QPS=1000 measures the scheduling path itself.
    let qps = std::env::var("BENCH_QPS")
        .ok()
        .and_then(|v| v.parse::<u32>().ok());
    let mut rows = Vec::new();
    for (i, (name, mut config, rtt)) in runs.into_iter().enumerate() {
        config.client_qps = qps;
        let ns = format!("bench-{i}");
        kube.create_namespace(&ns).await;
        if let Some(ms) = rtt {
            proxy.set_delay(Duration::from_millis(ms)).await;
        }
        let pods: Vec<Value> = (0..n_pods)
            .map(|j| {
                pod(
                    &ns,
                    &format!("p-{j}"),
                    PodOpts {
                        cpu: "100m",
                        memory: "128Mi",
                        labels: vec![
                            ("aco/workload-type", "batch".into()),
                            ("scheduling.aco/tenant-id", "bench".into()),
                        ],
                        ..Default::default()
                    },
                )
            })
            .collect();
        create_pods(kube, &pods).await;
        let sched = env
            .cp
            .start_scheduler(&format!("scheduler-{i}"), &config)
            .await;
        // Generous: 50 ms RTT x 2 calls per pod is ~10 pods/s at best.
        let timeout = Duration::from_secs(60 + n_pods as u64 * (rtt.unwrap_or(10) * 4 + 40) / 1000);
        let (secs, done) = time_scheduling(kube, &ns, n_pods, timeout).await;
        let rate = if secs > 0.0 {
            (done.saturating_sub(1)) as f64 / secs
        } else {
            f64::NAN
        };
        eprintln!("{name}: {done}/{n_pods} pods in {secs:.2}s = {rate:.1} pods/s");
        rows.push((name, done, secs, rate));
        drop(sched);
        // Free the nodes for the next run (grace period 0: there is no kubelet).
        kube.delete_pods(&ns).await;
    }

    let mut table = format!(
        "Scheduling throughput, {n_pods} pods on {} nodes (kube-scheduler {}, client QPS {}; Worker on Miniflare over HTTPS; {} cores)\n\n\
         | configuration | pods bound | seconds | pods/s |\n|---|---:|---:|---:|\n",
        nodes.len(),
        kube_version(),
        qps.map(|q| q.to_string()).unwrap_or_else(|| "50 (default)".into()),
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
    );
    for (name, done, secs, rate) in &rows {
        table.push_str(&format!("| {name} | {done} | {secs:.1} | {rate:.1} |\n"));
    }
    println!("\n{table}");
    let out = aco_testkit::repo_root().join("target/bench-kube.md");
    std::fs::write(&out, &table).unwrap();
    eprintln!("written to {}", out.display());
}

fn kube_version() -> String {
    let out = std::process::Command::new(aco_testkit::kube::kube_bin().join("kube-scheduler"))
        .arg("--version")
        .output();
    out.ok()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .trim()
                .replace("Kubernetes ", "")
        })
        .unwrap_or_else(|| "?".into())
}
