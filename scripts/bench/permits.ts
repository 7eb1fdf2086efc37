// An effect's intent with a permit checked (rules/permits.ts: the permit read, its digest compared,
// the spend stored with the intent) next to a plain effect's intent, on the same running attempt,
// alternating which goes first. Each trial first gets a fresh permit the way a person grants one:
// the intent is refused approval_required, the attempt parks, the message is approved over HTTP
// and handed out again; only the two intents are timed.
import { DEV_TOKEN } from "../../test/e2e/wrangler-dev.ts";
import { runningMessage } from "./steps.ts";
import { fmt, markdownTable, percentile, ratio } from "./stats.ts";

const WARM = 5;
const PACE_MS = 25;
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** p50 of both intents over `trials`, and the markdown lines that show them. */
export async function permitIntents(url: string, ttlMs: number, trials: number, stamp: string): Promise<{ permit: number; plain: number; section: string }> {
  const agent = `bench-permits-${stamp}`;
  const { runner, id } = await runningMessage(url, agent, ttlMs);
  let token = (await fetch(`${url}/agents/${agent}/messages/${id}`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } }).then((r) => r.json()) as { token: number }).token;
  const samples = { permit: [] as number[], plain: [] as number[] };
  const approve = { question: "Charge $500 to card 4242?", args: { card: "4242", amount: 500 } };
  try {
    for (let i = 0; i < WARM + trials; i++) {
      const asked = await runner.write({ type: "step", id, token, name: `p${i}`, kind: "effect", phase: "intent", on_unknown: "retry", approve });
      if (asked.type !== "error" || asked.code !== "approval_required") throw new Error(`expected approval_required, got ${JSON.stringify(asked)}`);
      // Every write is paced, not only the measured ones: the coordinator's frame budget (50 a second) refuses a faster runner.
      await pause(PACE_MS);
      const copy = runner.next((f) => f.type === "message" && f.run === true && f.id === id && (f.token as number) > token, "run copy after the approval");
      await runner.write({ type: "park", id, token });
      await pause(PACE_MS);
      const approved = await fetch(`${url}/agents/${agent}/messages/${id}/approve`, {
        method: "POST", headers: { authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" }, body: "{}",
      });
      if (approved.status !== 200) throw new Error(`approve: ${approved.status} ${await approved.text()}`);
      token = (await copy).token as number;
      for (const kind of i % 2 ? (["plain", "permit"] as const) : (["permit", "plain"] as const)) {
        const name = kind === "permit" ? `p${i}` : `e${i}`;
        const t0 = performance.now();
        const answer = await runner.write({ type: "step", id, token, name, kind: "effect", phase: "intent", on_unknown: "retry", ...(kind === "permit" ? { approve } : {}) });
        const ms = performance.now() - t0;
        if (answer.type !== "result") throw new Error(`${kind} intent refused: ${JSON.stringify(answer)}`);
        if (i >= WARM) samples[kind].push(ms);
        await pause(PACE_MS);
      }
      // Outcomes recorded, so the next park is not asked inside an open effect.
      for (const name of [`p${i}`, `e${i}`]) {
        await runner.write({ type: "step", id, token, name, kind: "effect", phase: "done", value: "ok", on_unknown: "retry" });
        await pause(PACE_MS);
      }
    }
  } finally {
    runner.close();
  }
  const permit = percentile(samples.permit, 50);
  const plain = percentile(samples.plain, 50);
  const section = [
    "### Approval permits",
    "",
    `An effect's intent (step frame to its result) with a person's permit checked and spent, beside a plain effect's intent on the same attempt, ${samples.permit.length} trials (goal: at most 1.1x):`,
    "",
    markdownTable(["intent", "p50 ms", "p99 ms", "ratio"], [
      ["plain effect", fmt(plain), fmt(percentile(samples.plain, 99)), "1.00x"],
      ["effect with approve: permit read, digest compared, spent", fmt(permit), fmt(percentile(samples.permit, 99)), ratio(permit, plain)],
    ]),
  ].join("\n");
  return { permit, plain, section };
}
