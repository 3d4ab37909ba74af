//! Wiring: watches and caches ([`crate::cache`]) for Nodes and Pods, the node-facts push loop, the pod scan loop, the
//! delivery loop, leader election, the ops server, and graceful shutdown. Every decision is
//! made by the pure modules; this file only moves objects between them and the network.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aco_core::api::nodes::{NodeReport, NodesBatch};
use aco_core::api::placements::PlacementsBatch;
use aco_core::api::reporter_view::ReporterView;
use aco_core::api::shadow::{ShadowBatch, ShadowReport};
use aco_core::colony::Outcome;
use aco_core::config::Config;
use aco_core::names::NodeName;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::Api;
use kube::runtime::{watcher, WatchStreamExt};
use kube::Client;
use rand::{rngs::SmallRng, Rng, SeedableRng};
use tokio::sync::{watch, Notify};

use crate::attribution::Attribution;
use crate::cache::{read_event, Cache};
use crate::changes::{Acknowledged, Push};
use crate::config::Args;
use crate::config_check;
use crate::delivery::{disposition, Backoff, Disposition, Pacer, Queue};
use crate::freshness::{Freshness, Source};
use crate::gpu_share::gpu_free_milli;
use crate::intern::Interner;
use crate::leader::{Election, Leadership};
use crate::node_facts::{self, labels_the_worker_reads, FactsInput};
use crate::node_record::{NodeReader, NodeRecord};
use crate::ops_server::{self, OpsState};
use crate::outcome::{OutcomeRules, Presence};
use crate::placements::{scan, Endpoint, Item, Kind, Ledger, ScanRules, Schedulers, Windows};
use crate::pod_record::{PodKey, PodReader, PodRecord};
use crate::reclaim::reclaimed;
use crate::telemetry::Telemetry;
use crate::worker_client::{Answer, WorkerClient};

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Placement/outcome reports owed and queued, and what the reporter remembers of workloads;
/// one lock, never held across an await.
struct Reports {
    ledger: Ledger,
    queue: Queue,
    attribution: Attribution,
}

struct Shared {
    args: Args,
    config: Config,
    client: Client,
    worker: WorkerClient,
    /// Prometheus, for `--metrics-source prometheus` or `--prices-from-opencost`.
    prometheus: Option<crate::prometheus::Prometheus>,
    telemetry: Arc<Telemetry>,
    freshness: Arc<Freshness>,
    nodes: Arc<Cache<NodeRecord>>,
    pods: Arc<Cache<PodRecord>>,
    reports: Mutex<Reports>,
    pod_changed: Notify,
    /// Pods changed since the last scan (by watch events); a scan of only these follows each
    /// change, a full scan every scan interval (time-based fates, forgetting gone pods).
    dirty: Mutex<HashSet<PodKey>>,
    /// Pods the watch saw deleted since the last scan, with what was known then (their node
    /// gone or not): their ends are judged once more before they are forgotten.
    deleted: Mutex<Vec<(Arc<PodRecord>, Presence)>>,
    /// Spot nodes deleted under running pods ([`crate::reclaim`]), not yet acknowledged by the
    /// Worker: sent in the next `PUT /v1/nodes` as `reclaimed`.
    reclaimed: Mutex<BTreeSet<NodeName>>,
    /// A re-list happened (watch restarted): the next scan is a full one.
    relisted: AtomicBool,
    queued: Notify,
    is_leader: watch::Receiver<bool>,
    shutdown: watch::Receiver<bool>,
}

impl Shared {
    fn leading(&self) -> bool {
        *self.is_leader.borrow()
    }

    fn stopping(&self) -> bool {
        *self.shutdown.borrow()
    }

    async fn pause(&self, d: Duration) {
        let mut shutdown = self.shutdown.clone();
        tokio::select! {
            _ = tokio::time::sleep(d) => {}
            _ = shutdown.wait_for(|s| *s) => {}
        }
    }
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    args.validate()?;
    let config = Config::from_vars(|k| std::env::var(k).ok())
        .map_err(|e| anyhow::anyhow!("Worker settings from the environment: {e}"))?;
    let token = args.admin_token()?;
    let ca = match &args.ca_file {
        Some(p) => {
            Some(std::fs::read(p).map_err(|e| anyhow::anyhow!("--ca-file {}: {e}", p.display()))?)
        }
        None => None,
    };
    let worker = WorkerClient::new(&args.worker_url, token, ca.as_deref(), args.request_timeout)?;
    let prometheus = args.prometheus()?;
    let client = Client::try_default().await?;
    let telemetry = Arc::new(Telemetry::new());
    let ready = Arc::new(AtomicBool::new(false));
    let freshness = Arc::new(Freshness::default());

    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    tokio::spawn(async move {
        wait_for_signal().await;
        tracing::info!("shutting down");
        let _ = shutdown_tx.send(true);
    });

    let nodes = Arc::new(Cache::<NodeRecord>::default());
    let webhook_serving = crate::webhook_server::start(
        &args,
        &config,
        nodes.clone(),
        telemetry.clone(),
        shutdown_rx.clone(),
    );
    let ops = {
        let state = OpsState {
            telemetry: telemetry.clone(),
            ready: ready.clone(),
            freshness: freshness.clone(),
            with_metrics: args.load_source() != "none",
            webhook_serving,
        };
        let mut rx = shutdown_rx.clone();
        let addr = args.listen;
        tokio::spawn(async move {
            let stop = async move {
                let _ = rx.wait_for(|s| *s).await;
            };
            if let Err(e) = ops_server::serve(addr, state, stop).await {
                tracing::error!(error = %e, "ops server failed");
            }
        })
    };

    // Caches of the reporter's own records, each object read once as it arrives (the node cache
    // is made above: the webhook reads it too). Pods: only bound ones (`spec.nodeName!=`):
    // pending pods request nothing on a node and have no placement to report.
    let pods = Arc::new(Cache::<PodRecord>::default());
    let (node_cache, pod_cache) = (nodes.clone(), pods.clone());
    let strings = Arc::new(Interner::default());
    let node_reader = NodeReader::new(
        &labels_the_worker_reads(&config.node_keys),
        &args.latency_label,
        strings.clone(),
    );
    let pod_reader = PodReader::new(&config.pod_keys, args.workload_label.as_deref(), strings);
    let watch_config = watch_config(&client).await;
    let node_events = watcher(Api::<Node>::all(client.clone()), watch_config.clone())
        .default_backoff()
        .map(move |event| event.map(|e| node_cache.apply(read_event(e, |n| node_reader.read(n)))));
    let pod_events = watcher(
        Api::<Pod>::all(client.clone()),
        watch_config.fields("spec.nodeName!="),
    )
    .default_backoff()
    .map(move |event| event.map(|e| pod_cache.apply(read_event(e, |p| pod_reader.read(p)))));

    let identity = args.identity.clone().unwrap_or_else(|| {
        let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "aco-reporter".into());
        format!("{host}-{:08x}", rand::rng().random::<u32>())
    });
    let leadership = if args.leader_elect {
        Leadership::elect(
            client.clone(),
            Election {
                namespace: args.lease_namespace.clone(),
                lease: args.lease_name.clone(),
                identity: identity.clone(),
                duration: args.lease_duration,
                grace: args.lease_grace,
                renew_deadline: args.renew_deadline,
            },
        )
        .await?
    } else {
        Leadership::always()
    };

    let shared = Arc::new(Shared {
        reports: Mutex::new(Reports {
            ledger: Ledger::default(),
            queue: Queue::new(args.queue_capacity),
            attribution: Attribution::default(),
        }),
        args,
        prometheus,
        config,
        client,
        worker,
        telemetry: telemetry.clone(),
        freshness,
        nodes,
        pods,
        pod_changed: Notify::new(),
        dirty: Mutex::new(HashSet::new()),
        deleted: Mutex::new(Vec::new()),
        reclaimed: Mutex::new(BTreeSet::new()),
        relisted: AtomicBool::new(true),
        queued: Notify::new(),
        is_leader: leadership.is_leader.clone(),
        shutdown: shutdown_rx.clone(),
    });

    let s = shared.clone();
    let node_watch = tokio::spawn(async move {
        let mut events = std::pin::pin!(node_events);
        while let Some(event) = events.next().await {
            if event.is_ok() {
                s.freshness.confirmed(Source::Nodes);
            }
            match event {
                Ok(watcher::Event::Delete(node)) => node_deleted(&s, &node),
                Ok(_) => {}
                Err(e) => watch_failed(&s, Source::Nodes, "nodes", &e),
            }
        }
    });
    let s = shared.clone();
    let pod_watch = tokio::spawn(async move {
        let mut events = std::pin::pin!(pod_events);
        while let Some(event) = events.next().await {
            if event.is_ok() {
                s.freshness.confirmed(Source::Pods);
            }
            match event {
                Ok(watcher::Event::Apply(pod)) | Ok(watcher::Event::InitApply(pod)) => {
                    s.dirty
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(pod.key());
                    s.pod_changed.notify_one();
                }
                Ok(watcher::Event::Delete(pod)) => {
                    let node_gone = pod.node.as_ref().is_some_and(|n| s.nodes.get(n).is_none());
                    let presence = Presence {
                        deleted: true,
                        node_gone,
                    };
                    s.deleted
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push((pod, presence));
                    s.pod_changed.notify_one();
                }
                Ok(watcher::Event::InitDone) => {
                    s.relisted.store(true, Ordering::Relaxed);
                    s.pod_changed.notify_one();
                }
                Ok(_) => {}
                Err(e) => watch_failed(&s, Source::Pods, "pods", &e),
            }
        }
    });

    {
        let mut stop = shutdown_rx.clone();
        tokio::select! {
            _ = async { tokio::join!(shared.nodes.wait_until_ready(), shared.pods.wait_until_ready()) } => {}
            _ = stop.wait_for(|s| *s) => { return Ok(()); }
        }
    }
    // Nothing is sent to a Worker that reads the shared vars otherwise.
    let view = ReporterView::of(&shared.config);
    if !config_check::agree_at_start(&shared.worker, &view, shutdown_rx.clone()).await? {
        return Ok(());
    }
    let s = shared.clone();
    let rechecks = tokio::spawn(async move {
        let mut stop = s.shutdown.clone();
        loop {
            tokio::select! {
                _ = tokio::time::sleep(config_check::RECHECK) => {}
                _ = stop.wait_for(|s| *s) => return,
            }
            match config_check::ask(&s.worker, &view).await {
                config_check::Agreement::Differ(d) => {
                    // Restarted by Kubernetes into the refusal at start, where it stays visible.
                    tracing::error!(error = %config_check::refusal(&d), "stopping");
                    std::process::exit(1);
                }
                config_check::Agreement::Unknown(why) => {
                    tracing::debug!(%why, "shared vars not compared this time");
                }
                _ => {}
            }
        }
    });

    ready.store(true, Ordering::Relaxed);
    tracing::info!(
        nodes = shared.nodes.state().len(),
        pods = shared.pods.state().len(),
        identity,
        "caches synced"
    );

    let s = shared.clone();
    let leader_gauge = tokio::spawn(async move {
        let mut rx = s.is_leader.clone();
        loop {
            let leading = *rx.borrow_and_update();
            s.telemetry.leader.set(leading as i64);
            tracing::info!(leading, "leadership");
            if leading {
                // A new leader owes everything recent again (a full scan): the Worker drops the repeats.
                s.relisted.store(true, Ordering::Relaxed);
                s.pod_changed.notify_one();
            }
            let mut stop = s.shutdown.clone();
            tokio::select! {
                r = rx.changed() => if r.is_err() { break },
                _ = stop.wait_for(|s| *s) => break,
            }
        }
    });

    let pushes = tokio::spawn(push_nodes(shared.clone()));
    let scans = tokio::spawn(scan_pods(shared.clone()));
    let deliveries = tokio::spawn(deliver(shared.clone()));

    let _ = shutdown_rx.clone().wait_for(|s| *s).await;
    let _ = tokio::join!(pushes, scans, deliveries, leader_gauge, rechecks);
    node_watch.abort();
    pod_watch.abort();
    leadership.release().await;
    let _ = ops.await;
    Ok(())
}

/// A node left the cluster: remember it as reclaimed when it was spot capacity deleted under
/// running pods (the pods still in the cache are the ones bound to it at that moment).
/// A watch stream's error: its source is no longer fresh, the error is counted by kind, and the
/// watcher resumes on its own (kube-rs backs off and relists).
fn watch_failed(s: &Shared, source: Source, kind: &str, e: &watcher::Error) {
    s.freshness.failed(source, now_ms());
    s.telemetry
        .watch_errors
        .get_or_create(&Telemetry::kind(kind))
        .inc();
    tracing::warn!(error = %e, "{kind} watch error (resuming)");
}

fn node_deleted(s: &Shared, node: &NodeRecord) {
    let name = &*node.name;
    let pods = s.pods.state();
    let on_node = pods
        .iter()
        .filter(|p| p.node.as_deref() == Some(name))
        .map(|p| p.as_ref());
    // A name the Worker would refuse is not owed: reporting it would fail the whole batch.
    let Ok(typed) = NodeName::parse(name) else {
        return;
    };
    if reclaimed(node, on_node, &s.config.node_keys) {
        tracing::info!(
            node = name,
            "spot node deleted under running pods: reclaimed"
        );
        s.telemetry.reclaimed_nodes.inc();
        s.reclaimed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(typed);
    }
}

/// How the caches list and watch: from the API server's watch cache (`any_semantic`: no quorum
/// read of every pod from etcd on start and relist), and as a streaming list (`sendInitialEvents`,
/// the objects arrive one by one on the watch instead of as one huge LIST response) where the
/// server serves it — Kubernetes ≥ 1.34, where WatchList is on by default; paged lists before.
async fn watch_config(client: &Client) -> watcher::Config {
    let base = watcher::Config::default().any_semantic();
    match client.apiserver_version().await {
        Ok(v) => {
            let minor: u32 = v
                .minor
                .trim_end_matches(|c: char| !c.is_ascii_digit())
                .parse()
                .unwrap_or(0);
            if v.major == "1" && minor >= 34 {
                tracing::info!(server = %v.git_version, "watches: streaming lists");
                base.streaming_lists()
            } else {
                tracing::info!(server = %v.git_version, "watches: paged lists (no streaming lists before 1.34)");
                base.page_size(500)
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, "server version unknown: paged lists");
            base.page_size(500)
        }
    }
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => return std::future::pending().await,
            };
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}

fn jittered(d: Duration, rng: &mut impl Rng) -> Duration {
    d.mul_f64(rng.random_range(0.9..=1.1))
}

/// Every push interval: build every node's facts, send what changed (all of it on a full refresh).
async fn push_nodes(s: Arc<Shared>) {
    let mut rng = SmallRng::seed_from_u64(now_ms());
    let mut acked = Acknowledged::default();
    let label_keys = labels_the_worker_reads(&s.config.node_keys);
    let mut first = true;
    while !s.stopping() {
        if !first {
            s.pause(jittered(s.args.push_interval, &mut rng)).await;
        }
        first = false;
        if s.stopping() {
            break;
        }
        probe_watches(&s).await;
        // Every replica shows its inputs' health (the standby's too: AcoReporterSourceBroken
        // fires when no replica has a healthy input).
        for source in Source::ALL {
            let read_at_all = source != Source::NodeMetrics || s.args.load_source() != "none";
            s.telemetry
                .source_healthy
                .get_or_create(&Telemetry::kind(source.as_str()))
                .set((!read_at_all || s.freshness.healthy(source)) as i64);
        }
        s.telemetry.push_ticks.inc();
        if !s.leading() {
            continue;
        }
        let (usage, prices) = read_load(&s).await;
        let now = now_ms();
        let observed_at = s.freshness.facts_observed_at(now);
        s.telemetry
            .facts_age_seconds
            .set(now.saturating_sub(observed_at) as f64 / 1000.0);
        if observed_at < now {
            tracing::warn!(
                stale_for_ms = now - observed_at,
                broken = ?s.freshness.broken(s.args.load_source() != "none"),
                "a watch is broken: node facts keep the time they were last confirmed"
            );
        }
        let reports = build_reports(&s, &usage, &prices, &label_keys, now, observed_at);
        let reclaimed_owed = !s.reclaimed.lock().map(|r| r.is_empty()).unwrap_or(true);
        let push = acked
            .diff(reports, now, s.args.full_refresh.as_millis() as u64)
            .or_else(|| {
                reclaimed_owed.then(|| Push {
                    batch: NodesBatch::default(),
                    full: false,
                })
            });
        let Some(push) = push else {
            continue;
        };
        send_push(&s, push, &mut acked, now).await;
    }
}

/// Node load from the configured source, and prices with `--prices-from-opencost`; a failing
/// source gives none this round (counted, logged, and shown broken in `/readyz`).
async fn read_load(s: &Shared) -> (HashMap<String, node_facts::NodeUsage>, HashMap<String, f64>) {
    let read = match (s.args.load_source(), &s.prometheus) {
        ("metrics-server", _) => Some(
            crate::node_metrics::read(&s.client)
                .await
                .map(|u| (u, HashMap::new()))
                .map_err(|e| e.to_string()),
        ),
        ("prometheus", Some(p)) => Some(p.read().await.map(|r| (r.usage, r.prices))),
        _ => None,
    };
    let (usage, mut prices) = match read {
        None => (HashMap::new(), HashMap::new()),
        Some(Ok(r)) => {
            s.freshness.probed(Source::NodeMetrics, now_ms(), 0);
            r
        }
        Some(Err(e)) => {
            s.freshness.failed(Source::NodeMetrics, now_ms());
            s.telemetry.metrics_unavailable.inc();
            tracing::warn!(error = %e, source = s.args.load_source(), "the load source is unavailable: sending no utilisation this round");
            (HashMap::new(), HashMap::new())
        }
    };
    // Prices from OpenCost beside another load source: the client asks only the price query.
    if s.args.prices_from_opencost && s.args.load_source() != "prometheus" {
        if let Some(p) = &s.prometheus {
            match p.read().await {
                Ok(r) => prices = r.prices,
                Err(e) => tracing::warn!(error = %e, "OpenCost prices unavailable this round"),
            }
        }
    }
    (usage, prices)
}

#[allow(clippy::too_many_arguments)]
fn build_reports(
    s: &Shared,
    usage: &HashMap<String, node_facts::NodeUsage>,
    prices: &HashMap<String, f64>,
    label_keys: &[String],
    now: u64,
    observed_at: u64,
) -> Vec<NodeReport> {
    let pods = s.pods.state();
    let mut by_node: HashMap<&str, Vec<&PodRecord>> = HashMap::new();
    for pod in &pods {
        if let Some(node) = pod.node.as_deref() {
            if pod.holds_resources() {
                by_node.entry(node).or_default().push(pod.as_ref());
            }
        }
    }
    let max_age = s.args.metrics_max_age.as_millis() as u64;
    let mut reports = Vec::new();
    for node in s.nodes.state() {
        let name = &*node.name;
        let on_node = by_node.get(name).map(Vec::as_slice).unwrap_or_default();
        let requested = node_facts::requested_sum(on_node.iter().copied());
        let sample = usage.get(name);
        let report = match node_facts::node_report(FactsInput {
            node: &node,
            requested: &requested,
            usage: sample,
            gpu_free_milli: gpu_free_milli(node.as_ref(), on_node),
            label_keys,
            latency_label: &s.args.latency_label,
            metrics_max_age_ms: max_age,
            now_ms: now,
            observed_at_ms: observed_at,
            price: prices
                .get(name)
                .map(|p| (s.config.node_keys.cost_label.as_str(), *p)),
        }) {
            Ok(report) => report,
            Err(why) => {
                tracing::debug!(node = name, %why, "node not reported: the Worker would refuse its name");
                continue;
            }
        };
        if sample.is_some() && report.utilisation.is_empty() {
            s.telemetry.stale_samples.inc();
        }
        reports.push(report);
    }
    reports.sort_by(|a, b| a.name.cmp(&b.name));
    reports
}

/// LISTs one Node and one bound Pod (a cheap, cacheable request): a watch that resumed quietly
/// after an error is confirmed healthy by it ([`crate::freshness`]); a failure marks it broken.
async fn probe_watches(s: &Shared) {
    use kube::api::ListParams;
    let timeout = Duration::from_secs(5);
    let one = ListParams::default().limit(1);
    let nodes = Api::<Node>::all(s.client.clone());
    let pods = Api::<Pod>::all(s.client.clone());
    let pods_one = one.clone().fields("spec.nodeName!=");
    let (n, p) = tokio::join!(
        tokio::time::timeout(timeout, nodes.list_metadata(&one)),
        tokio::time::timeout(timeout, pods.list_metadata(&pods_one)),
    );
    for (source, ok) in [
        (Source::Nodes, matches!(n, Ok(Ok(_)))),
        (Source::Pods, matches!(p, Ok(Ok(_)))),
    ] {
        if ok {
            s.freshness
                .probed(source, now_ms(), crate::freshness::QUIET_MS);
        } else {
            s.freshness.failed(source, now_ms());
        }
    }
}

/// Sends a push in chunks; each acknowledged chunk is remembered, the first failure stops
/// (what was not acknowledged is owed again on the next tick).
async fn send_push(s: &Shared, push: Push, acked: &mut Acknowledged, now: u64) {
    let Push { batch, full } = push;
    let mut deleted = batch.deleted;
    // Reclaimed nodes owed (never one that is reported again under the same name: the Worker
    // refuses a name both reported and reclaimed).
    let mut reclaimed: Vec<NodeName> = {
        let owed = s.reclaimed.lock().unwrap_or_else(|e| e.into_inner());
        owed.iter()
            .filter(|n| !batch.nodes.iter().any(|r| r.name == **n))
            .cloned()
            .collect()
    };
    let mut chunks: Vec<Vec<NodeReport>> = batch
        .nodes
        .chunks(s.args.node_batch_size)
        .map(<[_]>::to_vec)
        .collect();
    if chunks.is_empty() {
        chunks.push(Vec::new());
    }
    let last = chunks.len() - 1;
    for (i, nodes) in chunks.into_iter().enumerate() {
        let chunk = Push {
            batch: NodesBatch {
                nodes,
                deleted: std::mem::take(&mut deleted),
                reclaimed: std::mem::take(&mut reclaimed),
            },
            full: full && i == last,
        };
        let answer = s
            .worker
            .send(reqwest::Method::PUT, "/v1/nodes", &chunk.batch)
            .await;
        let kind = Telemetry::kind("nodes");
        s.telemetry.requests.get_or_create(&kind).inc();
        s.telemetry
            .bytes_sent
            .get_or_create(&kind)
            .inc_by(answer.bytes_sent as u64);
        if answer.ok() {
            acked.acknowledge(&chunk, now);
            if !chunk.batch.reclaimed.is_empty() {
                let mut owed = s.reclaimed.lock().unwrap_or_else(|e| e.into_inner());
                for name in &chunk.batch.reclaimed {
                    owed.remove(name);
                }
            }
            s.telemetry
                .sent
                .get_or_create(&kind)
                .inc_by(chunk.batch.nodes.len() as u64);
            s.telemetry
                .deleted_nodes
                .inc_by(chunk.batch.deleted.len() as u64);
            s.telemetry
                .last_success
                .get_or_create(&kind)
                .set(now as f64 / 1000.0);
            tracing::debug!(
                request_id = %answer.request_id,
                nodes = chunk.batch.nodes.len(),
                deleted = chunk.batch.deleted.len(),
                full = chunk.full,
                "node facts pushed"
            );
        } else {
            s.telemetry.failed.get_or_create(&kind).inc();
            tracing::warn!(request_id = %answer.request_id, status = ?answer.status, body = %answer.body, "node facts push failed; retrying next interval");
            return;
        }
    }
}

/// On every pod change (only the changed pods) and every scan interval (all pods, for "healthy
/// for N minutes" and to forget gone pods): queue what is owed.
async fn scan_pods(s: Arc<Shared>) {
    let shadow = s.args.shadow_schedulers();
    if !shadow.is_empty() {
        tracing::info!(
            ?shadow,
            "shadow mode: pods of these schedulers are reported to /v1/shadow"
        );
    }
    let rules = ScanRules {
        schedulers: Schedulers {
            ours: &s.args.scheduler_names,
            shadow: &shadow,
        },
        pod_keys: &s.config.pod_keys,
        outcome_rules: OutcomeRules {
            max_restarts: s.args.max_restarts,
            healthy_after_ms: s.args.healthy_after.as_millis() as u64,
        },
        windows: Windows {
            placement_ms: s.config.retention.decision_ttl_ms,
            outcome_ms: s.args.outcome_window.as_millis() as u64,
        },
        workload_label: s.args.workload_label.as_deref(),
    };
    // The first round is a full scan (relisted starts true).
    let mut last_full = std::time::Instant::now();
    while !s.stopping() {
        let mut stop = s.shutdown.clone();
        let until_full = s.args.scan_interval.saturating_sub(last_full.elapsed());
        tokio::select! {
            _ = s.pod_changed.notified() => {}
            _ = tokio::time::sleep(until_full) => {}
            _ = stop.wait_for(|s| *s) => break,
        }
        if !s.leading() {
            continue;
        }
        let full = last_full.elapsed() >= s.args.scan_interval
            || s.relisted.swap(false, Ordering::Relaxed);
        let dirty: Vec<PodKey> =
            std::mem::take(&mut *s.dirty.lock().unwrap_or_else(|e| e.into_inner()))
                .into_iter()
                .collect();
        let pods: Vec<Arc<PodRecord>> = if full {
            last_full = std::time::Instant::now();
            s.pods.state()
        } else {
            dirty.iter().filter_map(|r| s.pods.get(r)).collect()
        };
        let deleted = std::mem::take(&mut *s.deleted.lock().unwrap_or_else(|e| e.into_inner()));
        let now = now_ms();
        let depth = {
            let mut r = s.reports.lock().unwrap_or_else(|e| e.into_inner());
            let Reports {
                ledger,
                queue,
                attribution,
            } = &mut *r;
            let live = pods.iter().map(|p| (p.as_ref(), Presence::default()));
            let gone = deleted.iter().map(|(p, presence)| (p.as_ref(), *presence));
            let found = scan(ledger, attribution, live.chain(gone), &rules, now);
            for item in &found.items {
                if let Some(Outcome::Observed(o)) = item.report.outcome {
                    if let Some(slowdown) = o.slowdown {
                        tracing::info!(pod = %item.uid(), name = ?item.report.name, node = %item.report.node, slowdown, "run-time slowdown");
                    }
                }
            }
            for item in found.items {
                if let Err(item) = queue.push(item) {
                    ledger.unqueue(&item);
                }
            }
            // Seen again every scan while the pod lives: debug, not a warning each time.
            for (pod, why) in &found.invalid {
                tracing::debug!(pod = %pod, %why, "pod not reported: the Worker would refuse it");
            }
            for (kind, reason) in &found.decided {
                s.telemetry
                    .ends
                    .get_or_create(&Telemetry::end(kind, reason))
                    .inc();
            }
            if full {
                ledger.retain(&found.alive);
            }
            queue.len()
        };
        s.telemetry.queue_depth.set(depth as i64);
        if depth > 0 {
            s.queued.notify_one();
        }
    }
}

/// What the deliverer waits for before its next request.
enum Next {
    Send(Endpoint, String),
    Wait(Duration),
    Idle,
}

fn next_batch(s: &Shared, pacer: &Pacer, batch_size: usize) -> Next {
    let waiting = {
        let r = s.reports.lock().unwrap_or_else(|e| e.into_inner());
        r.queue.waiting()
    };
    let now = now_ms();
    match pacer.next(waiting, batch_size, now) {
        None => Next::Idle,
        Some(((endpoint, tenant), due)) if due <= now => Next::Send(endpoint, tenant),
        Some((_, due)) => Next::Wait(Duration::from_millis(due - now)),
    }
}

/// Sends queued reports, one tenant's per request, paced per tenant ([`Pacer`]), with backoff
/// while the Worker is unreachable or refusing.
async fn deliver(s: Arc<Shared>) {
    let mut rng = SmallRng::seed_from_u64(now_ms() ^ 0x5eed);
    let mut backoff = Backoff::new(s.args.backoff_base, s.args.backoff_max);
    let mut pacer = Pacer::new(s.args.tenant_interval);
    let mut batch_size = s.args.batch_size;
    let mut token_reloaded = false;
    loop {
        let (endpoint, tenant) = match next_batch(&s, &pacer, batch_size) {
            Next::Send(endpoint, tenant) => (endpoint, tenant),
            Next::Wait(d) => {
                let mut stop = s.shutdown.clone();
                tokio::select! {
                    _ = tokio::time::sleep(d) => {}
                    // Shutting down: no pacing, one last round for what is queued.
                    _ = stop.wait_for(|s| *s) => pacer = Pacer::new(Duration::ZERO),
                }
                continue;
            }
            Next::Idle => {
                if s.stopping() {
                    break;
                }
                let mut stop = s.shutdown.clone();
                tokio::select! {
                    _ = s.queued.notified() => continue,
                    _ = stop.wait_for(|s| *s) => {
                        // One last round for what is queued; the rest is re-derived by the next leader.
                        if s.reports.lock().map(|r| r.queue.is_empty()).unwrap_or(true) { break }
                        pacer = Pacer::new(Duration::ZERO);
                        continue
                    }
                }
            }
        };
        let batch = {
            let mut r = s.reports.lock().unwrap_or_else(|e| e.into_inner());
            r.queue.take_for(endpoint, &tenant, batch_size)
        };
        if batch.is_empty() {
            continue;
        }
        if !s.leading() && !s.stopping() {
            put_back(&s, batch);
            s.pause(Duration::from_millis(500)).await;
            continue;
        }
        pacer.sent((endpoint, tenant), now_ms());
        let answer = match endpoint {
            Endpoint::Placements => {
                let body = PlacementsBatch {
                    placements: batch.iter().map(|i| i.report.clone()).collect(),
                };
                s.worker
                    .send(reqwest::Method::POST, endpoint.path(), &body)
                    .await
            }
            Endpoint::Shadow => {
                // Every shadow item carries its pod (Ledger::plan); an empty one would be refused
                // by name and dropped, keeping the indexes of the Worker's answer aligned.
                let none = serde_json::Value::Object(Default::default());
                let placements = batch
                    .iter()
                    .map(|i| ShadowReport::of(&i.report, i.pod.as_deref().unwrap_or(&none)))
                    .collect();
                s.worker
                    .send(
                        reqwest::Method::POST,
                        endpoint.path(),
                        &ShadowBatch { placements },
                    )
                    .await
            }
        };
        s.telemetry
            .requests
            .get_or_create(&Telemetry::kind(endpoint.as_str()))
            .inc();
        for kind in Kind::ALL {
            let n = batch.iter().filter(|i| i.kind == kind).count();
            if n > 0 {
                let share = answer.bytes_sent * n / batch.len();
                s.telemetry
                    .bytes_sent
                    .get_or_create(&Telemetry::kind(kind.as_str()))
                    .inc_by(share as u64);
            }
        }
        let disposition = disposition(
            answer.status,
            answer.retry_after.as_deref(),
            answer.error.as_ref(),
            batch.len(),
        );
        if !matches!(disposition, Disposition::Unauthorized) {
            token_reloaded = false;
        }
        match disposition {
            Disposition::Acknowledged => {
                backoff.succeeded();
                s.telemetry.delivery_halted.set(0);
                batch_size = s.args.batch_size;
                let now = now_ms();
                {
                    let mut r = s.reports.lock().unwrap_or_else(|e| e.into_inner());
                    for item in &batch {
                        r.ledger.settle(item);
                    }
                    s.telemetry.queue_depth.set(r.queue.len() as i64);
                }
                for item in &batch {
                    let kind = Telemetry::kind(item.kind.as_str());
                    s.telemetry.sent.get_or_create(&kind).inc();
                    s.telemetry
                        .last_success
                        .get_or_create(&kind)
                        .set(now as f64 / 1000.0);
                    if item.kind == Kind::Placement {
                        s.telemetry
                            .bind_to_report_seconds
                            .observe(now.saturating_sub(item.bound_at_ms) as f64 / 1000.0);
                    }
                }
                tracing::info!(request_id = %answer.request_id, items = batch.len(), endpoint = endpoint.path(), "reports delivered");
                tracing::debug!(request_id = %answer.request_id, answer = %answer.body, "the Worker's answer");
            }
            Disposition::Retry(after) => {
                count_failed(&s, &batch);
                let wait = after.unwrap_or_else(|| backoff.failed(&mut rng));
                tracing::warn!(request_id = %answer.request_id, endpoint = endpoint.path(), status = ?answer.status, body = %answer.body, ?wait, queued = batch.len(), "report delivery failed; retrying");
                put_back(&s, batch);
                if s.stopping() {
                    break; // the next leader re-derives what is left
                }
                s.pause(wait).await;
            }
            Disposition::Unauthorized if !token_reloaded => {
                // A rotated Secret: the kubelet updates the mounted file; read it again and retry.
                token_reloaded = true;
                count_failed(&s, &batch);
                let reloaded = s.args.token_file.is_some()
                    && match s.args.admin_token() {
                        Ok(t) => s.worker.set_token(t),
                        Err(e) => {
                            tracing::warn!(error = %e, "re-reading the token file failed");
                            false
                        }
                    };
                s.telemetry.token_reloads.inc();
                tracing::warn!(
                    request_id = %answer.request_id,
                    endpoint = endpoint.path(),
                    token_changed = reloaded,
                    "the Worker answered 401; re-read the token file and retrying"
                );
                put_back(&s, batch);
            }
            Disposition::Unauthorized => {
                token_reloaded = false;
                halt(
                    &s,
                    &mut backoff,
                    &mut rng,
                    endpoint,
                    batch,
                    "HTTP 401 (the token file's token is refused)".into(),
                    &answer,
                )
                .await;
                if s.stopping() {
                    break;
                }
            }
            Disposition::Halt(why) => {
                halt(&s, &mut backoff, &mut rng, endpoint, batch, why, &answer).await;
                if s.stopping() {
                    break;
                }
            }
            Disposition::DropItem(i) => {
                let mut batch = batch;
                let refused = batch.remove(i);
                s.telemetry
                    .rejected
                    .get_or_create(&Telemetry::kind(refused.kind.as_str()))
                    .inc();
                tracing::error!(request_id = %answer.request_id, pod = %refused.uid(), field = ?answer.error.as_ref().and_then(|e| e.field.as_deref()), body = %answer.body, "the Worker refused a report; dropping it");
                let mut r = s.reports.lock().unwrap_or_else(|e| e.into_inner());
                r.ledger.settle(&refused);
                r.queue.put_back(batch);
            }
            Disposition::Split => {
                batch_size = (batch.len() / 2).max(1);
                tracing::warn!(request_id = %answer.request_id, status = ?answer.status, batch_size, "the Worker refused the batch as too large; splitting it");
                put_back(&s, batch);
            }
        }
    }
}

/// The Worker refused a request as a whole: nothing is dropped; delivery waits (growing backoff,
/// up to `--backoff-max`) with the halted gauge up and an error log naming the cause, then tries
/// again (a fixed Worker or configuration resumes it).
async fn halt(
    s: &Shared,
    backoff: &mut Backoff,
    rng: &mut SmallRng,
    endpoint: Endpoint,
    batch: Vec<Item>,
    why: String,
    answer: &Answer,
) {
    count_failed(s, &batch);
    s.telemetry.delivery_halted.set(1);
    s.telemetry
        .halts
        .get_or_create(&Telemetry::reason(&why))
        .inc();
    let wait = backoff.failed(rng);
    tracing::error!(request_id = %answer.request_id, endpoint = endpoint.path(), cause = %why, body = %answer.body, worker_url = %s.args.worker_url, ?wait, queued = batch.len(),
        "the Worker refused the request as a whole (not any one report): delivery halted, nothing dropped; check ACO_WORKER_URL and the token");
    put_back(s, batch);
    s.pause(wait).await;
}

fn put_back(s: &Shared, batch: Vec<Item>) {
    let mut r = s.reports.lock().unwrap_or_else(|e| e.into_inner());
    r.queue.put_back(batch);
}

fn count_failed(s: &Shared, batch: &[Item]) {
    for kind in Kind::ALL {
        if batch.iter().any(|i| i.kind == kind) {
            s.telemetry
                .failed
                .get_or_create(&Telemetry::kind(kind.as_str()))
                .inc();
        }
    }
}
