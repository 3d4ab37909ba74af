use super::Predictor;

/// Persistence ("tomorrow equals today"): the forecast is the last sample; volatility is the
/// last absolute one-step change.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Persistence {
    last: Option<f64>,
    change: f64,
}

impl Persistence {
    pub fn new() -> Self {
        Self::default()
    }
}

impl Predictor for Persistence {
    fn observe(&mut self, utilisation: f64) {
        if !utilisation.is_finite() {
            return;
        }
        let x = utilisation.clamp(0.0, 1.0);
        if let Some(last) = self.last {
            self.change = (x - last).abs();
        }
        self.last = Some(x);
    }

    fn forecast(&self) -> Option<f64> {
        self.last
    }

    fn volatility(&self) -> f64 {
        self.change
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forecasts_the_last_value() {
        let mut p = Persistence::new();
        assert_eq!(p.forecast(), None);
        p.observe(0.3);
        p.observe(0.7);
        assert_eq!(p.forecast(), Some(0.7));
        assert!((p.volatility() - 0.4).abs() < 1e-12);
    }
}
