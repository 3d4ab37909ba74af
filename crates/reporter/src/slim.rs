//! What the caches keep of each object. A reflector holds every bound pod of the cluster
//! (100,000 at 5,000 nodes × 20): everything the reporter never reads — managed fields,
//! annotations other than the GPU-share ones, volumes, env, probes, affinity — is dropped as the
//! object arrives, before it is stored.

use k8s_openapi::api::core::v1::{Container, Node, Pod};
use kube::Resource;

use crate::gpu_share::{ALIYUN_POD_IDX, ALIYUN_POD_MEM, HAMI_NODE_REGISTER, HAMI_POD_ALLOCATED};

const POD_ANNOTATIONS: [&str; 3] = [HAMI_POD_ALLOCATED, ALIYUN_POD_IDX, ALIYUN_POD_MEM];
const NODE_ANNOTATIONS: [&str; 1] = [HAMI_NODE_REGISTER];

fn keep_annotations<K: Resource>(object: &mut K, keep: &[&str]) {
    let meta = object.meta_mut();
    meta.managed_fields = None;
    if let Some(a) = meta.annotations.as_mut() {
        a.retain(|k, _| keep.contains(&k.as_str()));
    }
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

pub fn pod(pod: &mut Pod) {
    keep_annotations(pod, &POD_ANNOTATIONS);
    pod.metadata.owner_references = None;
    if let Some(spec) = pod.spec.as_mut() {
        spec.containers.iter_mut().for_each(slim_container);
        spec.init_containers.iter_mut().flatten().for_each(slim_container);
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
    }
    if let Some(status) = pod.status.as_mut() {
        status.message = None;
        status.pod_ips = None;
        status.host_ips = None;
        status.ephemeral_container_statuses = None;
        status.resource_claim_statuses = None;
        for c in status.container_statuses.iter_mut().flatten().chain(status.init_container_statuses.iter_mut().flatten()) {
            c.image = String::new();
            c.image_id = String::new();
            c.container_id = None;
            c.volume_mounts = None;
            c.allocated_resources_status = None;
        }
    }
}

pub fn node(node: &mut Node) {
    keep_annotations(node, &NODE_ANNOTATIONS);
    if let Some(status) = node.status.as_mut() {
        status.images = None;
        status.volumes_attached = None;
        status.volumes_in_use = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::{classify, Fate, OutcomeRules};
    use serde_json::json;

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
        pod(&mut slim);
        assert_eq!(crate::node_facts::pod_requests(&slim).unwrap(), crate::node_facts::pod_requests(&fat).unwrap());
        let rules = OutcomeRules::default();
        assert_eq!(classify(&slim, 0, &rules), Some(Fate::Failed("OOMKilled".into())));
        let config = aco_core::config::Config::default();
        let schedulers = vec!["aco-scheduler".to_string()];
        assert_eq!(
            crate::placements::bound_pod(&slim, &schedulers, &config),
            crate::placements::bound_pod(&fat, &schedulers, &config)
        );
        let node: Node = serde_json::from_value(json!({"metadata": {"name": "n1", "annotations": {
            HAMI_NODE_REGISTER: "GPU-a,10,1000,100,T4,0,true:"}}})).unwrap();
        assert_eq!(crate::gpu_share::gpu_free_milli(&node, &[&slim]), crate::gpu_share::gpu_free_milli(&node, &[&fat]));
        // And it is smaller.
        let size = |p: &Pod| serde_json::to_vec(p).unwrap().len();
        assert!(size(&slim) < size(&fat), "{} vs {}", size(&slim), size(&fat));
        let spec = slim.spec.as_ref().unwrap();
        assert!(spec.volumes.is_none() && spec.containers[0].env.is_none() && spec.containers[0].command.is_none());
        assert!(slim.metadata.annotations.as_ref().unwrap().len() == 1 && slim.metadata.managed_fields.is_none());
    }
}
