// The chaos run's `baton serve` processes: one slot per simulated machine, each with its own lock,
// state and config directories and machine label, so the same-machine lock does not refuse them.
// A slot can be killed, paused, resumed and started again; each start is a new instance id. The
// served command is effect.mjs reporting to the sink, unless the options name another.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { closeSync, mkdirSync, openSync } from "node:fs";
import { join } from "node:path";

export interface FleetOptions {
  treeRoot: string;
  workDir: string;
  url: string;
  token: string;
  agent: string;
  sinkUrl?: string;
  /** Each run works for a random time up to this before its effect, so pauses can land mid-run. */
  workMs?: number;
  /** Pool mode: every runner takes messages, `concurrency` at a time, fenced by message tokens. */
  pool?: { concurrency: number; stallMs: number };
  /** The served command and arguments (default: node scripts/chaos/effect.mjs) and more environment for it. */
  command?: readonly string[];
  env?: Record<string, string>;
}

export class ServeSlot {
  private proc: ChildProcess | null = null;
  private exited: Promise<unknown> = Promise.resolve();
  private generation = 0;
  state: "stopped" | "running" | "paused" = "stopped";
  busy = false;
  private paused: number[] = [];
  readonly machine: string;
  readonly logPath: string;

  constructor(readonly slot: number, private readonly opts: FleetOptions) {
    this.machine = `chaos-m${slot}`;
    this.logPath = join(opts.workDir, `serve-${slot}.log`);
  }

  get instance(): string {
    return `${this.machine}#${this.generation}`;
  }

  start(): void {
    if (this.state !== "stopped") throw new Error(`slot ${this.slot} is ${this.state}`);
    this.generation += 1;
    const dir = (name: string) => {
      const path = join(this.opts.workDir, `${name}-${this.slot}`);
      mkdirSync(path, { recursive: true });
      return path;
    };
    const log = openSync(this.logPath, "a");
    const { treeRoot, url, token, agent, sinkUrl } = this.opts;
    this.proc = spawn(process.execPath, [
      join(treeRoot, "dist/cli/main.js"), "serve", agent, "--url", url, "--machine", this.machine, "--grace", "1", "--json",
      ...(this.opts.pool ? ["--concurrency", String(this.opts.pool.concurrency)] : []),
      "--", ...(this.opts.command ?? [process.execPath, join(treeRoot, "scripts/chaos/effect.mjs")]),
    ], {
      cwd: treeRoot,
      stdio: ["ignore", log, log],
      env: {
        ...process.env,
        BATON_TOKEN: token,
        BATON_LOCK_DIR: dir("lock"),
        BATON_STATE_DIR: dir("state"),
        XDG_CONFIG_HOME: dir("config"),
        XDG_STATE_HOME: dir("xdg-state"),
        XDG_RUNTIME_DIR: dir("runtime"),
        CHAOS_SINK_URL: sinkUrl ?? "",
        CHAOS_INSTANCE: this.instance,
        CHAOS_WORK_MS: String(this.opts.workMs ?? 0),
        CHAOS_POOL: this.opts.pool ? "1" : "0",
        CHAOS_STALL_MS: String(this.opts.pool?.stallMs ?? 0),
        ...this.opts.env,
      },
    });
    closeSync(log);
    const proc = this.proc;
    this.exited = new Promise((resolve) => proc.once("exit", resolve));
    void this.exited.then(() => {
      if (this.proc === proc) (this.proc = null), (this.state = "stopped");
    });
    this.state = "running";
  }

  /** SIGKILL: the process gets no chance to release; a run it started keeps going as an orphan. */
  async kill(): Promise<void> {
    if (!this.proc) return;
    this.proc.kill("SIGKILL");
    await this.exited;
  }

  /**
   * The whole machine dies: the serve process is frozen (so it starts nothing more), then it and
   * every command it runs (each leads its own process group) get SIGKILL; nothing is left running.
   */
  async killMachine(): Promise<void> {
    if (!this.proc) return;
    const pid = this.proc.pid!;
    signalAll([pid], "SIGSTOP");
    const groups = commandGroups(pid);
    this.proc.kill("SIGKILL");
    signalAll(groups.map((g) => -g), "SIGKILL");
    this.paused = [];
    await this.exited;
  }

  /** Freezes the serve process and the run it started, as a machine that stops (laptop lid, VM pause). */
  pause(): void {
    if (!this.proc || this.state !== "running") return;
    this.paused = [this.proc.pid!, ...descendants(this.proc.pid!)];
    signalAll(this.paused, "SIGSTOP");
    this.state = "paused";
  }

  resume(): void {
    if (!this.proc || this.state !== "paused") return;
    signalAll([...this.paused].reverse(), "SIGCONT");
    this.paused = [];
    this.state = "running";
  }

  /** Graceful stop (SIGTERM: the serve releases the lease), SIGKILL after `graceMs`. */
  async stop(graceMs = 5000): Promise<void> {
    if (!this.proc) return;
    this.resume();
    this.proc.kill("SIGTERM");
    const timer = setTimeout(() => this.proc?.kill("SIGKILL"), graceMs);
    await this.exited;
    clearTimeout(timer);
  }
}

function descendants(pid: number): number[] {
  let out = "";
  try {
    out = execFileSync("ps", ["-o", "pid=", "--ppid", String(pid)], { encoding: "utf8" });
  } catch {
    return []; // ps exits 1 when there are no children
  }
  const children = out.split("\n").map((l) => Number(l.trim())).filter((n) => n > 0);
  return children.flatMap((c) => [c, ...descendants(c)]);
}

/** The children of `pid` that lead their own process group: the commands a serve process runs. */
function commandGroups(pid: number): number[] {
  let out = "";
  try {
    out = execFileSync("ps", ["-o", "pid=,pgid=", "--ppid", String(pid)], { encoding: "utf8" });
  } catch {
    return [];
  }
  return out.split("\n").map((l) => l.trim().split(/\s+/).map(Number)).filter(([p, g]) => p! > 0 && p === g).map(([p]) => p!);
}

function signalAll(pids: number[], signal: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}
