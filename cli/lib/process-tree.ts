// A command's process tree, found again at every look: the processes of its process group (when it
// leads one), the processes carrying its run's lifeline mark in their environment (Linux: read from
// /proc, so what left the group and the session with setsid, and was re-parented to init, is found
// too), the command itself, and every descendant of these by parent links. Elsewhere (macOS: no
// /proc, and `ps` shows no other process's environment) the mark is not readable, and a process
// that left both the group and the parent links of the tree is not found.
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { LIFELINE_ENV } from "./lifeline.ts";

export interface TreeRoot {
  /** The command's pid. */
  pid: number;
  /** True when the command leads its own process group (spawned detached). */
  group: boolean;
  /** Its run's lifeline mark (LIFELINE_ENV), or null. */
  mark: string | null;
}

interface Proc {
  pid: number;
  ppid: number;
  pgid: number;
  marked: boolean;
}

/** True where a process's environment can be read, so marked processes that left the tree are found. */
export const MARKS_READABLE = process.platform === "linux";

/**
 * The live (not zombie) processes of the tree, parents before children where links say so. A full
 * look at every process (tens of ms, more on a loaded machine), read asynchronously so that it
 * never blocks this process's heartbeats.
 */
export async function treeMembers(root: TreeRoot): Promise<number[]> {
  const procs = await snapshot(root.mark);
  // no /proc and no ps: the command alone, by signal 0
  if (procs.length === 0) return exists(root.pid) ? [root.pid] : [];
  const children = new Map<number, number[]>();
  for (const p of procs) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p.pid]);
  const live = new Set(procs.map((p) => p.pid));
  const seeds = procs.filter((p) => p.pid === root.pid || p.marked || (root.group && p.pgid === root.pid)).map((p) => p.pid);
  const tree = [...new Set(seeds)];
  const seen = new Set(tree);
  for (let i = 0; i < tree.length; i++) {
    for (const c of children.get(tree[i]!) ?? []) if (!seen.has(c)) (seen.add(c), tree.push(c));
  }
  return tree.filter((pid) => pid !== process.pid && live.has(pid));
}

/**
 * Sends `signal` to the whole tree, again to every member that appears during the grace, then
 * SIGKILLs every survivor once `graceMs` is over, whatever the command itself did meanwhile.
 * Known members are checked every 25 ms, the whole tree looked for again every 250 ms (a full look
 * costs more). Resolves when no member lives, with the pids that SIGKILL could not end within 2 s
 * (a process stuck in the kernel), normally none.
 */
export async function stopTree(root: TreeRoot, signal: NodeJS.Signals, graceMs: number): Promise<number[]> {
  const signalled = new Set<number>();
  const hit = (members: number[], sig: NodeJS.Signals, all: boolean): void => {
    if (root.group) signalQuietly(-root.pid, sig);
    for (const pid of members) if (all || !signalled.has(pid)) (signalled.add(pid), signalQuietly(pid, sig));
  };
  let living = await treeMembers(root);
  hit(living, signal, true);
  let looked = performance.now();
  const deadline = looked + graceMs;
  while (living.length > 0 && performance.now() < deadline) {
    await pause(Math.min(POLL_MS, Math.max(1, deadline - performance.now())));
    living = living.filter(live);
    if (living.length === 0 || performance.now() - looked >= RESCAN_MS) {
      living = await treeMembers(root);
      looked = performance.now();
      hit(living, signal, false);
    }
  }
  const giveUp = performance.now() + 2000;
  while (living.length > 0 && performance.now() < giveUp) {
    hit(living, "SIGKILL", true);
    await pause(POLL_MS);
    living = living.filter(live);
    if (living.length === 0) living = await treeMembers(root);
  }
  return living;
}

const POLL_MS = 25;
const RESCAN_MS = 250;

function pause(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

function snapshot(mark: string | null): Promise<Proc[]> {
  return MARKS_READABLE ? fromProc(mark) : fromPs();
}

async function fromProc(mark: string | null): Promise<Proc[]> {
  const needle = mark === null ? null : Buffer.from(`${LIFELINE_ENV}=${mark}\0`);
  const names = (await readdir("/proc")).filter((name) => /^\d+$/.test(name));
  const procs = await Promise.all(names.map(async (name): Promise<Proc | null> => {
    try {
      const stat = await readFile(`/proc/${name}/stat`, "latin1");
      // after "pid (comm) ": state ppid pgrp ...; comm may hold spaces and parentheses
      const [state, ppid, pgid] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (state === "Z" || state === "X") return null;
      const marked = needle !== null && (await readFile(`/proc/${name}/environ`)).includes(needle);
      return { pid: Number(name), ppid: Number(ppid), pgid: Number(pgid), marked };
    } catch {
      return null; // gone meanwhile, or not ours to read
    }
  }));
  return procs.filter((p) => p !== null);
}

function fromPs(): Promise<Proc[]> {
  return new Promise((resolve) => execFile("ps", ["-A", "-o", "pid=,ppid=,pgid=,stat="], { encoding: "utf8" }, (err, out) => {
    if (err) return resolve([]);
    resolve(out.split("\n").flatMap((line) => {
      const [pid, ppid, pgid, state] = line.trim().split(/\s+/);
      if (!pid || !ppid || !pgid || state?.startsWith("Z")) return [];
      return [{ pid: Number(pid), ppid: Number(ppid), pgid: Number(pgid), marked: false }];
    }));
  }));
}

/** Alive and not a zombie (a zombie's adopter may not reap it at once). */
function live(pid: number): boolean {
  if (!exists(pid)) return false;
  if (!MARKS_READABLE) return true;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state !== "Z" && state !== "X";
  } catch {
    return false;
  }
}

function exists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function signalQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // gone already
  }
}
