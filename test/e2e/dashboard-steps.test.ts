// Durable steps on the dashboard, in a real browser (Debian's chromium through playwright-core)
// against a real `wrangler dev`, with real journals written by the client library: a message's
// steps (name, kind, done or begun, by which attempt, size), an effect begun by a runner that
// stopped shown as "outcome unknown — waiting for a person" with both resume commands, the parked
// reason in the card's work summary, and a running message's last heartbeat and progress, polled
// without a reload and inserted as text (progress is the runner's own JSON).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { MessageHandler } from "../../client/node.ts";
import { card, dashboardFixture, hang, horizontalOverflow, stillSameLoad } from "./dashboard-browser.ts";
import { until } from "./dashboard-person-api.ts";

const SHOTS = mkdtempSync(join(tmpdir(), "baton-shots-"));
const fx = dashboardFixture("dashboard-steps");
const open = (agent: string, machine: string, handler: MessageHandler) => fx.serve(agent, machine, handler);
const postMessage = (agent: string, text: string) => fx.http.postMessage(agent, text);

async function messageView(agent: string, id: number) {
  const res = await fx.http.api<{ status: string; waiting_on: string | null; steps: { name: string; bytes: number }[] }>("GET", `/agents/${agent}/messages/${id}`);
  expect(res.status).toBe(200);
  return res.body;
}

describe("durable steps on the dashboard", () => {
  it("shows a message's steps; an effect begun by a runner that stopped reads 'outcome unknown — waiting for a person' with both resume commands and the parked reason", async () => {
    const agent = "ledger";
    const page = await fx.openLive();
    let pays = 0;
    const handler: MessageHandler = async (_m, ctx) => {
      const plan = await ctx.step("plan", () => "x");
      await ctx.effect("pay", ({ signal }) => {
        pays++;
        return hang(signal);
      });
      return plan;
    };
    const a = open(agent, "till-a", handler);
    await until(() => a.status.kind === "holder", "till-a holds");
    const b = open(agent, "till-b", handler);
    await until(() => b.status.kind === "standby", "till-b stands by");
    const id = await postMessage(agent, "Charge the customer for order 77");
    await until(() => pays === 1, "till-a began paying");

    const ledger = card(page, agent);
    const message = ledger.locator(`.message[data-id="${id}"]`);
    // While it runs: its steps come by polling (a step changes no presence), the effect begun by this very attempt.
    await message.locator('[data-role="step"][data-name="pay"][data-state="begun"]', { hasText: "begun by attempt 1, running now" }).waitFor({ timeout: 15_000 });
    await message.locator('[data-role="run"]', { hasText: "running on till-a · attempt 1" }).waitFor();
    await ledger.locator('[data-role="work"] [data-role="running-item"]', { hasText: `#${id} on till-a` }).waitFor();

    await a.stop();
    await message.locator('[data-role="unknown-outcome"]').waitFor({ timeout: 20_000 });
    expect(pays).toBe(1);
    const view = await messageView(agent, id);
    expect(view.status).toBe("parked");
    expect(view.waiting_on).toBe("pay");

    expect(await message.getAttribute("data-status")).toBe("parked");
    expect(await message.getAttribute("data-waiting-on")).toBe("pay");
    const plan = message.locator('[data-role="step"][data-name="plan"]');
    expect(await plan.getAttribute("data-kind")).toBe("step");
    expect(await plan.getAttribute("data-status")).toBe("done");
    expect(await plan.getAttribute("data-attempt")).toBe("1");
    expect(await plan.locator('[data-role="step-status"]').textContent()).toBe("done by attempt 1");
    expect(await plan.locator('[data-role="bytes"]').textContent()).toBe(`${view.steps.find((s) => s.name === "plan")!.bytes} B`);
    expect(await plan.locator(".step-name").textContent()).toBe("plan");
    const pay = message.locator('[data-role="step"][data-name="pay"]');
    expect(await pay.getAttribute("data-kind")).toBe("effect");
    expect(await pay.getAttribute("data-status")).toBe("intent");
    expect(await pay.getAttribute("data-state")).toBe("unknown");
    expect(await pay.locator('[data-role="step-status"]').textContent()).toBe("begun by attempt 1 · outcome unknown — waiting for a person");
    await expect(pay.locator('[data-role="bytes"]').count()).resolves.toBe(0);
    expect(await message.locator('[data-role="steps"] [data-role="step"]').evaluateAll((rows) => rows.map((r) => r.getAttribute("data-name")))).toEqual(["plan", "pay"]);

    const question = message.locator('[data-role="unknown-outcome"]');
    expect(await question.locator("strong").textContent()).toBe("Did pay happen?");
    expect(await question.locator('[data-role="resume-done"]').textContent()).toBe(`baton resume ${agent} ${id} --done`);
    expect(await question.locator('[data-role="resume-redo"]').textContent()).toBe(`baton resume ${agent} ${id} --redo`);

    // The card's summary says why it is parked.
    const parked = ledger.locator(`[data-role="work"] [data-role="parked-item"][data-id="${id}"]`);
    await parked.waitFor();
    expect(await parked.locator('[data-role="park-reason"]').textContent()).toBe("outcome unknown: step pay");
    // The row below asks the question with both answers, so the summary does not repeat them.
    await expect.poll(() => parked.locator("code").count()).toBe(0);
    await ledger.locator('[data-role="work"] .chip[data-status="parked"]', { hasText: "1 parked" }).waitFor();
    await expect(ledger.locator('[data-role="work"] [data-role="running-item"]').count()).resolves.toBe(0);

    await page.setViewportSize({ width: 390, height: 844 });
    expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);
    await ledger.screenshot({ path: join(SHOTS, "dashboard-steps-parked.png") });
    expect(await stillSameLoad(page)).toBe(true);
    await b.stop();
    await page.close();
  });

  it("a running message shows its last heartbeat's age and progress, refreshed without a reload and inserted as text", async () => {
    const agent = "cruncher";
    const page = await fx.openLive();
    const first = { stage: `<img src=x onerror="window.pwned=1">`, done: 40 };
    const second = { stage: "indexing <b>shards</b>", done: 80 };
    let beats = 0;
    let next!: () => void;
    const more = new Promise<void>((r) => (next = r));
    const handler: MessageHandler = async (_m, ctx) => {
      await ctx.heartbeat(first);
      beats++;
      await Promise.race([more, hang(ctx.signal)]);
      await ctx.heartbeat(second);
      beats++;
      return hang(ctx.signal);
    };
    const h = open(agent, "gpu-box", handler);
    await until(() => h.status.kind === "holder", "gpu-box holds");
    const id = await postMessage(agent, "Re-index the archive");
    await until(() => beats === 1, "the first heartbeat");

    const cruncher = card(page, agent);
    const run = cruncher.locator(`.message[data-id="${id}"] [data-role="run"]`);
    await run.locator('[data-role="progress"]', { hasText: '"done":40' }).waitFor({ timeout: 15_000 });
    expect(await run.locator('[data-role="progress"]').textContent()).toBe(JSON.stringify(first));
    expect(await run.locator('[data-role="heartbeat"]').textContent()).toMatch(/^ · heartbeat \d+s ago$/);
    expect(await run.textContent()).toMatch(/^running on gpu-box · attempt 1 · heartbeat \d+s ago · progress /);
    await cruncher.locator(`[data-role="work"] [data-role="running-item"][data-id="${id}"] [data-role="heartbeat"]`, { hasText: /heartbeat \d+s ago/ }).waitFor();
    // The runner's JSON stays text: no element made from it, nothing run.
    await expect(cruncher.locator("img, b").count()).resolves.toBe(0);

    next();
    await until(() => beats === 2, "the second heartbeat");
    await run.locator('[data-role="progress"]', { hasText: '"done":80' }).waitFor({ timeout: 15_000 });
    expect(await run.locator('[data-role="progress"]').textContent()).toBe(JSON.stringify(second));
    await expect(cruncher.locator("img, b").count()).resolves.toBe(0);
    expect(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned)).toBeUndefined();
    await cruncher.screenshot({ path: join(SHOTS, "dashboard-steps-running.png") });
    expect(await stillSameLoad(page)).toBe(true);
    await h.stop();
    await page.close();
    console.log(`screenshots in ${SHOTS}`);
  });
});
