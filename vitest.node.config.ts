// Pure modules and end-to-end tests: plain Node, real processes against `wrangler dev`. Two
// projects that run side by side: the unit files in parallel, the end-to-end files one at a time
// (each starts its own wrangler dev, and two of those at once would fight over two cores).
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    teardownTimeout: 10_000,
    projects: [
      {
        test: { name: "unit", include: ["test/unit/**/*.test.ts"], testTimeout: 60_000, hookTimeout: 120_000 },
      },
      {
        test: { name: "e2e", include: ["test/e2e/**/*.test.ts"], testTimeout: 60_000, hookTimeout: 120_000, fileParallelism: false },
      },
    ],
  },
});
