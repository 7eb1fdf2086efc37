// Durable steps end to end: real `baton serve` processes against a real `wrangler dev`. A runner
// killed with -9 after a step and an effect: its successor replays both (the step's command and the
// effect ran once). Killed inside an effect: the successor parks the message as "outcome unknown", a
// person answers `baton resume --done`, and the effect never ran twice. serve heartbeats for a
// command that is silent for longer than the heartbeat timeout. (durable-steps-client.test.ts: the
// client library's ctx.step and ctx.effect.)
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { until, type Journaled } from "./durable-helpers.ts";
import { BIN, authHeaders, getJson, postMessage, runBaton, sharedServeFixture, startServe, uniqueAgent, waitForMessage } from "./serve-helpers.ts";
import { DEV_TOKEN, ROOT } from "./wrangler-dev.ts";
import { accountTag } from "../../worker/wire/protocol.ts";

const fx = sharedServeFixture();

/** A work dir with `baton` on a PATH of its own and the served script. */
function shellAgent(body: string): { dir: string; command: string; env: Record<string, string> } {
  const dir = mkdtempSync(join(tmpdir(), "baton-steps-"));
  writeFileSync(join(dir, "baton"), `#!/bin/sh\nexec "${process.execPath}" "${BIN}" "$@"\n`, { mode: 0o755 });
  const command = join(dir, "agent.sh");
  writeFileSync(command, `#!/bin/sh\nset -e\necho $$ > "$WORK/pid-$BATON_ATTEMPT"\n${body}\n`, { mode: 0o755 });
  return { dir, command, env: { WORK: dir, PATH: `${dir}:${process.env.PATH}` } };
}

function lines(path: string): string[] {
  try {
    return readFileSync(path, "utf8").split("\n").filter(Boolean);
  } catch {
    return [];
  }
}

/** A machine dies: its serve and the command's whole process group, both by SIGKILL. */
function killMachine(servePid: number, dir: string, attempt: number): void {
  const pid = Number(readFileSync(join(dir, `pid-${attempt}`), "utf8"));
  process.kill(servePid, "SIGKILL");
  process.kill(-pid, "SIGKILL");
}

const PLAN = `plan=$(baton step plan -- sh -c 'echo ran >> "$WORK/plan.log"; printf "plan-of-attempt-%s" "$BATON_ATTEMPT"')`;

describe("durable steps through baton serve", () => {
  it("a successor of a runner killed with -9 replays its recorded step and effect instead of running them again", async () => {
    const agent = uniqueAgent("replay");
    const { dir, command, env } = shellAgent([
      PLAN,
      `receipt=$(baton effect pay -- sh -c 'echo "$BATON_IDEMPOTENCY_KEY" >> "$WORK/pay.log"; printf "receipt-of-attempt-%s" "$BATON_ATTEMPT"')`,
      `if [ ! -e "$WORK/crashed" ]; then touch "$WORK/crashed"; sleep 60; fi`,
      `echo "$plan $receipt"`,
    ].join("\n"));
    const a = startServe({ url: fx.dev.url, agent, tag: "a", command, sink: join(dir, "sink"), env });
    fx.started.push(a);
    await a.waitFor(/holder/);
    // b starts while a runs the message: it only has to stand by when a dies.
    const b = startServe({ url: fx.dev.url, agent, tag: "b", command, sink: join(dir, "sink"), env });
    fx.started.push(b);
    const id = await postMessage(fx.dev.url, agent, "go");
    await until(() => existsSync(join(dir, "crashed")), "the first attempt recorded its step and paid, then hung");
    const during = await getJson<Journaled>(`${fx.dev.url}/agents/${agent}/messages/${id}`);
    expect(during.steps.map((s) => [s.name, s.kind, s.status, s.attempt])).toEqual([["plan", "step", "done", 1], ["pay", "effect", "done", 1]]);
    await b.waitFor(/standby/);
    killMachine(a.pid, dir, 1);
    const done = await waitForMessage(fx.dev.url, agent, id, (m) => m.status === "acknowledged", 20_000);
    expect(done.reply?.trim()).toBe("plan-of-attempt-1 receipt-of-attempt-1");
    expect(done.attempts).toBe(2);
    expect(lines(join(dir, "plan.log"))).toHaveLength(1);
    expect(lines(join(dir, "pay.log"))).toEqual([`baton:${await accountTag("dev")}:${agent}:${id}:pay`]);
    const history = runBaton(["show", agent, String(id)], { BATON_URL: fx.dev.url });
    expect(history.stdout).toMatch(/steps\s+plan \(step, done by attempt 1, \d+ B\), pay \(effect, done by attempt 1, \d+ B\)/);
  });

  it("a runner killed inside an effect leaves its outcome unknown: the message parks for a person, resume --done records it, it never runs twice", async () => {
    const agent = uniqueAgent("unknown");
    const { dir, command, env } = shellAgent([
      PLAN,
      `receipt=$(baton effect pay -- sh -c 'echo "$BATON_IDEMPOTENCY_KEY" >> "$WORK/pay.log"; sleep 60; echo never')`,
      `echo "$plan $receipt"`,
    ].join("\n"));
    const a = startServe({ url: fx.dev.url, agent, tag: "a", command, sink: join(dir, "sink"), env });
    fx.started.push(a);
    await a.waitFor(/holder/);
    // b starts while a runs the message: it only has to stand by when a dies.
    const b = startServe({ url: fx.dev.url, agent, tag: "b", command, sink: join(dir, "sink"), env });
    fx.started.push(b);
    const id = await postMessage(fx.dev.url, agent, "go");
    await until(() => lines(join(dir, "pay.log")).length === 1, "the first attempt began paying");
    await b.waitFor(/standby/);
    killMachine(a.pid, dir, 1);
    const parked = await waitForMessage(fx.dev.url, agent, id, (m) => m.status === "parked", 20_000) as unknown as Journaled;
    expect(parked.waiting_on).toBe("pay");
    expect(lines(join(dir, "pay.log"))).toHaveLength(1);
    const shown = runBaton(["show", agent, String(id)], { BATON_URL: fx.dev.url });
    expect(shown.stdout).toMatch(/outcome unknown: step pay/);
    // `baton who` says it too, from presence's waiting_on.
    const who = runBaton(["who", agent], { BATON_URL: fx.dev.url });
    expect(who.stdout).toContain(`  parked ${id}: outcome unknown: step pay: baton resume ${agent} ${id} --done | --redo\n`);
    const bare = runBaton(["resume", agent, String(id)], { BATON_URL: fx.dev.url });
    expect(bare.code).toBe(1);
    expect(bare.stderr).toMatch(/outcome is unknown: say done .* or redo/);
    const answered = runBaton(["resume", agent, String(id), "receipt-by-hand", "--done"], { BATON_URL: fx.dev.url });
    expect(answered.code, answered.stderr).toBe(0);
    const done = await waitForMessage(fx.dev.url, agent, id, (m) => m.status === "acknowledged", 20_000);
    expect(done.reply?.trim()).toBe("plan-of-attempt-1 receipt-by-hand");
    expect(runBaton(["show", agent, String(id)], { BATON_URL: fx.dev.url }).stdout).toMatch(/answered\s+\S+ done "receipt-by-hand" by the unnamed token \(dev, cli\)/);
    expect(lines(join(dir, "pay.log"))).toHaveLength(1);
    expect(lines(join(dir, "plan.log"))).toHaveLength(1);
  });

  it("serve heartbeats for a command silent longer than the heartbeat timeout; the command's own heartbeat keeps its progress", async () => {
    const agent = uniqueAgent("beats");
    const res = await fetch(`${fx.dev.url}/agents/${agent}/policy`, { method: "PUT", headers: authHeaders(), body: JSON.stringify({ heartbeat_timeout_seconds: 1 }) });
    expect(res.status).toBe(200);
    const { dir, command, env } = shellAgent(`sleep 2.5\nbaton heartbeat '{"done":"half"}' >&2\nwhile [ ! -e "$WORK/go" ]; do sleep 0.05; done\necho finished`);
    const a = startServe({ url: fx.dev.url, agent, tag: "a", command, sink: join(dir, "sink"), env });
    fx.started.push(a);
    await a.waitFor(/holder/);
    const id = await postMessage(fx.dev.url, agent, "go");
    await until(() => lines(join(dir, "pid-1")).length === 1, "the run started");
    // The command says "half" after 2.5 s of silence, past the 1 s heartbeat timeout: still running (it waits for "go").
    const mid = await waitForMessage(fx.dev.url, agent, id, (m) => "progress" in m && m.progress !== null, 10_000) as unknown as Journaled;
    expect(mid.status).toBe("running");
    expect(mid.progress).toEqual({ done: "half" });
    writeFileSync(join(dir, "go"), "");
    const done = await waitForMessage(fx.dev.url, agent, id, (m) => m.status === "acknowledged", 10_000);
    expect(done.attempts).toBe(1);
    expect(done.reply?.trim()).toBe("finished");
  });

  it("a 10 MiB step result goes to R2 and a successor's baton step prints it back whole without running the command", async () => {
    const agent = uniqueAgent("bigstep");
    const { dir, command, env } = shellAgent([
      `baton step draft -- sh -c 'echo ran >> "$WORK/draft.log"; head -c 10485760 /dev/zero | tr "\\0" "a"' > "$WORK/draft-$BATON_ATTEMPT"`,
      `if [ ! -e "$WORK/crashed" ]; then touch "$WORK/crashed"; sleep 60; fi`,
      `wc -c < "$WORK/draft-$BATON_ATTEMPT"`,
    ].join("\n"));
    const a = startServe({ url: fx.dev.url, agent, tag: "a", command, sink: join(dir, "sink"), env });
    fx.started.push(a);
    await a.waitFor(/holder/);
    // b starts while a runs the message: it only has to stand by when a dies.
    const b = startServe({ url: fx.dev.url, agent, tag: "b", command, sink: join(dir, "sink"), env });
    fx.started.push(b);
    const id = await postMessage(fx.dev.url, agent, "go");
    await until(() => existsSync(join(dir, "crashed")), "the first attempt recorded its draft", 30_000);
    await b.waitFor(/standby/);
    killMachine(a.pid, dir, 1);
    const done = await waitForMessage(fx.dev.url, agent, id, (m) => m.status === "acknowledged", 30_000);
    expect(done.reply?.trim()).toBe(String(10 * 1024 * 1024));
    expect(lines(join(dir, "draft.log"))).toHaveLength(1);
    expect(readFileSync(join(dir, "draft-2"), "utf8")).toBe("a".repeat(10 * 1024 * 1024));
    const view = await getJson<Journaled>(`${fx.dev.url}/agents/${agent}/messages/${id}`);
    expect(view.steps[0]).toMatchObject({ name: "draft", status: "done", bytes: 10 * 1024 * 1024 + 2 });
  });

  it("the example examples/durable-agent.mjs survives kill -9 of its runner right after paying: one LLM call, one charge", () => {
    const r = spawnSync(process.execPath, [join(ROOT, "examples/durable-agent.mjs"), "demo", uniqueAgent("example"), "--json"], {
      env: { ...process.env, BATON_URL: fx.dev.url, BATON_TOKEN: DEV_TOKEN }, encoding: "utf8", timeout: 60_000,
    });
    expect(r.status, r.stderr).toBe(0);
    const finished = r.stdout.trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>).find((s) => s.step === "finished");
    expect(finished).toMatchObject({ status: "acknowledged", attempts: 2, llm_calls: 1, charges: 1, steps: ["plan:done@1", "charge:done@1"] });
    expect(finished!.reply).toMatch(/^a plan for "refund order 42"; paid, r-\d+-charge$/);
  });

  it("baton step outside a served command says so (exit 2) and records nothing", () => {
    const r = runBaton(["step", "plan", "--", "echo", "hi"], { BATON_URL: fx.dev.url, BATON_RUN_KEY: "", BATON_MESSAGE_TOKEN: "" });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/runs inside a command that `baton serve` started/);
    expect(r.stdout).toBe("");
  });
});
