// The lifeline between a long-running baton process (serve, lease run) and the commands it runs:
// a tiny watchdog (`/bin/sh`, about 1 MB) reads a pipe whose only write end this process holds.
// However this process ends (a graceful exit, kill -9, the OOM killer, a crash of Node) the kernel
// closes that end; the watchdog reads end-of-file and at once SIGKILLs every process group it was
// told about and, where /proc exists (Linux), every process whose environment carries this
// process's lifeline mark (BATON_LIFELINE), which reaches what left the group or the session
// (setsid) too. The watchdog leads a session of its own, so a signal to this process's group or
// terminal does not reach it; if it dies anyway it is started again and told the groups again.
// docs/architecture.md ("Stopping a command") says what each OS mechanism covers and why this one.
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";

/** The environment variable every run's processes inherit: `<lifeline id>.<run number>`. */
export const LIFELINE_ENV = "BATON_LIFELINE";

// $1 is the lifeline id. Lines on stdin: "add T" / "del T", T a pid or a negative process group.
const WATCHDOG = `
trap '' INT HUP QUIT TERM
targets=""
while IFS= read -r line; do
  set -- $line
  case "$1" in
    add) targets="$targets $2" ;;
    del) kept=""; for t in $targets; do [ "$t" = "$2" ] || kept="$kept $t"; done; targets=$kept ;;
  esac
done
for t in $targets; do kill -s KILL -- "$t" 2>/dev/null; done
if [ -d /proc/self ]; then
  for round in 1 2 3 4 5; do
    found=""
    for f in $(grep -lsa "${LIFELINE_ENV}=$ID[.]" /proc/[0-9]*/environ 2>/dev/null); do
      pid=\${f#/proc/}; pid=\${pid%/environ}; found=1; kill -s KILL "$pid" 2>/dev/null
    done
    [ -n "$found" ] || break
  done
fi
`.replace("$ID", '"$0"');

export class Lifeline {
  readonly id = randomUUID();
  private watchdog: ChildProcess | null = null;
  private readonly targets = new Set<number>();
  private runs = 0;
  private closed = false;

  constructor(private readonly log: (message: string) => void = () => {}) {
    this.start();
  }

  /** A fresh mark for one run: its processes carry it in LIFELINE_ENV. */
  mark(): string {
    return `${this.id}.${++this.runs}`;
  }

  /** From now on the watchdog kills `target` (a pid, or -pgid for a group) if this process dies. */
  track(target: number): void {
    this.targets.add(target);
    this.send(`add ${target}`);
  }

  /** `target` is gone: its number may be reused by someone else's process. */
  untrack(target: number): void {
    if (this.targets.delete(target)) this.send(`del ${target}`);
  }

  /** Ends the watchdog (it kills whatever is still tracked or marked). */
  close(): void {
    this.closed = true;
    this.watchdog?.stdin?.end();
  }

  private start(): void {
    const proc = spawn("/bin/sh", ["-c", WATCHDOG, this.id], { stdio: ["pipe", "ignore", "ignore"], detached: true });
    this.watchdog = proc;
    proc.unref();
    (proc.stdin as unknown as { unref?: () => void }).unref?.();
    proc.stdin?.on("error", () => {
      // the watchdog died: its exit restarts it
    });
    proc.once("error", (err) => this.log(`lifeline watchdog could not start: ${err.message}; a command may outlive this process if it is killed`));
    proc.once("exit", () => {
      if (this.closed || this.watchdog !== proc) return;
      this.log("lifeline watchdog exited; starting it again");
      this.start();
      for (const t of this.targets) this.send(`add ${t}`);
    });
  }

  private send(line: string): void {
    const stdin = this.watchdog?.stdin;
    if (stdin && !stdin.destroyed) stdin.write(`${line}\n`);
  }
}
