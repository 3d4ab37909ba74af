//! The Kubernetes API of a test's control plane: plain HTTPS + JSON with the admin client
//! certificate.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, Pod};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use super::{wait_for, Pki};

#[derive(Clone)]
pub struct Kube {
    base: String,
    http: reqwest::Client,
    /// The same client without the 30 s deadline, for watches (a stream that lasts the run).
    streaming: reqwest::Client,
}

impl Kube {
    pub fn new(base: &str, pki: &Pki) -> Kube {
        let mut identity = std::fs::read(pki.path("admin.crt")).unwrap();
        identity.extend(std::fs::read(pki.path("admin.key")).unwrap());
        let client = |timeout: Option<Duration>| {
            let mut b = reqwest::Client::builder()
                .add_root_certificate(reqwest::Certificate::from_pem(&pki.ca_pem()).unwrap())
                .identity(reqwest::Identity::from_pem(&identity).unwrap());
            if let Some(t) = timeout {
                b = b.timeout(t);
            }
            b.build().unwrap()
        };
        Kube {
            base: base.to_owned(),
            http: client(Some(Duration::from_secs(30))),
            streaming: client(None),
        }
    }

    /// Opens a watch (`path` is a collection, e.g. `/api/v1/namespaces/x/pods`) from
    /// `resource_version`; the server ends it after `timeout_s` (resume from the last event's
    /// resourceVersion).
    pub async fn watch(
        &self,
        path: &str,
        resource_version: &str,
        timeout_s: u32,
    ) -> Result<Watch, String> {
        let url = format!(
            "{}{path}?watch=true&resourceVersion={resource_version}&timeoutSeconds={timeout_s}",
            self.base
        );
        let r = self
            .streaming
            .get(url)
            .send()
            .await
            .map_err(|e| format!("watch {path}: {e}"))?;
        if !r.status().is_success() {
            return Err(format!("watch {path}: HTTP {}", r.status()));
        }
        Ok(Watch {
            response: r,
            buffer: Vec::new(),
        })
    }

    pub async fn get_raw(&self, path: &str) -> reqwest::Result<(u16, String)> {
        let r = self.http.get(format!("{}{path}", self.base)).send().await?;
        Ok((r.status().as_u16(), r.text().await?))
    }

    async fn send<T: DeserializeOwned>(
        &self,
        req: reqwest::RequestBuilder,
        what: &str,
    ) -> Result<T, String> {
        let r = req.send().await.map_err(|e| format!("{what}: {e}"))?;
        let status = r.status();
        let text = r.text().await.map_err(|e| format!("{what}: {e}"))?;
        if !status.is_success() {
            return Err(format!("{what}: HTTP {status}: {text}"));
        }
        serde_json::from_str(&text).map_err(|e| format!("{what}: {e}: {text}"))
    }

    pub async fn get(&self, path: &str) -> Result<Value, String> {
        self.get_as(path).await
    }

    /// `GET path` read as `T` (a k8s-openapi object, `List<Pod>`, a metrics.k8s.io reading).
    pub async fn get_as<T: DeserializeOwned>(&self, path: &str) -> Result<T, String> {
        self.send(
            self.http.get(format!("{}{path}", self.base)),
            &format!("GET {path}"),
        )
        .await
    }
    pub async fn post(&self, path: &str, body: &Value) -> Value {
        self.send(
            self.http.post(format!("{}{path}", self.base)).json(body),
            &format!("POST {path}"),
        )
        .await
        .unwrap()
    }
    /// Server-side apply of `obj` into `collection` (what `kubectl apply --server-side` does):
    /// creates it, or updates it to this content if it exists.
    pub async fn apply(&self, collection: &str, obj: &Value) -> Value {
        let name = obj["metadata"]["name"].as_str().expect("metadata.name");
        let path = format!("{collection}/{name}?fieldManager=aco-testkit&force=true");
        let req = self
            .http
            .patch(format!("{}{path}", self.base))
            .header("Content-Type", "application/apply-patch+yaml")
            .body(obj.to_string());
        self.send(req, &format!("apply {path}")).await.unwrap()
    }
    pub async fn merge_patch(&self, path: &str, body: &Value) -> Value {
        let req = self
            .http
            .patch(format!("{}{path}", self.base))
            .header("Content-Type", "application/merge-patch+json")
            .body(body.to_string());
        self.send(req, &format!("PATCH {path}")).await.unwrap()
    }
    pub async fn delete(&self, path: &str) -> Result<Value, String> {
        let req = self
            .http
            .delete(format!("{}{path}", self.base))
            .json(&json!({"gracePeriodSeconds": 0}));
        self.send(req, &format!("DELETE {path}")).await
    }

    pub async fn create_namespace(&self, name: &str) {
        self.post(
            "/api/v1/namespaces",
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
        )
        .await;
    }

    /// Waits for ServiceAccount `ns/name` (the controller-manager creates `default` in every
    /// namespace; the ServiceAccount admission plugin refuses pods until it exists).
    pub async fn wait_service_account(&self, ns: &str, name: &str) {
        let k = self.clone();
        wait_for(
            &format!("service account {ns}/{name}"),
            Duration::from_secs(60),
            || {
                let k = k.clone();
                let path = format!("/api/v1/namespaces/{ns}/serviceaccounts/{name}");
                async move { k.get(&path).await.ok().map(|_| ()) }
            },
        )
        .await;
    }

    /// Creates the Node and sets `status.allocatable`/`capacity` (no kubelet does it here).
    pub async fn create_node(&self, node: &Value) {
        let name = node["metadata"]["name"].as_str().unwrap().to_owned();
        let mut spec = node.clone();
        spec.as_object_mut().unwrap().remove("status");
        self.post("/api/v1/nodes", &spec).await;
        let status = &node["status"];
        self.merge_patch(
            &format!("/api/v1/nodes/{name}/status"),
            &json!({"status": {"allocatable": status["allocatable"], "capacity": status["capacity"]}}),
        )
        .await;
    }

    pub async fn create_pod(&self, pod: &Value) -> Value {
        let ns = pod["metadata"]["namespace"]
            .as_str()
            .expect("pod namespace");
        self.post(&format!("/api/v1/namespaces/{ns}/pods"), pod)
            .await
    }

    /// Creates a pod and returns the API server's answer as it is — the stored pod, or the
    /// status code and body of a refusal (an admission webhook's, for instance); `dry_run` runs
    /// the whole admission chain without storing the pod (`?dryRun=All`).
    pub async fn try_create_pod(&self, pod: &Value, dry_run: bool) -> Result<Value, (u16, String)> {
        let ns = pod["metadata"]["namespace"]
            .as_str()
            .expect("pod namespace");
        let query = if dry_run { "?dryRun=All" } else { "" };
        let r = self
            .http
            .post(format!("{}/api/v1/namespaces/{ns}/pods{query}", self.base))
            .json(pod)
            .send()
            .await
            .map_err(|e| (0, e.to_string()))?;
        let status = r.status().as_u16();
        let text = r.text().await.map_err(|e| (status, e.to_string()))?;
        if !(200..300).contains(&status) {
            return Err((status, text));
        }
        serde_json::from_str(&text).map_err(|e| (status, format!("{e}: {text}")))
    }

    /// The pod `ns/name`.
    pub async fn pod(&self, ns: &str, name: &str) -> Pod {
        self.get_as(&format!("/api/v1/namespaces/{ns}/pods/{name}"))
            .await
            .unwrap()
    }

    /// The node `name`, typed; `None` while the API server has none (or does not answer).
    pub async fn try_node(&self, name: &str) -> Option<Node> {
        self.get_as(&format!("/api/v1/nodes/{name}")).await.ok()
    }

    /// The pods of `ns`, typed.
    pub async fn typed_pods(&self, ns: &str) -> Vec<Pod> {
        self.get_as::<k8s_openapi::List<Pod>>(&format!("/api/v1/namespaces/{ns}/pods"))
            .await
            .unwrap()
            .items
    }

    pub async fn pods(&self, ns: &str) -> Vec<Value> {
        let list = self
            .get(&format!("/api/v1/namespaces/{ns}/pods"))
            .await
            .unwrap();
        list["items"].as_array().cloned().unwrap_or_default()
    }

    /// Deletes every pod of the namespace at once (grace period 0: there is no kubelet).
    pub async fn delete_pods(&self, ns: &str) {
        self.delete(&format!("/api/v1/namespaces/{ns}/pods"))
            .await
            .unwrap();
        let k = self.clone();
        let ns = ns.to_owned();
        wait_for("pods deleted", Duration::from_secs(60), || {
            let (k, ns) = (k.clone(), ns.clone());
            async move { k.pods(&ns).await.is_empty().then_some(()) }
        })
        .await;
    }

    /// Events about a pod (core/v1 view of what kube-scheduler records).
    pub async fn pod_events(&self, ns: &str, pod: &str) -> Vec<Value> {
        let list = self
            .get(&format!(
                "/api/v1/namespaces/{ns}/events?fieldSelector=involvedObject.name%3D{pod}"
            ))
            .await
            .unwrap();
        list["items"].as_array().cloned().unwrap_or_default()
    }

    /// Waits until the pod has a node, returns the node name.
    pub async fn wait_bound(&self, ns: &str, name: &str, timeout: Duration) -> String {
        wait_for(
            &format!("pod {ns}/{name} to be bound"),
            timeout,
            || async move { self.pod(ns, name).await.spec?.node_name },
        )
        .await
    }

    /// Waits until every pod of `names` is bound; returns their node names in order.
    pub async fn wait_all_bound(
        &self,
        ns: &str,
        names: &[String],
        timeout: Duration,
    ) -> Vec<String> {
        let mut out = Vec::new();
        let deadline = Instant::now() + timeout;
        for n in names {
            let left = deadline
                .saturating_duration_since(Instant::now())
                .max(Duration::from_secs(1));
            out.push(self.wait_bound(ns, n, left).await);
        }
        out
    }

    /// Waits until kube-scheduler has marked the pod unschedulable; returns the condition message.
    pub async fn wait_unschedulable(&self, ns: &str, name: &str, timeout: Duration) -> String {
        wait_for(
            &format!("pod {ns}/{name} to be Unschedulable"),
            timeout,
            || async move {
                let pod = self.pod(ns, name).await;
                let node = pod.spec.and_then(|s| s.node_name);
                assert!(node.is_none(), "pod {ns}/{name} was bound: {node:?}");
                pod.status?.conditions?.into_iter().find_map(|c| {
                    (c.type_ == "PodScheduled"
                        && c.status == "False"
                        && c.reason.as_deref() == Some("Unschedulable"))
                    .then(|| c.message.unwrap_or_default())
                })
            },
        )
        .await
    }
}

/// A watch's stream of events (`{"type": ADDED|MODIFIED|DELETED|BOOKMARK|ERROR, "object": …}`),
/// one JSON document per line.
pub struct Watch {
    response: reqwest::Response,
    buffer: Vec<u8>,
}

impl Watch {
    /// The next event; `None` when the server ended the watch (or the connection broke).
    pub async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(end) = self.buffer.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buffer.drain(..=end).collect();
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                return Some(serde_json::from_slice(&line).expect("a watch event is JSON"));
            }
            match self.response.chunk().await {
                Ok(Some(chunk)) => self.buffer.extend_from_slice(&chunk),
                _ => return None,
            }
        }
    }
}
