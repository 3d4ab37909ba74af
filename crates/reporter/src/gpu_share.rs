//! Per-GPU free share, where the cluster exposes per-device allocation. Nothing kube-scheduler
//! sends an extender carries it; device-sharing plugins write it on nodes and pods:
//!
//! - **HAMi**: the node annotation `hami.io/node-nvidia-register` lists the devices
//!   (`id,count,devmem,devcore,type,numa,health` joined by `:`, or the JSON list newer releases
//!   write), and each pod's `hami.io/vgpu-devices-allocated` says what it took per device
//!   (`uuid,type,usedmem,usedcores`, devices joined by `:`, containers by `;`).
//! - **Alibaba GPU share** (gpushare-scheduler-extender): node capacity `aliyun.com/gpu-mem`
//!   (GiB over all GPUs) and `aliyun.com/gpu-count`; pods carry `ALIYUN_COM_GPU_MEM_IDX` (the GPU)
//!   and `ALIYUN_COM_GPU_MEM_POD` (GiB taken).
//!
//! The result is the free share of each GPU in milli-GPU (1000 = idle), in the node's device
//! order; `None` where neither scheme is present. A device's share is the scarcer of memory and
//! compute.

use serde::Deserialize;

pub const HAMI_NODE_REGISTER: &str = "hami.io/node-nvidia-register";
pub const HAMI_POD_ALLOCATED: &str = "hami.io/vgpu-devices-allocated";
pub const ALIYUN_GPU_MEM: &str = "aliyun.com/gpu-mem";
pub const ALIYUN_GPU_COUNT: &str = "aliyun.com/gpu-count";
pub const ALIYUN_POD_IDX: &str = "ALIYUN_COM_GPU_MEM_IDX";
pub const ALIYUN_POD_MEM: &str = "ALIYUN_COM_GPU_MEM_POD";

#[derive(Debug, Clone, PartialEq)]
struct Device {
    id: String,
    memory: f64,
    cores: f64,
}

#[derive(Deserialize)]
struct HamiJsonDevice {
    id: String,
    #[serde(default)]
    devmem: f64,
    #[serde(default)]
    devcore: f64,
}

fn hami_devices(text: &str) -> Option<Vec<Device>> {
    let text = text.trim();
    if text.starts_with('[') {
        let list: Vec<HamiJsonDevice> = serde_json::from_str(text).ok()?;
        return Some(
            list.into_iter()
                .map(|d| Device {
                    id: d.id,
                    memory: d.devmem,
                    cores: d.devcore,
                })
                .collect(),
        );
    }
    let devices: Vec<Device> = text
        .split(':')
        .filter(|s| !s.trim().is_empty())
        .filter_map(|entry| {
            let f: Vec<&str> = entry.split(',').map(str::trim).collect();
            Some(Device {
                id: f.first()?.to_string(),
                memory: f.get(2)?.parse().ok()?,
                cores: f.get(3)?.parse().ok()?,
            })
        })
        .collect();
    (!devices.is_empty()).then_some(devices)
}

/// (device id, memory used, cores used) taken by one pod.
fn hami_allocations(text: &str) -> Vec<(String, f64, f64)> {
    text.split(';')
        .flat_map(|container| container.split(':'))
        .filter(|s| !s.trim().is_empty())
        .filter_map(|entry| {
            let f: Vec<&str> = entry.split(',').map(str::trim).collect();
            Some((
                f.first()?.to_string(),
                f.get(2)?.parse().ok()?,
                f.get(3)?.parse().ok()?,
            ))
        })
        .collect()
}

fn free_milli(used_fraction: f64) -> u32 {
    ((1.0 - used_fraction).clamp(0.0, 1.0) * 1000.0).round() as u32
}

/// What these schemes read of a pod: annotations (the reporter's records keep theirs).
pub trait Annotated {
    fn annotation(&self, key: &str) -> Option<&str>;
}

/// ... and of a node: an annotation and two capacities.
pub trait GpuShareNode: Annotated {
    /// `status.capacity[resource]` as written.
    fn capacity(&self, resource: &str) -> Option<&str>;
}

fn hami<P: Annotated>(node: &impl GpuShareNode, pods: &[&P]) -> Option<Vec<u32>> {
    let devices = hami_devices(node.annotation(HAMI_NODE_REGISTER)?)?;
    let mut used = vec![(0.0f64, 0.0f64); devices.len()];
    for pod in pods {
        let Some(text) = pod.annotation(HAMI_POD_ALLOCATED) else {
            continue;
        };
        for (id, memory, cores) in hami_allocations(text) {
            if let Some(i) = devices.iter().position(|d| d.id == id) {
                used[i].0 += memory;
                used[i].1 += cores;
            }
        }
    }
    Some(
        devices
            .iter()
            .zip(used)
            .map(|(d, (m, c))| {
                let mem = if d.memory > 0.0 { m / d.memory } else { 0.0 };
                let core = if d.cores > 0.0 { c / d.cores } else { 0.0 };
                free_milli(mem.max(core))
            })
            .collect(),
    )
}

fn aliyun<P: Annotated>(node: &impl GpuShareNode, pods: &[&P]) -> Option<Vec<u32>> {
    let total: f64 = node.capacity(ALIYUN_GPU_MEM)?.parse().ok()?;
    let count: usize = node.capacity(ALIYUN_GPU_COUNT)?.parse().ok()?;
    if count == 0 || total <= 0.0 {
        return None;
    }
    let per_gpu = total / count as f64;
    let mut used = vec![0.0f64; count];
    for pod in pods {
        let idx = pod
            .annotation(ALIYUN_POD_IDX)
            .and_then(|v| v.trim().parse::<usize>().ok());
        let mem = pod
            .annotation(ALIYUN_POD_MEM)
            .and_then(|v| v.trim().parse::<f64>().ok());
        if let (Some(i), Some(m)) = (idx, mem) {
            if i < count {
                used[i] += m;
            }
        }
    }
    Some(used.into_iter().map(|m| free_milli(m / per_gpu)).collect())
}

/// Free share per GPU of `node`, given the pods that hold resources on it.
pub fn gpu_free_milli<P: Annotated>(node: &impl GpuShareNode, pods: &[&P]) -> Option<Vec<u32>> {
    hami(node, pods).or_else(|| aliyun(node, pods))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeMap;

    /// An object as these schemes read it: annotations, capacity.
    #[derive(Default)]
    struct Obj {
        annotations: BTreeMap<String, String>,
        capacity: BTreeMap<String, String>,
    }

    impl Annotated for Obj {
        fn annotation(&self, key: &str) -> Option<&str> {
            self.annotations.get(key).map(String::as_str)
        }
    }

    impl GpuShareNode for Obj {
        fn capacity(&self, resource: &str) -> Option<&str> {
            self.capacity.get(resource).map(String::as_str)
        }
    }

    fn map(v: serde_json::Value) -> BTreeMap<String, String> {
        serde_json::from_value(v).unwrap()
    }

    fn node_with(annotations: serde_json::Value) -> Obj {
        Obj {
            annotations: map(annotations),
            ..Obj::default()
        }
    }

    fn pod_with(annotations: serde_json::Value) -> Obj {
        node_with(annotations)
    }

    const NO_PODS: [&Obj; 0] = [];

    #[test]
    fn hami_text_register_and_allocations() {
        let node = node_with(json!({
            HAMI_NODE_REGISTER: "GPU-aaa,10,32768,100,NVIDIA-Tesla V100,0,true:GPU-bbb,10,32768,100,NVIDIA-Tesla V100,0,true:"
        }));
        let a = pod_with(json!({HAMI_POD_ALLOCATED: "GPU-aaa,NVIDIA,8192,10:;"}));
        // Two containers: one on each GPU; on bbb the cores (60%) are scarcer than memory (25%).
        let b = pod_with(
            json!({HAMI_POD_ALLOCATED: "GPU-aaa,NVIDIA,8192,20:;GPU-bbb,NVIDIA,8192,60:;"}),
        );
        assert_eq!(gpu_free_milli(&node, &[&a, &b]), Some(vec![500, 400]));
        assert_eq!(gpu_free_milli(&node, &NO_PODS), Some(vec![1000, 1000]));
    }

    #[test]
    fn hami_json_register() {
        let node = node_with(json!({
            HAMI_NODE_REGISTER: r#"[{"id":"GPU-x","count":10,"devmem":16000,"devcore":100,"type":"T4","numa":0,"health":true}]"#
        }));
        let p = pod_with(json!({HAMI_POD_ALLOCATED: "GPU-x,NVIDIA,16000,0:;"}));
        assert_eq!(gpu_free_milli(&node, &[&p]), Some(vec![0]));
    }

    #[test]
    fn aliyun_gpu_share_index_annotations() {
        let node = Obj {
            capacity: map(json!({ALIYUN_GPU_MEM: "64", ALIYUN_GPU_COUNT: "4"})),
            ..Obj::default()
        };
        let p = pod_with(json!({ALIYUN_POD_IDX: "2", ALIYUN_POD_MEM: "4"}));
        let q = pod_with(json!({ALIYUN_POD_IDX: "2", ALIYUN_POD_MEM: "8"}));
        let out_of_range = pod_with(json!({ALIYUN_POD_IDX: "9", ALIYUN_POD_MEM: "8"}));
        assert_eq!(
            gpu_free_milli(&node, &[&p, &q, &out_of_range]),
            Some(vec![1000, 1000, 250, 1000])
        );
    }

    #[test]
    fn absent_or_garbled_means_none() {
        let node = node_with(json!({HAMI_NODE_REGISTER: "garbage"}));
        assert_eq!(gpu_free_milli(&node, &NO_PODS), None);
        assert_eq!(gpu_free_milli(&Obj::default(), &NO_PODS), None);
    }
}
