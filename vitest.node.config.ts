// Pure modules and end-to-end tests: plain Node, real processes against `wrangler dev`. Two
// projects, one after the other: the unit files in parallel, then the end-to-end files one at a
// time (most start their own wrangler dev, some share one, and real heartbeat TTLs of a few seconds must not share
// two cores with anything else of this run).
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    teardownTimeout: 10_000,
    projects: [
      {
        test: { name: "unit", include: ["test/unit/**/*.test.ts"], testTimeout: 60_000, hookTimeout: 120_000, sequence: { groupOrder: 0 } },
      },
      {
        test: {
          name: "e2e", include: ["test/e2e/**/*.test.ts"], testTimeout: 60_000, hookTimeout: 120_000,
          fileParallelism: false, sequence: { groupOrder: 1 },
          // One wrangler dev for the files that can share it (sharedServeFixture); the others start their own.
          globalSetup: ["test/e2e/shared-dev.global.ts"],
        },
      },
    ],
  },
});
