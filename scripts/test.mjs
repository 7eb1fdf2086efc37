// The whole test suite: installs what it needs (npm packages, Debian's chromium), then runs the
// typechecks both sides and the build side by side, the Durable Object tests in workerd, then the
// unit and end-to-end tests in Node (one vitest run: the unit files in parallel, then the end-to-end
// files one at a time) with the Python client's tests (pytest, against its own wrangler dev)
// beside them, their output kept in a file and printed when they end. BATON_TEST_SERIAL=1 runs
// every phase alone, one after the other (to time them, or on a machine with one core).
// Every phase has a wall-clock bound, so a wedged runner fails the suite instead of eating CI's 90 minutes.
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
const VITEST_FLAGS = "--reporter=default --reporter=./scripts/failure-flag-reporter.mjs";

function elapsed(since) {
  return `${((Date.now() - since) / 1000).toFixed(0)} s`;
}

const SERIAL = process.env.BATON_TEST_SERIAL === "1";

async function phase(cmd, limitMin, opts = {}) {
  const t0 = Date.now();
  const result = await runPhase(cmd, limitMin * MINUTE, opts);
  if (opts.log) process.stdout.write(`\n---- output of ${cmd} ----\n${readFileSync(opts.log, "utf8")}---- end of ${cmd} ----\n`);
  console.log(`-- ${cmd}: ${result === 0 ? "ok" : `failed (${result})`} in ${elapsed(t0)} (suite ${elapsed(started)})`);
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
// Four single-threaded compilers on two cores: together they take about as long as the two slowest in a row.
await together(
  () => phase("npx tsc -p tsconfig.json", 4),
  () => phase("npx tsc -p tsconfig.node.json", 4, SERIAL ? {} : { log: logFile("tsc-node") }),
  () => phase("npx tsc -p tsconfig.dashboard.json", 4, SERIAL ? {} : { log: logFile("tsc-dashboard") }),
  () => phase("npm run build", 3, SERIAL ? {} : { log: logFile("build") }),
);
await phase(`npx vitest run -c vitest.workers.config.ts ${VITEST_FLAGS}`, 10, { retryOnHang: true });
// The Python client (python/) against a real wrangler dev, twice: over Debian's python3-websockets,
// and in a clean venv with the newest websockets the index offers. Both sides mostly wait on their
// own wrangler dev, so they share the cores without starving each other.
await together(
  () => phase(`npx vitest run -c vitest.node.config.ts ${VITEST_FLAGS}`, 15, { retryOnHang: true }),
  () => phase("node scripts/test-python.mjs", 9, SERIAL ? {} : { log: logFile("python") }),
);
console.log(`all tests passed in ${elapsed(started)}`);
