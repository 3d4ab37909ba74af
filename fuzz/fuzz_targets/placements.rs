//! Placement reports against a colony: outcomes parsed from JSON as the Worker receives them,
//! then any sequence of scores and (replayed) reports. Invariants: no panic, every τ positive and
//! finite, at most one confirmation per scored pod, replays change nothing, and only an outcome
//! deposits on a trail.
#![no_main]
use std::collections::BTreeMap;

use aco_core::colony::{Outcome, PodRecord, ReportEffect, TenantColony};
use aco_core::config::Config;
use aco_core::demand::WorkloadClass;
use aco_core::heuristic::NodeFeatures;
use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use rand::{rngs::SmallRng, SeedableRng};

#[derive(Arbitrary, Debug)]
enum Op {
    Score {
        pod: u8,
        nodes: u8,
        cost: u8,
    },
    Report {
        pod: u8,
        node: u8,
        outcome: Option<String>,
    },
}

/// Built from JSON (as the Worker sends it to the colony), so optional fields added later default.
fn node(i: u8, cost: u8) -> NodeFeatures<'static> {
    serde_json::from_value(serde_json::json!({
        "node": format!("n{}", i % 8),
        "costPerHour": cost as f64 / 16.0,
        "spot": i % 3 == 0,
        "predictedUtilisation": (i % 10) as f64 / 10.0,
    }))
    .expect("NodeFeatures from JSON")
}

fuzz_target!(|ops: Vec<Op>| {
    let config = Config::default();
    let mut colony = TenantColony::default();
    let mut records: BTreeMap<u8, PodRecord> = BTreeMap::new();
    let mut rng = SmallRng::seed_from_u64(7);
    let mut scored = 0u64;
    for op in ops.into_iter().take(256) {
        match op {
            Op::Score { pod, nodes, cost } => {
                let candidates: Vec<NodeFeatures> = (0..(nodes % 8) + 1)
                    .map(|i| node(i, cost.wrapping_add(i)))
                    .collect();
                let key = format!("ns/pod-{pod}");
                let p = colony.prioritize(
                    &candidates,
                    WorkloadClass::Batch,
                    &key,
                    0,
                    &config,
                    &mut rng,
                );
                assert!(p.priorities.iter().all(|h| (0..=10).contains(&h.score)));
                let top = p.priorities.iter().map(|h| h.score).max().unwrap_or(0);
                assert!(
                    top == 0 || p.priorities.iter().filter(|h| h.score == top).count() == 1,
                    "one node alone at the top"
                );
                records.entry(pod % 16).or_default().decision = Some(p.decision);
                scored += 1;
            }
            Op::Report { pod, node, outcome } => {
                let outcome: Option<Outcome> = match outcome {
                    Some(text) => match serde_json::from_str::<Outcome>(&text) {
                        Ok(o) if o.quality().is_ok() => Some(o),
                        _ => continue,
                    },
                    None => None,
                };
                let record = records.entry(pod % 16).or_default();
                let before = (colony.clone(), record.clone());
                let name = format!("n{}", node % 8);
                let effect = colony
                    .report(record, &name, outcome, 1, &config.cost)
                    .expect("validated outcome");
                let deposited = match &effect {
                    ReportEffect::Placed { outcome, .. } => outcome.is_some(),
                    ReportEffect::OutcomeRecorded { .. } => true,
                    _ => false,
                };
                if !deposited {
                    assert_eq!(
                        before.0.pheromones, colony.pheromones,
                        "{effect:?} moved a trail"
                    );
                }
            }
        }
        for (_, tau) in colony.pheromones.snapshot(1, &config.cost) {
            assert!(tau.is_finite() && tau > 0.0, "τ {tau} is no trail");
        }
        assert!(
            colony.counters.deposits <= scored,
            "more deposits than decisions"
        );
    }
});
