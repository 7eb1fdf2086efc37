// The whole test suite: installs what it needs (npm packages, Debian's chromium), then runs the
// typechecks both sides, the Durable Object tests in workerd, then the unit and end-to-end tests in Node.
// Every phase has a wall-clock bound, so a wedged runner fails the suite instead of eating CI's 90 minutes.
// A vitest run that hangs (a workerd crash can strand the pool) is killed and run once more;
// a run that finishes with failures is never retried.
import { spawn, execSync } from "node:child_process";
import { existsSync } from "node:fs";

const MINUTE = 60_000;
const started = Date.now();

function elapsed(since) {
  return `${((Date.now() - since) / 1000).toFixed(0)} s`;
}

/** Runs cmd in its own process group; resolves to its exit code, or "timeout" after killing the whole group. */
function runBounded(cmd, limitMs) {
  console.log(`$ ${cmd}`);
  return new Promise((resolve) => {
    const child = spawn(cmd, { stdio: "inherit", shell: true, detached: true });
    const timer = setTimeout(() => {
      console.error(`\n!! ${cmd} still running after ${limitMs / MINUTE} min: killing it`);
      try { process.kill(-child.pid, "SIGKILL"); } catch { /* already gone */ }
      resolve("timeout");
    }, limitMs);
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      resolve(code ?? (signal ? 128 : 1));
    });
  });
}

async function phase(cmd, limitMin, { retryOnHang = false } = {}) {
  const t0 = Date.now();
  let result = await runBounded(cmd, limitMin * MINUTE);
  if (result === "timeout" && retryOnHang) {
    console.error(`!! running ${cmd} once more after a hang`);
    result = await runBounded(cmd, limitMin * MINUTE);
  }
  console.log(`-- ${cmd}: ${result === 0 ? "ok" : `failed (${result})`} in ${elapsed(t0)} (suite ${elapsed(started)})`);
  if (result !== 0) process.exit(typeof result === "number" ? result : 124);
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
await phase("npm run build", 3);
await phase("npx vitest run -c vitest.workers.config.ts", 10, { retryOnHang: true });
await phase("npx vitest run -c vitest.node.config.ts", 15, { retryOnHang: true });
console.log(`all tests passed in ${elapsed(started)}`);
