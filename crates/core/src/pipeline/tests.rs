use std::collections::HashMap;

use rand::rngs::SmallRng;
use rand::SeedableRng;

use super::*;
use crate::api::nodes::NodeReport;
use crate::facts_shards::shard_of;

/// Node `name` with 2 GPUs (`free` milli-GPU each) and `cpu` of its 16 CPUs requested, as the
/// reporter saw it at `at_ms`.
fn report(name: &str, cpu: u32, free: [u32; 2], at_ms: u64) -> NodeReport {
    let used_gpus = free.iter().filter(|f| **f < 1000).count();
    serde_json::from_str(&format!(
        r#"{{"name":"{name}","labels":{{"aco/cost-per-hour":"3.0","aco/gpu-type":"V100M16"}},
        "allocatable":{{"cpu":"16","memory":"64Gi","nvidia.com/gpu":"2"}},
        "requested":{{"cpu":"{cpu}","memory":"8Gi","nvidia.com/gpu":"{used_gpus}"}},
        "gpuFreeMilli":[{},{}],"observedAtMs":{at_ms}}}"#,
        free[0], free[1]
    ))
    .unwrap()
}

fn map(reports: &[NodeReport], config: &Config) -> HashMap<String, NodeFacts> {
    reports
        .iter()
        .map(|r| {
            let mut f = NodeFacts::default();
            f.apply(r, r.observed_at_ms.unwrap_or(0), &config.load);
            (f.name.clone(), f)
        })
        .collect()
}

/// The same records as the Worker's copy holds them: by shard, as the Facts object serves them.
fn sharded(records: &HashMap<String, NodeFacts>, config: &Config) -> ClusterFacts {
    let mut shards: BTreeMap<usize, Vec<NodeFacts>> = BTreeMap::new();
    let mut names: Vec<&String> = records.keys().collect();
    names.sort();
    for name in names {
        shards
            .entry(shard_of(name))
            .or_default()
            .push(records[name].clone());
    }
    let mut facts = ClusterFacts::default();
    for (id, nodes) in shards {
        facts.replace_shard(id, nodes, &config.node_keys, &config.spot);
    }
    facts
}

/// A names-mode body for a pod of `gpus` GPUs and 4 CPUs.
fn body(uid: &str, gpus: u32, nodes: &[&str]) -> String {
    format!(
        r#"{{"Pod":{{"metadata":{{"name":"{uid}","namespace":"ns","uid":"{uid}"}},
        "spec":{{"containers":[{{"name":"c","resources":{{"requests":{{"cpu":"4","memory":"1Gi",
        "nvidia.com/gpu":"{gpus}"}},"limits":{{"nvidia.com/gpu":"{gpus}"}}}}}}]}}}},
        "NodeNames":{}}}"#,
        serde_json::to_string(nodes).unwrap()
    )
}

fn rng() -> SmallRng {
    SmallRng::seed_from_u64(7)
}

/// The node alone at the top of an answer.
fn top(p: &Prioritized) -> String {
    let max = p.priorities.iter().map(|h| h.score).max().unwrap();
    let mut top = p.priorities.iter().filter(|h| h.score == max);
    let first = top.next().unwrap().host.to_string();
    assert!(top.next().is_none(), "one node alone at the top");
    first
}

/// One pod through prioritize: (its answer's top, the candidates' committed shares).
fn prioritize<F: FactsView + Clone>(
    p: &mut ExtenderPipeline<F>,
    uid: &str,
    nodes: &[&str],
    now_ms: u64,
    config: &Config,
) -> (String, Vec<Option<f64>>) {
    let b = body(uid, 1, nodes);
    let input = p.scoring_input_body(&b, now_ms, config).unwrap().output;
    let shares = input.features.iter().map(|f| f.committed_share).collect();
    let answer = p
        .prioritize(
            &input.features,
            &input.demand,
            ColonySource::EtaAlone,
            now_ms,
            config,
            &mut rng(),
        )
        .unwrap();
    (top(&answer), shares)
}

#[test]
fn the_top_is_assumed_until_the_facts_show_the_pod() {
    let c = Config::default();
    let idle = [
        report("a", 0, [1000, 1000], 1_000),
        report("b", 0, [1000, 1000], 1_000),
    ];
    let mut p = ExtenderPipeline::new(map(&idle, &c));
    let (first, shares) = prioritize(&mut p, "u1", &["a", "b"], 1_500, &c);
    assert_eq!(shares[0], shares[1], "identical nodes");
    assert_eq!(p.assumed().len(), 1);
    assert!(p.assumed().record(&first).is_some());
    // The next pod sees the first one on its node.
    let (second, shares) = prioritize(&mut p, "u2", &["a", "b"], 1_600, &c);
    let i = usize::from(first == "b");
    assert!(shares[i] > shares[1 - i], "{shares:?}");
    // A report observed before the settle time has passed does not end the assumptions; one
    // observed after it, showing the pods, does (and names the nodes whose record changed).
    let busy = |at_ms| {
        let mut r = vec![
            report("a", 4, [0, 1000], at_ms),
            report("b", 4, [0, 1000], at_ms),
        ];
        r.sort_by(|x, y| x.name.cmp(&y.name));
        map(&r, &c)
    };
    p.update(|f, _| *f = busy(1_700));
    p.settle(1_700, &c);
    assert_eq!(p.assumed().len(), 2);
    let later = 1_600 + c.assumed.assumed_settle_ms + 1;
    p.update(|f, _| *f = busy(later));
    let mut changed = p.settle(later, &c);
    changed.sort();
    let mut expected = vec![first, second];
    expected.sort();
    expected.dedup();
    assert_eq!(changed, expected);
    assert!(p.assumed().is_empty());
    // Nothing new: nothing to do.
    assert!(p.settle(later, &c).is_empty());
}

#[test]
fn the_filter_assumes_its_only_node_and_judges_the_facts_alone() {
    let c = Config::default();
    let facts = [
        report("a", 0, [1000, 1000], 1_000),
        report("b", 0, [0, 0], 1_000),
    ];
    let mut p = ExtenderPipeline::new(map(&facts, &c));
    let b = body("u1", 2, &["a", "b"]);
    let out = p.filter_body(&b, 1_500, &c).unwrap().output;
    assert_eq!(out.result.node_names.as_deref().unwrap(), ["a"]);
    assert!(p.assumed().record("a").is_some());
    // The assumption fills node a, yet the filter still passes it: a guess never rejects.
    let b = body("u2", 2, &["a", "b"]);
    let out = p.filter_body(&b, 1_600, &c).unwrap().output;
    assert_eq!(out.result.node_names.as_deref().unwrap(), ["a"]);
    // Two nodes passing: kube-scheduler asks prioritize, nothing is assumed here.
    let mut p = ExtenderPipeline::new(map(
        &[facts[0].clone(), report("c", 0, [1000, 1000], 1_000)],
        &c,
    ));
    let b = body("u3", 1, &["a", "c"]);
    assert_eq!(p.filter_body(&b, 1_500, &c).unwrap().output.passed, 2);
    assert!(p.assumed().is_empty());
}

#[test]
fn the_outlook_is_computed_once_per_version_of_the_facts() {
    let c = Config::default();
    let mut p = ExtenderPipeline::new(map(&[report("a", 0, [1000, 0], 1_000)], &c));
    let first = p.outlook(1_000, &c);
    assert_eq!(first.gpu_scarcity, Some(0.5));
    assert!(Rc::ptr_eq(&first, &p.outlook(2_000, &c)), "same version");
    p.update(|f, _| *f = map(&[report("a", 0, [0, 0], 2_000)], &c));
    assert_eq!(p.outlook(2_000, &c).gpu_scarcity, Some(1.0));
    p.update(|_, pools| pools.pools.insert("x".into(), PoolHistory::default()));
    assert_eq!(p.outlook(2_000, &c).pools.len(), 1);
}

/// The Worker's copy (records by shard, labels read once) and a plain map of the same records
/// give the same features, answers and assumptions, pod after pod.
#[test]
fn a_sharded_copy_answers_as_a_map_of_the_same_records() {
    let c = Config::default();
    let reports: Vec<NodeReport> = (0..40)
        .map(|i| {
            let free = [[1000, 1000], [500, 1000], [0, 250], [0, 0]][i % 4];
            report(&format!("node-{i:02}"), (i % 9) as u32, free, 1_000)
        })
        .collect();
    let records = map(&reports, &c);
    let names: Vec<String> = (0..40).map(|i| format!("node-{i:02}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut plain = ExtenderPipeline::new(records.clone());
    let mut copy = ExtenderPipeline::new(sharded(&records, &c));
    assert_eq!(*plain.outlook(1_000, &c), *copy.outlook(1_000, &c));
    for k in 0..12 {
        let uid = format!("pod-{k}");
        let now = 1_000 + 10 * k;
        let a = prioritize(&mut plain, &uid, &names, now, &c);
        let b = prioritize(&mut copy, &uid, &names, now, &c);
        assert_eq!(a, b, "pod {k}");
    }
    assert_eq!(plain.assumed().len(), 12);
    assert_eq!(copy.assumed().len(), 12);
}

#[test]
fn each_colony_source_scores_from_its_colony_or_says_there_is_none() {
    let c = Config::default();
    let facts = [
        report("a", 0, [1000, 1000], 1_000),
        report("b", 2, [1000, 1000], 1_000),
    ];
    let mut p = ExtenderPipeline::new(map(&facts, &c));
    let b = body("u1", 1, &["a", "b"]);
    let input = p.scoring_input_body(&b, 1_000, &c).unwrap().output;
    let score = |p: &mut ExtenderPipeline<_>, from| {
        p.score(&input.features, &input.demand, from, 1_000, &c, &mut rng())
            .map(|a| a.answer.scores)
    };
    let fresh = ColonySource::Fresh {
        tenant: "t",
        max_age_ms: 60_000,
    };
    assert_eq!(score(&mut p, fresh), None, "no copy yet");
    assert_eq!(score(&mut p, ColonySource::Any("t")), None);
    let eta_alone = score(&mut p, ColonySource::EtaAlone).unwrap();
    assert_eq!(
        score(&mut p, ColonySource::Held("t")),
        Some(eta_alone.clone())
    );
    // The held colony is a copy like any other now, and counts what it scored.
    assert_eq!(score(&mut p, fresh), Some(eta_alone.clone()));
    assert_eq!(score(&mut p, ColonySource::Any("t")), Some(eta_alone));
    assert_eq!(
        p.colonies().with_any("t", |c| c.counters.decisions),
        Some(3)
    );
}

/// The colony learns a node's slowdown from the run times the reporter sends, and η prices it:
/// of two identical nodes the one that ran pods slower loses the top, and its slowdown term shows
/// in the decision's explanation.
#[test]
fn slowdowns_learned_from_outcomes_move_the_answer() {
    use crate::colony::{ObservedOutcome, Outcome, PodRecord};
    let c = Config::default();
    let idle = [
        report("a", 0, [1000, 1000], 1_000),
        report("b", 0, [1000, 1000], 1_000),
    ];
    let mut p = ExtenderPipeline::new(map(&idle, &c));
    let b = body("u0", 1, &["a", "b"]);
    let input = p.scoring_input_body(&b, 1_000, &c).unwrap().output;
    let answer = |p: &mut ExtenderPipeline<_>, now| {
        p.prioritize(
            &input.features,
            &input.demand,
            ColonySource::Held("ns"),
            now,
            &c,
            &mut rng(),
        )
        .unwrap()
    };
    let first = top(&answer(&mut p, 1_000));
    // Pods ran twice as long as usual on the node that won, as fast as usual on the other.
    let other = if first == "a" { "b" } else { "a" };
    let colony = p.colonies().colony_mut("ns", 2_000);
    for (i, (node, slowdown)) in [(first.as_str(), 2.0), (other, 1.0)]
        .iter()
        .cycle()
        .take(8)
        .enumerate()
    {
        let decision = colony
            .score(
                &input.features,
                input.demand.workload,
                &format!("p{i}"),
                2_000,
                &c,
                &mut rng(),
            )
            .decision;
        let mut record = PodRecord {
            decision: Some(decision),
            confirmed: None,
        };
        let ran = Outcome::Observed(ObservedOutcome {
            quality: 1.0,
            cost_per_hour: None,
            slowdown: Some(*slowdown),
            cause: None,
        });
        colony
            .report(&mut record, node, Some(ran), 2_000, &c.cost)
            .unwrap();
    }
    let learned = colony.pheromones.trails[&first].slowdown().unwrap();
    assert!((learned - (3.0 + 8.0) / 7.0).abs() < 1e-12, "{learned}");
    assert_eq!(colony.pheromones.trails[other].slowdown(), Some(1.0));
    let again = answer(&mut p, 3_000);
    assert_eq!(top(&again), other);
    let why = again.decision.explanation.unwrap();
    assert!(why.candidates.iter().any(|w| w.slowdown > 0.0), "{why:?}");
    // With the performance term left out, the slowdown is still learned but not priced.
    let off = Config::default().with(|c| {
        c.cost.eta_factors = crate::config::EtaFactorSet::without("performance").unwrap()
    });
    let priced = p
        .prioritize(
            &input.features,
            &input.demand,
            ColonySource::Held("ns"),
            3_000,
            &off,
            &mut rng(),
        )
        .unwrap();
    let why = priced.decision.explanation.unwrap();
    assert!(why.candidates.iter().all(|w| w.slowdown == 0.0));
}
