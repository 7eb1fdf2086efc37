// A served command that starts a process tree for "long" messages and replies at once to others:
// its own shell, a child shell, and that child's background grandchild all sleep. Each writes its
// pid under $PIDS/<message id>.{sh,sub,bg}, so a test (or the cancel bench) can prove the whole
// tree is gone.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export function treeCommand(dir: string): string {
  const path = join(dir, "tree.sh");
  writeFileSync(path, [
    "#!/bin/sh",
    'text=$(cat)',
    'case "$text" in',
    '  long*)',
    '    base="$PIDS/$BATON_MESSAGE_ID"',
    "    sh -c 'sleep 1000 & echo $! > \"$0.bg\"; echo $$ > \"$0.sub\"; wait' \"$base\" &",
    '    echo $$ > "$base.sh.tmp" && mv "$base.sh.tmp" "$base.sh"',
    "    wait ;;",
    '  *) echo "did: $text" ;;',
    "esac",
    "",
  ].join("\n"), { mode: 0o755 });
  return path;
}

/** The tree's pids once all three have written theirs, else null. */
export function treePids(dir: string, id: number): number[] | null {
  const pids: number[] = [];
  for (const part of ["sh", "sub", "bg"]) {
    try {
      const pid = Number(readFileSync(join(dir, `${id}.${part}`), "utf8").trim());
      if (!Number.isInteger(pid) || pid <= 0) return null;
      pids.push(pid);
    } catch {
      return null;
    }
  }
  return pids;
}

/** A live process; a zombie (exited, not yet reaped by whoever adopted it) counts as gone. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return true;
  }
}

/** Kills whatever of the trees under `dir` still lives (a failed test must not leave sleepers behind). */
export function killLeftovers(dir: string): void {
  for (const name of readdirSync(dir)) {
    if (!/^\d+\.(sh|sub|bg)$/.test(name)) continue;
    const pid = Number(readFileSync(join(dir, name), "utf8").trim());
    if (Number.isInteger(pid) && pid > 0 && alive(pid)) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // gone meanwhile
      }
    }
  }
}
