// The command every chaos serve process runs per message: reports its side effect to the sink
// under the idempotency key "<message id>:effect", so a re-run of the message applies nothing again.
// Exits 0 when the sink applied it or already had it (a duplicate), 3 when the sink refused a stale
// fence, 1 on any other failure. In pool mode (CHAOS_POOL=1) the effect is fenced by the message's
// own lease token, and a message whose text says "park" parks on its first run (exit 75) until
// the chaos run resumes it.
import { writeFileSync } from "node:fs";

const sink = process.env.CHAOS_SINK_URL;
const pool = process.env.CHAOS_POOL === "1";
const id = Number(process.env.BATON_MESSAGE_ID);
const effect = {
  message_id: id,
  key: `${id}:effect`,
  fence: Number(pool ? process.env.BATON_MESSAGE_TOKEN : process.env.BATON_FENCE),
  attempt: Number(process.env.BATON_ATTEMPT),
  instance: process.env.CHAOS_INSTANCE ?? "",
  ...(pool ? { scope: id } : {}),
};
let stdin = "";
for await (const chunk of process.stdin) stdin += chunk;
if (pool && stdin.includes("park") && process.env.BATON_RESUME_INPUT === undefined) {
  writeFileSync(process.env.BATON_CHECKPOINT, JSON.stringify({ parked_by: effect.instance }));
  process.exit(75);
}
// A stalled first run outlives its run timeout: the coordinator takes the message back and the
// serve process kills this run before it reaches the sink.
if (pool && stdin.includes("stall") && effect.attempt === 1) await new Promise((r) => setTimeout(r, Number(process.env.CHAOS_STALL_MS ?? 0)));
// Some work before the effect, so a pause or a kill can land in the middle of a run.
await new Promise((r) => setTimeout(r, Math.random() * Number(process.env.CHAOS_WORK_MS ?? 0)));
const res = await fetch(`${sink}/effect`, { method: "POST", body: JSON.stringify(effect) });
const verdict = res.status === 200 ? await res.json() : null;
process.stdout.write(`${verdict === null ? "refused" : verdict.duplicate ? "duplicate" : "done"} ${stdin.trim()}`);
process.exit(res.status === 200 ? 0 : res.status === 409 ? 3 : 1);
