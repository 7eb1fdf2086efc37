// A person in the loop through the client library, end to end against real `wrangler dev`:
// ctx.ask parks the message and, once approved, returns the answer to the handler run again from
// the top; a run's own record is never an answer; an effect a person approves runs once, for what
// was approved last (`baton effect --approve` too); a deadline with approve resumes by itself.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { serve, type MessageHandler, type PersonAnswer, type ServeHandle } from "../../client/node.ts";
import { errorOf, shellAgent } from "./person-helpers.ts";
import { postMessage, runBaton, sharedServeFixture, startServe, uniqueAgent, waitForMessage } from "./serve-helpers.ts";
import { DEV_TOKEN } from "./wrangler-dev.ts";

const fx = sharedServeFixture();

describe("a person in the loop through the client library", () => {
  const handles: ServeHandle[] = [];

  it("ctx.ask parks the message; approved, the handler runs again from the top and ask returns the answer", async () => {
    const agent = uniqueAgent("libask");
    const calls: string[] = [];
    const handler: MessageHandler = async (m, ctx) => {
      const plan = await ctx.step("plan", () => (calls.push("plan"), "the plan"));
      const answer: PersonAnswer = await ctx.ask(`Run ${plan} for ${m.text}?`, { deadlineSeconds: 600 });
      calls.push(`answered ${answer.choice}`);
      return `${answer.choice}: ${answer.text ?? ""}`;
    };
    handles.push(serve(agent, handler, { url: fx.dev.url, token: DEV_TOKEN, machine: "a" }));
    const id = await postMessage(fx.dev.url, agent, "the migration");
    const parked = await waitForMessage(fx.dev.url, agent, id, (m) => m.status === "parked", 20_000);
    expect((parked as unknown as { question: { text: string } }).question.text).toBe("Run the plan for the migration?");
    expect(runBaton(["approve", agent, String(id), "go ahead"], { BATON_URL: fx.dev.url }).code).toBe(0);
    const done = await waitForMessage(fx.dev.url, agent, id, (m) => m.status === "acknowledged", 20_000);
    expect(done.reply).toBe("approve: go ahead");
    expect(calls).toEqual(["plan", "answered approve"]);
    await Promise.all(handles.splice(0).map((h) => h.stop()));
  });

  it("a run's own record is never a person's answer: a step under ask: is refused, and an ask under a name a step holds fails the attempt saying so", async () => {
    const agent = uniqueAgent("libforge");
    expect((await fetch(`${fx.dev.url}/agents/${agent}/policy`, {
      method: "PUT", headers: { Authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" }, body: JSON.stringify({ max_attempts: 2 }),
    })).status).toBe(200);
    const refused: string[] = [];
    const forged = { choice: "apply", text: null, by: { account: "dev", token: "ana", via: "page" }, at: 1 };
    const handler: MessageHandler = async (m, ctx) => {
      await ctx.step("ask:1", () => forged).catch((error: Error) => refused.push(error.message));
      // The first attempt forges a record under the ask's name and fails; the next one asks.
      if (m.attempt === 1) await ctx.step("approval", () => forged).then(() => Promise.reject(new Error("fail once")));
      const answer = await ctx.ask("Apply?", { choices: ["apply", "hold"], name: "approval" });
      return `shipped: ${answer.choice}`;
    };
    handles.push(serve(agent, handler, { url: fx.dev.url, token: DEV_TOKEN, machine: "a" }));
    const id = await postMessage(fx.dev.url, agent, "deploy");
    const failed = await waitForMessage(fx.dev.url, agent, id, (m) => m.status === "failed", 20_000);
    expect(failed.reply).toBeNull();
    expect(errorOf(failed)).toMatch(/"approval" is recorded as a step, not as a person's answer/);
    expect(refused).toEqual([expect.stringMatching(/kept for a person's answers/), expect.stringMatching(/kept for a person's answers/)]);
    await Promise.all(handles.splice(0).map((h) => h.stop()));
  });

  it("ctx.ask inside an effect is refused at once, saying why; the effect's outcome is unknown, and a person answers that", async () => {
    const agent = uniqueAgent("libaskfx");
    const handler: MessageHandler = async (_m, ctx) => ctx.effect("charge", async () => (await ctx.ask("Charge the card?")).choice);
    handles.push(serve(agent, handler, { url: fx.dev.url, token: DEV_TOKEN, machine: "a" }));
    const id = await postMessage(fx.dev.url, agent, "charge");
    const parked = await waitForMessage(fx.dev.url, agent, id, (m) => m.status === "parked", 20_000);
    expect(parked).toMatchObject({ waiting_on: "charge", question: null, attempts: 1 });
    expect(errorOf(parked)).toMatch(/ask inside effect "charge": a question asked inside an effect could never be answered/);
    await Promise.all(handles.splice(0).map((h) => h.stop()));
  });

  it("$500 approved, the code then charges $5,000: the coordinator refuses and asks again with the new arguments; the card is charged once, for what the person approved last", async () => {
    const agent = uniqueAgent("libpermit");
    const charged: number[] = [];
    const handler: MessageHandler = async (m, ctx) => {
      const amount = m.attempt === 1 ? 500 : 5000;
      const receipt = await ctx.effect("charge", ({ key }) => (charged.push(amount), { amount, key }), {
        approve: { question: `Charge $${amount} to card 4242?`, args: { card: "4242", amount } },
      });
      return `charged ${receipt.amount}`;
    };
    handles.push(serve(agent, handler, { url: fx.dev.url, token: DEV_TOKEN, machine: "a" }));
    const id = await postMessage(fx.dev.url, agent, "pay the invoice");
    const questionOf = (v: object) => (v as { question: { text: string; approve: { args: string; digest: string } } }).question;
    const first = await waitForMessage(fx.dev.url, agent, id, (m) => m.status === "parked", 20_000);
    expect(questionOf(first)).toMatchObject({ text: "Charge $500 to card 4242?", approve: { args: '{"amount":500,"card":"4242"}' } });
    const shown = runBaton(["show", agent, String(id)], { BATON_URL: fx.dev.url });
    expect(shown.stdout).toContain(`approves    effect charge with {"amount":500,"card":"4242"} (sha256 ${questionOf(first).approve.digest}), once`);
    expect(runBaton(["approve", agent, String(id)], { BATON_URL: fx.dev.url }).code).toBe(0);
    const again = await waitForMessage(fx.dev.url, agent, id, (m) => m.status === "parked" && m.attempts === 2, 20_000);
    expect(questionOf(again)).toMatchObject({ text: "Charge $5000 to card 4242?", approve: { args: '{"amount":5000,"card":"4242"}' } });
    expect(charged).toEqual([]);
    expect(runBaton(["approve", agent, String(id)], { BATON_URL: fx.dev.url }).code).toBe(0);
    const done = await waitForMessage(fx.dev.url, agent, id, (m) => m.status === "acknowledged", 20_000);
    expect(done.reply).toBe("charged 5000");
    expect(charged).toEqual([5000]);
    await Promise.all(handles.splice(0).map((h) => h.stop()));
  });

  it("baton effect --approve parks with the question (exit 75); approved, COMMAND runs once; changed --args ask again", async () => {
    const agent = uniqueAgent("cliapprove");
    const { dir, command, env } = shellAgent([
      `amount=$(cat "$WORK/amount" 2>/dev/null || echo 500)`,
      `baton effect charge --approve "Charge \\$$amount?" --args "{\\"amount\\":$amount}" -- sh -c "echo charged-$amount >> $WORK/charges; echo ok-$amount"`,
    ].join("\n"));
    const a = startServe({ url: fx.dev.url, agent, tag: "a", command, sink: join(dir, "sink"), env });
    fx.started.push(a);
    await a.waitFor(/holder/);
    const id = await postMessage(fx.dev.url, agent, "pay");
    const parked = await waitForMessage(fx.dev.url, agent, id, (m) => m.status === "parked", 20_000);
    expect((parked as unknown as { question: { text: string; approve: { args: string } } }).question).toMatchObject({ text: "Charge $500?", approve: { args: '{"amount":500}' } });
    writeFileSync(join(dir, "amount"), "700\n");
    expect(runBaton(["approve", agent, String(id)], { BATON_URL: fx.dev.url }).code).toBe(0);
    const asked = await waitForMessage(fx.dev.url, agent, id, (m) => m.status === "parked" && m.attempts === 2, 20_000);
    expect((asked as unknown as { question: { approve: { args: string } } }).question.approve.args).toBe('{"amount":700}');
    expect(runBaton(["approve", agent, String(id)], { BATON_URL: fx.dev.url }).code).toBe(0);
    const done = await waitForMessage(fx.dev.url, agent, id, (m) => m.status === "acknowledged", 20_000);
    expect(done.reply?.trim()).toBe("ok-700");
    expect(readFileSync(join(dir, "charges"), "utf8")).toBe("charged-700\n");
  });

  it("a question whose deadline approves resumes by itself, recorded as answered by the deadline", async () => {
    const agent = uniqueAgent("libdeadline");
    const handler: MessageHandler = async (_m, ctx) => {
      const answer = await ctx.ask("Renew the certificate?", { deadlineSeconds: 1, onDeadline: "approve" });
      return `${answer.choice} by ${answer.by.via}`;
    };
    handles.push(serve(agent, handler, { url: fx.dev.url, token: DEV_TOKEN, machine: "a" }));
    const id = await postMessage(fx.dev.url, agent, "renew");
    const done = await waitForMessage(fx.dev.url, agent, id, (m) => m.status === "acknowledged", 20_000);
    expect(done.reply).toBe("approve by deadline");
    await Promise.all(handles.splice(0).map((h) => h.stop()));
  });
});
