use std::collections::BTreeMap;

use serde::Deserialize;

use super::{null_as_default, unique_keys, RawResourceList};

/// The parts of a `v1.Pod` the extender reads.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct PodView {
    #[serde(default, deserialize_with = "null_as_default")]
    pub metadata: PodMeta,
    #[serde(default, deserialize_with = "null_as_default")]
    pub spec: PodSpec,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct PodMeta {
    #[serde(default, deserialize_with = "null_as_default")]
    pub name: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub namespace: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub uid: String,
    #[serde(default, deserialize_with = "unique_keys")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "unique_keys")]
    pub annotations: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSpec {
    #[serde(default, deserialize_with = "null_as_default")]
    pub containers: Vec<Container>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub init_containers: Vec<Container>,
    #[serde(default, deserialize_with = "unique_keys")]
    pub overhead: RawResourceList,
    #[serde(default, deserialize_with = "null_as_default")]
    pub affinity: Affinity,
    #[serde(default, deserialize_with = "null_as_default")]
    pub topology_spread_constraints: Vec<TopologySpreadConstraint>,
}

/// Of `spec.affinity`, only whether kube-scheduler has preferences of its own to score: the
/// `preferredDuringSchedulingIgnoredDuringExecution` terms (their content is its business).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Affinity {
    #[serde(default, deserialize_with = "null_as_default")]
    pub node_affinity: PreferredTerms,
    #[serde(default, deserialize_with = "null_as_default")]
    pub pod_affinity: PreferredTerms,
    #[serde(default, deserialize_with = "null_as_default")]
    pub pod_anti_affinity: PreferredTerms,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct PreferredTerms {
    #[serde(
        default,
        rename = "preferredDuringSchedulingIgnoredDuringExecution",
        deserialize_with = "null_as_default"
    )]
    pub preferred: Vec<serde::de::IgnoredAny>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopologySpreadConstraint {
    #[serde(default, deserialize_with = "null_as_default")]
    pub when_unsatisfiable: String,
}

impl PodSpec {
    /// kube-scheduler scores preferences of this pod's own beside the extender's answer —
    /// preferred node or pod (anti-)affinity, a topology spread it may break
    /// (`ScheduleAnyway`) — and may bind it elsewhere.
    pub fn has_scheduler_preferences(&self) -> bool {
        let a = &self.affinity;
        !(a.node_affinity.preferred.is_empty()
            && a.pod_affinity.preferred.is_empty()
            && a.pod_anti_affinity.preferred.is_empty())
            || self
                .topology_spread_constraints
                .iter()
                .any(|c| c.when_unsatisfiable == "ScheduleAnyway")
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Container {
    #[serde(default, deserialize_with = "null_as_default")]
    pub resources: ResourceRequirements,
    /// `Always` on an init container makes it a sidecar that keeps running beside the app.
    #[serde(default, deserialize_with = "null_as_default")]
    pub restart_policy: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct ResourceRequirements {
    #[serde(default, deserialize_with = "unique_keys")]
    pub requests: RawResourceList,
    #[serde(default, deserialize_with = "unique_keys")]
    pub limits: RawResourceList,
}

impl PodView {
    /// Key under which the colony remembers its decision for this pod: the UID when the pod has
    /// one (always, for pods from the API server), else `namespace/name`.
    pub fn decision_key(&self) -> String {
        if self.metadata.uid.is_empty() {
            format!("{}/{}", self.metadata.namespace, self.metadata.name)
        } else {
            self.metadata.uid.clone()
        }
    }
}
