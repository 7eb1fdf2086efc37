// What this machine has seen of an agent's messages, holder or standby: one JSON line per
// message under $BATON_STATE_DIR (default $XDG_STATE_HOME/baton or ~/.local/state/baton), and
// the cursor (highest id seen) that a reconnect sends in its `sync` frame.
import { createHash } from "node:crypto";
import { appendFileSync, mkdirSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import type { AgentMessage } from "../../client/index.ts";

export function stateDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.BATON_STATE_DIR) return env.BATON_STATE_DIR;
  return join(env.XDG_STATE_HOME || join(homedir(), ".local", "state"), "baton");
}

export class MessageJournal {
  private cursorValue = 0;
  private readonly seen = new Set<number>();
  readonly path: string;

  /** Opens (and reads the cursor of) the journal of `agent` on the coordinator at `url`, one per machine label (as the serve lock). */
  constructor(dir: string, agent: string, url: string, machine = "") {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const hash = createHash("sha256").update(machine === "" ? url : `${url}\n${machine}`).digest("hex").slice(0, 10);
    this.path = join(dir, `${agent}-${hash}.messages.jsonl`);
    let text = "";
    try {
      text = readFileSync(this.path, "utf8");
    } catch {
      return;
    }
    for (const line of text.split("\n")) {
      try {
        const id = (JSON.parse(line) as { id?: unknown }).id;
        if (typeof id !== "number") continue;
        this.seen.add(id);
        this.cursorValue = Math.max(this.cursorValue, id);
      } catch {
        // a torn last line from a crash: skip it
      }
    }
  }

  get cursor(): number {
    return this.cursorValue;
  }

  /** Records a message the first time it is seen; returns false for one already recorded. */
  record(message: AgentMessage): boolean {
    if (this.seen.has(message.id)) return false;
    appendFileSync(this.path, `${JSON.stringify({ id: message.id, text: message.text, created_at: message.createdAt })}\n`);
    this.seen.add(message.id);
    this.cursorValue = Math.max(this.cursorValue, message.id);
    return true;
  }
}
