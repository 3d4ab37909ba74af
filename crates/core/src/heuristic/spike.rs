/// Spike safety `1 − w·P(spike)`, with P(spike) from the node's load predictor (see
/// `predict::spike_probability`). No load facts → neutral 1.0.
pub fn spike_safety(spike_probability: Option<f64>, config: &crate::config::Config) -> f64 {
    1.0 - config.spike_weight * spike_probability.unwrap_or(0.0).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    #[test]
    fn certain_spike_costs_the_configured_weight() {
        let c = Config::default();
        assert_eq!(spike_safety(None, &c), 1.0);
        assert!((spike_safety(Some(1.0), &c) - (1.0 - c.spike_weight)).abs() < 1e-12);
    }
}
