// The dashboard in a real browser (Debian's chromium through playwright-core) against a real
// `wrangler dev`: serve connections appear live, a handover shows up without a reload, the token
// field works, and the page stays usable at phone width. Screenshots land in docs/.
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { DEV_TOKEN, ROOT, startWranglerDev, type DevServer } from "./wrangler-dev.ts";

const CHROMIUM_ARGS = [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-quic",
  "--no-first-run", "--disable-component-update", "--disable-sync",
];
// `UPDATE_SCREENSHOTS=1 npm test` refreshes the committed screenshots; other runs write to a temp dir.
const DOCS = process.env.UPDATE_SCREENSHOTS === "1" ? join(ROOT, "docs") : mkdtempSync(join(tmpdir(), "baton-shots-"));

let dev: DevServer;
let browser: BrowserContext;
let profileDir: string;
const servers: ServeClient[] = [];

interface ServeClient {
  machine: string;
  close(): Promise<void>;
}

/** A raw serve connection that claims and heartbeats like `baton serve`, without running anything. */
async function serve(agent: string, machine: string): Promise<ServeClient> {
  const ws = new WebSocket(`${dev.url.replace("http", "ws")}/agents/${agent}/serve?machine=${machine}`, {
    headers: { authorization: `Bearer ${DEV_TOKEN}` },
  });
  const leased = new Promise<void>((resolve, reject) => {
    ws.on("message", (data) => {
      const frame = JSON.parse(String(data)) as { type: string };
      if (frame.type === "welcome") ws.send(JSON.stringify({ type: "serve_lease", op: "claim" }));
      if (frame.type === "serve_lease") resolve();
    });
    ws.once("error", reject);
    ws.once("close", () => reject(new Error(`${machine} closed before its lease frame`)));
  });
  await leased;
  const heartbeat = setInterval(() => ws.send('{"type":"ping"}'), 5_000);
  const client: ServeClient = {
    machine,
    async close() {
      clearInterval(heartbeat);
      if (ws.readyState === WebSocket.CLOSED) return;
      const closed = new Promise((resolve) => ws.once("close", resolve));
      ws.close(1000, "done");
      await closed;
    },
  };
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

/** How far the widest element sticks out past the viewport's right edge, in CSS pixels. */
const horizontalOverflow = (page: Page) => page.evaluate(() =>
  Math.max(...[...document.querySelectorAll("body *")].map((e) => e.getBoundingClientRect().right)) - window.innerWidth);

const card = (page: Page, agent: string) => page.locator(`article.agent[data-agent="${agent}"]`);

beforeAll(async () => {
  dev = await startWranglerDev();
  profileDir = mkdtempSync(join(tmpdir(), "baton-chromium-"));
  browser = await chromium.launchPersistentContext(profileDir, {
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1100, height: 820 },
  });
  mkdirSync(DOCS, { recursive: true });
});

afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
  await browser?.close();
  await dev?.stop();
  if (profileDir) rmSync(profileDir, { recursive: true, force: true });
});

describe("presence dashboard", () => {
  it("shows the holder and its standby live, and the standby taking over without a reload", async () => {
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

    const started = Date.now();
    await alpha.close();
    await reviewer.locator('[data-role="holder"] .machine', { hasText: "beta" }).waitFor();
    const handoverShownMs = Date.now() - started;
    console.log(`dashboard showed the new holder ${handoverShownMs} ms after the old one closed`);
    expect(cspViolations).toEqual([]);
    expect(handoverShownMs).toBeLessThan(1000);
    await reviewer.locator('.history [data-reason="closed"]', { hasText: "alpha #1 → beta #2" }).waitFor();
    await expect(reviewer.locator('[data-role="standby"]').count()).resolves.toBe(0);
    expect(await page.evaluate(() => (window as unknown as { loadedOnce?: boolean }).loadedOnce)).toBe(true);
    await page.close();
  });

  it("renders a realistic screen at desktop and phone width", async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()));
    const page = await browser.newPage();
    await page.goto(dev.url);
    await page.getByText("npx baton serve reviewer -- ./run-agent.sh").waitFor();
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);
    await page.setViewportSize({ width: 1100, height: 820 });
    const first = await serve("reviewer", "gpu-box-2");
    await serve("reviewer", "mac-studio");
    await serve("summarizer", "build-box-1");
    await serve("summarizer", "laptop-ana");
    await serve("summarizer", "ci-runner-7");
    await card(page, "reviewer").locator('[data-role="standby"] .machine', { hasText: "mac-studio" }).waitFor();
    await first.close();
    await serve("reviewer", "gpu-box-2");
    await postMessage("reviewer", "Review PR #214: rename the lease fence field");
    await card(page, "summarizer").locator('[data-role="standby"]', { hasText: "ci-runner-7" }).waitFor();
    await card(page, "reviewer").locator(".messages li", { hasText: "Review PR #214" }).waitFor();
    await card(page, "reviewer").locator('[data-role="holder"] .machine', { hasText: "mac-studio" }).waitFor();
    await card(page, "reviewer").locator('[data-role="standby"] .machine', { hasText: "gpu-box-2" }).waitFor();
    await card(page, "reviewer").locator('.history [data-reason="closed"]', { hasText: /gpu-box-2 #\d+ → mac-studio #\d+/ }).waitFor();
    await page.screenshot({ path: join(DOCS, "dashboard.png"), fullPage: true });

    await page.setViewportSize({ width: 390, height: 844 });
    await card(page, "summarizer").waitFor();
    expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);
    await page.screenshot({ path: join(DOCS, "dashboard-phone.png"), fullPage: true });
    await page.close();
  });

  it("reconnects by itself when the coordinator restarts, and shows who came back", async () => {
    const page = await browser.newPage();
    await page.goto(dev.url);
    await page.locator('#status[data-state="live"]').waitFor();
    await Promise.all(servers.splice(0).map((s) => s.close()));
    const { port, persistDir } = dev;
    await dev.stop();
    await page.locator('#status[data-state="retrying"]').waitFor();
    dev = await startWranglerDev({ port, persistDir });
    await page.locator('#status[data-state="live"]').waitFor({ timeout: 40_000 });
    await serve("reviewer", "back-again");
    await card(page, "reviewer").locator('[data-role="holder"] .machine', { hasText: "back-again" }).waitFor();
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
});
