// Pure modules and end-to-end tests: plain Node, real processes against `wrangler dev`.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/unit/**/*.test.ts", "test/e2e/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    teardownTimeout: 10_000,
    fileParallelism: false,
  },
});
