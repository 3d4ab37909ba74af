//! First-Fit: the first feasible node in cluster order. One policy for both benches: the score
//! is the node's index negated, whichever node list the index is into (the saturation run's
//! nodes in CSV order, the replay's `world.nodes`), so no two candidates tie.

use aco_core::node_state::NodeState;

use super::{Ctx, SatPolicy, Verdict};
use crate::policy::{Policy, ScoreCtx};

pub struct FirstFit;

fn score(candidates: &[usize]) -> impl Iterator<Item = f64> + '_ {
    candidates.iter().map(|c| -(*c as f64))
}

impl SatPolicy for FirstFit {
    fn name(&self) -> &'static str {
        "first-fit"
    }
    fn score(&mut self, _: &Ctx, candidates: &[usize]) -> Vec<Verdict> {
        score(candidates).map(Verdict::of).collect()
    }
}

impl Policy for FirstFit {
    fn name(&self) -> String {
        "first-fit".into()
    }
    fn score(&mut self, _: &ScoreCtx, candidates: &[usize], _: &[&NodeState]) -> Vec<f64> {
        score(candidates).collect()
    }
}
