// The command every chaos serve process runs per message: reports its side effect to the sink
// under the idempotency key "<message id>:effect", so a re-run of the message applies nothing again.
// Exits 0 when the sink applied it or already had it (a duplicate), 3 when the sink refused a stale
// fence, 1 on any other failure.
const sink = process.env.CHAOS_SINK_URL;
const effect = {
  message_id: Number(process.env.BATON_MESSAGE_ID),
  key: `${process.env.BATON_MESSAGE_ID}:effect`,
  fence: Number(process.env.BATON_FENCE),
  attempt: Number(process.env.BATON_ATTEMPT),
  instance: process.env.CHAOS_INSTANCE ?? "",
};
let stdin = "";
for await (const chunk of process.stdin) stdin += chunk;
// Some work before the effect, so a pause or a kill can land in the middle of a run.
await new Promise((r) => setTimeout(r, Math.random() * Number(process.env.CHAOS_WORK_MS ?? 0)));
const res = await fetch(`${sink}/effect`, { method: "POST", body: JSON.stringify(effect) });
const verdict = res.status === 200 ? await res.json() : null;
process.stdout.write(`${verdict === null ? "refused" : verdict.duplicate ? "duplicate" : "done"} ${stdin.trim()}`);
process.exit(res.status === 200 ? 0 : res.status === 409 ? 3 : 1);
