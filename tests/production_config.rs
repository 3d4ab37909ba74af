//! The Worker as `wrangler.toml` ships it, plus only the secrets a deployer sets with
//! `wrangler secret put` (docs/deploy.md "Deploy") — no test bindings ([`StartOptions::shipped`]):
//! the extender verbs are refused unless called through the token path, `/metrics` is refused
//! without the scrape token, and an `ADMIN_TOKEN` that is the old development default (or too
//! short) opens no admin route.

use aco_testkit::api::{error_body, full_args, pod, Api};
use aco_testkit::openb::priced_nodes;
use aco_testkit::StartOptions;
use reqwest::StatusCode;
use serde_json::json;

/// What a deployer generates (`openssl rand -hex 32`), one per secret.
const ADMIN: &str = "5d1f0b8e2c7a4f6e9b3d1c8a7e5f2b4d6c9a1e3f5b7d9c2e4a6f8b1d3c5e7a9f";
const METRICS: &str = "a2c4e6f8b1d3c5e7a9f2b4d6c8e1a3f5b7d9c2e4a6f8b1d3c5e7a9f2b4d6c8e1";
const EXTENDER: &str = "9e7c5a3f1d8b6e4c2a9f7d5b3e1c8a6f4d2b9e7c5a3f1d8b6e4c2a9f7d5b3e1c";

/// The shipped wrangler.toml with these secrets set.
fn deployed(admin: &str) -> Api {
    Api::start(
        StartOptions::shipped()
            .var("ADMIN_TOKEN", admin)
            .var("METRICS_TOKEN", METRICS)
            .var("EXTENDER_TOKENS", EXTENDER),
    )
}

fn refused(status: StatusCode) -> bool {
    [401, 403, 503].contains(&status.as_u16())
}

#[tokio::test]
async fn the_shipped_config_serves_verbs_only_through_the_token_path_and_metrics_only_with_the_scrape_token(
) {
    let api = deployed(ADMIN);
    let (args, _) = full_args(
        &pod("p", "shipped", json!({}), json!({}), json!({"cpu": "1"})),
        &priced_nodes(),
    );
    // Unauthenticated verbs: refused (401, JSON), whatever the verb.
    for verb in ["filter", "prioritize", "bind"] {
        let r = api
            .http
            .post(api.worker.url(&format!("/v1/{verb}")))
            .body(args.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 401, "{verb} without the token path");
        error_body(&r.text().await.unwrap());
    }
    // The token path kube-scheduler's urlPrefix carries: served.
    for verb in ["filter", "prioritize"] {
        let r = api
            .http
            .post(api.worker.url(&format!("/t/{EXTENDER}/v1/{verb}")))
            .body(args.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{verb} through /t/<token>/v1");
    }

    // /metrics: refused without the scrape token or with another one (the admin token is not it).
    let metrics = |token: Option<&'static str>| {
        let mut req = api.http.get(api.worker.url("/metrics"));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        req.send()
    };
    for token in [None, Some(ADMIN), Some("dev-admin-token")] {
        let status = metrics(token).await.unwrap().status();
        assert_eq!(status, 401, "GET /metrics with {token:?}");
    }
    let r = metrics(Some(METRICS)).await.unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.text().await.unwrap().contains("aco_requests_total"));

    // The admin routes take the deployer's ADMIN_TOKEN and nothing else.
    let admin = |token: &'static str| {
        api.http
            .put(api.worker.url("/v1/nodes"))
            .bearer_auth(token)
            .json(&json!({"nodes": [{"name": "n1", "allocatable": {"cpu": "4"}}]}))
            .send()
    };
    assert_eq!(admin("dev-admin-token").await.unwrap().status(), 401);
    assert_eq!(admin(ADMIN).await.unwrap().status(), 200);
}

#[tokio::test]
async fn the_old_development_token_or_a_short_one_as_admin_token_opens_no_admin_route() {
    for weak in ["dev-admin-token", "changeme", "0123456789abcdef"] {
        let api = deployed(weak);
        for (method, path, body) in [
            (
                reqwest::Method::PUT,
                "/v1/nodes",
                Some(json!({"nodes": [{"name": "n1", "allocatable": {"cpu": "4"}}]})),
            ),
            (reqwest::Method::GET, "/v1/nodes/n1", None),
            (reqwest::Method::GET, "/v1/tenants/ml/pheromones", None),
        ] {
            let mut req = api
                .http
                .request(method.clone(), api.worker.url(path))
                .bearer_auth(weak);
            if let Some(b) = body {
                req = req.json(&b);
            }
            let status = req.send().await.unwrap().status();
            assert!(
                refused(status),
                "ADMIN_TOKEN={weak:?}: {method} {path} answered {status}, not a refusal"
            );
        }
    }
}
