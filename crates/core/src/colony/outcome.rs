use serde::{Deserialize, Serialize};

/// What a reporter may say about a placement beyond "the pod was bound there".
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Outcome {
    /// Observed quality in [0, 1] (e.g. the fraction of the run the pod met its SLO).
    Quality(f64),
    Label(OutcomeLabel),
    /// Quality and what the placement was observed to cost (`{"quality": 1, "costPerHour": 0.3}`).
    Observed(ObservedOutcome),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OutcomeLabel {
    Succeeded,
    Failed,
}

/// An outcome with the placement's observed cost: the pod's share of its node's bill over its
/// run, in $/h (the simulator computes it from the nodes it keeps busy; a reporter could from
/// billing data). The cost is checked and kept in the wire shape, but the trail does not learn
/// it: η prices the node's bill from its labels, and a dollar learned again would count twice.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ObservedOutcome {
    /// As [`Outcome::Quality`]: whether the pod ran well (its SLO met), in [0, 1].
    pub quality: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_per_hour: Option<f64>,
    /// For a pod that ran to completion: its run time ÷ the median run time of the same
    /// workload in the cluster (the reporter keys a workload by its owner's template or a
    /// label). Above 1 the node ran it slower than usual — node performance no label shows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slowdown: Option<f64>,
    /// For a pod that failed (quality below 1): why, as far as the reporter can tell. Absent:
    /// the node's doing, as every failure counted before causes were reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<FailureCause>,
}

/// Why a pod failed on its node, so that the node's reliability learns only what η cannot see
/// from the facts: a failure η already prices would be counted twice, and every tenant's pods
/// would then avoid a node for what its load or its pool already says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum FailureCause {
    /// The node's load: a node-pressure eviction, a container the node's memory ran out under,
    /// a latency-critical pod's SLA broken on a hot node. η prices it from the measured load
    /// (`qosRisk`).
    Load,
    /// The node is gone (a spot reclamation, a deleted node): its pool's interruption rate
    /// prices it (`reclamationRisk`), and a replacement joins under another name.
    NodeGone,
    /// The node's own doing that no fact shows: not ready, a device that failed admission, an
    /// application that fails on this node only. What the reliability posterior is for.
    Node,
}

impl Outcome {
    /// Quality in [0, 1], or an error naming the problem: what the node's reliability learns.
    pub fn quality(self) -> Result<f64, String> {
        match self {
            Outcome::Quality(q) | Outcome::Observed(ObservedOutcome { quality: q, .. })
                if q.is_finite() && (0.0..=1.0).contains(&q) =>
            {
                self.cost_per_hour()?;
                self.slowdown()?;
                Ok(q)
            }
            Outcome::Quality(q) | Outcome::Observed(ObservedOutcome { quality: q, .. }) => {
                Err(format!("outcome quality {q} is outside 0.0–1.0"))
            }
            Outcome::Label(OutcomeLabel::Succeeded) => Ok(1.0),
            Outcome::Label(OutcomeLabel::Failed) => Ok(0.0),
        }
    }

    /// The reported [`ObservedOutcome::cost_per_hour`], checked: finite and ≥ 0.
    pub fn cost_per_hour(self) -> Result<Option<f64>, String> {
        match self {
            Outcome::Observed(ObservedOutcome {
                cost_per_hour: Some(c),
                ..
            }) if !(c.is_finite() && c >= 0.0) => Err(format!(
                "outcome costPerHour {c} must be a finite number ≥ 0"
            )),
            Outcome::Observed(o) => Ok(o.cost_per_hour),
            _ => Ok(None),
        }
    }

    /// The reported [`ObservedOutcome::slowdown`], checked: finite and > 0.
    pub fn slowdown(self) -> Result<Option<f64>, String> {
        match self {
            Outcome::Observed(ObservedOutcome {
                slowdown: Some(s), ..
            }) if !(s.is_finite() && s > 0.0) => Err(format!(
                "outcome slowdown {s} must be a finite number > 0 (run time / median run time)"
            )),
            Outcome::Observed(o) => Ok(o.slowdown),
            _ => Ok(None),
        }
    }

    /// Whether the node's reliability learns from this outcome: successes always, failures
    /// unless the reporter names a cause η prices already ([`FailureCause`]).
    pub fn teaches_reliability(self) -> bool {
        !matches!(
            self,
            Outcome::Observed(ObservedOutcome {
                cause: Some(FailureCause::Load | FailureCause::NodeGone),
                ..
            })
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observed_outcomes_parse_and_validate() {
        let o: Outcome = serde_json::from_str(r#"{"quality":1,"costPerHour":1.0}"#).unwrap();
        assert_eq!(
            (o.quality().unwrap(), o.cost_per_hour().unwrap()),
            (1.0, Some(1.0))
        );
        assert_eq!(
            serde_json::from_str::<Outcome>("0.25").unwrap(),
            Outcome::Quality(0.25)
        );
        assert_eq!(
            serde_json::from_str::<Outcome>(r#""failed""#)
                .unwrap()
                .quality()
                .unwrap(),
            0.0
        );
        let slow: Outcome = serde_json::from_str(r#"{"quality":1,"slowdown":1.25}"#).unwrap();
        assert_eq!(
            (slow.quality().unwrap(), slow.slowdown().unwrap()),
            (1.0, Some(1.25))
        );
        for bad in ["0", "-1"] {
            let o: Outcome =
                serde_json::from_str(&format!(r#"{{"quality":1,"slowdown":{bad}}}"#)).unwrap();
            assert!(o.quality().unwrap_err().contains("slowdown"), "{bad}");
        }
        let negative: Outcome = serde_json::from_str(r#"{"quality":1,"costPerHour":-2}"#).unwrap();
        assert!(negative.quality().unwrap_err().contains("costPerHour"));
        let high: Outcome = serde_json::from_str(r#"{"quality":1.5}"#).unwrap();
        assert!(high.quality().unwrap_err().contains("1.5"));
        assert!(
            serde_json::from_str::<Outcome>(r#"{"quality":1,"cost":2}"#).is_err(),
            "a misspelt field is refused, not ignored"
        );
    }
}
