//! Kubernetes quantities: any text either parses or is an error; what parses prints back to a
//! quantity equal to itself, and its rounded values never panic.
#![no_main]
use aco_core::quantity::{parse_milli, parse_value, Quantity};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let _ = parse_milli(s);
    let _ = parse_value(s);
    if let Ok(q) = s.parse::<Quantity>() {
        let _ = (
            q.milli_value_ceil(),
            q.value_ceil(),
            q.is_negative(),
            q.is_zero(),
        );
        let printed = q.to_string();
        let again: Quantity = printed
            .parse()
            .unwrap_or_else(|e| panic!("{s:?} printed as {printed:?} which does not parse: {e}"));
        assert_eq!(again, q, "{s:?} → {printed:?}");
    }
});
