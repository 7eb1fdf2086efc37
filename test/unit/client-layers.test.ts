// The client's layers as docs/architecture.md states them, read from the source: client/ and cli/
// reach into worker/ only through worker/wire (never its rules or objects); client/core does no I/O
// (at run time it imports only itself, the wire and the pure client modules it shares with its
// shells: the socket, HTTP and the system clock come in as adapters); and client/core/clock.ts is
// the one place the client library reads the time. The Python side is held to the same by
// test/python/test_serve_core.py.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
/** Pure client modules the core may import at run time (no socket, HTTP, timers or clock). */
const PURE_CLIENT = new Set(["client/errors.ts", "client/lease-clock.ts", "client/serve-lease.ts"]);
const CORE_PACKAGES = new Set(["zod/mini"]);

interface Import {
  file: string;
  target: string;
  typeOnly: boolean;
}

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith(".ts"))
    .map((e) => relative(ROOT, join(e.parentPath, e.name)));
}

const STATIC = /(?:^|\n)\s*(?:import|export)\s+(type\s+)?([^;"']*?)\s*from\s*["']([^"']+)["']/g;
const BARE = /(?:^|\n)\s*import\s*["']([^"']+)["']/g;
const DYNAMIC = /\bimport\(\s*["']([^"']+)["']\s*\)/g;

/** Every import and re-export of `file`, resolved against the repository when relative. */
function importsOf(file: string): Import[] {
  const text = readFileSync(join(ROOT, file), "utf8");
  const at = (spec: string): string => (spec.startsWith(".") ? relative(ROOT, resolve(ROOT, dirname(file), spec)) : spec);
  const found: Import[] = [];
  for (const m of text.matchAll(STATIC)) {
    const names = m[2] ?? "";
    const allTypes = /^\{[^}]*\}$/.test(names.trim()) && names.replace(/[{}]/g, "").split(",").map((n) => n.trim()).filter(Boolean).every((n) => n.startsWith("type "));
    found.push({ file, target: at(m[3]!), typeOnly: m[1] !== undefined || allTypes });
  }
  for (const m of [...text.matchAll(BARE), ...text.matchAll(DYNAMIC)]) found.push({ file, target: at(m[1]!), typeOnly: false });
  return found;
}

describe("the client's layers", () => {
  const client = sources("client");
  const cli = sources("cli");

  it("finds the imports it checks", () => {
    const core = importsOf("client/core/serve-core.ts");
    expect(core).toContainEqual({ file: "client/core/serve-core.ts", target: "worker/wire/server-frames.ts", typeOnly: true });
    expect(core).toContainEqual({ file: "client/core/serve-core.ts", target: "client/core/work-loop.ts", typeOnly: false });
    expect(client.length + cli.length).toBeGreaterThan(60);
  });

  it("client/ and cli/ reach into worker/ only through worker/wire", () => {
    const outside = [...client, ...cli].flatMap(importsOf).filter((i) => i.target.startsWith("worker/") && !i.target.startsWith("worker/wire/"));
    expect(outside).toEqual([]);
  });

  it("client/core imports at run time nothing that does I/O: the socket, HTTP and the clock are adapters", () => {
    const allowed = (target: string): boolean =>
      target.startsWith("client/core/") || target.startsWith("worker/wire/") || PURE_CLIENT.has(target) || CORE_PACKAGES.has(target);
    const io = sources("client/core").flatMap(importsOf).filter((i) => !i.typeOnly && !allowed(i.target));
    expect(io).toEqual([]);
  });

  it("client/core/clock.ts is the one place the client library reads the time", () => {
    const reads = client.filter((f) => f !== "client/core/clock.ts")
      .flatMap((f) => readFileSync(join(ROOT, f), "utf8").split("\n").map((line, i) => ({ at: `${f}:${i + 1}`, line })))
      .filter(({ line }) => /\bDate\.now\b|\bperformance\.now\b|new Date\(\s*\)/.test(line))
      .map(({ at }) => at);
    expect(reads).toEqual([]);
  });
});
