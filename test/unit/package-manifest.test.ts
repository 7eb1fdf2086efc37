// What package.json promises a user, held to what the guides say: every package a guide calls an
// optional peer dependency is one, with a range that takes the version the tests run; and the
// EBADENGINE warnings `npm ci` prints on the Node running the tests (20 in CI) come only from development packages
// (the SDKs the adapters are tested with), never from what `npm i baton-client` installs, and the
// guides name each of them.
import { readFileSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
interface Manifest {
  engines: { node: string };
  devDependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
}
const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as Manifest;
const lock = JSON.parse(readFileSync(join(ROOT, "package-lock.json"), "utf8")) as {
  packages: Record<string, { version?: string; dev?: boolean; optional?: boolean; engines?: { node?: string } }>;
};
const guides = ["README.md", ...readdirSync(join(ROOT, "docs/guides")).map((f) => `docs/guides/${f}`)]
  .map((f) => ({ file: f, text: readFileSync(join(ROOT, f), "utf8") }));

type Version = [number, number, number];
const parse = (v: string): Version => v.split(".").map(Number) as Version;
const cmp = (a: Version, b: Version) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2];

/** npm's meaning of the range forms package.json uses: exact, ^, ~, and >=. */
function satisfies(version: string, range: string): boolean {
  const v = parse(version);
  const m = range.match(/^(\^|~|>=)?(\d+\.\d+\.\d+)$/);
  if (!m) throw new Error(`a range form this test does not know: ${range}`);
  const base = parse(m[2]!);
  if (!m[1]) return cmp(v, base) === 0;
  if (cmp(v, base) < 0) return false;
  if (m[1] === ">=") return true;
  if (m[1] === "~") return v[0] === base[0] && v[1] === base[1];
  return base[0] > 0 ? v[0] === base[0] : v[0] === 0 && v[1] === base[1];
}

/** Whether an engines.node range admits a Node version (the >= and ^ forms, as npm reads them; other forms pass). */
function admits(range: string, node: string): boolean {
  return range.split("||").some((part) => {
    const lower = part.trim().split(/\s+/)[0]!;
    const m = lower.match(/^(>=|\^)?v?(\d+)(?:\.(\d+))?(?:\.(\d+))?$/);
    if (!m) return true;
    const want: Version = [Number(m[2]), Number(m[3] ?? 0), Number(m[4] ?? 0)];
    return cmp(parse(node), want) >= 0 && (m[1] !== "^" || parse(node)[0] === want[0]);
  });
}

describe("package.json", () => {
  it("lists every package a guide calls an optional peer dependency as one, with a range the tested version satisfies", () => {
    const named = guides.flatMap(({ text }) => [...text.matchAll(/`(@?[\w./-]+)`[^.`]*?an optional peer dependency/g)].map((m) => m[1]!));
    expect(named).toEqual(expect.arrayContaining(["@opentelemetry/api", "@openai/agents", "@langchain/langgraph-checkpoint"]));
    for (const name of new Set(named)) {
      expect(pkg.peerDependencies[name], `${name} is a peer dependency`).toBeDefined();
      expect(pkg.peerDependenciesMeta[name]?.optional, `${name} is optional`).toBe(true);
      expect(satisfies(pkg.devDependencies[name]!, pkg.peerDependencies[name]!), `${name} ${pkg.devDependencies[name]} (tested) is within ${pkg.peerDependencies[name]}`).toBe(true);
    }
  });

  it("npm ci's EBADENGINE warnings on the Node running the tests come only from development packages, each named in the guides", () => {
    const oldest = process.versions.node;
    const refused = Object.entries(lock.packages)
      .filter(([path, p]) => path !== "" && p.engines?.node && !admits(p.engines.node, oldest))
      .map(([path, p]) => ({ name: path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length), dev: p.dev === true, node: p.engines!.node! }));
    expect(refused.filter((p) => !p.dev), "a package `npm i baton-client` installs refuses that Node").toEqual([]);
    for (const { name, node } of refused) {
      expect(guides.some(({ text }) => text.includes(`EBADENGINE`) && text.includes(`\`${name}\``)), `${name} (node ${node}) is named where the guides explain EBADENGINE`).toBe(true);
    }
  });
});
