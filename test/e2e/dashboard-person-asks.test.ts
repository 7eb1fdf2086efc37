// A person in the loop on the dashboard, in a real browser (Debian's chromium through
// playwright-core) against a real `wrangler dev`, with real runners of the client library: the
// "Needs a person" section lists every open question across agents (its message, question,
// checkpoint and deadline), a question is approved with text from the page and the handler's
// ctx.ask returns it, a choice answers from the page and each message shows who answered it (via
// "page"), a refusal (answered already) shows the coordinator's sentence, and a webhook's link
// marks its question. Claude Code's permission hook (`baton hook claude-code`) gets allow and deny
// from Approve and Reject tapped on a phone-sized page.
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { MessageHandler } from "../../client/node.ts";
import { ask, card, dashboardFixture, horizontalOverflow, screenshotDir, stillSameLoad } from "./dashboard-browser.ts";
import { until } from "./dashboard-person-api.ts";
import { freshCall, startHook } from "./hook-process.ts";
import { PERMISSION_REQUEST, PRE_TOOL_USE } from "../unit/claude-code-hook-inputs.ts";

const ACCOUNT = "dashboard-person-asks";
const SHOTS = screenshotDir();
const fx = dashboardFixture(ACCOUNT);
const open = (agent: string, machine: string, handler: MessageHandler) => fx.serve(agent, machine, handler);

describe("a person in the loop on the dashboard: questions", () => {
  it("says nobody is waiting; a parked question is listed at the top with its text, question, checkpoint and deadline, approved with text from the page, and ctx.ask returns it", async () => {
    const page = await fx.openLive();
    const section = page.locator("#person");
    await section.locator('[data-role="nobody-waiting"]', { hasText: "Nobody is waiting for a person." }).waitFor();
    const agent = "deployer";
    const runs: string[] = [];
    const checkpoint = { release: "v7", services: ["api", "web", "worker", "cron", "billing", "search", "mail"], canary: { percent: 5 } };
    const handler: MessageHandler = async (m, ctx) => {
      runs.push(m.text);
      const answer = await ctx.ask(`Ship ${m.text} to production?`, { deadlineSeconds: 600, checkpoint });
      return `${answer.choice}: ${answer.text ?? ""} (by ${answer.by.via})`;
    };
    const h = open(agent, "deploy-box", handler);
    await until(() => h.status.kind === "holder", "deploy-box holds");
    const id = await fx.http.postMessage(agent, "release 7 <b>now</b>");
    await fx.http.waitForStatus(agent, id, "parked");

    const item = ask(page, agent, id);
    await item.waitFor();
    expect(await item.getAttribute("data-kind")).toBe("question");
    await expect(section.locator('[data-role="nobody-waiting"]').isVisible()).resolves.toBe(false);
    await item.locator('[data-role="ask-text"]', { hasText: "release 7 <b>now</b>" }).waitFor();
    expect(await item.locator('[data-role="ask-agent"]').textContent()).toBe(agent);
    expect(await item.locator('[data-role="question"]').textContent()).toBe("Ship release 7 <b>now</b> to production?");
    await expect(page.locator("#person b").count()).resolves.toBe(0);
    // The checkpoint as pretty JSON, folded because it is long; the deadline and what it does then.
    const folded = item.locator('details[data-role="checkpoint"]');
    await folded.waitFor();
    expect(await folded.getAttribute("open")).toBeNull();
    await folded.locator("summary").click();
    expect(JSON.parse((await folded.locator('[data-role="checkpoint-json"]').textContent())!)).toEqual(checkpoint);
    expect(await folded.locator('[data-role="checkpoint-json"]').textContent()).toBe(JSON.stringify(checkpoint, null, 2));
    expect(await item.locator('[data-role="deadline"]').textContent()).toMatch(/^Deadline \d{2}:\d{2}:\d{2} \(in 9m \d+s\), then the message fails\.$/);
    expect(await item.locator('[data-role="answer-buttons"] button').allTextContents()).toEqual(["Approve", "Reject"]);
    // Nothing but elements inside the item's parts (a stray null once showed as the text "null").
    expect(await item.evaluate((li) => [...li.querySelectorAll(".ask-info, .ask-form")].flatMap((p) => [...p.childNodes]).filter((n) => n.nodeType === Node.TEXT_NODE).length)).toBe(0);

    await page.setViewportSize({ width: 390, height: 844 });
    expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);
    await section.screenshot({ path: join(SHOTS, "dashboard-person-phone.png") });
    await page.setViewportSize({ width: 1100, height: 1000 });

    await item.locator('[data-role="answer-text"]').fill("after the standup");
    await item.locator('button[data-choice="approve"]').click();
    const done = await fx.http.waitForStatus(agent, id, "acknowledged");
    expect(done.reply).toBe("approve: after the standup (by page)");
    // Run once to ask, once more from the top after the answer.
    expect(runs).toEqual(["release 7 <b>now</b>", "release 7 <b>now</b>"]);
    // The section follows presence: the item goes, and it says so when nobody else waits.
    await item.waitFor({ state: "detached" });
    await section.locator('[data-role="nobody-waiting"]').waitFor();
    await card(page, agent).locator(`.message[data-id="${id}"] [data-role="reply"]`, { hasText: "approve: after the standup (by page)" }).waitFor();
    expect(await stillSameLoad(page)).toBe(true);
    await page.close();
  });

  it("Claude Code's hook asks on a phone-sized page: Approve there allows the tool call and Reject denies the next, each naming who answered on the dashboard", async () => {
    const page = await fx.openLive();
    await page.setViewportSize({ width: 390, height: 844 });
    const agent = "claude-code";
    const allow = startHook(fx.url, freshCall(PRE_TOOL_USE, "phone"), ["--agent", agent, "--machine", "ana-laptop"], fx.token);
    const allowId = await allow.asked;
    const item = ask(page, agent, allowId);
    await item.waitFor();
    expect(await item.locator('[data-role="question"]').textContent()).toMatch(/^Claude Code wants to use Bash on ana-laptop in \/home\/ana\/shop:\n\{"command":"npm publish",/);
    expect(await item.locator('[data-role="answer-buttons"] button').allTextContents()).toEqual(["Approve", "Reject"]);
    expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);
    await page.locator("#person").screenshot({ path: join(SHOTS, "dashboard-hook-phone.png") });
    await item.locator('button[data-choice="approve"]').click();
    const allowed = await allow.done;
    const approved = `baton: approved by ${ACCOUNT} (token default, on the dashboard)`;
    expect(allowed.code).toBe(0);
    expect(JSON.parse(allowed.stdout)).toEqual({ systemMessage: approved, hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "allow", permissionDecisionReason: approved } });

    const deny = startHook(fx.url, freshCall(PERMISSION_REQUEST, "phone"), ["--agent", agent], fx.token);
    const denyId = await deny.asked;
    const next = ask(page, agent, denyId);
    await next.waitFor();
    await next.locator('[data-role="answer-text"]').fill("use make clean");
    await next.locator('button[data-choice="reject"]').click();
    await next.locator('[data-role="confirm"][data-for="reject"] [data-role="confirm-yes"]').click();
    const denied = await deny.done;
    const rejected = `baton: rejected by ${ACCOUNT} (token default, on the dashboard): use make clean`;
    expect(denied.code).toBe(0);
    expect(JSON.parse(denied.stdout)).toEqual({ systemMessage: rejected, hookSpecificOutput: { hookEventName: "PermissionRequest", decision: { behavior: "deny", message: rejected } } });
    await page.close();
  });

  it("more open questions than presence lists (23, the newest 20 listed): the count says all 23 and a line names the 3 not listed", async () => {
    const agent = "e2e-person-many";
    for (let i = 0; i < 23; i++) {
      const res = await fx.http.api<{ id: number }>("POST", `/agents/${agent}/messages`, { text: `q${i}`, question: { text: `Question ${i}?` } });
      expect(res.status).toBe(201);
    }
    const page = await fx.openLive();
    await page.locator(`#person [data-role="ask"][data-agent="${agent}"]`).nth(19).waitFor();
    expect(await page.locator(`#person [data-role="ask"][data-agent="${agent}"]`).count()).toBe(20);
    const more = page.locator('#person [data-role="person-more"]');
    await until(async () => (await more.textContent())?.includes(`3 of ${agent} (baton history ${agent})`), "the line naming the 3 not listed");
    const listed = await page.locator("#person [data-role=\"ask\"]").count();
    const counted = Number((await page.locator('#person [data-role="person-count"]').textContent())?.replace(/[()]/g, ""));
    expect(counted - listed).toBeGreaterThanOrEqual(3);
    expect(await more.textContent()).toMatch(new RegExp(`^and ${counted - listed} more, older, not listed here: `));
    await page.close();
  });

  it("one button per choice: the chosen one answers from the page, and the message shows who answered, with which token, via page, when and with what", async () => {
    const page = await fx.openLive();
    const agent = "chooser";
    const handler: MessageHandler = async (_m, ctx) => {
      const answer = await ctx.ask("Which region first?", { choices: ["eu-west", "us-east"] });
      return `first: ${answer.choice}`;
    };
    open(agent, "chooser-box", handler);
    const id = await fx.http.postMessage(agent, "roll out the cache");
    const item = ask(page, agent, id);
    await item.waitFor();
    expect(await item.locator('[data-role="answer-buttons"] button').allTextContents()).toEqual(["eu-west", "us-east", "Reject"]);
    expect(await item.locator('[data-role="deadline"]').textContent()).toBe("No deadline: it waits until someone answers.");
    await item.locator('[data-role="answer-text"]').fill("quiet hours there");
    await item.locator('button[data-choice="us-east"]').click();
    const done = await fx.http.waitForStatus(agent, id, "acknowledged");
    expect(done.reply).toBe("first: us-east");
    expect(done.answers).toMatchObject([{ choice: "us-east", text: "quiet hours there", via: "page", token: "default", account: ACCOUNT }]);

    await card(page, agent).scrollIntoViewIfNeeded();
    const record = card(page, agent).locator(`.message[data-id="${id}"] [data-role="answer-record"]`);
    await record.waitFor();
    expect(await record.getAttribute("data-via")).toBe("page");
    expect(await record.locator('[data-role="answer-via"]').textContent()).toBe("page");
    expect(await record.locator('[data-role="answer-choice"]').textContent()).toBe("us-east");
    expect(await record.locator('[data-role="answer-text"]').textContent()).toBe("quiet hours there");
    expect(await record.locator('[data-role="answer-token"]').textContent()).toBe("default");
    expect(await record.locator('[data-role="answer-account"]').textContent()).toBe(ACCOUNT);
    expect(await record.locator("time").textContent()).toMatch(/^\d{2}:\d{2}:\d{2}$/);
    expect(await record.textContent()).toContain("to: Which region first?");
    await page.close();
  });

  it("a webhook's link (#agent=…&message=…) marks its question and scrolls to it; a link to a message nobody waits on says so", async () => {
    const asker: MessageHandler = async (m, ctx) => {
      await ctx.ask(`Go ahead with ${m.text}?`);
      return "done";
    };
    open("linked-one", "link-box-1", asker);
    open("linked-two", "link-box-2", asker);
    const first = await fx.http.postMessage("linked-one", "the first");
    const second = await fx.http.postMessage("linked-two", "the second");
    await fx.http.waitForStatus("linked-one", first, "parked");
    await fx.http.waitForStatus("linked-two", second, "parked");

    const page = await fx.context.newPage();
    await page.goto(`${fx.url}/#agent=linked-two&message=${second}`);
    const target = ask(page, "linked-two", second);
    await target.and(page.locator("[data-targeted]")).waitFor();
    expect(await ask(page, "linked-one", first).getAttribute("data-targeted")).toBeNull();
    const box = (await target.boundingBox())!;
    expect(box.y).toBeGreaterThanOrEqual(0);
    expect(box.y + box.height).toBeLessThanOrEqual(page.viewportSize()!.height);
    const gone = page.locator('#person [data-role="target-gone"]');
    expect(await gone.isVisible()).toBe(false);

    // The same page follows a new link without a reload; a message that waits for nobody is said to.
    await page.evaluate(() => (location.hash = "#agent=linked-one&message=999"));
    await gone.filter({ hasText: "Message #999 of linked-one is not waiting for a person any more." }).waitFor();
    expect(await page.locator("#person [data-targeted]").count()).toBe(0);
    await page.close();
  });

  it("an answer the coordinator refuses (answered elsewhere first) shows its sentence, and the item goes with the next presence frame", async () => {
    const page = await fx.context.newPage();
    // The page's live feed is held back on demand, so it still shows a question answered elsewhere.
    let hold = false;
    const held: string[] = [];
    const pageSide: { send: (m: string) => void } = { send: () => {} };
    await page.routeWebSocket(/\/observe$/, (ws) => {
      const server = ws.connectToServer();
      pageSide.send = (m) => ws.send(m);
      server.onMessage((m) => (hold ? held.push(String(m)) : ws.send(m)));
    });
    await page.goto(fx.url);
    await page.locator('#status[data-state="live"]').waitFor();
    const agent = "twice";
    open(agent, "twice-box", async (_m, ctx) => `ok ${(await ctx.ask("Go?")).choice}`);
    const id = await fx.http.postMessage(agent, "once only");
    const item = ask(page, agent, id);
    await item.locator('button[data-choice="approve"]').waitFor();
    hold = true;
    expect((await fx.http.api("POST", `/agents/${agent}/messages/${id}/approve`, {})).status).toBe(200);
    await item.locator('button[data-choice="approve"]').click();
    const status = item.locator('[data-role="answer-status"][data-state="refused"]');
    await status.waitFor();
    expect(await status.textContent()).toMatch(new RegExp(`^message ${id} is (queued|running|acknowledged): there is nothing to answer`));
    hold = false;
    for (const m of held.splice(0)) pageSide.send(m);
    await item.waitFor({ state: "detached" });
    await fx.http.waitForStatus(agent, id, "acknowledged");
    await page.close();
  });

});
