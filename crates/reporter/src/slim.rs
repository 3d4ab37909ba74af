//! What the caches keep of each object. A reflector holds every bound pod of the cluster
//! (100,000 at 5,000 nodes × 20): everything the reporter never reads — managed fields,
//! annotations other than the GPU-share ones, volumes, env, probes, affinity — is dropped as the
//! object arrives, before it is stored. The annotations the Worker reads from a pod (GPU models,
//! latency target: [`annotations_the_worker_reads`]) are kept too, for shadow reports, which
//! carry the pod itself ([`wire_pod`]).

use aco_core::config::Config;
use k8s_openapi::api::core::v1::{Container, Node, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;

use crate::gpu_share::{ALIYUN_POD_IDX, ALIYUN_POD_MEM, HAMI_NODE_REGISTER, HAMI_POD_ALLOCATED};

const POD_ANNOTATIONS: [&str; 3] = [HAMI_POD_ALLOCATED, ALIYUN_POD_IDX, ALIYUN_POD_MEM];
const NODE_ANNOTATIONS: [&str; 1] = [HAMI_NODE_REGISTER];

fn keep_annotations<K: Resource>(object: &mut K, keep: &[&str], extra: &[String]) {
    let meta = object.meta_mut();
    meta.managed_fields = None;
    if let Some(a) = meta.annotations.as_mut() {
        a.retain(|k, _| keep.contains(&k.as_str()) || extra.iter().any(|e| e == k));
    }
}

/// The pod annotations `aco_core::demand::PodDemand` reads, by the Worker's own settings.
pub fn annotations_the_worker_reads(config: &Config) -> Vec<String> {
    let mut keys = config.latency_target_annotations.clone();
    keys.push(config.gpu_models_annotation.clone());
    keys
}

/// A container as `pod_request` and nothing else reads it: name, resources, restartPolicy.
fn slim_container(c: &mut Container) {
    *c = Container {
        name: std::mem::take(&mut c.name),
        resources: c.resources.take(),
        restart_policy: c.restart_policy.take(),
        ..Default::default()
    };
}

/// Slims a pod for the cache, keeping also the annotations in `extra`
/// ([`annotations_the_worker_reads`]).
pub fn pod(pod: &mut Pod, extra: &[String]) {
    keep_annotations(pod, &POD_ANNOTATIONS, extra);
    // Only the controller's reference: it names the pod's workload (crate::attribution).
    if let Some(owners) = pod.metadata.owner_references.as_mut() {
        owners.retain(|o| o.controller == Some(true));
    }
    if let Some(spec) = pod.spec.as_mut() {
        spec.containers.iter_mut().for_each(slim_container);
        spec.init_containers
            .iter_mut()
            .flatten()
            .for_each(slim_container);
        spec.ephemeral_containers = None;
        spec.volumes = None;
        spec.affinity = None;
        spec.tolerations = None;
        spec.topology_spread_constraints = None;
        spec.node_selector = None;
        spec.security_context = None;
        spec.image_pull_secrets = None;
        spec.host_aliases = None;
        spec.dns_config = None;
        spec.readiness_gates = None;
        spec.resource_claims = None;
        spec.scheduling_gates = None;
        spec.dns_policy = None;
        spec.service_account_name = None;
        spec.service_account = None;
        spec.termination_grace_period_seconds = None;
        spec.enable_service_links = None;
        spec.preemption_policy = None;
    }
    if let Some(status) = pod.status.as_mut() {
        status.message = None;
        status.pod_ip = None;
        status.pod_ips = None;
        status.host_ip = None;
        status.host_ips = None;
        status.nominated_node_name = None;
        status.qos_class = None;
        status.ephemeral_container_statuses = None;
        status.resource_claim_statuses = None;
        status.resize = None;
        // The conditions the pure modules read: PodScheduled (bound time), Ready (healthy
        // since), DisruptionTarget (why it ended); their messages are not read.
        if let Some(conditions) = status.conditions.as_mut() {
            conditions.retain(|c| {
                matches!(
                    c.type_.as_str(),
                    "PodScheduled" | "Ready" | "DisruptionTarget"
                )
            });
            for c in conditions.iter_mut() {
                c.message = None;
                c.last_probe_time = None;
            }
        }
        for c in status
            .container_statuses
            .iter_mut()
            .flatten()
            .chain(status.init_container_statuses.iter_mut().flatten())
        {
            c.image = String::new();
            c.image_id = String::new();
            c.container_id = None;
            c.volume_mounts = None;
            c.allocated_resources_status = None;
            c.allocated_resources = None;
            c.resources = None;
            c.user = None;
            c.stop_signal = None;
            for state in [c.state.as_mut(), c.last_state.as_mut()]
                .into_iter()
                .flatten()
            {
                if let Some(t) = state.terminated.as_mut() {
                    t.message = None;
                    t.container_id = None;
                }
                if let Some(w) = state.waiting.as_mut() {
                    w.message = None;
                }
            }
        }
    }
}

/// The pod as a shadow report carries it: what the Worker reads of a pod and nothing else —
/// metadata name, namespace, uid, labels, annotations; spec containers and init containers
/// (name, resources, restartPolicy), overhead, nodeName, schedulerName; no status.
pub fn wire_pod(pod: &Pod) -> Pod {
    let m = &pod.metadata;
    let spec = pod.spec.as_ref().map(|s| {
        let slim = |c: &Container| {
            let mut c = c.clone();
            slim_container(&mut c);
            c
        };
        PodSpec {
            containers: s.containers.iter().map(slim).collect(),
            init_containers: s
                .init_containers
                .as_ref()
                .map(|cs| cs.iter().map(slim).collect()),
            overhead: s.overhead.clone(),
            node_name: s.node_name.clone(),
            scheduler_name: s.scheduler_name.clone(),
            ..Default::default()
        }
    });
    Pod {
        metadata: ObjectMeta {
            name: m.name.clone(),
            namespace: m.namespace.clone(),
            uid: m.uid.clone(),
            labels: m.labels.clone(),
            annotations: m.annotations.clone(),
            ..Default::default()
        },
        spec,
        status: None,
    }
}

pub fn node(node: &mut Node) {
    keep_annotations(node, &NODE_ANNOTATIONS, &[]);
    if let Some(status) = node.status.as_mut() {
        status.images = None;
        status.volumes_attached = None;
        status.volumes_in_use = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::{classify, OutcomeRules, Presence, Verdict};
    use serde_json::{json, Value};

    fn fat_pod() -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "u", "resourceVersion": "9",
                "labels": {"scheduling.aco/tenant-id": "ml"},
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{...}", HAMI_POD_ALLOCATED: "GPU-a,NVIDIA,100,10:;"},
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
        }))
        .unwrap()
    }

    #[test]
    fn a_slim_pod_reads_the_same_to_every_pure_module() {
        let fat = fat_pod();
        let mut slim = fat.clone();
        pod(&mut slim, &[]);
        assert_eq!(
            crate::node_facts::pod_requests(&slim).unwrap(),
            crate::node_facts::pod_requests(&fat).unwrap()
        );
        let rules = OutcomeRules::default();
        assert_eq!(
            classify(&slim, Presence::default(), 0, &rules),
            classify(&fat, Presence::default(), 0, &rules)
        );
        assert_eq!(
            classify(&slim, Presence::default(), 0, &rules),
            Some(Verdict::NodeFailed(
                "OOMKilled without a memory limit (node memory)".into()
            ))
        );
        let config = aco_core::config::Config::default();
        let ours = vec!["aco-scheduler".to_string()];
        let schedulers = crate::placements::Schedulers {
            ours: &ours,
            shadow: &[],
        };
        assert_eq!(
            crate::placements::bound_pod(&slim, &schedulers, &config),
            crate::placements::bound_pod(&fat, &schedulers, &config)
        );
        let node: Node = serde_json::from_value(json!({"metadata": {"name": "n1", "annotations": {
            HAMI_NODE_REGISTER: "GPU-a,10,1000,100,T4,0,true:"}}}))
        .unwrap();
        assert_eq!(
            crate::gpu_share::gpu_free_milli(&node, &[&slim]),
            crate::gpu_share::gpu_free_milli(&node, &[&fat])
        );
        // And it is smaller.
        let size = |p: &Pod| serde_json::to_vec(p).unwrap().len();
        assert!(
            size(&slim) < size(&fat),
            "{} vs {}",
            size(&slim),
            size(&fat)
        );
        let spec = slim.spec.as_ref().unwrap();
        assert!(
            spec.volumes.is_none()
                && spec.containers[0].env.is_none()
                && spec.containers[0].command.is_none()
        );
        assert!(
            slim.metadata.annotations.as_ref().unwrap().len() == 1
                && slim.metadata.managed_fields.is_none()
        );
    }

    #[test]
    fn a_shadow_pod_on_the_wire_reads_the_same_to_the_worker() {
        let config = aco_core::config::Config::default();
        let mut fat = fat_pod();
        let annotations = fat.metadata.annotations.as_mut().unwrap();
        annotations.insert("scheduling.aco/gpu-models".into(), "V100M16|V100M32".into());
        annotations.insert("scheduling.aco/latency-target-us".into(), "500".into());
        fat.spec.as_mut().unwrap().overhead = Some(
            [(
                "cpu".to_string(),
                k8s_openapi::apimachinery::pkg::api::resource::Quantity("100m".into()),
            )]
            .into(),
        );
        // Through the cache (keeping what the Worker reads), then onto the wire.
        let mut cached = fat.clone();
        pod(&mut cached, &annotations_the_worker_reads(&config));
        let wire = serde_json::to_value(wire_pod(&cached)).unwrap();
        let view: aco_core::k8s::PodView = serde_json::from_value(wire.clone()).unwrap();
        let fat_view: aco_core::k8s::PodView =
            serde_json::from_value(serde_json::to_value(&fat).unwrap()).unwrap();
        let demand = aco_core::demand::PodDemand::from_pod(&view, &config).unwrap();
        let fat_demand = aco_core::demand::PodDemand::from_pod(&fat_view, &config).unwrap();
        assert_eq!(demand, fat_demand);
        assert_eq!(
            demand.allowed_gpu_models,
            Some(vec!["V100M16".to_string(), "V100M32".to_string()])
        );
        assert_eq!(demand.latency_target_us, Some(500.0));
        assert_eq!(demand.tenant, "ml");
        // Exactly the fields the Worker reads.
        let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(
            keys(&wire["metadata"]),
            ["annotations", "labels", "name", "namespace", "uid"]
        );
        assert_eq!(
            keys(&wire["spec"]),
            [
                "containers",
                "initContainers",
                "nodeName",
                "overhead",
                "schedulerName"
            ]
        );
        assert!(wire.get("status").is_none());
        assert_eq!(keys(&wire["spec"]["containers"][0]), ["name", "resources"]);
        assert_eq!(
            keys(&wire["spec"]["initContainers"][0]),
            ["name", "resources", "restartPolicy"]
        );
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
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "team-a", "uid": "u1", "labels": {"aco/workload-type": "latency-critical"},
                         "annotations": {"scheduling.aco/latency-target-us": "800"}},
            "spec": {"schedulerName": "default-scheduler", "nodeName": "n1",
                     "containers": [{"name": "c", "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}}}]}
        }))
        .unwrap();
        let pod = wire_pod(&pod);
        let placement = PlacementReport {
            pod_uid: Some("u1".into()),
            namespace: Some("team-a".into()),
            name: Some("p".into()),
            tenant: Some("team-a".into()),
            node: "n1".into(),
            outcome: Some(Outcome::Label(OutcomeLabel::Succeeded)),
        };
        let sent = ShadowBatch {
            placements: vec![ShadowReport::of(&placement, &pod)],
        };
        let text = serde_json::to_string(&sent).unwrap();
        // The Worker's own parse of the batch (the pod as JSON), then of the pod.
        let received: ShadowBatch = serde_json::from_str(&text).unwrap();
        let item = &received.placements[0];
        assert_eq!(item.pod_key().as_deref(), Some("u1"));
        assert_eq!(item.outcome, placement.outcome);
        let pod_json = item.pod.clone().unwrap();
        assert_eq!(pod_json["spec"]["nodeName"], "n1");
        let view: aco_core::k8s::PodView = serde_json::from_value(pod_json).unwrap();
        let demand = aco_core::demand::PodDemand::from_pod(&view, &Config::default()).unwrap();
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
    }
}
