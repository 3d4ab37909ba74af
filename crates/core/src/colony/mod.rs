//! One colony (a tenant's in one cluster; `cluster::colony_name`): its pheromone table (per node,
//! what the tenant's outcomes taught: `pheromone.rs`) and counters, and the things that happen
//! to it — a prioritize decision (read-only on the trail), a confirmed placement (remembered, so
//! that the pod's outcome is recognised) and the outcome (the only deposit; see `report.rs` for
//! how replays are recognised). The extender's own argmax never deposits: kube-scheduler may
//! bind elsewhere, and only what a pod really did on its node is evidence about the node.

mod decision;
pub mod explain_text;
mod outcome;
mod outcome_index;
mod pheromone;
mod report;
mod score;
mod top;

pub use decision::{
    CandidateExplanation, CandidateWhy, Decision, DecisionExplanation, Explanation,
    FilterRejections, RejectedNode, FILTER_REJECTIONS_KEPT, REASON_CHARS_KEPT,
};
pub use outcome::{FailureCause, ObservedOutcome, Outcome, OutcomeLabel};
pub use pheromone::{reference_tau, PheromoneTable};
pub use report::{Confirmed, PodRecord, ReportEffect};
pub use score::{desirability, explore, log_desirability, relative_desirabilities, to_scores};
pub use top::{single_out_top, tie_rank};

use std::borrow::Cow;

use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::config::{Config, CostModel};
use crate::demand::WorkloadClass;
use crate::heuristic::{eta, eta_terms, NodeFeatures, OutcomeStats};
use crate::wire::HostPriority;
use outcome_index::OutcomeIndex;

/// Persisted as JSON; fields added later read as 0 from older records.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ColonyCounters {
    pub decisions: u64,
    /// Candidates kube-scheduler sent prioritize, summed over the decisions (÷ `decisions`:
    /// how much of the cluster the extender sees per pod, after kube-scheduler's sampling).
    #[serde(default)]
    pub candidates: u64,
    pub explorations: u64,
    /// Confirmed placements, once per pod (the name is the stored one: before outcomes were the
    /// trail's only deposit, every confirmed placement deposited): the pods whose outcomes the
    /// trail learns from.
    pub deposits: u64,
    /// Confirmed placements on a node other than the one prioritize answered alone at 10:
    /// kube-scheduler's own scores (or a failed binding) overruled the answer.
    #[serde(default)]
    pub placements_elsewhere: u64,
    /// Placements whose node was outside the remembered top candidates.
    pub approximate_deposits: u64,
    /// Placements for pods we never scored (or already confirmed, or expired).
    pub unknown_placements: u64,
    /// Placements on a node that was not among the pod's candidates.
    pub non_candidate_placements: u64,
    /// Outcomes below quality 0.5, with a placement or later.
    pub failed_outcomes: u64,
    /// Outcomes reported after their placement was confirmed.
    pub late_outcomes: u64,
    /// Reports already counted (a replayed placement or outcome): nothing changed.
    pub duplicate_reports: u64,
    /// Remembered decisions evicted (oldest first) to keep `MAX_DECISIONS_PER_TENANT`.
    pub evicted_decisions: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TenantColony {
    /// The trails, stored under the outcome history's name (`pheromone.rs` says why).
    #[serde(rename = "outcomes")]
    pub pheromones: PheromoneTable,
    pub counters: ColonyCounters,
}

/// The result of scoring one pod's candidates.
#[derive(Debug, Clone, PartialEq)]
pub struct Prioritized<'a> {
    /// In the order of the candidates given, naming them by borrow.
    pub priorities: Vec<HostPriority<'a>>,
    /// To remember under the pod's key until its placement is confirmed.
    pub decision: Decision,
    pub explored: Option<String>,
}

/// [`Prioritized`] without the host names: what a caller that holds the candidates needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    /// 0–10, in the order of the candidates given.
    pub scores: Vec<i64>,
    pub decision: Decision,
    pub explored: Option<String>,
}

/// What confirming a remembered decision did.
#[derive(Debug, Clone, PartialEq)]
pub enum Confirmation {
    /// The placement on `node`, a candidate (`exact`: among the kept top ones); an outcome that
    /// came with it is deposited on the node's trail.
    Confirmed {
        node: String,
        exact: bool,
    },
    NotACandidate,
}

/// What a placement report did to the colony.
#[derive(Debug, Clone, PartialEq)]
pub enum PlacementEffect {
    /// As [`Confirmation::Confirmed`].
    Confirmed {
        node: String,
        exact: bool,
    },
    UnknownPod,
    NotACandidate,
}

impl TenantColony {
    /// `node`'s trail for this tenant as it stands at `now_ms` (evaporated).
    pub fn trail_at(&self, node: &str, now_ms: u64, cost: &CostModel) -> Option<OutcomeStats> {
        self.pheromones.at(node, now_ms, cost)
    }

    /// η of every candidate for this workload (the facts alone: the same for every tenant).
    /// Takes the whole Config, as [`eta`] does.
    pub fn etas(
        &self,
        candidates: &[NodeFeatures],
        workload: WorkloadClass,
        config: &Config,
    ) -> Vec<f64> {
        candidates
            .iter()
            .map(|f| eta(f, workload, config))
            .collect()
    }

    /// Scores the candidates 0–10 with `τ^α·η^β`, one of them alone at the top
    /// ([`single_out_top`], tied nodes told apart by `pod_key`). Does not touch the trail.
    /// Takes the whole Config: scoring reads the weights, prices, load, η bounds and retention.
    pub fn prioritize<'a>(
        &mut self,
        candidates: &'a [NodeFeatures],
        workload: WorkloadClass,
        pod_key: &str,
        now_ms: u64,
        config: &Config,
        rng: &mut impl Rng,
    ) -> Prioritized<'a> {
        let scored = self.score(candidates, workload, pod_key, now_ms, config, rng);
        Prioritized {
            priorities: candidates
                .iter()
                .zip(scored.scores)
                .map(|(f, score)| HostPriority {
                    host: Cow::Borrowed(&f.node),
                    score,
                })
                .collect(),
            decision: scored.decision,
            explored: scored.explored,
        }
    }

    /// [`TenantColony::prioritize`] without copying every candidate's name into its priority
    /// (the simulator scores ~1,000 candidates per decision and reads only the scores).
    pub fn score(
        &mut self,
        candidates: &[NodeFeatures],
        workload: WorkloadClass,
        pod_key: &str,
        now_ms: u64,
        config: &Config,
        rng: &mut impl Rng,
    ) -> Scored {
        // Every term once (η's from the facts, τ's from the trail), so the explanation costs no
        // second pass.
        let trails = OutcomeIndex::new(&self.pheromones.trails, candidates.len());
        let factors: Vec<_> = candidates
            .iter()
            .map(|f| {
                let stats = trails.get(&f.node).map(|s| s.at(now_ms, &config.cost));
                eta_terms(f, workload, stats.as_ref(), &config.cost, &config.load)
            })
            .collect();
        let etas: Vec<f64> = factors
            .iter()
            .map(|f| f.eta(&config.cost, &config.eta))
            .collect();
        let desirabilities =
            relative_desirabilities(&factors, &config.colony, &config.cost, &config.eta);
        let mut scores = to_scores(&desirabilities);
        let explored_at = explore(&mut scores, &desirabilities, &config.colony, rng);
        let explored = explored_at.map(|i| candidates[i].node.to_string());
        let top = explored_at.or_else(|| {
            single_out_top(
                &mut scores,
                &desirabilities,
                |i| &candidates[i].node,
                pod_key,
            )
        });
        self.counters.decisions += 1;
        self.counters.candidates += candidates.len() as u64;
        self.counters.explorations += explored.is_some() as u64;

        // The answer's top first, then best first, ties by name, then by position: a strict
        // total order, so partitioning out the kept few and sorting only them keeps exactly what
        // sorting all would.
        let by_rank = |&a: &usize, &b: &usize| {
            (Some(b) == top)
                .cmp(&(Some(a) == top))
                .then_with(|| desirabilities[b].total_cmp(&desirabilities[a]))
                .then_with(|| candidates[a].node.cmp(&candidates[b].node))
                .then(a.cmp(&b))
        };
        let mut ranked: Vec<usize> = (0..candidates.len()).collect();
        let keep = ranked.len().min(config.retention.decision_keep_top);
        if keep < ranked.len() {
            ranked.select_nth_unstable_by(keep, by_rank);
        }
        let kept = &mut ranked[..keep];
        kept.sort_unstable_by(by_rank);
        let kept = &*kept;
        let etas_kept = kept
            .iter()
            .map(|&i| (candidates[i].node.to_string(), etas[i]))
            .collect();
        let explanation = Explanation {
            candidates: kept
                .iter()
                .map(|&i| {
                    CandidateWhy::new(
                        &factors[i],
                        factors[i].tau(&config.cost, &config.eta),
                        scores[i],
                    )
                })
                .collect(),
            explored: explored.clone(),
            filter: None,
        };
        Scored {
            scores,
            decision: Decision {
                created_ms: now_ms,
                workload,
                candidate_count: candidates.len(),
                etas: etas_kept,
                explanation: Some(explanation),
            },
            explored,
        }
    }

    /// A pod remembered by `decision` was really bound to `node`: counted, and an outcome that
    /// came with it deposited on the node's trail. Not idempotent by itself: the Worker goes
    /// through [`TenantColony::report`], which remembers confirmations.
    pub fn confirm(
        &mut self,
        decision: Option<&Decision>,
        node: &str,
        outcome: Option<Outcome>,
        now_ms: u64,
        cost: &CostModel,
    ) -> Result<PlacementEffect, String> {
        outcome.map(Outcome::quality).transpose()?;
        let Some(decision) = decision else {
            self.counters.unknown_placements += 1;
            return Ok(PlacementEffect::UnknownPod);
        };
        Ok(
            match self.confirm_decision(decision, node, outcome, now_ms, cost)? {
                Confirmation::Confirmed { node, exact } => {
                    PlacementEffect::Confirmed { node, exact }
                }
                Confirmation::NotACandidate => PlacementEffect::NotACandidate,
            },
        )
    }

    /// [`TenantColony::confirm`] for a pod whose decision is remembered: confirmed, or the node
    /// was not a candidate.
    pub fn confirm_decision(
        &mut self,
        decision: &Decision,
        node: &str,
        outcome: Option<Outcome>,
        now_ms: u64,
        cost: &CostModel,
    ) -> Result<Confirmation, String> {
        let reported = outcome.map(Outcome::quality).transpose()?;
        if decision.answered().is_some_and(|answered| answered != node) {
            self.counters.placements_elsewhere += 1;
        }
        let Some((_, exact)) = decision.quality_of(node) else {
            self.counters.non_candidate_placements += 1;
            return Ok(Confirmation::NotACandidate);
        };
        if let (Some(q), Some(o)) = (reported, outcome) {
            self.record_outcome(node, q, o, now_ms, cost);
        }
        self.counters.deposits += 1;
        self.counters.approximate_deposits += (!exact) as u64;
        Ok(Confirmation::Confirmed {
            node: node.to_string(),
            exact,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::SmallRng, SeedableRng};

    fn node(name: &str, cost: f64) -> NodeFeatures<'static> {
        NodeFeatures {
            node: name.to_owned().into(),
            cost_per_hour: Some(cost),
            ..NodeFeatures::default()
        }
    }

    fn scores(colony: &mut TenantColony, nodes: &[NodeFeatures]) -> Vec<i64> {
        let mut rng = SmallRng::seed_from_u64(1);
        let config = Config::default();
        colony
            .prioritize(nodes, WorkloadClass::Batch, "ns/pod", 0, &config, &mut rng)
            .priorities
            .iter()
            .map(|p| p.score)
            .collect()
    }

    #[test]
    fn cheaper_node_wins_when_all_else_is_equal_and_one_of_equal_nodes_is_the_top() {
        let mut c = TenantColony::default();
        let s = scores(&mut c, &[node("a", 3.2), node("b", 0.45), node("c", 0.45)]);
        assert_eq!(s[0], 0);
        let mut equal = [s[1], s[2]];
        equal.sort_unstable();
        assert_eq!(
            equal,
            [9, 10],
            "one answer at the top: the node the pod is assumed on"
        );
    }

    #[test]
    fn prioritize_and_placements_never_deposit_and_an_outcome_does() {
        let config = Config::default();
        let mut c = TenantColony::default();
        let nodes = [node("a", 1.0), node("b", 1.0)];
        let mut rng = SmallRng::seed_from_u64(1);
        let decide = |c: &mut TenantColony, rng: &mut SmallRng| {
            c.prioritize(&nodes, WorkloadClass::Batch, "ns/pod", 0, &config, rng)
                .decision
        };
        for _ in 0..50 {
            decide(&mut c, &mut rng);
        }
        assert_eq!(c.pheromones, PheromoneTable::default());
        let d = decide(&mut c, &mut rng);
        let effect = c.confirm(Some(&d), "b", None, 0, &config.cost).unwrap();
        assert!(matches!(
            effect,
            PlacementEffect::Confirmed { exact: true, .. }
        ));
        assert_eq!(
            c.pheromones,
            PheromoneTable::default(),
            "a placement teaches nothing"
        );
        assert_eq!(c.counters.deposits, 1);
        // The outcome is the deposit: one failure of b.
        let d = decide(&mut c, &mut rng);
        let failed = Some(Outcome::Label(OutcomeLabel::Failed));
        c.confirm(Some(&d), "b", failed, 0, &config.cost).unwrap();
        let rows = c.pheromones.snapshot(0, &config.cost);
        assert_eq!(rows.len(), 1);
        assert!(rows[0].0 == "b" && rows[0].1 < 1.0, "{rows:?}");
        // Equal nodes, b's trail lower: a alone at 10.
        assert_eq!(scores(&mut c, &nodes)[0], 10);
        assert!(scores(&mut c, &nodes)[1] < 10);
    }

    #[test]
    fn placements_away_from_the_answered_node_and_candidates_seen_are_counted() {
        let config = Config::default();
        let mut c = TenantColony::default();
        let nodes = [node("a", 3.0), node("b", 1.0), node("c", 2.0)];
        let mut rng = SmallRng::seed_from_u64(1);
        let mut decide = |c: &mut TenantColony, pod: &str| {
            c.score(&nodes, WorkloadClass::Batch, pod, 0, &config, &mut rng)
                .decision
        };
        let followed = decide(&mut c, "ns/p1");
        assert_eq!(followed.answered(), Some("b"), "the cheapest alone at 10");
        c.confirm(Some(&followed), "b", None, 0, &config.cost)
            .unwrap();
        assert_eq!(c.counters.placements_elsewhere, 0);
        // kube-scheduler's own scores overruled the answer: still a candidate, still deposits.
        let overruled = decide(&mut c, "ns/p2");
        let effect = c
            .confirm(Some(&overruled), "c", None, 0, &config.cost)
            .unwrap();
        assert!(matches!(effect, PlacementEffect::Confirmed { .. }));
        // A node the extender never saw is elsewhere too.
        let unseen = decide(&mut c, "ns/p3");
        c.confirm(Some(&unseen), "zzz", None, 0, &config.cost)
            .unwrap();
        assert_eq!(
            (
                c.counters.placements_elsewhere,
                c.counters.candidates,
                c.counters.decisions
            ),
            (2, 9, 3)
        );
        // A decision stored without scores answers nothing, so nothing is counted against it.
        let mut bare = decide(&mut c, "ns/p4");
        bare.explanation = None;
        assert_eq!(bare.answered(), None);
        c.confirm(Some(&bare), "c", None, 0, &config.cost).unwrap();
        assert_eq!(c.counters.placements_elsewhere, 2);
    }

    #[test]
    fn unknown_pods_and_non_candidates_change_no_trail() {
        let config = Config::default();
        let mut c = TenantColony::default();
        assert_eq!(
            c.confirm(None, "a", None, 0, &config.cost).unwrap(),
            PlacementEffect::UnknownPod
        );
        let mut rng = SmallRng::seed_from_u64(1);
        let p = c.score(
            &[node("a", 1.0)],
            WorkloadClass::Batch,
            "ns/pod",
            0,
            &config,
            &mut rng,
        );
        assert_eq!(
            c.confirm(Some(&p.decision), "zzz", None, 0, &config.cost)
                .unwrap(),
            PlacementEffect::NotACandidate
        );
        assert_eq!(c.pheromones, PheromoneTable::default());
        assert_eq!(
            (
                c.counters.unknown_placements,
                c.counters.non_candidate_placements
            ),
            (1, 1)
        );
        assert!(c
            .confirm(
                Some(&p.decision),
                "a",
                Some(Outcome::Quality(2.0)),
                0,
                &config.cost
            )
            .is_err());
    }

    #[test]
    fn a_nodes_failures_fade_and_it_is_ranked_as_before_them() {
        let config = Config::default();
        let lc = WorkloadClass::LatencyCritical;
        let mut c = TenantColony::default();
        let nodes = [node("a", 1.0), node("b", 1.01)];
        let mut rng = SmallRng::seed_from_u64(1);
        let fresh = c
            .prioritize(&nodes, lc, "ns/pod", 0, &config, &mut rng)
            .priorities;
        for _ in 0..3 {
            let p = c.prioritize(&nodes, lc, "ns/pod", 0, &config, &mut rng);
            let failed = Some(Outcome::Label(OutcomeLabel::Failed));
            c.confirm(Some(&p.decision), "a", failed, 0, &config.cost)
                .unwrap();
        }
        let soon = c
            .prioritize(&nodes, lc, "ns/pod", 60_000, &config, &mut rng)
            .priorities;
        assert!(soon[0].score < soon[1].score, "{soon:?}");
        // Twenty half-lives on, three failures weigh ~3e-6 of one: a's η is the prior's again.
        let later_ms = 20 * config.cost.outcome_half_life_ms;
        let later = c
            .prioritize(&nodes, lc, "ns/pod", later_ms, &config, &mut rng)
            .priorities;
        assert_eq!(later, fresh);
        assert_eq!(
            c.pheromones.trails["a"].failures, 3.0,
            "reading fades nothing that is stored"
        );
    }

    #[test]
    fn failed_outcomes_lower_the_trail() {
        let config = Config::default();
        let mut c = TenantColony::default();
        let nodes = [node("a", 1.0), node("b", 1.0)];
        let mut rng = SmallRng::seed_from_u64(1);
        for _ in 0..5 {
            let p = c.prioritize(&nodes, WorkloadClass::Batch, "ns/pod", 0, &config, &mut rng);
            c.confirm(
                Some(&p.decision),
                "a",
                Some(Outcome::Label(OutcomeLabel::Failed)),
                0,
                &config.cost,
            )
            .unwrap();
        }
        let rows = c.pheromones.snapshot(0, &config.cost);
        assert!(rows[0].1 < 1.0, "{rows:?}");
        let s = scores(&mut c, &nodes);
        assert!(s[0] < s[1], "{s:?}");
        assert_eq!(c.counters.failed_outcomes, 5);
    }

    #[test]
    fn decision_keeps_only_the_top_candidates_and_floors_the_rest() {
        let config = Config::default().with(|c| c.retention.decision_keep_top = 2);
        let mut c = TenantColony::default();
        let nodes = [
            node("a", 3.0),
            node("b", 0.1),
            node("c", 1.0),
            node("d", 2.0),
        ];
        let mut rng = SmallRng::seed_from_u64(1);
        let p = c.prioritize(&nodes, WorkloadClass::Batch, "ns/pod", 0, &config, &mut rng);
        assert_eq!(
            p.decision
                .etas
                .iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>(),
            vec!["b", "c"]
        );
        let (q, exact) = p.decision.quality_of("a").unwrap();
        assert!(!exact && (q - p.decision.etas[1].1).abs() < 1e-12);
    }

    #[test]
    fn the_explanation_matches_the_scores_and_etas_it_explains() {
        let config = Config::default().with(|c| {
            c.retention.decision_keep_top = 3;
            c.colony.q0 = 0.0;
        });
        let mut c = TenantColony::default();
        c.pheromones.trails.insert(
            "b".into(),
            OutcomeStats {
                successes: 1.0,
                failures: 3.0,
                as_of_ms: 0,
                ..OutcomeStats::default()
            },
        );
        let mut nodes = vec![
            node("a", 3.0),
            node("b", 0.1),
            node("c", 1.0),
            node("d", 2.0),
        ];
        nodes[2].fragmentation_delta = Some(-200.0);
        nodes[2].gpus = Some(4);
        nodes[2].gpu_scarcity = 0.5;
        let mut rng = SmallRng::seed_from_u64(3);
        let p = c.prioritize(&nodes, WorkloadClass::Batch, "ns/pod", 7, &config, &mut rng);
        let e = p.decision.explanation.as_ref().unwrap();
        assert_eq!(e.candidates.len(), p.decision.etas.len());
        assert_eq!(e.explored, p.explored);
        assert!(e.explored.is_some(), "q0 = 0 always explores");
        let view = p.decision.explain("uid", "t");
        for cand in &view.candidates {
            let terms = cand.cost_per_hour.unwrap();
            // f32 storage: each term within 2^-24 relative.
            assert!(
                (terms.eta(&config.cost, &config.eta) - cand.eta).abs() <= 1e-6 * cand.eta,
                "{cand:?}"
            );
            assert_eq!(cand.total_per_hour, Some(terms.total()));
            let replied = p
                .priorities
                .iter()
                .find(|h| h.host == cand.node)
                .unwrap()
                .score;
            assert_eq!(cand.score, Some(replied as u8));
            let tau = terms.tau(&config.cost, &config.eta);
            assert!((cand.tau.unwrap() - tau).abs() <= 1e-6 * tau, "{cand:?}");
            assert_eq!(tau < 1.0, cand.node == "b", "only b has a trail: {cand:?}");
            assert_eq!(terms.stranded_gpu.is_some(), cand.node == "c");
        }
        assert!(
            view.notes.iter().any(|n| n.contains("best 3 of 4")),
            "{:?}",
            view.notes
        );
        assert!(view
            .notes
            .iter()
            .any(|n| n.contains("filterReasons is null")));
    }

    #[test]
    fn decisions_stored_before_explanations_still_parse_and_explain_eta_alone() {
        let old = r#"{"createdMs":5,"workload":"batch","candidateCount":2,"etas":[["a",0.45],["b",0.3]]}"#;
        let d: Decision = serde_json::from_str(old).unwrap();
        assert_eq!(d.explanation, None);
        let view = d.explain("uid", "t");
        assert_eq!(
            (view.candidates[0].eta, view.candidates[0].cost_per_hour),
            (0.45, None)
        );
        assert!(view
            .notes
            .iter()
            .any(|n| n.contains("stored before explanations")));
        assert_eq!(
            serde_json::to_string(&d).unwrap(),
            old,
            "an unexplained decision is stored as before"
        );
    }

    /// The decision row's size at DECISION_KEEP_TOP = 64 candidates, before explanations and
    /// with them (incl. 64 filter rejections): still one row, far below the 2 MB row limit.
    /// `cargo test -p aco-core decision_row_size -- --nocapture` prints the figures.
    #[test]
    fn decision_row_size_at_64_candidates() {
        let config = Config::default();
        let mut c = TenantColony::default();
        // EKS-style names, the longest common shape; prices and loads all differ.
        let nodes: Vec<NodeFeatures> = (0..200)
            .map(|i| {
                let mut n = node(
                    &format!("ip-10-0-{}-{}.eu-west-1.compute.internal", i / 200, i % 200),
                    0.4 + i as f64 * 0.037,
                );
                n.predicted_utilisation = Some((i % 17) as f64 / 20.0);
                n.spike_probability = Some((i % 7) as f64 / 10.0);
                n.committed_share = Some((i % 5) as f64 / 6.0);
                n.pod_share = Some(0.0625);
                n.fragmentation_delta = (i % 2 == 0).then_some(-(i as f64) * 3.1);
                n
            })
            .collect();
        let mut rng = SmallRng::seed_from_u64(1);
        let mut d = c
            .prioritize(
                &nodes,
                WorkloadClass::Batch,
                "ns/pod",
                1_760_000_000_000,
                &config,
                &mut rng,
            )
            .decision;
        assert_eq!(d.etas.len(), 64);
        let mut rejections = FilterRejections::default();
        for i in 0..500 {
            let reason =
                "GPU model T4 is not among the allowed models V100M16|V100M32|A100-SXM4-40GB";
            rejections.note(
                &format!("ip-10-0-9-{i}.eu-west-1.compute.internal"),
                crate::filter::RejectCode::GpuModel,
                reason,
                true,
            );
        }
        d.explanation.as_mut().unwrap().filter = Some(rejections);
        let with_all = serde_json::to_string(&d).unwrap().len();
        d.explanation.as_mut().unwrap().filter = None;
        let with_factors = serde_json::to_string(&d).unwrap().len();
        d.explanation = None;
        let before = serde_json::to_string(&d).unwrap().len();
        eprintln!("decision row body at 64 candidates: {before} B before, {with_factors} B with factors, {with_all} B with 64 filter rejections");
        assert!(with_factors < 3 * before, "{before} → {with_factors}");
        assert!(with_all < 24 * 1024, "{with_all}");
    }

    #[test]
    fn trails_of_one_tenant_do_not_move_another() {
        let config = Config::default();
        let (mut t1, mut t2) = (TenantColony::default(), TenantColony::default());
        let nodes = [node("a", 1.0), node("b", 1.0)];
        let mut rng = SmallRng::seed_from_u64(1);
        let p = t1.prioritize(&nodes, WorkloadClass::Batch, "ns/pod", 0, &config, &mut rng);
        let failed = Some(Outcome::Label(OutcomeLabel::Failed));
        t1.confirm(Some(&p.decision), "a", failed, 0, &config.cost)
            .unwrap();
        let untouched = scores(&mut TenantColony::default(), &nodes);
        assert_eq!(scores(&mut t2, &nodes), untouched);
        // a's failure makes b t1's top by its trail.
        assert_eq!(scores(&mut t1, &nodes)[1], 10);
        assert!(scores(&mut t1, &nodes)[0] < 10);
    }
}
