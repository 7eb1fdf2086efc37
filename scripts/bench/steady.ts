// Steady-state handoff: one long-lived agent (baton) or room (floor) with two connections that
// hand the lease back and forth, which is what drains, preference moves and restarts do to an
// agent that has been running for a while. Each trial times the holder's release until the other
// connection knows it leads; the former holder then claims again (untimed) and waits in line.
import WebSocket from "ws";
import { DEV_TOKEN } from "../../test/e2e/wrangler-dev.ts";
import { PING_TEXT } from "../../worker/wire/protocol.ts";
import type { ScenarioResult } from "./report.ts";

const WAIT_MS = 15_000;
/** Handoffs made before anything is recorded, so the agent has history (transitions, counters, reports). */
const WARM_HANDOFFS = 60;
/** Pause between trials: a serve socket may send 50 frames a second, and real handoffs are that rare or rarer. */
const PACE_MS = 60;

interface Side {
  /** Gives the lead up; resolves when the other side knows it leads. */
  handOff(from: 0 | 1): Promise<number>;
  close(): void;
}

/** Resolves with the first text frame `ws` gets that `match` accepts. */
function nextFrame(ws: WebSocket, match: (text: string) => boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => (ws.off("message", on), reject(new Error("no frame in time"))), WAIT_MS);
    const on = (data: WebSocket.RawData) => {
      if (!match(String(data))) return;
      clearTimeout(timer);
      ws.off("message", on);
      resolve();
    };
    ws.on("message", on);
  });
}

function opened(ws: WebSocket): Promise<void> {
  return new Promise((resolve, reject) => (ws.once("open", () => resolve()), ws.once("error", reject)));
}

const isLease = (held: boolean) => (text: string) => {
  const f = JSON.parse(text) as { type?: string; held?: boolean };
  return f.type === "serve_lease" && f.held === held;
};

async function batonSide(url: string, agent: string, ttlMs: number): Promise<Side> {
  const socks = [0, 1].map((i) => new WebSocket(`${url.replace(/^http/, "ws")}/agents/${agent}/serve?machine=m${i}`, {
    headers: { authorization: `Bearer ${DEV_TOKEN}` },
  }));
  await Promise.all(socks.map(opened));
  const timer = setInterval(() => socks.forEach((s) => s.readyState === WebSocket.OPEN && s.send(PING_TEXT)), ttlMs / 3);
  const claim = async (i: number, held: boolean) => {
    const told = nextFrame(socks[i]!, isLease(held));
    socks[i]!.send(JSON.stringify({ type: "serve_lease", op: "claim" }));
    await told;
  };
  await claim(0, true);
  await claim(1, false);
  return {
    async handOff(from) {
      const to = 1 - from;
      const leads = nextFrame(socks[to]!, isLease(true));
      const t0 = performance.now();
      socks[from]!.send(JSON.stringify({ type: "serve_lease", op: "release" }));
      await leads;
      const ms = performance.now() - t0;
      await claim(from, false);
      return ms;
    },
    close() {
      clearInterval(timer);
      socks.forEach((s) => s.terminate());
    },
  };
}

async function floorSide(url: string, room: string): Promise<Side> {
  const socks = [0, 1].map(() => new WebSocket(`${url.replace(/^http/, "ws")}/rooms/${room}`));
  await Promise.all(socks.map(opened));
  return {
    async handOff(from) {
      const leads = nextFrame(socks[1 - from]!, (t) => t === '{"type":"held"}');
      const t0 = performance.now();
      socks[from]!.send('{"type":"release"}');
      await leads;
      return performance.now() - t0;
    },
    close: () => socks.forEach((s) => s.terminate()),
  };
}

/** `trials` steady handoffs per system, interleaved one by one, after WARM_HANDOFFS unrecorded ones each. */
export async function runSteady(batonUrl: string, floorUrl: string, ttlSeconds: number, trials: number): Promise<ScenarioResult> {
  const label = "steady-state handoff: release to held on a long-lived agent";
  const stamp = `${process.pid}-${Date.now()}`;
  const sides = { baton: await batonSide(batonUrl, `bench-steady-${stamp}`, ttlSeconds * 1000), floor: await floorSide(floorUrl, `floor-steady-${stamp}`) };
  const samples: ScenarioResult["samples"] = { baton: [], floor: [] };
  const failures: ScenarioResult["failures"] = {};
  const holder = { baton: 0 as 0 | 1, floor: 0 as 0 | 1 };
  try {
    for (let i = 0; i < WARM_HANDOFFS + trials; i++) {
      for (const name of i % 2 ? (["floor", "baton"] as const) : (["baton", "floor"] as const)) {
        try {
          const ms = await sides[name].handOff(holder[name]);
          holder[name] = (1 - holder[name]) as 0 | 1;
          if (i >= WARM_HANDOFFS) samples[name]!.push(ms);
        } catch (e) {
          failures[name] = (failures[name] ?? 0) + 1;
          console.error(`  ${label} ${name} trial ${i}: ${(e as Error).message}`);
        }
      }
      await new Promise((r) => setTimeout(r, PACE_MS));
    }
  } finally {
    sides.baton.close();
    sides.floor.close();
  }
  console.log(`  ${label}: done`);
  return { label, samples, failures };
}
