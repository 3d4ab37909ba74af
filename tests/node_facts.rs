//! Node facts through `PUT /v1/nodes` on the built Worker in Miniflare: deleted nodes forgotten,
//! per-GPU free shares stored, and bad quantities or repeated keys refused with the field named
//! (a bad batch changes nothing).

use aco_core::api::error::ErrorBody;
use aco_core::api::nodes::NodesReply;
use aco_core::facts::Observed;
use aco_testkit::api::{pod, Api, WorkerHttp};
use aco_testkit::pods::with_container;
use aco_testkit::{now_ms, StartOptions};
use serde_json::json;

#[tokio::test]
async fn deleted_nodes_are_forgotten_and_a_batch_with_a_bad_name_changes_nothing() {
    let api = Api::start(StartOptions::default());
    let facts = |name: &str| json!({"name": name, "allocatable": {"cpu": "8", "memory": "32Gi"}});
    api.put_facts(json!([facts("gone-1"), facts("gone-2"), facts("stays")]))
        .await;
    assert_eq!(
        api.filter_names(&["gone-1", "gone-2", "stays"]).await.0,
        vec!["gone-1", "gone-2", "stays"]
    );

    // A bad name, or a name both reported and deleted, rejects the whole batch: nothing is
    // stored and nothing forgotten.
    let (status, body) = api
        .put_batch(json!({"nodes": [facts("newcomer")], "deleted": ["gone-1", "Bad_Name"]}))
        .await
        .unwrap_err();
    assert_eq!(status, 400, "{body:?}");
    assert_eq!(body.field.as_deref(), Some("deleted[1]"));
    let (status, body) = api
        .put_batch(json!({"nodes": [facts("stays")], "deleted": ["gone-2", "stays"]}))
        .await
        .unwrap_err();
    assert_eq!(status, 400, "{body:?}");
    assert_eq!(body.field.as_deref(), Some("deleted[1]"));
    assert!(body.error.contains("both"), "{body:?}");
    assert!(api.node_facts("gone-1").await.is_some());
    assert!(api.node_facts("newcomer").await.is_none());
    let (passed, failed) = api
        .filter_names(&["gone-1", "gone-2", "stays", "newcomer"])
        .await;
    assert_eq!(passed, vec!["gone-1", "gone-2", "stays"]);
    assert!(
        failed
            .get("newcomer")
            .is_some_and(|reason| reason.contains("no node facts")),
        "{failed:?}"
    );

    // `nodes` may be absent when only `deleted` is given; a repeated name counts once.
    let body = api
        .put_batch(json!({"deleted": ["gone-1", "gone-2", "gone-1"]}))
        .await
        .unwrap();
    assert_eq!(
        (body.stored, body.forgotten, body.nodes),
        (0, 2, 1),
        "{body:?}"
    );
    let (passed, failed) = api.filter_names(&["gone-1", "gone-2", "stays"]).await;
    assert_eq!(passed, vec!["stays"]);
    for gone in ["gone-1", "gone-2"] {
        assert!(failed[gone].contains("no node facts"), "{failed:?}");
        assert!(api.node_facts(gone).await.is_none(), "{gone}");
    }
    // Forgetting a node we never knew is harmless; reports and deletions mix in one batch.
    let body = api
        .put_batch(json!({"nodes": [facts("newcomer")], "deleted": ["never-seen"]}))
        .await;
    assert!(
        matches!(
            body,
            Ok(NodesReply {
                stored: 1,
                forgotten: 1,
                ..
            })
        ),
        "{body:?}"
    );
    assert_eq!(
        api.filter_names(&["newcomer", "stays"]).await.0,
        vec!["newcomer", "stays"]
    );
}

#[tokio::test]
async fn gpu_free_milli_is_stored_and_more_than_one_gpu_is_rejected_with_the_field_named() {
    let api = Api::start(StartOptions::default());
    let t = now_ms();
    api.put_facts(
        json!([{"name": "gpu-frag", "observedAtMs": t, "gpuFreeMilli": [1000, 250, 0, 1000]}]),
    )
    .await;
    let facts = api.node_facts("gpu-frag").await.expect("stored");
    assert_eq!(
        facts.gpu_free_milli,
        Some(Observed {
            value: vec![1000, 250, 0, 1000],
            at_ms: t
        }),
        "{facts:?}"
    );

    let (status, body) = api.put_batch(json!({"nodes": [{"name": "other", "gpuFreeMilli": [0]}, {"name": "gpu-frag", "gpuFreeMilli": [0, 1001]}]})).await.unwrap_err();
    assert_eq!(status, 400, "{body:?}");
    assert_eq!(body.field.as_deref(), Some("nodes[1].gpuFreeMilli[1]"));
    assert_eq!(
        api.node_facts("gpu-frag")
            .await
            .unwrap()
            .gpu_free_milli
            .map(|g| g.value),
        Some(vec![1000, 250, 0, 1000])
    );
    assert!(api.node_facts("other").await.is_none());
}

#[tokio::test]
async fn negative_or_huge_quantities_and_repeated_map_keys_are_refused_with_the_field_named() {
    let api = Api::start(StartOptions::default());
    api.put_facts(json!([{"name": "q-node", "allocatable": {"cpu": "4", "memory": "16Gi"}, "requested": {"cpu": "0"}}])).await;
    let before = api.node_facts("q-node").await.expect("stored");

    // Negative or out-of-range allocatable/requested: 400 naming the field, nothing stored.
    for (report, field) in [
        (
            json!({"name": "q-node", "requested": {"cpu": "-100"}}),
            "nodes[1].requested.cpu",
        ),
        (
            json!({"name": "q-node", "allocatable": {"memory": "-1Gi"}}),
            "nodes[1].allocatable.memory",
        ),
        (
            json!({"name": "q-node", "allocatable": {"memory": "9Ei"}}),
            "nodes[1].allocatable.memory",
        ),
        (
            json!({"name": "q-node", "requested": {"cpu": "1e13"}}),
            "nodes[1].requested.cpu",
        ),
    ] {
        let (status, body) = api
            .put_batch(json!({"nodes": [{"name": "q-other", "latencyUs": 5}, report]}))
            .await
            .unwrap_err();
        assert_eq!(status, 400, "{body:?}");
        assert_eq!(body.field.as_deref(), Some(field), "{body:?}");
    }
    // A repeated key inside a map, as kube's strict decoder refuses it.
    let (status, body) = api
        .put_batch_raw(
            r#"{"nodes":[{"name":"q-other"},{"name":"q-node","requested":{"cpu":"0","cpu":"4"}}]}"#
                .into(),
        )
        .await
        .unwrap_err();
    assert_eq!(status, 400, "{body:?}");
    // (The batch is parsed without path tracking, which made a 10,000-node batch drop the
    // isolate in tests/facts_scale.rs: the message names the key and its position.)
    assert!(body.error.contains(r#"duplicate key "cpu""#), "{body:?}");
    assert_eq!(api.node_facts("q-node").await.unwrap(), before);
    assert!(api.node_facts("q-other").await.is_none());

    // A pod whose containers ask 100 and −99 CPUs does not pass a 4-CPU node as 1 CPU.
    let p = pod("q-pod", "q", json!({}), json!({}), json!({"cpu": "100"}));
    let side = json!({"name": "side", "resources": {"requests": {"cpu": "-99"}}});
    let p = with_container(p, side);
    let (status, text) = api
        .post_raw(
            "/v1/filter",
            json!({"Pod": p, "NodeNames": ["q-node"]}).to_string(),
        )
        .await;
    assert_eq!(status, 400, "{text}");
    assert_eq!(
        refused_field(&text),
        "Pod.spec.containers[1].resources.requests.cpu"
    );
    // Repeated keys in a pod's requests and in a full node's labels.
    let (status, text) = api
        .post_raw("/v1/prioritize", r#"{"Pod":{"metadata":{"name":"d","namespace":"q"},"spec":{"containers":[{"resources":{"requests":{"cpu":"1","cpu":"64"}}}]}},"NodeNames":["q-node"]}"#.into())
        .await;
    assert_eq!(status, 400, "{text}");
    assert_eq!(
        refused_field(&text),
        "Pod.spec.containers[0].resources.requests"
    );
    let (status, text) = api
        .post_raw("/v1/filter", r#"{"Pod":{},"Nodes":{"items":[{"metadata":{"name":"n","labels":{"a":"1","a":"2"}}}]}}"#.into())
        .await;
    assert_eq!(status, 400, "{text}");
    assert_eq!(refused_field(&text), "Nodes.items[0].metadata.labels");
}

/// The field a refusal's error body names (failing if it is not one or names none).
fn refused_field(text: &str) -> String {
    ErrorBody::parse(text)
        .and_then(|b| b.field)
        .unwrap_or_else(|| panic!("an error body naming a field: {text}"))
}
