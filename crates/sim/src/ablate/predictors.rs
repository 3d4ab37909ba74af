//! `aco-sim ablate predictors`: the colony's safe-node routing, LS QoS and cost with each load
//! predictor of [`PredictorKind::ablation_set`] feeding η, over several seeds, on the load model
//! the command line names.

use crate::cluster::World;
use crate::engine::{run, Metrics, SimParams};
use crate::load::LoadModel;
use crate::native::NativeScheduler;
use crate::policy;
use crate::predictor::PredictorKind;
use crate::report::AblationRow;
use crate::trace::Error;

/// What the runner needs from the command line: the seeds and the world, simulation and load of
/// a seed.
pub struct PredictorPlan<'a> {
    pub seeds: Vec<u64>,
    pub jobs: usize,
    pub world_of: &'a (dyn Fn(u64) -> Result<World, Error> + Sync),
    pub sim_of: &'a (dyn Fn(u64) -> SimParams + Sync),
    pub load_of: &'a (dyn Fn(u64) -> Result<LoadModel, Error> + Sync),
}

/// One row per predictor: the colony with it over every seed (`jobs` threads per predictor).
pub fn run_predictor_ablation(plan: &PredictorPlan) -> Result<Vec<AblationRow>, Error> {
    let mut rows = Vec::new();
    for kind in PredictorKind::ablation_set() {
        let results = crate::parallel::map(&plan.seeds, plan.jobs, |&seed| {
            (|| -> Result<Metrics, Error> {
                let world = (plan.world_of)(seed)?;
                let mut params = (plan.sim_of)(seed);
                params.progress = false;
                params.pheromone_samples = 1;
                let mut s = NativeScheduler::new(
                    policy::by_name("colony", seed).unwrap(),
                    world.config.clone(),
                    kind,
                );
                Ok(run(&world, &(plan.load_of)(seed)?, &params, &mut s)?.metrics)
            })()
            .map_err(|e| e.to_string())
        });
        let (mut safe, mut qos, mut cost) = (Vec::new(), Vec::new(), Vec::new());
        for r in results {
            let m = r?;
            safe.push(m.safe_routing_rate);
            qos.push(m.ls_compliance);
            cost.push(m.cost_busy_usd);
        }
        let row = AblationRow::from_seeds(kind.label(), &safe, &qos, &cost);
        eprintln!(
            "{:>24}: safe {:.2}% ± {:.2}",
            row.predictor,
            100.0 * row.safe_routing_mean,
            100.0 * row.safe_routing_sd
        );
        rows.push(row);
    }
    Ok(rows)
}
