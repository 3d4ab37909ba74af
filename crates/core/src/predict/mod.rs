//! Load predictors: turn a node's utilisation samples (0.0–1.0, oldest first) into a
//! forecast of its next utilisation and a probability that it spikes.
//!
//! The Worker keeps an [`Ema`] per node in its facts, in the cluster's Facts Durable Object (its
//! state is serde-serialisable and updated on every `PUT /v1/nodes`); the simulator's ablation swaps in the other predictors through the
//! [`Predictor`] trait. Predictors never see clocks: samples arrive in order and the caller
//! decides what "stale" means.

mod ema;
mod holt;
mod linreg;
mod none;
mod persistence;
mod sma;
mod window;

pub use ema::Ema;
pub use holt::Holt;
pub use linreg::LinReg;
pub use none::NoForecast;
pub use persistence::Persistence;
pub use sma::Sma;

/// Something that learns a utilisation series online and forecasts the next value.
pub trait Predictor {
    /// Feeds one utilisation sample (clamped to 0.0–1.0 by the implementation).
    fn observe(&mut self, utilisation: f64);

    /// Forecast of the next utilisation, or `None` before the first sample.
    fn forecast(&self) -> Option<f64>;

    /// Typical size of the forecast error (same units as utilisation); 0.0 when unknown.
    /// Used to turn a point forecast into a spike probability.
    fn volatility(&self) -> f64 {
        0.0
    }
}

/// Probability that utilisation reaches `threshold` soon, from a point forecast and its volatility.
///
/// The upper estimate `forecast + 2·volatility` is mapped linearly onto `[0, 1]` across a band of
/// `±band` around the threshold: well below → 0, well above → 1. Deliberately simple and monotone,
/// so that it is explainable in a metric and testable as a property.
pub fn spike_probability(forecast: f64, volatility: f64, threshold: f64, band: f64) -> f64 {
    let upper = forecast + 2.0 * volatility.max(0.0);
    let band = band.max(1e-9);
    ((upper - (threshold - band)) / (2.0 * band)).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spike_probability_is_monotone_and_bounded() {
        let mut last = -1.0;
        for i in 0..=100 {
            let p = spike_probability(i as f64 / 100.0, 0.0, 0.9, 0.1);
            assert!((0.0..=1.0).contains(&p));
            assert!(p >= last);
            last = p;
        }
        assert_eq!(spike_probability(0.5, 0.0, 0.9, 0.1), 0.0);
        assert_eq!(spike_probability(1.05, 0.0, 0.9, 0.1), 1.0);
        assert!(spike_probability(0.7, 0.1, 0.9, 0.1) > spike_probability(0.7, 0.0, 0.9, 0.1));
    }
}
