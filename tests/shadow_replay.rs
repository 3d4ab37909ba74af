//! Shadow mode on the OpenB sample through the Worker (Miniflare): first-fit places the pods,
//! every placement is reported to `POST /v1/shadow`, and the Worker's counterfactual summary per
//! tenant equals the simulator's own, computed natively with the same core function over the
//! same facts (`aco_sim::shadow`). Needs the built Worker (`bash scripts/build-worker`).

use aco_sim::cluster::{worker_vars, World};
use aco_sim::engine::{run, SimParams};
use aco_sim::load::LoadModel;
use aco_sim::native::NativeScheduler;
use aco_sim::policy;
use aco_sim::predictor::PredictorKind;
use aco_sim::replay::HttpScheduler;
use aco_sim::shadow::ShadowReplay;
use aco_testkit::{repo_root, StartOptions, WorkerProcess, ADMIN_TOKEN};

fn sample_world(seed: u64) -> World {
    aco_sim::cluster::sample_world(&repo_root(), seed).unwrap()
}

#[test]
fn the_workers_shadow_summary_equals_the_simulators() {
    let seed = 7;
    let mut world = sample_world(seed);
    // The Worker records outcomes by the wall clock, the simulator by the trace's: outcomes that
    // fade (OUTCOME_HALF_LIFE_MS) would fade differently, so here they do not (the fade is
    // compared in `reliability.rs`).
    world.config.cost.outcome_half_life_ms = 0;
    let load = LoadModel {
        seed,
        ..LoadModel::default()
    };
    let params = SimParams {
        seed,
        max_pods: Some(120),
        pheromone_samples: 1,
        ..SimParams::default()
    };

    let mut options = StartOptions::default()
        .var("FACTS_CACHE_MS", "0")
        .var("EMA_ALPHA", world.config.load.ema_alpha.to_string())
        .var("OUTCOME_HALF_LIFE_MS", "0");
    for (k, v) in worker_vars() {
        options = options.var(k, v);
    }
    let worker = WorkerProcess::start(options);
    let baseline = NativeScheduler::new(
        policy::by_name("first-fit", seed).unwrap(),
        world.config.clone(),
        PredictorKind::Ema(world.config.load.ema_alpha),
    );
    let http = HttpScheduler::new(&worker.base_url, ADMIN_TOKEN, &world).unwrap();
    let mut shadow = ShadowReplay::new(baseline, http, world.config.clone());
    let result = run(&world, &load, &params, &mut shadow)
        .unwrap_or_else(|e| panic!("shadow replay failed: {e}\n{}", worker.logs()));

    // The baseline placed the pods as it does alone: shadow mode steers nothing.
    let mut alone = NativeScheduler::new(
        policy::by_name("first-fit", seed).unwrap(),
        world.config.clone(),
        PredictorKind::Ema(world.config.load.ema_alpha),
    );
    assert_eq!(
        result.placements,
        run(&world, &load, &params, &mut alone).unwrap().placements
    );

    let remote = shadow.worker_summaries(&world).unwrap();
    let mut scored = 0;
    for (tenant, w) in &remote {
        let n = shadow.native.get(tenant).cloned().unwrap_or_default();
        let close = |x: f64, v: f64| (x - v).abs() < 1e-9 * v.abs().max(1.0);
        assert_eq!(
            (w.pods, w.agreements, w.not_feasible),
            (n.pods, n.agreements, n.not_feasible),
            "{tenant}: {w:?} vs {n:?}"
        );
        assert!(
            close(w.chosen_cost_per_hour, n.chosen_cost_per_hour),
            "{tenant}: {w:?} vs {n:?}"
        );
        assert!(
            close(w.colony_cost_per_hour, n.colony_cost_per_hour),
            "{tenant}: {w:?} vs {n:?}"
        );
        assert!(
            close(w.saving_per_hour, n.saving_per_hour()),
            "{tenant}: {w:?} vs {n:?}"
        );
        assert_eq!(
            (
                w.latency_critical,
                w.latency_critical_on_hot_nodes.chosen,
                w.latency_critical_on_hot_nodes.colony
            ),
            (
                n.latency_critical,
                n.latency_critical_on_hot_chosen,
                n.latency_critical_on_hot_colony
            ),
            "{tenant}"
        );
        scored += n.pods;
    }
    // Pods, not bindings: a pod evicted by a spot reclamation and bound again is one pod (the
    // Worker counts its second report as a duplicate).
    let placed = result.metrics.placed as u64;
    assert_eq!(
        scored + shadow.native_total().not_feasible + shadow.not_scored,
        placed,
        "every placed pod was reported once"
    );
    assert!(scored > 100, "{scored} of {placed}");
    // The figure itself is a finding, not a property (docs/shadow.md): on this sample first-fit
    // packs so tightly that its marginal cost is below the colony's, which also weighs spot
    // reliability and latency-critical headroom.
    let total = shadow.native_total();
    assert!(
        total.chosen_cost_per_hour.is_finite() && total.colony_cost_per_hour > 0.0,
        "{total:?}"
    );
    // Far below the 1,000 per invocation: one facts read, the colony's admission (its first use
    // in an isolate) and one colony fetch at most, one batch.
    assert!(shadow.cost.max_binding_ops <= 4, "{:?}", shadow.cost);
}
