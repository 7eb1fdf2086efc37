// The per-machine lock of `baton serve`: a live owner refuses newcomers, a dead one is taken over.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { acquireLock, lockName, pidAlive, releaseLock } from "../../cli/lib/local-lock.ts";

/** A pid that surely belongs to no live process: a child that has already exited and been reaped. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" });
  const pid = Number(r.stdout);
  expect(pidAlive(pid)).toBe(false);
  return pid;
}

describe("local serve lock", () => {
  it("the first serve takes the lock, a second one is refused while the first lives", () => {
    const dir = mkdtempSync(join(tmpdir(), "baton-lock-"));
    const name = lockName("agent-a", "http://127.0.0.1:8787");
    const first = acquireLock(dir, name, process.pid);
    expect(first.ok).toBe(true);
    expect(readFileSync(join(dir, name), "utf8").trim()).toBe(String(process.pid));
    const second = acquireLock(dir, name, process.pid + 100_000);
    expect(second).toEqual({ ok: false, path: join(dir, name), ownerPid: process.pid });
    expect(readdirSync(dir)).toEqual([name]);
  });

  it("a lock left by a crashed serve (dead pid) is taken over", () => {
    const dir = mkdtempSync(join(tmpdir(), "baton-lock-"));
    const name = lockName("agent-b", "http://127.0.0.1:8787");
    writeFileSync(join(dir, name), `${deadPid()}\n`);
    const taken = acquireLock(dir, name, process.pid);
    expect(taken.ok).toBe(true);
    expect(readFileSync(join(dir, name), "utf8").trim()).toBe(String(process.pid));
    expect(readdirSync(dir)).toEqual([name]);
  });

  it("release removes only the caller's own lock", () => {
    const dir = mkdtempSync(join(tmpdir(), "baton-lock-"));
    const name = lockName("agent-c", "http://127.0.0.1:8787");
    const lock = acquireLock(dir, name, process.pid);
    releaseLock(join(dir, name), process.pid + 100_000);
    expect(existsSync(join(dir, name))).toBe(true);
    if (lock.ok) lock.release();
    expect(existsSync(join(dir, name))).toBe(false);
  });

  it("different agents and different coordinators do not share a lock", () => {
    expect(lockName("a", "http://127.0.0.1:8787")).not.toBe(lockName("b", "http://127.0.0.1:8787"));
    expect(lockName("a", "http://127.0.0.1:8787")).not.toBe(lockName("a", "https://baton.example.com"));
    expect(lockName("a", "http://127.0.0.1:8787", "laptop")).not.toBe(lockName("a", "http://127.0.0.1:8787", "laptop-2"));
    expect(lockName("a", "http://127.0.0.1:8787", "laptop")).toBe(lockName("a", "http://127.0.0.1:8787", "laptop"));
  });
});
