//! aco-core compiled to wasm32 and run in Node by wasm-bindgen-test-runner (`bash scripts/test`),
//! to catch anything that behaves differently in the Worker's target (f64 formatting, usize
//! width, panics) early. Compiles to nothing on native targets.
#![cfg(target_arch = "wasm32")]

use aco_core::predict::{spike_probability, Ema, Predictor};
use wasm_bindgen_test::wasm_bindgen_test;

#[wasm_bindgen_test]
fn ema_blends_and_round_trips_through_json() {
    let mut ema = Ema::new(0.5);
    assert_eq!(ema.forecast(), None);
    ema.observe(0.2);
    ema.observe(0.6);
    assert!((ema.forecast().unwrap() - 0.4).abs() < 1e-12);
    assert!((ema.volatility() - 0.2).abs() < 1e-12);

    // The Facts object keeps this state in its shard rows as JSON. serde_json (without its `float_roundtrip`
    // feature) may parse a float back 1 ULP off, so compare with a tolerance.
    let json = serde_json::to_string(&ema).unwrap();
    let back: Ema = serde_json::from_str(&json).unwrap();
    assert_eq!((back.alpha, back.samples), (ema.alpha, ema.samples));
    assert!((back.level.unwrap() - ema.level.unwrap()).abs() < 1e-15);
    assert!((back.volatility - ema.volatility).abs() < 1e-15);
}

#[wasm_bindgen_test]
fn spike_probability_is_bounded() {
    assert_eq!(spike_probability(0.5, 0.0, 0.9, 0.1), 0.0);
    assert_eq!(spike_probability(1.05, 0.0, 0.9, 0.1), 1.0);
}
