// The whole test suite: installs what it needs (npm packages, Debian's chromium), then two lanes:
// the build and then the end-to-end files in Node, and beside them the typechecks, the Durable
// Object tests in workerd, the unit files and the Python client's tests (pytest, against its own
// wrangler dev), their output kept in a file and printed when they end. BATON_TEST_SERIAL=1 runs
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
import { phase as runPhase, stopAll } from "./test-phase.mjs";

const MINUTE = 60_000;
const started = Date.now();
// file-times-reporter prints each file's time, and where it went, when a run ends.
const VITEST_FLAGS = "--reporter=default --reporter=./scripts/failure-flag-reporter.mjs --reporter=./scripts/file-times-reporter.mjs";

function elapsed(since) {
  return `${((Date.now() - since) / 1000).toFixed(0)} s`;
}

const SERIAL = process.env.BATON_TEST_SERIAL === "1";

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
  // Two cores give 2 s of CPU a second: what each phase uses says which lane to make lighter.
  const cpuFile = join(mkdtempSync(join(tmpdir(), "baton-cpu-")), "cpu");
  const result = await runPhase(cmd, limitMin * MINUTE, { ...opts, cpuFile });
  if (opts.log) process.stdout.write(`\n---- output of ${cmd} ----\n${readFileSync(opts.log, "utf8")}---- end of ${cmd} ----\n`);
  console.log(`-- ${cmd}: ${result === 0 ? "ok" : `failed (${result})`} in ${elapsed(t0)}${cpuUsed(cpuFile)} (suite ${elapsed(started)})`);
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

if (!existsSync("node_modules/.bin/vitest")) await phase("npm ci --no-audit --no-fund", 10);
if (!existsSync("/usr/bin/chromium")) {
  const sudo = process.getuid?.() === 0 ? "" : "sudo -n ";
  await phase(`${sudo}apt-get update -qq && ${sudo}env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null`, 10);
}
try {
  execSync("/usr/bin/chromium --version", { stdio: "ignore", timeout: 30_000 });
} catch {
  console.error("chromium is not usable at /usr/bin/chromium");
  process.exit(1);
}
// Lanes side by side on two cores: most of the end-to-end files' and the Python runs' time is
// waiting (on heartbeats, on processes, on pip), not computing. The build comes first in the e2e
// lane; every lane that runs the built CLI waits for it. The end-to-end files, the long pole, run
// in three lanes: the project "e2e" two files at a time, the project "e2e-timed" (the files that
// assert a real-time bound) one at a time, and the project "e2e-browser" (the files that drive
// chromium) one at a time, started once the typechecks and the unit files (all compiling, all
// CPU) are done (vitest.node.config.ts). Beside them: the three typechecks (single-threaded compilers, side by side), then the Durable Object
// tests in workerd (their time is the objects' test clock, not the machine's); the unit files; and
// the Python client, twice at once, each against its own wrangler dev: over Debian's
// python3-websockets, and in a clean venv with the newest websockets the index offers. Nothing is
// compiled twice: the build's own tsc is the one that emits dist/, the typechecks emit nothing,
// and the end-to-end files pack that dist/ as it is (BATON_TEST_BUILT).
const beside = (name) => (SERIAL ? {} : { log: logFile(name) });
process.env.BATON_TEST_BUILT = "1";
let built;
let typechecked;
let unitDone;
await together(
  async () => {
    await (built = phase("npm run build", 3));
    await phase(`npx vitest run -c vitest.node.config.ts --project e2e ${VITEST_FLAGS}`, 15, { retryOnHang: true });
  },
  async () => {
    await built;
    await phase(`npx vitest run -c vitest.node.config.ts --project e2e-timed ${VITEST_FLAGS}`, 15, { retryOnHang: true, ...beside("e2e-timed") });
  },
  async () => {
    await (typechecked = together(
      () => phase("npx tsc -p tsconfig.json", 8, beside("tsc")),
      () => phase("npx tsc -p tsconfig.node.json", 8, beside("tsc-node")),
      () => phase("npx tsc -p tsconfig.dashboard.json", 8, beside("tsc-dashboard")),
    ));
    await phase(`npx vitest run -c vitest.workers.config.ts ${VITEST_FLAGS}`, 10, { retryOnHang: true, ...beside("workerd") });
  },
  () => (unitDone = (async () => {
    await built; // some unit files run the built CLI
    await phase(`npx vitest run -c vitest.node.config.ts --project unit ${VITEST_FLAGS}`, 8, { retryOnHang: true, ...beside("unit") });
  })()),
  async () => {
    await built;
    await typechecked;
    await unitDone;
    await phase(`npx vitest run -c vitest.node.config.ts --project e2e-browser ${VITEST_FLAGS}`, 15, { retryOnHang: true, ...beside("e2e-browser") });
  },
  // The two Python runs mostly wait (on heartbeats, on pip): side by side, each with its own server.
  async () => {
    await built;
    await phase("BATON_PY_RUNS=debian node scripts/test-python.mjs", 9, beside("python-debian"));
  },
  async () => {
    await built;
    await phase("BATON_PY_RUNS=clean node scripts/test-python.mjs", 9, beside("python-clean"));
  },
);
console.log(`all tests passed in ${elapsed(started)}`);
