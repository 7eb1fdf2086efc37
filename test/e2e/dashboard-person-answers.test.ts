// A person's answers on the dashboard that decide more than one run, in a real browser (Debian's
// chromium through playwright-core) against a real `wrangler dev`, with real runners of the client
// library: a question two people decide (one on the page, one with the CLI), an effect two people
// must approve whose permit a standby spends, Reject behind its confirmation ending the message for
// good, and an unknown outcome answered Done from the page.
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import type { MessageHandler } from "../../client/node.ts";
import { ask, card, dashboardFixture, hang } from "./dashboard-browser.ts";
import { dashboardToken } from "./dashboard-accounts.ts";
import { until } from "./dashboard-person-api.ts";
import { BIN } from "./serve-helpers.ts";
import { ROOT } from "./wrangler-dev.ts";

const ACCOUNT = "dashboard-person-answers";
/** A second person (scope answer) beside the account's default token, for what two people decide. */
const BOB = dashboardToken(ACCOUNT, "bob");
const fx = dashboardFixture(ACCOUNT);
const open = (agent: string, machine: string, handler: MessageHandler) => fx.serve(agent, machine, handler);

describe("a person's answers on the dashboard", () => {
  it("a question two people decide: the page shows who has and has not answered; approved from the page it stays parked (1 of 2), approved by a second person from the CLI the run goes on", async () => {
    const page = await fx.openLive();
    const agent = "two-keys";
    const handler: MessageHandler = async (_m, ctx) => {
      const answer = await ctx.ask("Charge $500 to card 4242?", { needs: 2, approvers: ["default", "bob", "carol"] });
      return `${answer.choice} by ${answer.by.token}`;
    };
    open(agent, "two-keys-box", handler);
    const id = await fx.http.postMessage(agent, "charge");
    const item = ask(page, agent, id);
    await item.locator('[data-role="quorum-count"]', { hasText: "0 of 2 approvals" }).waitFor();
    expect(await item.locator('[data-role="not-answered"]').allTextContents()).toEqual(["default: not yet", "bob: not yet", "carol: not yet"]);

    await item.locator('button[data-choice="approve"]').click();
    await item.locator('[data-role="answer-status"]', { hasText: "recorded, 1 of 2 approvals; waiting for bob, carol" }).waitFor();
    await item.locator('[data-role="quorum-count"]', { hasText: "1 of 2 approvals" }).waitFor();
    expect(await item.locator('[data-role="answered"]').getAttribute("data-token")).toBe("default");
    expect(await item.locator('[data-role="not-answered"]').allTextContents()).toEqual(["bob: not yet", "carol: not yet"]);
    expect((await fx.http.view(agent, id)).status).toBe("parked");

    const baton = (...args: string[]) => spawnSync(process.execPath, [BIN, ...args], {
      cwd: ROOT, env: { ...process.env, BATON_URL: fx.url, BATON_TOKEN: BOB }, encoding: "utf8", timeout: 30_000,
    });
    const shown = baton("show", agent, String(id));
    expect(shown.stdout).toMatch(/\n {2}needs {7}2 approvals from distinct people \(1 so far: approve by the unnamed token\), any one reject rejects; waiting for token bob, token carol\n/);
    const cli = baton("approve", agent, String(id));
    expect(cli.status, cli.stderr).toBe(0);
    expect(cli.stdout).toMatch(new RegExp(`^approved message ${id} of ${agent}: (queued|running)`));
    const done = await fx.http.waitForStatus(agent, id, "acknowledged");
    expect(done.reply).toBe("approve by bob");
    expect(done.answers.map((a) => [a.token, a.choice, a.via])).toEqual([["default", "approve", "page"], ["bob", "approve", "cli"]]);
    await item.waitFor({ state: "detached" });
    await page.close();
  });

  it("an effect two people must approve: approved from the page it stays parked; the machine that asked leaves; approved by a second person from the CLI, the standby spends the permit and the effect runs once", async () => {
    const page = await fx.openLive();
    const agent = "two-keys-effect";
    let charged = 0;
    const handler = (machine: string): MessageHandler => async (_m, ctx) => {
      await ctx.effect("charge", () => { charged += 1; }, { approve: { question: "Charge $500 to card 4242?", args: { card: "4242", amount: 500 }, needs: 2, approvers: ["default", "bob"] } });
      return `charged on ${machine}`;
    };
    const asker = open(agent, "asker-box", handler("asker-box"));
    await until(async () => (await fx.http.presence(agent)).work !== undefined, "the asker serves");
    const id = await fx.http.postMessage(agent, "charge");
    const item = ask(page, agent, id);
    await item.locator('[data-role="quorum-count"]', { hasText: "0 of 2 approvals" }).waitFor();
    expect(await item.textContent()).toContain('{"amount":500,"card":"4242"}');
    await item.locator('button[data-choice="approve"]').click();
    await item.locator('[data-role="answer-status"]', { hasText: "recorded, 1 of 2 approvals; waiting for bob" }).waitFor();
    expect((await fx.http.view(agent, id)).status).toBe("parked");

    await asker.stop();
    open(agent, "standby-box", handler("standby-box"));
    const cli = spawnSync(process.execPath, [BIN, "approve", agent, String(id)], {
      cwd: ROOT, env: { ...process.env, BATON_URL: fx.url, BATON_TOKEN: BOB }, encoding: "utf8", timeout: 30_000,
    });
    expect(cli.status, cli.stderr).toBe(0);
    const done = await fx.http.waitForStatus(agent, id, "acknowledged");
    expect(done.reply).toBe("charged on standby-box");
    expect(charged).toBe(1);
    const permits = (await fx.http.api<{ permits: { effect: string; spent_token: number | null; by: { token: string; via: string } }[] }>("GET", `/agents/${agent}/messages/${id}`)).body.permits;
    expect(permits).toEqual([expect.objectContaining({ effect: "charge", spent_token: expect.any(Number), by: expect.objectContaining({ token: "bob", via: "cli" }) })]);
    await page.close();
  });

  it("Reject from the page asks first (Cancel changes nothing), then ends the message as rejected: it never runs again", async () => {
    const page = await fx.openLive();
    const agent = "janitor";
    const runs: string[] = [];
    const handler: MessageHandler = async (m, ctx) => {
      runs.push(m.text);
      await ctx.ask("Delete the old bucket?");
      return "deleted";
    };
    open(agent, "janitor-box", handler);
    const id = await fx.http.postMessage(agent, "clean up");
    const item = ask(page, agent, id);
    await item.waitFor();
    expect(await item.getAttribute("data-kind")).toBe("question");
    await item.locator('[data-role="answer-text"]').fill("not this week");
    await item.locator('button[data-choice="reject"]').click();
    // Irreversible, so it asks first, in place, as Pause and Stop do; Cancel leaves it waiting.
    const confirm = item.locator('[data-role="confirm"][data-for="reject"]');
    expect(await confirm.locator(".prompt").textContent()).toBe(`Reject #${id} of ${agent}? The message ends and never runs again; this cannot be undone.`);
    expect(await page.evaluate(() => document.activeElement?.getAttribute("data-role"))).toBe("confirm-no");
    await confirm.locator('[data-role="confirm-no"]').click();
    await confirm.waitFor({ state: "detached" });
    expect((await fx.http.view(agent, id)).status).toBe("parked");
    expect(await item.locator('[data-role="answer-text"]').inputValue()).toBe("not this week");
    await item.locator('button[data-choice="reject"]').click();
    await item.locator('[data-role="confirm"][data-for="reject"] [data-role="confirm-yes"]').click();
    const rejected = await fx.http.waitForStatus(agent, id, "rejected");
    expect(rejected.answers).toMatchObject([{ choice: "reject", text: "not this week", via: "page" }]);
    await item.waitFor({ state: "detached" });
    // Full messages (with their answers) are fetched only for cards on screen.
    await card(page, agent).scrollIntoViewIfNeeded();
    const row = card(page, agent).locator(`.message[data-id="${id}"]`);
    await row.locator('.chip[data-status="rejected"]').waitFor();
    await row.locator('[data-role="answer-record"][data-choice="reject"][data-via="page"]').waitFor();
    // The runner takes its messages in order: once a later one has run, a rejected one handed out again would have run first.
    await fx.http.postMessage(agent, "the next one");
    await until(() => runs.includes("the next one"), "the next message ran");
    expect(runs).toEqual(["clean up", "the next one"]);
    await page.close();
  });

  it("an effect whose outcome is unknown is listed with Done and Redo; Done with text from the page records it as the outcome and the message finishes", async () => {
    const page = await fx.openLive();
    const agent = "cashier";
    let pays = 0;
    const handler: MessageHandler = async (_m, ctx) => {
      const receipt = await ctx.effect("pay", ({ signal }) => {
        pays++;
        return hang(signal);
      });
      return `paid: ${String(receipt)}`;
    };
    const a = open(agent, "till-a", handler);
    await until(() => a.status.kind === "holder", "till-a holds");
    const id = await fx.http.postMessage(agent, "charge order 77");
    await until(() => pays === 1, "till-a began paying");
    await a.stop();
    open(agent, "till-b", handler);
    const item = ask(page, agent, id);
    await item.waitFor({ timeout: 30_000 });
    expect(await item.getAttribute("data-kind")).toBe("unknown");
    expect(await item.locator('[data-role="question"] strong').textContent()).toBe("Did pay happen?");
    expect(await item.locator('button[data-action="answer"]').allTextContents()).toEqual(["Done", "Redo"]);
    await item.locator('[data-role="answer-text"]').fill("rcpt-42");
    await item.locator('button[data-choice="done"]').click();
    const done = await fx.http.waitForStatus(agent, id, "acknowledged");
    expect(done.reply).toBe("paid: rcpt-42");
    expect(pays).toBe(1);
    expect(done.answers).toMatchObject([{ choice: "done", text: "rcpt-42", via: "page" }]);
    await item.waitFor({ state: "detached" });
    await page.close();
  });

});
