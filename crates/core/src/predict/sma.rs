use super::window::Window;
use super::Predictor;

/// Simple moving average over the last `window` samples; volatility is the mean absolute
/// deviation of those samples from their average.
#[derive(Debug, Clone, PartialEq)]
pub struct Sma {
    pub window: usize,
    samples: Window,
}

impl Sma {
    pub fn new(window: usize) -> Self {
        let window = window.max(1);
        Self {
            window,
            samples: Window::new(window),
        }
    }

    fn mean(&self) -> Option<f64> {
        self.samples.mean()
    }
}

impl Predictor for Sma {
    fn observe(&mut self, utilisation: f64) {
        self.samples.push(utilisation);
    }

    fn forecast(&self) -> Option<f64> {
        self.mean()
    }

    fn volatility(&self) -> f64 {
        let Some(m) = self.mean() else { return 0.0 };
        self.samples.iter().map(|x| (x - m).abs()).sum::<f64>() / self.samples.len() as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn averages_the_last_window_samples() {
        let mut p = Sma::new(3);
        assert_eq!(p.forecast(), None);
        for x in [0.9, 0.1, 0.2, 0.3] {
            p.observe(x);
        }
        assert!((p.forecast().unwrap() - 0.2).abs() < 1e-12);
        assert!((p.volatility() - 0.2 / 3.0).abs() < 1e-12);
        p.observe(f64::NAN);
        assert!((p.forecast().unwrap() - 0.2).abs() < 1e-12);
    }
}
