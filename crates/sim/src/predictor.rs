//! Which load predictor feeds η (the ablation).

use aco_core::predict::{Holt, LinReg, NoForecast, Persistence, Predictor, Sma};

/// Which load predictor feeds η (the ablation). `Ema` runs through `NodeFacts` exactly as the
/// Worker does (with `EMA_ALPHA` = α); the others replace the node state's load outlook.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PredictorKind {
    Ema(f64),
    Sma(usize),
    Persistence,
    Holt(f64, f64),
    LinReg(usize),
    None,
}

impl PredictorKind {
    pub fn label(&self) -> String {
        match self {
            Self::Ema(a) => format!("EMA α={a}"),
            Self::Sma(n) => format!("SMA n={n}"),
            Self::Persistence => "persistence".into(),
            Self::Holt(a, b) => format!("Holt α={a} β={b}"),
            Self::LinReg(n) => format!("linear regression n={n}"),
            Self::None => "none".into(),
        }
    }
    pub fn ablation_set() -> Vec<Self> {
        vec![Self::Ema(0.3), Self::Ema(0.5), Self::Ema(0.7), Self::Sma(8), Self::Persistence, Self::Holt(0.5, 0.3), Self::LinReg(8), Self::None]
    }
    pub fn make(&self) -> Option<Box<dyn Predictor>> {
        match *self {
            Self::Ema(_) => None,
            Self::Sma(n) => Some(Box::new(Sma::new(n))),
            Self::Persistence => Some(Box::new(Persistence::new())),
            Self::Holt(a, b) => Some(Box::new(Holt::new(a, b))),
            Self::LinReg(n) => Some(Box::new(LinReg::new(n))),
            Self::None => Some(Box::new(NoForecast)),
        }
    }
}
