//! One configuration of the churned real-kube replay (`benches/churn_replay.rs`,
//! `scripts/bench-trace --churn`): what [`super::replay`] prepares (control plane, kwok nodes,
//! the Worker and the reporter with the extender), kube-scheduler started on an empty
//! namespace, then each pod created at its time (the trace's arrival, compressed) while a watch
//! follows where kube-scheduler binds them. Departures are kwok's: each pod that leaves is
//! stamped at its creation with its departure as a wall-clock time (`end_annotation`), and a
//! Stage completes it then (phase Succeeded, exit 0) whenever it was bound, so kube-scheduler
//! frees its room and the reporter reads a real end with its run time.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::kwok::{complete_at_stage, USAGE_CPU};
use super::replay::{
    extender_errors, metric_sum, pods_resource_version, prepare, watch_until_settled, PodFate,
};
use super::replay::{ReplayConfig, NAMESPACE};
use crate::api::WorkerHttp;
use crate::nodes::name_of;

/// What a churned run creates, and when.
pub struct ChurnObjects {
    pub nodes: Vec<Value>,
    /// In arrival order.
    pub pods: Vec<Value>,
    /// Per pod: wall seconds after the first arrival to create it (non-decreasing).
    pub at_s: Vec<f64>,
    /// Per pod: wall seconds after the first arrival it is due to end, if it ends.
    pub end_s: Vec<Option<f64>>,
    /// The pod annotation kwok's completion Stage reads (stamped with the RFC 3339 time).
    pub end_annotation: String,
}

impl ChurnObjects {
    /// `nodes`, and `pods` as (object, arrival, departure) in arrival order.
    pub fn new(
        nodes: Vec<Value>,
        pods: impl IntoIterator<Item = (Value, f64, Option<f64>)>,
        end_annotation: &str,
    ) -> ChurnObjects {
        let mut o = ChurnObjects {
            nodes,
            pods: Vec::new(),
            at_s: Vec::new(),
            end_s: Vec::new(),
            end_annotation: end_annotation.to_owned(),
        };
        for (pod, at, end) in pods {
            o.pods.push(pod);
            o.at_s.push(at);
            o.end_s.push(end);
        }
        o
    }

    /// Each pod uses `cpu_milli[i]` millicores while it runs, as kwok reports it to
    /// metrics-server (the [`USAGE_CPU`] annotation; memory stays kwok's 1Mi).
    pub fn with_cpu_usage(mut self, cpu_milli: &[f64]) -> ChurnObjects {
        assert_eq!(cpu_milli.len(), self.pods.len(), "one usage per pod");
        for (pod, m) in self.pods.iter_mut().zip(cpu_milli) {
            pod["metadata"]["annotations"][USAGE_CPU] = format!("{}m", m.round() as u64).into();
        }
        self
    }
}

/// What a churned configuration did.
#[derive(Debug, Default)]
pub struct ChurnOutcome {
    /// Per pod, in the order given.
    pub fates: Vec<PodFate>,
    /// Every pod bound or found unschedulable before the timeout.
    pub settled: bool,
    /// Per pod: kwok had completed it (phase Succeeded) when the run stopped.
    pub ended: Vec<bool>,
    /// How many.
    pub completed: usize,
    /// Pods due to end before the last arrival (what `completed` is waited for).
    pub due_to_end: usize,
    /// The latest a pod was created after its time (s): the harness kept the schedule this well.
    pub max_creation_lag_s: f64,
    pub phases: Vec<(String, f64)>,
    pub worker_metrics: Option<String>,
    pub reporter_metrics: Option<String>,
    pub extender_errors: usize,
}

impl ChurnOutcome {
    pub fn bound(&self) -> usize {
        self.fates.iter().filter(|f| f.node.is_some()).count()
    }

    /// Pod → node of every bound pod, the pods named by `names` (in the order given).
    pub fn bindings(&self, names: &[String]) -> std::collections::HashMap<String, String> {
        names
            .iter()
            .zip(&self.fates)
            .filter_map(|(name, f)| Some((name.clone(), f.node.clone()?)))
            .collect()
    }

    /// Per pod: its fate if it was bound and had not ended when the run stopped.
    pub fn running(&self) -> Vec<Option<&PodFate>> {
        self.fates
            .iter()
            .zip(&self.ended)
            .map(|(f, ended)| f.node.as_ref().filter(|_| !ended).map(|_| f))
            .collect()
    }
}

/// Runs one configuration (`cfg.kwok_pod_stages` must be on: pods go Running, then end).
pub async fn run(cfg: &ReplayConfig, objects: &ChurnObjects) -> ChurnOutcome {
    assert!(cfg.kwok_pod_stages, "departures need kwok's pod stages");
    let mut prepared = prepare(
        cfg,
        &objects.nodes,
        &complete_at_stage(&objects.end_annotation),
    )
    .await;
    let kube = prepared.cluster.cp().kube.clone();
    kube.create_namespace(NAMESPACE).await;
    let rv = pods_resource_version(&kube).await;
    let cp = prepared.cluster.cp();
    let scheduler = cp
        .start_scheduler_binary_args(
            "scheduler",
            &cfg.scheduler.to_string_lossy(),
            &prepared.config.render(&cp.kubeconfig),
            &[],
        )
        .await;
    prepared.laps.lap("scheduler");

    let names: Vec<String> = objects.pods.iter().map(name_of).collect();
    let start = Instant::now();
    let wall_start = std::time::SystemTime::now();
    let stamped = |i: usize| {
        let mut pod = objects.pods[i].clone();
        if let Some(end) = objects.end_s[i] {
            let at = wall_start + Duration::from_secs_f64(end);
            pod["metadata"]["annotations"][objects.end_annotation.as_str()] =
                humantime::format_rfc3339_nanos(at).to_string().into();
        }
        pod
    };
    let create = async {
        let mut lag: f64 = 0.0;
        let mut next = 0;
        while next < objects.pods.len() {
            let due = Duration::from_secs_f64(objects.at_s[next]);
            tokio::time::sleep_until((start + due).into()).await;
            // Every pod due by now, together (the API server takes them in parallel).
            let now = start.elapsed().as_secs_f64();
            let end = objects.at_s[next..]
                .iter()
                .position(|&t| t > now)
                .map_or(objects.pods.len(), |k| next + k);
            let batch: Vec<Value> = (next..end).map(stamped).collect();
            futures::future::join_all(batch.iter().map(|p| kube.create_pod(p))).await;
            lag = lag.max(start.elapsed().as_secs_f64() - objects.at_s[next]);
            next = end;
        }
        lag
    };
    let (max_creation_lag_s, (fates, _, settled)) =
        tokio::join!(create, watch_until_settled(&kube, &names, &rv, cfg));
    prepared.laps.lap("arrivals");

    // Departures due before the last arrival have happened (kwok's delay, the API's writes).
    let last_arrival = objects.at_s.last().copied().unwrap_or(0.0);
    let due_to_end = fates
        .iter()
        .zip(&objects.end_s)
        .filter(|(f, end)| f.node.is_some() && end.is_some_and(|e| e <= last_arrival))
        .count();
    let succeeded = || async {
        let list = kube
            .get(&format!(
                "/api/v1/namespaces/{NAMESPACE}/pods?fieldSelector=status.phase%3DSucceeded"
            ))
            .await
            .ok()?;
        let done: std::collections::HashSet<String> =
            list["items"].as_array()?.iter().map(name_of).collect();
        Some(
            names
                .iter()
                .map(|n| done.contains(n))
                .collect::<Vec<bool>>(),
        )
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut ended = vec![false; names.len()];
    loop {
        ended = succeeded().await.unwrap_or(ended);
        let completed = ended.iter().filter(|e| **e).count();
        if completed >= due_to_end || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let completed = ended.iter().filter(|e| **e).count();
    if completed < due_to_end {
        eprintln!(
            "{}: {completed} pods completed of {due_to_end} due before the last arrival",
            cfg.name
        );
    }
    let bound = fates.iter().filter(|f| f.node.is_some()).count();
    let (worker_metrics, reporter_metrics) = prepared.outcome_metrics(bound, completed).await;
    prepared.laps.lap("departures and metrics");
    let extender_errors = extender_errors(&scheduler.log_text());
    drop(scheduler);
    ChurnOutcome {
        fates,
        settled,
        ended,
        completed,
        due_to_end,
        max_creation_lag_s,
        phases: prepared.laps.phases.clone(),
        worker_metrics,
        reporter_metrics,
        extender_errors,
    }
}

impl super::replay::Prepared {
    /// [`super::replay::Prepared::metrics`] once the Worker has heard `completed` outcomes after
    /// their placements (`aco_colony_late_outcomes_total`), or after a minute.
    async fn outcome_metrics(
        &self,
        bound: usize,
        completed: usize,
    ) -> (Option<String>, Option<String>) {
        if let super::replay::Cluster::Worker(env) = &self.cluster {
            let deadline = Instant::now() + Duration::from_secs(60);
            loop {
                let text = env.api.metrics().await;
                let heard = metric_sum(&text, "aco_colony_late_outcomes_total").unwrap_or(0.0);
                if heard >= completed as f64 || Instant::now() > deadline {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
        self.metrics(bound).await
    }
}
