// How long `baton --version` takes three ways: through `npx baton` (npm resolves the command
// first), as `node dist/cli/main.js`, and as the `baton` that `npm link` puts on PATH (a symlink
// to dist/cli/main.js; made here in a temporary prefix with the same layout npm link makes, so
// nothing global changes). Prints a Markdown table of the medians; `--write` also puts it between
// the markers in docs/guides/cli-on-path.md. `--runs N` (default 15) timed runs each, after one
// untimed warm-up. Builds the CLI first when dist/ is missing.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const GUIDE = join(ROOT, "docs/guides/cli-on-path.md");
const BEGIN = "<!-- cli-startup:begin -->";
const END = "<!-- cli-startup:end -->";

function option(name, fallback) {
  const at = process.argv.indexOf(name);
  if (at === -1) return fallback;
  const value = Number(process.argv[at + 1]);
  if (!Number.isInteger(value) || value < 1) {
    console.error(`${name} takes a whole number of runs of at least 1`);
    process.exit(1);
  }
  return value;
}

/** The layout `npm link` makes: {prefix}/lib/node_modules/baton-client → the checkout, {prefix}/bin/baton → its bin. */
function linkedBaton(prefix) {
  const pkg = join(prefix, "lib/node_modules/baton-client");
  mkdirSync(dirname(pkg), { recursive: true });
  symlinkSync(ROOT, pkg, "dir");
  mkdirSync(join(prefix, "bin"));
  const bin = join(prefix, "bin/baton");
  symlinkSync("../lib/node_modules/baton-client/dist/cli/main.js", bin);
  return bin;
}

/** Milliseconds of each run of `cmd args` (which must print the version and exit 0). */
function time(cmd, args, runs) {
  const once = () => {
    const started = process.hrtime.bigint();
    const r = spawnSync(cmd, args, { cwd: ROOT, encoding: "utf8" });
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} exited ${r.status}: ${r.stderr}`);
    return ms;
  };
  once();
  return Array.from({ length: runs }, once).sort((a, b) => a - b);
}

const median = (sorted) => sorted[Math.floor(sorted.length / 2)];
const ms = (n) => `${Math.round(n)} ms`;

const runs = option("--runs", 15);
if (!existsSync(join(ROOT, "dist/cli/main.js"))) {
  const built = spawnSync(process.execPath, ["scripts/build.mjs"], { cwd: ROOT, stdio: "inherit" });
  if (built.status !== 0) process.exit(built.status ?? 1);
}
const prefix = mkdtempSync(join(tmpdir(), "baton-link-"));
let rows;
try {
  const npx = process.platform === "win32" ? "npx.cmd" : "npx";
  rows = [
    ["`npx baton --version`", time(npx, ["baton", "--version"], runs)],
    ["`node dist/cli/main.js --version`", time(process.execPath, ["dist/cli/main.js", "--version"], runs)],
    ["`baton --version` (after `npm link`)", time(linkedBaton(prefix), ["--version"], runs)],
  ];
} finally {
  rmSync(prefix, { recursive: true, force: true });
}
const npmVersion = spawnSync("npm", ["--version"], { encoding: "utf8" }).stdout.trim();
const report = [
  `| command | median | fastest | slowest |`,
  `| --- | ---: | ---: | ---: |`,
  ...rows.map(([name, t]) => `| ${name} | ${ms(median(t))} | ${ms(t[0])} | ${ms(t[t.length - 1])} |`),
  "",
  `${runs} runs each after a warm-up, Node ${process.version}, npm ${npmVersion}, ${cpus().length} × ${cpus()[0]?.model.trim() ?? "CPU"}, ${new Date().toISOString().slice(0, 10)}.`,
].join("\n");
console.log(report);

if (process.argv.includes("--write")) {
  const text = readFileSync(GUIDE, "utf8");
  const from = text.indexOf(BEGIN);
  const to = text.indexOf(END);
  if (from === -1 || to < from) {
    console.error(`${GUIDE} has no ${BEGIN} … ${END} markers`);
    process.exit(1);
  }
  writeFileSync(GUIDE, `${text.slice(0, from + BEGIN.length)}\n${report}\n${text.slice(to)}`);
  console.log(`\nwritten to ${GUIDE}`);
}
