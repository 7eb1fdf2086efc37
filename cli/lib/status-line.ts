// What `baton serve` tells the person watching: on a terminal, one line rewritten in place;
// otherwise (pipes, logs, journald) one plain line on stderr per change; with --json, JSON lines.
// A coordinator that stays unreachable is reported on the first failure, whenever the reason
// changes, and then at most every REPEAT_MS, so logs say why without filling up.
import { Writable } from "node:stream";
import type { ServeEvent, ServeStatus } from "../../client/index.ts";
import { printable } from "./printable.ts";
import { tokenLabel } from "./token-label.ts";

export const REPEAT_MS = 30_000;

function ordinal(n: number): string {
  const tens = n % 100;
  if (tens >= 11 && tens <= 13) return `${n}th`;
  return `${n}${({ 1: "st", 2: "nd", 3: "rd" } as Record<number, string>)[n % 10] ?? "th"}`;
}

function describeStatus(s: ServeStatus, url: string): string {
  switch (s.kind) {
    case "connecting":
      return `connecting to ${url}`;
    case "holder":
      return `holder (fence ${s.fence})`;
    case "standby":
      // -1: out of line, as right after a release (Ctrl-C) or a drain; never "1st in line" then.
      return s.position < 1 ? "out of line (released or drained)" : `standby (${ordinal(s.position)} in line)`;
    case "lapsed":
      return `lease lapsed on the local clock (fence ${s.fence}): demoting`;
    case "reconnecting":
      return `reconnecting in ${(s.delayMs / 1000).toFixed(1)} s (attempt ${s.attempt}): ${s.reason}`;
  }
}

export function describeEvent(e: ServeEvent): string {
  switch (e.type) {
    case "ran":
      return e.token === null
        ? `ran message ${e.id} (attempt ${e.attempt}, fence ${e.fence})`
        : `ran message ${e.id} (attempt ${e.attempt}, token ${e.token})`;
    case "parked":
      return `parked message ${e.id} (token ${e.token}): it waits for a person`;
    case "revoked":
      return `message ${e.id} (token ${e.token}) was taken back (${e.reason}): its run is stopped`;
    case "cancelled":
      return `message ${e.id} (token ${e.token}) was cancelled by ${tokenLabel(e.by)}${e.reason ? ` (${e.reason})` : ""}: its run is stopped`;
    case "handler_failed":
      return `message ${e.id} failed: ${e.error instanceof Error ? e.error.message : String(e.error)}`;
    case "refused":
      return `${e.frame} refused by the coordinator (${e.code}): ${e.message}`;
    case "unconfirmed":
      return `${e.frame} not confirmed: ${e.reason}`;
    case "coordinator_error":
      return `coordinator error (${e.code}): ${e.message}`;
    case "released":
      return "released the lease";
  }
}

export class StatusReporter {
  private last = "";
  private lastReason = "";
  private lastReconnectPrint = -Infinity;
  private readonly tty: boolean;

  constructor(
    private readonly prefix: string,
    private readonly url: string,
    private readonly out: NodeJS.WritableStream & { isTTY?: boolean } = process.stderr,
    private readonly json = false,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.tty = !json && out.isTTY === true;
  }

  /** Shows a new status; repeats are not printed again, and retries only at a sane rate. */
  status(s: ServeStatus): void {
    const text = printable(describeStatus(s, this.url));
    if (text === this.last) return;
    if (s.kind === "reconnecting" && !this.tty) {
      const t = this.now();
      if (s.reason === this.lastReason && t - this.lastReconnectPrint < REPEAT_MS) return;
      this.lastReason = s.reason;
      this.lastReconnectPrint = t;
    } else if (s.kind !== "reconnecting") {
      this.lastReason = "";
    }
    this.last = text;
    if (this.json) return this.writeJson({ event: "status", ...s });
    if (this.tty) this.out.write(`\r\x1b[2K${this.prefix}: ${text}`);
    else this.out.write(`${this.prefix}: ${text}\n`);
  }

  event(e: ServeEvent): void {
    this.log(describeEvent(e), e.type === "handler_failed" ? { type: e.type, id: e.id } : { ...e });
  }

  /** A one-off line (a run finished, a reply was refused); keeps the live line below it. */
  log(said: string, fields: Record<string, unknown> = {}): void {
    if (this.json) return this.writeJson({ event: "log", message: said, ...fields });
    const message = printable(said);
    if (this.tty) this.out.write(`\r\x1b[2K${this.prefix}: ${message}\n${this.prefix}: ${this.last}`);
    else this.out.write(`${this.prefix}: ${message}\n`);
  }

  /**
   * Where the served command's stderr goes: whole lines above the live line on a terminal (so
   * nothing is glued to it), passed through unchanged elsewhere.
   */
  commandStderr(): NodeJS.WritableStream {
    let partial = "";
    return new Writable({
      write: (chunk: Buffer | string, _encoding, done) => {
        const text = partial + chunk.toString();
        if (!this.tty) {
          partial = "";
          this.out.write(text);
          return done();
        }
        const cut = text.lastIndexOf("\n") + 1;
        partial = text.slice(cut);
        if (cut > 0) this.out.write(`\r\x1b[2K${text.slice(0, cut)}${this.last ? `${this.prefix}: ${this.last}` : ""}`);
        done();
      },
      final: (done) => {
        if (partial) this.out.write(this.tty ? `\r\x1b[2K${partial}\n${this.last ? `${this.prefix}: ${this.last}` : ""}` : partial);
        partial = "";
        done();
      },
    });
  }

  /** Leaves the terminal on a fresh line: the live line is cleared, so the last thing said (released the lease) stays last. */
  end(): void {
    if (this.tty && this.last) this.out.write("\r\x1b[2K");
  }

  private writeJson(obj: Record<string, unknown>): void {
    this.out.write(`${JSON.stringify({ at: new Date().toISOString(), ...obj })}\n`);
  }
}
