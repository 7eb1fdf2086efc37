// A running message's live output on the dashboard, in a real browser (Debian's chromium through
// playwright-core) against a real `wrangler dev`, written by the client library's ctx.output: it
// shows within a fraction of a second while the handler still runs, follows the tail until the
// person scrolls up and again at the bottom, says a takeover in place, shows hostile output
// (escapes, NUL, bidi, a long line, invalid UTF-8) as harmless text, and fits a phone.
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import type { MessageContext, MessageHandler } from "../../client/node.ts";
import { dashboardFixture, horizontalOverflow } from "./dashboard-browser.ts";
import { until } from "./dashboard-person-api.ts";

const fx = dashboardFixture("dashboard-output");
const open = (agent: string, machine: string, handler: MessageHandler) => fx.serve(agent, machine, handler);
const postMessage = (agent: string, text: string) => fx.http.postMessage(agent, text);

/** A handler that runs until the test lets it go, handing the test its ctx to write output with. */
function controlled(): { handler: MessageHandler; ctx: () => MessageContext | null; finish: () => void } {
  let current: MessageContext | null = null;
  let release: () => void = () => {};
  const handler: MessageHandler = async (_m, ctx) => {
    current = ctx;
    await new Promise<void>((resolve) => {
      release = resolve;
      ctx.signal.addEventListener("abort", () => resolve());
    });
    return "done";
  };
  return { handler, ctx: () => current, finish: () => release() };
}

async function openPage(viewport = { width: 1100, height: 1000 }): Promise<Page> {
  const page = await fx.openLive();
  await page.setViewportSize(viewport);
  return page;
}

const pane = (page: Page, agent: string, id: number) => page.locator(`article.agent[data-agent="${agent}"] .message[data-id="${id}"] [data-role="output"]`);

describe("live output on the dashboard", () => {
  it("shows a running message's output within a fraction of a second, follows the tail, stops when scrolled up and resumes at the bottom", async () => {
    const agent = "narrator";
    const page = await openPage();
    const run = controlled();
    open(agent, "desk-1", run.handler);
    const id = await postMessage(agent, "tell the story");
    await until(() => run.ctx() !== null, "the run started");
    const out = pane(page, agent, id);
    await out.waitFor({ timeout: 15_000 });

    // Output written now shows while the handler still runs; measured from the write to the page.
    const lags: number[] = [];
    for (let i = 1; i <= 3; i++) {
      const started = Date.now();
      void run.ctx()!.output(`line ${i} of the story\n`);
      await out.locator('[data-role="output-text"]', { hasText: `line ${i} of the story` }).waitFor({ timeout: 5_000 });
      lags.push(Date.now() - started);
    }
    console.log(`dashboard output lag (ms): ${lags.join(", ")}`);
    expect(Math.min(...lags)).toBeLessThan(1000);

    const text = out.locator('[data-role="output-text"]');
    const gap = () => text.evaluate((e) => e.scrollHeight - e.clientHeight - e.scrollTop);
    await run.ctx()!.output(Array.from({ length: 200 }, (_, i) => `filler ${i}\n`).join(""));
    await text.filter({ hasText: "filler 199" }).waitFor();
    await expect.poll(gap).toBeLessThanOrEqual(2);

    // Scrolled up: new output does not pull the person back down.
    await text.evaluate((e) => { e.scrollTop = 0; e.dispatchEvent(new Event("scroll")); });
    await expect.poll(() => out.getAttribute("data-following")).toBe("false");
    await run.ctx()!.output("while scrolled up\n");
    await text.filter({ hasText: "while scrolled up" }).waitFor();
    expect(await text.evaluate((e) => e.scrollTop)).toBe(0);

    // Back at the bottom: it follows again.
    await text.evaluate((e) => { e.scrollTop = e.scrollHeight; e.dispatchEvent(new Event("scroll")); });
    await expect.poll(() => out.getAttribute("data-following")).toBe("true");
    await run.ctx()!.output(Array.from({ length: 50 }, (_, i) => `more ${i}\n`).join(""));
    await text.filter({ hasText: "more 49" }).waitFor();
    await expect.poll(gap).toBeLessThanOrEqual(2);

    run.finish();
    await out.locator('[data-role="output-state"]', { hasText: "final: acknowledged" }).waitFor({ timeout: 15_000 });
    expect(await out.locator('[data-role="output-note"][data-kind="attempt-end"]').textContent()).toMatch(/attempt 1 replied/);
    await page.close();
  });

  it("says 'attempt 2 on … took over' in place when the holder stops mid-run", async () => {
    const agent = "relay";
    const page = await openPage();
    const first = controlled();
    const a = open(agent, "laptop-1", first.handler);
    await until(() => a.status.kind === "holder", "laptop-1 holds");
    const second = controlled();
    open(agent, "laptop-2", second.handler);
    const id = await postMessage(agent, "carry on");
    await until(() => first.ctx() !== null, "attempt 1 started");
    await first.ctx()!.output("from laptop-1\n");
    const out = pane(page, agent, id);
    await out.locator('[data-role="output-text"]', { hasText: "from laptop-1" }).waitFor({ timeout: 15_000 });

    await a.stop();
    await until(() => second.ctx() !== null, "attempt 2 started on laptop-2", 30_000);
    await second.ctx()!.output("from laptop-2\n");
    const text = out.locator('[data-role="output-text"]');
    await text.filter({ hasText: "from laptop-2" }).waitFor({ timeout: 15_000 });
    const shown = await text.textContent();
    expect(shown).toMatch(/from laptop-1\n[\s\S]*— attempt 1 [^\n]+\n— attempt 2 on laptop-2 took over\nfrom laptop-2/);
    second.finish();
    await page.close();
  });

  it("shows hostile output (escapes, NUL, bidi, a long line, invalid UTF-8) as harmless text, and fits a phone", async () => {
    const agent = "hostile";
    const page = await openPage({ width: 375, height: 700 });
    const title = await page.title();
    const run = controlled();
    open(agent, "box", run.handler);
    const id = await postMessage(agent, "print anything");
    await until(() => run.ctx() !== null, "the run started");
    const ctx = run.ctx()!;
    await ctx.output("\u001b[2J\u001b[31mred\u001b[0m \u001b]0;owned\u0007 nul:\u0000 bidi:\u202Egnp.exe\n<img src=x onerror=alert(1)>\n");
    await ctx.output(new Uint8Array([0x62, 0x61, 0x64, 0x3a, 0xff, 0xfe, 0xc3, 0x0a]));
    await ctx.output(`${"x".repeat(200_000)}\nend of hostile\n`);
    const out = pane(page, agent, id);
    const text = out.locator('[data-role="output-text"]');
    await text.filter({ hasText: "end of hostile" }).waitFor({ timeout: 30_000 });

    const shown = (await text.textContent()) ?? "";
    expect(shown).not.toMatch(/[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u202E]/);
    expect(shown).toContain("\uFFFD[31mred\uFFFD[0m");
    expect(shown).toContain("nul:\uFFFD bidi:\uFFFDgnp.exe");
    expect(shown).toContain("<img src=x onerror=alert(1)>");
    expect(shown).toContain("bad:\uFFFD\uFFFD\uFFFD\n");
    // Only text and the pane's own note spans: nothing the output said became an element.
    expect(await text.locator("img").count()).toBe(0);
    expect(await page.title()).toBe(title);
    expect(await horizontalOverflow(page)).toBeLessThanOrEqual(1);
    const box = await out.boundingBox();
    expect(box!.width).toBeLessThanOrEqual(375);
    run.finish();
    await page.close();
  });
});
