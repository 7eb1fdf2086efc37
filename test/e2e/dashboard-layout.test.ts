// What the dashboard's cards show and how they fit, in a real browser (Debian's chromium through
// playwright-core) against a real `wrangler dev`, with raw serve connections (dashboard-runner.ts):
// messages in full with replies, the send box posts, a parked message in the work summary, a
// realistic screen at desktop and phone width with nothing wider than the viewport, and the compact
// view. (The screenshots in docs/ come from dashboard-wall.test.ts.)
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { card, dashboardFixture, horizontalOverflow, LONG_MESSAGE, LONG_WORD, screenshotDir } from "./dashboard-browser.ts";
import { until } from "./dashboard-person-api.ts";
import { rawRunners } from "./dashboard-runner.ts";

const DOCS = screenshotDir();
const fx = dashboardFixture("dashboard-layout", { width: 1100, height: 820 });
const runners = rawRunners(fx);

describe("the dashboard's cards and screens", () => {
  it("the send box posts a message; the card shows its full text, the holder's reply and their times", async () => {
    const page = await fx.context.newPage();
    await page.goto(fx.url);
    await runners.serve("echo", "echo-box", (text) => `done: ${text.length} chars`);
    const echo = card(page, "echo");
    await echo.locator('[data-role="holder"] .machine', { hasText: "echo-box" }).waitFor();
    // One small button per card opens its send box; no card carries an open one.
    expect(await echo.locator("textarea").isVisible()).toBe(false);
    await echo.locator('[data-role="open-send"]').click();
    expect(await page.evaluate(() => document.activeElement?.tagName)).toBe("TEXTAREA");
    await echo.locator("textarea").fill(LONG_MESSAGE);
    await echo.locator('[data-role="send"] button[type="submit"]').click();
    // No status frozen at the moment of sending (it said "running" while the card showed parked): the card tells.
    await echo.locator('[data-role="send"] [role="status"][data-state="sent"]', { hasText: /^sent as #1; follow it on the card$/ }).waitFor();
    expect(await echo.locator("textarea").inputValue()).toBe("");
    // Sent, the box folds back into its button.
    expect(await echo.locator("textarea").isVisible()).toBe(false);
    await echo.locator('[data-role="open-send"]').waitFor();
    const message = echo.locator('.messages .message[data-id="1"]');
    await message.locator('[data-role="reply"]', { hasText: `done: ${LONG_MESSAGE.length} chars` }).waitFor();
    expect(await message.locator('[data-role="text"]').textContent()).toBe(LONG_MESSAGE);
    expect(await message.getAttribute("data-status")).toBe("acknowledged");
    await expect(message.locator("time").count()).resolves.toBe(2);

    await page.setViewportSize({ width: 390, height: 844 });
    expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);
    await page.close();
  });

  it("a parked message shows with its status and in the agent's work summary", async () => {
    const page = await fx.context.newPage();
    await page.goto(fx.url);
    await runners.serve("approver", "desk-1", (text) => (text.startsWith("Deploy") ? null : "done"));
    await fx.http.postMessage("approver", "Deploy v2 to production (needs a person to approve)");
    const approver = card(page, "approver");
    await approver.locator('.message[data-status="parked"]', { hasText: "Deploy v2" }).waitFor();
    await approver.locator('[data-role="work"] [data-role="parked"]', { hasText: "#1" }).waitFor();
    await approver.locator('[data-role="work"] .chip[data-status="parked"]', { hasText: "1 parked" }).waitFor();
    await page.close();
  });

  it("renders a realistic screen at desktop and phone width with nothing wider than the viewport", async () => {
    await runners.closeAll();
    const page = await fx.context.newPage();
    await page.goto(fx.url);
    // Earlier tests left a parked message: its agent stays listed (nobody serves it, work waits), so no empty page here.
    await page.locator('#status[data-state="live"]').waitFor();
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);
    await page.setViewportSize({ width: 1100, height: 820 });
    // A lease that ended with nobody to take over: the gap the one-minute timeline shows below.
    await (await runners.serve("reviewer", "old-box")).close();
    await until(async () => (await fx.http.api<{ holder: unknown }>("GET", "/agents/reviewer/presence")).body.holder === null, "reviewer's lease ended");
    const reply = (text: string) => text.startsWith("Review") ? "LGTM after one rename: fence_token → fence." : "ok";
    const first = await runners.serve("reviewer", "gpu-box-2", reply);
    await runners.serve("reviewer", "mac-studio", reply);
    await runners.serve("summarizer", "build-box-1");
    await runners.serve("summarizer", "laptop-ana", undefined, { priority: 10 });
    await runners.serve("summarizer", "ci-runner-7");
    await runners.serve("translator", "edge-fra-1", () => "ok");
    await card(page, "reviewer").locator('[data-role="standby"] .machine', { hasText: "mac-studio" }).waitFor();
    await fx.http.postMessage("reviewer", "Review PR #213: typo in the README");
    await card(page, "reviewer").locator('.message[data-status="acknowledged"]').waitFor();
    await first.close();
    await runners.serve("reviewer", "gpu-box-2", reply);
    await fx.http.postMessage("reviewer", "Review PR #214: rename the lease fence field");
    // Before the message: a holder that runs one keeps the lease until it is done.
    await card(page, "summarizer").locator('[data-role="holder"] .machine', { hasText: "laptop-ana" }).waitFor();
    await fx.http.postMessage("summarizer", LONG_MESSAGE);
    await card(page, "summarizer").locator('[data-role="standby"]', { hasText: "ci-runner-7" }).waitFor();
    await fx.http.control("summarizer", "drain", { machine: "ci-runner-7" });
    await card(page, "summarizer").locator('li[data-role="drained"]', { hasText: "ci-runner-7" }).waitFor();
    await fx.http.control("translator", "pause");
    await fx.http.postMessage("translator", "Translate the release notes into German");
    await card(page, "translator").locator('.message [data-role="waiting"]').waitFor();
    // Full texts are fetched only for cards on screen, and the reviewer's card may fill the first screen.
    await card(page, "summarizer").scrollIntoViewIfNeeded();
    await card(page, "summarizer").locator(".message", { hasText: LONG_WORD }).waitFor();
    await page.evaluate(() => window.scrollTo(0, 0));
    await card(page, "reviewer").locator(".message", { hasText: "Review PR #214" }).locator('[data-role="reply"]').waitFor();
    await card(page, "reviewer").locator('[data-role="holder"] .machine', { hasText: "mac-studio" }).waitFor();
    await card(page, "reviewer").locator('[data-role="standby"] .machine', { hasText: "gpu-box-2" }).waitFor();
    await card(page, "reviewer").locator('.history [data-reason="closed"]', { hasText: /gpu-box-2 #\d+ → mac-studio #\d+/ }).waitFor();
    expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);
    // The last minute shows this short story best; the range choice is kept in local storage.
    await page.click('#ranges button[data-range="60000"]');
    await card(page, "reviewer").locator('.timeline[data-window="60000"] [data-role="gap"]').waitFor();
    await page.screenshot({ path: join(DOCS, "dashboard.png"), fullPage: true });

    await page.setViewportSize({ width: 390, height: 844 });
    await card(page, "summarizer").waitFor();
    expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);
    await page.screenshot({ path: join(DOCS, "dashboard-phone.png"), fullPage: true });
    await page.evaluate(() => localStorage.removeItem("baton.range"));
    await page.close();
  });

  it("the compact view shows a line per agent, an agent's name opens its card, the choice survives a reload; pool cards say every runner takes messages", async () => {
    const agents = ["compact-a", "compact-b", "compact-c", "compact-d", "compact-e", "compact-f"];
    for (const agent of agents) await runners.serve(agent, `${agent}-box`);
    await runners.serve("compact-a", "compact-a-spare");
    expect((await fx.http.api("PUT", "/agents/compact-b/policy", { mode: "pool", max_running: 2 })).status).toBe(200);
    await runners.serve("compact-b", "compact-b-spare");
    const page = await fx.openLive();
    await page.setViewportSize({ width: 830, height: 900 });
    for (const agent of agents) await card(page, agent).locator('[data-role="holder"]').waitFor();
    await card(page, "compact-b").locator('[data-role="holder"] .label', { hasText: "in pool mode every runner takes messages" }).waitFor();
    await card(page, "compact-b").locator(".standbys .label", { hasText: "Other runners, taking messages too" }).waitFor();
    const heightOf = (agent: string) => card(page, agent).evaluate((e) => e.getBoundingClientRect().height);
    const full = await heightOf("compact-c");

    await page.click("#compact-toggle");
    expect(await page.getAttribute("#compact-toggle", "aria-pressed")).toBe("true");
    await card(page, "compact-a").locator('[data-role="summary"]', { hasText: "held by compact-a-box · 1 in line" }).waitFor();
    expect(await card(page, "compact-c").locator('[data-role="holder"]').isVisible()).toBe(false);
    expect(await card(page, "compact-c").locator(".composer").isVisible()).toBe(false);
    const line = await heightOf("compact-c");
    expect(line).toBeLessThan(full / 3);
    expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);

    // One card opens by its name, the others stay a line; the choice is kept across a reload.
    await card(page, "compact-c").locator('[data-role="open-card"]').click();
    await card(page, "compact-c").locator('[data-role="holder"]').waitFor();
    expect(await card(page, "compact-c").locator('[data-role="open-card"]').getAttribute("aria-expanded")).toBe("true");
    expect(await card(page, "compact-d").locator('[data-role="holder"]').isVisible()).toBe(false);
    await page.reload();
    await page.locator('#status[data-state="live"]').waitFor();
    await card(page, "compact-a").locator('[data-role="summary"]').waitFor();
    expect(await page.getAttribute("#compact-toggle", "aria-pressed")).toBe("true");

    await page.click("#compact-toggle");
    await card(page, "compact-d").locator('[data-role="holder"]').waitFor();
    expect(await card(page, "compact-d").locator('[data-role="summary"]').isVisible()).toBe(false);
    await page.close();
  });

});
