use super::window::Window;
use super::Predictor;

/// Least-squares line through the last `window` samples (x = sample index), extrapolated one
/// step ahead and clamped to 0–1. Volatility is the mean absolute residual of the fit.
#[derive(Debug, Clone, PartialEq)]
pub struct LinReg {
    pub window: usize,
    samples: Window,
}

impl LinReg {
    pub fn new(window: usize) -> Self {
        let window = window.max(2);
        Self {
            window,
            samples: Window::new(window),
        }
    }

    /// (intercept, slope) over x = 0..n; slope 0 for a single sample.
    fn fit(&self) -> Option<(f64, f64)> {
        let n = self.samples.len();
        if n == 0 {
            return None;
        }
        let nf = n as f64;
        let mean_x = (nf - 1.0) / 2.0;
        let mean_y = self.samples.mean()?;
        let (mut sxy, mut sxx) = (0.0, 0.0);
        for (i, y) in self.samples.iter().enumerate() {
            let dx = i as f64 - mean_x;
            sxy += dx * (y - mean_y);
            sxx += dx * dx;
        }
        let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
        Some((mean_y - slope * mean_x, slope))
    }
}

impl Predictor for LinReg {
    fn observe(&mut self, utilisation: f64) {
        self.samples.push(utilisation);
    }

    fn forecast(&self) -> Option<f64> {
        self.fit()
            .map(|(a, b)| (a + b * self.samples.len() as f64).clamp(0.0, 1.0))
    }

    fn volatility(&self) -> f64 {
        let Some((a, b)) = self.fit() else { return 0.0 };
        let n = self.samples.len() as f64;
        self.samples
            .iter()
            .enumerate()
            .map(|(i, y)| (y - (a + b * i as f64)).abs())
            .sum::<f64>()
            / n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extrapolates_a_line_exactly() {
        let mut p = LinReg::new(4);
        assert_eq!(p.forecast(), None);
        p.observe(0.5);
        assert_eq!(p.forecast(), Some(0.5));
        for y in [0.1, 0.2, 0.3, 0.4] {
            p.observe(y);
        }
        assert!((p.forecast().unwrap() - 0.5).abs() < 1e-12);
        assert!(p.volatility() < 1e-12);
    }

    #[test]
    fn clamps_the_extrapolation() {
        let mut p = LinReg::new(3);
        for y in [0.6, 0.8, 1.0] {
            p.observe(y);
        }
        assert_eq!(p.forecast(), Some(1.0));
    }
}
