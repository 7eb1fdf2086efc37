// Schedules on the dashboard, in a real browser (Debian's chromium through playwright-core) against
// a real `wrangler dev`: an agent's card lists its schedule with its cadence and next fire, and its
// latest fire links to the message it posted (`#agent=A&message=N`); a skipped slot says why.
import { describe, expect, it } from "vitest";
import { dashboardFixture } from "./dashboard-browser.ts";
import { advanceClock } from "./wrangler-dev.ts";

const MIN = 60_000;
const fx = dashboardFixture("dashboard-schedules");

describe("schedules on the dashboard", () => {
  it("a card lists the agent's schedule with its next fire, its posted slot linked to the message and a busy skip with why", async () => {
    const agent = "scheduled";
    await advanceClock(fx.url, 0, { agent }, fx.token);
    const made = await fx.http.api<{ id: number }>("POST", `/agents/${agent}/schedules`, { every_seconds: 60, text: "nightly report", on_busy: "reject" });
    expect(made.status).toBe(201);
    await advanceClock(fx.url, MIN, { agent }, fx.token);
    await advanceClock(fx.url, MIN, { agent }, fx.token);
    const page = await fx.openLive();
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
