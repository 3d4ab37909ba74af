//! One configuration of the real-kube trace replay (`benches/trace_replay.rs`,
//! `scripts/bench-trace`): a fresh control plane, kwok nodes, optionally the Worker and the
//! `aco-reporter` binary feeding it, every pod created, then kube-scheduler (any build: the
//! stock one or one with plugins compiled in) scheduling them until each is bound or has been
//! found unschedulable. Pods may give their own `spec.priority` (the Priority admission plugin
//! is off): kube-scheduler takes the highest first, the order the caller wants them in. The run is watched, not polled: a
//! watch on the pods records each binding in the order the API server committed it, and each
//! pod kube-scheduler marked Unschedulable (and whether a retry bound it later).
//!
//! What the objects are (nodes, pods, their order) is the caller's: the simulator builds them
//! (`aco_sim::saturate::kube_objects`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::fixtures::{create_kwok_nodes, kwok_node, Env};
use super::reporter::Reporter;
use super::{ControlPlane, ControlPlaneOptions, Extender, Kube, SchedulerConfig};
use crate::api::WorkerHttp;
use crate::nodes::name_of;

/// The namespace every replayed pod is created in.
pub const NAMESPACE: &str = "trace";

/// The Worker and reporter of a configuration with the extender.
#[derive(Clone, Debug, Default)]
pub struct WithWorker {
    /// Worker `[vars]` on top of `wrangler.toml`'s.
    pub vars: Vec<(String, String)>,
    /// Reporter flags on top of the test defaults (later flags replace earlier ones).
    pub reporter_flags: Vec<String>,
    /// The reporter release-built (benchmarks) rather than debug-built (tests).
    pub release_reporter: bool,
    /// metrics-server runs (scraping kwok, which reports each pod's `kwok.x-k8s.io/usage-*`
    /// annotations) and the reporter reads node load from it, as the shipped install does.
    /// Off: the reporter runs `--no-node-metrics` and the Worker has no load facts.
    pub node_metrics: bool,
}

/// How one configuration runs.
pub struct ReplayConfig {
    /// Shown in logs.
    pub name: String,
    /// The kube-scheduler binary.
    pub scheduler: PathBuf,
    /// Its configuration; with [`ReplayConfig::worker`] the extender stanza is pointed at the
    /// Worker (urlPrefix and CA; its nodeCacheCapable is kept).
    pub config: SchedulerConfig,
    pub worker: Option<WithWorker>,
    /// kwok's node lease duration (s): nothing watches the leases here (no node lifecycle
    /// controller), so a long one spares the API server ~N/10 writes per second.
    pub kwok_lease_s: u32,
    /// kwok runs bound pods (Running and Ready, as kubelets would); off, they stay Pending on
    /// their node, one API write and watch event per pod fewer (`start_kwok_nodes_only`).
    pub kwok_pod_stages: bool,
    /// Gives up waiting for the pods after this long.
    pub timeout: Duration,
}

/// Where a pod went.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodFate {
    /// The node it was bound to.
    pub node: Option<String>,
    /// Its rank among the bindings, in the order the API server committed them.
    pub bound_rank: Option<usize>,
    /// Seconds from the first binding of the run to its own.
    pub bound_at_s: Option<f64>,
    /// kube-scheduler marked it Unschedulable at least once (before it was bound, if it was).
    pub unschedulable: bool,
    /// Its annotations when bound (the device allocation the device plugin wrote).
    pub annotations: BTreeMap<String, String>,
}

/// What a configuration did.
#[derive(Debug, Default)]
pub struct ReplayOutcome {
    /// Per pod, in the order given.
    pub fates: Vec<PodFate>,
    /// Seconds from the first binding to the last one.
    pub scheduling_s: f64,
    /// All pods settled (bound or found unschedulable) before the timeout.
    pub settled: bool,
    /// Phase timings in seconds: control plane, nodes, facts (with the extender), pods (their
    /// creation), scheduler start, scheduling (until the last pod settled).
    pub phases: Vec<(String, f64)>,
    /// The Worker's and the reporter's Prometheus text at the end (with the extender).
    pub worker_metrics: Option<String>,
    pub reporter_metrics: Option<String>,
    /// Filter calls kube-scheduler skipped because the extender failed (its log).
    pub extender_errors: usize,
    /// Pods (indices into the order given) in the order kube-scheduler first tried them (its log).
    pub attempt_order: Vec<usize>,
}

impl ReplayOutcome {
    pub fn bound(&self) -> usize {
        self.fates.iter().filter(|f| f.node.is_some()).count()
    }
    /// Pods per second from the first binding to the last.
    pub fn pods_per_s(&self) -> f64 {
        let n = self.bound();
        if self.scheduling_s > 0.0 && n > 1 {
            (n - 1) as f64 / self.scheduling_s
        } else {
            f64::NAN
        }
    }
    /// Pods bound by a retry after kube-scheduler had found them unschedulable.
    pub fn bound_after_unschedulable(&self) -> usize {
        self.fates
            .iter()
            .filter(|f| f.unschedulable && f.node.is_some())
            .count()
    }
    /// Pairs of pods bound in the opposite order to the one given (pod i before pod j < i), as a
    /// share of all pairs of bound pods. Bindings complete asynchronously (a GPU pod's after a
    /// PreBind write), so this is above 0 even when kube-scheduler took the pods in order.
    pub fn bind_inversions(&self) -> f64 {
        let ranks: Vec<usize> = self.fates.iter().filter_map(|f| f.bound_rank).collect();
        inversion_share(&ranks)
    }

    /// Pairs of pods kube-scheduler first tried in the opposite order to the one given, as a
    /// share of all pairs: 0 when it took them strictly in order (a shuffle gives 0.5).
    pub fn attempt_inversions(&self) -> f64 {
        inversion_share(&self.attempt_order)
    }

    /// Pods kube-scheduler tried before one given ahead of them was tried at all.
    pub fn attempted_out_of_order(&self) -> usize {
        let mut highest = None;
        self.attempt_order
            .iter()
            .filter(|&&i| {
                let late = highest.is_some_and(|h| i < h);
                highest = highest.max(Some(i));
                late
            })
            .count()
    }
}

fn inversion_share(v: &[usize]) -> f64 {
    let n = v.len() as f64;
    if v.len() < 2 {
        return 0.0;
    }
    inversions(v) as f64 / (n * (n - 1.0) / 2.0)
}

/// The pods of `names` in the order of their first "Attempting to schedule pod" line in a
/// kube-scheduler log at -v=3 (`pod="<namespace>/<name>"`).
fn first_attempts(log: &str, names: &[String]) -> Vec<usize> {
    let index: std::collections::HashMap<&str, usize> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let prefix = format!("pod=\"{NAMESPACE}/");
    let mut seen = vec![false; names.len()];
    let mut order = Vec::new();
    for line in log
        .lines()
        .filter(|l| l.contains("\"Attempting to schedule pod\""))
    {
        let Some(name) = line
            .split_once(&prefix)
            .and_then(|(_, rest)| rest.split('"').next())
        else {
            continue;
        };
        if let Some(&i) = index.get(name) {
            if !std::mem::replace(&mut seen[i], true) {
                order.push(i);
            }
        }
    }
    order
}

/// Inversions of a sequence (merge sort count).
fn inversions(v: &[usize]) -> u64 {
    fn sort(v: &mut [usize], tmp: &mut Vec<usize>) -> u64 {
        if v.len() < 2 {
            return 0;
        }
        let mid = v.len() / 2;
        let mut n = sort(&mut v[..mid], tmp) + sort(&mut v[mid..], tmp);
        tmp.clear();
        let (mut i, mut j) = (0, mid);
        while i < mid && j < v.len() {
            if v[i] <= v[j] {
                tmp.push(v[i]);
                i += 1;
            } else {
                tmp.push(v[j]);
                n += (mid - i) as u64;
                j += 1;
            }
        }
        tmp.extend_from_slice(&v[i..mid]);
        tmp.extend_from_slice(&v[j..]);
        v.copy_from_slice(tmp);
        n
    }
    let mut tmp = Vec::with_capacity(v.len());
    sort(&mut v.to_vec(), &mut tmp)
}

/// The control plane with or without the Worker (and the reporter, started later).
pub(super) enum Cluster {
    Bare(Box<ControlPlane>),
    Worker(Box<Env>),
}

impl Cluster {
    pub(super) fn cp(&self) -> &ControlPlane {
        match self {
            Cluster::Bare(cp) => cp,
            Cluster::Worker(env) => &env.cp,
        }
    }
}

/// What a replay creates: `nodes` (v1.Node objects with status; made kwok nodes here) and
/// `pods` (in `NAMESPACE`, created before kube-scheduler starts; the order they are scheduled in
/// is theirs to set, e.g. with `spec.priority`, which the control plane here lets them give).
pub struct ReplayObjects {
    pub nodes: Vec<Value>,
    pub pods: Vec<Value>,
}

/// Wall-clock phases of a run, each from the end of the previous one.
pub(super) struct Laps {
    clock: Instant,
    pub phases: Vec<(String, f64)>,
}

impl Laps {
    pub(super) fn new() -> Laps {
        Laps {
            clock: Instant::now(),
            phases: Vec::new(),
        }
    }

    pub(super) fn lap(&mut self, name: &str) {
        self.phases
            .push((name.to_owned(), self.clock.elapsed().as_secs_f64()));
        self.clock = Instant::now();
    }
}

/// A configuration's cluster before its pods: the control plane (with the Worker and the
/// reporter, which has reported every node), kwok with its nodes Ready, and the scheduler
/// configuration pointed at the Worker.
pub(super) struct Prepared {
    pub cluster: Cluster,
    pub kwok: super::Server,
    /// With [`WithWorker::node_metrics`].
    pub metrics_server: Option<super::Server>,
    pub config: SchedulerConfig,
    pub laps: Laps,
}

/// Starts what [`Prepared`] holds; `extra_stages`: kwok Stage documents beside the pod stages
/// (with `cfg.kwok_pod_stages`).
pub(super) async fn prepare(cfg: &ReplayConfig, nodes: &[Value], extra_stages: &str) -> Prepared {
    let mut laps = Laps::new();
    let options = ControlPlaneOptions {
        priority_in_pod_spec: true,
        ..Default::default()
    };
    let mut cluster = match &cfg.worker {
        None => Cluster::Bare(Box::new(ControlPlane::start_with(options).await)),
        Some(w) => {
            let vars: Vec<(&str, &str)> = w
                .vars
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            Cluster::Worker(Box::new(Env::start_with(options, &vars).await))
        }
    };
    let kwok = if cfg.kwok_pod_stages {
        cluster
            .cp()
            .start_kwok_stages(extra_stages, cfg.kwok_lease_s)
            .await
    } else {
        cluster.cp().start_kwok_nodes_only(cfg.kwok_lease_s).await
    };
    laps.lap("control plane");
    let kube = cluster.cp().kube.clone();
    let kwok_nodes: Vec<Value> = nodes.iter().cloned().map(kwok_node).collect();
    create_kwok_nodes(&kube, &kwok_nodes).await;
    wait_nodes_ready(&kube, nodes.len()).await;
    laps.lap("nodes");

    let mut config = cfg.config.clone();
    let mut metrics_server = None;
    if let (Cluster::Worker(env), Some(w)) = (&mut cluster, &cfg.worker) {
        if w.node_metrics {
            metrics_server = Some(env.cp.start_metrics_server().await);
        }
        let no_metrics = (!w.node_metrics).then_some("--no-node-metrics");
        let flags: Vec<&str> = no_metrics
            .into_iter()
            .chain(w.reporter_flags.iter().map(String::as_str))
            .collect();
        let url = env.api.base.clone();
        let mut reporter = Reporter::start(&env.cp, &url, "reporter", &flags, w.release_reporter);
        reporter
            .wait_nodes_reported(nodes.len(), Duration::from_secs(300))
            .await;
        env.reporter = Some(reporter);
        if let Extender::Worker {
            url_prefix, ca_pem, ..
        } = &mut config.extender
        {
            *url_prefix = env.api.url_prefix();
            *ca_pem = env.cp.pki.ca_pem();
        }
        laps.lap("facts");
    }
    Prepared {
        cluster,
        kwok,
        metrics_server,
        config,
        laps,
    }
}

impl Prepared {
    /// The Worker's metrics once it has every one of `bound` placements, and the reporter's
    /// (None without the extender).
    pub(super) async fn metrics(&self, bound: usize) -> (Option<String>, Option<String>) {
        match &self.cluster {
            Cluster::Worker(env) => (
                Some(confirmed_metrics(&env.api, bound).await),
                match &env.reporter {
                    Some(r) => Some(r.metrics().await),
                    None => None,
                },
            ),
            Cluster::Bare(_) => (None, None),
        }
    }
}

/// The resource version of `NAMESPACE`'s pods now: a watch from it sees every later change.
pub(super) async fn pods_resource_version(kube: &Kube) -> String {
    let list = kube
        .get(&format!("/api/v1/namespaces/{NAMESPACE}/pods?limit=1"))
        .await
        .expect("list pods");
    list["metadata"]["resourceVersion"]
        .as_str()
        .expect("list resourceVersion")
        .to_owned()
}

/// The scheduler's log: filter calls it skipped because the extender failed.
pub(super) fn extender_errors(log: &str) -> usize {
    log.matches("Skipping extender as it returned error")
        .count()
}

/// Runs one configuration.
pub async fn run(cfg: &ReplayConfig, objects: &ReplayObjects) -> ReplayOutcome {
    let (nodes, pods) = (&objects.nodes, &objects.pods);
    let Prepared {
        cluster,
        kwok,
        metrics_server,
        config,
        mut laps,
    } = prepare(cfg, nodes, "").await;
    let kube = cluster.cp().kube.clone();

    kube.create_namespace(NAMESPACE).await;
    let names: Vec<String> = pods.iter().map(name_of).collect();
    for chunk in pods.chunks(32) {
        futures::future::join_all(chunk.iter().map(|p| kube.create_pod(p))).await;
    }
    let rv = pods_resource_version(&kube).await;
    laps.lap("pods");
    let cp = cluster.cp();
    // An absolute path replaces KUBE_BIN in the join.
    // -v=3 logs each scheduling attempt ("Attempting to schedule pod"): the order pods were
    // taken in, which the bindings' order blurs (each binds asynchronously, GPU pods after a
    // PreBind write).
    let scheduler = cp
        .start_scheduler_binary_args(
            "scheduler",
            &cfg.scheduler.to_string_lossy(),
            &config.render(&cp.kubeconfig),
            &["-v=3"],
        )
        .await;
    laps.lap("scheduler");
    let (fates, scheduling_s, settled) = watch_until_settled(&kube, &names, &rv, cfg).await;
    laps.lap("scheduling");

    let log = scheduler.log_text();
    let extender_errors = extender_errors(&log);
    let attempt_order = first_attempts(&log, &names);
    let bound = fates.iter().filter(|f| f.node.is_some()).count();
    let prepared = Prepared {
        cluster,
        kwok,
        metrics_server,
        config,
        laps,
    };
    let (worker_metrics, reporter_metrics) = prepared.metrics(bound).await;
    drop(scheduler);
    let phases = prepared.laps.phases.clone();
    drop(prepared);
    ReplayOutcome {
        attempt_order,
        fates,
        scheduling_s,
        settled,
        phases,
        worker_metrics,
        reporter_metrics,
        extender_errors,
    }
}

/// The Worker's metrics once it has received every bound pod's placement from the reporter and
/// its colonies have stopped changing (a second apart), or after a minute.
async fn confirmed_metrics(api: &crate::api::WorkerApi, bound: usize) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    let confirmed = |text: &str| -> f64 {
        [
            "aco_colony_deposits_total",
            "aco_colony_unknown_placements_total",
            "aco_colony_non_candidate_placements_total",
        ]
        .iter()
        .map(|family| metric_sum(text, family).unwrap_or(0.0))
        .sum()
    };
    let mut last = None;
    loop {
        let text = api.metrics().await;
        let received = metric_sum(&text, "aco_placements_received_total").unwrap_or(0.0);
        let now = (received, confirmed(&text));
        if (received >= bound as f64 && last == Some(now)) || Instant::now() > deadline {
            if received < bound as f64 {
                eprintln!("the Worker received {received} of {bound} placements in a minute");
            }
            return text;
        }
        last = Some(now);
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// The sum of every series of `family` in a Prometheus text (None: no such series).
pub fn metric_sum(text: &str, family: &str) -> Option<f64> {
    let mut found = false;
    let mut sum = 0.0;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let name_end = line.find(['{', ' ']).unwrap_or(line.len());
        if &line[..name_end] == family {
            found = true;
            sum += line
                .rsplit(' ')
                .next()
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0);
        }
    }
    found.then_some(sum)
}

async fn wait_nodes_ready(kube: &Kube, n: usize) {
    super::wait_for(
        &format!("{n} kwok nodes Ready"),
        Duration::from_secs(300),
        || async move {
            let list = kube.get("/api/v1/nodes").await.ok()?;
            let ready = list["items"]
                .as_array()?
                .iter()
                .filter(|node| {
                    node["status"]["conditions"].as_array().is_some_and(|c| {
                        c.iter()
                            .any(|c| c["type"] == "Ready" && c["status"] == "True")
                    })
                })
                .count();
            (ready >= n).then_some(())
        },
    )
    .await;
}

fn is_unschedulable(pod: &Value) -> bool {
    pod["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter().any(|c| {
            c["type"] == "PodScheduled" && c["status"] == "False" && c["reason"] == "Unschedulable"
        })
    })
}

/// Follows the pods from `rv` until each is bound or unschedulable (or the timeout).
pub(super) async fn watch_until_settled(
    kube: &Kube,
    names: &[String],
    rv: &str,
    cfg: &ReplayConfig,
) -> (Vec<PodFate>, f64, bool) {
    let index: BTreeMap<&str, usize> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let mut fates = vec![PodFate::default(); names.len()];
    let mut open = names.len();
    let mut rank = 0;
    let mut rv = rv.to_owned();
    let deadline = Instant::now() + cfg.timeout;
    let (mut first, mut last): (Option<Instant>, Option<Instant>) = (None, None);
    let path = format!("/api/v1/namespaces/{NAMESPACE}/pods");
    'watching: while open > 0 && Instant::now() < deadline {
        let left = deadline.saturating_duration_since(Instant::now()).as_secs();
        let Ok(mut watch) = kube.watch(&path, &rv, left.clamp(1, 600) as u32).await else {
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        };
        loop {
            let next = tokio::time::timeout(
                deadline.saturating_duration_since(Instant::now()),
                watch.next(),
            )
            .await;
            let Ok(Some(event)) = next else {
                continue 'watching;
            };
            let pod = &event["object"];
            if event["type"] == "ERROR" {
                // 410 Gone: too old to resume; the run cannot be followed further.
                eprintln!("{}: watch error {pod}", cfg.name);
                break 'watching;
            }
            if let Some(v) = pod["metadata"]["resourceVersion"].as_str() {
                rv = v.to_owned();
            }
            let Some(&i) = pod["metadata"]["name"].as_str().and_then(|n| index.get(n)) else {
                continue;
            };
            let fate = &mut fates[i];
            let was_open = fate.node.is_none() && !fate.unschedulable;
            if fate.node.is_none() {
                if let Some(node) = pod["spec"]["nodeName"].as_str() {
                    let now = Instant::now();
                    let t0 = *first.get_or_insert(now);
                    last = Some(now);
                    fate.node = Some(node.to_owned());
                    fate.bound_rank = Some(rank);
                    fate.bound_at_s = Some(now.duration_since(t0).as_secs_f64());
                    rank += 1;
                    fate.annotations = pod["metadata"]["annotations"]
                        .as_object()
                        .map(|m| {
                            m.iter()
                                .map(|(k, v)| {
                                    (k.clone(), v.as_str().unwrap_or_default().to_owned())
                                })
                                .collect()
                        })
                        .unwrap_or_default();
                } else if is_unschedulable(pod) {
                    fate.unschedulable = true;
                }
            }
            if was_open && (fate.node.is_some() || fate.unschedulable) {
                open -= 1;
                if open == 0 {
                    break 'watching;
                }
            }
        }
    }
    let span = match (first, last) {
        (Some(a), Some(b)) => b.duration_since(a).as_secs_f64(),
        _ => 0.0,
    };
    if open > 0 {
        eprintln!(
            "{}: {open} of {} pods unsettled at the deadline",
            cfg.name,
            names.len()
        );
    }
    (fates, span, open == 0)
}

/// A JSON summary of an outcome (timings, counts) for the benchmark's output.
pub fn summary(o: &ReplayOutcome) -> Value {
    json!({
        "bound": o.bound(),
        "pods": o.fates.len(),
        "settled": o.settled,
        "schedulingSeconds": o.scheduling_s,
        "podsPerSecond": o.pods_per_s(),
        "boundAfterUnschedulable": o.bound_after_unschedulable(),
        "bindInversions": o.bind_inversions(),
        "attemptInversions": o.attempt_inversions(),
        "attemptedOutOfOrder": o.attempted_out_of_order(),
        "extenderErrors": o.extender_errors,
        "phases": o.phases.iter().map(|(k, v)| json!({"phase": k, "seconds": v})).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_family_sums_over_its_labels_and_only_its_own() {
        let text = "# HELP a_total x\na_total{t=\"x\"} 2\na_total{t=\"y\"} 3.5\na_totals 9\nb 1\n";
        assert_eq!(metric_sum(text, "a_total"), Some(5.5));
        assert_eq!(metric_sum(text, "b"), Some(1.0));
        assert_eq!(metric_sum(text, "c"), None);
    }

    #[test]
    fn first_attempts_follow_the_log() {
        let log = "I1206 04:26:30 schedule_one.go:117] \"Attempting to schedule pod\" pod=\"trace/p-2\"\n\
                   I1206 other line pod=\"trace/p-0\"\n\
                   I1206 schedule_one.go:117] \"Attempting to schedule pod\" pod=\"trace/p-0\"\n\
                   I1206 schedule_one.go:117] \"Attempting to schedule pod\" pod=\"trace/p-2\"\n\
                   I1206 schedule_one.go:117] \"Attempting to schedule pod\" pod=\"other/p-1\"\n\
                   I1206 schedule_one.go:117] \"Attempting to schedule pod\" pod=\"trace/p-1\"\n";
        let names: Vec<String> = ["p-0", "p-1", "p-2"].map(String::from).to_vec();
        let order = first_attempts(log, &names);
        assert_eq!(order, [2, 0, 1]);
        let o = ReplayOutcome {
            attempt_order: order,
            ..Default::default()
        };
        assert_eq!(o.attempted_out_of_order(), 2);
        assert!((o.attempt_inversions() - 2.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn inversions_count_pairs_out_of_order() {
        assert_eq!(inversions(&[0, 1, 2, 3]), 0);
        assert_eq!(inversions(&[1, 0, 2, 3]), 1);
        assert_eq!(inversions(&[3, 2, 1, 0]), 6);
        assert_eq!(inversions(&[2, 0, 3, 1]), 3);
    }
}
