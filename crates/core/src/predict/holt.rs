use super::Predictor;

/// Holt's double exponential smoothing: a level (weight `alpha`) and a trend (weight `beta`);
/// the forecast is `level + trend`, clamped to 0–1. Volatility is an EMA (weight `alpha`) of
/// the absolute one-step forecast error.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Holt {
    pub alpha: f64,
    pub beta: f64,
    level: Option<f64>,
    trend: f64,
    volatility: f64,
}

impl Holt {
    pub fn new(alpha: f64, beta: f64) -> Self {
        Self {
            alpha,
            beta,
            level: None,
            trend: 0.0,
            volatility: 0.0,
        }
    }
}

impl Predictor for Holt {
    fn observe(&mut self, utilisation: f64) {
        if !utilisation.is_finite() {
            return;
        }
        let x = utilisation.clamp(0.0, 1.0);
        match self.level {
            None => self.level = Some(x),
            Some(level) => {
                let predicted = (level + self.trend).clamp(0.0, 1.0);
                self.volatility =
                    self.alpha * (x - predicted).abs() + (1.0 - self.alpha) * self.volatility;
                let new_level = self.alpha * x + (1.0 - self.alpha) * (level + self.trend);
                self.trend = self.beta * (new_level - level) + (1.0 - self.beta) * self.trend;
                self.level = Some(new_level);
            }
        }
    }

    fn forecast(&self) -> Option<f64> {
        self.level.map(|l| (l + self.trend).clamp(0.0, 1.0))
    }

    fn volatility(&self) -> f64 {
        self.volatility
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_a_rising_trend_ahead_of_the_level() {
        let mut p = Holt::new(0.5, 0.5);
        assert_eq!(p.forecast(), None);
        for i in 0..20 {
            p.observe(0.1 + 0.03 * i as f64);
        }
        let f = p.forecast().unwrap();
        assert!(f > 0.1 + 0.03 * 19.0, "{f}");
        assert!(f <= 1.0);
    }

    #[test]
    fn constant_series_has_no_trend() {
        let mut p = Holt::new(0.3, 0.2);
        for _ in 0..10 {
            p.observe(0.4);
        }
        assert!((p.forecast().unwrap() - 0.4).abs() < 1e-12);
        assert!(p.volatility() < 1e-12);
    }
}
