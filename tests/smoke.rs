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
