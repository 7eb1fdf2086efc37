// An operator's controls on the dashboard, in a real browser (Debian's chromium through
// playwright-core) against a real `wrangler dev`, with real runners of the client library: pause and
// drain behind an in-page confirmation, a failed message retried, pool runs named by runner, and a
// read-only token (by /whoami, and by its scope on the coordinator) sees none of the buttons.
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { MessageHandler } from "../../client/node.ts";
import { ask, card, dashboardFixture, horizontalOverflow, screenshotDir, stillSameLoad } from "./dashboard-browser.ts";
import { dashboardToken } from "./dashboard-accounts.ts";
import { until } from "./dashboard-person-api.ts";

const ACCOUNT = "dashboard-person-controls";
const SHOTS = screenshotDir();
/** The account's read-only token ("wall", scope read). */
const READER = dashboardToken(ACCOUNT, "wall");
const fx = dashboardFixture(ACCOUNT);
const open = (agent: string, machine: string, handler: MessageHandler) => fx.serve(agent, machine, handler);

describe("an operator's controls on the dashboard", () => {
  it("pause and drain from the card happen only after their in-page confirmation; Cancel changes nothing", async () => {
    const page = await fx.openLive();
    const agent = "pausable";
    const replies: string[] = [];
    open(agent, "desk-a", async (m) => (replies.push(m.text), `did ${m.text}`));
    open(agent, "desk-b", async (m) => (replies.push(m.text), `did ${m.text}`));
    const c = card(page, agent);
    await c.locator('[data-role="standby"]').waitFor();
    await c.scrollIntoViewIfNeeded();
    const dialogs: string[] = [];
    page.on("dialog", (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });

    await c.locator('[data-action="pause"]').click();
    const confirm = c.locator('[data-role="confirm"][data-for="pause"]');
    await confirm.waitFor();
    expect(await confirm.locator(".prompt").textContent()).toContain(`Pause ${agent}? Nothing is handed out until it is unpaused`);
    expect(await page.evaluate(() => document.activeElement?.getAttribute("data-role"))).toBe("confirm-no");
    await confirm.locator('[data-role="confirm-no"]').click();
    await confirm.waitFor({ state: "detached" });
    expect((await fx.http.presence(agent)).controls.paused).toBe(false);

    await c.locator('[data-action="pause"]').click();
    await confirm.locator('[data-role="confirm-yes"]').click();
    await until(async () => (await fx.http.presence(agent)).controls.paused, "paused");
    await c.locator('header [data-role="paused"]').waitFor();
    await c.locator('[data-role="action-result"]', { hasText: "paused" }).waitFor();
    await c.locator('[data-action="unpause"]').waitFor();
    const id = await fx.http.postMessage(agent, "while paused");
    await c.locator(`.message[data-id="${id}"] [data-role="waiting"]`, { hasText: "paused" }).waitFor();
    expect(replies).toEqual([]);

    await c.locator('[data-action="drain"]', { hasText: "Drain desk-a" }).click();
    await c.locator('[data-role="confirm"][data-for="drain"] [data-role="confirm-yes"]').click();
    await until(async () => (await fx.http.presence(agent)).controls.drained.some((d) => d.machine === "desk-a"), "desk-a drained");
    await c.locator('[data-role="drained-note"] [data-machine="desk-a"]').waitFor();
    await c.locator('[data-action="undrain"]', { hasText: "Undrain desk-a" }).click();
    await c.locator('[data-role="confirm"][data-for="undrain"] [data-role="confirm-yes"]').click();
    await until(async () => (await fx.http.presence(agent)).controls.drained.length === 0, "desk-a undrained");

    await c.locator('[data-action="unpause"]').click();
    await c.locator('[data-role="confirm"][data-for="unpause"] [data-role="confirm-yes"]').click();
    await until(async () => !(await fx.http.presence(agent)).controls.paused, "unpaused");
    await fx.http.waitForStatus(agent, id, "acknowledged");
    expect(dialogs).toEqual([]);
    await page.setViewportSize({ width: 390, height: 844 });
    await c.locator('[data-action="pause"]').click();
    await confirm.waitFor();
    expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);
    await c.screenshot({ path: join(SHOTS, "dashboard-confirm-phone.png") });
    await confirm.locator('[data-role="confirm-no"]').click();
    expect((await fx.http.presence(agent)).controls.paused).toBe(false);
    expect(await stillSameLoad(page)).toBe(true);
    await page.close();
  });

  it("a failed message is retried from the page behind its confirmation and then runs to its reply as attempt 2", async () => {
    const page = await fx.openLive();
    const agent = "flaky";
    expect((await fx.http.api("PUT", `/agents/${agent}/policy`, { max_attempts: 1 })).status).toBe(200);
    let broken = true;
    const h = open(agent, "flaky-box", async (m) => {
      if (broken) throw new Error("the upstream API said 503");
      return `fetched ${m.text}`;
    });
    await until(() => h.status.kind === "holder", "flaky-box holds");
    const id = await fx.http.postMessage(agent, "the report");
    await fx.http.waitForStatus(agent, id, "failed");
    await card(page, agent).scrollIntoViewIfNeeded();
    const row = card(page, agent).locator(`.message[data-id="${id}"]`);
    await row.locator('.chip[data-status="failed"]').waitFor();
    // Presence says why it failed; the row shows it with its Retry.
    await card(page, agent).locator(`[data-role="work"] [data-role="failed-item"][data-id="${id}"]`, { hasText: "the upstream API said 503" }).waitFor();
    broken = false;
    await row.locator('[data-action="retry"]').click();
    await row.locator('[data-role="confirm"][data-for="retry"] .prompt', { hasText: `Retry #${id}? It is queued again with a fresh set of tries; its attempt numbers go on.` }).waitFor();
    expect((await fx.http.view(agent, id)).status).toBe("failed");
    await row.locator('[data-role="confirm"] [data-role="confirm-yes"]').click();
    const done = await fx.http.waitForStatus(agent, id, "acknowledged");
    expect(done.reply).toBe("fetched the report");
    expect(done.answers).toMatchObject([{ choice: "retry", via: "page" }]);
    // Its attempt numbers went on: the run after the retry was attempt 2, and the row says so.
    expect(done).toMatchObject({ attempts: 2, retried_after: 1 });
    await row.locator('[data-role="reply"]', { hasText: "fetched the report" }).waitFor();
    await row.locator(".attempts", { hasText: "attempt 2 (retried after 1)" }).waitFor();
    await page.close();
  });

  it("in pool mode each running message names the runner that runs it: machine and claim", async () => {
    const page = await fx.openLive();
    const agent = "pooled";
    expect((await fx.http.api("PUT", `/agents/${agent}/policy`, { mode: "pool", max_running: 2 })).status).toBe(200);
    const release: (() => void)[] = [];
    const handler: MessageHandler = (_m, ctx) => new Promise((resolve, reject) => {
      release.push(() => resolve("ok"));
      ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason));
    });
    open(agent, "pool-a", handler);
    open(agent, "pool-b", handler);
    const first = await fx.http.postMessage(agent, "job one");
    const second = await fx.http.postMessage(agent, "job two");
    const running = await until(async () => {
      const p = await fx.http.presence(agent);
      return p.work.running.length === 2 ? p.work.running : null;
    }, "both run");
    expect(new Set(running.map((r) => r.machine))).toEqual(new Set(["pool-a", "pool-b"]));
    const c = card(page, agent);
    await c.scrollIntoViewIfNeeded();
    for (const r of running) {
      const item = c.locator(`[data-role="work"] [data-role="running-item"][data-id="${r.id}"]`);
      await item.waitFor();
      expect(await item.textContent()).toContain(`#${r.id} on ${r.machine} (claim #${r.claim_seq})`);
      await c.locator(`.message[data-id="${r.id}"] [data-role="run"]`, { hasText: `running on ${r.machine}, claim #${r.claim_seq} · attempt 1` }).waitFor();
    }
    for (const r of release.splice(0)) r();
    await fx.http.waitForStatus(agent, first, "acknowledged");
    await fx.http.waitForStatus(agent, second, "acknowledged");
    await page.close();
  });

  it("a token that /whoami says is read-only sees the questions and every card, and no button that changes anything (whoami answered in the browser)", async () => {
    const agent = "watched";
    open(agent, "watched-box", async (_m, ctx) => `ok ${(await ctx.ask("Proceed?")).choice}`);
    const id = await fx.http.postMessage(agent, "needs an eye");
    await fx.http.waitForStatus(agent, id, "parked");
    const page = await fx.context.newPage();
    await page.route("**/whoami", (route) => route.fulfill({ status: 200, contentType: "application/json", body: JSON.stringify({ account: ACCOUNT, token: "wall", scopes: ["read"] }) }));
    await page.goto(fx.url);
    await page.locator('#status[data-state="live"]', { hasText: "read-only token" }).waitFor();
    const item = ask(page, agent, id);
    await item.locator('[data-role="question"]', { hasText: "Proceed?" }).waitFor();
    await item.locator('[data-role="answer-commands"]', { hasText: `baton approve ${agent} ${id} [TEXT]` }).waitFor();
    await card(page, agent).locator('[data-role="holder"]').waitFor();
    await expect(page.locator('[data-action], [data-role="answer-form"], [data-role="send"]:visible, [data-role="actions"]').count()).resolves.toBe(0);
    await expect(page.locator("#agents button:not([data-role=open-card]):visible, #person button:visible").count()).resolves.toBe(0);
    await page.close();
    expect((await fx.http.api("POST", `/agents/${agent}/messages/${id}/approve`, {})).status).toBe(200);
    await fx.http.waitForStatus(agent, id, "acknowledged");
  });

  it("a read-only token (scope read, from BATON_TOKENS) sees no buttons", async () => {
    const agent = "scoped-watch";
    const runner = open(agent, "scoped-box", async (_m, ctx) => `ok ${(await ctx.ask("Proceed?")).choice}`);
    const id = await fx.http.postMessage(agent, "look only");
    const page = await fx.context.newPage();
    await page.goto(fx.url);
    await page.evaluate((t) => localStorage.setItem("baton.token", t), READER);
    await page.reload();
    await page.locator('#status[data-state="live"]', { hasText: "read-only token" }).waitFor();
    await ask(page, agent, id).locator('[data-role="question"]', { hasText: "Proceed?" }).waitFor();
    await card(page, agent).locator('[data-role="holder"]').waitFor();
    await expect(page.locator('[data-action], [data-role="answer-form"], [data-role="send"]:visible, [data-role="actions"]').count()).resolves.toBe(0);
    await page.evaluate(() => localStorage.removeItem("baton.token"));
    await page.close();
    await runner.stop();
  });
});
