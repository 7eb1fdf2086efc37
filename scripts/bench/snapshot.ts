// A frozen copy of the committed tree for benchmark and chaos runs. `wrangler dev` reloads the
// Worker whenever a watched file changes, which drops every WebSocket; in a working tree that
// others edit, that would break measurements. The copy shares node_modules through a symlink.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export const REPO_ROOT = resolve(import.meta.dirname, "../..");

export interface Tree {
  root: string;
  /** The commit the copy was made from, or "working tree". */
  revision: string;
  dispose(): void;
}

/** The working tree itself, as it is on disk. */
export function workingTree(): Tree {
  return { root: REPO_ROOT, revision: "working tree", dispose: () => {} };
}

/** Extracts HEAD into a temporary directory; dispose() removes it. */
export function snapshotOfHead(): Tree {
  const root = mkdtempSync(join(tmpdir(), "baton-snapshot-"));
  const revision = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: REPO_ROOT, encoding: "utf8" }).trim();
  execFileSync("sh", ["-c", `git archive HEAD | tar -x -C "${root}"`], { cwd: REPO_ROOT });
  symlinkSync(join(REPO_ROOT, "node_modules"), join(root, "node_modules"));
  return { root, revision, dispose: () => rmSync(root, { recursive: true, force: true }) };
}

type WranglerDevModule = typeof import("../../test/e2e/wrangler-dev.ts");

/** The e2e harness of the given tree, so wrangler dev runs that tree's Worker. */
export async function wranglerDevOf(tree: Tree): Promise<WranglerDevModule> {
  return (await import(join(tree.root, "test/e2e/wrangler-dev.ts"))) as WranglerDevModule;
}
