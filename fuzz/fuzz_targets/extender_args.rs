//! ExtenderArgs as kube-scheduler would send them (or not): parsing, filter and scoring never
//! panic, errors are client errors (4xx), a filter reply serialises, and the verbs read node by
//! node (`filter_body`, `scoring_input_body`) give what parsing first gives, answer or error.
#![no_main]
use std::collections::HashMap;

use aco_core::config::Config;
use aco_core::extender::{
    filter, filter_body, parse_args, scoring_input, scoring_input_body, BadRequest,
};
use aco_core::heuristic::ClusterOutlook;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(body) = std::str::from_utf8(data) else {
        return;
    };
    let config = Config::default();
    let now = 1_700_000_000_000;
    let facts: HashMap<String, aco_core::facts::NodeFacts> = HashMap::new();
    let outlook = ClusterOutlook::default();
    let error = |e: BadRequest| (e.status, e.field, e.message);
    let reply = |r: &aco_core::wire::ExtenderFilterResult| serde_json::to_string(r).unwrap();
    assert_eq!(
        filter_body(body, &facts, now, &config)
            .map(|s| reply(&s.output.result))
            .map_err(error),
        parse_args(body, &config.pod_keys, &config.node_keys)
            .and_then(|a| filter(&a, &facts, now, &config))
            .map(|o| reply(&o.result))
            .map_err(error),
        "filter read node by node"
    );
    assert_eq!(
        scoring_input_body(body, &facts, &outlook, now, &config)
            .map(|s| format!("{:?}", s.output))
            .map_err(error),
        parse_args(body, &config.pod_keys, &config.node_keys)
            .and_then(|a| scoring_input(&a, &facts, &outlook, now, &config))
            .map(|s| format!("{s:?}"))
            .map_err(error),
        "scoring input read node by node"
    );
    let args = match parse_args(body, &config.pod_keys, &config.node_keys) {
        Ok(a) => a,
        Err(e) => {
            assert!(
                (400..500).contains(&e.status),
                "parse error of the wrong kind: {e:?}"
            );
            return;
        }
    };
    match filter(&args, &facts, now, &config) {
        Ok(out) => {
            serde_json::to_string(&out.result).expect("filter reply serialises");
        }
        Err(e) => assert!(
            (400..500).contains(&e.status),
            "filter error of the wrong kind: {e:?}"
        ),
    }
    if let Err(e) = scoring_input(&args, &facts, &outlook, now, &config) {
        assert!(
            (400..500).contains(&e.status),
            "scoring error of the wrong kind: {e:?}"
        );
    }
});
