// The dashboard as an operator puts it on a wall, in a real browser (Debian's chromium through
// playwright-core) against a real `wrangler dev`, with a dozen agents served by the client
// library in mixed states: a holder with standbys, a preferred runner, nobody holding (a backlog
// nobody serves, every runner drained), paused, questions waiting for a person, an answered
// question, an effect whose outcome is unknown, a run going on, a failed message, a pool and an
// agent that joined a moment ago. At 1280 px the cards fill several columns; at 390 px nothing
// is wider than the screen; Reject, Pause and Stop each ask first in the same in-page way; a
// person's answer reads "question 1: …", not its journal name; "No standby" is never said when
// nobody holds the lease; a new agent's lease is a bar that reads; each card carries one small
// send button, not an open box. `UPDATE_SCREENSHOTS=1` writes docs/dashboard.png and
// docs/dashboard-phone.png from this scene; other runs write to a temp dir.
import { createHash } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import type { MessageHandler, ServeHandle } from "../../client/node.ts";
import { card, dashboardFixture, hang, horizontalOverflow } from "./dashboard-browser.ts";
import { until } from "./dashboard-person-api.ts";
import { ROOT } from "./wrangler-dev.ts";

const SHOTS = process.env.UPDATE_SCREENSHOTS === "1" ? join(ROOT, "docs") : mkdtempSync(join(tmpdir(), "baton-shots-"));
// As `baton ask "Ship v7 to production?"` names its answer in the journal.
const RELEASE_QUESTION = "Ship v7 to production?";
const CLI_ASK_NAME = `ask:${createHash("sha256").update(JSON.stringify([RELEASE_QUESTION, null])).digest("hex").slice(0, 16)}`;

const fx = dashboardFixture("dashboard-wall", { width: 1280, height: 900 });
const open = (agent: string, machine: string, handler: MessageHandler, priority?: number) => fx.serve(agent, machine, handler, priority);
const api = <T>(method: string, path: string, body?: unknown) => fx.http.api<T>(method, path, body);
const post = (agent: string, text: string) => fx.http.postMessage(agent, text);
const statusOf = async (agent: string, id: number) => (await fx.http.view(agent, id)).status;
const waitStatus = (agent: string, id: number, status: string) => fx.http.waitForStatus(agent, id, status);
const holds = (h: ServeHandle, what: string) => until(() => h.status.kind === "holder", what);

/** How many columns the cards stand in: the distinct left edges of the cards. */
function columns(page: Page): Promise<number> {
  return page.locator("article.agent").evaluateAll((cards) => new Set(cards.map((c) => Math.round(c.getBoundingClientRect().left))).size);
}

/** Sets the scene: a dozen agents in the states an operator meets. */
async function scene(): Promise<{ janitorAsk: number; running: number }> {
  const reply: MessageHandler = (m) => `done: ${m.text}`;
  // reviewer: a holder and two standbys in line, one message answered.
  const gpu = open("reviewer", "gpu-box-2", reply);
  await holds(gpu, "gpu-box-2 holds");
  open("reviewer", "mac-studio", reply);
  open("reviewer", "ci-runner-7", reply);
  await waitStatus("reviewer", await post("reviewer", "Review PR #214: rename the lease fence field"), "acknowledged");
  // summarizer: a runner of higher priority holds; the other waits.
  open("summarizer", "build-box-1", reply);
  open("summarizer", "laptop-ana", reply, 10);
  // translator: paused, with a message waiting.
  await holds(open("translator", "edge-fra-1", reply), "edge-fra-1 holds");
  expect((await api("POST", "/agents/translator/pause", {})).status).toBe(200);
  await post("translator", "Translate the release notes into German");
  // deployer: a question with choices; janitor: a yes-or-no question.
  open("deployer", "deploy-box", async (_m, ctx) => `region: ${(await ctx.ask("Which region first?", { choices: ["eu-west", "us-east"], deadlineSeconds: 3600 })).choice}`);
  await waitStatus("deployer", await post("deployer", "Roll out the cache"), "parked");
  open("janitor", "janitor-box", async (_m, ctx) => (await ctx.ask("Delete the bucket logs-2023?")).choice);
  const janitorAsk = await post("janitor", "Clean up old buckets");
  await waitStatus("janitor", janitorAsk, "parked");
  // releaser: a question answered from the CLI's kind of name, then the run went on to its reply.
  open("releaser", "release-box", async (_m, ctx) => {
    const answer = await ctx.ask(RELEASE_QUESTION, { name: CLI_ASK_NAME });
    await ctx.step("tag", () => "v7");
    return `shipped (${answer.choice})`;
  });
  const release = await post("releaser", "Release v7");
  await waitStatus("releaser", release, "parked");
  expect((await api("POST", `/agents/releaser/messages/${release}/approve`, { text: "go" })).status).toBe(200);
  await waitStatus("releaser", release, "acknowledged");
  // ledger: an effect begun by a runner that stopped; nobody knows whether it happened.
  let pays = 0;
  const payer: MessageHandler = async (_m, ctx) => {
    await ctx.step("plan", () => "charge 40 EUR");
    await ctx.effect("charge-card", ({ signal }) => (pays++, hang(signal)));
    return "charged";
  };
  const tillA = open("ledger", "till-a", payer);
  await holds(tillA, "till-a holds");
  open("ledger", "till-b", payer);
  const charge = await post("ledger", "Charge order 77");
  await until(() => pays === 1, "till-a began the charge");
  await tillA.stop();
  await waitStatus("ledger", charge, "parked");
  // indexer: a run going on, with a heartbeat and progress.
  await holds(open("indexer", "search-1", async (_m, ctx) => {
    await ctx.heartbeat({ indexed: 1200, of: 5000 });
    return hang(ctx.signal);
  }), "search-1 holds");
  const running = await post("indexer", "Rebuild the search index");
  await waitStatus("indexer", running, "running");
  // mailer: one attempt only, and it failed.
  expect((await api("PUT", "/agents/mailer/policy", { max_attempts: 1 })).status).toBe(200);
  await holds(open("mailer", "smtp-1", () => {
    throw new Error("SMTP 554: relay denied");
  }), "smtp-1 holds");
  await waitStatus("mailer", await post("mailer", "Send the weekly digest"), "failed");
  // backlog: nobody serves it, messages wait.
  await post("backlog", "Summarize yesterday's tickets");
  await post("backlog", "Draft the on-call handover");
  // drained: its only runner is drained, so nobody holds the lease.
  await holds(open("drained", "rack-a", reply), "rack-a holds");
  expect((await api("POST", "/agents/drained/drain", { machine: "rack-a" })).status).toBe(200);
  // crawler: a pool, every runner takes messages.
  expect((await api("PUT", "/agents/crawler/policy", { mode: "pool", max_running: 2 })).status).toBe(200);
  open("crawler", "crawl-1", reply);
  open("crawler", "crawl-2", reply);
  // newcomer: joined a moment ago.
  await holds(open("newcomer", "fresh-box", reply), "fresh-box holds");
  return { janitorAsk, running };
}

describe("the dashboard on a wall", () => {
  it("a dozen agents in mixed states: several columns at 1280 px, nothing wider than 390 px, confirmations, readable steps, true lease sentences, one send button per card", async () => {
    const { janitorAsk, running } = await scene();
    const page = await fx.openLive();
    const agents = ["backlog", "crawler", "deployer", "drained", "indexer", "janitor", "ledger", "mailer", "newcomer", "releaser", "reviewer", "summarizer", "translator"];
    for (const agent of agents) await card(page, agent).waitFor();
    await card(page, "summarizer").locator('[data-role="holder"] .machine', { hasText: "laptop-ana" }).waitFor();

    // At 1280 px the cards stand in several columns, and nothing sticks out.
    expect(await columns(page)).toBeGreaterThanOrEqual(3);
    expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);

    // Nobody holds the lease: the card says so, and never "if the holder goes".
    for (const agent of ["backlog", "drained"]) {
      await card(page, agent).locator('[data-role="no-holder"]', { hasText: "nobody holds the lease" }).waitFor();
      expect(await card(page, agent).textContent()).not.toContain("No standby");
    }
    await card(page, "drained").locator('[data-role="no-holder"]', { hasText: "every runner is drained" }).waitFor();
    await card(page, "newcomer").locator('[data-role="no-standby"]', { hasText: "No standby: if the holder goes, nobody takes over." }).waitFor();
    await expect(card(page, "reviewer").locator('[data-role="standby"]').count()).resolves.toBe(2);

    // A person's answer reads as the question it answered; its journal name is in the hover text only.
    const releaser = card(page, "releaser");
    await releaser.scrollIntoViewIfNeeded();
    const answerStep = releaser.locator(`[data-role="step"][data-kind="answer"][data-name="${CLI_ASK_NAME}"] [data-role="step-name"]`);
    await answerStep.waitFor();
    expect(await answerStep.textContent()).toBe(`question 1: ${RELEASE_QUESTION}`);
    expect(await answerStep.getAttribute("title")).toContain(CLI_ASK_NAME);
    expect(await page.locator("body").innerText()).not.toContain("ask:");

    // A new agent's lease is a bar that reads (its machine's name shows), on a timeline zoomed to its short story.
    const newcomer = card(page, "newcomer");
    const bar = newcomer.locator('.timeline [data-role="bar"][data-machine="fresh-box"]');
    const [box, track] = await Promise.all([bar.boundingBox(), newcomer.locator(".timeline .track").boundingBox()]);
    expect(box!.width).toBeGreaterThanOrEqual(60);
    expect(box!.x + box!.width).toBeLessThanOrEqual(track!.x + track!.width);
    await newcomer.locator('.timeline [data-role="zoom"]', { hasText: /^zoomed to the last \d+ (s|min): its lease story starts at \d{2}:\d{2}:\d{2}$/ }).waitFor();

    // One small send button per card, no open box; a button opens its card's box only.
    await expect(page.locator("textarea:visible").count()).resolves.toBe(0);
    await expect(page.locator('[data-role="open-send"]:visible').count()).resolves.toBe(agents.length);
    await card(page, "reviewer").locator('[data-role="open-send"]').click();
    await expect(page.locator("textarea:visible").count()).resolves.toBe(1);
    await card(page, "reviewer").locator("textarea").press("Escape");
    await expect(page.locator("textarea:visible").count()).resolves.toBe(0);

    // Reject, Pause and Stop each ask first, the same way: a question in place, focus on Cancel; Cancel changes nothing.
    const asks = [
      { where: page.locator(`[data-role="ask"][data-agent="janitor"][data-id="${janitorAsk}"]`), button: 'button[data-choice="reject"]', action: "reject", prompt: `Reject #${janitorAsk} of janitor?` },
      { where: card(page, "reviewer"), button: '[data-action="pause"]', action: "pause", prompt: "Pause reviewer?" },
      { where: card(page, "indexer").locator(`.message[data-id="${running}"]`), button: '[data-action="cancel"]', action: "cancel", prompt: `Stop #${running}?` },
    ];
    for (const { where, button, action, prompt } of asks) {
      await where.scrollIntoViewIfNeeded();
      await where.locator(button).click();
      const confirm = where.locator(`[data-role="confirm"][data-for="${action}"]`);
      expect(await confirm.locator(".prompt").textContent()).toContain(prompt);
      expect(await page.evaluate(() => document.activeElement?.getAttribute("data-role"))).toBe("confirm-no");
      await confirm.locator('[data-role="confirm-no"]').click();
      await confirm.waitFor({ state: "detached" });
    }
    expect(await statusOf("janitor", janitorAsk)).toBe("parked");
    expect(await statusOf("indexer", running)).toBe("running");
    expect((await api<{ controls: { paused: boolean } | null }>("GET", "/agents/reviewer/presence")).body.controls?.paused ?? false).toBe(false);

    // The wall, with Reject's question open as an operator would see it before confirming.
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.locator(`[data-role="ask"][data-agent="janitor"] button[data-choice="reject"]`).click();
    await card(page, "ledger").locator('[data-role="unknown-outcome"]').waitFor();
    await card(page, "indexer").locator('[data-role="run"]', { hasText: "indexed" }).waitFor();
    await page.screenshot({ path: join(SHOTS, "dashboard.png"), fullPage: true });

    // At 390 px: one column, nothing wider than the screen.
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await columns(page)).toBe(1);
    expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: join(SHOTS, "dashboard-phone.png"), fullPage: true, clip: { x: 0, y: 0, width: 390, height: 3000 } });
    await page.close();
  });
});
