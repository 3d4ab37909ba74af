#!/usr/bin/env node
// Runs the built Worker (build/index.js + its wasm, from `bash scripts/build-worker`) in
// Miniflare, configured from wrangler.toml (the single source of bindings and [vars]; it holds
// no secret, so the caller passes them: --vars-file and/or --vars).
//
//   node crates/testkit/miniflare.mjs [--persist DIR] [--port N] [--vars-file FILE] [--vars JSON]
//                                    [--https-key FILE --https-cert FILE] [--cf JSON] [--watch-stdin]
//
// Prints exactly one line `READY <url>` (no trailing slash) on stdout once it serves requests,
// then keeps running until SIGTERM/SIGINT (or, with --watch-stdin, until stdin closes: the Rust
// harness passes it so that an aborted test run cannot leave servers behind). Everything else —
// Miniflare's log, the Worker's console output — goes to stderr, so stdout stays machine-readable.
//
// --persist DIR keeps Durable Object and KV state in DIR/do and DIR/kv (the same layout as
// `wrangler dev`'s .wrangler/state/v3), so it survives a restart; without it state is in memory.
// --vars-file FILE is a dotenv file (the `.dev.vars` format `wrangler dev` reads; scripts/dev-vars
// writes one) merged over wrangler.toml's [vars]; --vars JSON is an object merged over both. The
// test kit passes its secrets with --vars (crates/testkit/src/worker.rs), scripts/demo with
// --vars-file, so no secret is ever taken from the repository.
// --cf JSON is the request.cf object every incoming request carries (e.g. an API Shield
// `tlsClientAuth`); without it Miniflare's built-in fallback is used.

import { readFile } from "node:fs/promises";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs, parseEnv } from "node:util";
import { Log, LogLevel, Miniflare } from "miniflare";
import { parse as parseToml } from "smol-toml";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

// stdout carries only the READY line; route anything that would print there to stderr.
for (const method of ["log", "info", "debug"]) console[method] = console.error;

function fail(message) {
  process.stderr.write(`miniflare.mjs: ${message}\n`);
  process.exit(1);
}

function parseCli() {
  const { values } = parseArgs({
    options: {
      persist: { type: "string" },
      port: { type: "string", default: "0" },
      vars: { type: "string" },
      "vars-file": { type: "string" },
      cf: { type: "string" },
      "https-key": { type: "string" },
      "https-cert": { type: "string" },
      config: { type: "string", default: path.join(repoRoot, "wrangler.toml") },
      "watch-stdin": { type: "boolean", default: false },
      verbose: { type: "boolean", default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) fail(`bad --port ${values.port}`);
  let vars = {};
  if (values.vars !== undefined) {
    try {
      vars = JSON.parse(values.vars);
    } catch (e) {
      fail(`--vars is not JSON: ${e.message}`);
    }
    if (vars === null || typeof vars !== "object" || Array.isArray(vars)) fail("--vars must be a JSON object");
  }
  let fileVars = {};
  if (values["vars-file"] !== undefined) {
    try {
      fileVars = parseEnv(readFileSync(values["vars-file"], "utf8"));
    } catch (e) {
      fail(`cannot read --vars-file ${values["vars-file"]}: ${e.message}`);
    }
  }
  if ((values["https-key"] === undefined) !== (values["https-cert"] === undefined)) {
    fail("--https-key and --https-cert go together");
  }
  let cf = false;
  if (values.cf !== undefined) {
    try {
      cf = JSON.parse(values.cf);
    } catch (e) {
      fail(`--cf is not JSON: ${e.message}`);
    }
  }
  return { ...values, port, vars: { ...fileVars, ...vars }, cf };
}

// Translates wrangler.toml into Miniflare worker options.
function workerOptionsFrom(config, configDir, cli) {
  const main = path.resolve(configDir, config.main ?? "build/index.js");
  if (!existsSync(main)) fail(`${main} does not exist; run: bash scripts/build-worker`);

  // Classes created by a `new_classes` migration are the legacy key-value backend; everything
  // else (new_sqlite_classes, or no migration at all) gets SQLite storage like production.
  const legacyKvClasses = new Set((config.migrations ?? []).flatMap((m) => m.new_classes ?? []));
  const durableObjects = {};
  for (const b of config.durable_objects?.bindings ?? []) {
    if (b.script_name) fail(`durable object ${b.name}: script_name (another Worker) is not supported`);
    durableObjects[b.name] = { className: b.class_name, useSQLite: !legacyKvClasses.has(b.class_name) };
  }

  const kvNamespaces = {};
  for (const ns of config.kv_namespaces ?? []) kvNamespaces[ns.binding] = ns.id ?? ns.binding;

  return {
    name: config.name,
    compatibilityDate: config.compatibility_date,
    compatibilityFlags: config.compatibility_flags ?? [],
    modules: true,
    scriptPath: main,
    modulesRoot: path.dirname(main),
    modulesRules: [
      { type: "ESModule", include: ["**/*.js", "**/*.mjs"] },
      { type: "CompiledWasm", include: ["**/*.wasm"] },
    ],
    bindings: { ...(config.vars ?? {}), ...cli.vars },
    durableObjects,
    kvNamespaces,
  };
}

async function main() {
  const cli = parseCli();
  const configPath = path.resolve(cli.config);
  let config;
  try {
    config = parseToml(await readFile(configPath, "utf8"));
  } catch (e) {
    fail(`cannot read ${configPath}: ${e.message}`);
  }

  const options = {
    ...workerOptionsFrom(config, path.dirname(configPath), cli),
    host: "127.0.0.1",
    port: cli.port,
    // Never fetch the Request.cf template from the internet; use Miniflare's built-in fallback.
    cf: cli.cf,
    log: new Log(cli.verbose ? LogLevel.DEBUG : LogLevel.WARN),
    // The Worker's console output and workerd's own messages: to stderr, never stdout.
    handleRuntimeStdio(stdout, stderr) {
      stdout.pipe(process.stderr);
      stderr.pipe(process.stderr);
    },
  };
  if (cli.persist !== undefined) {
    const dir = path.resolve(cli.persist);
    options.durableObjectsPersist = path.join(dir, "do");
    options.kvPersist = path.join(dir, "kv");
  }
  if (cli["https-key"] !== undefined) {
    options.httpsKeyPath = path.resolve(cli["https-key"]);
    options.httpsCertPath = path.resolve(cli["https-cert"]);
  }

  const mf = new Miniflare(options);
  let disposing = false;
  const shutdown = async (why) => {
    if (disposing) return;
    disposing = true;
    try {
      await mf.dispose();
    } catch (e) {
      process.stderr.write(`miniflare.mjs: dispose after ${why} failed: ${e?.stack ?? e}\n`);
      process.exit(1);
    }
    process.exit(0);
  };
  process.on("SIGTERM", () => shutdown("SIGTERM"));
  process.on("SIGINT", () => shutdown("SIGINT"));
  if (cli["watch-stdin"]) {
    process.stdin.on("end", () => shutdown("stdin EOF"));
    process.stdin.on("error", () => shutdown("stdin error"));
    process.stdin.resume();
  }

  const url = await mf.ready;
  process.stdout.write(`READY ${url.href.replace(/\/+$/, "")}\n`);
}

main().catch((e) => {
  process.stderr.write(`miniflare.mjs: ${e?.stack ?? e}\n`);
  process.exit(1);
});
