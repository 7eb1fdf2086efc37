// One `baton serve` per agent per machine: a lock file holding the owner's pid. A file whose pid
// is no longer alive (a crashed serve) is taken over; a live one refuses the newcomer.
import { createHash } from "node:crypto";
import { linkSync, mkdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export type LockResult = { ok: true; path: string; release: () => void } | { ok: false; path: string; ownerPid: number };

/** Directory for lock files: BATON_LOCK_DIR, else $XDG_RUNTIME_DIR/baton, else the temp dir. */
export function lockDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.BATON_LOCK_DIR) return env.BATON_LOCK_DIR;
  if (env.XDG_RUNTIME_DIR) return join(env.XDG_RUNTIME_DIR, "baton");
  const uid = typeof process.getuid === "function" ? process.getuid() : "user";
  return join(tmpdir(), `baton-${uid}`);
}

/** Lock file name for an agent on one coordinator (the URL is hashed in, not spelled out). */
/** One serve per agent, coordinator and machine label: a second label on one host is a second machine (try failover on a laptop). */
export function lockName(agent: string, url: string, machine = ""): string {
  const hash = createHash("sha256").update(machine === "" ? url : `${url}\n${machine}`).digest("hex").slice(0, 10);
  return `serve-${agent}-${hash}.lock`;
}

export function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

function readPid(path: string): number {
  try {
    return Number.parseInt(readFileSync(path, "utf8").trim(), 10);
  } catch {
    return Number.NaN;
  }
}

/**
 * Takes the lock at `dir/name` for `pid`. Creation is atomic (hard link of a private file), so two
 * starters never both win; a stale file is moved aside before retrying, and if what was moved
 * turns out to be alive (someone took it over meanwhile) it is put back and we refuse.
 */
export function acquireLock(dir: string, name: string, pid: number = process.pid): LockResult {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, name);
  const mine = join(dir, `.${name}.${pid}`);
  writeFileSync(mine, `${pid}\n`, { mode: 0o600 });
  try {
    for (let tries = 0; tries < 5; tries += 1) {
      try {
        linkSync(mine, path);
        return { ok: true, path, release: () => releaseLock(path, pid) };
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      }
      const owner = readPid(path);
      if (pidAlive(owner) && owner !== pid) return { ok: false, path, ownerPid: owner };
      const aside = join(dir, `.${name}.stale.${pid}`);
      try {
        renameSync(path, aside);
      } catch {
        continue;
      }
      const moved = readPid(aside);
      if (pidAlive(moved) && moved !== pid) {
        try {
          linkSync(aside, path);
        } catch {
          // a third starter got in; it holds the lock now
        }
        unlinkSync(aside);
        return { ok: false, path, ownerPid: moved };
      }
      unlinkSync(aside);
    }
    return { ok: false, path, ownerPid: readPid(path) };
  } finally {
    unlinkSync(mine);
  }
}

/** Removes the lock only if it still names `pid`. */
export function releaseLock(path: string, pid: number = process.pid): void {
  if (readPid(path) !== pid) return;
  try {
    unlinkSync(path);
  } catch {
    // already gone
  }
}
