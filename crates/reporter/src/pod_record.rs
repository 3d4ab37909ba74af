//! What the reporter keeps of a bound pod: the fields its pure modules read and nothing else,
//! in its own compact form ([`PodRecord`]), made once as the watch delivers the pod.
//!
//! A typed `k8s_openapi` Pod, even slimmed, is ~9 KiB in memory (mostly empty `Option`s and
//! one `String` per field); a record is well under 1 KiB: strings that repeat across pods
//! (namespace, node, scheduler, controller kind and name, label keys and values, container
//! names, reasons) are shared ([`crate::intern`]), the requests are summed once by the core's
//! `pod_request` into integers, times are unix ms, and of the labels and annotations only
//! those read are kept. Who reads what:
//!
//! | field | read by |
//! |---|---|
//! | namespace, name, uid, labels (tenant, workload class, `--workload-label`, `controller-revision-hash`) | `placements` (tenant, report), `attribution` (workload key), shadow reports |
//! | controller (kind, name) | `attribution` (workload key), `reclaim` (drainable) |
//! | scheduler, node, scheduled time, creation time | `placements` (ours? bound where, when) |
//! | requests | `node_facts` (requested per node), shadow reports |
//! | annotations (GPU share; the Worker's GPU models and latency target) | `gpu_share`, shadow reports |
//! | deletion (time, grace), phase, status reason, `DisruptionTarget` reason, Ready since, containers (name, sidecar, memory limit) and their terminations and restarts | `outcome` |

use std::collections::BTreeMap;
use std::sync::Arc;

use aco_core::config::PodKeys;
use aco_core::k8s::{pod_request, PodView, QuantityText, RawResourceList, ResourceAmounts};
use k8s_openapi::api::core::v1::{ContainerState as K8sState, ContainerStatus, Pod};
use serde_json::{json, Value};

use crate::cache::Keyed;
use crate::gpu_share::{Annotated, ALIYUN_POD_IDX, ALIYUN_POD_MEM, HAMI_POD_ALLOCATED};
use crate::intern::Interner;
use crate::time::ms;

/// The label a StatefulSet's or DaemonSet's pods carry their revision in (a workload key part).
pub const REVISION_LABEL: &str = "controller-revision-hash";

/// A shared string ([`Interner`]).
pub type Shared = Arc<str>;

/// A bound pod as the reporter keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct PodRecord {
    pub namespace: Shared,
    pub name: Shared,
    /// Empty when the pod has none (never, from an API server).
    pub uid: Box<str>,
    pub created_ms: Option<u64>,
    pub deletion: Option<Deletion>,
    /// The kept labels, by key.
    pub labels: Box<[(Shared, Shared)]>,
    /// The kept annotations, by key.
    pub annotations: Box<[(Shared, Box<str>)]>,
    /// The controller's (kind, name), from the owner reference with `controller: true`.
    pub controller: Option<(Shared, Shared)>,
    /// `spec.schedulerName` (None when unset or empty).
    pub scheduler: Option<Shared>,
    /// `spec.nodeName` (None when unset or empty).
    pub node: Option<Shared>,
    /// The pod's effective request (`pod_request`); None when it could not be read.
    pub requests: Option<Box<[(Shared, i64)]>>,
    pub containers: Box<[ContainerSpec]>,
    pub phase: Option<Shared>,
    /// `status.reason`.
    pub reason: Option<Shared>,
    /// The reason of a `DisruptionTarget=True` condition (empty if it gives none).
    pub disruption: Option<Shared>,
    /// `lastTransitionTime` of `Ready=True`.
    pub ready_since_ms: Option<u64>,
    /// `lastTransitionTime` of `PodScheduled=True`.
    pub scheduled_ms: Option<u64>,
    /// Container statuses, init containers first.
    pub statuses: Box<[ContainerState]>,
}

/// `metadata.deletionTimestamp` and `deletionGracePeriodSeconds`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deletion {
    pub at_ms: u64,
    pub grace_s: u64,
}

/// A container of the spec, as `outcome` reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerSpec {
    pub name: Shared,
    /// A native sidecar: an init container with `restartPolicy: Always`.
    pub sidecar: bool,
    pub memory_limit: bool,
}

/// A container's status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerState {
    pub name: Shared,
    pub init: bool,
    pub restarts: i32,
    /// `state.terminated`.
    pub terminated: Option<Terminated>,
    /// `lastState.terminated`.
    pub last_terminated: Option<Terminated>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Terminated {
    pub exit_code: i32,
    pub reason: Option<Shared>,
    pub started_ms: Option<u64>,
    pub finished_ms: Option<u64>,
}

/// The key of a pod in the cache: namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PodKey(pub Shared, pub Shared);

impl PodRecord {
    pub fn key(&self) -> PodKey {
        PodKey(self.namespace.clone(), self.name.clone())
    }

    pub fn label(&self, key: &str) -> Option<&str> {
        lookup(&self.labels, key).map(|v| &**v)
    }

    pub fn annotation(&self, key: &str) -> Option<&str> {
        lookup(&self.annotations, key).map(|v| &**v)
    }

    /// The kept labels as a map (the shape the core's `tenant_of` reads).
    pub fn label_map(&self) -> BTreeMap<String, String> {
        self.labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// The effective request as the core's amounts (zero when it could not be read).
    pub fn request_amounts(&self) -> ResourceAmounts {
        let mut out = ResourceAmounts::default();
        for (name, amount) in self.requests.iter().flatten() {
            out.insert(name, *amount);
        }
        out
    }

    /// Pods that still hold their resources: kube-scheduler's cache drops Succeeded and Failed
    /// pods.
    pub fn holds_resources(&self) -> bool {
        !matches!(self.phase.as_deref(), Some("Succeeded" | "Failed"))
    }

    /// The pod as a shadow report carries it: what the Worker reads of a pod — metadata name,
    /// namespace, uid, the kept labels and annotations; the effective request as one container's
    /// requests (the Worker's `pod_request` of it is the pod's), nodeName, schedulerName.
    pub fn wire_pod(&self) -> Value {
        let labels: BTreeMap<&str, &str> = self.labels.iter().map(|(k, v)| (&**k, &**v)).collect();
        let annotations: BTreeMap<&str, &str> =
            self.annotations.iter().map(|(k, v)| (&**k, &**v)).collect();
        let containers = match &self.requests {
            Some(_) => json!([{"name": "requests",
                "resources": {"requests": to_quantity_text(&self.request_amounts())}}]),
            None => json!([]),
        };
        json!({
            "metadata": {"name": &*self.name, "namespace": &*self.namespace, "uid": &*self.uid,
                         "labels": labels, "annotations": annotations},
            "spec": {"containers": containers, "nodeName": self.node.as_deref(),
                     "schedulerName": self.scheduler.as_deref()},
        })
    }
}

impl Keyed for PodRecord {
    type Key = PodKey;
    fn key(&self) -> PodKey {
        PodRecord::key(self)
    }
}

impl Annotated for PodRecord {
    fn annotation(&self, key: &str) -> Option<&str> {
        PodRecord::annotation(self, key)
    }
}

/// Integer amounts back to Kubernetes quantity text: `cpu` in milli, the rest in units.
pub fn to_quantity_text(amounts: &ResourceAmounts) -> RawResourceList {
    amounts
        .iter()
        .map(|(name, n)| {
            (
                name.to_string(),
                QuantityText(if name == "cpu" {
                    format!("{n}m")
                } else {
                    n.to_string()
                }),
            )
        })
        .collect()
}

pub(crate) fn lookup<'a, V>(pairs: &'a [(Shared, V)], key: &str) -> Option<&'a V> {
    pairs.iter().find(|(k, _)| &**k == key).map(|(_, v)| v)
}

/// Makes records: which labels and annotations to keep, and the shared strings.
#[derive(Debug)]
pub struct PodReader {
    labels: Vec<String>,
    annotations: Vec<String>,
    strings: Arc<Interner>,
}

impl PodReader {
    /// Keeps the labels and annotations that the reporter and the Worker read, by the Worker's
    /// own settings (`config`) and the reporter's `--workload-label`.
    pub fn new(keys: &PodKeys, workload_label: Option<&str>, strings: Arc<Interner>) -> Self {
        let mut labels = vec![
            keys.tenant_label.clone(),
            keys.workload_label.clone(),
            REVISION_LABEL.to_owned(),
        ];
        labels.extend(workload_label.map(str::to_owned));
        let mut annotations: Vec<String> = [HAMI_POD_ALLOCATED, ALIYUN_POD_IDX, ALIYUN_POD_MEM]
            .iter()
            .map(|s| s.to_string())
            .collect();
        annotations.extend(keys.latency_target_annotations.iter().cloned());
        annotations.push(keys.gpu_models_annotation.clone());
        for keys in [&mut labels, &mut annotations] {
            keys.sort();
            keys.dedup();
        }
        PodReader {
            labels,
            annotations,
            strings,
        }
    }

    fn s(&self, text: &str) -> Shared {
        self.strings.get(text)
    }

    /// The record of `pod` (read once; the pod is dropped by the caller).
    pub fn read(&self, pod: &Pod) -> PodRecord {
        let m = &pod.metadata;
        let spec = pod.spec.as_ref();
        let status = pod.status.as_ref();
        let requests = serde_json::to_value(pod)
            .and_then(serde_json::from_value::<PodView>)
            .ok()
            .and_then(|view| pod_request(&view).ok())
            .map(|amounts| amounts.iter().map(|(n, a)| (self.s(n), a)).collect());
        let containers = spec
            .map(|s| {
                let regular = s.containers.iter().map(|c| (c, false));
                let init = s.init_containers.iter().flatten().map(|c| (c, true));
                regular
                    .chain(init)
                    .map(|(c, init)| ContainerSpec {
                        name: self.s(&c.name),
                        sidecar: init && c.restart_policy.as_deref() == Some("Always"),
                        memory_limit: c
                            .resources
                            .as_ref()
                            .and_then(|r| r.limits.as_ref())
                            .is_some_and(|l| l.contains_key("memory")),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let conditions = status
            .and_then(|s| s.conditions.as_deref())
            .unwrap_or_default();
        let true_condition = |kind: &str| {
            conditions
                .iter()
                .find(|c| c.type_ == kind && c.status == "True")
        };
        let since = |kind: &str| {
            true_condition(kind)
                .and_then(|c| c.last_transition_time.as_ref())
                .map(ms)
        };
        let statuses = status
            .map(|s| {
                let init = s
                    .init_container_statuses
                    .iter()
                    .flatten()
                    .map(|c| (c, true));
                let regular = s.container_statuses.iter().flatten().map(|c| (c, false));
                init.chain(regular)
                    .map(|(c, init)| self.container_state(c, init))
                    .collect()
            })
            .unwrap_or_default();
        PodRecord {
            namespace: self.s(m.namespace.as_deref().unwrap_or_default()),
            name: Arc::from(m.name.as_deref().unwrap_or_default()),
            uid: m.uid.as_deref().unwrap_or_default().into(),
            created_ms: m.creation_timestamp.as_ref().map(ms),
            deletion: m.deletion_timestamp.as_ref().map(|t| Deletion {
                at_ms: ms(t),
                grace_s: m.deletion_grace_period_seconds.unwrap_or(0).max(0) as u64,
            }),
            labels: kept(
                m.labels.as_ref(),
                &self.labels,
                |v| self.s(v),
                &self.strings,
            ),
            annotations: kept(
                m.annotations.as_ref(),
                &self.annotations,
                |v| v.into(),
                &self.strings,
            ),
            controller: m
                .owner_references
                .iter()
                .flatten()
                .find(|o| o.controller == Some(true))
                .map(|o| (self.s(&o.kind), self.s(&o.name))),
            scheduler: spec
                .and_then(|s| s.scheduler_name.as_deref())
                .filter(|s| !s.is_empty())
                .map(|s| self.s(s)),
            node: spec
                .and_then(|s| s.node_name.as_deref())
                .filter(|s| !s.is_empty())
                .map(|s| self.s(s)),
            requests,
            containers,
            phase: status.and_then(|s| s.phase.as_deref()).map(|p| self.s(p)),
            reason: status.and_then(|s| s.reason.as_deref()).map(|r| self.s(r)),
            disruption: true_condition("DisruptionTarget")
                .map(|c| self.s(c.reason.as_deref().unwrap_or_default())),
            ready_since_ms: since("Ready"),
            scheduled_ms: since("PodScheduled"),
            statuses,
        }
    }

    fn container_state(&self, c: &ContainerStatus, init: bool) -> ContainerState {
        let terminated = |s: Option<&K8sState>| {
            s.and_then(|s| s.terminated.as_ref()).map(|t| Terminated {
                exit_code: t.exit_code,
                reason: t.reason.as_deref().map(|r| self.s(r)),
                started_ms: t.started_at.as_ref().map(ms),
                finished_ms: t.finished_at.as_ref().map(ms),
            })
        };
        ContainerState {
            name: self.s(&c.name),
            init,
            restarts: c.restart_count,
            terminated: terminated(c.state.as_ref()),
            last_terminated: terminated(c.last_state.as_ref()),
        }
    }
}

/// The entries of `map` whose key is in `keys` (sorted), keys shared, values made by `value`.
pub(crate) fn kept<V>(
    map: Option<&BTreeMap<String, String>>,
    keys: &[String],
    value: impl Fn(&str) -> V,
    strings: &Interner,
) -> Box<[(Shared, V)]> {
    map.into_iter()
        .flatten()
        .filter(|(k, _)| keys.binary_search(k).is_ok())
        .map(|(k, v)| (strings.get(k), value(v)))
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::gpu_share::HAMI_NODE_REGISTER;
    use crate::outcome::{classify, OutcomeRules, Presence, Verdict};
    use aco_core::config::Config;
    use aco_core::names::{NodeName, PodKey};
    use serde_json::json;

    /// The record of a pod given as JSON (as the API server sends it), read with the default
    /// settings and `app.kubernetes.io/instance` as the `--workload-label`.
    pub(crate) fn record(pod: Value) -> PodRecord {
        let reader = PodReader::new(
            &Config::default().pod_keys,
            Some("app.kubernetes.io/instance"),
            Default::default(),
        );
        reader.read(&serde_json::from_value(pod).unwrap())
    }

    fn fat_pod() -> Value {
        json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "u", "resourceVersion": "9",
                "labels": {"scheduling.aco/tenant-id": "ml", "app": "web", "pod-template-hash": "5d8f"},
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{...}", HAMI_POD_ALLOCATED: "GPU-a,NVIDIA,100,10:;"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d8f", "uid": "r", "controller": true}],
                "managedFields": [{"manager": "kubectl"}]},
            "spec": {"schedulerName": "aco-scheduler", "nodeName": "n1",
                "volumes": [{"name": "v", "emptyDir": {}}],
                "initContainers": [{"name": "sidecar", "image": "x", "restartPolicy": "Always", "env": [{"name": "A", "value": "1"}],
                    "resources": {"requests": {"cpu": "250m"}}}],
                "containers": [{"name": "app", "image": "x", "command": ["sleep"], "env": [{"name": "B", "value": "2"}],
                    "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"nvidia.com/gpu": "1"}}}]},
            "status": {"phase": "Failed", "podIPs": [{"ip": "10.0.0.1"}],
                "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-12-01T10:00:00Z"}],
                "containerStatuses": [{"name": "app", "image": "x", "imageID": "sha", "ready": false, "restartCount": 1,
                    "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]}
        })
    }

    #[test]
    fn a_record_keeps_what_the_modules_read_and_nothing_else() {
        let r = record(fat_pod());
        assert_eq!((&*r.namespace, &*r.name, &*r.uid), ("ns", "p", "u"));
        assert_eq!(r.label_map().len(), 1, "only the tenant label is read");
        assert_eq!(r.label("scheduling.aco/tenant-id"), Some("ml"));
        assert_eq!(
            r.annotations.len(),
            1,
            "only the GPU-share annotation is read"
        );
        assert_eq!(r.controller, Some(("ReplicaSet".into(), "web-5d8f".into())));
        assert_eq!(
            (r.scheduler.as_deref(), r.node.as_deref()),
            (Some("aco-scheduler"), Some("n1"))
        );
        // Requests summed once by the core's rule: the sidecar runs beside the app; the GPU in
        // limits only counts as requested.
        let amounts = r.request_amounts();
        assert_eq!(
            (
                amounts.get("cpu"),
                amounts.get("memory"),
                amounts.get("nvidia.com/gpu")
            ),
            (1_250, 1 << 30, 1)
        );
        assert_eq!(
            r.scheduled_ms,
            crate::time::parse_rfc3339_ms("2026-12-01T10:00:00Z")
        );
        // The outcome module reads the OOM on a container without a memory limit.
        assert_eq!(
            classify(&r, Presence::default(), 0, &OutcomeRules::default()),
            Some(Verdict::NodeFailed(
                "OOMKilled without a memory limit (node memory)".into()
            ))
        );
        let node =
            crate::node_record::tests::record(json!({"metadata": {"name": "n1", "annotations": {
            HAMI_NODE_REGISTER: "GPU-a,10,1000,100,T4,0,true:"}}}));
        assert_eq!(
            crate::gpu_share::gpu_free_milli(&node, &[&r]),
            Some(vec![900])
        );
    }

    #[test]
    fn repeated_strings_are_shared_between_records() {
        let reader = PodReader::new(&Config::default().pod_keys, None, Default::default());
        let read = |name: &str| {
            reader.read(
                &serde_json::from_value(json!({"metadata": {"name": name, "namespace": "team-a", "uid": name},
                    "spec": {"nodeName": "n1", "schedulerName": "aco-scheduler", "containers": [{"name": "app"}]}}))
                .unwrap(),
            )
        };
        let (a, b) = (read("a"), read("b"));
        assert!(Arc::ptr_eq(&a.namespace, &b.namespace));
        assert!(Arc::ptr_eq(
            a.node.as_ref().unwrap(),
            b.node.as_ref().unwrap()
        ));
        assert!(Arc::ptr_eq(&a.containers[0].name, &b.containers[0].name));
        assert!(!Arc::ptr_eq(&a.name, &b.name));
    }

    #[test]
    fn a_shadow_pod_on_the_wire_reads_the_same_to_the_worker() {
        let config = Config::default();
        let mut fat = fat_pod();
        let annotations = fat["metadata"]["annotations"].as_object_mut().unwrap();
        annotations.insert("scheduling.aco/gpu-models".into(), "V100M16|V100M32".into());
        annotations.insert("scheduling.aco/latency-target-us".into(), "500".into());
        fat["metadata"]["labels"]["aco/workload-type"] = "latency-critical".into();
        fat["spec"]["overhead"] = json!({"cpu": "100m"});
        let wire = record(fat.clone()).wire_pod();
        let view: PodView = serde_json::from_value(wire.clone()).unwrap();
        let fat_view: PodView = serde_json::from_value(fat).unwrap();
        let demand =
            aco_core::demand::PodDemand::from_pod(&view, &config.pod_keys, &config.node_keys)
                .unwrap();
        let fat_demand =
            aco_core::demand::PodDemand::from_pod(&fat_view, &config.pod_keys, &config.node_keys)
                .unwrap();
        assert_eq!(demand, fat_demand);
        assert_eq!(
            demand.allowed_gpu_models,
            Some(vec!["V100M16".to_string(), "V100M32".to_string()])
        );
        assert_eq!(demand.latency_target_us, Some(500.0));
        assert_eq!(demand.tenant, "ml");
        assert!(demand.workload.is_latency_critical());
        assert_eq!(demand.request.get("cpu"), 1_350);
        // Exactly the fields the Worker reads.
        let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(
            keys(&wire["metadata"]),
            ["annotations", "labels", "name", "namespace", "uid"]
        );
        assert_eq!(
            keys(&wire["spec"]),
            ["containers", "nodeName", "schedulerName"]
        );
        assert!(wire.get("status").is_none());
        assert_eq!(
            wire["metadata"]["annotations"].as_object().unwrap().len(),
            3,
            "GPU share, GPU models, latency target"
        );
    }

    #[test]
    fn a_shadow_report_parses_as_the_worker_reads_it_and_its_pod_as_the_worker_reads_pods() {
        use aco_core::api::placements::PlacementReport;
        use aco_core::api::shadow::{ShadowBatch, ShadowReport};
        use aco_core::colony::{Outcome, OutcomeLabel};
        let pod = record(json!({
            "metadata": {"name": "p", "namespace": "team-a", "uid": "u1", "labels": {"aco/workload-type": "latency-critical"},
                         "annotations": {"scheduling.aco/latency-target-us": "800"}},
            "spec": {"schedulerName": "default-scheduler", "nodeName": "n1",
                     "containers": [{"name": "c", "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}}}]}
        }))
        .wire_pod();
        let placement = PlacementReport {
            pod_uid: Some(PodKey::parse("u1").unwrap()),
            namespace: Some("team-a".into()),
            name: Some("p".into()),
            tenant: Some("team-a".into()),
            node: NodeName::parse("n1").unwrap(),
            outcome: Some(Outcome::Label(OutcomeLabel::Succeeded)),
        };
        let sent = ShadowBatch {
            placements: vec![ShadowReport::of(&placement, &pod)],
        };
        let text = serde_json::to_string(&sent).unwrap();
        // The Worker's own parse of the batch (the pod as JSON), then of the pod.
        let received: ShadowBatch = serde_json::from_str(&text).unwrap();
        let item = &received.placements[0];
        assert_eq!(item.pod_key(), Some(PodKey::parse("u1")));
        assert_eq!(item.outcome, placement.outcome);
        let pod_json = item.pod.clone().unwrap();
        assert_eq!(pod_json["spec"]["nodeName"], "n1");
        let view: PodView = serde_json::from_value(pod_json).unwrap();
        let demand =
            aco_core::demand::PodDemand::from_pod(&view, &Default::default(), &Default::default())
                .unwrap();
        assert_eq!(
            (
                demand.key.as_str(),
                demand.tenant.as_str(),
                demand.latency_target_us
            ),
            ("u1", "team-a", Some(800.0))
        );
        assert!(demand.workload.is_latency_critical());
        assert_eq!(demand.request.get("cpu"), 500);
        assert_eq!(demand.request.get("memory"), 512 << 20);
    }
}
