// The chaos run's side-effect sink: a resource that fences its writers. It accepts an effect only
// when its fence is at least the highest fence it has accepted, and keeps a log from which the
// run's invariants are checked.
import { createServer, type Server } from "node:http";

export interface Effect {
  message_id: number;
  fence: number;
  /** Which serve process ran it: machine label plus a per-start instance id. */
  instance: string;
  attempt: number;
}

export type Verdict = { accepted: true } | { accepted: false; reason: "stale_fence"; highest: number };

export interface LoggedEffect extends Effect {
  accepted: boolean;
  /** Highest accepted fence just before this effect arrived. */
  highestBefore: number;
  at: number;
}

export class FenceSink {
  private highest = -1;
  readonly log: LoggedEffect[] = [];

  offer(effect: Effect, at = Date.now()): Verdict {
    const highestBefore = this.highest;
    const accepted = effect.fence >= this.highest;
    if (accepted) this.highest = effect.fence;
    this.log.push({ ...effect, accepted, highestBefore, at });
    return accepted ? { accepted: true } : { accepted: false, reason: "stale_fence", highest: highestBefore };
  }

  get accepted(): LoggedEffect[] {
    return this.log.filter((e) => e.accepted);
  }

  get rejected(): LoggedEffect[] {
    return this.log.filter((e) => !e.accepted);
  }
}

/** Validates a posted effect; null when a field is missing or of the wrong type. */
export function parseEffect(data: unknown): Effect | null {
  if (typeof data !== "object" || data === null) return null;
  const d = data as Record<string, unknown>;
  const int = (v: unknown) => typeof v === "number" && Number.isInteger(v) && v >= 0;
  if (!int(d.message_id) || !int(d.fence) || !int(d.attempt) || typeof d.instance !== "string" || d.instance === "") return null;
  return { message_id: d.message_id as number, fence: d.fence as number, instance: d.instance, attempt: d.attempt as number };
}

/** Serves POST /effect on 127.0.0.1: 200 when accepted, 409 when the fence is stale, 400 when malformed. */
export async function startSink(sink: FenceSink): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      let effect: Effect | null = null;
      try {
        effect = req.method === "POST" && req.url === "/effect" ? parseEffect(JSON.parse(body)) : null;
      } catch {
        effect = null;
      }
      if (!effect) {
        res.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify({ error: "bad_request" }));
        return;
      }
      const verdict = sink.offer(effect);
      res.writeHead(verdict.accepted ? 200 : 409, { "content-type": "application/json" }).end(JSON.stringify(verdict));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const addr = server.address();
  const port = typeof addr === "object" && addr ? addr.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
