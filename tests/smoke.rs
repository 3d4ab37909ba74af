//! Smoke tests of the Miniflare harness: the built Worker starts, answers, and restarts on the
//! same state directory. Real behaviour is tested in the other integration tests.

use aco_testkit::{StartOptions, WorkerProcess};

#[tokio::test]
async fn livez_answers_200() {
    let worker = WorkerProcess::start(StartOptions::default());
    let res = reqwest::get(worker.url("/livez"))
        .await
        .expect("GET /livez");
    assert_eq!(res.status(), 200);
}

#[tokio::test]
async fn restart_keeps_the_state_dir_and_serves_again() {
    let state = tempfile::tempdir().unwrap();
    let mut worker = WorkerProcess::start(StartOptions {
        persist_dir: Some(state.path().to_path_buf()),
        ..StartOptions::default()
    });
    let res = reqwest::get(worker.url("/livez"))
        .await
        .expect("GET /livez");
    assert_eq!(res.status(), 200);

    worker.restart();
    assert_eq!(worker.persist_dir(), state.path());
    assert!(
        worker.base_url.starts_with("http://127.0.0.1:"),
        "{}",
        worker.base_url
    );
    let res = reqwest::get(worker.url("/livez"))
        .await
        .expect("GET /livez after restart");
    assert_eq!(res.status(), 200);
}

#[tokio::test]
async fn a_location_hint_makes_objects_as_usual_and_an_unknown_one_is_a_config_error() {
    use aco_testkit::api::{full_args, pod, Api, WorkerHttp};
    use aco_testkit::openb::priced_nodes;
    use serde_json::json;

    let api = Api::start(StartOptions::default().var("DO_LOCATION_HINT", "weur"));
    let p = pod("p", "hinted", json!({}), json!({}), json!({"cpu": "1"}));
    api.put_facts(json!([{"name": "n1", "allocatable": {"cpu": "4"}}]))
        .await;
    let scores = api
        .post("/v1/prioritize", full_args(&p, &priced_nodes()).0)
        .await;
    assert!(scores.as_array().is_some_and(|a| !a.is_empty()), "{scores}");
    assert_eq!(api.get_raw("/readyz").await.0, 200);

    let api = Api::start(StartOptions::default().var("DO_LOCATION_HINT", "mars"));
    let (status, body) = api.get_raw("/readyz").await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("DO_LOCATION_HINT"), "{body}");
}
