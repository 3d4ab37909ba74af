//! The HTTP replay of the OpenB sample against the Worker (Miniflare) places every pod where the
//! native simulation of the colony does, and ends with the same learned state: same core code
//! (`aco_core::pipeline`), same facts, same tie-break RNG, and — the Worker under
//! `TEST_CLOCK_HEADER`, each request carrying the trace's time — the same clock, so every
//! time-dependent feature runs at its default on both sides: spot pools' exposure, outcome
//! fading, assumed placements' settle time, the facts' and colony copies' ages.
//! Needs the built Worker (`bash scripts/build-worker`).

use aco_sim::cluster::{worker_vars, World};
use aco_sim::engine::{run, PerformanceModel, SimParams};
use aco_sim::load::LoadModel;
use aco_sim::native::NativeScheduler;
use aco_sim::policy;
use aco_sim::predictor::PredictorKind;
use aco_sim::replay::HttpScheduler;
use aco_testkit::api::error_body;
use aco_testkit::{repo_root, StartOptions, WorkerProcess, ADMIN_TOKEN};

fn sample_world(seed: u64) -> World {
    aco_sim::cluster::sample_world(&repo_root(), seed).unwrap()
}

/// Per tenant, per node: both sides' values agree to `tolerance`, and the Worker has no node the
/// native run does not.
fn assert_same(
    what: &str,
    native: &[(String, Vec<(String, f64)>)],
    worker: &[(String, Vec<(String, f64)>)],
    tolerance: f64,
) {
    for (tenant, rows) in native {
        let Some((_, remote)) = worker.iter().find(|(t, _)| t == tenant) else {
            panic!("{what}: tenant {tenant} missing over HTTP")
        };
        assert_eq!(rows.len(), remote.len(), "{what}: nodes of {tenant}");
        for (node, v) in rows {
            let r = remote.iter().find(|(n, _)| n == node).map(|(_, t)| *t);
            assert!(
                r.is_some_and(|r| (r - v).abs() < tolerance),
                "{what} of {tenant}/{node}: native {v}, Worker {r:?}"
            );
        }
    }
}

#[test]
fn replay_placements_and_learning_equal_the_native_colony() {
    let seed = 7;
    let world = sample_world(seed);
    let load = LoadModel {
        seed,
        ..LoadModel::default()
    };
    // Node performance varies, so outcomes carry run-time slowdowns and the colonies learn them.
    let params = SimParams {
        seed,
        max_pods: Some(120),
        pheromone_samples: 1,
        performance: PerformanceModel::Shared,
        ..SimParams::default()
    };

    let mut native = NativeScheduler::new(
        policy::by_name("colony", seed).unwrap(),
        world.config.clone(),
        PredictorKind::Ema(world.config.load.ema_alpha),
    );
    let expected = run(&world, &load, &params, &mut native).unwrap();

    let mut options = StartOptions::default().var("TEST_CLOCK_HEADER", "true");
    for (k, v) in worker_vars() {
        options = options.var(k, v);
    }
    let worker = WorkerProcess::start(options);
    let mut http = HttpScheduler::new(&worker.base_url, ADMIN_TOKEN, &world)
        .unwrap()
        .on_trace_clock();
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
    let placed = expected
        .placements
        .iter()
        .filter(|(_, n)| n.is_some())
        .count();
    assert!(placed > 100, "{placed} pods placed");
    // The time-dependent features were exercised: spot nodes reclaimed (their pools' learning),
    // outcomes reported (and faded by the time they are read).
    assert!(
        expected.metrics.outcomes_reported > 20,
        "{:?}",
        expected.metrics
    );

    // The learned state agrees: τ per node and the slowdowns learned from the outcomes, per
    // tenant.
    let native_trails = native.pheromones_snapshot();
    let http_trails = http.pheromone_tables(&world).unwrap();
    assert_same("τ", &native_trails, &http_trails, 1e-9);
    let native_slowdowns = native.learned_slowdowns();
    let learned: usize = native_slowdowns.iter().map(|(_, rows)| rows.len()).sum();
    assert!(learned > 10, "slowdowns learned on {learned} nodes");
    assert!(
        native_slowdowns
            .iter()
            .flat_map(|(_, rows)| rows)
            .any(|(_, s)| *s > 1.01),
        "some node learned to be slow: {native_slowdowns:?}"
    );
    let http_slowdowns = http.slowdown_tables(&world).unwrap();
    assert_same("slowdown", &native_slowdowns, &http_slowdowns, 1e-9);
}

/// A Worker that authenticates its verbs refuses the test clock (anyone who can call the verbs
/// could set it): every route but the probes answers 503 naming the var.
#[test]
fn the_test_clock_is_refused_where_the_verbs_are_authenticated() {
    let worker = WorkerProcess::start(
        StartOptions::default()
            .var("TEST_CLOCK_HEADER", "true")
            .var("EXTENDER_AUTH", "path-token")
            .var("EXTENDER_TOKENS", "a-long-enough-test-token-0123456789"),
    );
    let client = reqwest::blocking::Client::new();
    let res = client
        .post(format!("{}/v1/placements", worker.base_url))
        .bearer_auth(ADMIN_TOKEN)
        .header(aco_sim::replay::TEST_CLOCK_HEADER, "1000")
        .body(r#"{"placements":[]}"#)
        .send()
        .unwrap();
    assert_eq!(res.status().as_u16(), 503);
    let text = res.text().unwrap();
    assert!(text.contains("TEST_CLOCK_HEADER"), "{text}");
}

/// Under the test clock a request without its time is refused naming the header; one with it is
/// served.
#[test]
fn under_the_test_clock_every_request_carries_its_time() {
    let worker = WorkerProcess::start(StartOptions::default().var("TEST_CLOCK_HEADER", "true"));
    let client = reqwest::blocking::Client::new();
    let put = |time: Option<&str>| {
        let mut req = client
            .put(format!("{}/v1/nodes", worker.base_url))
            .bearer_auth(ADMIN_TOKEN)
            .body(r#"{"nodes":[]}"#);
        if let Some(t) = time {
            req = req.header(aco_sim::replay::TEST_CLOCK_HEADER, t);
        }
        req.send().unwrap()
    };
    for bad in [None, Some("soon")] {
        let res = put(bad);
        assert_eq!(res.status().as_u16(), 400, "{bad:?}");
        let body = error_body(&res.text().unwrap());
        assert_eq!(
            body.field.as_deref(),
            Some(aco_sim::replay::TEST_CLOCK_HEADER),
            "{body:?}"
        );
    }
    assert_eq!(put(Some("60000")).status().as_u16(), 200);
}
