//! Resource arithmetic in integers, as Kubernetes does it: milli-CPU for `cpu`, whole units
//! (bytes, devices) for everything else, each rounded up.

use std::collections::BTreeMap;

use super::{PodView, RawResourceList};
use crate::quantity::{self, QuantityError};

/// Amounts per resource name: `cpu` in milli-CPU, every other resource in whole units.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceAmounts(pub BTreeMap<String, i64>);

impl ResourceAmounts {
    pub fn get(&self, name: &str) -> i64 {
        self.0.get(name).copied().unwrap_or(0)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    fn add(&mut self, other: &ResourceAmounts) {
        for (name, amount) in &other.0 {
            let slot = self.0.entry(name.clone()).or_insert(0);
            *slot = slot.saturating_add(*amount);
        }
    }

    fn max_with(&mut self, other: &ResourceAmounts) {
        for (name, amount) in &other.0 {
            let slot = self.0.entry(name.clone()).or_insert(0);
            *slot = (*slot).max(*amount);
        }
    }
}

/// A quantity that does not parse, with the JSON path of the field that carried it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {source}")]
pub struct ResourceError {
    pub field: String,
    #[source]
    pub source: QuantityError,
}

/// Parses a `ResourceList` into integer amounts (`cpu` in milli, the rest in units, rounded up).
/// `field` is the JSON path used in error messages.
pub fn parse_resource_list(
    list: &RawResourceList,
    field: &str,
) -> Result<ResourceAmounts, ResourceError> {
    let mut out = ResourceAmounts::default();
    for (name, text) in list {
        let parsed = if name == "cpu" {
            quantity::parse_milli(&text.0)
        } else {
            quantity::parse_value(&text.0)
        };
        let amount = parsed.map_err(|source| ResourceError {
            field: format!("{field}.{name}"),
            source,
        })?;
        out.0.insert(name.clone(), amount);
    }
    Ok(out)
}

/// What one container asks for: its requests, with any resource that has only a limit counted
/// at the limit (the API server defaults requests to limits, and extended resources such as
/// `nvidia.com/gpu` are commonly written in `limits` only).
fn container_request(
    container: &super::Container,
    field: &str,
) -> Result<ResourceAmounts, ResourceError> {
    let mut amounts = parse_resource_list(
        &container.resources.requests,
        &format!("{field}.resources.requests"),
    )?;
    let limits = parse_resource_list(
        &container.resources.limits,
        &format!("{field}.resources.limits"),
    )?;
    for (name, limit) in limits.0 {
        amounts.0.entry(name).or_insert(limit);
    }
    Ok(amounts)
}

/// The pod's effective request, as kube-scheduler computes it (`resource.PodRequests`):
/// `max(sum(containers) + sum(sidecars), max over init containers of (init + sidecars started
/// before it)) + overhead`. Sidecars are init containers with `restartPolicy: Always`.
pub fn pod_request(pod: &PodView) -> Result<ResourceAmounts, ResourceError> {
    let mut running = ResourceAmounts::default();
    for (i, c) in pod.spec.containers.iter().enumerate() {
        running.add(&container_request(c, &format!("Pod.spec.containers[{i}]"))?);
    }
    let mut sidecars = ResourceAmounts::default();
    let mut init_peak = ResourceAmounts::default();
    for (i, c) in pod.spec.init_containers.iter().enumerate() {
        let req = container_request(c, &format!("Pod.spec.initContainers[{i}]"))?;
        if c.restart_policy == "Always" {
            sidecars.add(&req);
            init_peak.max_with(&sidecars);
        } else {
            let mut during = req;
            during.add(&sidecars);
            init_peak.max_with(&during);
        }
    }
    running.add(&sidecars);
    running.max_with(&init_peak);
    running.add(&parse_resource_list(
        &pod.spec.overhead,
        "Pod.spec.overhead",
    )?);
    Ok(running)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(json: &str) -> PodView {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn sums_containers_and_takes_limits_when_requests_are_missing() {
        let p = pod(r#"{"spec":{"containers":[
            {"resources":{"requests":{"cpu":"500m","memory":"1Gi"}}},
            {"resources":{"requests":{"cpu":"1.5"},"limits":{"cpu":"2","memory":"512Mi","nvidia.com/gpu":"1"}}}
        ]}}"#);
        let r = pod_request(&p).unwrap();
        assert_eq!(r.get("cpu"), 2000);
        assert_eq!(r.get("memory"), (1 << 30) + (512 << 20));
        assert_eq!(r.get("nvidia.com/gpu"), 1);
    }

    #[test]
    fn init_containers_take_the_max_and_overhead_is_added() {
        let p = pod(r#"{"spec":{
            "containers":[{"resources":{"requests":{"cpu":"1","memory":"1Gi"}}}],
            "initContainers":[{"resources":{"requests":{"cpu":"3","memory":"100Mi"}}}],
            "overhead":{"cpu":"250m","memory":"10Mi"}}}"#);
        let r = pod_request(&p).unwrap();
        assert_eq!(r.get("cpu"), 3250);
        assert_eq!(r.get("memory"), (1 << 30) + (10 << 20));
    }

    #[test]
    fn sidecars_run_beside_the_app_and_later_init_containers() {
        let p = pod(r#"{"spec":{
            "containers":[{"resources":{"requests":{"cpu":"1"}}}],
            "initContainers":[
              {"restartPolicy":"Always","resources":{"requests":{"cpu":"500m"}}},
              {"resources":{"requests":{"cpu":"2"}}}
            ]}}"#);
        // app 1 + sidecar 0.5 = 1.5 running; init 2 + sidecar 0.5 = 2.5 at init time.
        assert_eq!(pod_request(&p).unwrap().get("cpu"), 2500);
    }

    #[test]
    fn bad_quantity_names_the_field() {
        let p = pod(r#"{"spec":{"containers":[{"resources":{"requests":{"cpu":"lots"}}}]}}"#);
        let err = pod_request(&p).unwrap_err();
        assert_eq!(err.field, "Pod.spec.containers[0].resources.requests.cpu");
        assert!(err.to_string().contains("lots"));
    }

    #[test]
    fn null_containers_and_numeric_quantities_are_accepted() {
        let p = pod(r#"{"spec":{"containers":null}}"#);
        assert_eq!(pod_request(&p).unwrap(), ResourceAmounts::default());
        let p =
            pod(r#"{"spec":{"containers":[{"resources":{"requests":{"cpu":2,"memory":1024}}}]}}"#);
        let r = pod_request(&p).unwrap();
        assert_eq!((r.get("cpu"), r.get("memory")), (2000, 1024));
    }
}
