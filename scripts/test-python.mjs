// The Python client's tests, at both ends of the dependency range the package states: runs pytest
// twice, side by side (each a process of its own, its output printed when it ends):
//
// - clean: every file of test/python, in a new venv (no system site packages) on the `python3` on
//   PATH (/usr/bin/python3 when that one is older than 3.11), `pip install ./python pytest build`
//   resolving whatever the configured index offers: the newest websockets, LangGraph's saver and
//   OpenTelemetry (which Debian lacks), and an isolated build of the sdist and wheel.
// - debian: the files that drive the socket, in a venv on Debian's /usr/bin/python3 that sees
//   Debian's packages (python3-websockets 10.4, python3-pytest, python3-build; installed here with
//   apt-get when missing), ./python installed into it offline without dependencies: the oldest
//   websockets the package supports. Everything above the socket is I/O-free (python/baton/_*core*,
//   _wire, _work_loop) and runs alike on any websockets; the one module that differs between
//   websockets 10.4 and 17 is python/baton/_websocket.py (legacy or new asyncio implementation), so
//   this run takes the files that dial, refuse, send, iterate, close and abort that socket
//   (DEBIAN_FILES), and test_package.py, which builds the sdist and wheel offline there
//   (BATON_PY_OFFLINE=1). A full second run cost about 75 s of a lane for no path it alone reached.
//
// Both runs use one `wrangler dev` (test/python/dev_server.py), started first so that its start-up
// overlaps the installs (a run gets its address on stdin once it answers); the tests' agents are
// their own, so the runs need no server each. Each run prints the Python and websockets versions it used and its time. Builds the CLI
// first if dist/ is missing (one test runs `baton serve` beside a Python runner). Bounded to 12
// minutes in all.
//
//   node scripts/test-python.mjs [pytest args...]      BATON_PY_RUNS=debian|clean runs one of them
//   (arguments that name files or tests replace each run's own list)
import { execFileSync, execSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { closeSync, cpSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { aptInstall, installed, PYTHON_DEBS } from "./debian-packages.mjs";
import { installLangGraphCheckpoint } from "./python-langgraph.mjs";
import { installOpenTelemetry } from "./python-otel.mjs";

const ROOT = resolve(import.meta.dirname, "..");
// One per checkout: two checkouts testing at once on one machine must not install over each other's package.
const DEBIAN_VENV = process.env.BATON_PY_VENV ?? join(tmpdir(), `baton-venv-${createHash("sha256").update(ROOT).digest("hex").slice(0, 12)}`);
const RUNS = (process.env.BATON_PY_RUNS ?? "debian,clean").split(",").filter(Boolean);
/**
 * What the Debian run covers of _websocket.py over websockets 10.4: dial with the bearer header and
 * subprotocol, handoff and close (test_serve), kill -9 and SIGSTOP (abort, close codes), a refused
 * token or name at the handshake and while serving (test_errors), cancel frames both ways
 * (test_cancel), output frames and a takeover (test_output); and the offline package build.
 */
const DEBIAN_FILES = ["test_serve.py", "test_errors.py", "test_cancel.py", "test_output.py", "test_package.py"].map((f) => `test/python/${f}`);
const LIMIT_MS = 12 * 60_000;
const started = Date.now();
const left = () => Math.max(1000, LIMIT_MS - (Date.now() - started));
const seconds = (since) => `${((Date.now() - since) / 1000).toFixed(1)} s`;

function sh(cmd, opts = {}) {
  execSync(cmd, { stdio: "inherit", cwd: ROOT, timeout: left(), ...opts });
}

/** A copy of python/ without build leftovers, so installing never writes build/ or *.egg-info into the tree. */
function withSourceCopy(fn) {
  const copy = mkdtempSync(join(tmpdir(), "baton-py-src-"));
  cpSync(join(ROOT, "python"), copy, { recursive: true, filter: (src) => !/(^|\/)(build|dist|__pycache__|[^/]*\.egg-info)$/.test(src) });
  try {
    fn(copy);
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
}

function versionOf(python) {
  try {
    const out = execFileSync(python, ["-c", "import sys; print('%d.%d' % sys.version_info[:2])"], { encoding: "utf8", timeout: 30_000 });
    const [major, minor] = out.trim().split(".").map(Number);
    return major * 100 + minor;
  } catch {
    return 0;
  }
}

function setupDebian() {
  const missing = PYTHON_DEBS.filter((p) => !installed(p));
  if (missing.length > 0) {
    console.log(`-- installing ${missing.join(" ")}`);
    sh(aptInstall(missing));
  }
  const py = join(DEBIAN_VENV, "bin/python");
  if (!existsSync(py)) {
    console.log(`-- creating ${DEBIAN_VENV}`);
    sh(`/usr/bin/python3 -m venv --system-site-packages ${DEBIAN_VENV}`);
  }
  withSourceCopy((copy) => sh(`${py} -m pip install --quiet --no-deps --no-build-isolation --no-index --force-reinstall ${copy}`));
  return { py, env: { BATON_PY_OFFLINE: "1" }, files: DEBIAN_FILES, cleanup: () => {} };
}

function setupClean() {
  const base = versionOf("python3") >= 311 ? "python3" : "/usr/bin/python3";
  const venv = mkdtempSync(join(tmpdir(), "baton-venv-clean-"));
  console.log(`-- creating a clean venv in ${venv} with ${base}`);
  sh(`${base} -m venv ${venv}`);
  const py = join(venv, "bin/python");
  // --retries 0: an index that cannot be reached fails at once instead of after minutes of backoff.
  withSourceCopy((copy) => sh(`${py} -m pip install -qq --retries 0 --no-compile ${copy} pytest build`));
  installLangGraphCheckpoint(py, sh);
  installOpenTelemetry(py, sh);
  // pip compiles nothing (--no-compile: most of what it installs is never imported here); what the
  // tests import is compiled once, into the venv, for pytest and every process it starts.
  const pycache = { PYTHONDONTWRITEBYTECODE: "", PYTHONPYCACHEPREFIX: join(venv, "pycache") };
  return { py, env: pycache, files: ["test/python"], cleanup: () => rmSync(venv, { recursive: true, force: true }) };
}

/**
 * Starts test/python/dev_server.py, which starts wrangler dev and prints it as a JSON line; it stops
 * the server when its stdin closes, which this process's exit does too, however it ends.
 */
function startSharedDev() {
  const child = spawn("/usr/bin/python3", [join(ROOT, "test/python/dev_server.py")], { cwd: ROOT, stdio: ["pipe", "pipe", "inherit"] });
  let out = "";
  const ready = new Promise((resolveDev, reject) => {
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk) => {
      out += chunk;
      if (out.includes("\n")) resolveDev(JSON.parse(out.split("\n")[0]));
    });
    child.once("exit", (code) => reject(new Error(`dev_server.py exited ${code} before the server answered`)));
  });
  ready.catch(() => {}); // awaited after the setup; an early failure must not end the process before that
  const stop = () => new Promise((done) => {
    if (child.exitCode !== null) return done();
    child.once("exit", done);
    child.stdin.end();
  });
  return { ready, stop };
}

function pytest(py, name, env, files) {
  return new Promise((done) => {
    const child = spawn(py, ["-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", ...(ARGS.some(namesTests) ? [] : files), ...ARGS], {
      cwd: ROOT,
      stdio: "inherit",
      detached: true,
      env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1", ...env },
    });
    const timer = setTimeout(() => {
      console.error(`test-python: ${name} pytest still running when the ${LIMIT_MS / 60_000} minutes were up; killing it`);
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // gone
      }
    }, left());
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      done(code ?? (signal ? 1 : 0));
    });
  });
}

/** pytest arguments from the command line; one that names files or tests replaces each run's own. */
const ARGS = process.argv.slice(2);

/** A file, folder or test id (test/python/x.py::name), not an option or an option's value (`-k EXPR`). */
function namesTests(arg) {
  return arg.startsWith("test/") || arg.includes(".py");
}

const SETUPS = { debian: setupDebian, clean: setupClean };
const unknown = RUNS.filter((r) => !(r in SETUPS));
if (unknown.length > 0) {
  console.error(`test-python: BATON_PY_RUNS names debian and clean, not ${unknown.join(", ")}`);
  process.exit(2);
}
try {
  if (!existsSync(join(ROOT, "dist/cli/main.js"))) {
    console.log("-- npm run build (dist/cli/main.js is missing)");
    sh("npm run build");
  }
} catch (err) {
  console.error(`test-python: build failed after ${seconds(started)}: ${err.message}`);
  process.exit(1);
}

/** The shared server's JSON line ({url, persist}): given by the parent on stdin to a run it started. */
function devFromParent() {
  return new Promise((resolveDev, reject) => {
    let text = "";
    process.stdin.setEncoding("utf8");
    process.stdin.on("data", (chunk) => {
      text += chunk;
      if (text.includes("\n")) resolveDev(JSON.parse(text.split("\n")[0]));
    });
    process.stdin.once("end", () => reject(new Error("the parent closed stdin before the server answered")));
  });
}

/** One run (setup, then pytest) in this process; returns its exit code and summary line. */
async function runOne(name, dev) {
  const t0 = Date.now();
  let setup;
  try {
    setup = SETUPS[name]();
    const { url, persist } = await dev;
    setup.env = { ...setup.env, BATON_PY_DEV_URL: url, BATON_PY_DEV_PERSIST: persist };
  } catch (err) {
    console.error(`test-python: ${name} setup failed after ${seconds(t0)}: ${err.message}`);
    return { code: 1, line: `${name}: setup failed` };
  }
  try {
    const versions = execFileSync(setup.py, ["-c", "import platform, websockets; print(f'Python {platform.python_version()}, websockets {websockets.__version__}')"],
      { encoding: "utf8", timeout: 30_000 }).trim();
    console.log(`-- ${name}: ${versions}; setup took ${seconds(t0)}; running pytest`);
    const code = await pytest(setup.py, name, setup.env, setup.files);
    const line = `${name} (${versions}): ${code === 0 ? "ok" : `failed (${code})`} in ${seconds(t0)}`;
    console.log(`-- pytest ${line}`);
    return { code, line };
  } finally {
    setup.cleanup();
  }
}

/**
 * The runs side by side, each a process of its own (its setup is synchronous pip and apt-get) with
 * its output in a file, printed when it ends: they mostly wait on real TTLs and installs, so two at
 * once take about as long as the longer one.
 */
async function runBeside(names, dev) {
  const logs = mkdtempSync(join(tmpdir(), "baton-py-logs-"));
  const results = await Promise.all(names.map((name) => new Promise((done) => {
    const log = join(logs, `${name}.log`);
    const fd = openSync(log, "w");
    const child = spawn(process.execPath, [import.meta.filename, ...ARGS], {
      cwd: ROOT, stdio: ["pipe", fd, fd], env: { ...process.env, BATON_PY_RUNS: name, BATON_PY_CHILD: "1" },
    });
    closeSync(fd);
    // Started before the server answers, so its installs overlap the start-up; the address follows on stdin.
    child.stdin.on("error", () => {}); // a child that already ended
    dev.then(({ url, persist }) => child.stdin.end(`${JSON.stringify({ url, persist })}\n`), () => child.stdin.end());
    child.on("exit", (code, signal) => {
      process.stdout.write(`\n---- python run ${name} ----\n${readFileSync(log, "utf8")}---- end of python run ${name} ----\n`);
      done({ name, code: code ?? (signal ? 1 : 0) });
    });
  })));
  rmSync(logs, { recursive: true, force: true });
  return results;
}

if (process.env.BATON_PY_CHILD === "1") {
  const { code } = await runOne(RUNS[0], devFromParent());
  process.exit(code);
}
const sharedDev = startSharedDev();
let failed = 0;
if (RUNS.length === 1) {
  const { code, line } = await runOne(RUNS[0], sharedDev.ready);
  console.log(`-- test-python: ${line}; ${seconds(started)} in all`);
  failed = code;
} else {
  const results = await runBeside(RUNS, sharedDev.ready);
  await sharedDev.ready.catch((err) => {
    console.error(`test-python: ${err.message}`);
    results.push({ name: "server", code: 1 });
  });
  failed = results.find((r) => r.code !== 0)?.code ?? 0;
  console.log(`-- test-python: ${results.map((r) => `${r.name} ${r.code === 0 ? "ok" : `failed (${r.code})`}`).join("; ")}; ${seconds(started)} in all`);
}
await sharedDev.stop();
process.exit(failed);
