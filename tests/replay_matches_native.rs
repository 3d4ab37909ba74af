//! The HTTP replay of the OpenB sample against the Worker (Miniflare) places every pod where the
//! native simulation of the colony does: same core code, same facts, same tie-break RNG.
//! Needs the built Worker (`bash scripts/build-worker`).

use aco_sim::cluster::{worker_vars, World};
use aco_sim::engine::{run, SimParams};
use aco_sim::load::LoadModel;
use aco_sim::native::NativeScheduler;
use aco_sim::policy;
use aco_sim::predictor::PredictorKind;
use aco_sim::replay::HttpScheduler;
use aco_testkit::{repo_root, StartOptions, WorkerProcess, ADMIN_TOKEN};

fn sample_world(seed: u64) -> World {
    aco_sim::cluster::sample_world(&repo_root(), seed).unwrap()
}

#[test]
fn replay_placements_equal_the_native_colony() {
    let seed = 7;
    let mut world = sample_world(seed);
    // The replay sends facts stamped with the wall clock (the Worker judges freshness by it), so
    // a spot pool's exposure there is the replay's few milliseconds per report, not the trace's
    // minutes: the pools' learning is compared elsewhere (`facts_shards`, `spot_risk`); here a
    // prior worth 10^12 node-hours keeps every spot rate at its band on both sides.
    world.config.spot_prior_node_hours = 1e12;
    // Likewise outcomes fade by the clock (OUTCOME_HALF_LIFE_MS): over the replay's seconds they
    // would not, over the trace's hours they do; the fade is compared in `reliability.rs`.
    world.config.outcome_half_life_ms = 0;
    // And an assumed placement ends when a report observed after it (plus ASSUMED_SETTLE_MS)
    // arrives: the trace's reports are a minute apart, the replay's milliseconds, so the settle
    // time is 0 on both sides (the rule itself is tested in `assumed.rs`).
    world.config.assumed_settle_ms = 0;
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

    let mut native = NativeScheduler::new(
        policy::by_name("colony", seed).unwrap(),
        world.config.clone(),
        PredictorKind::Ema(0.5),
    );
    let expected = run(&world, &load, &params, &mut native).unwrap();

    let mut options = StartOptions::default()
        .var("FACTS_CACHE_MS", "0")
        .var("Q0", "1")
        .var("EMA_ALPHA", "0.5")
        .var("SPOT_PRIOR_NODE_HOURS", "1e12")
        .var("OUTCOME_HALF_LIFE_MS", "0")
        .var("ASSUMED_SETTLE_MS", "0");
    for (k, v) in worker_vars() {
        options = options.var(k, v);
    }
    let worker = WorkerProcess::start(options);
    let mut http = HttpScheduler::new(&worker.base_url, ADMIN_TOKEN, &world).unwrap();
    let got = run(&world, &load, &params, &mut http)
        .unwrap_or_else(|e| panic!("replay failed: {e}\n{}", worker.logs()));

    assert_eq!(got.placements.len(), expected.placements.len());
    let differing: Vec<_> = got
        .placements
        .iter()
        .zip(&expected.placements)
        .enumerate()
        .filter(|(_, (a, b))| a != b)
        .take(5)
        .collect();
    assert!(
        differing.is_empty(),
        "first differing placements (index, (replay, native)): {differing:?}"
    );
    assert!(
        expected
            .placements
            .iter()
            .filter(|(_, n)| n.is_some())
            .count()
            > 100
    );

    // The trails agree too (τ per node, per tenant).
    let native_trails = native.pheromones_snapshot();
    let mut http_trails = http.pheromone_tables(&world).unwrap();
    http_trails.sort_by(|a, b| a.0.cmp(&b.0));
    for (tenant, rows) in native_trails {
        let Some((_, remote)) = http_trails.iter().find(|(t, _)| *t == tenant) else {
            panic!("tenant {tenant} missing over HTTP")
        };
        for (node, tau) in rows.iter().take(5) {
            let r = remote.iter().find(|(n, _)| n == node).map(|(_, t)| *t);
            assert!(
                r.is_some_and(|r| (r - tau).abs() < 1e-6),
                "{tenant}/{node}: native τ {tau}, Worker {r:?}"
            );
        }
    }
}
