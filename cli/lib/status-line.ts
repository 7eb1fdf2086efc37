// What `baton serve` tells the person watching: on a terminal, one line rewritten in place;
// otherwise (pipes, logs, tests) one plain line on stderr per change; with --json, JSON lines.
import type { LeaseView } from "./client-lease.ts";

export type ServeStatus = LeaseView | { kind: "reconnecting"; attempt: number; delayMs: number };

export function ordinal(n: number): string {
  const tens = n % 100;
  if (tens >= 11 && tens <= 13) return `${n}th`;
  return `${n}${({ 1: "st", 2: "nd", 3: "rd" } as Record<number, string>)[n % 10] ?? "th"}`;
}

export function describeStatus(s: ServeStatus): string {
  switch (s.kind) {
    case "connecting":
      return "connecting";
    case "holder":
      return s.legacy ? "holder (coordinator without serve leases)" : `holder (fence ${s.fence})`;
    case "standby":
      return `standby (${ordinal(Math.max(1, s.position))} in line)`;
    case "lapsed":
      return `lease lapsed on the local clock (fence ${s.fence}): demoting`;
    case "reconnecting":
      return `reconnecting (attempt ${s.attempt}, in ${s.delayMs} ms)`;
  }
}

export class StatusReporter {
  private last = "";
  private readonly tty: boolean;

  constructor(
    private readonly prefix: string,
    private readonly out: NodeJS.WritableStream & { isTTY?: boolean } = process.stderr,
    private readonly json = false,
  ) {
    this.tty = !json && out.isTTY === true;
  }

  /** Shows a new status; repeats of the same status are not printed again. */
  status(s: ServeStatus): void {
    const text = describeStatus(s);
    if (text === this.last) return;
    this.last = text;
    if (this.json) return this.writeJson({ event: "status", ...s });
    if (this.tty) this.out.write(`\r\x1b[2K${this.prefix}: ${text}`);
    else this.out.write(`${this.prefix}: ${text}\n`);
  }

  /** A one-off event (a run finished, a reply was rejected); keeps the live line below it. */
  log(message: string, fields: Record<string, unknown> = {}): void {
    if (this.json) return this.writeJson({ event: "log", message, ...fields });
    if (this.tty) this.out.write(`\r\x1b[2K${this.prefix}: ${message}\n${this.prefix}: ${this.last}`);
    else this.out.write(`${this.prefix}: ${message}\n`);
  }

  /** Leaves the terminal on a fresh line. */
  end(): void {
    if (this.tty && this.last) this.out.write("\n");
  }

  private writeJson(obj: Record<string, unknown>): void {
    this.out.write(`${JSON.stringify({ at: new Date().toISOString(), ...obj })}\n`);
  }
}
