//! Names mode (`nodeCacheCapable: true`) natively, stage by stage, over 1,000 and 5,000 nodes
//! whose facts are held in one shared map with their labels read (`KeptFacts`), as the Worker's
//! isolate holds them: `parse_args` of the names, the per-request copy of the candidates' facts
//! the Worker used to make (`copy`), `filter` (parse + rules + reply) — and `filter_reading_labels`,
//! the same over bare records whose labels every call reads — and `prioritize` (parse +
//! features + colony + reply) reading the shared facts in place; `filter_assumed` is `filter`
//! read through the isolate's assumed placements with 256 pods assumed on 256 of the nodes (the
//! Worker's path after a burst: one hash lookup more per candidate).
//! Run: `cargo bench -p aco-core --bench names_mode`.

use std::collections::HashMap;

use aco_core::api::nodes::NodeReport;
use aco_core::assumed::AssumedPlacements;
use aco_core::colony::TenantColony;
use aco_core::config::Config;
use aco_core::extender::{filter, parse_args, scoring_input};
use aco_core::facts::{KeptFacts, NodeFacts, ReadFacts};
use aco_core::heuristic::ClusterOutlook;
use aco_core::wire::{write_filter_result, write_priorities};
use aco_testkit::fixtures;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rand::{rngs::SmallRng, SeedableRng};

/// The facts a `PUT /v1/nodes` of the same nodes leaves in the Facts object.
fn facts(count: usize, config: &Config) -> HashMap<String, NodeFacts> {
    #[derive(serde::Deserialize)]
    struct Batch {
        nodes: Vec<NodeReport>,
    }
    let batch: Batch = serde_json::from_str(&fixtures::node_facts_report(count)).unwrap();
    batch
        .nodes
        .iter()
        .map(|r| {
            let mut f = NodeFacts::default();
            f.apply(r, 0, &config.load);
            (f.name.clone(), f)
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let config = Config::default();
    let mut group = c.benchmark_group("names_mode");
    for n in [1_000usize, 5_000] {
        let body = fixtures::extender_args_names(n);
        let shared = facts(n, &config);
        let kept: KeptFacts = shared
            .iter()
            .map(|(name, f)| {
                (
                    name.clone(),
                    ReadFacts::read(f.clone(), &config.node_keys, &config.spot),
                )
            })
            .collect();
        let outlook = ClusterOutlook::from_facts(shared.values(), Default::default(), 0, &config);
        group.throughput(Throughput::Elements(n as u64));
        group.sample_size(20);
        group.bench_with_input(BenchmarkId::new("parse_args", n), &body, |b, body| {
            b.iter(|| {
                parse_args(body, &config.pod_keys, &config.node_keys)
                    .unwrap()
                    .candidates
                    .len()
            })
        });
        group.bench_with_input(BenchmarkId::new("copy", n), &body, |b, body| {
            let args = parse_args(body, &config.pod_keys, &config.node_keys).unwrap();
            b.iter(|| {
                args.node_names()
                    .filter_map(|name| shared.get(name).map(|f| (name.to_string(), f.clone())))
                    .collect::<HashMap<_, _>>()
                    .len()
            })
        });
        group.bench_with_input(BenchmarkId::new("filter", n), &body, |b, body| {
            b.iter(|| {
                let args = parse_args(body, &config.pod_keys, &config.node_keys).unwrap();
                let out = filter(&args, &kept, 0, &config).unwrap();
                let mut reply = Vec::new();
                write_filter_result(&out.result, &mut reply);
                reply.len()
            })
        });
        group.bench_with_input(BenchmarkId::new("filter_assumed", n), &body, |b, body| {
            let pod = parse_args(body, &config.pod_keys, &config.node_keys)
                .unwrap()
                .demand
                .unwrap();
            let mut assumed = AssumedPlacements::new();
            for (i, name) in kept.keys().take(256).enumerate() {
                let pod = aco_core::demand::PodDemand {
                    key: format!("ns/burst-{i}"),
                    ..pod.clone()
                };
                assumed.assume(name, &pod, &kept, 0, &config);
            }
            b.iter(|| {
                let args = parse_args(body, &config.pod_keys, &config.node_keys).unwrap();
                let out = filter(&args, &assumed.over(&kept), 0, &config).unwrap();
                let mut reply = Vec::new();
                write_filter_result(&out.result, &mut reply);
                reply.len()
            })
        });
        group.bench_with_input(
            BenchmarkId::new("filter_reading_labels", n),
            &body,
            |b, body| {
                b.iter(|| {
                    let args = parse_args(body, &config.pod_keys, &config.node_keys).unwrap();
                    let out = filter(&args, &shared, 0, &config).unwrap();
                    let mut reply = Vec::new();
                    write_filter_result(&out.result, &mut reply);
                    reply.len()
                })
            },
        );
        group.bench_with_input(BenchmarkId::new("scoring_input", n), &body, |b, body| {
            b.iter(|| {
                let args = parse_args(body, &config.pod_keys, &config.node_keys).unwrap();
                scoring_input(&args, &kept, &outlook, 0, &config)
                    .unwrap()
                    .features
                    .len()
            })
        });
        group.bench_with_input(BenchmarkId::new("prioritize", n), &body, |b, body| {
            let mut colony = TenantColony::default();
            let mut rng = SmallRng::seed_from_u64(1);
            b.iter(|| {
                let args = parse_args(body, &config.pod_keys, &config.node_keys).unwrap();
                let input = scoring_input(&args, &kept, &outlook, 0, &config).unwrap();
                let p = colony.prioritize(
                    &input.features,
                    input.demand.workload,
                    &input.demand.key,
                    0,
                    &config,
                    &mut rng,
                );
                let mut reply = Vec::new();
                write_priorities(&p.priorities, &mut reply);
                reply.len()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
