// Durable steps through the client library end to end against a real `wrangler dev`: ctx.step and
// ctx.effect replay what the first runner recorded to the one that takes over, large results and
// checkpoints go through R2, an effect begun by a runner that stopped parks for a person, and
// concurrent or failed effects are never run twice or silently finished.
import { describe, expect, it } from "vitest";
import { serve, type MessageHandler, type ServeHandle } from "../../client/node.ts";
import { until, type Journaled } from "./durable-helpers.ts";
import { postMessage, runBaton, sharedServeFixture, uniqueAgent, waitForMessage } from "./serve-helpers.ts";
import { advanceClock, DEV_TOKEN } from "./wrangler-dev.ts";
import { accountTag } from "../../worker/wire/protocol.ts";

const fx = sharedServeFixture();

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
