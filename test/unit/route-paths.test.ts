// The clients (client/, cli/) build every coordinator path from the route table with routePath(),
// never by hand, and ask each path only with a method the table gives it: a renamed route or a
// wrong method fails here instead of as a 404 from a live coordinator.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROUTES, routeParts, type RouteKey } from "../../worker/wire/routes.ts";

const ROOT = join(import.meta.dirname, "../..");
const SOURCES = ["client", "cli/lib", "cli/commands", "cli"].flatMap((dir) =>
  readdirSync(join(ROOT, dir)).filter((f) => f.endsWith(".ts")).map((f) => `${dir}/${f}`));
const code = (file: string) => readFileSync(join(ROOT, file), "utf8").replace(/^\s*(\/\/|\*|\/\*).*$/gm, "");

const TOP = ["agents", "leases", "webhook", "whoami", "metrics", "observe"].join("|");
const KNOWN = new Set((Object.keys(ROUTES) as RouteKey[]).map((key) => `${routeParts(key).method} ${routeParts(key).path}`));

describe("client paths", () => {
  it("no client or CLI source writes a coordinator path by hand", () => {
    const handWritten = SOURCES.flatMap((file) => {
      const text = code(file);
      return [...text.matchAll(new RegExp(`["\`]/(?:${TOP})(?:[/?"\`]|\\$)`, "g"))]
        .filter((m) => !text.slice(0, m.index).endsWith("routePath("))
        .map((m) => `${file}: ${text.slice(m.index, m.index + 40)}`);
    });
    expect(handWritten).toEqual([]);
  });

  it("every request made through routePath uses a method its path takes", () => {
    const calls = SOURCES.flatMap((file) =>
      [...code(file).matchAll(/"(GET|PUT|POST|DELETE)",\s*`?\$?\{?routePath\(["`]([^"`]+)["`]/g)].map((m) => ({ file, method: m[1]!, path: m[2]! })));
    expect(calls.length).toBeGreaterThan(20);
    for (const { file, method, path } of calls) {
      const expanded = path.includes("${") ? [...KNOWN].filter((k) => new RegExp(`^${method} ${path.replace(/\$\{\w+\}/g, "[a-z]+").replace(/[{}]/g, "\\$&")}$`).test(k)) : [`${method} ${path}`];
      expect(expanded.length, `${file}: ${method} ${path}`).toBeGreaterThan(0);
      for (const key of expanded) expect(KNOWN.has(key), `${file}: ${key}`).toBe(true);
    }
  });
});
