// The chaos run's side-effect sink: a fenced, idempotent resource. It refuses an effect whose fence
// is below the highest fence it has accepted; an effect whose idempotency key it has already
// applied is answered as a success marked `duplicate` and applied nothing again (as the
// coordinator treats a reply key it has stored). Every offer is logged, whatever the verdict, and
// the run's invariants are checked from that log.
import { createServer, type Server } from "node:http";

export interface Effect {
  message_id: number;
  /** Idempotency key: the message id plus the step, e.g. "12:effect". */
  key: string;
  fence: number;
  /** Which serve process ran it: machine label plus a per-start instance id. */
  instance: string;
  attempt: number;
  /**
   * What the fence fences: absent for the serve fence (one sequence for the agent); a message id
   * when `fence` is that message's own lease token (pool mode), so each message has its own sequence.
   */
  scope?: number;
}

export type Outcome = "applied" | "duplicate" | "stale_fence";

export type Verdict =
  | { accepted: true; duplicate: false }
  | { accepted: true; duplicate: true; applied_fence: number }
  | { accepted: false; reason: "stale_fence"; highest: number };

export interface LoggedEffect extends Effect {
  outcome: Outcome;
  /** Highest accepted fence just before this effect arrived. */
  highestBefore: number;
  at: number;
}

export class EffectSink {
  private readonly highest = new Map<string, number>();
  private readonly applied = new Map<string, LoggedEffect>();
  readonly log: LoggedEffect[] = [];

  /** Fence first, then the key: a stale writer is refused even when its key was applied. */
  offer(effect: Effect, at = Date.now()): Verdict {
    const scope = scopeOf(effect);
    const highestBefore = this.highest.get(scope) ?? -1;
    if (effect.fence < highestBefore) {
      this.log.push({ ...effect, outcome: "stale_fence", highestBefore, at });
      return { accepted: false, reason: "stale_fence", highest: highestBefore };
    }
    this.highest.set(scope, effect.fence);
    const prior = this.applied.get(effect.key);
    const logged: LoggedEffect = { ...effect, outcome: prior ? "duplicate" : "applied", highestBefore, at };
    this.log.push(logged);
    if (prior) return { accepted: true, duplicate: true, applied_fence: prior.fence };
    this.applied.set(effect.key, logged);
    return { accepted: true, duplicate: false };
  }

  /** Offers that passed the fence check: applied ones and absorbed duplicates. */
  get accepted(): LoggedEffect[] {
    return this.log.filter((e) => e.outcome !== "stale_fence");
  }
}

/** The fence sequence an effect belongs to: the agent's serve fence, or one message's tokens. */
export function scopeOf(effect: Effect): string {
  return effect.scope === undefined ? "serve" : `message ${effect.scope}`;
}

/** Validates a posted effect; null when a field is missing or of the wrong type. */
export function parseEffect(data: unknown): Effect | null {
  if (typeof data !== "object" || data === null) return null;
  const d = data as Record<string, unknown>;
  const int = (v: unknown) => typeof v === "number" && Number.isInteger(v) && v >= 0;
  const text = (v: unknown) => typeof v === "string" && v !== "";
  if (!int(d.message_id) || !int(d.fence) || !int(d.attempt) || !text(d.instance) || !text(d.key)) return null;
  if (d.scope !== undefined && !int(d.scope)) return null;
  return {
    message_id: d.message_id as number, key: d.key as string, fence: d.fence as number, instance: d.instance as string, attempt: d.attempt as number,
    ...(d.scope === undefined ? {} : { scope: d.scope as number }),
  };
}

/**
 * Serves POST /effect on 127.0.0.1: 200 when applied or a duplicate (the body says which), 409 when
 * the fence is stale, 400 when malformed.
 */
export async function startSink(sink: EffectSink): Promise<{ url: string; close(): Promise<void> }> {
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
