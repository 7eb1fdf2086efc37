// The dashboard's Stop, in a real browser (Debian's chromium through playwright-core) against a
// real `wrangler dev`, with a real runner of the client library: a running message's Stop asks
// first (Cancel changes nothing), then cancels it: the handler's ctx.signal aborts with a
// MessageCancelledError naming who and why, the row shows who stopped it, and the runner takes
// the next message. A queued message's Stop ends it before it ever runs.
import { describe, expect, it } from "vitest";
import { MessageCancelledError } from "../../client/node.ts";
import { dashboardFixture } from "./dashboard-browser.ts";
import { until } from "./dashboard-person-api.ts";

const fx = dashboardFixture("dashboard-stop");

type View = { status: string; reply: string | null; cancelled?: { token: string; via: string; reason: string | null } | null };
const api = <T>(method: string, path: string, body?: unknown) => fx.http.api<T>(method, path, body);
const status = async (agent: string, id: number) => (await api<View>("GET", `/agents/${agent}/messages/${id}`)).body;
const post = (agent: string, text: string) => fx.http.postMessage(agent, text);

describe("Stop on the dashboard", () => {
  it("a running message is stopped only after its confirmation: the handler's signal aborts with who and why, the row says who stopped it, and the runner takes the next", async () => {
    const agent = "stoppable";
    const aborted: unknown[] = [];
    const h = fx.serve(agent, "stop-box", async (m, ctx) => {
      if (m.text !== "forever") return `did ${m.text}`;
      await new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => resolve()));
      aborted.push(ctx.signal.reason);
      return "never";
    });
    await until(() => h.status.kind === "holder", "stop-box holds");
    const page = await fx.openLive();
    const id = await post(agent, "forever");
    const next = await post(agent, "the next");
    await until(async () => (await status(agent, id)).status === "running", "running");
    const row = page.locator(`article.agent[data-agent="${agent}"] .message[data-id="${id}"]`);
    await row.locator('.chip[data-status="running"]').waitFor();
    await row.locator('[data-action="cancel"]').click();
    await row.locator('[data-role="confirm"][data-for="cancel"] .prompt', { hasText: `Stop #${id}? Its run is stopped now, and it cannot be retried.` }).waitFor();
    await row.locator('[data-role="confirm"] [data-role="confirm-no"]').click();
    expect((await status(agent, id)).status).toBe("running");
    await row.locator('[data-action="cancel"]').click();
    await row.locator('[data-role="confirm"] [data-role="confirm-yes"]').click();
    const stopped = await until(async () => {
      const v = await status(agent, id);
      return v.status === "cancelled" ? v : null;
    }, "cancelled");
    expect(stopped.cancelled).toMatchObject({ token: "default", via: "page", reason: "stopped from the dashboard" });
    await until(() => aborted.length > 0, "the handler's signal aborted");
    expect(aborted[0]).toBeInstanceOf(MessageCancelledError);
    expect(aborted[0]).toMatchObject({ id, by: "default", reason: "stopped from the dashboard", code: "cancelled" });
    expect((await until(async () => {
      const v = await status(agent, next);
      return v.status === "acknowledged" ? v : null;
    }, "the next message done")).reply).toBe("did the next");
    expect((await status(agent, id)).reply).toBeNull();
    await row.locator('[data-role="cancelled"] [data-role="cancel-token"]', { hasText: "default" }).waitFor();
    await row.locator('[data-role="cancelled"]', { hasText: "via page" }).waitFor();
    await expect(row.locator('[data-action="cancel"]').count()).resolves.toBe(0);
    await page.close();
  });

  it("a queued message's Stop ends it before it ever runs", async () => {
    const agent = "stop-queued";
    const ran: number[] = [];
    const h = fx.serve(agent, "late-box", (m) => void ran.push(m.id));
    await until(() => h.status.kind === "holder", "late-box holds");
    // Paused, so the message stays queued (and the card stays: it has a connection) until the Stop.
    expect((await api("POST", `/agents/${agent}/pause`, {})).status).toBe(200);
    const page = await fx.openLive();
    const id = await post(agent, "not yet");
    const row = page.locator(`article.agent[data-agent="${agent}"] .message[data-id="${id}"]`);
    await row.locator('.chip[data-status="queued"]').waitFor();
    await row.locator('[data-action="cancel"]').click();
    await row.locator('[data-role="confirm"][data-for="cancel"] .prompt', { hasText: `Stop #${id}? It never runs, and it cannot be retried.` }).waitFor();
    await row.locator('[data-role="confirm"] [data-role="confirm-yes"]').click();
    await row.locator('.chip[data-status="cancelled"]').waitFor();
    expect((await api("POST", `/agents/${agent}/unpause`, {})).status).toBe(200);
    const after = await post(agent, "now");
    await until(async () => (await status(agent, after)).status === "acknowledged", "the later one done");
    expect(ran).toEqual([after]);
    await page.close();
  });
});
