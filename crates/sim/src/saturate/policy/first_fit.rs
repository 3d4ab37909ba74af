//! First-Fit: the first feasible node in the cluster's (CSV) order. The replay's first-fit
//! (`crate::policy::FirstFit`) scores with the same [`score`].

use super::{Ctx, SatPolicy, Verdict};

pub struct FirstFit;

/// The score of the candidate at `index` in cluster order: the first wins, no two tie.
pub fn score(index: usize) -> f64 {
    -(index as f64)
}

impl SatPolicy for FirstFit {
    fn name(&self) -> &'static str {
        "first-fit"
    }
    fn score(&mut self, _: &Ctx, candidates: &[usize]) -> Vec<Verdict> {
        candidates.iter().map(|c| Verdict::of(score(*c))).collect()
    }
}
