// The dashboard's lease view in a real browser (Debian's chromium through playwright-core) against
// a real `wrangler dev`, with raw serve connections (dashboard-runner.ts): serve connections appear
// live, a handover shows up in the card and on the lease timeline without a reload, runners show
// their priority and drain, a paused agent and its waiting messages say so, the preferred and
// drained transitions read on the timeline, and an agent nobody holds (nobody serves it, or only an
// MCP host asks through it) says which.
import { describe, expect, it } from "vitest";
import { card, dashboardFixture, markLoaded, stillSameLoad } from "./dashboard-browser.ts";
import { rawRunners } from "./dashboard-runner.ts";

const fx = dashboardFixture("dashboard-lease", { width: 1100, height: 820 });
const runners = rawRunners(fx);

describe("the lease on the dashboard", () => {
  it("shows the holder and its standby live, and the standby taking over on the card and the timeline without a reload", async () => {
    const page = await fx.context.newPage();
    const cspViolations: string[] = [];
    page.on("console", (m) => {
      if (m.text().includes("Content Security Policy")) cspViolations.push(m.text());
    });
    const response = await page.goto(fx.url);
    expect(response?.headers()["content-security-policy"]).toContain("script-src 'self'");
    await page.locator('#status[data-state="live"]').waitFor();
    await page.getByText("npx baton serve reviewer -- ./run-agent.sh").waitFor();
    await markLoaded(page);

    const alpha = await runners.serve("reviewer", "alpha");
    const beta = await runners.serve("reviewer", "beta");
    const reviewer = card(page, "reviewer");
    await reviewer.locator('[data-role="holder"] .machine', { hasText: "alpha" }).waitFor();
    await reviewer.locator('[data-role="standby"] .machine', { hasText: "beta" }).waitFor();
    await expect(reviewer.locator('[data-role="standby"]').count()).resolves.toBe(1);
    await reviewer.locator('.timeline [data-role="bar"][data-machine="alpha"]').waitFor();

    const started = Date.now();
    await alpha.close();
    await reviewer.locator('[data-role="holder"] .machine', { hasText: "beta" }).waitFor();
    const handoverShownMs = Date.now() - started;
    await reviewer.locator('.timeline [data-role="mark"][data-reason="closed"][data-fence="2"]').waitFor();
    await reviewer.locator('.timeline [data-role="bar"][data-machine="beta"]').waitFor();
    const timelineShownMs = Date.now() - started;
    console.log(`dashboard showed the new holder ${handoverShownMs} ms and the handoff on the timeline ${timelineShownMs} ms after the old one closed`);
    expect(cspViolations).toEqual([]);
    expect(handoverShownMs).toBeLessThan(1000);
    expect(timelineShownMs).toBeLessThan(1000);
    await reviewer.locator('.history [data-reason="closed"]', { hasText: "alpha #1 → beta #2" }).waitFor();
    await expect(reviewer.locator('[data-role="standby"]').count()).resolves.toBe(0);
    // alpha's bar comes first, both inside the track. beta's bar is going on, so its minimum width
    // grows leftwards from "now" and can reach back to alpha's start within a pixel after a quick
    // handover (seen at 0.17 px on a clean clone): the order is checked to the pixel, not below it.
    const [alphaBox, betaBox, track] = await Promise.all([
      reviewer.locator('.timeline [data-machine="alpha"]').boundingBox(),
      reviewer.locator('.timeline [data-machine="beta"]').boundingBox(),
      reviewer.locator(".timeline .track").boundingBox(),
    ]);
    expect(alphaBox!.x).toBeLessThanOrEqual(betaBox!.x + 1);
    expect(betaBox!.x + betaBox!.width).toBeLessThanOrEqual(track!.x + track!.width + 1);
    await beta.close();
    expect(await stillSameLoad(page)).toBe(true);
    await page.close();
  });

  it("runners show their priority in line order; a higher-priority runner takes the lease, marked on the timeline and in the history", async () => {
    const page = await fx.openLive();
    await runners.serve("ranked", "plain-box");
    const ranked = card(page, "ranked");
    await ranked.locator('[data-role="holder"] .machine', { hasText: "plain-box" }).waitFor();
    // While every runner has priority 0, priorities are noise and the card shows none.
    await expect(ranked.locator('[data-role="priority"]').count()).resolves.toBe(0);
    await runners.serve("ranked", "fast-box", undefined, { priority: 5 });
    await ranked.locator('[data-role="holder"] .machine', { hasText: "fast-box" }).waitFor();
    await ranked.locator('[data-role="holder"] [data-role="priority"]', { hasText: "priority 5" }).waitFor();
    await ranked.locator('.timeline [data-role="mark"][data-reason="preferred"]').waitFor();
    await ranked.locator('.timeline .legend', { hasText: "to preferred runner" }).waitFor();
    const moved = ranked.locator('.history [data-reason="preferred"]', { hasText: /plain-box #\d+ → fast-box #\d+/ });
    await moved.waitFor();
    expect(await moved.locator(".reason").textContent()).toBe("to preferred runner");
    await runners.serve("ranked", "mid-box", undefined, { priority: 2 });
    await ranked.locator('[data-role="standby"] .machine', { hasText: "mid-box" }).waitFor();
    // The line is in the order the lease would take it: priority 2 before the older claim at 0.
    expect(await ranked.locator('[data-role="standby"] .machine').allTextContents()).toEqual(["mid-box", "plain-box"]);
    expect(await ranked.locator('[data-role="standby"] [data-role="priority"]').allTextContents()).toEqual(["priority 2", "priority 0"]);
    expect(await stillSameLoad(page)).toBe(true);
    await page.close();
  });

  it("a drained runner is marked drained and out of line, the lease moves on as 'holder drained', and undrain puts it back", async () => {
    const page = await fx.openLive();
    await runners.serve("drainee", "rack-a", () => "ok");
    await runners.serve("drainee", "rack-b", () => "ok");
    const drainee = card(page, "drainee");
    await drainee.locator('[data-role="standby"] .machine', { hasText: "rack-b" }).waitFor();

    await fx.http.control("drainee", "drain", { machine: "rack-a" });
    await drainee.locator('[data-role="holder"] .machine', { hasText: "rack-b" }).waitFor();
    const rackA = drainee.locator('li[data-role="drained"]', { hasText: "rack-a" });
    await rackA.waitFor();
    expect(await rackA.locator('[data-role="drain"]').textContent()).toBe("drained");
    await expect(drainee.locator('[data-role="standby"]').count()).resolves.toBe(0);
    await drainee.getByText("No standby: if the holder goes, nobody takes over.").waitFor();
    await drainee.locator('[data-role="drained-note"] [data-machine="rack-a"]').waitFor();
    await drainee.locator('.timeline [data-role="mark"][data-reason="drained"]').waitFor();
    const moved = drainee.locator('.history [data-reason="drained"]', { hasText: /rack-a #\d+ → rack-b #\d+/ });
    await moved.waitFor();
    expect(await moved.locator(".reason").textContent()).toBe("holder drained");

    // Draining the last machine leaves nobody to run messages: the card says why one waits.
    await fx.http.control("drainee", "drain", { machine: "rack-b" });
    await drainee.locator('[data-role="no-holder"]', { hasText: "every runner is drained" }).waitFor();
    await fx.http.postMessage("drainee", "Rebuild the search index");
    const waiting = drainee.locator(".message", { hasText: "Rebuild the search index" });
    await waiting.locator('[data-role="waiting"]', { hasText: "nobody holds the lease" }).waitFor();

    await fx.http.control("drainee", "undrain");
    await drainee.scrollIntoViewIfNeeded();
    await waiting.locator('[data-role="reply"]', { hasText: "ok" }).waitFor();
    await drainee.locator('[data-role="standby"]').first().waitFor();
    await expect(drainee.locator('[data-role="drain"]').count()).resolves.toBe(0);
    await expect(drainee.locator('[data-role="controls"]').count()).resolves.toBe(0);
    expect(await stillSameLoad(page)).toBe(true);
    await page.close();
  });

  it("a paused agent is marked paused, a message posted meanwhile shows as waiting, and after unpause it runs", async () => {
    const page = await fx.openLive();
    await runners.serve("pausee", "desk-9", (text) => `did: ${text}`);
    const pausee = card(page, "pausee");
    await pausee.locator('[data-role="holder"] .machine', { hasText: "desk-9" }).waitFor();
    await expect(pausee.locator('[data-role="paused"]').count()).resolves.toBe(0);

    await fx.http.control("pausee", "pause");
    await pausee.locator('header [data-role="paused"]', { hasText: "paused" }).waitFor();
    await pausee.locator('[data-role="paused-note"]', { hasText: "messages queue and nothing is handed out" }).waitFor();
    await fx.http.postMessage("pausee", "Rotate the API keys");
    const message = pausee.locator(".message", { hasText: "Rotate the API keys" });
    await message.locator('[data-role="waiting"]', { hasText: "waiting: the agent is paused" }).waitFor();
    expect(await message.getAttribute("data-status")).toBe("queued");
    await pausee.locator('[data-role="work"] [data-role="queued-waiting"]', { hasText: "paused" }).waitFor();
    // The lease stays where it is.
    await pausee.locator('[data-role="holder"] .machine', { hasText: "desk-9" }).waitFor();

    await fx.http.control("pausee", "unpause");
    // Full texts and replies are fetched only for cards on screen; earlier tests' cards sit above.
    await pausee.scrollIntoViewIfNeeded();
    await message.locator('[data-role="reply"]', { hasText: "did: Rotate the API keys" }).waitFor();
    await expect(pausee.locator('[data-role="paused"]').count()).resolves.toBe(0);
    await expect(pausee.locator('[data-role="waiting"]').count()).resolves.toBe(0);
    expect(await stillSameLoad(page)).toBe(true);
    await page.close();
  });

  it("an agent nobody serves, with messages waiting, is shown with its backlog instead of vanishing", async () => {
    const page = await fx.context.newPage();
    await page.goto(fx.url);
    await page.locator('#status[data-state="live"]').waitFor();
    await fx.http.postMessage("unserved", "nobody serves this agent yet");
    const unserved = card(page, "unserved");
    await unserved.locator('[data-role="no-holder"]').waitFor();
    await unserved.locator('[data-role="work"] .chip[data-status="queued"]', { hasText: "1 queued" }).waitFor();
    await page.close();
  });

  it("an agent an MCP host only asks people through (no runner, by design) reads calmly as having no runner, not as a missing holder", async () => {
    const page = await fx.context.newPage();
    await page.goto(fx.url);
    await page.locator('#status[data-state="live"]').waitFor();
    const question = "Rotate the signing key tonight?";
    const res = await fx.http.api("POST", "/agents/asker/messages", { text: question, question: { text: question, choices: ["rotate", "wait"] } });
    expect(res.status).toBe(201);
    const asker = card(page, "asker");
    await asker.locator('[data-role="no-runner"]', { hasText: "no runner: none has ever served it, and nothing waits to run" }).waitFor();
    expect(await asker.locator('[data-role="no-holder"]').count()).toBe(0);
    expect(await asker.locator(".holder.none").count(), "not in red").toBe(0);
    // The question, asked on its own, is said once in "Needs a person".
    const ask = page.locator('[data-role="ask-agent"]', { hasText: "asker" }).locator("xpath=ancestor::li[1]");
    await ask.locator('[data-role="question"]', { hasText: question }).waitFor();
    expect(await ask.locator('[data-role="ask-text"]').count()).toBe(0);
    await page.close();
  });

});
