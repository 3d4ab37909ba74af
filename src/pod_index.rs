//! Which tenant scored a pod, by decision key (pod UID), in KV with an expiry. Needed by the
//! `bind` verb, whose arguments carry no labels; written after each prioritize response.

use aco_core::cluster::TenantId;

use crate::bindings::Bindings;

/// The KV namespace of the pod → tenant index.
pub const BINDING: &str = "POD_TENANTS";

fn key(decision_key: &str) -> String {
    format!("pod/{decision_key}")
}

pub async fn remember(bindings: &Bindings, decision_key: &str, tenant: &TenantId, ttl_ms: u64) {
    // KV expirations must be at least 60 s (`kv_put` rounds up).
    if let Err(e) = bindings
        .kv_put(
            BINDING,
            &key(decision_key),
            tenant.to_string(),
            Some(ttl_ms / 1000),
        )
        .await
    {
        crate::log::error("pod_index", Some(&bindings.request_id), &e.message);
    }
}

pub async fn tenant_of(bindings: &Bindings, decision_key: &str) -> Option<String> {
    bindings
        .kv_get_text(BINDING, &key(decision_key))
        .await
        .ok()
        .flatten()
}
