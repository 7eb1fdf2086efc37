// `npm run chaos -- --scenario attacks [--before COMMIT]`: the attacks on the work promises, run as
// an adversary with a token of the same account would, against wrangler dev under background load
// (two clients reading a 3.2 MB history in a loop). Each attack counts what the coordinator wrongly
// accepted: replies after the run deadline, resumes after the park deadline, messages completed
// with another runner's token, and preference moves caused by release + claim flapping. With
// --before COMMIT the same attacks run first against that commit, side by side. Exits non-zero
// when the tree under test (HEAD, or --working-tree) accepts any of them.
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import { markdownTable } from "../bench/stats.ts";
import { snapshotOfHead, workingTree, wranglerDevOf, type Tree } from "../bench/snapshot.ts";
import { rawRunner, rawServe, type RawServe } from "../../test/e2e/raw-serve.ts";

const { values: opts } = parseArgs({
  options: {
    before: { type: "string" },
    tries: { type: "string", default: "30" },
    "working-tree": { type: "boolean", default: false },
  },
});
const tries = Number(opts.tries);
const TOKEN = "baton-dev-token";
const headers = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const VARS = { BATON_HEARTBEAT_TTL_SECONDS: "10", BATON_PRESENCE_SCAN_SECONDS: "5", BATON_PREFERENCE_HYSTERESIS_SECONDS: "1" };

interface Result {
  lateReplies: number;
  lateResumes: number;
  stolen: number;
  flapMoves: number;
}

async function http(url: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function write(sock: RawServe, frame: Record<string, unknown>): Promise<Record<string, unknown>> {
  const req = `a${Math.random().toString(36).slice(2, 10)}`;
  sock.send({ ...frame, req });
  return (await Promise.race([sock.next("result", (f) => f.req === req), sock.next("error", (f) => f.req === req)])) as Record<string, unknown>;
}

/** Two readers paging a 3.2 MB history over and over, in the same workerd, until stopped. */
function backgroundLoad(url: string): { stop: () => Promise<void> } {
  let running = true;
  const agent = `load-${process.pid}`;
  const ready = (async () => {
    for (let i = 0; i < 100; i++) await http(url, "POST", `/agents/${agent}/messages`, { text: "x".repeat(32 * 1024 - 64) });
  })();
  const reader = async () => {
    await ready;
    while (running) await http(url, "GET", `/agents/${agent}/messages?after=0&limit=100`);
  };
  const readers = [reader(), reader()];
  return { stop: async () => { running = false; await Promise.all(readers); } };
}

async function lateReplies(url: string): Promise<number> {
  const agent = `late-reply-${process.pid}`;
  const { sock } = await rawRunner(url, agent, "a", "run-a");
  let accepted = 0;
  for (let i = 0; i < tries; i++) {
    const id = (await http(url, "POST", `/agents/${agent}/messages`, { text: `m${i}`, run_timeout_seconds: 1 })).body.id as number;
    const m = await sock.next("message", (f) => f.run && f.id === id);
    const expiresAt = (await http(url, "GET", `/agents/${agent}/messages/${id}`)).body.expires_at as number;
    await sleep(Math.max(0, expiresAt - Date.now()) + 1 + Math.random() * 20);
    const answer = await write(sock, { type: "reply", id, token: m.token, key: `${id}:reply`, text: "late" });
    if (answer.type === "result" && answer.duplicate === false) accepted++;
  }
  sock.close();
  return accepted;
}

async function lateResumes(url: string): Promise<number> {
  const agent = `late-resume-${process.pid}`;
  const { sock } = await rawRunner(url, agent, "a", "run-a");
  let revived = 0;
  for (let i = 0; i < tries; i++) {
    const id = (await http(url, "POST", `/agents/${agent}/messages`, { text: `m${i}` })).body.id as number;
    const m = await sock.next("message", (f) => f.run && f.id === id);
    const parked = await write(sock, { type: "park", id, token: m.token, deadline_seconds: 1 });
    const deadline = parked.deadline as number;
    await sleep(Math.max(0, deadline - Date.now()) + 1 + Math.random() * 20);
    if ((await http(url, "POST", `/agents/${agent}/messages/${id}/resume`, { input: "yes" })).status === 200) revived++;
    // Whatever was revived runs again; finish it so the next message is handed out.
    const again = sock.frames.find((f) => f.type === "message" && f.run && f.id === id && f.token !== m.token);
    if (again && again.type === "message") await write(sock, { type: "ack", id, token: again.token });
  }
  sock.close();
  return revived;
}

async function stolen(url: string): Promise<number> {
  const agent = `theft-${process.pid}`;
  const { sock: runner } = await rawRunner(url, agent, "a", "run-a");
  const { sock: standby } = await rawRunner(url, agent, "b", "run-b");
  const watcher = await rawServe(url, agent, "w");
  let completed = 0;
  for (let i = 0; i < tries; i++) {
    const id = (await http(url, "POST", `/agents/${agent}/messages`, { text: `m${i}` })).body.id as number;
    await runner.next("message", (f) => f.run && f.id === id);
    const token = (await http(url, "GET", `/agents/${agent}/messages/${id}`)).body.token as number;
    const thief = [standby, watcher][i % 2]!;
    const answer = await write(thief, { type: "reply", id, token, key: `${id}:reply`, text: "stolen" });
    if (answer.type === "result" && answer.duplicate === false) completed++;
    const own = await write(runner, { type: "reply", id, token, key: `${id}:reply`, text: "mine" });
    void own;
  }
  for (const s of [runner, standby, watcher]) s.close();
  return completed;
}

async function flapping(url: string): Promise<number> {
  const agent = `flap-${process.pid}`;
  const { sock: low } = await rawRunner(url, agent, "low", "run-low");
  const high = await rawServe(url, agent, "high");
  high.send({ type: "serve_lease", op: "claim", priority: 10, runner_id: "run-high" });
  await high.next("serve_lease", (f) => f.held, 10_000);
  const started = Date.now();
  while (Date.now() - started < 1000) {
    high.send({ type: "serve_lease", op: "release" });
    high.send({ type: "serve_lease", op: "claim", priority: 10, runner_id: "run-high" });
    await sleep(40);
  }
  await sleep(200);
  const transitions = (await http(url, "GET", `/agents/${agent}/presence`)).body.transitions as { reason: string; at: number }[];
  low.close();
  high.close();
  return transitions.filter((t) => t.reason === "preferred" && t.at >= started).length;
}

async function attack(tree: Tree): Promise<Result> {
  const { startWranglerDev } = await wranglerDevOf(tree);
  const dev = await startWranglerDev({ vars: VARS });
  const load = backgroundLoad(dev.url);
  try {
    return { lateReplies: await lateReplies(dev.url), lateResumes: await lateResumes(dev.url), stolen: await stolen(dev.url), flapMoves: await flapping(dev.url) };
  } finally {
    await load.stop();
    await dev.stop();
    tree.dispose();
  }
}

const trees: Tree[] = [];
if (opts.before) trees.push(snapshotOfHead(opts.before));
trees.push(opts["working-tree"] ? workingTree() : snapshotOfHead());
const load0 = loadavg()[0]!;
const results: { revision: string; result: Result }[] = [];
for (const tree of trees) results.push({ revision: tree.revision, result: await attack(tree) });
console.log(`\nAttacks on the work promises, ${tries} tries each, under background load (two readers of a 3.2 MB history); load average ${load0.toFixed(1)} -> ${loadavg()[0]!.toFixed(1)}\n`);
console.log(markdownTable(
  ["baton", `replies after the run deadline accepted`, `resumes after the park deadline accepted`, "messages completed with another runner's token", "preferred moves in 1 s of release+claim flapping (1 s hysteresis)"],
  results.map(({ revision, result: r }) => [revision, `${r.lateReplies}/${tries}`, `${r.lateResumes}/${tries}`, `${r.stolen}/${tries}`, String(r.flapMoves)]),
));
const last = results.at(-1)!.result;
const violated = last.lateReplies + last.lateResumes + last.stolen > 0 || last.flapMoves > 1;
console.log(violated ? "\nVIOLATED: the tree under test accepted an attack" : "\nheld: the tree under test accepted none");
process.exit(violated ? 1 : 0);
