// The whole test suite: installs what it needs (npm packages, Debian's chromium), then runs the
// typechecks both sides, the Durable Object tests in workerd, the unit and end-to-end tests in Node,
// then the Python client's tests (pytest, against wrangler dev).
// Every phase has a wall-clock bound, so a wedged runner fails the suite instead of eating CI's 90 minutes.
// A vitest run that hangs (a workerd crash can strand the pool) is killed and run once more;
// a run that reported a failing test is never retried (see test-phase.mjs).
import { execSync } from "node:child_process";
import { existsSync } from "node:fs";
import { phase as runPhase } from "./test-phase.mjs";

const MINUTE = 60_000;
const started = Date.now();
const VITEST_FLAGS = "--reporter=default --reporter=./scripts/failure-flag-reporter.mjs";

function elapsed(since) {
  return `${((Date.now() - since) / 1000).toFixed(0)} s`;
}

async function phase(cmd, limitMin, opts) {
  const t0 = Date.now();
  const result = await runPhase(cmd, limitMin * MINUTE, opts);
  console.log(`-- ${cmd}: ${result === 0 ? "ok" : `failed (${result})`} in ${elapsed(t0)} (suite ${elapsed(started)})`);
  if (result !== 0) process.exit(result);
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
await phase("npx tsc -p tsconfig.json", 4);
await phase("npx tsc -p tsconfig.node.json", 4);
await phase("npx tsc -p tsconfig.dashboard.json", 4);
await phase("npm run build", 3);
await phase(`npx vitest run -c vitest.workers.config.ts ${VITEST_FLAGS}`, 10, { retryOnHang: true });
await phase(`npx vitest run -c vitest.node.config.ts ${VITEST_FLAGS}`, 15, { retryOnHang: true });
// The Python client (python/) against a real wrangler dev, twice: over Debian's python3-websockets, and in a clean venv with the newest websockets the index offers.
await phase("node scripts/test-python.mjs", 9);
console.log(`all tests passed in ${elapsed(started)}`);
