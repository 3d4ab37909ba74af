use std::collections::VecDeque;

/// The last `capacity` utilisation samples, clamped to 0–1 (non-finite samples are ignored):
/// the state of the windowed predictors (SMA, linear regression).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Window {
    capacity: usize,
    samples: VecDeque<f64>,
}

impl Window {
    pub(super) fn new(capacity: usize) -> Self {
        Self {
            capacity,
            samples: VecDeque::with_capacity(capacity),
        }
    }

    pub(super) fn push(&mut self, utilisation: f64) {
        if !utilisation.is_finite() {
            return;
        }
        self.samples.push_back(utilisation.clamp(0.0, 1.0));
        while self.samples.len() > self.capacity {
            self.samples.pop_front();
        }
    }

    pub(super) fn len(&self) -> usize {
        self.samples.len()
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &f64> {
        self.samples.iter()
    }

    pub(super) fn mean(&self) -> Option<f64> {
        (!self.samples.is_empty())
            .then(|| self.samples.iter().sum::<f64>() / self.samples.len() as f64)
    }
}
