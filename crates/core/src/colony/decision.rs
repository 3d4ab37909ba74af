use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::demand::WorkloadClass;
use crate::filter::RejectCode;
use crate::heuristic::CostTerms;

/// Rejected nodes kept by name per pod (the rest are only counted by reason): an explanation
/// stays bounded whatever the cluster's size.
pub const FILTER_REJECTIONS_KEPT: usize = 64;

/// A rejection's text is cut to this many characters in an explanation (the filter reply itself
/// carries it whole): reasons name a model list or a quantity, a few dozen characters.
pub const REASON_CHARS_KEPT: usize = 160;

/// What the colony remembers about one prioritize call, keyed by pod UID, until the placement
/// is confirmed or the decision expires. Only the best `decision_keep_top` candidates' η are
/// kept (bounded storage per pod); kube-scheduler nearly always binds one of those.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    pub created_ms: u64,
    pub workload: WorkloadClass,
    pub candidate_count: usize,
    /// (node, η) of the best-scored candidates, best first.
    pub etas: Vec<(String, f64)>,
    /// Why each kept candidate scored what it did. Absent from decisions stored before
    /// explanations existed (they still parse, and explain η alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<Explanation>,
}

/// The stored explanation of a [`Decision`], kept in the decision's own row (no row of its own).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    /// One per [`Decision::etas`] entry, in the same order (names are not repeated).
    #[serde(default)]
    pub candidates: Vec<CandidateWhy>,
    /// The node ACS exploration promoted to the top score, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explored: Option<String>,
    /// What the filter verb rejected for this pod, when the isolate that scored it had served
    /// the pod's filter call; `None` otherwise (kube-scheduler sends prioritize only the
    /// passing nodes, and remembering across isolates would cost a binding operation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<FilterRejections>,
}

/// One candidate's cost terms ($/h), τ and score. Stored as f32 under two-letter keys: 64 of
/// them go into every decision row, and 7 significant digits are plenty to read a term by.
/// Decisions stored before cost terms (keys `r`, `c`, `h`, `s`, `f`) parse with `resources`
/// absent and explain η alone.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CandidateWhy {
    #[serde(rename = "cr", default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<f32>,
    /// Absent without per-GPU facts.
    #[serde(rename = "cg", default, skip_serializing_if = "Option::is_none")]
    pub stranded_gpu: Option<f32>,
    #[serde(rename = "cq", default)]
    pub qos_risk: f32,
    #[serde(rename = "cs", default)]
    pub reclamation_risk: f32,
    #[serde(rename = "cf", default)]
    pub failure_risk: f32,
    #[serde(rename = "cp", default)]
    pub slowdown: f32,
    #[serde(rename = "t")]
    pub tau: f32,
    /// The 0–10 score prioritize answered for this node.
    #[serde(rename = "k")]
    pub score: u8,
}

impl CandidateWhy {
    pub fn new(terms: &CostTerms, tau: f64, score: i64) -> Self {
        Self {
            resources: Some(terms.resources as f32),
            stranded_gpu: terms.stranded_gpu.map(|g| g as f32),
            qos_risk: terms.qos_risk as f32,
            reclamation_risk: terms.reclamation_risk as f32,
            failure_risk: terms.failure_risk as f32,
            slowdown: terms.slowdown as f32,
            tau: tau as f32,
            score: score.clamp(0, 10) as u8,
        }
    }

    /// The stored terms, or `None` for a decision stored before cost terms.
    pub fn terms(&self) -> Option<CostTerms> {
        Some(CostTerms {
            resources: f64::from(self.resources?),
            stranded_gpu: self.stranded_gpu.map(f64::from),
            qos_risk: f64::from(self.qos_risk),
            reclamation_risk: f64::from(self.reclamation_risk),
            failure_risk: f64::from(self.failure_risk),
            slowdown: f64::from(self.slowdown),
        })
    }
}

/// The filter verb's verdict on one pod, bounded: every rejection counted by reason code, the
/// first [`FILTER_REJECTIONS_KEPT`] (in request order) by name with their reason.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct FilterRejections {
    pub passed: u64,
    pub rejected: u64,
    pub by_reason: BTreeMap<String, u64>,
    pub nodes: Vec<RejectedNode>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RejectedNode {
    pub node: String,
    /// A `RejectCode` label (`gpu_model`, `insufficient_cpu`, …), as in the metrics.
    pub code: String,
    pub reason: String,
    /// Listed in `FailedAndUnresolvableNodes` (preemption cannot help).
    #[serde(default)]
    pub unresolvable: bool,
}

impl FilterRejections {
    /// Counts one rejection, and keeps it by name while fewer than the bound are kept.
    pub fn note(&mut self, node: &str, code: RejectCode, reason: &str, unresolvable: bool) {
        self.rejected += 1;
        // Counted under a name allocated once per reason, not once per rejected node.
        match self.by_reason.get_mut(code.as_str()) {
            Some(n) => *n += 1,
            None => {
                self.by_reason.insert(code.as_str().to_string(), 1);
            }
        }
        if self.nodes.len() < FILTER_REJECTIONS_KEPT {
            let reason = match reason.char_indices().nth(REASON_CHARS_KEPT) {
                Some((cut, _)) => format!("{}…", &reason[..cut]),
                None => reason.to_string(),
            };
            self.nodes.push(RejectedNode {
                node: node.to_string(),
                code: code.as_str().to_string(),
                reason,
                unresolvable,
            });
        }
    }
}

impl Decision {
    /// The quality of a placement on `node`: its η at decision time. For a node outside the
    /// remembered set, the smallest remembered η (it scored no better than those). `exact` tells
    /// which case applied; `None` when the node was not a candidate at all.
    pub fn quality_of(&self, node: &str) -> Option<(f64, bool)> {
        if let Some((_, eta)) = self.etas.iter().find(|(n, _)| n == node) {
            return Some((*eta, true));
        }
        if self.candidate_count > self.etas.len() {
            let floor = self
                .etas
                .iter()
                .map(|(_, e)| *e)
                .fold(f64::INFINITY, f64::min);
            return floor.is_finite().then_some((floor, false));
        }
        None
    }

    /// The node prioritize answered alone at 10 — the one kube-scheduler binds unless its own
    /// scores overrule the extender's. The kept candidates are ranked with it first
    /// (`TenantColony::score`); `None` for a decision stored without scores, or one whose best
    /// node did not get 10.
    pub fn answered(&self) -> Option<&str> {
        let first = self.explanation.as_ref()?.candidates.first()?;
        (first.score == 10)
            .then(|| self.etas.first().map(|(node, _)| node.as_str()))
            .flatten()
    }

    /// The explanation as `GET /v1/tenants/{t}/decisions/{podUid}` answers it.
    pub fn explain(&self, pod_uid: &str, tenant: &str) -> DecisionExplanation {
        let stored = self.explanation.as_ref();
        let candidates = self
            .etas
            .iter()
            .enumerate()
            .map(|(i, (node, eta))| {
                let why = stored.and_then(|e| e.candidates.get(i));
                let terms = why.and_then(CandidateWhy::terms);
                CandidateExplanation {
                    node: node.clone(),
                    eta: *eta,
                    cost_per_hour: terms,
                    total_per_hour: terms.map(|t| t.total()),
                    tau: why.map(|w| w.tau as f64),
                    score: why.map(|w| w.score),
                }
            })
            .collect();
        let mut notes = vec![
            "totalPerHour is the sum of costPerHour's terms in $/h (resources, strandedGpu, qosRisk, reclamationRisk: what the facts say; \
             failureRisk, slowdown: what the tenant's outcomes on the node taught); eta = clamp(exp(-(facts' terms) / COST_REFERENCE), ETA_FLOOR, 1), \
             tau = exp(-(learned terms) / COST_REFERENCE); strandedGpu is absent without per-GPU facts; terms and tau are stored as f32"
                .to_string(),
            "score = round(10 × tau^ALPHA × eta^BETA / best), one node alone at 10: the best, or an explored one; the other 10s become 9 (the pod is assumed on the 10 until the node facts show it)"
                .to_string(),
        ];
        if self.candidate_count > self.etas.len() {
            notes.push(format!(
                "only the best {} of {} candidates are remembered (DECISION_KEEP_TOP)",
                self.etas.len(),
                self.candidate_count
            ));
        }
        match stored {
            None => notes.push("this decision was stored before explanations were recorded: eta only".into()),
            Some(e) if e.candidates.iter().any(|c| c.resources.is_none()) => {
                notes.push("this decision was stored before cost terms were recorded: eta, tau and score only".into())
            }
            Some(e) if e.filter.is_none() => notes.push(
                "filterReasons is null: the filter call of this pod was served by another isolate (or none was made); \
                 rejections are remembered per isolate, at no extra binding operation"
                    .into(),
            ),
            Some(e) => {
                if let Some(f) = &e.filter {
                    if f.rejected as usize > f.nodes.len() {
                        notes.push(format!("{} of {} rejected nodes listed by name; byReason counts all", f.nodes.len(), f.rejected));
                    }
                }
            }
        }
        DecisionExplanation {
            pod_uid: pod_uid.to_string(),
            tenant: tenant.to_string(),
            created_ms: self.created_ms,
            workload: self.workload,
            candidate_count: self.candidate_count,
            explored: stored.and_then(|e| e.explored.clone()),
            answered_node: self.answered().map(str::to_string),
            bound_node: None,
            confirmed_ms: None,
            candidates,
            filter_reasons: stored.and_then(|e| e.filter.clone()),
            notes,
        }
    }
}

/// The reply of `GET /v1/tenants/{t}/decisions/{podUid}` (also parsed by `aco-sim explain`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionExplanation {
    pub pod_uid: String,
    pub tenant: String,
    pub created_ms: u64,
    pub workload: WorkloadClass,
    /// Candidates prioritize scored; `candidates` lists the best `DECISION_KEEP_TOP` of them.
    pub candidate_count: usize,
    pub explored: Option<String>,
    /// The node prioritize answered alone at 10 (`Decision::answered`), where kube-scheduler
    /// binds unless its own scores overrule it; `null` for a decision stored without scores.
    #[serde(default)]
    pub answered_node: Option<String>,
    /// Where the placement was confirmed, once it was (the explanation is then kept for
    /// `CONFIRMED_EXPLANATIONS_TTL_MS`, the newest `CONFIRMED_EXPLANATIONS_MAX` per tenant).
    #[serde(default)]
    pub bound_node: Option<String>,
    #[serde(default)]
    pub confirmed_ms: Option<u64>,
    /// Best first.
    pub candidates: Vec<CandidateExplanation>,
    /// `null` when the scoring isolate did not see the pod's filter call.
    pub filter_reasons: Option<FilterRejections>,
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CandidateExplanation {
    pub node: String,
    /// η as the decision remembers it (exact, f64).
    pub eta: f64,
    /// The cost terms in $/h (η's and the trail's); `null` for decisions stored before they
    /// were recorded.
    pub cost_per_hour: Option<CostTerms>,
    /// Their sum, the ranking's dollars at `ALPHA = BETA`.
    pub total_per_hour: Option<f64>,
    /// τ for this pod: `exp(−(failureRisk + slowdown) / COST_REFERENCE)`.
    pub tau: Option<f64>,
    pub score: Option<u8>,
}
