use serde::{Deserialize, Serialize};

/// What a reporter may say about a placement beyond "the pod was bound there".
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Outcome {
    /// Observed quality in [0, 1] (e.g. the fraction of the run the pod met its SLO).
    Quality(f64),
    Label(OutcomeLabel),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OutcomeLabel {
    Succeeded,
    Failed,
}

impl Outcome {
    /// Quality in [0, 1], or an error naming the problem.
    pub fn quality(self) -> Result<f64, String> {
        match self {
            Outcome::Quality(q) if q.is_finite() && (0.0..=1.0).contains(&q) => Ok(q),
            Outcome::Quality(q) => Err(format!("outcome {q} is outside 0.0–1.0")),
            Outcome::Label(OutcomeLabel::Succeeded) => Ok(1.0),
            Outcome::Label(OutcomeLabel::Failed) => Ok(0.0),
        }
    }
}
