// A process and everything it started, found by parent links (`ps`), for stopping a command that
// must stay in the terminal's process group (so it keeps its terminal) together with its children.
import { execFileSync } from "node:child_process";

/** `root` and its descendants, parents before children; just `root` where `ps` is missing. */
export function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  try {
    for (const line of execFileSync("ps", ["-e", "-o", "pid=,ppid="], { encoding: "utf8" }).split("\n")) {
      const [pid, ppid] = line.trim().split(/\s+/).map(Number);
      if (pid && ppid !== undefined) children.set(ppid, [...(children.get(ppid) ?? []), pid]);
    }
  } catch {
    // no ps: the root alone
  }
  const tree = [root];
  for (let i = 0; i < tree.length; i++) tree.push(...(children.get(tree[i]!) ?? []));
  return tree;
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Signals every process of the tree under `root` (found before any dies and is re-parented), then SIGKILLs what is left after the grace. */
export async function stopTree(root: number, signal: NodeJS.Signals, graceMs: number): Promise<void> {
  const known = new Set(descendants(root));
  for (const pid of known) signalQuietly(pid, signal);
  const deadline = performance.now() + graceMs;
  const living = () => [...known].filter(alive);
  while (living().length > 0 && performance.now() < deadline) {
    for (const pid of descendants(root)) if (!known.has(pid)) (known.add(pid), signalQuietly(pid, signal));
    await new Promise((r) => setTimeout(r, 25));
  }
  for (const pid of living()) signalQuietly(pid, "SIGKILL");
}

function signalQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // gone already
  }
}
