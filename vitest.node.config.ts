// Pure modules and end-to-end tests: plain Node, real processes against `wrangler dev`. The unit
// files run in parallel. The end-to-end files are two projects that scripts/test.mjs runs side by
// side, as two vitest runs (one run would hold both to one worker count): "e2e-timed", the files
// that assert a real-time bound (a handover within half a TTL, a view true within three TTLs,
// output within a second), one at a time and never beside each other, and "e2e", all the others,
// two at a time (most start their own wrangler dev on ports of their own; most of their time is
// spent waiting on real heartbeats and processes, not computing). A new file goes in "e2e" unless
// it measures wall time; then it goes in TIMED.
import { defineConfig } from "vitest/config";

const TIMED = [
  "client-library", "coordinator-restart", "dashboard", "dashboard-output", "lease-run", "preference", "restart-truth",
  "serve-failover", "serve-lifeline", "who-directory",
].map((name) => `test/e2e/${name}.test.ts`);

const e2e = { testTimeout: 60_000, hookTimeout: 120_000, setupFiles: ["test/e2e/setup.ts"] };

export default defineConfig({
  test: {
    teardownTimeout: 10_000,
    projects: [
      {
        test: { name: "unit", include: ["test/unit/**/*.test.ts"], testTimeout: 60_000, hookTimeout: 120_000, sequence: { groupOrder: 0 } },
      },
      {
        test: {
          name: "e2e", include: ["test/e2e/**/*.test.ts"], exclude: TIMED, ...e2e, maxWorkers: 2, sequence: { groupOrder: 1 },
          // One wrangler dev for the files that can share it (sharedServeFixture); the others start their own.
          globalSetup: ["test/e2e/shared-dev.global.ts"],
        },
      },
      { test: { name: "e2e-timed", include: TIMED, ...e2e, fileParallelism: false, sequence: { groupOrder: 2 } } },
    ],
  },
});
