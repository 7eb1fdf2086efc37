// The dashboard in a real browser (Debian's chromium through playwright-core) against a real
// `wrangler dev`: serve connections appear live, a handover shows up in the card and on the lease
// timeline without a reload, messages show in full with replies, the send box posts, a lost
// coordinator reads as unreachable (not as an empty account), the token field works, runners show
// their priority and drain, a paused agent and its waiting messages say so, the preferred, drained
// and restored transitions read on the timeline, and nothing overflows at phone width. (The
// screenshots in docs/ come from dashboard-wall.test.ts.)
import { mkdtempSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { BATON_PROTOCOL, tokenProtocol } from "../../worker/wire/token-protocol.ts";
import { resetBrowser } from "./browser-reset.ts";
import { DEV_TOKEN, startWranglerDev, type DevServer } from "./wrangler-dev.ts";
import { replyingServe, type ClaimOptions, type ServeClient } from "./dashboard-runner.ts";
import { card, horizontalOverflow, launchBrowser, openLive as openLiveAt, stillSameLoad, type Browser } from "./dashboard-browser.ts";

const DOCS = mkdtempSync(join(tmpdir(), "baton-shots-"));

// A short hysteresis, so a runner of higher priority takes the lease within the test's patience.
const DEV_VARS = { BATON_PREFERENCE_HYSTERESIS_SECONDS: "1" };

let dev: DevServer;
let launched: Browser;
let browser: BrowserContext;
const servers: ServeClient[] = [];
/** A new page on the dashboard, live, marked so that later checks can tell it was never reloaded. */
const openLive = () => openLiveAt(browser, dev.url);

/** A raw runner on `agent` (dashboard-runner.ts), closed after the file. */
async function serve(agent: string, machine: string, reply?: (text: string) => string | null, claim: ClaimOptions = {}): Promise<ServeClient> {
  const client = await replyingServe(dev.url, agent, machine, reply, claim);
  servers.push(client);
  return client;
}

async function postMessage(agent: string, text: string): Promise<void> {
  const res = await fetch(`${dev.url}/agents/${agent}/messages`, {
    method: "POST",
    headers: { authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ text }),
  });
  expect(res.status).toBe(201);
}

/** POST /agents/{agent}/pause, /unpause, /drain or /undrain with the dev token. */
async function control(agent: string, route: "pause" | "unpause" | "drain" | "undrain", body: object = {}): Promise<void> {
  const res = await fetch(`${dev.url}/agents/${agent}/${route}`, {
    method: "POST",
    headers: { authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(200);
}

beforeAll(async () => {
  dev = await startWranglerDev({ vars: DEV_VARS });
  launched = await launchBrowser({ width: 1100, height: 820 });
  browser = launched.context;
});

afterEach(() => resetBrowser(browser, dev?.url));

afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
  await launched?.close();
  await dev?.stop();
});

const LONG_WORD = "x".repeat(300);
const LONG_MESSAGE = `Summarize the incident thread and propose a fix. ${"The holder lost its socket while a run was half done. ".repeat(12)}${LONG_WORD}`;

describe("presence dashboard", () => {
  it("shows the holder and its standby live, and the standby taking over on the card and the timeline without a reload", async () => {
    const page = await browser.newPage();
    const cspViolations: string[] = [];
    page.on("console", (m) => {
      if (m.text().includes("Content Security Policy")) cspViolations.push(m.text());
    });
    const response = await page.goto(dev.url);
    expect(response?.headers()["content-security-policy"]).toContain("script-src 'self'");
    await page.locator('#status[data-state="live"]').waitFor();
    await page.getByText("npx baton serve reviewer -- ./run-agent.sh").waitFor();
    await page.evaluate(() => ((window as unknown as { loadedOnce: boolean }).loadedOnce = true));

    const alpha = await serve("reviewer", "alpha");
    const beta = await serve("reviewer", "beta");
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
    expect(await page.evaluate(() => (window as unknown as { loadedOnce?: boolean }).loadedOnce)).toBe(true);
    await page.close();
  });

  it("the send box posts a message; the card shows its full text, the holder's reply and their times", async () => {
    const page = await browser.newPage();
    await page.goto(dev.url);
    await serve("echo", "echo-box", (text) => `done: ${text.length} chars`);
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
    const page = await browser.newPage();
    await page.goto(dev.url);
    await serve("approver", "desk-1", (text) => (text.startsWith("Deploy") ? null : "done"));
    await postMessage("approver", "Deploy v2 to production (needs a person to approve)");
    const approver = card(page, "approver");
    await approver.locator('.message[data-status="parked"]', { hasText: "Deploy v2" }).waitFor();
    await approver.locator('[data-role="work"] [data-role="parked"]', { hasText: "#1" }).waitFor();
    await approver.locator('[data-role="work"] .chip[data-status="parked"]', { hasText: "1 parked" }).waitFor();
    await page.close();
  });

  it("runners show their priority in line order; a higher-priority runner takes the lease, marked on the timeline and in the history", async () => {
    const page = await openLive();
    await serve("ranked", "plain-box");
    const ranked = card(page, "ranked");
    await ranked.locator('[data-role="holder"] .machine', { hasText: "plain-box" }).waitFor();
    // While every runner has priority 0, priorities are noise and the card shows none.
    await expect(ranked.locator('[data-role="priority"]').count()).resolves.toBe(0);
    await serve("ranked", "fast-box", undefined, { priority: 5 });
    await ranked.locator('[data-role="holder"] .machine', { hasText: "fast-box" }).waitFor();
    await ranked.locator('[data-role="holder"] [data-role="priority"]', { hasText: "priority 5" }).waitFor();
    await ranked.locator('.timeline [data-role="mark"][data-reason="preferred"]').waitFor();
    await ranked.locator('.timeline .legend', { hasText: "to preferred runner" }).waitFor();
    const moved = ranked.locator('.history [data-reason="preferred"]', { hasText: /plain-box #\d+ → fast-box #\d+/ });
    await moved.waitFor();
    expect(await moved.locator(".reason").textContent()).toBe("to preferred runner");
    await serve("ranked", "mid-box", undefined, { priority: 2 });
    await ranked.locator('[data-role="standby"] .machine', { hasText: "mid-box" }).waitFor();
    // The line is in the order the lease would take it: priority 2 before the older claim at 0.
    expect(await ranked.locator('[data-role="standby"] .machine').allTextContents()).toEqual(["mid-box", "plain-box"]);
    expect(await ranked.locator('[data-role="standby"] [data-role="priority"]').allTextContents()).toEqual(["priority 2", "priority 0"]);
    expect(await stillSameLoad(page)).toBe(true);
    await page.close();
  });

  it("a drained runner is marked drained and out of line, the lease moves on as 'holder drained', and undrain puts it back", async () => {
    const page = await openLive();
    await serve("drainee", "rack-a", () => "ok");
    await serve("drainee", "rack-b", () => "ok");
    const drainee = card(page, "drainee");
    await drainee.locator('[data-role="standby"] .machine', { hasText: "rack-b" }).waitFor();

    await control("drainee", "drain", { machine: "rack-a" });
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
    await control("drainee", "drain", { machine: "rack-b" });
    await drainee.locator('[data-role="no-holder"]', { hasText: "every runner is drained" }).waitFor();
    await postMessage("drainee", "Rebuild the search index");
    const waiting = drainee.locator(".message", { hasText: "Rebuild the search index" });
    await waiting.locator('[data-role="waiting"]', { hasText: "nobody holds the lease" }).waitFor();

    await control("drainee", "undrain");
    await drainee.scrollIntoViewIfNeeded();
    await waiting.locator('[data-role="reply"]', { hasText: "ok" }).waitFor();
    await drainee.locator('[data-role="standby"]').first().waitFor();
    await expect(drainee.locator('[data-role="drain"]').count()).resolves.toBe(0);
    await expect(drainee.locator('[data-role="controls"]').count()).resolves.toBe(0);
    expect(await stillSameLoad(page)).toBe(true);
    await page.close();
  });

  it("a paused agent is marked paused, a message posted meanwhile shows as waiting, and after unpause it runs", async () => {
    const page = await openLive();
    await serve("pausee", "desk-9", (text) => `did: ${text}`);
    const pausee = card(page, "pausee");
    await pausee.locator('[data-role="holder"] .machine', { hasText: "desk-9" }).waitFor();
    await expect(pausee.locator('[data-role="paused"]').count()).resolves.toBe(0);

    await control("pausee", "pause");
    await pausee.locator('header [data-role="paused"]', { hasText: "paused" }).waitFor();
    await pausee.locator('[data-role="paused-note"]', { hasText: "messages queue and nothing is handed out" }).waitFor();
    await postMessage("pausee", "Rotate the API keys");
    const message = pausee.locator(".message", { hasText: "Rotate the API keys" });
    await message.locator('[data-role="waiting"]', { hasText: "waiting: the agent is paused" }).waitFor();
    expect(await message.getAttribute("data-status")).toBe("queued");
    await pausee.locator('[data-role="work"] [data-role="queued-waiting"]', { hasText: "paused" }).waitFor();
    // The lease stays where it is.
    await pausee.locator('[data-role="holder"] .machine', { hasText: "desk-9" }).waitFor();

    await control("pausee", "unpause");
    // Full texts and replies are fetched only for cards on screen; earlier tests' cards sit above.
    await pausee.scrollIntoViewIfNeeded();
    await message.locator('[data-role="reply"]', { hasText: "did: Rotate the API keys" }).waitFor();
    await expect(pausee.locator('[data-role="paused"]').count()).resolves.toBe(0);
    await expect(pausee.locator('[data-role="waiting"]').count()).resolves.toBe(0);
    expect(await stillSameLoad(page)).toBe(true);
    await page.close();
  });

  it("renders a realistic screen at desktop and phone width with nothing wider than the viewport", async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()));
    const page = await browser.newPage();
    await page.goto(dev.url);
    // Earlier tests left a parked message: its agent stays listed (nobody serves it, work waits), so no empty page here.
    await page.locator('#status[data-state="live"]').waitFor();
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);
    await page.setViewportSize({ width: 1100, height: 820 });
    const reply = (text: string) => text.startsWith("Review") ? "LGTM after one rename: fence_token → fence." : "ok";
    const first = await serve("reviewer", "gpu-box-2", reply);
    await serve("reviewer", "mac-studio", reply);
    await serve("summarizer", "build-box-1");
    await serve("summarizer", "laptop-ana", undefined, { priority: 10 });
    await serve("summarizer", "ci-runner-7");
    await serve("translator", "edge-fra-1", () => "ok");
    await card(page, "reviewer").locator('[data-role="standby"] .machine', { hasText: "mac-studio" }).waitFor();
    await postMessage("reviewer", "Review PR #213: typo in the README");
    await card(page, "reviewer").locator('.message[data-status="acknowledged"]').waitFor();
    await first.close();
    await serve("reviewer", "gpu-box-2", reply);
    await postMessage("reviewer", "Review PR #214: rename the lease fence field");
    // Before the message: a holder that runs one keeps the lease until it is done.
    await card(page, "summarizer").locator('[data-role="holder"] .machine', { hasText: "laptop-ana" }).waitFor();
    await postMessage("summarizer", LONG_MESSAGE);
    await card(page, "summarizer").locator('[data-role="standby"]', { hasText: "ci-runner-7" }).waitFor();
    await control("summarizer", "drain", { machine: "ci-runner-7" });
    await card(page, "summarizer").locator('li[data-role="drained"]', { hasText: "ci-runner-7" }).waitFor();
    await control("translator", "pause");
    await postMessage("translator", "Translate the release notes into German");
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
    for (const agent of agents) await serve(agent, `${agent}-box`);
    await serve("compact-a", "compact-a-spare");
    const res = await fetch(`${dev.url}/agents/compact-b/policy`, {
      method: "PUT", headers: { authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" }, body: JSON.stringify({ mode: "pool", max_running: 2 }),
    });
    expect(res.status).toBe(200);
    await serve("compact-b", "compact-b-spare");
    const page = await openLive();
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

  it("a coordinator that cannot be reached reads as unreachable, not as an account with no agents", async () => {
    const page = await browser.newPage();
    await page.route("**/agents", (route) => route.abort("connectionrefused"));
    await page.goto(dev.url);
    await page.locator('[data-role="unreachable"]', { hasText: "Coordinator unreachable" }).waitFor();
    await page.locator('#status[data-state="retrying"]', { hasText: "unreachable" }).waitFor();
    await expect(page.getByText("No agent is connected").count()).resolves.toBe(0);
    await page.unroute("**/agents");
    await page.locator('#status[data-state="live"]').waitFor({ timeout: 20_000 });
    await expect(page.locator('[data-role="unreachable"]').count()).resolves.toBe(0);
    await page.close();
  });

  it("/favicon.ico answers without a token", async () => {
    const res = await fetch(`${dev.url}/favicon.ico`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/icon/);
  });

  it("reconnects by itself when the coordinator restarts, saying it is unreachable meanwhile, and shows who came back", async () => {
    const page = await browser.newPage();
    await page.goto(dev.url);
    await page.locator('#status[data-state="live"]').waitFor();
    await card(page, "summarizer").waitFor();
    const homeRunner = { runnerId: "restorer-home-box" };
    await serve("restorer", "home-box", undefined, homeRunner);
    await card(page, "restorer").locator('[data-role="holder"] .machine', { hasText: "home-box" }).waitFor();
    const { port, persistDir } = dev;
    await dev.stop();
    await page.locator('#status[data-state="retrying"]').waitFor();
    await page.locator('[data-role="unreachable-banner"]', { hasText: "Coordinator unreachable" }).waitFor();
    // The same 24-hour clock as the rest of the page, not "1:50:37 PM".
    expect(await page.locator('[data-role="unreachable-banner"]').textContent()).toMatch(/unreachable since \d{2}:\d{2}:\d{2}: /);
    await card(page, "summarizer").waitFor();
    await Promise.all(servers.splice(0).map((s) => s.close()));
    dev = await startWranglerDev({ port, persistDir, vars: DEV_VARS });
    // The restarted coordinator keeps restorer's lease for its holder's runner for the restart
    // grace (10 s), which may run from the restart itself: the runner comes back at once, not after
    // the page's reconnect backoff (up to 15 s).
    await serve("restorer", "home-box", undefined, homeRunner);
    await page.locator('#status[data-state="live"]').waitFor({ timeout: 40_000 });
    await page.locator('[data-role="unreachable-banner"]').waitFor({ state: "hidden" });
    await serve("reviewer", "back-again");
    await card(page, "reviewer").locator('[data-role="holder"] .machine', { hasText: "back-again" }).waitFor();
    const restorer = card(page, "restorer");
    await restorer.locator('.timeline [data-role="mark"][data-reason="restored"]').waitFor();
    const back = restorer.locator('.history [data-reason="restored"]', { hasText: /home-box #\d+/ });
    await back.waitFor();
    expect(await back.locator(".reason").textContent()).toBe("restored after restart");
    await page.close();
  });

  it("an agent nobody serves, with messages waiting, is shown with its backlog instead of vanishing", async () => {
    const page = await browser.newPage();
    await page.goto(dev.url);
    await page.locator('#status[data-state="live"]').waitFor();
    await postMessage("unserved", "nobody serves this agent yet");
    const unserved = card(page, "unserved");
    await unserved.locator('[data-role="no-holder"]').waitFor();
    await unserved.locator('[data-role="work"] .chip[data-status="queued"]', { hasText: "1 queued" }).waitFor();
    await page.close();
  });

  it("an agent an MCP host only asks people through (no runner, by design) reads calmly as having no runner, not as a missing holder", async () => {
    const page = await browser.newPage();
    await page.goto(dev.url);
    await page.locator('#status[data-state="live"]').waitFor();
    const question = "Rotate the signing key tonight?";
    const res = await fetch(`${dev.url}/agents/asker/messages`, {
      method: "POST", headers: { authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ text: question, question: { text: question, choices: ["rotate", "wait"] } }),
    });
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

  it("a refused token opens the login field; the saved token brings the list, and never appears in the URL", async () => {
    await serve("notifier", "pi-4");
    const page = await browser.newPage();
    await page.goto(dev.url);
    await page.evaluate(() => localStorage.setItem("baton.token", "not-a-real-token"));
    await page.reload();
    await page.locator('#status[data-state="signed-out"]').waitFor();
    await page.locator("#login").waitFor({ state: "visible" });
    await page.fill("#token-input", DEV_TOKEN);
    await page.click('#login button[type="submit"]');
    await page.locator('#status[data-state="live"]').waitFor();
    await card(page, "notifier").waitFor();
    expect(page.url()).not.toContain(DEV_TOKEN);
    expect(await page.evaluate(() => localStorage.getItem("baton.token"))).toBe(DEV_TOKEN);
    await page.evaluate(() => localStorage.removeItem("baton.token"));
    await page.close();
  });

  it("a page on another origin cannot open the observer socket with the dev token; the dashboard's own origin can", async () => {
    const other = createServer((_req, res) => res.end("<!doctype html><title>elsewhere</title>"));
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve));
    const elsewhere = `http://127.0.0.1:${(other.address() as AddressInfo).port}/`;
    const open = (page: Page) => page.evaluate(([url, protocols]) => new Promise<string>((resolve) => {
      const ws = new window.WebSocket(url, [...protocols]);
      ws.onopen = () => (ws.close(), resolve("open"));
      ws.onerror = () => resolve("refused");
    }), [`${dev.url.replace("http", "ws")}/observe`, [BATON_PROTOCOL, tokenProtocol(DEV_TOKEN)]] as const);
    try {
      const page = await browser.newPage();
      await page.goto(elsewhere);
      expect(await open(page)).toBe("refused");
      await page.goto(dev.url);
      expect(await open(page)).toBe("open");
      await page.close();
    } finally {
      other.close();
    }
  });
});
