// A frozen copy of the committed tree for benchmark and chaos runs. `wrangler dev` reloads the
// Worker whenever a watched file changes, which drops every WebSocket; in a working tree that
// others edit, that would break measurements. The copy shares node_modules through a symlink.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export const REPO_ROOT = resolve(import.meta.dirname, "../..");

export interface Tree {
  root: string;
  /** The commit the copy was made from, or "working tree". */
  revision: string;
  dispose(): void;
}

/** The working tree itself, as it is on disk (with the CLI built, since serve processes run dist/). */
export function workingTree(): Tree {
  build(REPO_ROOT);
  return { root: REPO_ROOT, revision: "working tree", dispose: () => {} };
}

/** Builds the CLI of a tree that has a build step (older commits ran TypeScript directly). */
function build(root: string): void {
  if (existsSync(join(root, "scripts/build.mjs"))) execFileSync(process.execPath, ["scripts/build.mjs"], { cwd: root, stdio: "inherit" });
}

/** Extracts HEAD (or another commit) into a temporary directory; dispose() removes it. */
export function snapshotOfHead(commit = "HEAD"): Tree {
  const root = mkdtempSync(join(tmpdir(), "baton-snapshot-"));
  const revision = execFileSync("git", ["rev-parse", "--short", commit], { cwd: REPO_ROOT, encoding: "utf8" }).trim();
  execFileSync("sh", ["-c", `git archive ${revision} | tar -x -C "${root}"`], { cwd: REPO_ROOT });
  symlinkSync(join(REPO_ROOT, "node_modules"), join(root, "node_modules"));
  build(root);
  return { root, revision, dispose: () => rmSync(root, { recursive: true, force: true }) };
}

type WranglerDevModule = typeof import("../../test/e2e/wrangler-dev.ts");

/** The e2e harness of the given tree, so wrangler dev runs that tree's Worker. */
export async function wranglerDevOf(tree: Tree): Promise<WranglerDevModule> {
  return (await import(join(tree.root, "test/e2e/wrangler-dev.ts"))) as WranglerDevModule;
}
