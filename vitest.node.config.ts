// Pure modules and end-to-end tests: plain Node, real processes against `wrangler dev`. The unit
// files run in parallel. The end-to-end files are three projects that scripts/test.mjs runs one
// after the other:
// - "e2e-timed", the files that assert a real-time bound (a handover within half a TTL, a view true
//   within three TTLs, output within a second, the flood's takeover), one file at a time: real
//   heartbeat TTLs of a few seconds must not share two cores with more than the suite's other lane;
// - "e2e-browser", the files that drive Debian's chromium (the dashboard, the OAuth page), one at a time;
// - "e2e", all the others, one file at a time (two at a time, maxWorkers 2, failed most files on a
//   machine at load 20-28 on 2026-12-06; not yet measured quiet).
// In e2e and e2e-timed most files share one wrangler dev (shared-dev.global.ts); a few start their own.
// The dashboard files of e2e-browser share one wrangler dev and one Chromium (dashboard-dev.global.ts).
// A new file goes in "e2e" unless it measures wall time (TIMED) or launches chromium (BROWSER).
import { defineConfig } from "vitest/config";

// lease-run.test.ts is in "e2e": its one check of time is a lower bound (--wait-timeout waited its
// second), which no load can break.
const TIMED = [
  "client-library", "coordinator-restart", "flood", "lease-run-lost", "preference", "serve-failover", "serve-lifeline", "who-directory",
].map((name) => `test/e2e/${name}.test.ts`);

const BROWSER = ["test/e2e/dashboard-*.test.ts", "test/e2e/oauth.test.ts"];

const e2e = { testTimeout: 60_000, hookTimeout: 120_000, setupFiles: ["test/e2e/setup.ts"] };

export default defineConfig({
  test: {
    teardownTimeout: 10_000,
    projects: [
      {
        // One module cache per worker, not per file: a fresh one per file imported zod, the wire
        // and the client again 90 times (about two thirds of the project's CPU). The files touch no
        // global they do not restore (no module mocks, stubbed globals or fake timers).
        test: { name: "unit", include: ["test/unit/**/*.test.ts"], isolate: false, testTimeout: 60_000, hookTimeout: 120_000, sequence: { groupOrder: 0 } },
      },
      {
        test: {
          name: "e2e", include: ["test/e2e/**/*.test.ts"], exclude: [...TIMED, ...BROWSER], ...e2e, fileParallelism: false, sequence: { groupOrder: 1 },
          // One wrangler dev per project for the files that can share it (sharedServeFixture); the others start their own.
          globalSetup: ["test/e2e/shared-dev.global.ts"],
          // One worker runs every file, importing vitest, the client and the SDKs once instead of once a file: ten
          // files took 21 CPU-s instead of 28 (about 0.7 a file) at load 7-11. Helpers keep no state past a file
          // (serve-helpers' file token is reset after the file that set it; setup.ts wraps fetch once).
          isolate: false,
        },
      },
      {
        test: { name: "e2e-timed", include: TIMED, ...e2e, fileParallelism: false, sequence: { groupOrder: 2 }, globalSetup: ["test/e2e/shared-dev.global.ts"] },
      },
      // A page's test is a chain of waits (each bounded by playwright's 30 s): on a loaded machine
      // the chain takes longer than one wait, so the test gets two minutes.
      {
        test: {
          name: "e2e-browser", include: BROWSER, ...e2e, testTimeout: 120_000, fileParallelism: false, sequence: { groupOrder: 3 },
          globalSetup: ["test/e2e/dashboard-dev.global.ts"],
          // One worker runs every file, importing vitest, playwright-core and the client once instead of once a file
          // (about two CPU-seconds each): no file keeps state in a module (dashboardFixture keeps its own).
          isolate: false,
        },
      },
    ],
  },
});
