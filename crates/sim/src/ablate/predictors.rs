//! `aco-sim ablate predictors`: the colony's safe-node routing, LS QoS and cost with each load
//! predictor of [`PredictorKind::ablation_set`] feeding η, over several seeds, on the load model
//! the command line names.

use crate::cluster::World;
use crate::engine::{Metrics, SimParams};
use crate::load::LoadModel;
use crate::native::NativeScheduler;
use crate::policy;
use crate::predictor::PredictorKind;
use crate::progress::Progress;
use crate::report::AblationRow;
use crate::trace::Error;

/// What the runner needs from the command line: the seeds and the world, simulation and load of
/// a seed.
pub struct PredictorPlan<'a> {
    /// Counts the pods of every run (`crate::progress`).
    pub progress: Progress,
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
                params.pheromone_samples = 1;
                let mut s = NativeScheduler::new(
                    policy::by_name("colony", seed).unwrap(),
                    world.config.clone(),
                    kind,
                );
                let load = (plan.load_of)(seed)?;
                Ok(plan.progress.run(&world, &load, &params, &mut s)?.metrics)
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
        plan.progress.println(format!(
            "{:>24}: safe {:.2}% ± {:.2}",
            row.predictor,
            100.0 * row.safe_routing_mean,
            100.0 * row.safe_routing_sd
        ));
        rows.push(row);
    }
    plan.progress.finish();
    Ok(rows)
}
