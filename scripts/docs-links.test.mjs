// Every relative link in README.md, ARCHITECTURE.md and docs/**/*.md resolves: the file (or
// folder) exists, and a `#fragment` names a heading of the target as GitHub slugs it.
// Run by scripts/test:  node --test scripts/docs-links.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

function markdownFiles(dir) {
    return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) return markdownFiles(p);
        return e.name.endsWith(".md") ? [p] : [];
    });
}

// Lines outside fenced code blocks: a `#` in a shell block is not a heading, a `[x](y)` in one
// is not a link.
function prose(text) {
    let fenced = false;
    return text.split("\n").filter((line) => {
        if (/^\s*(```|~~~)/.test(line)) {
            fenced = !fenced;
            return false;
        }
        return !fenced;
    });
}

// GitHub's heading anchors: lower case, punctuation dropped (letters, digits, `-`, `_` and
// spaces kept), spaces to `-`; a repeated slug gets `-1`, `-2`, ….
export function anchors(text) {
    const seen = new Map();
    const out = new Set();
    for (const line of prose(text)) {
        const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
        if (!m) continue;
        const slug = m[1]
            .replace(/<[^>]*>/g, "")
            .toLowerCase()
            .replace(/[^\p{L}\p{N}\p{M} _-]/gu, "")
            .replace(/ /g, "-");
        const n = seen.get(slug) ?? 0;
        seen.set(slug, n + 1);
        out.add(n === 0 ? slug : `${slug}-${n}`);
    }
    return out;
}

export function links(text) {
    const found = [];
    for (const line of prose(text)) {
        // Inline code is not a link either.
        const bare = line.replace(/`[^`]*`/g, "");
        for (const m of bare.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) found.push(m[1]);
    }
    return found.filter((l) => !/^[a-z][a-z0-9+.-]*:/i.test(l));
}

function broken(file) {
    const text = readFileSync(file, "utf8");
    const problems = [];
    for (const link of links(text)) {
        const [target, fragment] = link.split("#", 2);
        const resolved = target === "" ? file : path.resolve(path.dirname(file), decodeURI(target));
        if (!existsSync(resolved)) {
            problems.push(`${link}: no such file`);
            continue;
        }
        if (fragment && statSync(resolved).isFile() && resolved.endsWith(".md")) {
            if (!anchors(readFileSync(resolved, "utf8")).has(decodeURIComponent(fragment))) {
                problems.push(`${link}: no heading #${fragment} in ${path.relative(root, resolved)}`);
            }
        }
    }
    return problems;
}

const files = [
    path.join(root, "README.md"),
    path.join(root, "ARCHITECTURE.md"),
    ...markdownFiles(path.join(root, "docs")),
];

test("every relative link of the docs resolves", () => {
    const problems = files.flatMap((f) => broken(f).map((p) => `${path.relative(root, f)}: ${p}`));
    assert.deepEqual(problems, []);
});

// ARCHITECTURE.md's code map: each section is a crate (its heading's first code span, e.g.
// `crates/core`, whose files are under src/) or the repository ("Elsewhere"); each bullet starts
// with the paths it describes, before " — ".
export function codeMapPaths(text) {
    const lines = prose(text);
    const start = lines.findIndex((l) => /^## Code map/.test(l));
    const paths = [];
    let base = null;
    for (const line of lines.slice(start + 1)) {
        if (/^## /.test(line)) break;
        const heading = /^### (.*)/.exec(line);
        if (heading) {
            const span = /`([^`]+)`/.exec(heading[1]);
            const dir = span ? span[1].replace(/\/$/, "") : "";
            base = dir !== "" && existsSync(path.join(root, dir, "src")) ? path.join(dir, "src") : dir;
            continue;
        }
        if (base === null || !line.startsWith("- `")) continue;
        const head = line.split(" — ")[0];
        for (const m of head.matchAll(/`([^`]+)`/g)) {
            if (/^[\w.-]+(\/[\w.-]*)*$/.test(m[1]) && /\/|\.(rs|md|toml|ya?ml|m?js|capnp)$/.test(m[1])) {
                paths.push(path.join(base, m[1]));
            }
        }
    }
    return paths;
}

test("every path ARCHITECTURE.md's code map names exists", () => {
    const paths = codeMapPaths(readFileSync(path.join(root, "ARCHITECTURE.md"), "utf8"));
    assert.ok(paths.length > 50, `only ${paths.length} paths found: is the code map still bullets?`);
    assert.deepEqual(paths.filter((p) => !existsSync(path.join(root, p))), []);
});

test("the checker itself finds a missing file and a missing heading", () => {
    assert.deepEqual(links("see [a](b.md#c) and `[x](y)`\n```\n[no](z)\n```"), ["b.md#c"]);
    const a = anchors("# One verb or two\n## Self-hosted: the Worker (inside)\n## X\n## X\n```\n# not\n```");
    assert.deepEqual([...a], ["one-verb-or-two", "self-hosted-the-worker-inside", "x", "x-1"]);
    const map = "## Code map\n### `crates/core` — core\n- `a.rs`, `b/` — x `c.rs`\n### Elsewhere\n- `k8s/` (`aco`) — y\n## Invariants\n- `d.rs` — z";
    assert.deepEqual(codeMapPaths(map), ["crates/core/src/a.rs", "crates/core/src/b/", "k8s/"]);
});
