// `npm run bench -- --only upload`: a 10 MiB step result uploaded to R2 and read back, next to the
// floor doing the same work: streaming the same body, with its declared length, into the same local
// R2 (`PUT /r2/{name}` of the floor probe). That PUT is the goal's floor: an upload that keeps its
// bytes cannot cost less than writing them where they are kept, and wrangler dev's R2 emulation
// (an MD5 of the body and a file on disk) is most of that cost (docs/benchmarks.md says why the
// floor's POST, which drops the bytes, is printed only for reference).
import { DEV_TOKEN } from "../../test/e2e/wrangler-dev.ts";
import { fmt, markdownTable, percentile, ratio } from "./stats.ts";
import { runningMessage } from "./steps.ts";

const BLOB_BYTES = 10 * 1024 * 1024;
/** The goal: an upload at most this many times the floor's R2 PUT of the same body (issue 47 item 5). */
const GOAL = 1.3;
/** A transfer that takes longer fails its trial instead of holding the bench (a loaded machine has hung one). */
const TRANSFER_MS = 60_000;
const timeout = () => AbortSignal.timeout(TRANSFER_MS);

interface Transfers {
  up: number[];
  down: number[];
  sink: number[];
  r2: number[];
  failed: number;
}

async function blobRates(batonUrl: string, floorUrl: string, ttlMs: number, trials: number, stamp: string): Promise<Transfers> {
  const body = new Uint8Array(BLOB_BYTES).fill(97);
  const t: Transfers = { up: [], down: [], sink: [], r2: [], failed: 0 };
  for (let i = 0; i < trials; i++) {
    const agent = `bench-blob-${stamp}-${i}`;
    const { runner, id, token, runKey } = await runningMessage(batonUrl, agent, ttlMs);
    // A trial's four transfers count together or not at all, so every ratio compares the same minutes;
    // which of baton and the floor's PUT goes first alternates, so neither always meets a warmer disk.
    try {
      const times: Record<"up" | "down" | "sink" | "r2", number> = { up: 0, down: 0, sink: 0, r2: 0 };
      const upload = async () => {
        const t0 = performance.now();
        const res = await fetch(`${batonUrl}/agents/${agent}/messages/${id}/blobs`, {
          method: "PUT", headers: { authorization: `Bearer ${DEV_TOKEN}`, "x-baton-token": String(token), "x-baton-run-key": runKey }, body, signal: timeout(),
        });
        const { blob } = (await res.json()) as { blob?: string };
        times.up = performance.now() - t0;
        if (res.status !== 201 || blob === undefined) throw new Error(`upload answered ${res.status}`);
        return blob;
      };
      const floorPut = async () => {
        const t0 = performance.now();
        await (await fetch(`${floorUrl}/r2/${stamp}-${i}`, { method: "PUT", body, signal: timeout() })).json();
        times.r2 = performance.now() - t0;
      };
      let blob: string;
      if (i % 2 === 0) {
        blob = await upload();
        await floorPut();
      } else {
        await floorPut();
        blob = await upload();
      }
      await runner.write({ type: "step", id, token, name: "draft", kind: "step", phase: "done", blob });
      let t0 = performance.now();
      const back = await fetch(`${batonUrl}/agents/${agent}/messages/${id}/blobs/${blob}`, { headers: { authorization: `Bearer ${DEV_TOKEN}` }, signal: timeout() });
      const got = (await back.arrayBuffer()).byteLength;
      times.down = performance.now() - t0;
      if (got !== BLOB_BYTES) throw new Error(`read back ${got} bytes`);
      t0 = performance.now();
      await (await fetch(`${floorUrl}/sink`, { method: "POST", body, signal: timeout() })).json();
      times.sink = performance.now() - t0;
      t.up.push(times.up), t.down.push(times.down), t.sink.push(times.sink), t.r2.push(times.r2);
    } catch (e) {
      t.failed++;
      const cause = (e as Error).cause;
      console.error(`  10 MiB blobs trial ${i}: ${(e as Error).message}${cause instanceof Error ? ` (${cause.message})` : ""}`);
    } finally {
      runner.close();
    }
  }
  return t;
}

/** The upload scenario's report section: the upload against the floor's R2 PUT (the goal), and the rest for reference. */
export async function runUpload(batonUrl: string, floorUrl: string, ttlSeconds: number, trials: number): Promise<string> {
  const t = await blobRates(batonUrl, floorUrl, ttlSeconds * 1000, trials, `${process.pid}-${Date.now()}`);
  console.log("  10 MiB upload: done");
  const p50 = (xs: number[]) => percentile(xs, 50);
  const mbps = (ms: number) => fmt(BLOB_BYTES / 1024 / 1024 / (ms / 1000));
  const upVsPut = p50(t.up) / p50(t.r2);
  return [
    "### A 10 MiB step result through R2",
    "",
    `Upload (PUT …/blobs) ${ratio(p50(t.up), p50(t.r2))} the floor's PUT of the same body into the same local R2 ` +
      `(goal ≤ ${GOAL}x: ${upVsPut <= GOAL ? "met" : "NOT met"}), ${t.up.length} trials${t.failed ? ` (${t.failed} failed)` : ""}, p50:`,
    "",
    markdownTable(["transfer", "p50 ms", "MiB/s", "vs floor's R2 PUT", "vs floor's POST"], [
      ["upload (PUT …/blobs)", fmt(p50(t.up)), mbps(p50(t.up)), ratio(p50(t.up), p50(t.r2)), ratio(p50(t.up), p50(t.sink))],
      ["floor: PUT of the same body streamed into R2", fmt(p50(t.r2)), mbps(p50(t.r2)), "1.00x", ratio(p50(t.r2), p50(t.sink))],
      ["download (GET …/blobs/{id})", fmt(p50(t.down)), mbps(p50(t.down)), "-", ratio(p50(t.down), p50(t.sink))],
      ["floor: POST of the same body, read and dropped", fmt(p50(t.sink)), mbps(p50(t.sink)), "-", "1.00x"],
    ]),
  ].join("\n");
}
