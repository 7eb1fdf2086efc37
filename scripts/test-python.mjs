// The Python client's tests: installs what they need (Debian's python3-websockets, python3-pytest,
// python3-venv, python3-setuptools, python3-wheel; the registry of Python packages is not used),
// makes a venv on Debian's python3 that sees those packages, installs ./python into it offline,
// builds the CLI if dist/ is missing (one test runs `baton serve` beside a Python runner), then
// runs pytest on test/python and exits with its code. Bounded to 5 minutes in all.
//
//   node scripts/test-python.mjs [pytest args...]
import { execSync, spawn } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "..");
const VENV = process.env.BATON_PY_VENV ?? "/tmp/baton-venv";
const PY = join(VENV, "bin/python");
const DEBS = ["python3-websockets", "python3-pytest", "python3-venv", "python3-setuptools", "python3-wheel"];
const LIMIT_MS = 5 * 60_000;
const started = Date.now();
const left = () => Math.max(1000, LIMIT_MS - (Date.now() - started));
const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;

function sh(cmd, opts = {}) {
  execSync(cmd, { stdio: "inherit", cwd: ROOT, timeout: left(), ...opts });
}

function installed(pkg) {
  try {
    execSync(`dpkg-query -W -f='\${Status}' ${pkg} 2>/dev/null | grep -q 'install ok installed'`, { stdio: "ignore", shell: "/bin/sh" });
    return true;
  } catch {
    return false;
  }
}

try {
  const missing = DEBS.filter((p) => !installed(p));
  if (missing.length > 0) {
    const sudo = process.getuid?.() === 0 ? "" : "sudo -n ";
    console.log(`-- installing ${missing.join(" ")}`);
    sh(`${sudo}apt-get update -qq && ${sudo}env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ${missing.join(" ")} >/dev/null`);
  }
  if (!existsSync(PY)) {
    console.log(`-- creating ${VENV}`);
    sh(`/usr/bin/python3 -m venv --system-site-packages ${VENV}`);
  }
  // Install from a copy, so the build's leftovers (build/, *.egg-info) never land in the tree.
  const copy = mkdtempSync(join(tmpdir(), "baton-py-src-"));
  cpSync(join(ROOT, "python"), copy, { recursive: true, filter: (src) => !/(^|\/)(build|__pycache__|[^/]*\.egg-info)$/.test(src) });
  try {
    sh(`${PY} -m pip install --quiet --no-deps --no-build-isolation --no-index --force-reinstall ${copy}`);
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
  if (!existsSync(join(ROOT, "dist/cli/main.js"))) {
    console.log("-- npm run build (dist/cli/main.js is missing)");
    sh("npm run build");
  }
} catch (err) {
  console.error(`test-python: setup failed after ${elapsed()}: ${err.message}`);
  process.exit(1);
}

console.log(`-- setup done in ${elapsed()}; running pytest`);
const child = spawn(PY, ["-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "test/python", ...process.argv.slice(2)], {
  cwd: ROOT,
  stdio: "inherit",
  detached: true,
  env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1" },
});
const timer = setTimeout(() => {
  console.error(`test-python: pytest still running after ${LIMIT_MS / 60_000} minutes; killing it`);
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    // gone
  }
}, left());
child.on("exit", (code, signal) => {
  clearTimeout(timer);
  console.log(`-- pytest: ${code === 0 ? "ok" : `failed (${code ?? signal})`} in ${elapsed()} in all`);
  process.exit(code ?? 1);
});
