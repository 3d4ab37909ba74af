//! Shadow mode: the colony observes pods another scheduler placed (kube-scheduler's default one
//! included) and says where it would have put them, without steering anything.
//!
//! For one pod and the cluster's node facts, [`ShadowCluster::score`] runs the extender's own
//! pipeline over **every** node of the cluster (names mode: `NodeState` from facts alone), the
//! filter (`check_node`) first, then scores the feasible nodes with the tenant's colony exactly
//! as `TenantColony::prioritize` ranks them without exploration: the argmax of `τ^α·η^β`, ties
//! to the smallest name. It prices the node the pod really went to and the colony's choice by
//! the core's marginal cost ([`marginal_cost_per_hour`], the figure the cost factor of η reads:
//! the pod's share of a busy node's price, the whole price of an idle one) and says whether
//! each is *hot* for a latency-critical pod ([`is_hot`]: headroom after placement below
//! `LATENCY_CRITICAL_MIN_HEADROOM`, where `sla_headroom` penalises latency-critical pods — the
//! factor that steers them; the spike factor is a smooth probability with no threshold of its
//! own).
//!
//! **The pod is already on its node.** A shadow report arrives after the binding, and the
//! reporter's facts count the pod in its node's `requested` by then. Scoring those facts as they
//! are would make the actual node look busier (and its marginal cost lower, its headroom
//! smaller) than it was when the other scheduler decided, so the pod's own request is
//! subtracted from the actual node's `requested` (saturating at 0: facts older than the
//! binding do not count it yet, and then nothing is subtracted below zero) before anything is
//! scored. Every other node is scored as reported.
//!
//! Pure and deterministic: the Worker and the simulator (`aco-sim replay --shadow`) call the same
//! functions, so their figures agree.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::colony::{log_desirability, tie_rank, Outcome, TenantColony};
use crate::config::{Config, CostModel};
use crate::demand::PodDemand;
use crate::facts::NodeFacts;
use crate::filter::{check_node_for, WantedResources};
use crate::heuristic::{
    eta_terms, is_hot, marginal_cost_per_hour, ClusterOutlook, FragmentationMemo, NodeFeatures,
    PodFootprint, OPENB_DEFAULT_SHAPES,
};
use crate::node_state::NodeState;

/// What the colony would have done with one pod, against what was done.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShadowVerdict {
    /// The colony's argmax over the feasible nodes.
    pub colony_choice: String,
    /// Where the pod really went.
    pub chosen: String,
    /// The pod's marginal cost on `chosen` ($/h), with the pod's own request taken off first.
    pub chosen_cost_per_hour: f64,
    pub colony_cost_per_hour: f64,
    pub latency_critical: bool,
    pub chosen_hot: bool,
    pub colony_hot: bool,
    pub agree: bool,
}

/// Why a pod got no verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotScored {
    /// The pod's node has no facts in this cluster: nothing to price it with.
    UnknownNode,
    /// No node of the cluster passes the core's filter for the pod: the colony had no choice.
    NotFeasible,
}

/// The cluster's nodes as the extender sees them, assembled once per request and shared by every
/// pod of the batch (assembling is the expensive part: labels, allocatable, EMA forecast).
/// Takes the whole Config, as the extender's verbs do (it assembles, filters and scores).
pub struct ShadowCluster<'a> {
    /// By name, ascending (the tie-break order).
    states: Vec<NodeState<'a>>,
    facts: &'a HashMap<String, NodeFacts>,
    /// What prioritize knows of the whole cluster (GPU scarcity and price, spot pools), so that
    /// the counterfactual ranks as prioritize would have.
    outlook: &'a ClusterOutlook,
    now_ms: u64,
}

impl<'a> ShadowCluster<'a> {
    /// `outlook` is the one prioritize scores with for these facts (the Worker's
    /// `facts_client::outlook`; [`ClusterOutlook::from_facts`] elsewhere).
    pub fn new(
        facts: &'a HashMap<String, NodeFacts>,
        outlook: &'a ClusterOutlook,
        now_ms: u64,
        config: &Config,
    ) -> Self {
        let mut names: Vec<&String> = facts.keys().collect();
        names.sort();
        // With no node object, assembling reads parsed facts only and cannot fail; a node that
        // did would be one the extender could not score either, so it is left out.
        let states = names
            .into_iter()
            .filter_map(|n| NodeState::assemble(n, None, facts.get(n), now_ms, config, n).ok())
            .collect();
        Self {
            states,
            facts,
            outlook,
            now_ms,
        }
    }

    pub fn nodes(&self) -> usize {
        self.states.len()
    }

    /// The node has facts in this cluster.
    pub fn has_node(&self, name: &str) -> bool {
        self.facts.contains_key(name)
    }

    /// The counterfactual for `pod`, really placed on `chosen`, scored by `colony`.
    pub fn score(
        &self,
        pod: &PodDemand,
        chosen: &str,
        colony: &TenantColony,
        config: &Config,
    ) -> Result<ShadowVerdict, NotScored> {
        let actual = self.facts.get(chosen).ok_or(NotScored::UnknownNode)?;
        let before = without_pod(actual, pod);
        let chosen_state =
            NodeState::assemble(chosen, None, Some(&before), self.now_ms, config, chosen)
                .map_err(|_| NotScored::UnknownNode)?;
        let mut best: Option<(f64, NodeFeatures)> = None;
        // One memo per decision, as prioritize's (the pod and the shapes are fixed).
        let mut memo = FragmentationMemo::default();
        let wanted = WantedResources::of(pod, &config.node_keys);
        // A fn, not a closure: the features borrow the state they are given.
        fn features_of<'s>(
            state: &'s NodeState<'_>,
            pod: &PodFootprint,
            config: &Config,
            outlook: &ClusterOutlook,
            memo: &mut FragmentationMemo,
        ) -> NodeFeatures<'s> {
            NodeFeatures::for_pod_with(
                state,
                pod,
                &config.node_keys,
                &config.spot,
                outlook,
                &OPENB_DEFAULT_SHAPES,
                memo,
            )
        }
        let footprint = PodFootprint::of(pod, &config.node_keys);
        let tie = tie_rank(&pod.key);
        for state in &self.states {
            let state = if state.name == chosen {
                &chosen_state
            } else {
                state
            };
            if check_node_for(pod, &wanted, state, &config.node_keys).is_err() {
                continue;
            }
            let features = features_of(state, &footprint, config, self.outlook, &mut memo);
            let terms = eta_terms(
                &features,
                pod.workload,
                colony
                    .trail_at(&state.name, self.now_ms, &config.cost)
                    .as_ref(),
                &config.cost,
                &config.load,
            );
            // Prioritize's ranking (`relative_desirabilities`), in log space.
            let d = log_desirability(&terms, &config.colony, &config.cost);
            // Prioritize's answer: the most desirable node, equal ones told apart as
            // `colony::single_out_top` does.
            let wins = best.as_ref().is_none_or(|(b, f)| {
                d.total_cmp(b)
                    .then_with(|| tie(&f.node).cmp(&tie(&features.node)))
                    .is_gt()
            });
            if wins {
                best = Some((d, features));
            }
        }
        let (_, colony_features) = best.ok_or(NotScored::NotFeasible)?;
        let chosen_features =
            features_of(&chosen_state, &footprint, config, self.outlook, &mut memo);
        Ok(ShadowVerdict {
            agree: colony_features.node == chosen,
            colony_cost_per_hour: marginal_cost_per_hour(&colony_features, &config.cost),
            chosen_cost_per_hour: marginal_cost_per_hour(&chosen_features, &config.cost),
            latency_critical: pod.workload.is_latency_critical(),
            chosen_hot: is_hot(&chosen_features, &config.load),
            colony_hot: is_hot(&colony_features, &config.load),
            colony_choice: colony_features.node.into_owned(),
            chosen: chosen.to_string(),
        })
    }
}

/// The node's facts before the pod was bound there: its request off `requested` (saturating).
pub fn without_pod(facts: &NodeFacts, pod: &PodDemand) -> NodeFacts {
    let mut before = facts.clone();
    if let Some(requested) = &mut before.requested {
        for (name, amount) in pod.request.iter() {
            if let Some(r) = requested.value.get_mut(name) {
                *r = r.saturating_sub(amount).max(0);
            }
        }
    }
    before
}

/// Per tenant: what shadow mode has seen so far. Sums, so that any window is a difference of
/// two readings (the metrics are these fields).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ShadowSummary {
    /// Pods scored (each once, whatever the number of reports).
    pub pods: u64,
    /// Pods the colony would have placed on the same node.
    pub agreements: u64,
    /// Σ of the pods' marginal cost on the node they went to, $/h.
    pub chosen_cost_per_hour: f64,
    /// Σ of the pods' marginal cost on the colony's choice, $/h.
    pub colony_cost_per_hour: f64,
    pub latency_critical: u64,
    /// Latency-critical pods on a hot node: where they went / where the colony would have put them.
    pub latency_critical_on_hot_chosen: u64,
    pub latency_critical_on_hot_colony: u64,
    /// Pods reported for which no node passed the filter (remembered, not in the sums).
    pub not_feasible: u64,
}

impl ShadowSummary {
    pub fn add(&mut self, v: &ShadowVerdict) {
        self.pods += 1;
        self.agreements += v.agree as u64;
        self.chosen_cost_per_hour += v.chosen_cost_per_hour;
        self.colony_cost_per_hour += v.colony_cost_per_hour;
        if v.latency_critical {
            self.latency_critical += 1;
            self.latency_critical_on_hot_chosen += v.chosen_hot as u64;
            self.latency_critical_on_hot_colony += v.colony_hot as u64;
        }
    }

    /// Σ chosen − Σ colony: what the colony's choices would have saved, $/h summed over pods.
    pub fn saving_per_hour(&self) -> f64 {
        self.chosen_cost_per_hour - self.colony_cost_per_hour
    }

    /// The saving as a share of the chosen cost (0 when nothing was priced).
    pub fn saving_fraction(&self) -> f64 {
        if self.chosen_cost_per_hour > 0.0 {
            self.saving_per_hour() / self.chosen_cost_per_hour
        } else {
            0.0
        }
    }

    pub fn agreement_rate(&self) -> f64 {
        if self.pods > 0 {
            self.agreements as f64 / self.pods as f64
        } else {
            0.0
        }
    }
}

/// What the colony remembers of a pod shadow mode has seen (`CONFIRMED_TTL_MS`), so that a
/// replayed report is a duplicate and the pod's later outcome counts once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShadowRecord {
    pub node: String,
    pub seen_ms: u64,
    pub outcome_recorded: bool,
}

/// The Worker's counterfactual for one report, computed before the colony applies it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum ShadowScore {
    Scored { verdict: ShadowVerdict },
    NotFeasible,
    UnknownNode,
}

impl From<Result<ShadowVerdict, NotScored>> for ShadowScore {
    fn from(r: Result<ShadowVerdict, NotScored>) -> Self {
        match r {
            Ok(verdict) => ShadowScore::Scored { verdict },
            Err(NotScored::NotFeasible) => ShadowScore::NotFeasible,
            Err(NotScored::UnknownNode) => ShadowScore::UnknownNode,
        }
    }
}

/// What one shadow report did.
#[derive(Debug, Clone, PartialEq)]
pub enum ShadowEffect {
    /// First report of the pod, added to the summary; `outcome`: it carried one, applied to the
    /// node's reliability.
    Scored { outcome: bool },
    /// First report, no feasible node: remembered and counted, not priced.
    NotFeasible { outcome: bool },
    /// First report, the pod's node has no facts: nothing remembered (a retry once the node is
    /// reported is scored).
    UnknownPod,
    /// A later outcome of a remembered pod, same node, none recorded yet: reliability updated.
    Outcome,
    /// Anything else about a remembered pod: nothing changes.
    Duplicate,
}

/// One shadow report as [`report`] applies it: the node the pod was seen on, its score there,
/// and the outcome if the reporter sent one.
#[derive(Debug, Clone, Copy)]
pub struct ShadowReport<'a> {
    pub node: &'a str,
    pub score: &'a ShadowScore,
    pub outcome: Option<Outcome>,
}

/// Applies one shadow report to the tenant's colony and summary, given what is remembered of the
/// pod (`record`, updated in place). Learning follows real outcomes only: an outcome is deposited
/// on the node's trail as a placement's outcome is (what a pod did on a node is evidence about
/// the node, whoever placed it); the shadow placement itself deposits nothing. Idempotent per pod
/// key: every replay is a duplicate; an outcome applies once, to the node the pod was seen on.
pub fn report(
    colony: &mut TenantColony,
    summary: &mut ShadowSummary,
    record: &mut Option<ShadowRecord>,
    report: ShadowReport,
    now_ms: u64,
    cost: &CostModel,
) -> Result<ShadowEffect, String> {
    let ShadowReport {
        node,
        score,
        outcome,
    } = report;
    let quality = outcome.map(Outcome::quality).transpose()?;
    if let Some(r) = record {
        return Ok(match quality.zip(outcome) {
            Some((q, o)) if !r.outcome_recorded && r.node == node => {
                colony.record_outcome(node, q, o, now_ms, cost);
                r.outcome_recorded = true;
                ShadowEffect::Outcome
            }
            _ => {
                colony.counters.duplicate_reports += 1;
                ShadowEffect::Duplicate
            }
        });
    }
    let effect = match score {
        ShadowScore::UnknownNode => return Ok(ShadowEffect::UnknownPod),
        ShadowScore::Scored { verdict } => {
            summary.add(verdict);
            ShadowEffect::Scored {
                outcome: quality.is_some(),
            }
        }
        ShadowScore::NotFeasible => {
            summary.not_feasible += 1;
            ShadowEffect::NotFeasible {
                outcome: quality.is_some(),
            }
        }
    };
    if let Some((q, o)) = quality.zip(outcome) {
        colony.record_outcome(node, q, o, now_ms, cost);
    }
    *record = Some(ShadowRecord {
        node: node.to_string(),
        seen_ms: now_ms,
        outcome_recorded: quality.is_some(),
    });
    Ok(effect)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::nodes::NodeReport;
    use crate::colony::PheromoneTable;
    use crate::heuristic::OutcomeStats;
    use crate::k8s::PodView;

    const NOW: u64 = 1_000_000;

    /// A node of 8 CPU / 32 GiB at `price` $/h with `cpu` cores requested and utilisation `util`.
    fn node(name: &str, price: f64, cpu: &str, util: Option<f64>) -> (String, NodeFacts) {
        let util = util.map_or(String::new(), |u| {
            format!(r#","utilisation":[{{"atMs":{NOW},"value":{u}}}]"#)
        });
        let json = format!(
            r#"{{"name":"{name}","labels":{{"aco/cost-per-hour":"{price}"}},"allocatable":{{"cpu":"8","memory":"32Gi"}},
                "requested":{{"cpu":"{cpu}"}},"observedAtMs":{NOW}{util}}}"#
        );
        let report: NodeReport = serde_json::from_str(&json).unwrap();
        let mut f = NodeFacts::default();
        f.apply(&report, NOW, &Default::default());
        (name.to_string(), f)
    }

    fn pod(cpu: &str, workload: Option<&str>) -> PodDemand {
        let labels = workload.map_or(String::new(), |w| format!(r#""aco/workload-type":"{w}""#));
        let json = format!(
            r#"{{"metadata":{{"name":"p","namespace":"team","uid":"u1","labels":{{{labels}}}}},
                "spec":{{"containers":[{{"resources":{{"requests":{{"cpu":"{cpu}"}}}}}}]}}}}"#
        );
        let view: PodView = serde_json::from_str(&json).unwrap();
        PodDemand::from_pod(&view, &Default::default(), &Default::default()).unwrap()
    }

    fn verdict(
        nodes: Vec<(String, NodeFacts)>,
        pod: &PodDemand,
        chosen: &str,
        colony: &TenantColony,
    ) -> Result<ShadowVerdict, NotScored> {
        let facts: HashMap<String, NodeFacts> = nodes.into_iter().collect();
        let config = Config::default();
        let outlook = ClusterOutlook::from_facts(facts.values(), Default::default(), NOW, &config);
        ShadowCluster::new(&facts, &outlook, NOW, &config).score(pod, chosen, colony, &config)
    }

    #[test]
    fn costs_follow_the_marginal_rule_with_the_pods_request_taken_off_its_node() {
        let c = TenantColony::default();
        // Opening an idle node costs the pod's 1/8 plus the idle fraction of the rest.
        let f = Config::default().cost.open_node_idle_fraction;
        let opened = |price: f64| price * (1.0 / 8.0 + 7.0 / 8.0 * f);
        // `busy` already carries the pod (2 of 8 CPU, of which the pod's 1): before it, 1 CPU,
        // so busy → 1/8 of $3.20. `idle` has nothing, `cheap-busy` 4 CPU of others.
        // (node replaced, its price, its requested, chosen, chosen $/h, colony choice, colony $/h)
        let rows: [(&str, f64, &str, &str, f64, &str, f64); 4] = [
            // Reported on the expensive busy node: 1/8 × 3.2 = 0.4; the colony packs onto
            // cheap-busy (1/8 × 0.8 = 0.1).
            ("busy", 3.2, "2", "busy", 3.2 / 8.0, "cheap-busy", 0.8 / 8.0),
            // The pod alone on `busy` (requested = its own 1 CPU): before it, the node was idle,
            // so the price of opening it counts.
            (
                "busy",
                3.2,
                "1",
                "busy",
                opened(3.2),
                "cheap-busy",
                0.8 / 8.0,
            ),
            // Facts older than the binding (the pod not counted yet): nothing below 0, busy at 0 → idle.
            (
                "busy",
                3.2,
                "0",
                "busy",
                opened(3.2),
                "cheap-busy",
                0.8 / 8.0,
            ),
            // Reported on cheap-busy (requested 5 with the pod's 1): agreement.
            (
                "cheap-busy",
                0.8,
                "5",
                "cheap-busy",
                0.8 / 8.0,
                "cheap-busy",
                0.8 / 8.0,
            ),
        ];
        for (name, price, requested, chosen, chosen_cost, colony_choice, colony_cost) in rows {
            let mut nodes = vec![
                node("idle", 0.5, "0", None),
                node("busy", 3.2, "1", None),
                node("cheap-busy", 0.8, "4", None),
            ];
            nodes.retain(|(n, _)| n != name);
            nodes.push(node(name, price, requested, None));
            let v = verdict(nodes, &pod("1", None), chosen, &c).unwrap();
            let case = format!("{name} requested {requested}: {v:?}");
            assert!(
                (v.chosen_cost_per_hour - chosen_cost).abs() < 1e-12,
                "{case}"
            );
            assert_eq!(v.colony_choice, colony_choice, "{case}");
            assert!(
                (v.colony_cost_per_hour - colony_cost).abs() < 1e-12,
                "{case}"
            );
            assert_eq!(v.agree, chosen == colony_choice, "{case}");
            assert!(
                !v.latency_critical && !v.chosen_hot && !v.colony_hot,
                "{case}"
            );
        }
    }

    #[test]
    fn the_colony_choice_is_prioritizes_argmax_with_the_trail_and_ties_by_name() {
        let config = Config::default();
        let nodes = || {
            vec![
                node("b", 1.0, "0", None),
                node("a", 1.0, "0", None),
                node("c", 1.0, "0", None),
            ]
        };
        let p = pod("1", None);
        // Equal nodes: the smallest name, whatever the map's order.
        assert_eq!(
            verdict(nodes(), &p, "c", &TenantColony::default())
                .unwrap()
                .colony_choice,
            "a"
        );
        // Failures on a and b (a's worse): c wins, then b over a.
        let failed = |n: f64| OutcomeStats {
            successes: 0.0,
            failures: n,
            as_of_ms: NOW,
            ..OutcomeStats::default()
        };
        let mut trails = PheromoneTable::default();
        trails.trails.insert("a".into(), failed(5.0));
        trails.trails.insert("b".into(), failed(1.0));
        let with_tau = TenantColony {
            pheromones: trails,
            ..Default::default()
        };
        let v = verdict(nodes(), &p, "c", &with_tau).unwrap();
        assert!(v.agree && v.colony_choice == "c", "{v:?}");
        let mut without_c = with_tau.clone();
        without_c.pheromones.trails.insert("c".into(), failed(9.0));
        let v = verdict(nodes(), &p, "c", &without_c).unwrap();
        assert_eq!(v.colony_choice, "b");
        // The same ranking as prioritize's scores.
        let facts: HashMap<String, NodeFacts> = nodes().into_iter().collect();
        let states: Vec<NodeState> = ["a", "b", "c"]
            .iter()
            .map(|n| NodeState::assemble(n, None, facts.get(*n), NOW, &config, n).unwrap())
            .collect();
        let features: Vec<NodeFeatures> = states
            .iter()
            .map(|s| NodeFeatures::for_pod(s, &p, &config.node_keys, &config.spot))
            .collect();
        let mut rng = <rand::rngs::SmallRng as rand::SeedableRng>::seed_from_u64(1);
        let scored = with_tau
            .clone()
            .prioritize(&features, p.workload, &p.key, NOW, &config, &mut rng);
        assert_eq!(
            scored.decision.etas[0].0,
            verdict(nodes(), &p, "a", &with_tau).unwrap().colony_choice
        );
    }

    #[test]
    fn latency_critical_pods_on_hot_nodes_are_counted_where_the_headroom_rule_bites() {
        let lc = pod("1", Some("latency-critical"));
        // hot: predicted 0.85 + 1/8 → headroom 0.025 < 0.2; cool: 0.1.
        let nodes = vec![
            node("hot", 0.5, "1", Some(0.85)),
            node("cool", 0.5, "0", Some(0.1)),
        ];
        let v = verdict(nodes.clone(), &lc, "hot", &TenantColony::default()).unwrap();
        assert!(
            v.latency_critical && v.chosen_hot && !v.colony_hot && v.colony_choice == "cool",
            "{v:?}"
        );
        let mut s = ShadowSummary::default();
        s.add(&v);
        s.add(&verdict(nodes, &pod("1", None), "cool", &TenantColony::default()).unwrap());
        assert_eq!(
            (
                s.pods,
                s.agreements,
                s.latency_critical,
                s.latency_critical_on_hot_chosen,
                s.latency_critical_on_hot_colony
            ),
            (2, 1, 1, 1, 0)
        );
    }

    #[test]
    fn unknown_nodes_and_pods_nothing_fits_get_no_verdict() {
        let c = TenantColony::default();
        assert_eq!(
            verdict(
                vec![node("a", 1.0, "0", None)],
                &pod("1", None),
                "ghost",
                &c
            ),
            Err(NotScored::UnknownNode)
        );
        // 9 CPU fit nowhere (8 allocatable), even on the node it was reported on.
        assert_eq!(
            verdict(vec![node("a", 1.0, "0", None)], &pod("9", None), "a", &c),
            Err(NotScored::NotFeasible)
        );
    }

    fn sr<'a>(node: &'a str, score: &'a ShadowScore, outcome: Option<Outcome>) -> ShadowReport<'a> {
        ShadowReport {
            node,
            score,
            outcome,
        }
    }

    #[test]
    fn reports_count_once_and_only_outcomes_deposit_once() {
        let config = Config::default();
        let mut c = TenantColony::default();
        let mut s = ShadowSummary::default();
        let v = verdict(
            vec![node("a", 1.0, "1", None), node("b", 1.0, "0", None)],
            &pod("1", None),
            "a",
            &c,
        )
        .unwrap();
        let score = ShadowScore::Scored { verdict: v };
        let failed = Some(Outcome::Label(crate::colony::OutcomeLabel::Failed));
        let mut r = None;
        // (node, outcome, effect)
        let steps = [
            ("a", None, ShadowEffect::Scored { outcome: false }),
            ("a", None, ShadowEffect::Duplicate),
            ("b", failed, ShadowEffect::Duplicate),
            ("a", failed, ShadowEffect::Outcome),
            ("a", failed, ShadowEffect::Duplicate),
            ("a", Some(Outcome::Quality(1.0)), ShadowEffect::Duplicate),
        ];
        for (i, (n, o, effect)) in steps.into_iter().enumerate() {
            assert_eq!(
                report(
                    &mut c,
                    &mut s,
                    &mut r,
                    sr(n, &score, o),
                    10 + i as u64,
                    &config.cost
                )
                .unwrap(),
                effect,
                "step {i}"
            );
        }
        assert_eq!(s.pods, 1);
        assert_eq!(
            c.pheromones.trails["a"],
            OutcomeStats {
                successes: 0.0,
                failures: 1.0,
                as_of_ms: 13,
                ..OutcomeStats::default()
            }
        );
        assert_eq!(
            c.pheromones.trails.keys().collect::<Vec<_>>(),
            ["a"],
            "the outcome is the only deposit"
        );
        assert_eq!(
            r,
            Some(ShadowRecord {
                node: "a".into(),
                seen_ms: 10,
                outcome_recorded: true
            })
        );
        // An outcome with the first report applies at once; unknown nodes are not remembered;
        // invalid outcomes change nothing.
        let mut r2 = None;
        assert_eq!(
            report(
                &mut c,
                &mut s,
                &mut r2,
                sr("b", &ShadowScore::NotFeasible, Some(Outcome::Quality(1.0))),
                20,
                &config.cost,
            )
            .unwrap(),
            ShadowEffect::NotFeasible { outcome: true }
        );
        assert_eq!(
            (c.pheromones.trails["b"].successes, s.not_feasible, s.pods),
            (1.0, 1, 1)
        );
        let mut r3 = None;
        assert_eq!(
            report(
                &mut c,
                &mut s,
                &mut r3,
                sr("z", &ShadowScore::UnknownNode, None),
                30,
                &config.cost,
            )
            .unwrap(),
            ShadowEffect::UnknownPod
        );
        assert!(r3.is_none());
        assert!(report(
            &mut c,
            &mut s,
            &mut r3,
            sr("a", &score, Some(Outcome::Quality(2.0))),
            30,
            &config.cost,
        )
        .is_err());
        assert!(r3.is_none() && s.pods == 1);
    }

    #[test]
    fn the_counterfactual_ranks_with_the_clusters_outlook_as_prioritize_does() {
        let config = Config::default();
        let spot = |name: &str, price: f64| {
            let (n, mut f) = node(name, price, "0", Some(0.1));
            f.labels
                .insert(config.node_keys.instance_type_label.clone(), "spot".into());
            (n, f)
        };
        let facts: HashMap<String, NodeFacts> =
            [spot("a-spot", 0.5), node("b-steady", 1.0, "0", Some(0.1))].into();
        let lc = pod("2", Some("latency-critical"));
        let pool = crate::node_labels::pool_of(&facts["a-spot"].labels, &config.spot);
        let quiet = ClusterOutlook::from_facts(facts.values(), Default::default(), NOW, &config);
        // The pool has lost a node every ten hours of a year's exposure.
        let history = crate::heuristic::spot_risk::PoolHistory {
            reclamations: 876.0,
            node_hours: 8760.0,
        };
        let stormy = ClusterOutlook {
            pools: [(pool, history)].into(),
            ..quiet.clone()
        };
        let choice = |outlook: &ClusterOutlook| {
            ShadowCluster::new(&facts, outlook, NOW, &config)
                .score(&lc, "b-steady", &TenantColony::default(), &config)
                .unwrap()
                .colony_choice
        };
        // At the pool's prior rate the cheap spot node wins; with what the cluster has shown of
        // the pool, the latency-critical pod keeps off it — as prioritize would score it.
        assert_eq!(choice(&quiet), "a-spot");
        assert_eq!(choice(&stormy), "b-steady");
    }

    #[test]
    fn summary_ratios() {
        let s = ShadowSummary {
            pods: 4,
            agreements: 1,
            chosen_cost_per_hour: 2.0,
            colony_cost_per_hour: 0.5,
            ..Default::default()
        };
        assert_eq!(
            (s.saving_per_hour(), s.saving_fraction(), s.agreement_rate()),
            (1.5, 0.75, 0.25)
        );
        let empty = ShadowSummary::default();
        assert_eq!(
            (empty.saving_fraction(), empty.agreement_rate()),
            (0.0, 0.0)
        );
    }
}
