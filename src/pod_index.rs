//! Which tenant scored a pod, by decision key (pod UID), in KV with an expiry. Needed by the
//! `bind` verb, whose arguments carry no labels; written after each prioritize response.

use worker::Env;

use crate::facts_store;

fn key(decision_key: &str) -> String {
    format!("pod/{decision_key}")
}

pub async fn remember(env: &Env, decision_key: &str, tenant: &str, ttl_ms: u64) {
    let result = async {
        let kv = env.kv(facts_store::BINDING)?;
        // KV expirations must be at least 60 s.
        kv.put(&key(decision_key), tenant)?.expiration_ttl((ttl_ms / 1000).max(60)).execute().await?;
        Ok::<_, worker::Error>(())
    }
    .await;
    if let Err(e) = result {
        worker::console_error!("pod index: {e}");
    }
}

pub async fn tenant_of(env: &Env, decision_key: &str) -> Option<String> {
    let kv = env.kv(facts_store::BINDING).ok()?;
    kv.get(&key(decision_key)).text().await.ok().flatten()
}
