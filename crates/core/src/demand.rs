//! What a pod asks of a node, read once per request from the pod object and the config:
//! its resource request, GPU wishes, latency target, workload class and tenant.

use crate::cluster::validate_tenant;
use crate::config::{NodeKeys, PodKeys, TenantSource};
use crate::k8s::{pod_request, PodView, ResourceAmounts, ResourceError};

/// Workload class from the pod's `aco/workload-type` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadClass {
    LatencyCritical,
    StreamProcessing,
    Batch,
    /// No label (or a value we do not know): treated like batch, with no extra penalties.
    Unspecified,
}

impl WorkloadClass {
    fn from_label(value: Option<&str>) -> Self {
        match value.map(str::trim) {
            Some("latency-critical") => Self::LatencyCritical,
            Some("stream-processing") => Self::StreamProcessing,
            Some("batch") => Self::Batch,
            _ => Self::Unspecified,
        }
    }

    pub fn is_latency_critical(self) -> bool {
        self == Self::LatencyCritical
    }
}

/// Everything the filter and the heuristic need to know about the pod.
#[derive(Debug, Clone, PartialEq)]
pub struct PodDemand {
    pub key: String,
    pub tenant: String,
    pub workload: WorkloadClass,
    pub request: ResourceAmounts,
    /// GPU resources (from `NodeKeys::gpu_resources`) the pod requests, with amounts > 0.
    pub gpus: Vec<(String, i64)>,
    /// Allowed GPU models from the pod annotation, if any.
    pub allowed_gpu_models: Option<Vec<String>>,
    pub latency_target_us: Option<f64>,
    /// kube-scheduler scores preferences of the pod's own (preferred affinities, a topology
    /// spread it may break) and may bind it elsewhere than the extender answers
    /// (`PodSpec::has_scheduler_preferences`): such a pod is not assumed (`assumed.rs`).
    pub scheduler_preferences: bool,
}

/// Why a pod cannot be evaluated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DemandError {
    /// A malformed quantity (never sent by a real API server): the request is bad (HTTP 400).
    #[error(transparent)]
    Resource(#[from] ResourceError),
    /// An annotation or label the user wrote is unusable. The filter turns this into a reason on
    /// every node (the pod stays Pending with the message in its events) rather than an error
    /// that an `ignorable` extender would swallow.
    #[error("pod {field} {value:?}: {reason}")]
    Annotation {
        field: String,
        value: String,
        reason: String,
    },
    /// No tenant can be derived (e.g. `TENANT_SOURCE=label` and the label is missing).
    #[error("pod has no tenant: {0}")]
    Tenant(String),
}

impl PodDemand {
    /// Reads the pod's labels and annotations by `pod_keys` and its GPU requests by `node_keys`'s
    /// GPU resource names.
    pub fn from_pod(
        pod: &PodView,
        pod_keys: &PodKeys,
        node_keys: &NodeKeys,
    ) -> Result<Self, DemandError> {
        let request = pod_request(pod)?;
        let meta = &pod.metadata;
        let tenant = tenant_of(pod, pod_keys)?;
        let gpus = node_keys
            .gpu_resources
            .iter()
            .filter_map(|name| {
                let amount = request.get(name);
                (amount > 0).then(|| (name.clone(), amount))
            })
            .collect();
        let allowed_gpu_models = meta
            .annotations
            .get(&pod_keys.gpu_models_annotation)
            .map(|v| {
                v.split(['|', ','])
                    .map(str::trim)
                    .filter(|m| !m.is_empty())
                    .map(String::from)
                    .collect::<Vec<_>>()
            });
        if let Some(models) = &allowed_gpu_models {
            if models.is_empty() {
                return Err(DemandError::Annotation {
                    field: format!("annotation {}", pod_keys.gpu_models_annotation),
                    value: meta.annotations[&pod_keys.gpu_models_annotation].clone(),
                    reason: "lists no GPU model (expected e.g. V100M16|V100M32)".into(),
                });
            }
        }
        let latency_target_us = pod_keys
            .latency_target_annotations
            .iter()
            .find_map(|key| meta.annotations.get(key).map(|v| (key, v)))
            .map(|(key, v)| match v.trim().parse::<f64>() {
                Ok(us) if us.is_finite() && us > 0.0 => Ok(us),
                _ => Err(DemandError::Annotation {
                    field: format!("annotation {key}"),
                    value: v.clone(),
                    reason: "expected a positive number of microseconds".into(),
                }),
            })
            .transpose()?;
        Ok(PodDemand {
            key: pod.decision_key(),
            tenant,
            workload: WorkloadClass::from_label(
                meta.labels
                    .get(&pod_keys.workload_label)
                    .map(String::as_str),
            ),
            request,
            gpus,
            allowed_gpu_models,
            latency_target_us,
            scheduler_preferences: pod.spec.has_scheduler_preferences(),
        })
    }

    pub fn wants_gpu(&self) -> bool {
        !self.gpus.is_empty()
    }
}

/// The tenant a pod belongs to, by `TENANT_SOURCE`. Public so that the in-cluster reporter names
/// tenants by exactly the Worker's rule.
pub fn tenant_of(pod: &PodView, keys: &PodKeys) -> Result<String, DemandError> {
    let label = pod
        .metadata
        .labels
        .get(&keys.tenant_label)
        .map(|s| s.trim())
        .filter(|s| !s.is_empty());
    let namespace = Some(pod.metadata.namespace.as_str()).filter(|s| !s.is_empty());
    let tenant = match keys.tenant_source {
        TenantSource::LabelThenNamespace => label.or(namespace).unwrap_or("default"),
        TenantSource::Namespace => namespace.unwrap_or("default"),
        TenantSource::Label => label.ok_or_else(|| {
            DemandError::Tenant(format!(
                "label {} is required (TENANT_SOURCE=label)",
                keys.tenant_label
            ))
        })?,
    };
    validate_tenant(tenant).map_err(|reason| DemandError::Annotation {
        field: format!("label {}", keys.tenant_label),
        value: tenant.to_string(),
        reason,
    })?;
    Ok(tenant.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demand(json: &str) -> Result<PodDemand, DemandError> {
        PodDemand::from_pod(
            &serde_json::from_str(json).unwrap(),
            &PodKeys::default(),
            &NodeKeys::default(),
        )
    }

    #[test]
    fn reads_tenant_workload_gpus_models_and_latency_target() {
        let d = demand(r#"{"metadata":{"name":"p","namespace":"ns","uid":"u1",
            "labels":{"scheduling.aco/tenant-id":"research","aco/workload-type":"latency-critical"},
            "annotations":{"scheduling.aco/gpu-models":"V100M16|V100M32","scheduling.aco/latency-target-us":"150"}},
            "spec":{"containers":[{"resources":{"limits":{"nvidia.com/gpu":"2"},"requests":{"cpu":"1"}}}]}}"#)
        .unwrap();
        assert_eq!(d.key, "u1");
        assert_eq!(d.tenant, "research");
        assert_eq!(d.workload, WorkloadClass::LatencyCritical);
        assert_eq!(d.gpus, vec![("nvidia.com/gpu".to_string(), 2)]);
        assert_eq!(
            d.allowed_gpu_models,
            Some(vec!["V100M16".into(), "V100M32".into()])
        );
        assert_eq!(d.latency_target_us, Some(150.0));
    }

    #[test]
    fn tenant_falls_back_to_namespace_and_seed_annotation_is_read() {
        let d = demand(r#"{"metadata":{"name":"p","namespace":"team-a","annotations":{"latency-target-us":"10"}}}"#).unwrap();
        assert_eq!(d.tenant, "team-a");
        assert_eq!(d.key, "team-a/p");
        assert_eq!(d.latency_target_us, Some(10.0));
        assert_eq!(d.workload, WorkloadClass::Unspecified);
        assert!(!d.wants_gpu());
    }

    #[test]
    fn unusable_annotations_are_reported_with_their_name() {
        let e =
            demand(r#"{"metadata":{"annotations":{"scheduling.aco/latency-target-us":"fast"}}}"#)
                .unwrap_err();
        assert!(
            e.to_string().contains("scheduling.aco/latency-target-us")
                && e.to_string().contains("fast")
        );
        let e = demand(r#"{"metadata":{"annotations":{"scheduling.aco/gpu-models":" | "}}}"#)
            .unwrap_err();
        assert!(matches!(e, DemandError::Annotation { .. }));
        let e =
            demand(r#"{"metadata":{"labels":{"scheduling.aco/tenant-id":"../etc"}}}"#).unwrap_err();
        assert!(e.to_string().contains("tenant"));
    }

    #[test]
    fn label_only_tenancy_requires_the_label() {
        let pod_keys = PodKeys {
            tenant_source: TenantSource::Label,
            ..PodKeys::default()
        };
        let pod: PodView = serde_json::from_str(r#"{"metadata":{"namespace":"ns"}}"#).unwrap();
        assert!(matches!(
            PodDemand::from_pod(&pod, &pod_keys, &NodeKeys::default()),
            Err(DemandError::Tenant(_))
        ));
    }
}
