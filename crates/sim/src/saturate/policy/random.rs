//! Random: a uniformly random score per candidate (seeded), so the choice is uniform over the
//! feasible nodes.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::{Ctx, SatPolicy, Verdict};

pub struct RandomScore(StdRng);

impl RandomScore {
    pub fn new(seed: u64) -> Self {
        Self(StdRng::seed_from_u64(seed ^ 0x5A7_0AD0))
    }
}

impl SatPolicy for RandomScore {
    fn name(&self) -> &'static str {
        "random"
    }
    fn score(&mut self, _: &Ctx, candidates: &[usize]) -> Vec<Verdict> {
        candidates
            .iter()
            .map(|_| Verdict::of(self.0.random::<f64>()))
            .collect()
    }
}
