// The whole test suite: installs what it needs (npm packages, Debian's chromium), then three lanes:
// the build and the end-to-end files in Node; the Durable Object tests in workerd and the browser's
// end-to-end files; and, once the build is done, the typechecks, the Python client's tests (pytest,
// against its own wrangler dev) and the unit files. What runs beside the first lane keeps its output in a
// file, printed when it ends. BATON_TEST_SERIAL=1 runs
// every phase alone, one after the other (to time them, or on a machine with one core).
// Every phase has a wall-clock bound, so a wedged runner fails the suite instead of eating CI's 90 minutes;
// the bounds leave room for a loaded machine (a typecheck of 30 s of CPU took over 4 minutes at a load of 20).
// A vitest run that hangs (a workerd crash can strand the pool) is killed and run once more;
// a run that reported a failing test is never retried (see test-phase.mjs). The first phase that
// fails stops the others.
import { execSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { aptInstall, installed, PYTHON_DEBS } from "./debian-packages.mjs";
import { phase as runPhase, stopAll } from "./test-phase.mjs";

const MINUTE = 60_000;
const started = Date.now();
// file-times-reporter prints each file's time, and where it went, when a run ends.
const VITEST_FLAGS = "--reporter=default --reporter=./scripts/failure-flag-reporter.mjs --reporter=./scripts/file-times-reporter.mjs";

function elapsed(since) {
  return `${((Date.now() - since) / 1000).toFixed(0)} s`;
}

const SERIAL = process.env.BATON_TEST_SERIAL === "1";

/**
 * CPU seconds the whole machine has spent busy (Linux /proc/stat), or NaN elsewhere: unlike a
 * phase's own figure it counts what runs detached (wrangler dev, workerd), and other tenants too.
 */
function machineBusy() {
  try {
    const [user, nice, system, , , irq, softirq] = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
    return (user + nice + system + irq + softirq) / 100;
  } catch {
    return NaN;
  }
}
const busyAtStart = machineBusy();
const machineUsed = (since) => (Number.isFinite(since) ? `; the machine was busy ${(machineBusy() - since).toFixed(0)} CPU-s` : "");

/** The CPU seconds GNU time wrote for a phase ("user system"), as " using N s of CPU", or "" without it. */
function cpuUsed(file) {
  try {
    const [user, system] = readFileSync(file, "utf8").trim().split(/\s+/).slice(-2).map(Number);
    return Number.isFinite(user + system) ? `, using ${(user + system).toFixed(0)} s of CPU` : "";
  } catch {
    return "";
  }
}

async function phase(cmd, limitMin, opts = {}) {
  const t0 = Date.now();
  const busy = machineBusy();
  // Two cores give 2 s of CPU a second: what each phase uses says which lane to make lighter.
  const cpuFile = join(mkdtempSync(join(tmpdir(), "baton-cpu-")), "cpu");
  const result = await runPhase(cmd, limitMin * MINUTE, { ...opts, cpuFile });
  if (opts.log) process.stdout.write(`\n---- output of ${cmd} ----\n${readFileSync(opts.log, "utf8")}---- end of ${cmd} ----\n`);
  console.log(`-- ${cmd}: ${result === 0 ? "ok" : `failed (${result})`} in ${elapsed(t0)}${cpuUsed(cpuFile)} (suite ${elapsed(started)})${SERIAL ? machineUsed(busy) : ""}`);
  if (result !== 0) {
    stopAll();
    process.exit(result);
  }
}

/** Runs the lanes side by side (one after the other with BATON_TEST_SERIAL=1); each lane is phases in order. */
async function together(...lanes) {
  if (SERIAL) {
    for (const lane of lanes) await lane();
  } else {
    await Promise.all(lanes.map((lane) => lane()));
  }
}

/** Where a phase that runs beside another writes its output (printed when it ends). */
function logFile(name) {
  return join(mkdtempSync(join(tmpdir(), "baton-test-")), `${name}.log`);
}

/**
 * Debian's packages (chromium; the Python run's websockets 10.4 and pytest), installed beside npm ci
 * and the first phases in one apt-get: only the browser's files and the Python runs wait for it.
 */
async function debianPackages() {
  const missing = ["chromium", ...PYTHON_DEBS].filter((p) => !installed(p));
  if (missing.length > 0) await phase(aptInstall(missing), 10, beside("apt-get"));
  try {
    execSync("/usr/bin/chromium --version", { stdio: "ignore", timeout: 30_000 });
  } catch {
    console.error("chromium is not usable at /usr/bin/chromium");
    stopAll();
    process.exit(1);
  }
}
const beside = (name) => (SERIAL ? {} : { log: logFile(name) });
const debsReady = SERIAL ? await debianPackages() : debianPackages();
if (!existsSync("node_modules/.bin/vitest")) await phase("npm ci --no-audit --no-fund", 10);
// Only the build blocks anything: the end-to-end files pack dist/ as it is (BATON_TEST_BUILT) and
// the Python runs start `baton serve` from it. So the build starts with the workerd files (which need
// none), and the typechecks run inside a lane: one `tsc -b --force` over the three projects (`npm run
// typecheck`: each lib and shared file parsed once, not three times), which fails the suite like any
// phase. The build's own tsc is the one that emits dist/; the typechecks emit nothing.
process.env.BATON_TEST_BUILT = "1";
let buildDone;
const built = new Promise((resolve) => (buildDone = resolve));
// Then three lanes on two cores. The end-to-end files run in three projects (vitest.node.config.ts):
// "e2e" (most share one wrangler dev; two files at a time, as they mostly wait), "e2e-timed" (the
// files that assert a real-time bound, one at a time in each of two halves) and "e2e-browser" (the
// files that drive chromium, one at a time).
// - lane 1: the build, then "e2e", then the first half of "e2e-timed";
// - lane 2, once the build and Debian's packages are in: "e2e-browser", then the Durable Object
//   tests in workerd on two workers (their time is the objects' test clock, not the machine's: they
//   take whatever the machine has left), then the rest of "e2e-timed";
// - lane 3, once the build is done: the typechecks, then the Python client's two runs side by side
//   against one wrangler dev of its own (test-python.mjs), then the unit files.
// The machine is the limit, not the lanes: serially the phases keep it busy about 440 CPU-s (e2e
// 140, e2e-browser 90 with chromium, workerd 75, e2e-timed 40, Python 40, typechecks 25, npm ci 20,
// unit 15, build 7; each phase prints its own share, which misses what runs detached), and run
// this way about 455 in 276 s. So what mostly waits (e2e-timed, Python) must not be left to run
// alone at the end while cores idle.
/**
 * The "e2e-timed" files run in two halves of about 30 s, at the ends of two lanes: one at a time
 * they were the suite's last minute, a lane mostly waiting while the others had ended. These; and
 * the rest (every other file of the project, so a new one is never left out).
 */
const TIMED_FIRST = ["preference", "serve-failover", "client-library", "who-directory"].map((name) => `test/e2e/${name}.test.ts`);
await together(
  async () => {
    await phase("npm run build", 3);
    buildDone();
    await phase(`npx vitest run -c vitest.node.config.ts --project e2e --maxWorkers=2 ${VITEST_FLAGS}`, 15, { retryOnHang: true });
    await phase(`npx vitest run -c vitest.node.config.ts --project e2e-timed ${TIMED_FIRST.join(" ")} ${VITEST_FLAGS}`, 15, { retryOnHang: true });
  },
  async () => {
    await built;
    await debsReady;
    await phase(`npx vitest run -c vitest.node.config.ts --project e2e-browser ${VITEST_FLAGS}`, 15, { retryOnHang: true, ...beside("e2e-browser") });
    await phase(`npx vitest run -c vitest.workers.config.ts --maxWorkers=2 ${VITEST_FLAGS}`, 12, { retryOnHang: true, ...beside("workerd") });
    await phase(`npx vitest run -c vitest.node.config.ts --project e2e-timed ${TIMED_FIRST.map((f) => `--exclude ${f}`).join(" ")} ${VITEST_FLAGS}`, 15, { retryOnHang: true, ...beside("e2e-timed-rest") });
  },
  async () => {
    await built;
    await phase("npm run typecheck", 10, beside("typecheck"));
    await debsReady;
    await phase("BATON_PY_RUNS=clean,debian node scripts/test-python.mjs", 13, beside("python"));
    await phase(`npx vitest run -c vitest.node.config.ts --project unit ${VITEST_FLAGS}`, 8, { retryOnHang: true, ...beside("unit") });
  },
);
console.log(`all tests passed in ${elapsed(started)}${machineUsed(busyAtStart)}`);
