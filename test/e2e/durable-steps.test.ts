// Durable steps end to end: real `baton serve` processes and the client library against a real
// `wrangler dev`. A runner killed with -9 after a step and an effect: its successor replays both
// (the step's command and the effect ran once). Killed inside an effect: the successor parks the
// message as "outcome unknown", a person answers `baton resume --done`, and the effect never ran
// twice. serve heartbeats for a command that is silent for longer than the heartbeat timeout.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { serve, type MessageHandler, type ServeHandle } from "../../client/node.ts";
import { BIN, authHeaders, getJson, postMessage, runBaton, sharedServeFixture, startServe, uniqueAgent, waitForMessage } from "./serve-helpers.ts";
import { advanceClock, DEV_TOKEN, ROOT } from "./wrangler-dev.ts";
import { accountTag } from "../../worker/wire/protocol.ts";

const fx = sharedServeFixture();

interface Journaled {
  id: number;
  status: string;
  attempts: number;
  reply: string | null;
  waiting_on: string | null;
  progress: unknown;
  steps: { name: string; kind: string; status: string; attempt: number; bytes: number }[];
}

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

async function until(check: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`never: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
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
    const b = startServe({ url: fx.dev.url, agent, tag: "b", command, sink: join(dir, "sink"), env });
    fx.started.push(b);
    await b.waitFor(/standby/);
    const id = await postMessage(fx.dev.url, agent, "go");
    await until(() => existsSync(join(dir, "crashed")), "the first attempt recorded its step and paid, then hung");
    const during = await getJson<Journaled>(`${fx.dev.url}/agents/${agent}/messages/${id}`);
    expect(during.steps.map((s) => [s.name, s.kind, s.status, s.attempt])).toEqual([["plan", "step", "done", 1], ["pay", "effect", "done", 1]]);
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
    const b = startServe({ url: fx.dev.url, agent, tag: "b", command, sink: join(dir, "sink"), env });
    fx.started.push(b);
    await b.waitFor(/standby/);
    const id = await postMessage(fx.dev.url, agent, "go");
    await until(() => lines(join(dir, "pay.log")).length === 1, "the first attempt began paying");
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
    const { dir, command, env } = shellAgent(`sleep 2.5\nbaton heartbeat '{"done":"half"}' >&2\nsleep 1\necho finished`);
    const a = startServe({ url: fx.dev.url, agent, tag: "a", command, sink: join(dir, "sink"), env });
    fx.started.push(a);
    await a.waitFor(/holder/);
    const id = await postMessage(fx.dev.url, agent, "go");
    await until(() => lines(join(dir, "pid-1")).length === 1, "the run started");
    // The command says "half" after 2.5 s of silence, past the 1 s heartbeat timeout: still running.
    const mid = await waitForMessage(fx.dev.url, agent, id, (m) => "progress" in m && m.progress !== null, 10_000) as unknown as Journaled;
    expect(mid.status).toBe("running");
    expect(mid.progress).toEqual({ done: "half" });
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
    const b = startServe({ url: fx.dev.url, agent, tag: "b", command, sink: join(dir, "sink"), env });
    fx.started.push(b);
    await b.waitFor(/standby/);
    const id = await postMessage(fx.dev.url, agent, "go");
    await until(() => existsSync(join(dir, "crashed")), "the first attempt recorded its draft", 30_000);
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

describe("durable steps through the client library", () => {
  const handles: ServeHandle[] = [];
  const open = (agent: string, machine: string, handler: MessageHandler) => {
    const h = serve(agent, handler, { url: fx.dev.url, token: DEV_TOKEN, machine });
    handles.push(h);
    return h;
  };

  it("ctx.step and ctx.effect return what the first runner recorded to the runner that takes over; fn ran once each", async () => {
    const agent = uniqueAgent("libsteps");
    let plans = 0;
    let pays = 0;
    const keys: string[] = [];
    let release!: () => void;
    const stuck = new Promise<void>((r) => (release = r));
    const handler = (machine: string): MessageHandler => async (_m, ctx) => {
      const plan = await ctx.step("plan", () => `plan by ${machine} (#${++plans})`);
      const receipt = await ctx.effect("pay", ({ key }) => {
        keys.push(key);
        return { receipt: ++pays, machine };
      });
      // stop() may abort a while its outcome is still being recorded: an abort listener added after that never fires.
      if (machine === "a") await Promise.race([stuck, new Promise((r) => (ctx.signal.aborted ? r(null) : ctx.signal.addEventListener("abort", r)))]);
      return `${plan} / ${JSON.stringify(receipt)}`;
    };
    const a = open(agent, "a", handler("a"));
    await until(() => a.status.kind === "holder", "a holds");
    const b = open(agent, "b", handler("b"));
    await until(() => b.status.kind === "standby", "b stands by");
    const id = await postMessage(fx.dev.url, agent, "go");
    await until(() => pays === 1, "a paid");
    await a.stop();
    release();
    const done = await waitForMessage(fx.dev.url, agent, id, (m) => m.status === "acknowledged", 20_000);
    expect(done.reply).toBe(`plan by a (#1) / {"receipt":1,"machine":"a"}`);
    expect([plans, pays]).toEqual([1, 1]);
    expect(keys).toEqual([`baton:${await accountTag("dev")}:${agent}:${id}:pay`]);
    await Promise.all(handles.splice(0).map((h) => h.stop()));
  });

  it("a step result of 2 MiB is kept in R2 and returned to the successor intact", async () => {
    const agent = uniqueAgent("libbig");
    // The object's clock stands still: encoding megabytes on a busy machine must not cost a runner its 2 s lease.
    await advanceClock(fx.dev.url, 0, { agent });
    let runs = 0;
    const big = { text: "q".repeat(2 * 1024 * 1024), n: 7 };
    let hold = true;
    const got: unknown[] = [];
    const handler: MessageHandler = async (_m, ctx) => {
      const value = await ctx.step("draft", () => (runs++, big));
      got.push(value);
      if (hold) await new Promise((r) => ctx.signal.addEventListener("abort", r));
      return String((value as typeof big).text.length);
    };
    const a = open(agent, "a", handler);
    await until(() => a.status.kind === "holder", "a holds");
    const b = open(agent, "b", handler);
    await until(() => b.status.kind === "standby", "b stands by");
    const id = await postMessage(fx.dev.url, agent, "go");
    await until(() => got.length === 1, "a recorded its draft");
    hold = false;
    await a.stop();
    const done = await waitForMessage(fx.dev.url, agent, id, (m) => m.status === "acknowledged", 20_000);
    expect(done.reply).toBe(String(2 * 1024 * 1024));
    expect(runs).toBe(1);
    expect(got[1]).toEqual(big);
    await Promise.all(handles.splice(0).map((h) => h.stop()));
  });

  it("an effect begun by a runner that stopped is never run again silently: the successor parks it for a person (ask)", async () => {
    const agent = uniqueAgent("libask");
    let pays = 0;
    const handler: MessageHandler = async (_m, ctx) => {
      const receipt = await ctx.effect("pay", ({ signal }) => {
        pays++;
        return new Promise((_r, reject) => signal.addEventListener("abort", () => reject(signal.reason)));
      });
      return String(receipt);
    };
    const a = open(agent, "a", handler);
    await until(() => a.status.kind === "holder", "a holds");
    const b = open(agent, "b", handler);
    await until(() => b.status.kind === "standby", "b stands by");
    const id = await postMessage(fx.dev.url, agent, "go");
    await until(() => pays === 1, "a began paying");
    await a.stop();
    const parked = await waitForMessage(fx.dev.url, agent, id, (m) => m.status === "parked", 20_000) as unknown as Journaled;
    expect(parked.waiting_on).toBe("pay");
    expect(pays).toBe(1);
    await Promise.all(handles.splice(0).map((h) => h.stop()));
  });

  it("a 2 MiB message checkpoint and a 3 MiB reply go through R2: the successor resumes from the checkpoint, send --wait prints the reply whole", async () => {
    const agent = uniqueAgent("libckpt");
    // The object's clock stands still: encoding megabytes on a busy machine must not cost a runner its 2 s lease.
    await advanceClock(fx.dev.url, 0, { agent });
    const seen: unknown[] = [];
    const chapters = "x".repeat(2 * 1024 * 1024);
    const handler: MessageHandler = async (_m, ctx) => {
      seen.push(ctx.messageCheckpoint);
      if (ctx.messageCheckpoint === null) {
        await ctx.saveMessageCheckpoint({ chapters });
        await new Promise((r) => ctx.signal.addEventListener("abort", r));
        return;
      }
      return "r".repeat(3 * 1024 * 1024);
    };
    const a = open(agent, "a", handler);
    await until(() => a.status.kind === "holder", "a holds");
    const b = open(agent, "b", handler);
    await until(() => b.status.kind === "standby", "b stands by");
    const id = await postMessage(fx.dev.url, agent, "go");
    const saved = await waitForMessage(fx.dev.url, agent, id, (m) => (m as { checkpoint_blob?: unknown }).checkpoint_blob != null, 20_000);
    expect(saved as unknown).toMatchObject({ checkpoint: null, checkpoint_blob: { bytes: JSON.stringify({ chapters }).length } });
    await a.stop();
    const done = await waitForMessage(fx.dev.url, agent, id, (m) => m.status === "acknowledged", 20_000);
    expect(done as unknown).toMatchObject({ reply: null, reply_blob: { bytes: 3 * 1024 * 1024 } });
    expect(seen).toEqual([null, { chapters }]);
    const show = runBaton(["show", agent, String(id)], { BATON_URL: fx.dev.url });
    expect(show.code).toBe(0);
    expect(show.stdout).toContain("r".repeat(1000));
    expect(show.stdout.length).toBeGreaterThan(3 * 1024 * 1024);
    await Promise.all(handles.splice(0).map((h) => h.stop()));
  });

  it("two concurrent calls of one effect run it once and both get its outcome", async () => {
    const agent = uniqueAgent("libonce");
    let pays = 0;
    const handler: MessageHandler = async (_m, ctx) => {
      const pay = () => ctx.effect("pay", async () => {
        pays++;
        await new Promise((r) => setTimeout(r, 100));
        return { receipt: pays };
      });
      const [one, two] = await Promise.all([pay(), pay()]);
      return JSON.stringify([one, two]);
    };
    open(agent, "a", handler);
    const id = await postMessage(fx.dev.url, agent, "go");
    const done = await waitForMessage(fx.dev.url, agent, id, (m) => m.status === "acknowledged", 20_000);
    expect(done.reply).toBe(JSON.stringify([{ receipt: 1 }, { receipt: 1 }]));
    expect(pays).toBe(1);
    await Promise.all(handles.splice(0).map((h) => h.stop()));
  });

  it("a handler that catches an effect's failure and replies anyway does not finish the message: it parks for a person", async () => {
    const agent = uniqueAgent("libcaught");
    let pays = 0;
    const handler: MessageHandler = async (_m, ctx) => {
      try {
        await ctx.effect("pay", () => {
          pays++;
          throw new Error("connection reset while charging");
        });
      } catch {
        return "could not pay, never mind";
      }
      return "paid";
    };
    open(agent, "a", handler);
    const id = await postMessage(fx.dev.url, agent, "go");
    const parked = await waitForMessage(fx.dev.url, agent, id, (m) => m.status === "parked", 20_000) as unknown as Journaled;
    expect(parked).toMatchObject({ waiting_on: "pay", reply: null });
    expect(pays).toBe(1);
    await Promise.all(handles.splice(0).map((h) => h.stop()));
  });

  it("message checkpoints land in call order: a large one still uploading never overwrites a later small one", async () => {
    const agent = uniqueAgent("libordered");
    const seen: unknown[] = [];
    const handler: MessageHandler = async (_m, ctx) => {
      seen.push(ctx.messageCheckpoint);
      if (ctx.messageCheckpoint !== null) return "resumed";
      const big = ctx.saveMessageCheckpoint({ big: "b".repeat(512 * 1024) });
      await ctx.saveMessageCheckpoint({ small: true });
      await big;
      await ctx.park();
    };
    open(agent, "a", handler);
    const id = await postMessage(fx.dev.url, agent, "go");
    await waitForMessage(fx.dev.url, agent, id, (m) => m.status === "parked", 20_000);
    expect(runBaton(["resume", agent, String(id)], { BATON_URL: fx.dev.url }).code).toBe(0);
    await waitForMessage(fx.dev.url, agent, id, (m) => m.status === "acknowledged", 20_000);
    expect(seen).toEqual([null, { small: true }]);
    await Promise.all(handles.splice(0).map((h) => h.stop()));
  });
});
