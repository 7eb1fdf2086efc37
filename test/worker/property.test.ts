// Property-based test in the real runtime: random sequences of connects, claims, releases,
// closes, garbage, pings and heartbeat expiry over several connections of one agent. After every
// step the invariants hold, read both from presence and from what each socket was told.
import { env, runDurableObjectAlarm } from "cloudflare:test";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LIMITS, type ServerFrame } from "../../worker/wire/protocol.ts";
import { connect, presence, type TestSocket } from "./helpers.ts";
import { advanceClock, frozenAgent } from "./clock.ts";

type LeaseFrame = Extract<ServerFrame, { type: "serve_lease" }>;

type Op =
  | { kind: "connect" }
  | { kind: "claim" | "release" | "close" | "ping"; who: number }
  | { kind: "garbage"; who: number; raw: string }
  | { kind: "expire"; alive: boolean[] };

interface Conn {
  sock: TestSocket;
  open: boolean;
  /** A claim that is live: made and not given up by an effective release. */
  candidate: boolean;
  claimSeq: number | null;
  /** Grows with every claim that starts a new candidacy; frames are compared within one epoch. */
  epoch: number;
  told: { frame: LeaseFrame; epoch: number }[];
}

const GARBAGE = fc.oneof(
  fc.constantFrom(
    "{",
    "[]",
    "null",
    '{"type":"steal"}',
    '{"type":"serve_lease","op":"claim","held":true}',
    '{"type":"serve_lease","op":"grab"}',
    '{"type":"serve_lease","op":"release","fence":-1}',
    JSON.stringify({ type: "serve_lease", op: "claim", pad: "x".repeat(LIMITS.frameBytes) }),
  ),
  fc.string({ maxLength: 40 }).filter((s) => !/^\s*\{\s*"type"\s*:\s*"ping"\s*\}\s*$/.test(s)),
);

const OP: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: fc.constant({ kind: "connect" as const }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("claim" as const), who: fc.nat(15) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("release" as const), who: fc.nat(15) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("close" as const), who: fc.nat(15) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("ping" as const), who: fc.nat(15) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("garbage" as const), who: fc.nat(15), raw: GARBAGE }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("expire" as const), alive: fc.array(fc.boolean(), { minLength: 16, maxLength: 16 }) }) },
);

/** At most one expiry per run: each passes a second and a bit of the agent's clock. */
const OPS = fc.array(OP, { minLength: 1, maxLength: 15 }).map((ops) => {
  let expiries = 0;
  return ops.filter((op) => op.kind !== "expire" || expiries++ === 0);
});

class Run {
  readonly conns: Conn[] = [];
  private settles = 0;
  private lastFence = 0;
  readonly log: string[] = [];

  constructor(readonly agent: string) {}

  open(): Conn[] {
    return this.conns.filter((c) => c.open);
  }

  pick(who: number): Conn | null {
    const open = this.open();
    return open.length ? open[who % open.length]! : null;
  }

  async connect(): Promise<void> {
    const sock = await connect(this.agent, { machine: `m${this.conns.length}`, silent: true });
    const conn: Conn = { sock, open: true, candidate: false, claimSeq: null, epoch: 0, told: [] };
    sock.ws.addEventListener("message", (e) => {
      const frame = JSON.parse(e.data as string) as ServerFrame;
      if (frame.type === "serve_lease") conn.told.push({ frame, epoch: conn.epoch });
    });
    this.conns.push(conn);
  }

  /** Round-trips a frame the object answers itself with a unique req, so all earlier frames were handled. */
  async settle(conn: Conn): Promise<void> {
    const req = `settle-${++this.settles}`;
    conn.sock.sendRaw(JSON.stringify({ type: "settle", req }));
    await conn.sock.next("error", (f) => f.req === req);
  }

  async settleAll(): Promise<void> {
    for (const c of this.open()) await this.settle(c);
  }

  async apply(op: Op): Promise<void> {
    this.log.push(JSON.stringify(op).slice(0, 120));
    if (op.kind === "connect") return this.connect();
    if (op.kind === "expire") return this.expire(op.alive);
    const conn = this.pick(op.who);
    if (!conn) return;
    switch (op.kind) {
      case "claim":
        if (!conn.candidate) {
          conn.candidate = true;
          conn.epoch += 1;
        }
        conn.sock.send({ type: "serve_lease", op: "claim" });
        await this.settle(conn);
        break;
      case "release": {
        const before = await presence(this.agent);
        const holds = conn.candidate && conn.claimSeq !== null && before.holder?.claim_seq === conn.claimSeq;
        conn.sock.send({ type: "serve_lease", op: "release", req: "rel" });
        expect(await conn.sock.next("result", (f) => f.req === "rel")).toMatchObject({ op: "release", released: holds });
        // Holder or standby, a release gives the claim up: it leaves the line.
        conn.candidate = false;
        break;
      }
      case "close":
        conn.sock.close();
        await conn.sock.waitForClose();
        conn.open = false;
        break;
      case "ping":
        conn.sock.ws.send('{"type":"ping"}');
        await conn.sock.next("pong");
        break;
      case "garbage":
        conn.sock.sendRaw(op.raw);
        await conn.sock.next("error");
        break;
    }
  }

  /** Some connections keep heartbeating past the TTL, the rest stay silent and must be closed by the scan. */
  private async expire(alive: boolean[]): Promise<void> {
    const open = this.open();
    const keep = open.filter((_, i) => alive[i]);
    const silent = open.filter((_, i) => !alive[i]);
    const ttlMs = (await presence(this.agent)).heartbeat_ttl_seconds * 1000;
    // The agent's clock passes the TTL in steps; the kept connections heartbeat at each, and the
    // scan alarm runs when it falls due.
    for (let waited = 0; waited <= ttlMs + 200; waited += 250) {
      await Promise.all(keep.map((c) => c.sock.beat()));
      await advanceClock(250, { agent: this.agent });
    }
    await runDurableObjectAlarm(env.AGENTS.get(env.AGENTS.idFromName(`dev:${this.agent}`)));
    for (const c of silent) {
      expect((await c.sock.waitForClose()).code).toBe(4008);
      c.open = false;
    }
  }

  async checkInvariants(): Promise<void> {
    await this.settleAll();
    for (const c of this.conns) {
      const last = c.told.at(-1);
      if (last) c.claimSeq = last.frame.claim_seq;
    }
    const p = await presence(this.agent);
    const open = this.open();
    const candidates = open.filter((c) => c.candidate);
    expect(p.connection_count, "connections").toBe(open.length);
    expect(p.serve_candidates, "candidates").toBe(candidates.length);
    expect(p.serve_standbys, "standbys").toBe(Math.max(0, p.serve_candidates - 1));
    expect(p.connections.filter((c) => c.held).length, "holders in presence").toBeLessThanOrEqual(1);
    expect(p.fence, "fence never decreases").toBeGreaterThanOrEqual(this.lastFence);
    this.lastFence = p.fence;

    // Election rule: the holder is the candidate with the lowest claim sequence.
    if (candidates.length === 0) expect(p.holder, "no candidates, no holder").toBeNull();
    else expect(p.holder?.claim_seq, "lowest claim holds").toBe(Math.min(...candidates.map((c) => c.claimSeq!)));

    // What the sockets were told agrees: one believer at most, the holder, with the current fence.
    const believers = open.filter((c) => c.told.at(-1)?.frame.held === true);
    expect(believers.length, "sockets told held:true").toBeLessThanOrEqual(1);
    if (believers.length === 1) {
      expect(believers[0]!.told.at(-1)!.frame).toMatchObject({ claim_seq: p.holder?.claim_seq, fence: p.fence });
    }
    // Every candidate was told where it stands.
    for (const c of candidates) expect(c.told.at(-1)?.epoch, "candidate told").toBe(c.epoch);

    const heldFences: number[] = [];
    for (const c of this.conns) {
      for (let i = 1; i < c.told.length; i++) {
        const [a, b] = [c.told[i - 1]!, c.told[i]!];
        expect(b.frame.fence, "fence per socket never decreases").toBeGreaterThanOrEqual(a.frame.fence);
        if (a.epoch === b.epoch) expect(b.frame.held, "no repeated held frame").not.toBe(a.frame.held);
      }
      for (const t of c.told) if (t.frame.held) heldFences.push(t.frame.fence);
    }
    expect(new Set(heldFences).size, "no two holders ever shared a fence").toBe(heldFences.length);
  }

  closeAll(): void {
    for (const c of this.open()) c.sock.close();
  }
}

describe("serve lease properties", () => {
  it("random operations over several connections keep one holder, a monotonic fence and true standby counts", async () => {
    await fc.assert(
      fc.asyncProperty(OPS, async (ops) => {
        // Its clock stands still from the start (expire moves it): a busy shared workerd cannot let
        // a one-second TTL lapse between two steps that expect a live connection.
        const run = new Run(await frozenAgent());
        try {
          await run.connect();
          await run.connect();
          for (const op of ops) {
            await run.apply(op);
            await run.checkInvariants();
          }
        } catch (err) {
          throw new Error(`${(err as Error).message}\nops: ${run.log.join(" | ")}`);
        } finally {
          run.closeAll();
        }
      }),
      { numRuns: 25, endOnFailure: true },
    );
  }, 180_000);
});
