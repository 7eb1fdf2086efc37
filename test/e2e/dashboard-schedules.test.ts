// Schedules on the dashboard, in a real browser (Debian's chromium through playwright-core) against
// a real `wrangler dev`: an agent's card lists its schedule with its cadence and next fire, and its
// latest fire links to the message it posted (`#agent=A&message=N`); a skipped slot says why.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { advanceClock, DEV_TOKEN, startWranglerDev, type DevServer } from "./wrangler-dev.ts";

const CHROMIUM_ARGS = [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-quic",
  "--no-first-run", "--disable-component-update", "--disable-sync",
];
const MIN = 60_000;

let dev: DevServer;
let browser: BrowserContext;
let profileDir: string;

async function api<T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${dev.url}${path}`, {
    method, headers: { authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as T };
}

beforeAll(async () => {
  dev = await startWranglerDev();
  profileDir = mkdtempSync(join(tmpdir(), "baton-chromium-"));
  browser = await chromium.launchPersistentContext(profileDir, { executablePath: "/usr/bin/chromium", headless: true, args: CHROMIUM_ARGS, viewport: { width: 1100, height: 1000 } });
});

afterAll(async () => {
  await browser?.close();
  await dev?.stop();
  if (profileDir) rmSync(profileDir, { recursive: true, force: true });
});

describe("schedules on the dashboard", () => {
  it("a card lists the agent's schedule with its next fire, its posted slot linked to the message and a busy skip with why", async () => {
    const agent = "scheduled";
    await advanceClock(dev.url, 0, { agent });
    const made = await api<{ id: number }>("POST", `/agents/${agent}/schedules`, { every_seconds: 60, text: "nightly report", on_busy: "reject" });
    expect(made.status).toBe(201);
    await advanceClock(dev.url, MIN, { agent });
    await advanceClock(dev.url, MIN, { agent });
    const page = await browser.newPage();
    await page.goto(dev.url);
    await page.locator('#status[data-state="live"]').waitFor();
    const card = page.locator(`article.agent[data-agent="${agent}"]`);
    const schedule = card.locator(`[data-role="schedule"][data-schedule="${made.body.id}"]`);
    await schedule.waitFor();
    expect(await schedule.locator("strong").textContent()).toBe(`#${made.body.id} every 60 s`);
    expect(await schedule.locator('[data-role="next-fire"]').textContent()).toMatch(/next \d{4}-\d\d-\d\dT/);
    const link = schedule.locator('[data-role="fire-message"]');
    expect(await link.getAttribute("href")).toBe(`#agent=${agent}&message=1`);
    expect(await schedule.locator('[data-outcome="skipped"]').textContent()).toContain("skipped: busy");
    await page.close();
  });
});
