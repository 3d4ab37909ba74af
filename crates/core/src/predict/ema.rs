use serde::{Deserialize, Serialize};

use super::Predictor;

/// Exponential moving average of utilisation plus an EMA of the absolute one-step error
/// (its volatility). `alpha` weights the newest sample: 0.5 by default (the seed's ablation
/// winner). Serialisable so the Facts Durable Object can keep it between fact reports.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ema {
    pub alpha: f64,
    pub level: Option<f64>,
    pub volatility: f64,
    pub samples: u64,
}

impl Ema {
    pub fn new(alpha: f64) -> Self {
        Self {
            alpha,
            level: None,
            volatility: 0.0,
            samples: 0,
        }
    }
}

impl Predictor for Ema {
    fn observe(&mut self, utilisation: f64) {
        let x = if utilisation.is_finite() {
            utilisation.clamp(0.0, 1.0)
        } else {
            return;
        };
        match self.level {
            None => self.level = Some(x),
            Some(level) => {
                let error = (x - level).abs();
                self.volatility = self.alpha * error + (1.0 - self.alpha) * self.volatility;
                self.level = Some(self.alpha * x + (1.0 - self.alpha) * level);
            }
        }
        self.samples += 1;
    }

    fn forecast(&self) -> Option<f64> {
        self.level
    }

    fn volatility(&self) -> f64 {
        self.volatility
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sample_sets_level_then_blends_by_alpha() {
        let mut ema = Ema::new(0.5);
        assert_eq!(ema.forecast(), None);
        ema.observe(0.2);
        assert_eq!(ema.forecast(), Some(0.2));
        ema.observe(0.6);
        assert!((ema.forecast().unwrap() - 0.4).abs() < 1e-12);
        assert!((ema.volatility() - 0.2).abs() < 1e-12);
        assert_eq!(ema.samples, 2);
    }

    #[test]
    fn out_of_range_and_nan_samples_are_clamped_or_ignored() {
        let mut ema = Ema::new(0.5);
        ema.observe(f64::NAN);
        assert_eq!(ema.samples, 0);
        ema.observe(7.0);
        assert_eq!(ema.forecast(), Some(1.0));
    }
}
