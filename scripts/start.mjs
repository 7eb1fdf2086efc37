// `npm start`: the coordinator locally with `wrangler dev` (no Cloudflare account needed). When the
// port already answers (a coordinator started before, or another program), says so and exits 1 at
// once. Installs
// the npm packages on a fresh clone and builds the CLI when its sources changed, so `npx baton`
// works; picks a free inspector port (9229 may be taken); keeps wrangler from fetching the
// Request.cf object (offline that prints a stack each start); once the Worker answers, prints
// where the dashboard is and which token it uses, and the "try it" lines: with `baton` when the
// `baton` on PATH is this checkout's (npm link), else with `npx baton` and a line saying how to
// link it (npx spends most of a second on every command). wrangler's banner and per-request lines are off
// (allowScripts in package.json quiets npm's install-script notice). Extra arguments go to wrangler, e.g.
// `npm start -- --port 9000`.
import { spawn, spawnSync } from "node:child_process";
import { accessSync, constants, existsSync, readdirSync, realpathSync, statSync } from "node:fs";
import { connect, createServer } from "node:net";
import { delimiter, join } from "node:path";

const DEV_TOKEN = "baton-dev-token";

function runOrExit(cmd, args) {
  const r = spawnSync(cmd, args, { stdio: "inherit" });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

function newestMtime(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

function buildIsStale() {
  if (!existsSync("dist/cli/main.js")) return true;
  const built = statSync("dist/cli/main.js").mtimeMs;
  return ["cli", "client", "worker/wire", "worker/rules"].some((dir) => newestMtime(dir) > built);
}

/** Whether the `baton` a shell finds first on PATH is this checkout's CLI (as `npm link` makes it). */
function linkedHere() {
  const mine = realpathSync("dist/cli/main.js");
  for (const dir of (process.env.PATH ?? "").split(delimiter).filter(Boolean)) {
    const candidate = join(dir, "baton");
    try {
      accessSync(candidate, constants.X_OK);
    } catch {
      continue;
    }
    try {
      return realpathSync(candidate) === mine;
    } catch {
      return false;
    }
  }
  return false;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** Whether something accepts connections on 127.0.0.1:port right now. */
function listening(port) {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port: Number(port) });
    socket.setTimeout(1000);
    socket.once("connect", () => (socket.destroy(), resolve(true)));
    socket.once("timeout", () => (socket.destroy(), resolve(true)));
    socket.once("error", () => resolve(false));
  });
}

/** What answers at url: a baton coordinator (it knows the dev token's /agents) or something else. */
async function whoAnswers(url) {
  const res = await fetch(`${url}/agents`, { headers: { authorization: `Bearer ${DEV_TOKEN}` }, signal: AbortSignal.timeout(3000) }).catch(() => null);
  return res?.ok && (res.headers.get("content-type") ?? "").includes("json") ? "baton" : "other";
}

const args = process.argv.slice(2);
const portAt = args.findIndex((a) => a === "--port" || a.startsWith("--port="));
const port = portAt === -1 ? "8787" : args[portAt].startsWith("--port=") ? args[portAt].slice("--port=".length) : args[portAt + 1];
const url = `http://127.0.0.1:${port}`;

// A second `npm start` on a taken port would build, start wrangler, find the first coordinator
// ready, and only then fail to bind: say at once what holds the port, and exit.
if (await listening(port)) {
  const next = Number(port) + 1;
  const what = (await whoAnswers(url)) === "baton"
    ? `a baton coordinator already runs at ${url} (another \`npm start\` or \`npm run dev\`): use it, or stop it first`
    : `port ${port} is taken by another program (${url} is not a baton coordinator)`;
  process.stderr.write(`baton: ${what}; or start one more on another port: npm start -- --port ${next}\n`);
  process.exit(1);
}

if (!existsSync("node_modules/.bin/wrangler")) runOrExit("npm", ["ci", "--no-audit", "--no-fund"]);
if (buildIsStale()) runOrExit(process.execPath, ["scripts/build.mjs"]);
// Quiet by default: no line per request pushing the ready banner off screen (`npm start -- --log-level info` brings them back).
const extra = [
  ...(portAt === -1 ? ["--port", port] : []),
  ...(args.includes("--inspector-port") ? [] : ["--inspector-port", String(await freePort())]),
  ...(args.includes("--log-level") ? [] : ["--log-level", "warn"]),
];
const dev = spawn("node_modules/.bin/wrangler", ["dev", ...extra, ...args], {
  stdio: "inherit",
  // No version banner, hence no update check ("update available") on every start.
  env: { CLOUDFLARE_CF_FETCH_ENABLED: "false", WRANGLER_SEND_METRICS: "false", WRANGLER_HIDE_BANNER: "true", ...process.env },
});
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(signal, () => dev.kill(signal));
dev.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));

// The CLI talks to 127.0.0.1:8787 unless told otherwise: on any other port, every line says where.
const at = port === "8787" ? "" : ` --url ${url}`;
const cli = linkedHere() ? "baton" : "npx baton";
for (;;) {
  await new Promise((r) => setTimeout(r, 300));
  if (dev.exitCode !== null) break;
  const ok = await fetch(`${url}/agents`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } }).then((r) => r.ok, () => false);
  // Ready only while wrangler still runs: a coordinator answering once ours exited is another one.
  if (!ok || dev.exitCode !== null) continue;
  process.stdout.write([
    "",
    `baton: coordinator ready at ${url}`,
    `baton: dashboard   ${url}/  (on this machine it signs in with the dev token, ${DEV_TOKEN}, by itself)`,
    `baton: try it      ${cli} serve reviewer${at} -- ./examples/shell-agent.sh`,
    `baton:             ${cli} serve reviewer${at} --machine laptop-2 -- ./examples/shell-agent.sh   (a second "machine")`,
    `baton:             ${cli} send reviewer "hello" --wait${at}`,
    ...(cli === "baton" ? [] : ["baton: faster      npm link   (once, here: then `baton …` runs without npx's start-up; docs/guides/cli-on-path.md)"]),
    "",
  ].join("\n") + "\n");
  break;
}
