//! Node reports (PUT /v1/nodes items): parse, validate, fold into a record; a valid report's
//! record serialises and reads back equal (the Facts object stores it as JSON in a shard row).
#![no_main]
use aco_core::api::nodes::NodeReport;
use aco_core::config::Config;
use aco_core::facts::{NodeFacts, ReadFacts};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(report) = serde_json::from_slice::<NodeReport>(data) else {
        return;
    };
    let now = 1_700_000_000_000;
    if report.validate("nodes[0]", now).is_err() {
        return;
    }
    let config = Config::default();
    let mut facts = NodeFacts::default();
    facts.apply(&report, now, &config.load);
    facts.apply(&report, now + 1000, &config.load);
    let text = serde_json::to_string(&facts).expect("facts serialise");
    let back: NodeFacts = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("stored facts do not read back: {e}: {text}"));
    assert_eq!(serde_json::to_string(&back).unwrap(), text);
    // What the verbs read of its labels, as the Worker reads it when the record arrives.
    let _ = ReadFacts::read(back, &config.node_keys, &config.spot);
});
