// One `wrangler dev` and one headless Chromium (Debian's, through playwright-core) for every file
// of the e2e-browser project: a start-up of each is seconds of a core, and the files run one at a
// time. Each file takes an account of its own on the server (dashboard-accounts.ts) and a browser
// context of its own (dashboardFixture), so no file sees another's agents, pages or storage. The
// server keeps the coordinator's default heartbeat TTL (a page test is a long chain of waits on a
// loaded machine; the timed files are elsewhere) and a 1 s preference hysteresis, so that a runner
// of higher priority takes the lease within a test's patience. BATON_TEST_SHARED_DEV=0 gives every
// file a server and a browser of its own again.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";
import type { TestProject } from "vitest/node";
import { dashboardTokenEntries } from "./dashboard-accounts.ts";
import { startWranglerDev } from "./wrangler-dev.ts";

export const DASHBOARD_DEV_VARS = {
  BATON_PREFERENCE_HYSTERESIS_SECONDS: "1",
  BATON_TOKENS: dashboardTokenEntries().join(","),
};

export const CHROMIUM = {
  executablePath: "/usr/bin/chromium",
  headless: true,
  args: [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-quic",
    "--no-first-run", "--disable-component-update", "--disable-sync",
  ],
};

declare module "vitest" {
  export interface ProvidedContext {
    /** The project's wrangler dev and the Chromium server to connect to (absent with BATON_TEST_SHARED_DEV=0). */
    dashboardDev?: { url: string; browserEndpoint: string };
  }
}

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  if (process.env.BATON_TEST_SHARED_DEV === "0") return undefined;
  const [dev, browser] = await Promise.all([startWranglerDev({ vars: DASHBOARD_DEV_VARS }), chromium.launchServer(CHROMIUM)]);
  project.provide("dashboardDev", { url: dev.url, browserEndpoint: browser.wsEndpoint() });
  return async () => {
    await Promise.all([browser.close(), dev.stop()]);
    const log = join(dev.persistDir, "wrangler-dev.log");
    writeFileSync(log, dev.output());
    console.log(`the dashboard files' wrangler dev ${dev.url}: its output is in ${log}`);
  };
}
