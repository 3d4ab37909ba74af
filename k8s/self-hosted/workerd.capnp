# workerd's own configuration of the self-hosted Worker (no Miniflare, no Cloudflare account):
# the unchanged bundle of `bash scripts/build-worker` (build/index.js + build/index_bg.wasm) with
# the bindings wrangler.toml declares, served over HTTPS by one workerd process.
#
#   workerd serve /etc/aco-worker/workerd.capnp -I /srv/aco -I /var/run/aco-worker
#
# Absolute `embed` paths are looked up in the -I directories: the image (workerd/Dockerfile) has
# the bundle under /srv/aco/build and the KV service under /srv/aco/workerd; the Secret
# aco-worker-tls is mounted at /var/run/aco-worker/tls. The same file is what the tests run
# (crates/testkit/src/workerd.rs: -I <repository> -I <test PKI>, the state directory and the
# listening address overridden on the command line), so keep it the only copy.
#
# Tuning: every `[vars]` key of docs/configuration.md is a text binding of the worker below
# (`(name = "TENANT_SOURCE", text = "namespace")`); the secrets come from the environment, which
# the StatefulSet fills from the Secret aco-worker-secrets. The file is a ConfigMap generated
# with a content hash (k8s/self-hosted/kustomization.yaml): an edit rolls the pod.
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "aco-edge-extender", worker = .extender),
    (name = "pod-tenants-kv", worker = .kv),
    # Durable Object state (SQLite files, one directory per class), on the PersistentVolume.
    (name = "state", disk = (path = "/var/lib/aco-worker", writable = true)),
    # What the workers may reach outside this process: nothing.
    (name = "no-network", network = (allow = [])),
  ],
  sockets = [
    ( name = "https",
      address = "*:8443",
      https = (
        options = (),
        tlsOptions = (
          keypair = (
            privateKey = embed "/tls/tls.key",
            certificateChain = embed "/tls/tls.crt",
          ),
        ),
      ),
      service = "aco-edge-extender",
    ),
  ],
);

# The Worker: wrangler.toml's name, main, compatibility_date, Durable Object bindings and
# migrations (every class SQLite-backed: new_sqlite_classes), KV namespace and [vars].
const extender :Workerd.Worker = (
  modules = [
    (name = "index.js", esModule = embed "/build/index.js"),
    (name = "index_bg.wasm", wasm = embed "/build/index_bg.wasm"),
  ],
  compatibilityDate = "2026-04-01",
  bindings = [
    (name = "COLONY", durableObjectNamespace = "Colony"),
    (name = "TELEMETRY", durableObjectNamespace = "Telemetry"),
    (name = "FACTS", durableObjectNamespace = "Facts"),
    (name = "REGISTRY", durableObjectNamespace = "Registry"),
    (name = "POD_TENANTS", kvNamespace = "pod-tenants-kv"),
    # [vars]
    (name = "EXTENDER_AUTH", text = "path-token"),
    # Secrets (docs/deploy.md "Deploy"): set in the environment, never here. An unset variable would be
    # a null binding, which the Worker cannot read: the StatefulSet requires all three.
    (name = "ADMIN_TOKEN", fromEnvironment = "ADMIN_TOKEN"),
    (name = "METRICS_TOKEN", fromEnvironment = "METRICS_TOKEN"),
    (name = "EXTENDER_TOKENS", fromEnvironment = "EXTENDER_TOKENS"),
  ],
  # The unique keys name each class's directory under the state volume (and seed the objects'
  # ids): never change them, or the colonies start empty. They are the ones `wrangler dev`
  # (Miniflare) uses for this Worker, "<name>-<class>".
  durableObjectNamespaces = [
    (className = "Colony", uniqueKey = "aco-edge-extender-Colony", enableSql = true),
    (className = "Telemetry", uniqueKey = "aco-edge-extender-Telemetry", enableSql = true),
    (className = "Facts", uniqueKey = "aco-edge-extender-Facts", enableSql = true),
    (className = "Registry", uniqueKey = "aco-edge-extender-Registry", enableSql = true),
  ],
  durableObjectStorage = (localDisk = "state"),
  # The Worker calls nothing outside this process.
  globalOutbound = "no-network",
);

# The KV namespace POD_TENANTS (the pod → tenant index of the bind verb), on the same volume:
# workerd has no KV store of its own, a KV binding sends Cloudflare's KV protocol to a service.
# This one keeps the keys in one SQLite-backed Durable Object (workerd/kv-namespace.js).
const kv :Workerd.Worker = (
  modules = [(name = "kv-namespace.js", esModule = embed "/workerd/kv-namespace.js")],
  compatibilityDate = "2026-04-01",
  bindings = [(name = "STORE", durableObjectNamespace = "KvNamespace")],
  durableObjectNamespaces = [
    (className = "KvNamespace", uniqueKey = "aco-edge-extender-POD_TENANTS", enableSql = true),
  ],
  durableObjectStorage = (localDisk = "state"),
  globalOutbound = "no-network",
);
