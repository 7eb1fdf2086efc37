// A vitest reporter that prints, when a run ends, every test file's wall time, slowest first, and
// where it went: in its tests, in its hooks (beforeAll/afterAll: mostly starting and stopping
// `wrangler dev`), in importing it, and how many `wrangler dev` start-ups it waited for and how
// long those took (test/e2e/wrangler-dev.ts appends one line per start-up to the file named by
// BATON_TEST_DEV_STARTS, naming the file that waited; one started outside any file, the shared
// one of test/e2e/shared-dev.global.ts, is listed apart). Its slowest test is named, to see real waits.
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";

export const DEV_STARTS_ENV = "BATON_TEST_DEV_STARTS";

const s = (ms) => `${(ms / 1000).toFixed(1)}`.padStart(6);

export default class FileTimesReporter {
  started = new Map();

  onInit(vitest) {
    this.root = vitest.config.root;
    // Set here, before the test workers fork, so they inherit it.
    process.env[DEV_STARTS_ENV] ??= join(mkdtempSync(join(tmpdir(), "baton-dev-starts-")), "starts.jsonl");
  }

  onTestModuleStart(testModule) {
    this.started.set(testModule.moduleId, Date.now());
  }

  onTestRunEnd(testModules) {
    const starts = readStarts(process.env[DEV_STARTS_ENV]);
    // A start-up belongs to the file started last before it (the end-to-end files run one at a time).
    const ownerOf = (at) => [...this.started].filter(([, t]) => t <= at).sort((a, b) => b[1] - a[1])[0]?.[0];
    const rows = testModules.map((m) => {
      const d = m.diagnostic();
      const wall = d.environmentSetupDuration + d.prepareDuration + d.collectDuration + d.setupDuration + d.duration;
      const tests = [...m.children.allTests()].map((t) => ({ name: t.fullName, ms: t.diagnostic()?.duration ?? 0 }));
      const inTests = tests.reduce((sum, t) => sum + t.ms, 0);
      const slowest = tests.reduce((a, b) => (b.ms > a.ms ? b : a), { name: "-", ms: 0 });
      const mine = starts.filter((x) => (x.file ?? ownerOf(x.at)) === m.moduleId);
      return {
        file: relative(this.root ?? process.cwd(), m.moduleId),
        wall, inTests, hooks: Math.max(0, d.duration - inTests), load: wall - d.duration,
        devStarts: mine.length, devMs: mine.reduce((sum, x) => sum + x.ms, 0), slowest,
      };
    }).sort((a, b) => b.wall - a.wall);
    if (rows.length === 0) return;
    const firstStart = Math.min(...this.started.values());
    const before = starts.filter((x) => !x.file && x.at < firstStart);
    const total = (key) => rows.reduce((sum, r) => sum + r[key], 0);
    const lines = [
      "",
      "file times (s): wall = tests + hooks + import; dev = wrangler dev start-ups (count, s) inside that wall",
      `${"  wall"} ${" tests"} ${" hooks"} ${"import"} ${"dev".padStart(10)}  file  (slowest test, s)`,
      ...rows.map((r) =>
        `${s(r.wall)} ${s(r.inTests)} ${s(r.hooks)} ${s(r.load)} ${`${r.devStarts} ×${s(r.devMs)}`.padStart(10)}  ${r.file}  (${r.slowest.name.slice(0, 70)}, ${(r.slowest.ms / 1000).toFixed(1)})`),
      ...(before.length === 0 ? [] : [`${s(before.reduce((sum, x) => sum + x.ms, 0))} ${"".padStart(20)} ${`${before.length} ×`.padStart(10)}  before the first file: the shared wrangler dev (test/e2e/shared-dev.global.ts)`]),
      `${s(total("wall"))} ${s(total("inTests"))} ${s(total("hooks"))} ${s(total("load"))} ${`${total("devStarts")} ×${s(total("devMs"))}`.padStart(10)}  all ${rows.length} files`,
      "",
    ];
    process.stdout.write(lines.join("\n") + "\n");
  }
}

function readStarts(path) {
  if (!path || !existsSync(path)) return [];
  return readFileSync(path, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
}
