//! A pod's hard constraints as *required node affinity*, so that kube-scheduler enforces them
//! itself and the extender is asked only to score (one round trip per pod). The rules are the
//! Worker's filter rules (`aco_core::filter`), read from the same `PodDemand`:
//!
//! - a GPU request needs a node with a GPU-type label (`GPU_TYPE_LABELS`): one term per key
//!   with `Exists` (terms are ORed);
//! - allowed GPU models (`scheduling.aco/gpu-models`) need the *first present* GPU-type label to
//!   hold one of them, compared ignoring ASCII case: for key `i` a term `k₀..kᵢ₋₁ DoesNotExist,
//!   kᵢ In models`, the models spelled as written, in lower and upper case and as every node
//!   of the cluster spells them (kube-scheduler compares exactly, the Worker ignores case);
//! - a latency target needs the first present latency label to be a whole number `≤ target`:
//!   `Lt ⌊target⌋ + 1` (`aco_core::filter::affinity_lt_bound`), chained the same way; a node
//!   without the label matches no `Lt`, as the Worker rejects a node of unknown latency.
//!
//! GPU and latency alternatives multiply (each GPU term ANDed with each latency term). A pod's
//! own required terms must all still hold — they are ORed, so ours are ANDed into each of them,
//! never added beside them — and a term that already implies one of ours is left alone, which
//! makes the rewrite idempotent (the webhook may be invoked again, `reinvocationPolicy`).

use std::collections::BTreeSet;

use aco_core::demand::PodDemand;
use aco_core::filter::affinity_lt_bound;
use k8s_openapi::api::core::v1::{NodeSelector, NodeSelectorRequirement, NodeSelectorTerm};

/// The label keys the constraints read, in the order the Worker reads them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelKeys {
    /// `GPU_TYPE_LABELS`.
    pub gpu_models: Vec<String>,
    /// The reporter's latency label (its `latencyUs` fact, which wins in the Worker) first,
    /// then `LATENCY_LABELS`; no key twice.
    pub latency: Vec<String>,
}

impl LabelKeys {
    pub fn new(gpu_type_labels: &[String], fact_label: &str, latency_labels: &[String]) -> Self {
        let mut latency = vec![fact_label.to_string()];
        for key in latency_labels {
            if !latency.contains(key) {
                latency.push(key.clone());
            }
        }
        LabelKeys {
            gpu_models: gpu_type_labels.to_vec(),
            latency,
        }
    }
}

/// Requirements ANDed: one way for a node to meet the pod's constraints.
pub type Alternative = Vec<NodeSelectorRequirement>;

/// What a pod requires of its node, as affinity, and in words (for the pod's annotation).
#[derive(Debug, Clone, PartialEq)]
pub struct Constraints {
    /// ORed; never empty.
    pub alternatives: Vec<Alternative>,
    /// e.g. `GPU model V100M16|V100M32 (first of aco/gpu-type, …); latency ≤ 200 µs (…)`.
    pub summary: String,
}

/// The pod's constraints, `None` when it has none (no GPU request, no latency target). `Err`
/// when no node can ever meet them — allowed models of which none can be a label value — with
/// the message for the user.
pub fn constraints(
    demand: &PodDemand,
    keys: &LabelKeys,
    known_models: &BTreeSet<String>,
) -> Result<Option<Constraints>, String> {
    let mut parts: Vec<(Vec<Alternative>, String)> = Vec::new();
    if demand.wants_gpu() {
        match &demand.allowed_gpu_models {
            Some(allowed) => {
                let spellings = spellings(allowed, known_models);
                if spellings.is_empty() {
                    return Err(format!(
                        "no allowed GPU model ({}) can be a node label value (at most 63 of \
                         [A-Za-z0-9-_.], alphanumeric at both ends), so no node can ever carry one",
                        allowed.join("|")
                    ));
                }
                parts.push((
                    first_present(&keys.gpu_models, |key| {
                        requirement(key, "In", spellings.clone())
                    }),
                    format!(
                        "GPU model {} (first of {} present)",
                        allowed.join("|"),
                        keys.gpu_models.join(", ")
                    ),
                ));
            }
            None => parts.push((
                keys.gpu_models
                    .iter()
                    .map(|key| vec![requirement(key, "Exists", vec![])])
                    .collect(),
                format!("a GPU node (one of {} present)", keys.gpu_models.join(", ")),
            )),
        }
    }
    if let Some(target) = demand.latency_target_us {
        let bound = affinity_lt_bound(target).to_string();
        parts.push((
            first_present(&keys.latency, |key| {
                requirement(key, "Lt", vec![bound.clone()])
            }),
            format!(
                "latency ≤ {target} µs (first of {} present, a whole number of µs below {bound})",
                keys.latency.join(", ")
            ),
        ));
    }
    if parts.is_empty() {
        return Ok(None);
    }
    let mut alternatives: Vec<Alternative> = vec![vec![]];
    for (choices, _) in &parts {
        alternatives = alternatives
            .iter()
            .flat_map(|so_far| {
                choices.iter().map(move |choice| {
                    let mut both = so_far.clone();
                    both.extend(choice.iter().cloned());
                    both
                })
            })
            .collect();
    }
    let summary = parts
        .into_iter()
        .map(|(_, words)| words)
        .collect::<Vec<_>>()
        .join("; ");
    Ok(Some(Constraints {
        alternatives,
        summary,
    }))
}

/// The pod's required node selector with `alternatives` ANDed into each of its terms, or `None`
/// when every term already implies one of them (nothing to change). A pod without required
/// terms gets the alternatives as its terms.
pub fn require(
    existing: Option<&NodeSelector>,
    alternatives: &[Alternative],
) -> Option<NodeSelector> {
    let terms = existing
        .map(|s| s.node_selector_terms.as_slice())
        .unwrap_or_default();
    if terms.is_empty() {
        return Some(NodeSelector {
            node_selector_terms: alternatives
                .iter()
                .map(|alt| NodeSelectorTerm {
                    match_expressions: Some(alt.clone()),
                    match_fields: None,
                })
                .collect(),
        });
    }
    let holds = |term: &NodeSelectorTerm| alternatives.iter().any(|alt| implies(term, alt));
    if terms.iter().all(holds) {
        return None;
    }
    let mut out = Vec::new();
    for term in terms {
        if holds(term) {
            out.push(term.clone());
            continue;
        }
        for alt in alternatives {
            let mut expressions = term.match_expressions.clone().unwrap_or_default();
            expressions.extend(alt.iter().cloned());
            out.push(NodeSelectorTerm {
                match_expressions: Some(expressions),
                match_fields: term.match_fields.clone(),
            });
        }
    }
    Some(NodeSelector {
        node_selector_terms: out,
    })
}

/// Whether every node that `term` admits meets every requirement of `alt` (judged requirement
/// by requirement, soundly: `false` may be a missed implication, never a wrong one).
fn implies(term: &NodeSelectorTerm, alt: &Alternative) -> bool {
    let have = term.match_expressions.as_deref().unwrap_or_default();
    alt.iter()
        .all(|want| have.iter().any(|h| requirement_implies(h, want)))
}

fn requirement_implies(have: &NodeSelectorRequirement, want: &NodeSelectorRequirement) -> bool {
    if have.key != want.key {
        return false;
    }
    let values = |r: &NodeSelectorRequirement| r.values.clone().unwrap_or_default();
    let number = |r: &NodeSelectorRequirement| -> Option<i64> {
        match values(r).as_slice() {
            [one] => one.parse().ok(),
            _ => None,
        }
    };
    match (have.operator.as_str(), want.operator.as_str()) {
        // A node matching In, Gt or Lt carries the label.
        ("Exists" | "In" | "Gt" | "Lt", "Exists") => {
            have.operator != "In" || !values(have).is_empty()
        }
        ("DoesNotExist", "DoesNotExist") => true,
        ("In", "In") => {
            let wanted = values(want);
            let had = values(have);
            !had.is_empty() && had.iter().all(|v| wanted.contains(v))
        }
        ("Lt", "Lt") => matches!((number(have), number(want)), (Some(h), Some(w)) if h <= w),
        ("Gt", "Gt") => matches!((number(have), number(want)), (Some(h), Some(w)) if h >= w),
        _ => false,
    }
}

/// For each key, a term requiring the keys before it to be absent and `last(key)` of it: the
/// first present key decides, as the Worker reads labels.
fn first_present(
    keys: &[String],
    last: impl Fn(&str) -> NodeSelectorRequirement,
) -> Vec<Alternative> {
    (0..keys.len())
        .map(|i| {
            let mut alt: Alternative = keys[..i]
                .iter()
                .map(|k| requirement(k, "DoesNotExist", vec![]))
                .collect();
            alt.push(last(&keys[i]));
            alt
        })
        .collect()
}

fn requirement(key: &str, operator: &str, values: Vec<String>) -> NodeSelectorRequirement {
    NodeSelectorRequirement {
        key: key.to_string(),
        operator: operator.to_string(),
        values: (!values.is_empty()).then_some(values),
    }
}

/// Every spelling of the allowed models a node label may have that the Worker would accept: as
/// written, lower and upper case, and the cluster's own spellings equal to one ignoring ASCII
/// case; only valid label values (the API server refuses others in required node affinity, and
/// no node can carry them). Sorted, no repeats.
fn spellings(allowed: &[String], known_models: &BTreeSet<String>) -> Vec<String> {
    let mut out = BTreeSet::new();
    for model in allowed {
        out.insert(model.clone());
        out.insert(model.to_ascii_lowercase());
        out.insert(model.to_ascii_uppercase());
        out.extend(
            known_models
                .iter()
                .filter(|known| known.eq_ignore_ascii_case(model))
                .cloned(),
        );
    }
    out.into_iter().filter(|v| is_label_value(v)).collect()
}

/// Kubernetes' label value rule: at most 63 characters of `[A-Za-z0-9-_.]`, starting and
/// ending with an alphanumeric (empty is valid).
pub fn is_label_value(v: &str) -> bool {
    let bytes = v.as_bytes();
    let alnum = |b: &u8| b.is_ascii_alphanumeric();
    bytes.len() <= 63
        && bytes
            .iter()
            .all(|b| alnum(b) || matches!(b, b'-' | b'_' | b'.'))
        && bytes.first().is_none_or(alnum)
        && bytes.last().is_none_or(alnum)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use aco_core::config::Config;
    use aco_core::k8s::PodView;
    use serde_json::json;

    use super::*;

    fn keys() -> LabelKeys {
        let c = Config::default();
        LabelKeys::new(
            &c.node_keys.gpu_type_labels,
            "aco/latency-us",
            &c.node_keys.latency_labels,
        )
    }

    fn demand(annotations: serde_json::Value, gpus: u32) -> PodDemand {
        let mut pod = json!({"metadata": {"name": "p", "namespace": "ns", "annotations": annotations},
                             "spec": {"containers": [{"name": "c"}]}});
        if gpus > 0 {
            pod["spec"]["containers"][0]["resources"] =
                json!({"limits": {"nvidia.com/gpu": gpus.to_string()}});
        }
        let view: PodView = serde_json::from_value(pod).unwrap();
        PodDemand::from_pod(&view, &Default::default(), &Default::default()).unwrap()
    }

    fn req(key: &str, op: &str, values: &[&str]) -> NodeSelectorRequirement {
        requirement(key, op, values.iter().map(|s| s.to_string()).collect())
    }

    /// kube-scheduler's matching of one requirement (`k8s.io/apimachinery` labels selector):
    /// In/NotIn compare exactly, Gt/Lt parse the node's value as a base-10 int64 and fail
    /// when it does not parse or is missing.
    fn matches_requirement(r: &NodeSelectorRequirement, labels: &BTreeMap<String, String>) -> bool {
        let values = r.values.clone().unwrap_or_default();
        let got = labels.get(&r.key);
        match r.operator.as_str() {
            "In" => got.is_some_and(|v| values.contains(v)),
            "NotIn" => got.is_none_or(|v| !values.contains(v)),
            "Exists" => got.is_some(),
            "DoesNotExist" => got.is_none(),
            "Lt" | "Gt" => {
                let (Some(v), [bound]) = (got, values.as_slice()) else {
                    return false;
                };
                let (Ok(v), Ok(bound)) = (v.parse::<i64>(), bound.parse::<i64>()) else {
                    return false;
                };
                if r.operator == "Lt" {
                    v < bound
                } else {
                    v > bound
                }
            }
            other => panic!("operator {other}"),
        }
    }

    /// A term matches when all its expressions (on labels) and fields (`metadata.name`, the
    /// only field kube-scheduler allows, here the label `metadata.name` when the test gives one)
    /// hold; a term with neither matches nothing.
    fn matches(selector: &NodeSelector, labels: &BTreeMap<String, String>) -> bool {
        let fields: BTreeMap<String, String> = labels
            .get("metadata.name")
            .map(|n| ("metadata.name".to_string(), n.clone()))
            .into_iter()
            .collect();
        selector.node_selector_terms.iter().any(|t| {
            let exprs = t.match_expressions.as_deref().unwrap_or_default();
            let by_field = t.match_fields.as_deref().unwrap_or_default();
            !(exprs.is_empty() && by_field.is_empty())
                && exprs.iter().all(|r| matches_requirement(r, labels))
                && by_field.iter().all(|r| matches_requirement(r, &fields))
        })
    }

    /// The Worker's filter on a node with these labels (node-object mode, no facts).
    fn worker_admits(demand: &PodDemand, labels: &BTreeMap<String, String>) -> bool {
        let node = json!({"metadata": {"name": "n", "labels": labels},
                          "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110",
                                                     "nvidia.com/gpu": "8"}}});
        let view: aco_core::k8s::NodeView = serde_json::from_value(node).unwrap();
        let c = Config::default();
        let state =
            aco_core::node_state::NodeState::assemble("n", Some(&view), None, 0, &c, "n").unwrap();
        aco_core::filter::check_node(demand, &state, &c.node_keys).is_ok()
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// Every combination of GPU-model and latency labels a node may carry, judged by the Worker's
    /// filter and by kube-scheduler's matching of the affinity built here: the same nodes pass,
    /// given the model spellings the cluster's nodes carry at admission (the webhook reads them
    /// from its node cache).
    #[test]
    fn the_affinity_admits_exactly_the_nodes_the_worker_admits() {
        let pods = [
            demand(json!({}), 1),
            demand(json!({"scheduling.aco/gpu-models": "V100M16|v100m32"}), 1),
            demand(json!({"scheduling.aco/latency-target-us": "200"}), 0),
            demand(json!({"latency-target-us": "199.5"}), 0),
            demand(
                json!({"scheduling.aco/gpu-models": "V100M16", "scheduling.aco/latency-target-us": "200"}),
                2,
            ),
        ];
        let models = [
            None,
            Some("V100M16"),
            Some("v100m16"),
            Some("V100m16"),
            Some("V100M32"),
            Some("T4"),
            Some(""),
        ];
        let latencies = [
            None,
            Some("199"),
            Some("200"),
            Some("201"),
            Some("150.5"),
            Some("x"),
        ];
        let known: BTreeSet<String> = models.iter().flatten().map(|m| m.to_string()).collect();
        let gpu_keys = keys().gpu_models;
        for pod in &pods {
            let c = constraints(pod, &keys(), &known).unwrap().unwrap();
            let selector = require(None, &c.alternatives).unwrap();
            for first in &models {
                for second in &models {
                    for (lat_key, other_lat) in [
                        ("aco/latency-us", "nodeLatencyUs"),
                        ("nodeLatencyUs", "aco/latency-us"),
                    ] {
                        for lat in &latencies {
                            for other in [None, Some("100"), Some("900")] {
                                let mut l = BTreeMap::new();
                                if let Some(m) = first {
                                    l.insert(gpu_keys[1].clone(), m.to_string());
                                }
                                if let Some(m) = second {
                                    l.insert(gpu_keys[2].clone(), m.to_string());
                                }
                                if let Some(v) = lat {
                                    l.insert(lat_key.to_string(), v.to_string());
                                }
                                if let Some(v) = other {
                                    l.entry(other_lat.to_string()).or_insert(v.to_string());
                                }
                                assert_eq!(
                                    matches(&selector, &l),
                                    worker_admits(pod, &l),
                                    "pod {:?} / {:?}, node {l:?}, affinity {selector:?}",
                                    pod.allowed_gpu_models,
                                    pod.latency_target_us
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn pods_without_constraints_get_none() {
        let d = demand(json!({"scheduling.aco/gpu-models": "A100"}), 0);
        assert_eq!(constraints(&d, &keys(), &BTreeSet::new()), Ok(None));
    }

    #[test]
    fn models_no_label_can_carry_are_refused_and_the_rest_kept() {
        let d = demand(json!({"scheduling.aco/gpu-models": "A100 SXM|-bad-"}), 1);
        let e = constraints(&d, &keys(), &BTreeSet::new()).unwrap_err();
        assert!(
            e.contains("A100 SXM|-bad-") && e.contains("label value"),
            "{e}"
        );
        let d = demand(json!({"scheduling.aco/gpu-models": "A100 SXM|A100"}), 1);
        let c = constraints(&d, &keys(), &BTreeSet::new()).unwrap().unwrap();
        let last = c.alternatives[0].last().unwrap();
        assert_eq!(last.values, Some(vec!["A100".into(), "a100".into()]));
    }

    #[test]
    fn the_summary_names_what_is_required_and_where_it_is_read() {
        let d = demand(
            json!({"scheduling.aco/gpu-models": "V100M16|V100M32", "scheduling.aco/latency-target-us": "200"}),
            1,
        );
        let c = constraints(&d, &keys(), &BTreeSet::new()).unwrap().unwrap();
        assert_eq!(c.alternatives.len(), 3 * 2);
        assert!(
            c.summary
                .starts_with("GPU model V100M16|V100M32 (first of aco/gpu-type")
                && c.summary
                    .contains("latency ≤ 200 µs (first of aco/latency-us, nodeLatencyUs"),
            "{}",
            c.summary
        );
    }

    #[test]
    fn a_pods_own_terms_all_still_hold_and_ours_are_anded_into_each() {
        let d = demand(json!({"scheduling.aco/latency-target-us": "200"}), 0);
        let c = constraints(&d, &keys(), &BTreeSet::new()).unwrap().unwrap();
        let own = NodeSelector {
            node_selector_terms: vec![
                NodeSelectorTerm {
                    match_expressions: Some(vec![req("zone", "In", &["a"])]),
                    match_fields: None,
                },
                NodeSelectorTerm {
                    match_expressions: None,
                    match_fields: Some(vec![req("metadata.name", "In", &["n9"])]),
                },
            ],
        };
        let out = require(Some(&own), &c.alternatives).unwrap();
        // 2 own terms × 2 latency alternatives.
        assert_eq!(out.node_selector_terms.len(), 4);
        for term in &out.node_selector_terms[..2] {
            assert_eq!(
                term.match_expressions.as_ref().unwrap()[0],
                req("zone", "In", &["a"])
            );
        }
        for term in &out.node_selector_terms[2..] {
            assert_eq!(term.match_fields, own.node_selector_terms[1].match_fields);
        }
        // In zone b a near node no longer passes: the pod's own term still holds.
        let near_b = labels(&[("zone", "b"), ("aco/latency-us", "10")]);
        assert!(!matches(&out, &near_b));
        let near_a = labels(&[("zone", "a"), ("aco/latency-us", "10")]);
        let far_a = labels(&[("zone", "a"), ("aco/latency-us", "900")]);
        assert!(matches(&out, &near_a) && !matches(&out, &far_a));
        // The pod's second term (node n9 by name) holds only with our constraint too.
        let near_n9 = labels(&[("metadata.name", "n9"), ("aco/latency-us", "10")]);
        let far_n9 = labels(&[("metadata.name", "n9"), ("aco/latency-us", "900")]);
        assert!(matches(&out, &near_n9) && !matches(&out, &far_n9));
    }

    #[test]
    fn rewriting_twice_changes_nothing_and_implied_terms_are_kept() {
        let d = demand(
            json!({"scheduling.aco/gpu-models": "V100M16", "scheduling.aco/latency-target-us": "200"}),
            1,
        );
        let c = constraints(&d, &keys(), &BTreeSet::new()).unwrap().unwrap();
        let once = require(None, &c.alternatives).unwrap();
        assert_eq!(require(Some(&once), &c.alternatives), None);
        // A user's term that already asks for less (an In subset, a tighter Lt) is left alone.
        let tight = NodeSelector {
            node_selector_terms: vec![NodeSelectorTerm {
                match_expressions: Some(vec![
                    req("aco/gpu-type", "In", &["V100M16"]),
                    req("aco/latency-us", "Lt", &["150"]),
                ]),
                match_fields: None,
            }],
        };
        assert_eq!(require(Some(&tight), &c.alternatives), None);
        let loose = NodeSelector {
            node_selector_terms: vec![NodeSelectorTerm {
                match_expressions: Some(vec![
                    req("aco/gpu-type", "In", &["V100M16", "A100"]),
                    req("aco/latency-us", "Lt", &["150"]),
                ]),
                match_fields: None,
            }],
        };
        assert!(require(Some(&loose), &c.alternatives).is_some());
    }

    #[test]
    fn label_values() {
        for good in [
            "",
            "a",
            "V100M16",
            "Tesla-V100-SXM2-16GB",
            "a.b_c-d",
            &"x".repeat(63),
        ] {
            assert!(is_label_value(good), "{good}");
        }
        for bad in ["-a", "a-", "a b", "ä", &"x".repeat(64), "a/b"] {
            assert!(!is_label_value(bad), "{bad}");
        }
    }
}
