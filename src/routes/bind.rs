//! The extender `bind` verb (`POST /v1/bind`), as an optional way to learn placements.
//!
//! It **records** the placement in the tenant's colony and answers `{"Error":""}`; it does
//! **not** create the Binding in the API server. Configure `bindVerb` only together with
//! something that binds the pod; the supported way to learn is `POST /v1/placements` from a
//! watcher. The tenant is found through the pod index written at prioritize time when
//! `BIND_INDEX=true`, else it is the pod's namespace (a pod scored under a label-chosen tenant is
//! then not found there: counted as unknown, nothing deposited).

use aco_core::cluster::TenantId;
use aco_core::colony_store::wire::PlacementItem;
use aco_core::metrics;
use aco_core::names::PodKey;
use aco_core::wire::{ExtenderBindingArgs, ExtenderBindingResult};

use super::placements::deliver;
use super::{Call, Handled};
use crate::http::{json_response, parse_json, read_body};
use crate::pod_index;

pub async fn bind(call: &mut Call) -> Handled {
    let body = read_body(&mut call.req, call.config.serving.max_body_bytes).await?;
    let args: ExtenderBindingArgs = parse_json(&body, "ExtenderBindingArgs")?;
    // `Node` is typed (a bad one is a 400 naming it as the body is read). The key is made here
    // from kube-scheduler's fields, and checked as it is made: one no colony could store names no
    // pod the extender scored, so it is learnt nothing from, like an unknown pod.
    let key = if args.pod_uid.is_empty() {
        PodKey::namespaced(&args.pod_namespace, &args.pod_name)
    } else {
        PodKey::parse(&args.pod_uid)
    }
    .ok();
    let tenant = match &key {
        None => None,
        Some(key) if call.config.serving.bind_index => {
            pod_index::tenant_of(&call.bindings, key).await
        }
        Some(_) => Some(args.pod_namespace.clone()),
    }
    // Where the tenant enters (the index's stored value, or the namespace kube-scheduler sent).
    .and_then(|t| TenantId::parse(&t).ok())
    .filter(|t| call.config.tenant_allowed(t.as_str()));
    match key.zip(tenant) {
        Some((key, tenant)) => {
            deliver(
                call,
                vec![(
                    tenant,
                    PlacementItem {
                        key,
                        node: args.node,
                        outcome: None,
                    },
                )],
                "bind",
            )
            .await?;
        }
        None => call
            .event
            .count(&metrics::PLACEMENTS_RECEIVED, &["bind_unknown_pod"], 1.0),
    }
    Ok(json_response(
        200,
        &ExtenderBindingResult {
            error: String::new(),
        },
    ))
}
