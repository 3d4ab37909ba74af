#!/usr/bin/env node
// Checks what `wrangler deploy` would upload, without an account or a network (docs/deploy.md "Deploy";
// a step of scripts/test):
//
//   node scripts/check-deploy.mjs --outdir DIR [--wrangler-log FILE] [--config wrangler.toml] [--for-deploy]
//
// DIR is what `wrangler deploy --dry-run --outdir DIR` wrote (scripts/check-deploy runs it), the
// log its output. Refused, each with a message naming the fix:
//   - a secret's name among [vars] (ADMIN_TOKEN, METRICS_TOKEN, EXTENDER_TOKENS): on Cloudflare
//     vars and secrets share one namespace, so the var blocks `wrangler secret put` or comes back
//     with the next deploy;
//   - `dev-admin-token` anywhere in [vars], and a well-known or short value of a var named like a
//     credential (*TOKEN*, *SECRET*, *PASSWORD*, *KEY*);
//   - EXTENDER_AUTH missing or "none" (open extender verbs) in the production config;
//   - a Durable Object binding whose class no migration creates, a migration tag used twice, a
//     migrated class the bundle does not export;
//   - a binding of wrangler.toml missing from wrangler's list of the Worker's bindings;
//   - a bundle without its main module or wasm, or over the Worker size limits (below);
//   - with --for-deploy (before a real deploy): the placeholder KV namespace id.
// Prints the bundle's size (raw and gzip) and exits non-zero on any refusal.
import { readFileSync, readdirSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { gzipSync } from "node:zlib";
import { parse as parseToml } from "smol-toml";

// Cloudflare's Worker size limits (https://developers.cloudflare.com/workers/platform/limits/,
// "Worker size"): 10 MB after compression on Workers Paid (3 MB on Free) is the limit wrangler
// 4.x enforces at upload; the current limits page states 64 MiB uncompressed for every plan.
// Both are checked: the bundle must fit the stricter reading.
export const PAID_GZIP_LIMIT = 10 * 1024 * 1024;
export const UNCOMPRESSED_LIMIT = 64 * 1024 * 1024;

/** Bindings that must be Cloudflare secrets (`wrangler secret put`), never [vars]. */
export const SECRET_NAMES = ["ADMIN_TOKEN", "METRICS_TOKEN", "EXTENDER_TOKENS"];
/** Values nobody may deploy as a credential (the Worker refuses them too). */
export const KNOWN_TOKENS = ["dev-admin-token", "changeme", "change-me", "admin", "test", "password", "secret", "token"];
const PLACEHOLDER_KV_ID = /^0+$/;

/** Every problem of a parsed wrangler.toml as a production config; [] when fine. */
export function configProblems(config, { forDeploy = false } = {}) {
  const problems = [];
  const envs = [["", config], ...Object.entries(config.env ?? {}).map(([name, env]) => [`[env.${name}] `, env])];
  for (const [where, env] of envs) {
    const vars = env.vars ?? {};
    for (const name of SECRET_NAMES) {
      if (name in vars) {
        problems.push(`${where}[vars] sets ${name}: it is a secret — remove the var and run \`wrangler secret put ${name}\` (a var of the same name blocks the secret or overwrites it on the next deploy)`);
      }
    }
    for (const [name, value] of Object.entries(vars)) {
      if (typeof value !== "string") continue;
      const credential = /TOKEN|SECRET|PASSWORD|KEY/i.test(name);
      if (value.trim().toLowerCase() === "dev-admin-token" || (credential && KNOWN_TOKENS.includes(value.trim().toLowerCase()))) {
        problems.push(`${where}[vars] ${name} = "${value}": a well-known value, never deploy it`);
      } else if (credential && value.length < 32) {
        problems.push(`${where}[vars] ${name} is a credential of ${value.length} characters: use a secret of at least 32`);
      }
    }
  }
  const auth = config.vars?.EXTENDER_AUTH;
  if (auth === undefined) {
    problems.push('[vars] has no EXTENDER_AUTH: set "path-token" (or "mtls"); the Worker refuses to serve the verbs without it');
  } else if (auth === "none") {
    problems.push('[vars] EXTENDER_AUTH = "none" serves the extender verbs to anyone: ship "path-token" (or "mtls"); "none" belongs in .dev.vars for local development');
  } else if (!["path-token", "mtls"].includes(auth)) {
    problems.push(`[vars] EXTENDER_AUTH = "${auth}": must be "path-token" or "mtls" in production`);
  }

  const migrations = config.migrations ?? [];
  const tags = migrations.map((m) => m.tag);
  for (const tag of new Set(tags)) {
    if (tags.filter((t) => t === tag).length > 1) problems.push(`migration tag "${tag}" is used twice`);
  }
  const created = new Set(migrations.flatMap((m) => [...(m.new_sqlite_classes ?? []), ...(m.new_classes ?? [])]));
  for (const m of migrations) {
    for (const c of m.deleted_classes ?? []) created.delete(c);
    for (const r of m.renamed_classes ?? []) {
      created.delete(r.from);
      created.add(r.to);
    }
  }
  for (const b of config.durable_objects?.bindings ?? []) {
    if (!b.script_name && !created.has(b.class_name)) {
      problems.push(`durable object ${b.name}: no migration creates class ${b.class_name} (add it to a new [[migrations]] tag)`);
    }
  }
  for (const ns of config.kv_namespaces ?? []) {
    if (!ns.id) problems.push(`KV namespace ${ns.binding} has no id`);
    else if (forDeploy && PLACEHOLDER_KV_ID.test(ns.id)) {
      problems.push(`KV namespace ${ns.binding}: id is the placeholder ${ns.id}; put the id \`wrangler kv namespace create ${ns.binding}\` printed in wrangler.toml`);
    }
  }
  return problems;
}

/** Classes a migration leaves in place: each must be exported by the bundle. */
export function migratedClasses(config) {
  const live = new Set();
  for (const m of config.migrations ?? []) {
    for (const c of [...(m.new_sqlite_classes ?? []), ...(m.new_classes ?? [])]) live.add(c);
    for (const c of m.deleted_classes ?? []) live.delete(c);
    for (const r of m.renamed_classes ?? []) {
      live.delete(r.from);
      live.add(r.to);
    }
  }
  return [...live];
}

function files(dir) {
  return readdirSync(dir, { recursive: true })
    .map((f) => path.join(dir, f))
    .filter((f) => statSync(f).isFile() && !f.endsWith(".map") && !path.basename(f).startsWith("README"));
}

/** Problems of the bundle in `outdir` (and wrangler's log), plus its sizes. */
export function bundleProblems(config, outdir, wranglerLog) {
  const problems = [];
  const all = files(outdir);
  const main = path.basename(config.main ?? "index.js");
  const entry = all.find((f) => path.basename(f) === main);
  if (!entry) problems.push(`the bundle in ${outdir} has no ${main}`);
  if (!all.some((f) => f.endsWith(".wasm"))) problems.push(`the bundle in ${outdir} has no .wasm module`);
  let raw = 0;
  let gzip = 0;
  for (const f of all) {
    const bytes = readFileSync(f);
    raw += bytes.length;
    gzip += gzipSync(bytes, { level: 9 }).length;
  }
  if (gzip > PAID_GZIP_LIMIT) problems.push(`bundle is ${mib(gzip)} gzipped, over the Workers Paid limit of ${mib(PAID_GZIP_LIMIT)}`);
  if (raw > UNCOMPRESSED_LIMIT) problems.push(`bundle is ${mib(raw)}, over the ${mib(UNCOMPRESSED_LIMIT)} Worker size limit`);
  if (entry) {
    const js = readFileSync(entry, "utf8");
    for (const cls of migratedClasses(config)) {
      // esbuild's export list: `export { A, B as C, ... }` or `export class A`.
      const exported = new RegExp(`export\\s*\\{[^}]*\\b${cls}\\b[^}]*\\}|export\\s+class\\s+${cls}\\b`).test(js);
      if (!exported) problems.push(`the bundle does not export Durable Object class ${cls} (a migration creates it)`);
    }
  }
  if (wranglerLog !== undefined) {
    const names = [
      ...(config.durable_objects?.bindings ?? []).map((b) => b.name),
      ...(config.kv_namespaces ?? []).map((k) => k.binding),
      ...Object.keys(config.vars ?? {}),
    ];
    for (const name of names) {
      if (!new RegExp(`\\b${name}\\b`).test(wranglerLog)) problems.push(`wrangler's dry run does not list binding ${name}`);
    }
    if (!/--dry-run: exiting now/.test(wranglerLog)) problems.push("wrangler did not finish its dry run (no '--dry-run: exiting now.')");
  }
  return { problems, raw, gzip, files: all.length };
}

function mib(bytes) {
  return `${(bytes / 1024 / 1024).toFixed(2)} MiB`;
}

function main() {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
  const { values } = parseArgs({
    options: {
      outdir: { type: "string" },
      "wrangler-log": { type: "string" },
      config: { type: "string", default: path.join(root, "wrangler.toml") },
      "for-deploy": { type: "boolean", default: false },
    },
    strict: true,
  });
  const config = parseToml(readFileSync(values.config, "utf8"));
  const problems = configProblems(config, { forDeploy: values["for-deploy"] });
  if (values.outdir !== undefined) {
    const log = values["wrangler-log"] === undefined ? undefined : readFileSync(values["wrangler-log"], "utf8");
    const bundle = bundleProblems(config, values.outdir, log);
    problems.push(...bundle.problems);
    console.log(
      `check-deploy: bundle ${bundle.files} files, ${mib(bundle.raw)} raw, ${mib(bundle.gzip)} gzip -9 ` +
        `(limits: ${mib(PAID_GZIP_LIMIT)} gzipped on Workers Paid, ${mib(UNCOMPRESSED_LIMIT)} uncompressed)`,
    );
  }
  for (const p of problems) console.error(`check-deploy: ${p}`);
  if (problems.length > 0) process.exit(1);
  console.log(`check-deploy: ${path.relative(root, values.config) || values.config} ok (EXTENDER_AUTH=${config.vars.EXTENDER_AUTH}, no secret among [vars])`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
