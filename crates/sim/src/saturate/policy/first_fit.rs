//! First-Fit: the first feasible node in the cluster's (CSV) order.

use super::{Ctx, SatPolicy, Verdict};

pub struct FirstFit;

impl SatPolicy for FirstFit {
    fn name(&self) -> &'static str {
        "first-fit"
    }
    fn score(&mut self, _: &Ctx, candidates: &[usize]) -> Vec<Verdict> {
        candidates
            .iter()
            .map(|c| Verdict::of(-(*c as f64)))
            .collect()
    }
}
