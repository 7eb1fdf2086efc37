// A person in the loop on the dashboard, in a real browser (Debian's chromium through
// playwright-core) against a real `wrangler dev`, with real runners of the client library: the
// "Needs a person" section lists every open question across agents (its message, question,
// checkpoint and deadline), a question is approved with text from the page and the handler's
// ctx.ask returns it, a choice and Reject answer from the page, an unknown outcome is answered
// Done, a refusal (answered already) shows the coordinator's sentence, each message shows who
// answered it (via "page"), pause and drain behind an in-page confirmation, a failed message
// retried, pool runs named by runner, a webhook's link marks its question, and a read-only token
// sees none of the buttons. Claude Code's permission hook (`baton hook claude-code`) gets allow and
// deny from Approve and Reject tapped on a phone-sized page.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serve, type MessageHandler, type ServeHandle } from "../../client/node.ts";
import { DEV_TOKEN, ROOT, startWranglerDev, type DevServer } from "./wrangler-dev.ts";
import { freshCall, startHook } from "./hook-process.ts";
import { card, horizontalOverflow, launchBrowser, openLive as openLiveAt, stillSameLoad, type Browser } from "./dashboard-browser.ts";
import { personApi, until } from "./dashboard-person-api.ts";
import { PERMISSION_REQUEST, PRE_TOOL_USE } from "../unit/claude-code-hook-inputs.ts";

const SHOTS = mkdtempSync(join(tmpdir(), "baton-shots-"));
const READER = "e2e-dashboard-reader-token";
/** A second person (scope answer) beside the dev token ("default"), for a question two people decide. */
const BOB = "e2e-dashboard-bob-token";
const sha = (t: string) => createHash("sha256").update(t).digest("hex");
const BATON_BIN = join(ROOT, "dist/cli/main.js");

// Started here, not in beforeAll: whether the coordinator has token scopes (GET /whoami) decides
// below whether the read-only test can run at all.
// READER (scope read) is here too: the read-only test watches this account, every earlier test's
// agents included, instead of one of its own on a second server.
const dev: DevServer = await startWranglerDev({ vars: { BATON_TOKENS: `dev:${sha(DEV_TOKEN)},dev:bob:answer:${sha(BOB)},dev:wall:read:${sha(READER)}` } });

let launched: Browser;
let browser: BrowserContext;
const handles: ServeHandle[] = [];
const { api, postMessage, view, presence, waitForStatus } = personApi(dev.url);
/** A new page on the dashboard, live, marked so that later checks can tell it was never reloaded. */
const openLive = () => openLiveAt(browser, dev.url);

function open(agent: string, machine: string, handler: MessageHandler): ServeHandle {
  const h = serve(agent, handler, { url: dev.url, token: DEV_TOKEN, machine });
  handles.push(h);
  return h;
}

/** Waits on the run's abort signal: an effect or a run that hangs until its runner stops. */
function hang(signal: AbortSignal): Promise<never> {
  return new Promise((_resolve, reject) => signal.addEventListener("abort", () => reject(signal.reason)));
}

const ask = (page: Page, agent: string, id: number) => page.locator(`#person [data-role="ask"][data-agent="${agent}"][data-id="${id}"]`);

beforeAll(async () => {
  launched = await launchBrowser({ width: 1100, height: 1000 });
  browser = launched.context;
});

afterAll(async () => {
  await Promise.all(handles.splice(0).map((h) => h.stop()));
  await launched?.close();
  await dev?.stop();
  console.log(`screenshots in ${SHOTS}`);
});

describe("a person in the loop on the dashboard", () => {
  it("says nobody is waiting; a parked question is listed at the top with its text, question, checkpoint and deadline, approved with text from the page, and ctx.ask returns it", async () => {
    const page = await openLive();
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
    const id = await postMessage(agent, "release 7 <b>now</b>");
    await waitForStatus(agent, id, "parked");

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
    const done = await waitForStatus(agent, id, "acknowledged");
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
    const page = await openLive();
    await page.setViewportSize({ width: 390, height: 844 });
    const agent = "claude-code";
    const allow = startHook(dev.url, freshCall(PRE_TOOL_USE, "phone"), ["--agent", agent, "--machine", "ana-laptop"]);
    const allowId = await allow.asked;
    const item = ask(page, agent, allowId);
    await item.waitFor();
    expect(await item.locator('[data-role="question"]').textContent()).toMatch(/^Claude Code wants to use Bash on ana-laptop in \/home\/ana\/shop:\n\{"command":"npm publish",/);
    expect(await item.locator('[data-role="answer-buttons"] button').allTextContents()).toEqual(["Approve", "Reject"]);
    expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);
    await page.locator("#person").screenshot({ path: join(SHOTS, "dashboard-hook-phone.png") });
    await item.locator('button[data-choice="approve"]').click();
    const allowed = await allow.done;
    const approved = "baton: approved by dev (token default, on the dashboard)";
    expect(allowed.code).toBe(0);
    expect(JSON.parse(allowed.stdout)).toEqual({ systemMessage: approved, hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "allow", permissionDecisionReason: approved } });

    const deny = startHook(dev.url, freshCall(PERMISSION_REQUEST, "phone"), ["--agent", agent]);
    const denyId = await deny.asked;
    const next = ask(page, agent, denyId);
    await next.waitFor();
    await next.locator('[data-role="answer-text"]').fill("use make clean");
    await next.locator('button[data-choice="reject"]').click();
    await next.locator('[data-role="confirm"][data-for="reject"] [data-role="confirm-yes"]').click();
    const denied = await deny.done;
    const rejected = "baton: rejected by dev (token default, on the dashboard): use make clean";
    expect(denied.code).toBe(0);
    expect(JSON.parse(denied.stdout)).toEqual({ systemMessage: rejected, hookSpecificOutput: { hookEventName: "PermissionRequest", decision: { behavior: "deny", message: rejected } } });
    await page.close();
  });

  it("more open questions than presence lists (23, the newest 20 listed): the count says all 23 and a line names the 3 not listed", async () => {
    const agent = "e2e-person-many";
    for (let i = 0; i < 23; i++) {
      const res = await api<{ id: number }>("POST", `/agents/${agent}/messages`, { text: `q${i}`, question: { text: `Question ${i}?` } });
      expect(res.status).toBe(201);
    }
    const page = await openLive();
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
    const page = await openLive();
    const agent = "chooser";
    const handler: MessageHandler = async (_m, ctx) => {
      const answer = await ctx.ask("Which region first?", { choices: ["eu-west", "us-east"] });
      return `first: ${answer.choice}`;
    };
    open(agent, "chooser-box", handler);
    const id = await postMessage(agent, "roll out the cache");
    const item = ask(page, agent, id);
    await item.waitFor();
    expect(await item.locator('[data-role="answer-buttons"] button').allTextContents()).toEqual(["eu-west", "us-east", "Reject"]);
    expect(await item.locator('[data-role="deadline"]').textContent()).toBe("No deadline: it waits until someone answers.");
    await item.locator('[data-role="answer-text"]').fill("quiet hours there");
    await item.locator('button[data-choice="us-east"]').click();
    const done = await waitForStatus(agent, id, "acknowledged");
    expect(done.reply).toBe("first: us-east");
    expect(done.answers).toMatchObject([{ choice: "us-east", text: "quiet hours there", via: "page", token: "default", account: "dev" }]);

    await card(page, agent).scrollIntoViewIfNeeded();
    const record = card(page, agent).locator(`.message[data-id="${id}"] [data-role="answer-record"]`);
    await record.waitFor();
    expect(await record.getAttribute("data-via")).toBe("page");
    expect(await record.locator('[data-role="answer-via"]').textContent()).toBe("page");
    expect(await record.locator('[data-role="answer-choice"]').textContent()).toBe("us-east");
    expect(await record.locator('[data-role="answer-text"]').textContent()).toBe("quiet hours there");
    expect(await record.locator('[data-role="answer-token"]').textContent()).toBe("default");
    expect(await record.locator('[data-role="answer-account"]').textContent()).toBe("dev");
    expect(await record.locator("time").textContent()).toMatch(/^\d{2}:\d{2}:\d{2}$/);
    expect(await record.textContent()).toContain("to: Which region first?");
    await page.close();
  });

  it("a question two people decide: the page shows who has and has not answered; approved from the page it stays parked (1 of 2), approved by a second person from the CLI the run goes on", async () => {
    const page = await openLive();
    const agent = "two-keys";
    const handler: MessageHandler = async (_m, ctx) => {
      const answer = await ctx.ask("Charge $500 to card 4242?", { needs: 2, approvers: ["default", "bob", "carol"] });
      return `${answer.choice} by ${answer.by.token}`;
    };
    open(agent, "two-keys-box", handler);
    const id = await postMessage(agent, "charge");
    const item = ask(page, agent, id);
    await item.locator('[data-role="quorum-count"]', { hasText: "0 of 2 approvals" }).waitFor();
    expect(await item.locator('[data-role="not-answered"]').allTextContents()).toEqual(["default: not yet", "bob: not yet", "carol: not yet"]);

    await item.locator('button[data-choice="approve"]').click();
    await item.locator('[data-role="answer-status"]', { hasText: "recorded, 1 of 2 approvals; waiting for bob, carol" }).waitFor();
    await item.locator('[data-role="quorum-count"]', { hasText: "1 of 2 approvals" }).waitFor();
    expect(await item.locator('[data-role="answered"]').getAttribute("data-token")).toBe("default");
    expect(await item.locator('[data-role="not-answered"]').allTextContents()).toEqual(["bob: not yet", "carol: not yet"]);
    expect((await view(agent, id)).status).toBe("parked");

    const baton = (...args: string[]) => spawnSync(process.execPath, [BATON_BIN, ...args], {
      cwd: ROOT, env: { ...process.env, BATON_URL: dev.url, BATON_TOKEN: BOB }, encoding: "utf8", timeout: 30_000,
    });
    const shown = baton("show", agent, String(id));
    expect(shown.stdout).toMatch(/\n {2}needs {7}2 approvals from distinct people \(1 so far: approve by the unnamed token\), any one reject rejects; waiting for token bob, token carol\n/);
    const cli = baton("approve", agent, String(id));
    expect(cli.status, cli.stderr).toBe(0);
    expect(cli.stdout).toMatch(new RegExp(`^approved message ${id} of ${agent}: (queued|running)`));
    const done = await waitForStatus(agent, id, "acknowledged");
    expect(done.reply).toBe("approve by bob");
    expect(done.answers.map((a) => [a.token, a.choice, a.via])).toEqual([["default", "approve", "page"], ["bob", "approve", "cli"]]);
    await item.waitFor({ state: "detached" });
    await page.close();
  });

  it("an effect two people must approve: approved from the page it stays parked; the machine that asked leaves; approved by a second person from the CLI, the standby spends the permit and the effect runs once", async () => {
    const page = await openLive();
    const agent = "two-keys-effect";
    let charged = 0;
    const handler = (machine: string): MessageHandler => async (_m, ctx) => {
      await ctx.effect("charge", () => { charged += 1; }, { approve: { question: "Charge $500 to card 4242?", args: { card: "4242", amount: 500 }, needs: 2, approvers: ["default", "bob"] } });
      return `charged on ${machine}`;
    };
    const asker = open(agent, "asker-box", handler("asker-box"));
    await until(async () => (await presence(agent)).work !== undefined, "the asker serves");
    const id = await postMessage(agent, "charge");
    const item = ask(page, agent, id);
    await item.locator('[data-role="quorum-count"]', { hasText: "0 of 2 approvals" }).waitFor();
    expect(await item.textContent()).toContain('{"amount":500,"card":"4242"}');
    await item.locator('button[data-choice="approve"]').click();
    await item.locator('[data-role="answer-status"]', { hasText: "recorded, 1 of 2 approvals; waiting for bob" }).waitFor();
    expect((await view(agent, id)).status).toBe("parked");

    await asker.stop();
    open(agent, "standby-box", handler("standby-box"));
    const cli = spawnSync(process.execPath, [BATON_BIN, "approve", agent, String(id)], {
      cwd: ROOT, env: { ...process.env, BATON_URL: dev.url, BATON_TOKEN: BOB }, encoding: "utf8", timeout: 30_000,
    });
    expect(cli.status, cli.stderr).toBe(0);
    const done = await waitForStatus(agent, id, "acknowledged");
    expect(done.reply).toBe("charged on standby-box");
    expect(charged).toBe(1);
    const permits = (await api<{ permits: { effect: string; spent_token: number | null; by: { token: string; via: string } }[] }>("GET", `/agents/${agent}/messages/${id}`)).body.permits;
    expect(permits).toEqual([expect.objectContaining({ effect: "charge", spent_token: expect.any(Number), by: expect.objectContaining({ token: "bob", via: "cli" }) })]);
    await page.close();
  });

  it("Reject from the page asks first (Cancel changes nothing), then ends the message as rejected: it never runs again", async () => {
    const page = await openLive();
    const agent = "janitor";
    let runs = 0;
    const handler: MessageHandler = async (_m, ctx) => {
      runs++;
      await ctx.ask("Delete the old bucket?");
      return "deleted";
    };
    open(agent, "janitor-box", handler);
    const id = await postMessage(agent, "clean up");
    const item = ask(page, agent, id);
    await item.waitFor();
    expect(await item.getAttribute("data-kind")).toBe("question");
    await item.locator('[data-role="answer-text"]').fill("not this week");
    await item.locator('button[data-choice="reject"]').click();
    // Irreversible, so it asks first, in place, as Pause and Stop do; Cancel leaves it waiting.
    const confirm = item.locator('[data-role="confirm"][data-for="reject"]');
    expect(await confirm.locator(".prompt").textContent()).toBe(`Reject #${id} of ${agent}? The message ends and never runs again; this cannot be undone.`);
    expect(await page.evaluate(() => document.activeElement?.getAttribute("data-role"))).toBe("confirm-no");
    await confirm.locator('[data-role="confirm-no"]').click();
    await confirm.waitFor({ state: "detached" });
    expect((await view(agent, id)).status).toBe("parked");
    expect(await item.locator('[data-role="answer-text"]').inputValue()).toBe("not this week");
    await item.locator('button[data-choice="reject"]').click();
    await item.locator('[data-role="confirm"][data-for="reject"] [data-role="confirm-yes"]').click();
    const rejected = await waitForStatus(agent, id, "rejected");
    expect(rejected.answers).toMatchObject([{ choice: "reject", text: "not this week", via: "page" }]);
    await item.waitFor({ state: "detached" });
    // Full messages (with their answers) are fetched only for cards on screen.
    await card(page, agent).scrollIntoViewIfNeeded();
    const row = card(page, agent).locator(`.message[data-id="${id}"]`);
    await row.locator('.chip[data-status="rejected"]').waitFor();
    await row.locator('[data-role="answer-record"][data-choice="reject"][data-via="page"]').waitFor();
    await new Promise((r) => setTimeout(r, 500));
    expect(runs).toBe(1);
    await page.close();
  });

  it("a webhook's link (#agent=…&message=…) marks its question and scrolls to it; a link to a message nobody waits on says so", async () => {
    const asker: MessageHandler = async (m, ctx) => {
      await ctx.ask(`Go ahead with ${m.text}?`);
      return "done";
    };
    open("linked-one", "link-box-1", asker);
    open("linked-two", "link-box-2", asker);
    const first = await postMessage("linked-one", "the first");
    const second = await postMessage("linked-two", "the second");
    await waitForStatus("linked-one", first, "parked");
    await waitForStatus("linked-two", second, "parked");

    const page = await browser.newPage();
    await page.goto(`${dev.url}/#agent=linked-two&message=${second}`);
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
    const page = await browser.newPage();
    // The page's live feed is held back on demand, so it still shows a question answered elsewhere.
    let hold = false;
    const held: string[] = [];
    const pageSide: { send: (m: string) => void } = { send: () => {} };
    await page.routeWebSocket(/\/observe$/, (ws) => {
      const server = ws.connectToServer();
      pageSide.send = (m) => ws.send(m);
      server.onMessage((m) => (hold ? held.push(String(m)) : ws.send(m)));
    });
    await page.goto(dev.url);
    await page.locator('#status[data-state="live"]').waitFor();
    const agent = "twice";
    open(agent, "twice-box", async (_m, ctx) => `ok ${(await ctx.ask("Go?")).choice}`);
    const id = await postMessage(agent, "once only");
    const item = ask(page, agent, id);
    await item.locator('button[data-choice="approve"]').waitFor();
    hold = true;
    expect((await api("POST", `/agents/${agent}/messages/${id}/approve`, {})).status).toBe(200);
    await item.locator('button[data-choice="approve"]').click();
    const status = item.locator('[data-role="answer-status"][data-state="refused"]');
    await status.waitFor();
    expect(await status.textContent()).toMatch(new RegExp(`^message ${id} is (queued|running|acknowledged): there is nothing to answer`));
    hold = false;
    for (const m of held.splice(0)) pageSide.send(m);
    await item.waitFor({ state: "detached" });
    await waitForStatus(agent, id, "acknowledged");
    await page.close();
  });

  it("an effect whose outcome is unknown is listed with Done and Redo; Done with text from the page records it as the outcome and the message finishes", async () => {
    const page = await openLive();
    const agent = "cashier";
    let pays = 0;
    const handler: MessageHandler = async (_m, ctx) => {
      const receipt = await ctx.effect("pay", ({ signal }) => {
        pays++;
        return hang(signal);
      });
      return `paid: ${String(receipt)}`;
    };
    const a = open(agent, "till-a", handler);
    await until(() => a.status.kind === "holder", "till-a holds");
    const id = await postMessage(agent, "charge order 77");
    await until(() => pays === 1, "till-a began paying");
    await a.stop();
    open(agent, "till-b", handler);
    const item = ask(page, agent, id);
    await item.waitFor({ timeout: 30_000 });
    expect(await item.getAttribute("data-kind")).toBe("unknown");
    expect(await item.locator('[data-role="question"] strong').textContent()).toBe("Did pay happen?");
    expect(await item.locator('button[data-action="answer"]').allTextContents()).toEqual(["Done", "Redo"]);
    await item.locator('[data-role="answer-text"]').fill("rcpt-42");
    await item.locator('button[data-choice="done"]').click();
    const done = await waitForStatus(agent, id, "acknowledged");
    expect(done.reply).toBe("paid: rcpt-42");
    expect(pays).toBe(1);
    expect(done.answers).toMatchObject([{ choice: "done", text: "rcpt-42", via: "page" }]);
    await item.waitFor({ state: "detached" });
    await page.close();
  });

  it("pause and drain from the card happen only after their in-page confirmation; Cancel changes nothing", async () => {
    const page = await openLive();
    const agent = "pausable";
    const replies: string[] = [];
    open(agent, "desk-a", async (m) => (replies.push(m.text), `did ${m.text}`));
    open(agent, "desk-b", async (m) => (replies.push(m.text), `did ${m.text}`));
    const c = card(page, agent);
    await c.locator('[data-role="standby"]').waitFor();
    await c.scrollIntoViewIfNeeded();
    const dialogs: string[] = [];
    page.on("dialog", (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });

    await c.locator('[data-action="pause"]').click();
    const confirm = c.locator('[data-role="confirm"][data-for="pause"]');
    await confirm.waitFor();
    expect(await confirm.locator(".prompt").textContent()).toContain(`Pause ${agent}? Nothing is handed out until it is unpaused`);
    expect(await page.evaluate(() => document.activeElement?.getAttribute("data-role"))).toBe("confirm-no");
    await confirm.locator('[data-role="confirm-no"]').click();
    await confirm.waitFor({ state: "detached" });
    expect((await presence(agent)).controls.paused).toBe(false);

    await c.locator('[data-action="pause"]').click();
    await confirm.locator('[data-role="confirm-yes"]').click();
    await until(async () => (await presence(agent)).controls.paused, "paused");
    await c.locator('header [data-role="paused"]').waitFor();
    await c.locator('[data-role="action-result"]', { hasText: "paused" }).waitFor();
    await c.locator('[data-action="unpause"]').waitFor();
    const id = await postMessage(agent, "while paused");
    await c.locator(`.message[data-id="${id}"] [data-role="waiting"]`, { hasText: "paused" }).waitFor();
    expect(replies).toEqual([]);

    await c.locator('[data-action="drain"]', { hasText: "Drain desk-a" }).click();
    await c.locator('[data-role="confirm"][data-for="drain"] [data-role="confirm-yes"]').click();
    await until(async () => (await presence(agent)).controls.drained.some((d) => d.machine === "desk-a"), "desk-a drained");
    await c.locator('[data-role="drained-note"] [data-machine="desk-a"]').waitFor();
    await c.locator('[data-action="undrain"]', { hasText: "Undrain desk-a" }).click();
    await c.locator('[data-role="confirm"][data-for="undrain"] [data-role="confirm-yes"]').click();
    await until(async () => (await presence(agent)).controls.drained.length === 0, "desk-a undrained");

    await c.locator('[data-action="unpause"]').click();
    await c.locator('[data-role="confirm"][data-for="unpause"] [data-role="confirm-yes"]').click();
    await until(async () => !(await presence(agent)).controls.paused, "unpaused");
    await waitForStatus(agent, id, "acknowledged");
    expect(dialogs).toEqual([]);
    await page.setViewportSize({ width: 390, height: 844 });
    await c.locator('[data-action="pause"]').click();
    await confirm.waitFor();
    expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);
    await c.screenshot({ path: join(SHOTS, "dashboard-confirm-phone.png") });
    await confirm.locator('[data-role="confirm-no"]').click();
    expect((await presence(agent)).controls.paused).toBe(false);
    expect(await stillSameLoad(page)).toBe(true);
    await page.close();
  });

  it("a failed message is retried from the page behind its confirmation and then runs to its reply", async () => {
    const page = await openLive();
    const agent = "flaky";
    expect((await api("PUT", `/agents/${agent}/policy`, { max_attempts: 1 })).status).toBe(200);
    let broken = true;
    const h = open(agent, "flaky-box", async (m) => {
      if (broken) throw new Error("the upstream API said 503");
      return `fetched ${m.text}`;
    });
    await until(() => h.status.kind === "holder", "flaky-box holds");
    const id = await postMessage(agent, "the report");
    await waitForStatus(agent, id, "failed");
    await card(page, agent).scrollIntoViewIfNeeded();
    const row = card(page, agent).locator(`.message[data-id="${id}"]`);
    await row.locator('.chip[data-status="failed"]').waitFor();
    // Presence says why it failed; the row shows it with its Retry.
    await card(page, agent).locator(`[data-role="work"] [data-role="failed-item"][data-id="${id}"]`, { hasText: "the upstream API said 503" }).waitFor();
    broken = false;
    await row.locator('[data-action="retry"]').click();
    await row.locator('[data-role="confirm"][data-for="retry"] .prompt', { hasText: `Retry #${id}? It is queued again with a fresh set of attempts.` }).waitFor();
    expect((await view(agent, id)).status).toBe("failed");
    await row.locator('[data-role="confirm"] [data-role="confirm-yes"]').click();
    const done = await waitForStatus(agent, id, "acknowledged");
    expect(done.reply).toBe("fetched the report");
    expect(done.answers).toMatchObject([{ choice: "retry", via: "page" }]);
    await row.locator('[data-role="reply"]', { hasText: "fetched the report" }).waitFor();
    await page.close();
  });

  it("in pool mode each running message names the runner that runs it: machine and claim", async () => {
    const page = await openLive();
    const agent = "pooled";
    expect((await api("PUT", `/agents/${agent}/policy`, { mode: "pool", max_running: 2 })).status).toBe(200);
    const release: (() => void)[] = [];
    const handler: MessageHandler = (_m, ctx) => new Promise((resolve, reject) => {
      release.push(() => resolve("ok"));
      ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason));
    });
    open(agent, "pool-a", handler);
    open(agent, "pool-b", handler);
    const first = await postMessage(agent, "job one");
    const second = await postMessage(agent, "job two");
    const running = await until(async () => {
      const p = await presence(agent);
      return p.work.running.length === 2 ? p.work.running : null;
    }, "both run");
    expect(new Set(running.map((r) => r.machine))).toEqual(new Set(["pool-a", "pool-b"]));
    const c = card(page, agent);
    await c.scrollIntoViewIfNeeded();
    for (const r of running) {
      const item = c.locator(`[data-role="work"] [data-role="running-item"][data-id="${r.id}"]`);
      await item.waitFor();
      expect(await item.textContent()).toContain(`#${r.id} on ${r.machine} (claim #${r.claim_seq})`);
      await c.locator(`.message[data-id="${r.id}"] [data-role="run"]`, { hasText: `running on ${r.machine}, claim #${r.claim_seq} · attempt 1` }).waitFor();
    }
    for (const r of release.splice(0)) r();
    await waitForStatus(agent, first, "acknowledged");
    await waitForStatus(agent, second, "acknowledged");
    await page.close();
  });

  it("a token that /whoami says is read-only sees the questions and every card, and no button that changes anything (whoami answered in the browser)", async () => {
    const agent = "watched";
    open(agent, "watched-box", async (_m, ctx) => `ok ${(await ctx.ask("Proceed?")).choice}`);
    const id = await postMessage(agent, "needs an eye");
    await waitForStatus(agent, id, "parked");
    const page = await browser.newPage();
    await page.route("**/whoami", (route) => route.fulfill({ status: 200, contentType: "application/json", body: JSON.stringify({ account: "dev", token: "wall", scopes: ["read"] }) }));
    await page.goto(dev.url);
    await page.locator('#status[data-state="live"]', { hasText: "read-only token" }).waitFor();
    const item = ask(page, agent, id);
    await item.locator('[data-role="question"]', { hasText: "Proceed?" }).waitFor();
    await item.locator('[data-role="answer-commands"]', { hasText: `baton approve ${agent} ${id} [TEXT]` }).waitFor();
    await card(page, agent).locator('[data-role="holder"]').waitFor();
    await expect(page.locator('[data-action], [data-role="answer-form"], [data-role="send"]:visible, [data-role="actions"]').count()).resolves.toBe(0);
    await expect(page.locator("#agents button:not([data-role=open-card]):visible, #person button:visible").count()).resolves.toBe(0);
    await page.close();
    expect((await api("POST", `/agents/${agent}/messages/${id}/approve`, {})).status).toBe(200);
    await waitForStatus(agent, id, "acknowledged");
  });

  it("a read-only token (scope read, from BATON_TOKENS) sees no buttons", async () => {
    const agent = "scoped-watch";
    const runner = serve(agent, async (_m, ctx) => `ok ${(await ctx.ask("Proceed?")).choice}`, { url: dev.url, token: DEV_TOKEN, machine: "scoped-box" });
    handles.push(runner);
    const res = await fetch(`${dev.url}/agents/${agent}/messages`, {
      method: "POST", headers: { authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" }, body: JSON.stringify({ text: "look only" }),
    });
    const { id } = (await res.json()) as { id: number };
    const page = await browser.newPage();
    await page.goto(dev.url);
    await page.evaluate((t) => localStorage.setItem("baton.token", t), READER);
    await page.reload();
    await page.locator('#status[data-state="live"]', { hasText: "read-only token" }).waitFor();
    await ask(page, agent, id).locator('[data-role="question"]', { hasText: "Proceed?" }).waitFor();
    await card(page, agent).locator('[data-role="holder"]').waitFor();
    await expect(page.locator('[data-action], [data-role="answer-form"], [data-role="send"]:visible, [data-role="actions"]').count()).resolves.toBe(0);
    await page.evaluate(() => localStorage.removeItem("baton.token"));
    await page.close();
    await runner.stop();
  });
});
