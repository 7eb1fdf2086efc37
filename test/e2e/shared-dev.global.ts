// With BATON_TEST_SHARED_DEV=1: one `wrangler dev` for the end-to-end files that only need serveFixture's settings (2 s
// heartbeat TTL, 1 s presence scan) and keep to agents of their own (uniqueAgent): they share it
// through `sharedServeFixture()` instead of starting one each (a start-up is 3-4 s on a quiet
// two-core machine, more on a busy one). Files that crash or restart their coordinator, set other
// variables, or read the whole account (the directory, account webhooks, the dashboard) keep their own.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { startWranglerDev } from "./wrangler-dev.ts";

export const SHARED_SERVE_VARS = { BATON_HEARTBEAT_TTL_SECONDS: "2", BATON_PRESENCE_SCAN_SECONDS: "1" };

declare module "vitest" {
  export interface ProvidedContext {
    /** The shared wrangler dev's URL (BATON_TEST_SHARED_DEV=1; else absent). */
    sharedDevUrl?: string;
  }
}

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  // Opt-in until it is shown not to cost a flake: on a machine loaded to ~18 (load average), two
  // runs of ten files on one shared server each lost a request ("other side closed") that their own
  // servers had not lost in a run under the same load. Without it, each file starts its own.
  if (process.env.BATON_TEST_SHARED_DEV !== "1") return undefined;
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
