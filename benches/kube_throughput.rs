//! Scheduling throughput of a real kube-scheduler with and without the Worker as extender.
//! A benchmark target (`harness = false`), run by `scripts/bench-kube`.
//!
//! For each configuration: 1,000 identical pods (BENCH_PODS) are created while no scheduler runs,
//! then kube-scheduler starts with that configuration and the clock runs from the first binding to
//! the last (polling the API for unbound pods every 50 ms). Nodes: the first 500 (BENCH_NODES)
//! OpenB GPU nodes with cost/latency labels, facts pushed to the Worker. Configurations:
//! kube-scheduler alone; with the Worker asked two verbs (`k8s/scheduler-config-filter.yaml`:
//! filter, then prioritize) and one (`k8s/scheduler-config.yaml`, the default: prioritize
//! only), each with node objects and node names; the floors under names mode (the Worker's
//! `echo` route as every verb: the same round trips, no verb work); and each install with the
//! Worker behind aco-netem-proxy adding 5, 20 and 50 ms round trip (BENCH_RTTS_MS) to model the
//! edge distance. The pods carry no constraint, so the one-verb runs need no admission webhook
//! (a pod with one would add a NodeAffinity check in kube-scheduler, not a round trip).
//! BENCH_VARS (a JSON object) sets the Worker's [vars]. Prints a Markdown table, and the ratio of
//! one verb to two in the same run, and writes both to `target/bench-kube.md`.

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
    // The two installs: (label, the Worker's scheduler config of that install).
    let installs: [(&str, &dyn Fn(bool) -> SchedulerConfig); 2] = [
        ("two verbs", &|names| env.worker_config_filter(names)),
        ("one verb", &|names| env.worker_config(names)),
    ];
    let via_proxy = |mut c: SchedulerConfig| {
        if let Extender::Worker { url_prefix, .. } = &mut c.extender {
            // The same path (with its token), through the proxy.
            *url_prefix = url_prefix.replace(&env.api.base, &format!("https://{}", proxy.addr));
        }
        c
    };
    let mut runs: Vec<(String, SchedulerConfig, Option<u64>)> =
        vec![("kube-scheduler alone".into(), SchedulerConfig::off(), None)];
    for (verbs, config) in installs {
        runs.push((
            format!("{verbs}, node objects (nodeCacheCapable: false)"),
            config(false),
            None,
        ));
        runs.push((
            format!("{verbs}, node names (nodeCacheCapable: true)"),
            config(true),
            None,
        ));
        // The floor under names mode: the same round trips through workerd, no verb work.
        runs.push((
            format!("{verbs}, floor: echo as every verb, node names"),
            SchedulerConfig {
                verbs: Some("echo".into()),
                ..config(true)
            },
            None,
        ));
    }
    for rtt in &rtts {
        for (verbs, config) in installs {
            runs.push((
                format!("{verbs}, node objects, +{rtt} ms RTT"),
                via_proxy(config(false)),
                Some(*rtt),
            ));
            runs.push((
                format!("{verbs}, node names, +{rtt} ms RTT"),
                via_proxy(config(true)),
                Some(*rtt),
            ));
        }
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
    table.push_str(&ratios(&rows));
    println!("\n{table}");
    let out = aco_testkit::repo_root().join("target/bench-kube.md");
    std::fs::write(&out, &table).unwrap();
    eprintln!("written to {}", out.display());
}

/// One verb against two in this run: for every configuration measured both ways (the same
/// node mode and added round trip), the ratio of their pods/s, and each against
/// kube-scheduler alone.
fn ratios(rows: &[(String, usize, f64, f64)]) -> String {
    let rate = |name: &str| rows.iter().find(|r| r.0 == name).map(|r| r.3);
    let alone = rate("kube-scheduler alone");
    let mut out = String::from(
        "\n| configuration | two verbs pods/s | one verb pods/s | one verb / two verbs | one verb / alone |\n|---|---:|---:|---:|---:|\n",
    );
    let mut any = false;
    for (name, ..) in rows {
        let Some(rest) = name.strip_prefix("two verbs, ") else {
            continue;
        };
        let (Some(two), Some(one)) = (rate(name), rate(&format!("one verb, {rest}"))) else {
            continue;
        };
        any = true;
        let vs_alone = alone.map_or("–".into(), |a| format!("{:.0}%", 100.0 * one / a));
        out.push_str(&format!(
            "| {rest} | {two:.1} | {one:.1} | {:.2}× | {vs_alone} |\n",
            one / two
        ));
    }
    if any {
        out
    } else {
        String::new()
    }
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
