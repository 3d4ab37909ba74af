//! What the demo report shows, as plain data: each tenant's pheromone table sampled during the
//! replay, and every pod's fate with the cost of placing it. Filled by
//! [`crate::recording::Recording`], drawn by [`crate::html_report::render`]; kept free of the
//! simulator's types so the renderer can be tested on hand-made records.

use serde::Serialize;

use crate::scheduler::TenantTrails;

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ReplayRecord {
    /// One line saying what was replayed against what.
    pub title: String,
    /// Every node of the cluster, in cluster order.
    pub nodes: Vec<NodeInfo>,
    pub tenants: Vec<String>,
    /// Pheromone tables in sampling order (steps ascending).
    pub trails: Vec<TrailSample>,
    /// Every pod in arrival order, placed or not.
    pub pods: Vec<PodRecord>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeInfo {
    pub name: String,
    pub gpu_model: Option<String>,
    pub price_per_h: f64,
}

/// Every tenant's `(node, τ)` rows as `GET /v1/tenants/{t}/pheromones` answered after `step`
/// pods had been decided.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrailSample {
    pub step: usize,
    pub tenants: TenantTrails,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PodRecord {
    /// 1-based position in arrival order (the x axis of every chart).
    pub step: usize,
    /// Trace time since the first arrival.
    pub hours: f64,
    pub tenant: String,
    pub pod: String,
    /// `None`: no node could take it (unschedulable).
    pub placed: Option<Placed>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Placed {
    pub node: String,
    /// The node's list price.
    pub price_per_h: f64,
    /// What placing the pod adds to the bill, as the core's cost factor prices it: the full
    /// price when the pod turns an idle node on, its share of the price on a busy node.
    pub marginal_per_h: f64,
}

impl ReplayRecord {
    pub fn node(&self, name: &str) -> Option<&NodeInfo> {
        self.nodes.iter().find(|n| n.name == name)
    }

    /// The tenant's colour index: its position among `tenants` (unknown tenants share the next).
    pub fn tenant_index(&self, tenant: &str) -> usize {
        self.tenants
            .iter()
            .position(|t| t == tenant)
            .unwrap_or(self.tenants.len())
    }
}
