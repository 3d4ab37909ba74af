use super::Predictor;

/// The ablation's baseline: learns nothing and never forecasts, so load-based factors stay
/// neutral (as for a node without fresh load facts).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoForecast;

impl Predictor for NoForecast {
    fn observe(&mut self, _utilisation: f64) {}

    fn forecast(&self) -> Option<f64> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_forecasts() {
        let mut p = NoForecast;
        p.observe(0.99);
        assert_eq!(p.forecast(), None);
        assert_eq!(p.volatility(), 0.0);
    }
}
