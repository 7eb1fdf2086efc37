// docs/architecture.md agrees with the code, file by file: every source file of the Worker, the
// client library and the CLI is named in it (by its shortest path suffix no other such file shares:
// `message-store.ts`, but `rules/lease-data.ts`), and every source file it names exists.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "../..");
const DOC = readFileSync(join(ROOT, "docs/architecture.md"), "utf8");
const SOURCE = /\.(ts|mts|html|css)$/;

function filesUnder(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory()) return e.name === "node_modules" ? [] : filesUnder(path);
    return SOURCE.test(e.name) && !e.name.endsWith(".d.ts") ? [path] : [];
  });
}

const FILES = ["worker", "client", "cli"].flatMap(filesUnder);

/** The shortest tail of `path` (whole segments) that no other listed file ends with. */
function shortestName(path: string): string {
  const parts = path.split("/");
  for (let n = 1; n <= parts.length; n++) {
    const tail = parts.slice(-n).join("/");
    if (FILES.filter((f) => f === tail || f.endsWith(`/${tail}`)).length === 1) return tail;
  }
  return path;
}

/** Whether the doc names `tail` as a whole path (not inside a longer name). */
function named(tail: string): boolean {
  const escaped = tail.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`(^|[^\\w./-])(?:[\\w.-]+/)*${escaped}(?![\\w/-])`).test(DOC);
}

describe("docs/architecture.md names the code as it is", () => {
  it("names every source file in worker/, client/ and cli/", () => {
    expect(FILES.length).toBeGreaterThan(100);
    expect(FILES.filter((f) => !named(shortestName(f))).map(shortestName)).toEqual([]);
  });

  it("names no source file that does not exist", () => {
    const mentioned = new Set([...DOC.matchAll(/(?<![\w./-])((?:[\w.-]+\/)*[\w.-]+\.(?:ts|mts))(?![\w/-])/g)].map((m) => m[1]!));
    const all = [...FILES, ...["scripts", "test"].flatMap(filesUnder)];
    const stale = [...mentioned].filter((name) => !existsSync(join(ROOT, name)) && !all.some((f) => f === name || f.endsWith(`/${name}`)));
    expect(stale.map((s) => relative(".", s))).toEqual([]);
  });
});
