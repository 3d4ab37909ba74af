// A KV namespace for workerd without Miniflare or Cloudflare (k8s/self-hosted/workerd.capnp).
//
// workerd implements a KV binding (`kvNamespace = "<service>"`) as HTTP requests to a service,
// in the protocol of Cloudflare's KV API: GET/PUT/DELETE /<key> (`urlencoded=true`: the key is
// URI-encoded), PUT with `expiration_ttl` or `expiration` (seconds) and the `CF-KV-Metadata`
// header, GET / to list (`prefix`, `key_count_limit`, `cursor`). Miniflare serves it from its own
// objects; this module serves it from one SQLite-backed Durable Object, so the keys live on the
// same volume as the Worker's Durable Objects and survive a restart.
//
// Limits as KV's own where they matter to a caller (key ≤ 512 bytes, expiration ≥ 60 s, list
// ≤ 1,000 keys), and values ≤ 1 MiB (below the 2 MB SQLite row of a Durable Object). Expired
// keys read as missing and are deleted, a few at a time, by later writes.
import { DurableObject } from "cloudflare:workers";

const MAX_KEY_BYTES = 512;
const MAX_VALUE_BYTES = 1 << 20;
const MIN_EXPIRATION_TTL_S = 60;
const MAX_LIST_KEYS = 1000;
// Expired rows deleted per write: bounded work per request, and faster than keys expire at
// one write per new key.
const SWEEP_PER_WRITE = 16;

class HttpError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function keyOf(url) {
  const raw = url.pathname.slice(1);
  let key = raw;
  if (url.searchParams.get("urlencoded")?.toLowerCase() === "true") {
    try {
      key = decodeURIComponent(raw);
    } catch {
      throw new HttpError(400, "Could not URL-decode key name");
    }
  }
  if (key === "" || key === "." || key === "..") throw new HttpError(400, `Illegal key name "${key}"`);
  if (new TextEncoder().encode(key).length > MAX_KEY_BYTES) {
    throw new HttpError(414, `key longer than ${MAX_KEY_BYTES} bytes`);
  }
  return key;
}

function integerParam(url, name) {
  const raw = url.searchParams.get(name);
  if (raw === null) return null;
  const value = Number(raw);
  if (!Number.isInteger(value)) throw new HttpError(400, `Invalid ${name} of ${raw}`);
  return value;
}

/// Expiry in ms since the epoch, null for none.
function expiryOf(url, nowMs) {
  const nowS = Math.floor(nowMs / 1000);
  const ttl = integerParam(url, "expiration_ttl");
  if (ttl !== null) {
    if (ttl < MIN_EXPIRATION_TTL_S) {
      throw new HttpError(400, `Invalid expiration_ttl of ${ttl}: at least ${MIN_EXPIRATION_TTL_S}`);
    }
    return (nowS + ttl) * 1000;
  }
  const at = integerParam(url, "expiration");
  if (at !== null) {
    if (at < nowS + MIN_EXPIRATION_TTL_S) {
      throw new HttpError(400, `Invalid expiration of ${at}: at least ${MIN_EXPIRATION_TTL_S} s ahead`);
    }
    return at * 1000;
  }
  return null;
}

export class KvNamespace extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(
      `CREATE TABLE IF NOT EXISTS kv (
         key TEXT PRIMARY KEY, value BLOB NOT NULL, expires_ms INTEGER, metadata TEXT
       ) WITHOUT ROWID`,
    );
    this.sql.exec("CREATE INDEX IF NOT EXISTS kv_expiry ON kv (expires_ms) WHERE expires_ms IS NOT NULL");
  }

  async fetch(request) {
    try {
      return await this.serve(request);
    } catch (e) {
      if (e instanceof HttpError) return new Response(e.message, { status: e.status });
      throw e;
    }
  }

  async serve(request) {
    const url = new URL(request.url);
    const now = Date.now();
    if (url.pathname === "/" && request.method === "GET") return this.list(url, now);
    switch (request.method) {
      case "GET":
        return this.get(keyOf(url), now);
      case "PUT":
        return this.put(keyOf(url), url, request, now);
      case "DELETE":
        this.sql.exec("DELETE FROM kv WHERE key = ?", keyOf(url));
        return new Response(null);
      default:
        throw new HttpError(405, `${request.method} ${url.pathname} is not served`);
    }
  }

  get(key, now) {
    const row = this.sql.exec("SELECT value, expires_ms, metadata FROM kv WHERE key = ?", key).toArray()[0];
    if (row === undefined || (row.expires_ms !== null && row.expires_ms <= now)) {
      return new Response("Not Found", { status: 404 });
    }
    const headers = new Headers();
    if (row.expires_ms !== null) headers.set("CF-Expiration", String(Math.floor(row.expires_ms / 1000)));
    if (row.metadata !== null) headers.set("CF-KV-Metadata", row.metadata);
    return new Response(row.value, { headers });
  }

  async put(key, url, request, now) {
    const expires = expiryOf(url, now);
    const metadata = request.headers.get("CF-KV-Metadata");
    if (metadata !== null) {
      try {
        JSON.parse(metadata);
      } catch {
        throw new HttpError(400, "CF-KV-Metadata is not JSON");
      }
    }
    const value = await request.arrayBuffer();
    if (value.byteLength > MAX_VALUE_BYTES) {
      throw new HttpError(413, `Value length of ${value.byteLength} exceeds limit of ${MAX_VALUE_BYTES}`);
    }
    this.sql.exec(
      "DELETE FROM kv WHERE key IN (SELECT key FROM kv WHERE expires_ms <= ? LIMIT ?)",
      now,
      SWEEP_PER_WRITE,
    );
    this.sql.exec(
      "INSERT OR REPLACE INTO kv (key, value, expires_ms, metadata) VALUES (?, ?, ?, ?)",
      key,
      value,
      expires,
      metadata,
    );
    return new Response(null);
  }

  list(url, now) {
    const prefix = url.searchParams.get("prefix") ?? "";
    const limit = integerParam(url, "key_count_limit") ?? MAX_LIST_KEYS;
    if (limit < 1 || limit > MAX_LIST_KEYS) throw new HttpError(400, `Invalid key_count_limit of ${limit}`);
    const after = url.searchParams.get("cursor") ?? "";
    // Keys in byte order after the cursor (the last key of the previous page), then filtered by
    // prefix here: SQLite's LIKE/GLOB would treat %, _, * in a prefix as patterns.
    const rows = this.sql
      .exec(
        "SELECT key, expires_ms, metadata FROM kv WHERE key > ? AND key >= ? AND (expires_ms IS NULL OR expires_ms > ?) ORDER BY key",
        after,
        prefix,
        now,
      );
    const keys = [];
    let more = false;
    for (const row of rows) {
      if (!row.key.startsWith(prefix)) break;
      if (keys.length === limit) {
        more = true;
        break;
      }
      const item = { name: row.key };
      if (row.expires_ms !== null) item.expiration = Math.floor(row.expires_ms / 1000);
      if (row.metadata !== null) item.metadata = row.metadata;
      keys.push(item);
    }
    const body = more
      ? { keys, list_complete: false, cursor: keys[keys.length - 1].name, cacheStatus: null }
      : { keys, list_complete: true, cacheStatus: null };
    return Response.json(body);
  }
}

// The KV binding's requests all go to one object per namespace (this service serves one).
export default {
  fetch(request, env) {
    return env.STORE.get(env.STORE.idFromName("POD_TENANTS")).fetch(request);
  },
};
