// `npm run mutation`: breaks each safety rule by hand, in a scratch worktree of HEAD, and checks
// that the tests guarding it go red. A mutant the tests do not notice fails this run.
// Each mutant names the exact text it replaces, so a refactor that moves the rule fails loudly
// ("not found") instead of silently testing nothing.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const MUTANTS = [
  {
    name: "fence check removed (a stale fence writes)",
    file: "worker/rules/fencing.ts",
    find: "if (presentedFence !== current.fence) {",
    replace: "if (false) {",
    unit: ["test/unit/session-lease.test.ts"],
    worker: ["test/worker/serve-lease.test.ts", "test/worker/session-lease.test.ts"],
  },
  {
    name: "staleness check removed (a silent holder keeps the lease)",
    file: "worker/rules/election.ts",
    find: "return now - c.lastHeartbeat > ttlMs;",
    replace: "return false;",
    unit: ["test/unit/election.test.ts"],
    worker: ["test/worker/serve-lease.test.ts"],
  },
  {
    name: "token-to-runner binding removed (another connection writes with a message's token)",
    file: "worker/rules/message-lease.ts",
    find: "if (m.runner !== runner) {",
    replace: "if (false) {",
    unit: ["test/unit/message-lease.test.ts"],
    worker: ["test/worker/work-promises.test.ts", "test/worker/step-journal.test.ts"],
  },
  {
    name: "safe-point rule removed (the lease moves while its holder runs a message)",
    file: "worker/rules/preference.ts",
    find: "if (ctx.holderBusy || ctx.paused) return { winner: holder, reason: null };",
    replace: "if (ctx.paused) return { winner: holder, reason: null };",
    unit: ["test/unit/preference.test.ts"],
    worker: ["test/worker/preference.test.ts"],
  },
  {
    name: "output marks dropped (a takeover leaves no end of the lost attempt in its output)",
    file: "worker/rules/plan/effects.ts",
    find: "marks: outputMarks(c, c.kind === \"hand_out\" ? c.machine : null)",
    replace: "marks: { ...outputMarks(c, c.kind === \"hand_out\" ? c.machine : null), ended: null }",
    unit: ["test/unit/worker-transcripts.test.ts"],
    worker: ["test/worker/output.test.ts"],
  },
  {
    name: "decline's ran-check removed (an attempt that ran is queued again without costing an attempt: a free retry)",
    file: "worker/rules/plan/write.ts",
    find: "const ran = ranUnder(t);",
    replace: "const ran = null;",
    unit: ["test/unit/plan-write.test.ts"],
    worker: ["test/worker/stopping.test.ts"],
  },
  {
    name: "a stopping runner elected like any other (the lease goes to a serve that is shutting down)",
    file: "worker/rules/preference.ts",
    find: "return { eligible: staying.length > 0 ? staying : notDrained, staying };",
    replace: "return { eligible: notDrained, staying };",
    unit: ["test/unit/preference.test.ts"],
    worker: ["test/worker/stopping.test.ts"],
  },
];

const repo = resolve(import.meta.dirname, "..");
const scratch = mkdtempSync(join(tmpdir(), "baton-mutation-"));
const tree = join(scratch, "tree");
execFileSync("git", ["worktree", "add", "--detach", tree, "HEAD"], { cwd: repo, stdio: "ignore" });
symlinkSync(join(repo, "node_modules"), join(tree, "node_modules"));

function red(config, files) {
  const run = spawnSync("npx", ["vitest", "run", "-c", config, ...files], { cwd: tree, encoding: "utf8", timeout: 300_000 });
  return { red: run.status !== 0, tail: `${run.stdout}${run.stderr}`.split("\n").filter((l) => /FAIL|✗|×/.test(l)).slice(0, 3) };
}

let survived = 0;
try {
  // A mutant's red counts only if the same files are green on the unmutated code.
  const all = (key) => [...new Set(MUTANTS.flatMap((m) => m[key]))];
  const baseline = [red("vitest.node.config.ts", all("unit")), red("vitest.workers.config.ts", all("worker"))];
  if (baseline.some((b) => b.red)) throw new Error(`the guarding tests fail without any mutant: ${baseline.flatMap((b) => b.tail).join(" | ")}`);
  console.log("baseline: the guarding tests pass on HEAD");
  for (const m of MUTANTS) {
    const path = join(tree, m.file);
    const source = readFileSync(path, "utf8");
    if (!source.includes(m.find)) throw new Error(`${m.file}: "${m.find}" not found — update this mutant to where the rule lives now`);
    writeFileSync(path, source.replace(m.find, m.replace));
    const unit = red("vitest.node.config.ts", m.unit);
    const worker = red("vitest.workers.config.ts", m.worker);
    writeFileSync(path, source);
    const caught = unit.red && worker.red;
    if (!caught) survived++;
    console.log(`${caught ? "killed  " : "SURVIVED"} ${m.name}: unit ${unit.red ? "red" : "green"}, workerd ${worker.red ? "red" : "green"}`);
    for (const line of [...unit.tail, ...worker.tail]) console.log(`           ${line.trim()}`);
  }
} finally {
  execFileSync("git", ["worktree", "remove", "--force", tree], { cwd: repo, stdio: "ignore" });
  if (existsSync(scratch)) rmSync(scratch, { recursive: true, force: true });
}
console.log(survived === 0 ? `all ${MUTANTS.length} mutants killed` : `${survived} of ${MUTANTS.length} mutants survived`);
process.exit(survived === 0 ? 0 : 1);
