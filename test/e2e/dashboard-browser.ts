// The browser side of the dashboard's end-to-end files (dashboard*.test.ts): each file's fixture
// (its account on the project's wrangler dev, a browser context of its own on the project's
// Chromium, its runners) and the page checks the files make.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, inject } from "vitest";
import { serve, type MessageHandler, type ServeHandle } from "../../client/node.ts";
import { EPOCH_COOKIE, freshStorage, resetBrowser } from "./browser-reset.ts";
import { dashboardToken, type DashboardAccount } from "./dashboard-accounts.ts";
import { CHROMIUM, DASHBOARD_DEV_VARS } from "./dashboard-dev.global.ts";
import { personApi } from "./dashboard-person-api.ts";
import { startWranglerDev, type DevServer } from "./wrangler-dev.ts";

export interface DashboardFixture {
  /** The coordinator the file's pages and requests go to. */
  readonly url: string;
  /** The default token of the file's account: every page of the context signs in with it. */
  readonly token: string;
  readonly context: BrowserContext;
  /** The coordinator over HTTP with the file's token (dashboard-person-api.ts). */
  readonly http: ReturnType<typeof personApi>;
  /** A new page on the dashboard, live, marked so that later checks can tell it was never reloaded. */
  openLive(): Promise<Page>;
  /** A runner of the client library on the file's account, stopped after the file. */
  serve(agent: string, machine: string, handler: MessageHandler, priority?: number): ServeHandle;
}

/**
 * The file's account `account` on the project's wrangler dev and a context of its own on the
 * project's Chromium (dashboard-dev.global.ts), or, with BATON_TEST_SHARED_DEV=0, a server and a
 * browser of the file's own. Every page of the context starts with the account's token saved
 * (unless a test saved another), as a person who signed in; after each test, the pages it left
 * open are closed, and the next test's first page finds the storage cleared (browser-reset.ts).
 */
export function dashboardFixture(account: DashboardAccount, viewport = { width: 1100, height: 1000 }): DashboardFixture {
  const token = dashboardToken(account);
  const runners: ServeHandle[] = [];
  let url: string | undefined;
  let own: DevServer | undefined;
  let browser: Browser | undefined;
  let context: BrowserContext | undefined;
  let http: ReturnType<typeof personApi> | undefined;

  beforeAll(async () => {
    let coordinator: ProjectCoordinator;
    [coordinator, browser] = await Promise.all([projectCoordinator(), projectChromium()]);
    ({ url, own } = coordinator);
    http = personApi(url, token);
    context = await browser.newContext({ viewport });
    await context.addInitScript(freshStorage, { token, cookie: EPOCH_COOKIE });
  });
  afterEach(() => resetBrowser(context, url));
  afterAll(async () => {
    await Promise.all(runners.splice(0).map((r) => r.stop()));
    await context?.close();
    await browser?.close();
    await own?.stop();
  });

  const ready = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error("the dashboard fixture is not started yet");
    return value;
  };
  return {
    get url() { return ready(url); },
    token,
    get context() { return ready(context); },
    get http() { return ready(http); },
    openLive: () => openLive(ready(context), ready(url)),
    serve(agent, machine, handler, priority) {
      const h = serve(agent, handler, { url: ready(url), token, machine, priority });
      runners.push(h);
      return h;
    },
  };
}

export interface ProjectCoordinator {
  url: string;
  /** The file's own server, to stop after it (BATON_TEST_SHARED_DEV=0). */
  own?: DevServer;
}

/** The project's wrangler dev (dashboard-dev.global.ts), or, with BATON_TEST_SHARED_DEV=0, a new one with its settings. */
export async function projectCoordinator(): Promise<ProjectCoordinator> {
  const shared = inject("dashboardDev");
  if (shared) return { url: shared.url };
  const own = await startWranglerDev({ vars: DASHBOARD_DEV_VARS });
  return { url: own.url, own };
}

/** The project's Chromium, connected to (close() disconnects), or one of the file's own with BATON_TEST_SHARED_DEV=0. */
export async function projectChromium(): Promise<Browser> {
  const shared = inject("dashboardDev");
  return shared ? chromium.connect(shared.browserEndpoint) : chromium.launch(CHROMIUM);
}

/** A new page on the dashboard at `url`, live, marked so that later checks can tell it was never reloaded. */
export async function openLive(context: BrowserContext, url: string): Promise<Page> {
  const page = await context.newPage();
  await page.goto(url);
  await page.locator('#status[data-state="live"]').waitFor();
  await markLoaded(page);
  return page;
}

/** Marks the page, so a later check (stillSameLoad) can tell that what it shows came without a reload. */
export async function markLoaded(page: Page): Promise<void> {
  await page.evaluate(() => ((window as unknown as { loadedOnce: boolean }).loadedOnce = true));
}

export async function stillSameLoad(page: Page): Promise<boolean> {
  return page.evaluate(() => (window as unknown as { loadedOnce?: boolean }).loadedOnce === true);
}

/** How far the widest element sticks out past the viewport's right edge, in CSS pixels (logged with its name). */
export async function horizontalOverflow(page: Page): Promise<number> {
  const widest = await page.evaluate(() => {
    let worst = { right: -Infinity, name: "" };
    for (const e of document.querySelectorAll("body *")) {
      const right = e.getBoundingClientRect().right;
      if (right > worst.right) worst = { right, name: `${e.tagName.toLowerCase()}.${e.className}` };
    }
    return { overflow: worst.right - window.innerWidth, name: worst.name };
  });
  if (widest.overflow > 0) console.log(`widest element: ${widest.name}, ${widest.overflow} px past the viewport`);
  return widest.overflow;
}

/** An agent's card on the dashboard. */
export const card = (page: Page, agent: string) => page.locator(`article.agent[data-agent="${agent}"]`);

/** Waits on the run's abort signal: an effect or a run that hangs until its runner stops. */
export function hang(signal: AbortSignal): Promise<never> {
  return new Promise((_resolve, reject) => signal.addEventListener("abort", () => reject(signal.reason)));
}

/** An item of the "Needs a person" section: message `id` of `agent`. */
export const ask = (page: Page, agent: string, id: number) => page.locator(`#person [data-role="ask"][data-agent="${agent}"][data-id="${id}"]`);

/** A fresh directory for a file's screenshots (dashboard-wall.test.ts writes docs/ ones on demand). */
export const screenshotDir = (): string => mkdtempSync(join(tmpdir(), "baton-shots-"));

/** One unbreakable 300-character word. */
export const LONG_WORD = "x".repeat(300);
/** A message longer than a card is wide, ending in one unbreakable 300-character word (LONG_WORD). */
export const LONG_MESSAGE = `Summarize the incident thread and propose a fix. ${"The holder lost its socket while a run was half done. ".repeat(12)}${LONG_WORD}`;
