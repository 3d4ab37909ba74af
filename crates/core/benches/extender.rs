//! Filter and prioritize over 6, 100, 1,000 and 5,000 real-shaped nodes, beside the floor of
//! only deserialising the same request: into a `serde_json::Value` (every field), and with our own
//! `parse_args` (raw node bytes kept, only the needed fields typed). Run: `cargo bench -p aco-core --bench extender`.

use aco_testkit::fixtures;

use std::collections::HashMap;

use aco_core::colony::TenantColony;
use aco_core::config::Config;
use aco_core::extender::{filter, parse_args, scoring_input};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rand::{rngs::SmallRng, SeedableRng};

fn bench(c: &mut Criterion) {
    let config = Config::default();
    let facts: HashMap<String, aco_core::facts::NodeFacts> = HashMap::new();
    let mut group = c.benchmark_group("extender");
    for n in [6usize, 100, 1_000, 5_000] {
        let body = fixtures::extender_args(n);
        group.throughput(Throughput::Elements(n as u64));
        group.sample_size(if n >= 1_000 { 20 } else { 100 });
        group.bench_with_input(
            BenchmarkId::new("floor_deserialise_value", n),
            &body,
            |b, body| b.iter(|| serde_json::from_str::<serde_json::Value>(body).unwrap()),
        );
        group.bench_with_input(BenchmarkId::new("floor_parse_args", n), &body, |b, body| {
            b.iter(|| {
                parse_args(body, &config.pod_keys, &config.node_keys)
                    .unwrap()
                    .candidates
                    .len()
            })
        });
        group.bench_with_input(BenchmarkId::new("filter", n), &body, |b, body| {
            b.iter(|| {
                let args = parse_args(body, &config.pod_keys, &config.node_keys).unwrap();
                let out = filter(&args, &facts, 0, &config).unwrap();
                serde_json::to_string(&out.result).unwrap()
            })
        });
        group.bench_with_input(BenchmarkId::new("prioritize", n), &body, |b, body| {
            let mut colony = TenantColony::default();
            let mut rng = SmallRng::seed_from_u64(1);
            b.iter(|| {
                let args = parse_args(body, &config.pod_keys, &config.node_keys).unwrap();
                let input = scoring_input(&args, &facts, &Default::default(), 0, &config).unwrap();
                let p = colony.prioritize(
                    &input.features,
                    input.demand.workload,
                    &input.demand.key,
                    0,
                    &config,
                    &mut rng,
                );
                serde_json::to_string(&p.priorities).unwrap()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
