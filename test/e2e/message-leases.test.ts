// Per-message leases end to end: the demo script against wrangler dev (A stalls, B takes over with
// a larger token and A's checkpoint, A's late write is refused), and real `baton serve` runners in
// a pool: a stalled run is killed when its run timeout takes the message back, the successor
// starts from the checkpoint the stalled run wrote mid-run, exit 75 parks, `baton resume` hands
// the message out again with the input.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { get } from "node:http";
import { postMessage, runBaton, sharedServeFixture, startServe, uniqueAgent, type MessageView } from "./serve-helpers.ts";
import { DEV_TOKEN, ROOT } from "./wrangler-dev.ts";
import { pidAlive } from "../../cli/lib/local-lock.ts";

const fixture = sharedServeFixture();

/** The served command: its behaviour depends on the message text and the attempt. */
function writeCommand(dir: string): string {
  const command = join(dir, "task.sh");
  writeFileSync(command, [
    "#!/bin/sh",
    "text=$(cat)",
    'echo "$$" > "$PIDS/$BATON_MESSAGE_ID-$BATON_ATTEMPT"',
    'case "$text" in',
    "  stall)",
    '    if [ "$BATON_ATTEMPT" = 1 ]; then echo \'{"step":2}\' > "$BATON_CHECKPOINT"; sleep 60; fi',
    '    echo "finished from $(cat "$BATON_CHECKPOINT") at attempt $BATON_ATTEMPT on $TAG";;',
    "  approve)",
    '    if [ -z "$BATON_RESUME_INPUT" ]; then echo \'{"plan":"ready"}\' > "$BATON_CHECKPOINT"; exit 75; fi',
    '    echo "deployed with $(cat "$BATON_CHECKPOINT"), approval: $BATON_RESUME_INPUT";;',
    '  slow) sleep 2; echo "did slow on $TAG";;',
    '  *) echo "did $text on $TAG";;',
    "esac",
    "",
  ].join("\n"), { mode: 0o755 });
  return command;
}

/**
 * Polls one message until `done` holds, on a fresh connection each time: runBaton's spawnSync
 * blocks this process long enough for wrangler dev to close an idle keep-alive socket that
 * fetch would then reuse ("other side closed").
 */
async function waitForMessage(url: string, agent: string, id: number, done: (m: MessageView) => boolean, timeoutMs = 20_000): Promise<MessageView> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const m = await new Promise<MessageView>((resolve, reject) => {
      get(`${url}/agents/${agent}/messages/${id}`, { agent: false, headers: { authorization: `Bearer ${DEV_TOKEN}` } }, (res) => {
        let body = "";
        res.setEncoding("utf8").on("data", (c: string) => (body += c)).on("end", () => resolve(JSON.parse(body) as MessageView));
      }).on("error", reject);
    });
    if (done(m)) return m;
    if (Date.now() > deadline) throw new Error(`message ${id} never reached the expected state: ${JSON.stringify(m)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("per-message leases end to end", () => {
  it("the demo script: A claims and stalls, B takes over with a larger token and A's checkpoint, A's write is refused, B completes", () => {
    const agent = uniqueAgent("demo");
    const r = spawnSync(process.execPath, [join(ROOT, "examples/stalled-runner.mjs"), agent, "--json"], {
      env: { ...process.env, BATON_URL: fixture.dev.url, BATON_TOKEN: DEV_TOKEN }, encoding: "utf8", timeout: 60_000,
    });
    expect(r.status, r.stderr).toBe(0);
    const steps = new Map(r.stdout.trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>).map((s) => [s.step, s]));
    const claimed = steps.get("a_claimed")!;
    const tookOver = steps.get("b_took_over")!;
    expect(tookOver.token as number).toBeGreaterThan(claimed.token as number);
    expect(tookOver).toMatchObject({ attempt: 2, checkpoint: { step: 2 } });
    expect(steps.get("a_revoked")).toMatchObject({ reason: "run_timeout", token: claimed.token });
    expect(steps.get("a_refused")).toMatchObject({ code: "stale_token" });
    expect(steps.get("b_completed")).toMatchObject({
      accepted: true, status: "acknowledged", reply: "summary finished from step 2", acked_token: tookOver.token,
    });
  });

  it("baton serve in a pool: a stalled run is killed at its run timeout and the next runner finishes from its checkpoint", async () => {
    const { url } = fixture.dev;
    const agent = uniqueAgent("pool");
    const dir = mkdtempSync(join(tmpdir(), "baton-pool-"));
    const command = writeCommand(dir);
    const env = { BATON_URL: url };
    expect(runBaton(["agent", "set", agent, "--mode", "pool", "--json"], env)).toMatchObject({ code: 0 });
    const a = startServe({ url, agent, tag: "a", command, sink: "", env: { PIDS: dir }, serveArgs: ["--concurrency", "2"] });
    fixture.started.push(a);
    await a.waitFor(/holder|standby/);
    const b = startServe({ url, agent, tag: "b", command, sink: "", env: { PIDS: dir } });
    fixture.started.push(b);
    await b.waitFor(/standby/);
    const sent = runBaton(["send", agent, "stall", "--run-timeout", "5", "--json"], env);
    expect(sent.code, sent.stderr).toBe(0);
    const id = (JSON.parse(sent.stdout) as { id: number }).id;
    const done = await waitForMessage(url, agent, id, (m) => m.status === "acknowledged", 30_000);
    expect(done.attempts).toBe(2);
    expect(done.reply).toBe('finished from {"step":2} at attempt 2 on b\n');
    const stalledPid = Number(readFileSync(join(dir, `${id}-1`), "utf8"));
    // Whichever comes first kills it: the coordinator's revoked frame or the local clock. Runner a
    // hears the take-back at the moment b is handed attempt 2, so on a loaded machine b can store
    // its reply before a has signalled its command: baton fences attempt 1's writes, it does not
    // order two machines' processes. What it promises is that a kills it, within --grace (1 s).
    await a.waitFor(/message \d+ \(token \d+\) was taken back \(run_timeout/);
    const killedBy = Date.now() + 5_000;
    while (pidAlive(stalledPid) && Date.now() < killedBy) await new Promise((r) => setTimeout(r, 50));
    expect(pidAlive(stalledPid)).toBe(false);
    // Both runners take messages: three slow ones at once fill their three slots. (Each runs once
    // unless a runner loses its lease: with this server's 2 s TTL on a loaded machine one did, and
    // its message ran again as attempt 2, as it should; so attempts are not what this checks.)
    const ids = [await postMessage(url, agent, "slow"), await postMessage(url, agent, "slow"), await postMessage(url, agent, "slow")];
    const replies = [];
    for (const m of ids) replies.push(await waitForMessage(url, agent, m, (v) => v.status === "acknowledged"));
    expect(new Set(replies.map((m) => m.reply!.trim().split(" on ")[1]))).toEqual(new Set(["a", "b"]));
  });

  it("exit 75 parks the message; baton resume hands it out again with attempt 2, its checkpoint and BATON_RESUME_INPUT", async () => {
    const { url } = fixture.dev;
    const agent = uniqueAgent("park");
    const dir = mkdtempSync(join(tmpdir(), "baton-park-"));
    const a = startServe({ url, agent, tag: "a", command: writeCommand(dir), sink: "", env: { PIDS: dir } });
    fixture.started.push(a);
    await a.waitFor(/holder/);
    const env = { BATON_URL: url };
    const id = (JSON.parse(runBaton(["send", agent, "approve", "--json"], env).stdout) as { id: number }).id;
    await waitForMessage(url, agent, id, (m) => m.status === "parked");
    const who = runBaton(["who", agent], env);
    expect(who.stdout).toMatch(new RegExp(`1 parked \\(${id}\\)`));
    expect(runBaton(["resume", agent, String(id), "yes, ship it"], env)).toMatchObject({ code: 0 });
    const done = await waitForMessage(url, agent, id, (m) => m.status === "acknowledged");
    expect(done).toMatchObject({ attempts: 2, reply: 'deployed with {"plan":"ready"}, approval: yes, ship it\n' });
    const again = runBaton(["resume", agent, String(id)], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/not parked/);
  });
});
