// The dashboard's connection to its coordinator in a real browser (Debian's chromium through
// playwright-core) against a real `wrangler dev`: a lost coordinator reads as unreachable (not as an
// empty account) and the page reconnects by itself after a restart, the token field works and the
// token never reaches the URL, and a page on another origin cannot open the observer socket.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { BATON_PROTOCOL, tokenProtocol } from "../../worker/wire/token-protocol.ts";
import { card, dashboardFixture } from "./dashboard-browser.ts";
import { DASHBOARD_DEV_VARS } from "./dashboard-dev.global.ts";
import { personApi } from "./dashboard-person-api.ts";
import { rawRunners, replyingServe, type ClaimOptions, type ServeClient } from "./dashboard-runner.ts";
import { DEV_TOKEN, startWranglerDev } from "./wrangler-dev.ts";

const fx = dashboardFixture("dashboard-connection", { width: 1100, height: 820 });
const runners = rawRunners(fx);

describe("the dashboard and its coordinator", () => {
  it("a coordinator that cannot be reached reads as unreachable, not as an account with no agents", async () => {
    const page = await fx.context.newPage();
    await page.route("**/agents", (route) => route.abort("connectionrefused"));
    await page.goto(fx.url);
    await page.locator('[data-role="unreachable"]', { hasText: "Coordinator unreachable" }).waitFor();
    await page.locator('#status[data-state="retrying"]', { hasText: "unreachable" }).waitFor();
    await expect(page.getByText("No agent is connected").count()).resolves.toBe(0);
    await page.unroute("**/agents");
    await page.locator('#status[data-state="live"]').waitFor({ timeout: 20_000 });
    await expect(page.locator('[data-role="unreachable"]').count()).resolves.toBe(0);
    await page.close();
  });

  it("/favicon.ico answers without a token", async () => {
    const res = await fetch(`${fx.url}/favicon.ico`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/icon/);
  });

  it("reconnects by itself when the coordinator restarts, saying it is unreachable meanwhile, and shows who came back", async () => {
    // A coordinator of this test's own, with the project's tokens: it is killed and started again,
    // which the one every other file shares must never be. Its restart grace is a minute, not 10 s:
    // the grace runs from the object's first wake after the restart, which an alarm may bring
    // before wrangler dev answers again on a loaded machine.
    const vars = { ...DASHBOARD_DEV_VARS, BATON_RESTART_GRACE_SECONDS: "60" };
    let dev = await startWranglerDev({ vars });
    const own = { get url() { return dev.url; }, token: fx.token };
    const mine: ServeClient[] = [];
    const serve = async (agent: string, machine: string, claim: ClaimOptions = {}) => void mine.push(await replyingServe(own, agent, machine, undefined, claim));
    try {
      // A message nobody serves keeps its agent's card on the page: the cards must stay while the coordinator is gone.
      await personApi(dev.url, fx.token).postMessage("summarizer", "Summarize the outage");
      const page = await fx.context.newPage();
      await page.goto(dev.url);
      await page.locator('#status[data-state="live"]').waitFor();
      await card(page, "summarizer").waitFor();
      const homeRunner = { runnerId: "restorer-home-box" };
      await serve("restorer", "home-box", homeRunner);
      await card(page, "restorer").locator('[data-role="holder"] .machine', { hasText: "home-box" }).waitFor();
      const { port, persistDir } = dev;
      // Killed (-9), as a crash or a deploy drops every socket without the object hearing of it. A
      // SIGTERM lets wrangler dev close the sockets on its way out: on a loaded machine the object
      // then sometimes ran the runner's close before it died (the lease was released, "closed", 0.1 s
      // after the claim and 15 s before the restart), so nobody was left to restore and the runner
      // came back to a fresh claim.
      await dev.crash();
      await page.locator('#status[data-state="retrying"]').waitFor();
      await page.locator('[data-role="unreachable-banner"]', { hasText: "Coordinator unreachable" }).waitFor();
      // The same 24-hour clock as the rest of the page, not "1:50:37 PM".
      expect(await page.locator('[data-role="unreachable-banner"]').textContent()).toMatch(/unreachable since \d{2}:\d{2}:\d{2}: /);
      await card(page, "summarizer").waitFor();
      await Promise.all(mine.splice(0).map((s) => s.close()));
      dev = await startWranglerDev({ port, persistDir, vars });
      // The restarted coordinator keeps restorer's lease for its holder's runner for the restart
      // grace, which may run from the restart itself: the runner comes back at once, not after the
      // page's reconnect backoff (up to 15 s).
      await serve("restorer", "home-box", homeRunner);
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
    } finally {
      await Promise.all(mine.map((s) => s.close()));
      await dev.stop();
    }
  });

  it("a refused token opens the login field; the saved token brings the list, and never appears in the URL", async () => {
    await runners.serve("notifier", "pi-4");
    const page = await fx.context.newPage();
    await page.goto(fx.url);
    await page.evaluate(() => localStorage.setItem("baton.token", "not-a-real-token"));
    await page.reload();
    await page.locator('#status[data-state="signed-out"]').waitFor();
    await page.locator("#login").waitFor({ state: "visible" });
    await page.fill("#token-input", fx.token);
    await page.click('#login button[type="submit"]');
    await page.locator('#status[data-state="live"]').waitFor();
    await card(page, "notifier").waitFor();
    expect(page.url()).not.toContain(fx.token);
    expect(await page.evaluate(() => localStorage.getItem("baton.token"))).toBe(fx.token);
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
    }), [`${fx.url.replace("http", "ws")}/observe`, [BATON_PROTOCOL, tokenProtocol(DEV_TOKEN)]] as const);
    try {
      const page = await fx.context.newPage();
      await page.goto(elsewhere);
      expect(await open(page)).toBe("refused");
      await page.goto(fx.url);
      expect(await open(page)).toBe("open");
      await page.close();
    } finally {
      other.close();
    }
  });
});
