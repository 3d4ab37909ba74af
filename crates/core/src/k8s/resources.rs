//! Resource arithmetic in integers, as Kubernetes does it: milli-CPU for `cpu`, whole units
//! (bytes, devices) for everything else, each rounded up.

use std::collections::BTreeMap;

use super::{PodView, RawResourceList};
use crate::quantity::{Quantity, QuantityError};

/// Amounts per resource name: `cpu` in milli-CPU, every other resource in whole units.
/// Stored as the bare map (`{"cpu":4000}`), so a facts record keeps its JSON shape.
///
/// Held as a list sorted by name rather than a `BTreeMap`: a node or pod names a handful of
/// resources, and [`ResourceAmounts::get`] runs for every candidate of every decision — a scan
/// that compares lengths first rejects most names without comparing their bytes, where the
/// tree's ordered search compares bytes at every step.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceAmounts(Vec<(String, i64)>);

impl ResourceAmounts {
    pub fn get(&self, name: &str) -> i64 {
        self.find(name).map_or(0, |i| self.0[i].1)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.find(name).is_some()
    }

    /// The amount of `name`, to change in place, if it is listed.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut i64> {
        self.find(name).map(|i| &mut self.0[i].1)
    }

    /// Sets `name` to `amount`, replacing any amount it had.
    pub fn insert(&mut self, name: &str, amount: i64) {
        *self.slot(name) = amount;
    }

    /// Adds `amount` to `name` (from 0 when it is not listed), saturating.
    pub fn add_to(&mut self, name: &str, amount: i64) {
        let slot = self.slot(name);
        *slot = slot.saturating_add(amount);
    }

    /// Every listed resource and its amount, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, i64)> + '_ {
        self.0.iter().map(|(name, amount)| (name.as_str(), *amount))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Some resource above 0: of a node's requested amounts, a node that holds pods' requests.
    pub fn any_positive(&self) -> bool {
        self.0.iter().any(|(_, v)| *v > 0)
    }

    fn find(&self, name: &str) -> Option<usize> {
        self.0.iter().position(|(n, _)| n == name)
    }

    /// The amount of `name`, inserted at 0 in name order when it is not listed (the only case
    /// that allocates its name).
    fn slot(&mut self, name: &str) -> &mut i64 {
        let i = match self.0.binary_search_by(|(n, _)| n.as_str().cmp(name)) {
            Ok(i) => i,
            Err(i) => {
                self.0.insert(i, (name.to_owned(), 0));
                i
            }
        };
        &mut self.0[i].1
    }

    fn add(&mut self, other: &ResourceAmounts) {
        for (name, amount) in &other.0 {
            self.add_to(name, *amount);
        }
    }

    fn max_with(&mut self, other: &ResourceAmounts) {
        for (name, amount) in &other.0 {
            let slot = self.slot(name);
            *slot = (*slot).max(*amount);
        }
    }
}

/// Later amounts of a name replace earlier ones, as a map's insert does.
impl<S: AsRef<str>> FromIterator<(S, i64)> for ResourceAmounts {
    fn from_iter<I: IntoIterator<Item = (S, i64)>>(iter: I) -> Self {
        let mut out = ResourceAmounts::default();
        for (name, amount) in iter {
            out.insert(name.as_ref(), amount);
        }
        out
    }
}

impl<const N: usize> From<[(&str, i64); N]> for ResourceAmounts {
    fn from(entries: [(&str, i64); N]) -> Self {
        entries.into_iter().collect()
    }
}

impl serde::Serialize for ResourceAmounts {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(name, amount)| (name, amount)))
    }
}

impl<'de> serde::Deserialize<'de> for ResourceAmounts {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = BTreeMap::<String, i64>::deserialize(deserializer)?;
        // Already in name order: no search per insert.
        Ok(ResourceAmounts(map.into_iter().collect()))
    }
}

/// A quantity that cannot be a resource amount, with the JSON path of the field that carried it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {source}")]
pub struct ResourceError {
    pub field: String,
    #[source]
    pub source: ResourceProblem,
}

/// Why a quantity is refused as a request, limit, overhead, allocatable or requested amount.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResourceProblem {
    #[error(transparent)]
    Quantity(#[from] QuantityError),
    /// The API server refuses negative requests, limits and capacities
    /// (`ValidateNonnegativeQuantity`); one would let a pod or a node hide real demand.
    #[error("{input:?} is negative; resource amounts are at least 0")]
    Negative { input: String },
    /// Larger than [`MAX_RESOURCE_AMOUNT`] in its unit (milli-CPU, bytes, devices): such an
    /// amount would saturate sums over a node's pods instead of adding up.
    #[error("{input:?} is out of range: at most {MAX_RESOURCE_AMOUNT} in its unit (milli-CPU for cpu, else whole units)")]
    OutOfRange { input: String },
}

/// The largest amount stored or summed: 2^53 − 1 (9.0e15 milli-CPU = 9 trillion CPUs, 8 PiB of
/// memory), so that 10,000 pods' worth of them still add up exactly in an `i64` and every
/// amount is exact as a JSON number in any reader.
pub const MAX_RESOURCE_AMOUNT: i64 = (1 << 53) - 1;

/// Parses a `ResourceList` into integer amounts (`cpu` in milli, the rest in units, rounded up).
/// `field` is the JSON path used in error messages.
pub fn parse_resource_list(
    list: &RawResourceList,
    field: &str,
) -> Result<ResourceAmounts, ResourceError> {
    let mut out = ResourceAmounts::default();
    for (name, text) in list {
        let fail = |source: ResourceProblem| ResourceError {
            field: format!("{field}.{name}"),
            source,
        };
        let q: Quantity = text.0.parse().map_err(|e| fail(ResourceProblem::from(e)))?;
        if q.is_negative() {
            return Err(fail(ResourceProblem::Negative {
                input: text.0.clone(),
            }));
        }
        let amount = if name == "cpu" {
            q.milli_value_ceil()
        } else {
            q.value_ceil()
        };
        if amount > MAX_RESOURCE_AMOUNT {
            return Err(fail(ResourceProblem::OutOfRange {
                input: text.0.clone(),
            }));
        }
        out.insert(name.as_str(), amount);
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
    for (name, limit) in limits.iter() {
        if !amounts.contains(name) {
            amounts.insert(name, limit);
        }
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
    fn a_negative_container_request_names_its_field() {
        // 100 + (−99) CPUs would sum to 1 and pass a 4-CPU node.
        let p = pod(r#"{"spec":{"containers":[
            {"resources":{"requests":{"cpu":"100"}}},
            {"resources":{"requests":{"cpu":"-99"}}}]}}"#);
        let err = pod_request(&p).unwrap_err();
        assert_eq!(err.field, "Pod.spec.containers[1].resources.requests.cpu");
        assert!(
            matches!(err.source, ResourceProblem::Negative { .. }),
            "{err}"
        );
        let p = pod(r#"{"spec":{"overhead":{"memory":"-1"}}}"#);
        assert_eq!(
            pod_request(&p).unwrap_err().field,
            "Pod.spec.overhead.memory"
        );
    }

    #[test]
    fn amounts_beyond_the_range_are_refused_and_the_largest_is_kept() {
        let list = |k: &str, v: &str| -> RawResourceList {
            [(k.to_string(), super::super::QuantityText(v.into()))].into()
        };
        // 9e15 bytes fits; 1e16 bytes, 1e13 CPUs (1e16 milli) and 9Ei do not.
        assert_eq!(
            parse_resource_list(&list("memory", "9e15"), "a")
                .unwrap()
                .get("memory"),
            9_000_000_000_000_000
        );
        for (k, v) in [
            ("memory", "1e16"),
            ("cpu", "1e13"),
            ("ephemeral-storage", "9Ei"),
        ] {
            let err = parse_resource_list(&list(k, v), "nodes[3].requested").unwrap_err();
            assert_eq!(err.field, format!("nodes[3].requested.{k}"));
            assert!(
                matches!(err.source, ResourceProblem::OutOfRange { .. }),
                "{err}"
            );
        }
        assert!(
            parse_resource_list(&list("cpu", "-0"), "a").is_ok(),
            "-0 is zero"
        );
    }

    #[test]
    fn a_repeated_key_in_a_map_is_refused_with_its_path() {
        let text = r#"{"spec":{"containers":[{"resources":{"requests":{"cpu":"1","cpu":"64"}}}]}}"#;
        let (path, message) = super::super::parse_json_at::<PodView>(text).unwrap_err();
        assert_eq!(
            path.as_deref(),
            Some("spec.containers[0].resources.requests")
        );
        assert!(message.contains(r#"duplicate key "cpu""#), "{message}");
        let text = r#"{"metadata":{"labels":{"a":"1","b":"2","a":"3"}}}"#;
        let (path, _) = super::super::parse_json_at::<PodView>(text).unwrap_err();
        assert_eq!(path.as_deref(), Some("metadata.labels"));
        // Distinct keys and null maps still read.
        let ok = r#"{"metadata":{"labels":null},"spec":{"containers":[{"resources":{"requests":{"cpu":"1","memory":"1"}}}]}}"#;
        assert!(super::super::parse_json_at::<PodView>(ok).is_ok());
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
