use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::demand::WorkloadClass;
use crate::filter::RejectCode;
use crate::heuristic::EtaFactors;

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

/// One candidate's factors, τ and score. Stored as f32 under one-letter keys: 64 of them
/// go into every decision row, and 7 significant digits are plenty to read a factor by.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CandidateWhy {
    #[serde(rename = "r")]
    pub reliability: f32,
    #[serde(rename = "c")]
    pub cost_efficiency: f32,
    #[serde(rename = "h")]
    pub sla_headroom: f32,
    #[serde(rename = "s")]
    pub spike_safety: f32,
    /// Absent without per-GPU facts (the factor is then neutral).
    #[serde(rename = "f", default, skip_serializing_if = "Option::is_none")]
    pub fragmentation: Option<f32>,
    #[serde(rename = "t")]
    pub tau: f32,
    /// The 0–10 score prioritize answered for this node.
    #[serde(rename = "k")]
    pub score: u8,
}

impl CandidateWhy {
    pub fn new(factors: &EtaFactors, tau: f64, score: i64) -> Self {
        Self {
            reliability: factors.reliability as f32,
            cost_efficiency: factors.cost_efficiency as f32,
            sla_headroom: factors.sla_headroom as f32,
            spike_safety: factors.spike_safety as f32,
            fragmentation: factors.fragmentation.map(|f| f as f32),
            tau: tau as f32,
            score: score.clamp(0, 10) as u8,
        }
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
        *self.by_reason.entry(code.as_str().to_string()).or_default() += 1;
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

    /// The explanation as `GET /v1/tenants/{t}/decisions/{podUid}` answers it.
    pub fn explain(&self, pod_uid: &str, tenant: &str) -> DecisionExplanation {
        let stored = self.explanation.as_ref();
        let candidates = self
            .etas
            .iter()
            .enumerate()
            .map(|(i, (node, eta))| {
                let why = stored.and_then(|e| e.candidates.get(i));
                CandidateExplanation {
                    node: node.clone(),
                    eta: *eta,
                    factors: why.map(|w| EtaFactors {
                        reliability: w.reliability as f64,
                        cost_efficiency: w.cost_efficiency as f64,
                        sla_headroom: w.sla_headroom as f64,
                        spike_safety: w.spike_safety as f64,
                        fragmentation: w.fragmentation.map(f64::from),
                    }),
                    tau: why.map(|w| w.tau as f64),
                    score: why.map(|w| w.score),
                }
            })
            .collect();
        let mut notes = vec![
            "eta = clamp(reliability × costEfficiency × slaHeadroom × spikeSafety × fragmentation, ETA_FLOOR, 1); \
             fragmentation is absent (neutral) without per-GPU facts; factors and tau are stored as f32"
                .to_string(),
            "score = round(10 × tau^ALPHA × eta^BETA / best), the best candidate 10 (an explored node is raised to 10, other 10s become 9)"
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
    /// η as deposits use it (exact, f64).
    pub eta: f64,
    /// `null` for decisions stored before explanations.
    pub factors: Option<EtaFactors>,
    pub tau: Option<f64>,
    pub score: Option<u8>,
}
