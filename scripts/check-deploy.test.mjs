// node --test scripts/check-deploy.test.mjs — the refusals of scripts/check-deploy.mjs, on the
// shipped wrangler.toml and on variants of it that must fail (scripts/test runs it).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { parse as parseToml } from "smol-toml";

import { configProblems } from "./check-deploy.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const shipped = () => parseToml(readFileSync(path.join(root, "wrangler.toml"), "utf8"));

test("the shipped wrangler.toml passes, but not --for-deploy with the placeholder KV id", () => {
  assert.deepEqual(configProblems(shipped()), []);
  const forDeploy = configProblems(shipped(), { forDeploy: true });
  assert.equal(forDeploy.length, 1);
  assert.match(forDeploy[0], /POD_TENANTS: id is the placeholder/);
  const real = shipped();
  real.kv_namespaces[0].id = "0f2ac74b498b48028cb68387c421e279";
  assert.deepEqual(configProblems(real, { forDeploy: true }), []);
});

test("a secret's name among [vars] is refused, whatever its value", () => {
  for (const name of ["ADMIN_TOKEN", "METRICS_TOKEN", "EXTENDER_TOKENS"]) {
    const c = shipped();
    c.vars[name] = "a-long-and-random-looking-value-0123456789abcdef";
    assert.match(configProblems(c).join("\n"), new RegExp(`sets ${name}: it is a secret`), name);
  }
});

test("the old development token and known or short credentials are refused", () => {
  const dev = shipped();
  dev.vars.SOMETHING = "dev-admin-token";
  assert.match(configProblems(dev).join("\n"), /well-known value/);
  const known = shipped();
  known.vars.API_KEY = "changeme";
  assert.match(configProblems(known).join("\n"), /API_KEY = "changeme": a well-known value/);
  const short = shipped();
  short.vars.WEBHOOK_TOKEN = "abc123";
  assert.match(configProblems(short).join("\n"), /credential of 6 characters/);
  const env = shipped();
  env.env = { staging: { vars: { ADMIN_TOKEN: "x" } } };
  assert.match(configProblems(env).join("\n"), /\[env.staging\] \[vars\] sets ADMIN_TOKEN/);
  // A tunable that happens to read "test" is not a credential.
  const tenant = shipped();
  tenant.vars.TENANTS = "test";
  assert.deepEqual(configProblems(tenant), []);
});

test("open or missing extender authentication is refused", () => {
  const none = shipped();
  none.vars.EXTENDER_AUTH = "none";
  assert.match(configProblems(none).join("\n"), /EXTENDER_AUTH = "none" serves the extender verbs to anyone/);
  const missing = shipped();
  delete missing.vars.EXTENDER_AUTH;
  assert.match(configProblems(missing).join("\n"), /no EXTENDER_AUTH/);
  const mtls = shipped();
  mtls.vars.EXTENDER_AUTH = "mtls";
  assert.deepEqual(configProblems(mtls), []);
});

test("a Durable Object class no migration creates, and a repeated tag, are refused", () => {
  const c = shipped();
  c.durable_objects.bindings.push({ name: "EXTRA", class_name: "Extra" });
  c.migrations.push({ tag: "v1", new_sqlite_classes: ["Other"] });
  const problems = configProblems(c).join("\n");
  assert.match(problems, /EXTRA: no migration creates class Extra/);
  assert.match(problems, /migration tag "v1" is used twice/);
  const deleted = shipped();
  deleted.migrations.push({ tag: "v9", deleted_classes: ["Registry"] });
  assert.match(configProblems(deleted).join("\n"), /REGISTRY: no migration creates class Registry/);
});
