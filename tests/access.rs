//! Who may call the built Worker in Miniflare: `EXTENDER_AUTH` (path tokens with rotation,
//! mTLS, none only when written down), cluster prefixes refused before they touch an object, and
//! two clusters sharing one deployment without their node names or tenants colliding.

use aco_core::api::pheromones::PheromoneTableReply;
use aco_core::api::placements::PlacementsSummary;
use aco_testkit::api::{error_body, full_args, pod, Api, WorkerHttp};
use aco_testkit::extender::{FilterResult, HostPriority};
use aco_testkit::nodes::name_of;
use aco_testkit::openb::priced_nodes;
use aco_testkit::state::object_sqlite_files;
use aco_testkit::{StartOptions, ADMIN_TOKEN};
use serde_json::json;

const TOKEN_A: &str = "extender-token-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

const TOKEN_B: &str = "extender-token-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

#[tokio::test]
async fn path_token_auth_serves_both_rotation_tokens_and_refuses_anything_else() {
    let api = Api::start(
        StartOptions::default()
            .var("EXTENDER_AUTH", "path-token")
            .var("EXTENDER_TOKENS", format!("{TOKEN_A},{TOKEN_B}")),
    );
    let nodes = priced_nodes();
    let (args, _) = full_args(
        &pod("t1", "tokened", json!({}), json!({}), json!({"cpu": "1"})),
        &nodes,
    );
    for token in [TOKEN_A, TOKEN_B] {
        for verb in ["filter", "prioritize"] {
            let (status, body) = api
                .post_raw(&format!("/t/{token}/v1/{verb}"), args.clone())
                .await;
            assert_eq!(status, 200, "{verb} with a valid token: {body}");
        }
    }
    let wrong = "extender-token-cccccccccccccccccccccccccccccccc";
    for path in [
        "/v1/filter".to_string(),
        format!("/t/{wrong}/v1/filter"),
        format!("/t/{wrong}/v1/prioritize"),
        format!("/t/{wrong}/v1/bind"),
        "/t//v1/filter".into(),
    ] {
        let (status, body) = api.post_raw(&path, args.clone()).await;
        assert_eq!(status, 401, "{path}: {body}");
        error_body(&body);
    }
    // The token path only carries the extender verbs; admin routes keep their bearer token.
    let (status, _) = api
        .post_raw(&format!("/t/{TOKEN_A}/v1/placements"), "{}".into())
        .await;
    assert_eq!(status, 404);
    assert_eq!(
        api.place_summary(
            json!([{"podUid": "uid-tokened-t1", "namespace": "tokened", "node": name_of(&nodes[0])}])
        )
        .await
        .deposited,
        1
    );
    // Refused calls wrote nothing: two decisions were made (one per token), one confirmed.
    let table = api.pheromone_table("tokened").await;
    assert_eq!(
        (table.counters.decisions, table.confirmed_pods),
        (2, 1),
        "{table:?}"
    );
    api.metrics_containing("aco_extender_auth_failures_total{status=\"401\"} 5")
        .await;
}

#[tokio::test]
async fn refused_and_unauthenticated_cluster_requests_add_no_label_and_no_object() {
    let api = Api::start(
        StartOptions::default()
            .var("EXTENDER_AUTH", "path-token")
            .var("EXTENDER_TOKENS", TOKEN_A)
            .var("CLUSTERS", "prod"),
    );
    let nodes = priced_nodes();
    let (args, _) = full_args(
        &pod("c1", "clustered", json!({}), json!({}), json!({"cpu": "1"})),
        &nodes,
    );
    let objects = || {
        let dir = api.worker.persist_dir();
        (
            object_sqlite_files(dir, "Colony").len(),
            object_sqlite_files(dir, "Facts").len(),
        )
    };
    let put_nodes = |path: String, token: Option<&'static str>| {
        let mut req = api
            .http
            .put(api.worker.url(&path))
            .json(&json!({"nodes": [{"name": "n1"}]}));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        async move { req.send().await.unwrap().status().as_u16() }
    };
    // Unknown clusters: 404 naming the cluster, with or without credentials.
    for i in 0..20 {
        assert_eq!(put_nodes(format!("/c/x{i}/v1/nodes"), None).await, 404);
        assert_eq!(
            put_nodes(format!("/c/x{i}/v1/nodes"), Some(ADMIN_TOKEN)).await,
            404
        );
        let (status, body) = api
            .post_raw(&format!("/c/x{i}/t/{TOKEN_A}/v1/prioritize"), args.clone())
            .await;
        assert_eq!(status, 404, "{body}");
        assert!(body.contains("\"field\":\"cluster\""), "{body}");
    }
    // The allowed cluster without credentials: 401, no label either.
    assert_eq!(put_nodes("/c/prod/v1/nodes".into(), None).await, 401);
    for verb in ["filter", "prioritize", "echo"] {
        let (status, _) = api
            .post_raw(&format!("/c/prod/v1/{verb}"), args.clone())
            .await;
        assert_eq!(status, 401, "{verb}");
    }
    let (status, _) = api.post_raw("/v1/echo", "{}".into()).await;
    assert_eq!(status, 401, "echo is behind the verbs' auth");
    assert_eq!(
        objects(),
        (0, 0),
        "a refused request created a Durable Object"
    );
    let text = api
        .metrics_containing("aco_requests_total{verb=\"nodes\",code=\"404\"} 40")
        .await;
    assert!(
        !text.contains("cluster=\""),
        "a refused request added a cluster label:\n{text}"
    );
    assert!(
        text.contains("aco_requests_total{verb=\"nodes\",code=\"401\"} 1"),
        "{text}"
    );

    // Authenticated calls of the allowed cluster are labelled and stored.
    assert_eq!(
        put_nodes("/c/prod/v1/nodes".into(), Some(ADMIN_TOKEN)).await,
        200
    );
    let (status, body) = api
        .post_raw(&format!("/c/prod/t/{TOKEN_A}/v1/echo"), "{\"a\":1}".into())
        .await;
    assert_eq!((status.as_u16(), body.as_str()), (200, "{\"a\":1}"));
    api.metrics_containing("aco_requests_total{cluster=\"prod\",verb=\"nodes\",code=\"200\"} 1")
        .await;
    assert_eq!(objects().1, 1, "the allowed cluster's Facts object");
}

#[tokio::test]
async fn mtls_auth_needs_a_verified_allowed_client_certificate() {
    let fingerprint = "3f".repeat(32);
    let cert = |verified: &str| {
        json!({"tlsClientAuth": {"certPresented": "1", "certVerified": verified,
        "certFingerprintSHA256": fingerprint, "certIssuerDN": "CN=aco test CA"}})
    };
    let args = full_args(
        &pod("m1", "mtls", json!({}), json!({}), json!({"cpu": "1"})),
        &priced_nodes(),
    )
    .0;
    for (cf, allowed, expected) in [
        (cert("SUCCESS"), fingerprint.clone(), 200),
        (cert("SUCCESS"), "00".repeat(32), 403),
        (
            cert("FAILED:certificate has expired"),
            fingerprint.clone(),
            401,
        ),
        (json!({}), fingerprint.clone(), 401),
    ] {
        let options = StartOptions {
            cf: Some(cf.clone()),
            ..StartOptions::default()
        }
        .var("EXTENDER_AUTH", "mtls")
        .var("EXTENDER_CERT_FINGERPRINTS", allowed);
        let api = Api::start(options);
        let (status, body) = api.post_raw("/v1/prioritize", args.clone()).await;
        assert_eq!(status.as_u16(), expected, "cf {cf}: {body}");
    }
    // The issuer allowlist alone also admits it.
    let options = StartOptions {
        cf: Some(cert("SUCCESS")),
        ..StartOptions::default()
    }
    .var("EXTENDER_AUTH", "mtls")
    .var("EXTENDER_CERT_ISSUERS", "CN=aco test CA");
    let api = Api::start(options);
    assert_eq!(api.post_raw("/v1/filter", args).await.0, 200);
}

#[tokio::test]
async fn extender_auth_must_be_set_explicitly() {
    let api = Api::start(StartOptions::default().var("EXTENDER_AUTH", "open"));
    let (status, body) = api.post_raw("/v1/filter", "{}".into()).await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("EXTENDER_AUTH"), "{body}");
    let ready = api
        .http
        .get(api.worker.url("/readyz"))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), 503);
}

#[tokio::test]
async fn two_clusters_share_one_deployment_without_their_node_names_or_tenants_colliding() {
    let api = Api::start(StartOptions::default());
    let facts = |gpu: &str| json!({"nodes": [{"name": "node-1", "labels": {"aco/gpu-type": gpu}, "allocatable": {"cpu": "32", "memory": "128Gi", "nvidia.com/gpu": "1"}}]});
    for (prefix, gpu) in [("/c/east", "A10"), ("/c/west", "T4")] {
        let (status, body) = api
            .admin(
                reqwest::Method::PUT,
                &format!("{prefix}/v1/nodes"),
                Some(facts(gpu)),
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }
    let a10 = pod(
        "infer",
        "ml",
        json!({}),
        json!({"scheduling.aco/gpu-models": "A10"}),
        json!({"nvidia.com/gpu": "1"}),
    );
    let args = json!({"Pod": a10, "NodeNames": ["node-1"]}).to_string();
    // The same node name is an A10 in east and a T4 in west; the default cluster has no such node.
    let filter = |path: &'static str| api.post_as::<FilterResult>(path, args.clone());
    assert_eq!(filter("/c/east/v1/filter").await.passed(), ["node-1"]);
    assert!(filter("/c/west/v1/filter")
        .await
        .failed_and_unresolvable_nodes["node-1"]
        .contains("T4"));
    assert!(filter("/v1/filter").await.failed_nodes["node-1"].contains("no node facts"));
    // Tenant "ml" of east is not tenant "ml" of west.
    assert_eq!(
        api.post_as::<Vec<HostPriority>>("/c/east/v1/prioritize", args.clone())
            .await
            .len(),
        1
    );
    let placed =
        json!({"placements": [{"podUid": "uid-ml-infer", "namespace": "ml", "node": "node-1"}]});
    let place = |path: &'static str| {
        api.admin_as::<PlacementsSummary>(reqwest::Method::POST, path, Some(placed.clone()))
    };
    let s = place("/c/east/v1/placements").await;
    assert_eq!(s.deposited, 1, "{s:?}");
    let s = place("/c/west/v1/placements").await;
    // West never scored the pod: its colony holds the report for a decision that never comes.
    assert_eq!((s.deposited, s.held), (0, 1), "{s:?}");
    let table =
        |path: &'static str| api.admin_as::<PheromoneTableReply>(reqwest::Method::GET, path, None);
    assert_eq!(
        table("/c/east/v1/tenants/ml/pheromones")
            .await
            .counters
            .deposits,
        1
    );
    assert_eq!(
        table("/c/west/v1/tenants/ml/pheromones")
            .await
            .counters
            .deposits,
        0
    );
    // Series of a named cluster carry its label.
    let text = api
        .metrics_containing("aco_colony_deposits_total{cluster=\"east\",tenant=\"ml\"} 1")
        .await;
    assert!(
        text.contains("aco_requests_total{cluster=\"west\",verb=\"filter\",code=\"200\"} 1"),
        "{text}"
    );
    // A cluster id that is not a DNS label is refused, naming the field.
    let (status, body) = api.post_raw("/c/Not_A_Label/v1/filter", "{}".into()).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("\"field\":\"cluster\""), "{body}");
}
