// One `wrangler dev` for every end-to-end file of a project (e2e, e2e-timed) that does not crash,
// restart or start its coordinator itself: they share it through `sharedServeFixture()` instead of
// starting one each (a start-up is 3-4 s of a core on a quiet two-core machine, more on a busy
// one). Its settings are serveFixture's (2 s heartbeat TTL, 1 s presence scan); it knows the tokens
// of shared-accounts.ts, so files that test scopes use named tokens of account "dev" and files that
// read or configure a whole account (the directory, the account webhook, metrics) use an account of
// their own. BATON_TEST_SHARED_DEV=0 gives every file a server of its own again.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { sharedTokenEntries } from "./shared-accounts.ts";
import { startWranglerDev } from "./wrangler-dev.ts";

export const SHARED_SERVE_VARS = {
  BATON_HEARTBEAT_TTL_SECONDS: "2",
  BATON_PRESENCE_SCAN_SECONDS: "1",
  // Only runners started with --priority see it (preference.test.ts); the default is 10 s.
  BATON_PREFERENCE_HYSTERESIS_SECONDS: "2",
  BATON_TOKENS: sharedTokenEntries().join(","),
};

declare module "vitest" {
  export interface ProvidedContext {
    /** The shared wrangler dev's URL (absent with BATON_TEST_SHARED_DEV=0). */
    sharedDevUrl?: string;
  }
}

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  // Two loaded runs once lost a request each on it ("other side closed"); so did files on servers
  // of their own: a test that blocked its event loop past the keep-alive wrote on a connection the
  // server had closed. test/e2e/setup.ts gives every request a connection of its own.
  if (process.env.BATON_TEST_SHARED_DEV === "0") return undefined;
  const dev = await startWranglerDev({ vars: SHARED_SERVE_VARS });
  project.provide("sharedDevUrl", dev.url);
  return async () => {
    await dev.stop();
    // What it said (a crash, a reload), for a run whose shared-server files failed.
    const log = join(dev.persistDir, "wrangler-dev.log");
    writeFileSync(log, dev.output());
    console.log(`shared wrangler dev ${dev.url}: its output is in ${log}`);
  };
}
