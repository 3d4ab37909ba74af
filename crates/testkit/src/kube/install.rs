//! The shipped install (`k8s/`) as a user runs it: the documented values set in a kustomize
//! overlay (the reporter's image through `images:`, the Worker URL through the
//! `aco-reporter-settings` ConfigMap), rendered by the pinned `kustomize` (what
//! `kubectl apply -k` renders), applied object by object to the control plane; then the
//! reporter's command line and environment read back from the rendered Deployment, so that the
//! test runs the reporter exactly as the Deployment would (with its ServiceAccount's token).
//!
//! [`identities`] are the ServiceAccounts and RBAC of that output: every control plane applies
//! them at start, and kube-scheduler and the reporter run with those ServiceAccounts' tokens
//! ([`super::ControlPlane`]), so a permission missing from `k8s/` fails a test.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use super::{ControlPlane, Kube};
use crate::repo_root;

/// The kinds that make an identity and its permissions.
const IDENTITY_KINDS: [&str; 5] = [
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
];

/// The rendered objects of `k8s/` with the two values set.
pub fn render(cp: &ControlPlane, worker_url: &str, image: &str) -> Vec<Value> {
    render_overlay(
        &cp.bin,
        &cp.dir.join("install-overlay"),
        worker_url,
        image,
        "",
    )
}

/// `kustomize build` (the binary in `bin`) of an overlay written to `overlay` (a directory, made
/// if missing): `k8s/` as its resource, the reporter's `image`, `ACO_WORKER_URL=worker_url`,
/// and `extra` — more kustomization YAML (top-level keys other than `configMapGenerator`) and
/// files the overlay needs, written beside it first.
pub fn render_overlay(
    bin: &Path,
    overlay: &Path,
    worker_url: &str,
    image: &str,
    extra: &str,
) -> Vec<Value> {
    std::fs::create_dir_all(overlay).unwrap();
    let (name, tag) = image.rsplit_once(':').unwrap_or((image, "latest"));
    // kustomize refuses an absolute resource path: the repository's k8s/ relative to the overlay.
    let depth = overlay.components().count().saturating_sub(1);
    let k8s = format!(
        "{}{}",
        "../".repeat(depth),
        repo_root()
            .join("k8s")
            .to_string_lossy()
            .trim_start_matches('/')
    );
    std::fs::write(
        overlay.join("kustomization.yaml"),
        format!(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - {}\nimages:\n  - name: aco-reporter\n    newName: {name}\n    newTag: \"{tag}\"\nconfigMapGenerator:\n  - name: aco-reporter-settings\n    namespace: kube-system\n    behavior: merge\n    literals:\n      - ACO_WORKER_URL={worker_url}\n{extra}",
            k8s
        ),
    )
    .unwrap();
    kustomize_build(bin, overlay)
}

/// `kustomize build` (the binary in `bin`) of the kustomization in `dir`, as JSON documents.
pub fn kustomize_build(bin: &Path, dir: &Path) -> Vec<Value> {
    let out = Command::new(bin.join("kustomize"))
        .arg("build")
        .arg(dir)
        .output()
        .expect("run kustomize (scripts/build-kube builds it)");
    assert!(
        out.status.success(),
        "kustomize build of {} failed: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    yaml_docs(&String::from_utf8(out.stdout).unwrap())
}

/// The one generated object of `kind` whose name starts with `prefix-` (a content hash follows).
pub fn generated<'a>(objects: &'a [Value], kind: &str, prefix: &str) -> &'a Value {
    let found: Vec<&Value> = objects
        .iter()
        .filter(|o| {
            o["kind"] == kind
                && o["metadata"]["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with(&format!("{prefix}-")))
        })
        .collect();
    assert_eq!(found.len(), 1, "one generated {kind} {prefix}-<hash>");
    found[0]
}

/// The documents of a multi-document YAML text, as JSON (empty documents dropped).
pub fn yaml_docs(text: &str) -> Vec<Value> {
    serde_yaml::Deserializer::from_str(text)
        .map(|doc| {
            let v: serde_yaml::Value = serde::Deserialize::deserialize(doc).unwrap();
            serde_json::to_value(v).unwrap()
        })
        .filter(|v| !v.is_null())
        .collect()
}

/// [`yaml_docs`] of a file.
pub fn yaml_file(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    yaml_docs(&text)
}

/// Every object of `T`'s kind among `objects`, read as `T`.
pub fn of_kind<T: k8s_openapi::Resource + serde::de::DeserializeOwned>(
    objects: &[Value],
) -> Vec<T> {
    objects
        .iter()
        .filter(|o| o["kind"] == T::KIND)
        .map(super::typed)
        .collect()
}

/// The ServiceAccounts, Roles, ClusterRoles and their bindings among `objects`.
pub fn identities(objects: &[Value]) -> Vec<Value> {
    objects
        .iter()
        .filter(|o| IDENTITY_KINDS.contains(&o["kind"].as_str().unwrap_or_default()))
        .cloned()
        .collect()
}

/// The object of this kind and name.
pub fn object<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} in the rendered k8s/"))
}

/// The collection an object is created in.
fn collection(obj: &Value) -> String {
    let kind = obj["kind"].as_str().unwrap();
    let ns = obj["metadata"]["namespace"].as_str().unwrap_or("default");
    let (prefix, plural, namespaced) = match kind {
        "ServiceAccount" => ("/api/v1", "serviceaccounts", true),
        "ConfigMap" => ("/api/v1", "configmaps", true),
        "Secret" => ("/api/v1", "secrets", true),
        "Service" => ("/api/v1", "services", true),
        "NetworkPolicy" => ("/apis/networking.k8s.io/v1", "networkpolicies", true),
        "Deployment" => ("/apis/apps/v1", "deployments", true),
        "PodDisruptionBudget" => ("/apis/policy/v1", "poddisruptionbudgets", true),
        "MutatingWebhookConfiguration" => (
            "/apis/admissionregistration.k8s.io/v1",
            "mutatingwebhookconfigurations",
            false,
        ),
        "ClusterRole" => ("/apis/rbac.authorization.k8s.io/v1", "clusterroles", false),
        "ClusterRoleBinding" => (
            "/apis/rbac.authorization.k8s.io/v1",
            "clusterrolebindings",
            false,
        ),
        "Role" => ("/apis/rbac.authorization.k8s.io/v1", "roles", true),
        "RoleBinding" => ("/apis/rbac.authorization.k8s.io/v1", "rolebindings", true),
        other => panic!("install: no collection known for kind {other}"),
    };
    if namespaced {
        format!("{prefix}/namespaces/{ns}/{plural}")
    } else {
        format!("{prefix}/{plural}")
    }
}

/// The shipped `MutatingWebhookConfiguration` (`k8s/webhook/webhook.yaml`) as this output renders it,
/// with only its endpoint changed: `clientConfig` calls `https://127.0.0.1:<port>` (the test's
/// reporter, [`super::reporter::Reporter::webhook`]) at the rendered path, trusting `ca_pem`
/// ([`super::Pki::webhook_ca_pem`]) — in a cluster the Service and the injected CA. Rules,
/// selectors, matchConditions, failure policy and timeout are the shipped ones.
pub fn local_webhook(objects: &[Value], port: u16, ca_pem: &[u8]) -> Value {
    let mut mwc = object(objects, "MutatingWebhookConfiguration", "aco-reporter").clone();
    for hook in mwc["webhooks"].as_array_mut().unwrap() {
        let path = hook["clientConfig"]["service"]["path"]
            .as_str()
            .unwrap_or("/")
            .to_owned();
        hook["clientConfig"] = serde_json::json!({
            "url": format!("https://127.0.0.1:{port}{path}"),
            "caBundle": super::base64::encode(ca_pem),
        });
    }
    mwc
}

/// Applies every object (`kubectl apply --server-side`: created, or updated if it exists).
pub async fn apply(kube: &Kube, objects: &[Value]) {
    for obj in objects {
        kube.apply(&collection(obj), obj).await;
    }
}

/// The reporter container of the rendered `aco-reporter` Deployment.
pub fn reporter_container(objects: &[Value]) -> Value {
    object(objects, "Deployment", "aco-reporter")["spec"]["template"]["spec"]["containers"][0]
        .clone()
}

/// The reporter's environment as the kubelet would give it: plain values, ConfigMap keys and
/// the pod's own fields resolved; `ACO_TOKEN_FILE` pointed at `token_file` (the mounted Secret).
pub fn reporter_env(
    objects: &[Value],
    pod_name: &str,
    token_file: &Path,
) -> Vec<(String, PathBuf)> {
    let container = reporter_container(objects);
    let configmap = |name: &str, key: &str| -> String {
        objects
            .iter()
            .find(|o| o["kind"] == "ConfigMap" && o["metadata"]["name"] == name)
            .and_then(|o| o["data"][key].as_str())
            .unwrap_or_else(|| panic!("ConfigMap {name} key {key}"))
            .to_owned()
    };
    container["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let name = e["name"].as_str().unwrap().to_owned();
            let value = if name == "ACO_TOKEN_FILE" {
                token_file.to_string_lossy().into_owned()
            } else if let Some(v) = e["value"].as_str() {
                v.to_owned()
            } else if let Some(r) = e["valueFrom"]["configMapKeyRef"].as_object() {
                configmap(r["name"].as_str().unwrap(), r["key"].as_str().unwrap())
            } else {
                match e["valueFrom"]["fieldRef"]["fieldPath"].as_str() {
                    Some("metadata.namespace") => "kube-system".into(),
                    Some("metadata.name") => pod_name.into(),
                    other => panic!("env {name}: {other:?}"),
                }
            };
            (name, PathBuf::from(value))
        })
        .collect()
}

/// The container's `args`.
pub fn reporter_args(objects: &[Value]) -> Vec<String> {
    reporter_container(objects)["args"]
        .as_array()
        .map(|a| a.iter().map(|s| s.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default()
}

/// The file `key` of a rendered Secret, decoded. (kustomize wraps a Secret's base64 at 70
/// columns, which the API server accepts and k8s-openapi's `ByteString` refuses.)
pub fn secret_file(secret: &Value, key: &str) -> String {
    let data = secret["data"][key]
        .as_str()
        .unwrap_or_else(|| panic!("no {key} in the Secret"));
    String::from_utf8(super::base64::decode(data)).expect("a UTF-8 file")
}
