//! The admission webhook's HTTPS server: `POST /mutate` answers the API server's
//! `AdmissionReview`s with [`crate::admission`]'s decisions. TLS by axum-server's rustls
//! acceptor (ring, as the rest of the reporter); the certificate and key are re-read when the
//! files change (a cert-manager renewal rewrites the mounted Secret), so a rotation needs no
//! restart.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::post;
use axum::Router;
use axum_server::tls_rustls::RustlsConfig;
use k8s_openapi::api::core::v1::Pod;
use kube::core::admission::{
    AdmissionRequest, AdmissionResponse, AdmissionReview, ConvertAdmissionReviewError,
};
use kube::core::DynamicObject;

use aco_core::config::Config;
use tokio::sync::watch;

use crate::admission::Admission;
use crate::cache::Cache;
use crate::config::Args;
use crate::node_record::NodeRecord;
use crate::telemetry::Telemetry;

/// How often the certificate files are compared with what is served.
const CERT_RELOAD_INTERVAL: Duration = Duration::from_secs(30);

/// The GPU model label values of the cluster's nodes, as the node cache has them now.
pub type KnownModels = Arc<dyn Fn() -> BTreeSet<String> + Send + Sync>;

#[derive(Clone)]
pub struct WebhookState {
    pub admission: Arc<Admission>,
    pub known_models: KnownModels,
    pub telemetry: Arc<Telemetry>,
}

pub struct WebhookTls {
    pub cert: PathBuf,
    pub key: PathBuf,
}

async fn mutate(State(s): State<WebhookState>, body: Bytes) -> impl IntoResponse {
    let request: Result<AdmissionRequest<Pod>, String> =
        serde_json::from_slice::<AdmissionReview<Pod>>(&body)
            .map_err(|e| format!("not an AdmissionReview of a Pod: {e}"))
            .and_then(|review| {
                review
                    .try_into()
                    .map_err(|e: ConvertAdmissionReviewError| e.to_string())
            });
    let request = match request {
        Ok(r) => r,
        Err(e) => {
            s.telemetry.admission(crate::admission::Outcome::Refused);
            return reply(AdmissionResponse::invalid(e).into_review());
        }
    };
    let (response, outcome) = s.admission.review(&request, || (s.known_models)());
    s.telemetry.admission(outcome);
    if outcome == crate::admission::Outcome::Refused {
        tracing::info!(
            namespace = request.namespace.as_deref().unwrap_or_default(),
            name = %request.name,
            message = %response.result.message,
            "admission refused"
        );
    }
    reply(response.into_review())
}

fn reply(review: AdmissionReview<DynamicObject>) -> impl IntoResponse {
    match serde_json::to_vec(&review) {
        Ok(bytes) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            bytes,
        ),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(header::CONTENT_TYPE, "text/plain")],
            e.to_string().into_bytes(),
        ),
    }
}

/// Starts the webhook when `--webhook-cert-file`/`--webhook-key-file` are given: the decision
/// from the Worker's settings (`config`) and the reporter's flags, the GPU model spellings from
/// the node cache. Returns the flag [`serve`] sets once it listens (`/readyz/admission`).
/// Takes the whole Config: the admission keeps a copy (it reads the pod and node keys).
pub fn start(
    args: &Args,
    config: &Config,
    nodes: Arc<Cache<NodeRecord>>,
    telemetry: Arc<Telemetry>,
    mut shutdown: watch::Receiver<bool>,
) -> Option<Arc<AtomicBool>> {
    let (cert, key) = (
        args.webhook_cert_file.clone()?,
        args.webhook_key_file.clone()?,
    );
    let admission = Admission::new(
        config.clone(),
        args.scheduler_names.clone(),
        &args.latency_label,
    );
    let model_labels = admission.keys.gpu_models.clone();
    let known_models: KnownModels = Arc::new(move || {
        nodes
            .state()
            .iter()
            .flat_map(|n| {
                model_labels
                    .iter()
                    .filter_map(|k| n.label(k).map(str::to_owned))
                    .collect::<Vec<_>>()
            })
            .collect()
    });
    let state = WebhookState {
        admission: Arc::new(admission),
        known_models,
        telemetry,
    };
    let serving = Arc::new(AtomicBool::new(false));
    let flag = serving.clone();
    let addr = args.webhook_listen;
    tokio::spawn(async move {
        let stop = async move {
            let _ = shutdown.wait_for(|s| *s).await;
        };
        if let Err(e) = serve(addr, WebhookTls { cert, key }, state, flag, stop).await {
            tracing::error!(error = %format!("{e:#}"), "admission webhook failed");
        }
    });
    Some(serving)
}

/// Serves until `shutdown` resolves; `serving` is set once the listener is bound with the
/// certificate loaded (the replica's admission readiness).
pub async fn serve(
    addr: SocketAddr,
    tls: WebhookTls,
    state: WebhookState,
    serving: Arc<AtomicBool>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let (cert, key) = read_pair(&tls).await?;
    let config = RustlsConfig::from_pem(cert.clone(), key.clone())
        .await
        .map_err(|e| anyhow::anyhow!("webhook certificate {}: {e}", tls.cert.display()))?;
    let app = Router::new()
        .route("/mutate", post(mutate))
        .with_state(state);
    let handle = axum_server::Handle::new();
    let stopper = handle.clone();
    tokio::spawn(async move {
        shutdown.await;
        stopper.graceful_shutdown(Some(Duration::from_secs(5)));
    });
    let listening = handle.clone();
    tokio::spawn(async move {
        if let Some(bound) = listening.listening().await {
            tracing::info!(addr = %bound, "admission webhook listening");
            serving.store(true, Ordering::Relaxed);
        }
    });
    tokio::spawn(reload_on_change(tls, config.clone(), (cert, key)));
    axum_server::bind_rustls(addr, config)
        .handle(handle)
        .serve(app.into_make_service())
        .await?;
    Ok(())
}

async fn read_pair(tls: &WebhookTls) -> anyhow::Result<(Vec<u8>, Vec<u8>)> {
    let read = |p: &PathBuf| {
        let p = p.clone();
        async move {
            tokio::fs::read(&p)
                .await
                .map_err(|e| anyhow::anyhow!("webhook TLS file {}: {e}", p.display()))
        }
    };
    Ok((read(&tls.cert).await?, read(&tls.key).await?))
}

/// Re-reads the certificate and key every [`CERT_RELOAD_INTERVAL`] and serves the new pair when
/// it changed and loads; a pair that does not load is logged and the old one kept.
async fn reload_on_change(tls: WebhookTls, config: RustlsConfig, mut current: (Vec<u8>, Vec<u8>)) {
    let mut tick = tokio::time::interval(CERT_RELOAD_INTERVAL);
    tick.tick().await;
    loop {
        tick.tick().await;
        let pair = match read_pair(&tls).await {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(error = %e, "webhook certificate not re-read");
                continue;
            }
        };
        if pair == current {
            continue;
        }
        match config.reload_from_pem(pair.0.clone(), pair.1.clone()).await {
            Ok(()) => {
                tracing::info!(cert = %tls.cert.display(), "webhook certificate reloaded");
                current = pair;
            }
            Err(e) => {
                tracing::warn!(error = %e, "new webhook certificate does not load; kept the old one")
            }
        }
    }
}
