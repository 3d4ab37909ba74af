//! The extender verbs as pure functions over request bytes and node facts, shared by the Worker,
//! the benchmarks and the simulator: parse [`ExtenderArgs`], assemble each candidate's
//! [`NodeState`], then filter or compute heuristic features. Transport, storage and the
//! colony's Durable Object stay outside.
//!
//! The verbs take the whole Config: assembling a candidate, filtering and scoring it read most
//! groups. Parsing the pod takes only the pod and node keys.

use std::borrow::Cow;
use std::collections::BTreeMap;
#[cfg(test)]
use std::collections::HashMap;

use serde_json::value::RawValue;

use crate::colony::FilterRejections;
use crate::config::{Config, NodeKeys, PodKeys};
use crate::demand::{DemandError, PodDemand};
use crate::facts::FactsLookup;
#[cfg(test)]
use crate::facts::NodeFacts;
use crate::filter::{check_node_for, RejectCode, WantedResources};
use crate::heuristic::{NodeFeatures, PodFootprint};
use crate::k8s::{parse_json_at, NodeView, PodView};
use crate::node_state::NodeState;
use crate::wire::{EmptyObject, ExtenderArgs, ExtenderFilterResult, NodeListOut};

mod reply;
mod stream;

pub use reply::{FilterReply, ReplyChunks};

/// A request the extender cannot act on: answered with HTTP `status` and a JSON message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct BadRequest {
    pub status: u16,
    /// JSON path of the offending field, when there is one.
    pub field: Option<String>,
    pub message: String,
}

impl BadRequest {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            status: 400,
            field: Some(field.into()),
            message: message.into(),
        }
    }
}

/// One candidate node as sent by kube-scheduler.
#[derive(Debug)]
pub struct Candidate<'a> {
    /// Borrowed from the body in names mode (unless escaped); the node object's otherwise.
    pub name: Cow<'a, str>,
    /// The node object's exact bytes (full-`Nodes` mode), echoed in the filter reply.
    pub raw: Option<&'a RawValue>,
    /// The node object's fields the verbs read (its name moved into `name`).
    pub view: Option<NodeView>,
}

/// Parsed `ExtenderArgs`.
#[derive(Debug)]
pub struct Args<'a> {
    pub pod: PodView,
    /// `Err` for a pod whose annotations are unusable (see [`DemandError::Annotation`]).
    pub demand: Result<PodDemand, DemandError>,
    pub candidates: Vec<Candidate<'a>>,
    /// True when kube-scheduler sent full node objects (`nodeCacheCapable: false`).
    pub full_nodes: bool,
}

fn json_error(e: serde_json::Error, what: &str) -> BadRequest {
    BadRequest {
        status: 400,
        field: None,
        message: format!("{what}: {e} (line {}, column {})", e.line(), e.column()),
    }
}

/// A part of the body (`Pod`, `Nodes.items[3]`) that does not read: the field is the part's
/// path plus the path inside it (`Pod.spec.containers[0].resources.requests`).
fn located_error((path, message): (Option<String>, String), part: &str) -> BadRequest {
    let field = match path {
        Some(p) => format!("{part}.{p}"),
        None => part.to_string(),
    };
    BadRequest {
        status: 400,
        message: format!("invalid {field}: {message}"),
        field: Some(field),
    }
}

/// Kubernetes' limit on a node name (a DNS subdomain): a longer one enters no decision.
pub const MAX_NODE_NAME_LEN: usize = 253;

fn check_name_length(name: &str, field: impl FnOnce() -> String) -> Result<(), BadRequest> {
    if name.len() > MAX_NODE_NAME_LEN {
        return Err(BadRequest::new(
            field(),
            format!(
                "node name of {} bytes: at most {MAX_NODE_NAME_LEN} (a Kubernetes name)",
                name.len()
            ),
        ));
    }
    Ok(())
}

/// Parses a filter/prioritize body. Malformed JSON, wrong types, bad quantities, a missing pod,
/// or neither `Nodes` nor `NodeNames` are errors (400) naming the problem.
pub fn parse_args<'a>(
    body: &'a str,
    pod_keys: &PodKeys,
    node_keys: &NodeKeys,
) -> Result<Args<'a>, BadRequest> {
    let args: ExtenderArgs<'a> =
        serde_json::from_str(body).map_err(|e| json_error(e, "invalid ExtenderArgs"))?;
    let pod_raw = args
        .pod
        .ok_or_else(|| BadRequest::new("Pod", "missing Pod"))?;
    let (pod, demand) = pod_of(pod_raw, pod_keys, node_keys)?;
    let (candidates, full_nodes) = match (args.nodes, args.node_names) {
        (Some(list), _) => {
            let mut out = Vec::with_capacity(list.items.len());
            for (i, raw) in list.items.into_iter().enumerate() {
                out.push(node_candidate(i, raw)?);
            }
            (out, true)
        }
        (None, Some(names)) => (name_candidates(names)?, false),
        (None, None) => {
            return Err(BadRequest::new(
                "Nodes",
                "request carries neither Nodes nor NodeNames",
            ))
        }
    };
    Ok(Args {
        pod,
        demand,
        candidates,
        full_nodes,
    })
}

/// The pod and what it asks; a request that cannot be read (a bad quantity) is an error, an
/// unusable annotation only the demand's (every node then fails with its message).
fn pod_of(
    raw: &RawValue,
    pod_keys: &PodKeys,
    node_keys: &NodeKeys,
) -> Result<(PodView, Result<PodDemand, DemandError>), BadRequest> {
    let pod: PodView = parse_json_at(raw.get()).map_err(|e| located_error(e, "Pod"))?;
    let demand = PodDemand::from_pod(&pod, pod_keys, node_keys);
    if let Err(DemandError::Resource(e)) = &demand {
        return Err(BadRequest::new(e.field.clone(), e.to_string()));
    }
    Ok((pod, demand))
}

/// Item `i` of `Nodes.items`: its fields typed, its bytes kept; the same whether the body was
/// parsed first or is read node by node ([`stream`]).
fn node_candidate(i: usize, raw: &RawValue) -> Result<Candidate<'_>, BadRequest> {
    let view: NodeView =
        parse_json_at(raw.get()).map_err(|e| located_error(e, &format!("Nodes.items[{i}]")))?;
    candidate_of(i, view, Some(raw))
}

/// Item `i` of `Nodes.items` once typed: its name checked (and its bytes, when kept).
fn candidate_of(
    i: usize,
    mut view: NodeView,
    raw: Option<&RawValue>,
) -> Result<Candidate<'_>, BadRequest> {
    if view.metadata.name.is_empty() {
        return Err(BadRequest::new(
            format!("Nodes.items[{i}].metadata.name"),
            "node has no name",
        ));
    }
    check_name_length(&view.metadata.name, || {
        format!("Nodes.items[{i}].metadata.name")
    })?;
    Ok(Candidate {
        // Moved, not copied: the candidate's name is the one the verbs read.
        name: Cow::Owned(std::mem::take(&mut view.metadata.name)),
        raw,
        view: Some(view),
    })
}

/// `NodeNames`, checked: none empty, none longer than a Kubernetes name.
fn name_candidates(names: Vec<Cow<'_, str>>) -> Result<Vec<Candidate<'_>>, BadRequest> {
    for (i, n) in names.iter().enumerate() {
        if n.is_empty() {
            return Err(BadRequest::new(
                format!("NodeNames[{i}]"),
                "empty node name",
            ));
        }
        check_name_length(n, || format!("NodeNames[{i}]"))?;
    }
    Ok(names
        .into_iter()
        .map(|name| Candidate {
            name,
            raw: None,
            view: None,
        })
        .collect())
}

impl Args<'_> {
    pub fn node_names(&self) -> impl Iterator<Item = &str> {
        self.candidates.iter().map(|c| c.name.as_ref())
    }
}

/// What a verb does with each candidate, in request order, and then with all of them: the same
/// code whether the candidates were parsed first ([`parse_args`], then [`filter`] or
/// [`scoring_input`]) or are handed over one at a time while the body is read ([`filter_body`],
/// [`scoring_input_body`]) — so that both give the same answer.
trait Verb<'a> {
    type Output;
    /// Whether the verb reads a node object's bytes ([`Candidate::raw`]): the filter echoes
    /// them; a verb that does not lets the streamed read type each node in one pass.
    const READS_NODE_BYTES: bool;
    /// Candidate `i`; an error ends the verb (the first one is the answer).
    fn candidate(
        &mut self,
        demand: &Result<PodDemand, DemandError>,
        i: usize,
        c: &Candidate<'a>,
    ) -> Result<(), BadRequest>;
    fn finish(
        self,
        demand: &Result<PodDemand, DemandError>,
        full_nodes: bool,
    ) -> Result<Self::Output, BadRequest>;
}

/// Runs `verb` over candidates already parsed.
fn replay<'a, V: Verb<'a>>(args: &Args<'a>, mut verb: V) -> Result<V::Output, BadRequest> {
    for (i, c) in args.candidates.iter().enumerate() {
        verb.candidate(&args.demand, i, c)?;
    }
    verb.finish(&args.demand, args.full_nodes)
}

/// Candidate `i` as the rules see it: its object (if sent) ⊕ its facts.
fn state_of<'s>(
    i: usize,
    c: &'s Candidate<'_>,
    facts: &'s impl FactsLookup,
    now_ms: u64,
    config: &Config,
) -> Result<NodeState<'s>, BadRequest> {
    // A node object's labels win over the facts': their reading is asked for only without one.
    let (facts, reading) = match c.view {
        Some(_) => (facts.get(&c.name), None),
        None => facts
            .get_read(&c.name, &config.node_keys, &config.spot)
            .unzip(),
    };
    // Only a node object's fields can be wrong here; their path is formatted only then.
    NodeState::assemble_read(&c.name, c.view.as_ref(), facts, reading, now_ms, config, "").map_err(
        |mut e| {
            e.field = format!("Nodes.items[{i}]{}", e.field);
            BadRequest::new(e.field.clone(), e.to_string())
        },
    )
}

/// The filter reply plus what the Worker counts in metrics.
#[derive(Debug)]
pub struct FilterOutcome<'a> {
    pub result: ExtenderFilterResult<'a>,
    pub passed: usize,
    pub rejected: BTreeMap<RejectCode, u64>,
    /// Candidates whose facts were present but too old to use.
    pub stale: u64,
    /// The rejections, bounded, for the explanation of the pod's decision.
    pub rejections: FilterRejections,
}

/// The `filter` verb, candidate by candidate: what it keeps of a node is its name, its bytes
/// (borrowed) if it passes, its reason if it does not.
struct FilterVerb<'f, 'a, F> {
    facts: &'f F,
    now_ms: u64,
    config: &'f Config,
    failed: BTreeMap<String, String>,
    unresolvable: BTreeMap<String, String>,
    rejected: BTreeMap<RejectCode, u64>,
    names: Vec<Cow<'a, str>>,
    items: Vec<&'a RawValue>,
    stale: u64,
    rejections: FilterRejections,
    /// The message of an unusable annotation, once, and the candidates it failed.
    pod_invalid: Option<(String, u64)>,
    /// The pod's checked requests, read at its first candidate (every candidate is judged
    /// against the same pod).
    wanted: Option<WantedResources<'f>>,
}

impl<'f, F: FactsLookup> FilterVerb<'f, '_, F> {
    fn new(facts: &'f F, now_ms: u64, config: &'f Config) -> Self {
        Self {
            facts,
            now_ms,
            config,
            failed: BTreeMap::new(),
            unresolvable: BTreeMap::new(),
            rejected: BTreeMap::new(),
            names: Vec::new(),
            items: Vec::new(),
            stale: 0,
            rejections: FilterRejections::default(),
            pod_invalid: None,
            wanted: None,
        }
    }
}

impl<'a, F: FactsLookup> Verb<'a> for FilterVerb<'_, 'a, F> {
    type Output = FilterOutcome<'a>;
    const READS_NODE_BYTES: bool = true;

    fn candidate(
        &mut self,
        demand: &Result<PodDemand, DemandError>,
        i: usize,
        c: &Candidate<'a>,
    ) -> Result<(), BadRequest> {
        let demand = match demand {
            Ok(d) => d,
            // An unusable annotation fails every node with the same message: the pod stays
            // Pending and its events explain why, instead of an error an ignorable extender
            // would swallow.
            Err(e) => {
                let (message, n) = self.pod_invalid.get_or_insert_with(|| (e.to_string(), 0));
                *n += 1;
                self.rejections
                    .note(&c.name, RejectCode::PodInvalid, message, true);
                self.unresolvable
                    .insert(c.name.to_string(), message.clone());
                return Ok(());
            }
        };
        let state = state_of(i, c, self.facts, self.now_ms, self.config)?;
        self.stale += state.stale_facts as u64;
        let wanted = self
            .wanted
            .get_or_insert_with(|| WantedResources::of(demand, &self.config.node_keys));
        match check_node_for(demand, wanted, &state, &self.config.node_keys) {
            Ok(()) => {
                self.names.push(c.name.clone());
                self.items.extend(c.raw);
            }
            Err(r) => {
                *self.rejected.entry(r.code).or_default() += 1;
                self.rejections
                    .note(&c.name, r.code, &r.reason, r.unresolvable);
                let map = if r.unresolvable {
                    &mut self.unresolvable
                } else {
                    &mut self.failed
                };
                map.insert(c.name.to_string(), r.reason);
            }
        }
        Ok(())
    }

    fn finish(
        mut self,
        demand: &Result<PodDemand, DemandError>,
        full_nodes: bool,
    ) -> Result<FilterOutcome<'a>, BadRequest> {
        if demand.is_err() {
            let n = self.pod_invalid.map_or(0, |(_, n)| n);
            self.rejected.insert(RejectCode::PodInvalid, n);
        }
        let passed = self.names.len();
        self.rejections.passed = passed as u64;
        Ok(FilterOutcome {
            result: ExtenderFilterResult {
                nodes: full_nodes.then_some(NodeListOut {
                    metadata: EmptyObject {},
                    items: self.items,
                }),
                node_names: Some(self.names),
                failed_nodes: self.failed,
                failed_and_unresolvable_nodes: self.unresolvable,
                error: String::new(),
            },
            passed,
            rejected: self.rejected,
            stale: self.stale,
            rejections: self.rejections,
        })
    }
}

/// The `filter` verb over parsed arguments.
pub fn filter<'a>(
    args: &Args<'a>,
    facts: &impl FactsLookup,
    now_ms: u64,
    config: &Config,
) -> Result<FilterOutcome<'a>, BadRequest> {
    replay(args, FilterVerb::new(facts, now_ms, config))
}

/// What the `prioritize` verb sends to the tenant's colony.
#[derive(Debug)]
pub struct ScoringInput<'a> {
    pub demand: PodDemand,
    /// Naming the candidates by borrow from the body (unless a name has JSON escapes).
    pub features: Vec<NodeFeatures<'a>>,
    pub stale: u64,
}

/// The Worker half of the `prioritize` verb, candidate by candidate: a node's features, nothing
/// else of it.
struct ScoringVerb<'f, 'a, F> {
    facts: &'f F,
    outlook: &'f crate::heuristic::ClusterOutlook,
    now_ms: u64,
    config: &'f Config,
    features: Vec<NodeFeatures<'a>>,
    stale: u64,
    memo: crate::heuristic::FragmentationMemo,
    /// The pod's side of the features, read at its first candidate (as the filter's
    /// requests are).
    footprint: Option<PodFootprint<'f>>,
}

fn unusable_pod(e: &DemandError) -> BadRequest {
    BadRequest::new("Pod", e.to_string())
}

impl<'a, F: FactsLookup> Verb<'a> for ScoringVerb<'_, 'a, F> {
    type Output = ScoringInput<'a>;
    const READS_NODE_BYTES: bool = false;

    fn candidate(
        &mut self,
        demand: &Result<PodDemand, DemandError>,
        i: usize,
        c: &Candidate<'a>,
    ) -> Result<(), BadRequest> {
        let demand = demand.as_ref().map_err(unusable_pod)?;
        let state = state_of(i, c, self.facts, self.now_ms, self.config)?;
        self.stale += state.stale_facts as u64;
        let footprint = self
            .footprint
            .get_or_insert_with(|| PodFootprint::of(demand, &self.config.node_keys));
        let features = NodeFeatures::for_pod_with(
            &state,
            footprint,
            &self.config.node_keys,
            &self.config.spot,
            self.outlook,
            &crate::heuristic::OPENB_DEFAULT_SHAPES,
            &mut self.memo,
        );
        self.features.push(features.renamed(c.name.clone()));
        Ok(())
    }

    fn finish(
        self,
        demand: &Result<PodDemand, DemandError>,
        _full_nodes: bool,
    ) -> Result<ScoringInput<'a>, BadRequest> {
        Ok(ScoringInput {
            demand: demand.as_ref().map_err(unusable_pod)?.clone(),
            features: self.features,
            stale: self.stale,
        })
    }
}

impl<'f, F: FactsLookup> ScoringVerb<'f, '_, F> {
    fn new(
        facts: &'f F,
        outlook: &'f crate::heuristic::ClusterOutlook,
        now_ms: u64,
        config: &'f Config,
        candidates: usize,
    ) -> Self {
        Self {
            facts,
            outlook,
            now_ms,
            config,
            features: Vec::with_capacity(candidates),
            stale: 0,
            memo: Default::default(),
            footprint: None,
        }
    }
}

/// The Worker half of the `prioritize` verb over parsed arguments: heuristic features for every
/// candidate, in the cluster `outlook` (GPU scarcity, spot pools) computed from every node's facts.
pub fn scoring_input<'a>(
    args: &Args<'a>,
    facts: &impl FactsLookup,
    outlook: &crate::heuristic::ClusterOutlook,
    now_ms: u64,
    config: &Config,
) -> Result<ScoringInput<'a>, BadRequest> {
    let verb = ScoringVerb::new(facts, outlook, now_ms, config, args.candidates.len());
    replay(args, verb)
}

/// A verb's answer computed while the body is read, and the pod it was for.
#[derive(Debug)]
pub struct Streamed<T> {
    pub pod: PodView,
    pub output: T,
}

/// The `filter` verb read straight from the body ([`stream`]): each node object is typed, judged
/// and dropped as soon as it is read, only the passing ones' bytes kept (borrowed). The same
/// answer and the same errors as [`parse_args`] then [`filter`].
pub fn filter_body<'a>(
    body: &'a str,
    facts: &impl FactsLookup,
    now_ms: u64,
    config: &Config,
) -> Result<Streamed<FilterOutcome<'a>>, BadRequest> {
    stream::run(body, &config.pod_keys, &config.node_keys, || {
        FilterVerb::new(facts, now_ms, config)
    })
}

/// The `prioritize` verb's features read straight from the body, as [`filter_body`]: the same
/// answer and the same errors as [`parse_args`] then [`scoring_input`].
pub fn scoring_input_body<'a>(
    body: &'a str,
    facts: &impl FactsLookup,
    outlook: &crate::heuristic::ClusterOutlook,
    now_ms: u64,
    config: &Config,
) -> Result<Streamed<ScoringInput<'a>>, BadRequest> {
    stream::run(body, &config.pod_keys, &config.node_keys, || {
        ScoringVerb::new(facts, outlook, now_ms, config, 0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODES: &str = r#"{"metadata":{},"items":[
        {"metadata":{"name":"gpu-v100","labels":{"aco/gpu-type":"V100M16"}},"status":{"allocatable":{"cpu":"8","memory":"32Gi","nvidia.com/gpu":"2"}},"spec":{"taints":null}},
        {"metadata":{"name":"gpu-t4","labels":{"aco/gpu-type":"T4"}},"status":{"allocatable":{"cpu":"8","memory":"32Gi","nvidia.com/gpu":"1"}}},
        {"metadata":{"name":"cpu","labels":{}},"status":{"allocatable":{"cpu":"8","memory":"32Gi"}}}]}"#;

    fn body(pod: &str) -> String {
        format!(r#"{{"Pod":{pod},"Nodes":{NODES},"NodeNames":null}}"#)
    }

    fn no_facts() -> HashMap<String, crate::facts::NodeFacts> {
        HashMap::new()
    }

    /// The Worker keeps each record's label reading beside it: the verbs answer as they do
    /// over bare records whose labels every call reads (the fixture's latency labels fail
    /// some nodes, so the readings decide answers).
    #[test]
    fn kept_label_readings_answer_as_labels_read_per_call() {
        use crate::api::nodes::NodeReport;
        use crate::facts::{NodeFacts, ReadFacts};
        use crate::heuristic::ClusterOutlook;
        use aco_testkit::fixtures;
        #[derive(serde::Deserialize)]
        struct Batch {
            nodes: Vec<NodeReport>,
        }
        let c = Config::default();
        let batch: Batch = serde_json::from_str(&fixtures::node_facts_report(40)).unwrap();
        let bare: HashMap<String, NodeFacts> = batch
            .nodes
            .iter()
            .map(|r| {
                let mut f = NodeFacts::default();
                f.apply(r, 0, &c.load);
                (f.name.clone(), f)
            })
            .collect();
        let kept: HashMap<String, ReadFacts> = bare
            .iter()
            .map(|(name, f)| {
                (
                    name.clone(),
                    ReadFacts::read(f.clone(), &c.node_keys, &c.spot),
                )
            })
            .collect();
        let body = fixtures::extender_args_names(40);
        let args = parse_args(&body, &c.pod_keys, &c.node_keys).unwrap();
        let read = filter(&args, &bare, 0, &c).unwrap();
        assert_eq!(read.rejected.get(&RejectCode::LatencyExceeded), Some(&5));
        assert_eq!(
            serde_json::to_string(&filter(&args, &kept, 0, &c).unwrap().result).unwrap(),
            serde_json::to_string(&read.result).unwrap()
        );
        let outlook = ClusterOutlook::from_facts(bare.values(), Default::default(), 0, &c);
        assert_eq!(
            scoring_input(&args, &kept, &outlook, 0, &c)
                .unwrap()
                .features,
            scoring_input(&args, &bare, &outlook, 0, &c)
                .unwrap()
                .features
        );
    }

    #[test]
    fn full_mode_echoes_passing_nodes_byte_for_byte() {
        let b = body(
            r#"{"metadata":{"name":"p","annotations":{"scheduling.aco/gpu-models":"V100M16"}},"spec":{"containers":[{"resources":{"limits":{"nvidia.com/gpu":"1"}}}]}}"#,
        );
        let c = Config::default();
        let args = parse_args(&b, &c.pod_keys, &c.node_keys).unwrap();
        let out = filter(&args, &no_facts(), 0, &c).unwrap();
        let json = serde_json::to_string(&out.result).unwrap();
        let original = NODES
            .split("},\n")
            .next()
            .unwrap()
            .split("[\n")
            .nth(1)
            .unwrap()
            .trim();
        assert!(json.contains(&format!("{original}}}")), "{json}");
        assert_eq!(out.result.node_names, Some(vec![Cow::Borrowed("gpu-v100")]));
        assert_eq!(out.result.failed_and_unresolvable_nodes.len(), 2);
        assert_eq!(out.rejected[&RejectCode::GpuModel], 1);
        assert_eq!(out.rejected[&RejectCode::NoGpu], 1);
        // The explanation's copy: counted by reason, named in request order, unresolvable.
        let r = &out.rejections;
        assert_eq!((r.passed, r.rejected), (1, 2));
        assert_eq!(
            r.nodes
                .iter()
                .map(|n| (n.node.as_str(), n.code.as_str(), n.unresolvable))
                .collect::<Vec<_>>(),
            vec![("gpu-t4", "gpu_model", true), ("cpu", "no_gpu", true)]
        );
        assert_eq!(
            r.nodes[0].reason,
            out.result.failed_and_unresolvable_nodes["gpu-t4"]
        );
    }

    #[test]
    fn names_mode_reads_facts_and_rejects_unknown_names() {
        let c = Config::default();
        let b = r#"{"Pod":{"metadata":{"name":"p"}},"NodeNames":["known","ghost"]}"#;
        let args = parse_args(b, &c.pod_keys, &c.node_keys).unwrap();
        assert!(!args.full_nodes);
        let mut facts = HashMap::new();
        facts.insert(
            "known".to_string(),
            NodeFacts {
                name: "known".into(),
                ..Default::default()
            },
        );
        let out = filter(&args, &facts, 0, &c).unwrap();
        assert!(out.result.nodes.is_none());
        assert_eq!(out.result.node_names, Some(vec![Cow::Borrowed("known")]));
        assert!(out.result.failed_nodes["ghost"].contains("no node facts"));
    }

    #[test]
    fn nothing_passing_still_sends_empty_lists_not_null() {
        let c = Config::default();
        let b = body(r#"{"spec":{"containers":[{"resources":{"requests":{"cpu":"100"}}}]}}"#);
        let args = parse_args(&b, &c.pod_keys, &c.node_keys).unwrap();
        let json =
            serde_json::to_string(&filter(&args, &no_facts(), 0, &c).unwrap().result).unwrap();
        assert!(
            json.starts_with(r#"{"Nodes":{"metadata":{},"items":[]},"NodeNames":[]"#),
            "{json}"
        );
    }

    #[test]
    fn unusable_annotation_fails_every_node_with_the_message() {
        let c = Config::default();
        let b = body(r#"{"metadata":{"annotations":{"scheduling.aco/latency-target-us":"soon"}}}"#);
        let args = parse_args(&b, &c.pod_keys, &c.node_keys).unwrap();
        let out = filter(&args, &no_facts(), 0, &c).unwrap();
        assert_eq!(out.passed, 0);
        assert!(out
            .result
            .failed_and_unresolvable_nodes
            .values()
            .all(|m| m.contains("soon")));
        assert!(scoring_input(&args, &no_facts(), &Default::default(), 0, &c).is_err());
    }

    #[test]
    fn malformed_requests_name_the_problem() {
        let c = Config::default();
        for (b, needle) in [
            ("{", "invalid ExtenderArgs"),
            (r#"{"Nodes":{"items":[]}}"#, "missing Pod"),
            (r#"{"Pod":{}}"#, "neither Nodes nor NodeNames"),
            (
                r#"{"Pod":{"spec":{"containers":"x"}},"NodeNames":[]}"#,
                "invalid Pod",
            ),
            (
                r#"{"Pod":{"spec":{"containers":[{"resources":{"requests":{"memory":"1Qi"}}}]}},"NodeNames":[]}"#,
                "Pod.spec.containers[0].resources.requests.memory",
            ),
            (
                r#"{"Pod":{},"Nodes":{"items":[{"metadata":{"name":"n"},"status":{"allocatable":{"cpu":"many"}}}]}}"#,
                "Nodes.items[0].status.allocatable.cpu",
            ),
            (
                r#"{"Pod":{},"Nodes":{"items":[{"metadata":{}}]}}"#,
                "Nodes.items[0].metadata.name",
            ),
            (r#"{"Pod":{},"NodeNames":[1]}"#, "invalid ExtenderArgs"),
        ] {
            let e = match parse_args(b, &c.pod_keys, &c.node_keys) {
                Err(e) => e,
                Ok(args) => filter(&args, &no_facts(), 0, &c).unwrap_err(),
            };
            assert_eq!(e.status, 400);
            let text = format!("{:?} {}", e.field, e.message);
            assert!(text.contains(needle), "{b}: {text}");
        }
    }
}
