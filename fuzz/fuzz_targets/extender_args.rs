//! ExtenderArgs as kube-scheduler would send them (or not): parsing, filter and scoring never
//! panic, errors are client errors (4xx), and a filter reply serialises.
#![no_main]
use std::collections::HashMap;

use aco_core::config::Config;
use aco_core::extender::{filter, parse_args, scoring_input};
use aco_core::heuristic::ClusterOutlook;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(body) = std::str::from_utf8(data) else {
        return;
    };
    let config = Config::default();
    let args = match parse_args(body, &config) {
        Ok(a) => a,
        Err(e) => {
            assert!(
                (400..500).contains(&e.status),
                "parse error of the wrong kind: {e:?}"
            );
            return;
        }
    };
    let facts = HashMap::new();
    match filter(&args, &facts, 1_700_000_000_000, &config) {
        Ok(out) => {
            serde_json::to_string(&out.result).expect("filter reply serialises");
        }
        Err(e) => assert!(
            (400..500).contains(&e.status),
            "filter error of the wrong kind: {e:?}"
        ),
    }
    let outlook = ClusterOutlook::default();
    if let Err(e) = scoring_input(&args, &facts, &outlook, 1_700_000_000_000, &config) {
        assert!(
            (400..500).contains(&e.status),
            "scoring error of the wrong kind: {e:?}"
        );
    }
});
