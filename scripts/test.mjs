// The whole test suite: installs what it needs (npm packages, Debian's chromium), then runs the
// typechecks both sides, the Durable Object tests in workerd, then the unit and end-to-end tests in Node.
import { execSync, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

function run(cmd) {
  console.log(`$ ${cmd}`);
  const r = spawnSync(cmd, { stdio: "inherit", shell: true });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

if (!existsSync("node_modules/.bin/vitest")) run("npm ci --no-audit --no-fund");
if (!existsSync("/usr/bin/chromium")) {
  const sudo = process.getuid?.() === 0 ? "" : "sudo ";
  run(`${sudo}apt-get update -qq && ${sudo}env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null`);
}
try {
  execSync("/usr/bin/chromium --version", { stdio: "ignore" });
} catch {
  console.error("chromium is not usable at /usr/bin/chromium");
  process.exit(1);
}
run("npx tsc -p tsconfig.json");
run("npx tsc -p tsconfig.node.json");
run("npm run build");
run("npx vitest run -c vitest.workers.config.ts");
run("npx vitest run -c vitest.node.config.ts");
