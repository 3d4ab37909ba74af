//! `aco-kube-scheduler` (scripts/kube/cmd/aco-kube-scheduler, built by `scripts/build-kube`):
//! kube-scheduler with the AcoGpuDevices and AcoFGD plugins, its sample configuration
//! (scripts/kube/plugins/scheduler-config.yaml) and the HAMi device annotations its device
//! accounting reads and writes (scripts/kube/plugins/README.md).

use std::path::Path;

use serde_json::{json, Value};

use super::{ControlPlane, Server};
use crate::repo_root;

/// The binary's name in `KUBE_BIN`.
pub const ACO_KUBE_SCHEDULER: &str = "aco-kube-scheduler";
/// The node annotation listing a node's GPUs (HAMi's).
pub const HAMI_NODE_REGISTER: &str = "hami.io/node-nvidia-register";
/// The pod annotation AcoGpuDevices writes at PreBind (HAMi's).
pub const HAMI_POD_ALLOCATED: &str = "hami.io/vgpu-devices-allocated";
/// The OpenB node label with a node's GPU model.
pub const GPU_MODEL_LABEL: &str = "alibabacloud.com/gpu-card-model";

/// The sample KubeSchedulerConfiguration with `kubeconfig` as its client's, otherwise as
/// committed (text replaced, so its YAML anchors stay as written).
pub fn sample_config(kubeconfig: &Path) -> String {
    let text =
        std::fs::read_to_string(repo_root().join("scripts/kube/plugins/scheduler-config.yaml"))
            .expect("scripts/kube/plugins/scheduler-config.yaml");
    let placeholder = "kubeconfig: /etc/kubernetes/scheduler.conf";
    assert!(
        text.contains(placeholder),
        "the sample names its kubeconfig as {placeholder}"
    );
    text.replace(
        placeholder,
        &format!("kubeconfig: {}", kubeconfig.display()),
    )
}

/// `hami.io/node-nvidia-register` in HAMi's text form for `gpus` devices of `model`, with ids
/// `<node>-gpu<i>`, 16,000 MiB and 100 cores each (so that every share of OpenB's granularity,
/// 10 milli, is written back in whole numbers, as HAMi writes them).
pub fn hami_register(node: &str, model: &str, gpus: u32) -> String {
    (0..gpus)
        .map(|i| format!("{node}-gpu{i},10,16000,100,{model},0,true"))
        .collect::<Vec<_>>()
        .join(":")
}

/// A GPU node as the OpenB node list has it (allocatable `alibabacloud.com/gpu-count` and
/// `gpu-milli`, the GPU model label) with its devices registered, and `labels` added.
pub fn gpu_node(
    name: &str,
    model: &str,
    gpus: u32,
    cpu_milli: i64,
    labels: &[(&str, &str)],
) -> Value {
    let res = json!({
        "cpu": format!("{cpu_milli}m"), "memory": "512Gi", "pods": "110",
        "alibabacloud.com/gpu-count": gpus.to_string(),
        "alibabacloud.com/gpu-milli": (gpus * 1000).to_string(),
    });
    let mut node = json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", GPU_MODEL_LABEL: model},
            "annotations": {HAMI_NODE_REGISTER: hami_register(name, model, gpus)},
        },
        "status": {"allocatable": res, "capacity": res},
    });
    for (k, v) in labels {
        node["metadata"]["labels"][*k] = (*v).into();
    }
    node
}

impl ControlPlane {
    /// Starts `aco-kube-scheduler` with `config_yaml` and waits for /readyz.
    pub async fn start_aco_scheduler(&self, name: &str, config_yaml: &str) -> Server {
        self.start_scheduler_binary(name, ACO_KUBE_SCHEDULER, config_yaml)
            .await
    }
}

/// `config_yaml` (a KubeSchedulerConfiguration, e.g. the shipped one rendered by
/// [`super::SchedulerConfig::render`]) with AcoGpuDevices enabled in every profile, its args
/// `args` (e.g. `{"shareGpuChoice": "bestFit"}`): per-GPU accounting is the cluster's, not a
/// policy of one profile.
pub fn with_gpu_devices(config_yaml: &str, args: &Value) -> String {
    let mut doc: serde_yaml::Value = serde_yaml::from_str(config_yaml).expect("a YAML config");
    let args: serde_yaml::Value = serde_yaml::to_value(args).unwrap();
    for profile in doc["profiles"]
        .as_sequence_mut()
        .expect("profiles")
        .iter_mut()
    {
        let enabled = &mut profile["plugins"]["multiPoint"]["enabled"];
        if enabled.is_null() {
            *enabled = serde_yaml::Value::Sequence(Vec::new());
        }
        let entry = serde_yaml::to_value(json!({"name": "AcoGpuDevices"})).unwrap();
        enabled.as_sequence_mut().unwrap().push(entry);
        let config = &mut profile["pluginConfig"];
        if config.is_null() {
            *config = serde_yaml::Value::Sequence(Vec::new());
        }
        let mut entry = serde_yaml::Mapping::new();
        entry.insert("name".into(), "AcoGpuDevices".into());
        entry.insert("args".into(), args.clone());
        config.as_sequence_mut().unwrap().push(entry.into());
    }
    serde_yaml::to_string(&doc).unwrap()
}
