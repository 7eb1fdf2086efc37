// `npx tsx scripts/idle-footprint.ts [SECONDS]`: what serving one agent costs while nothing
// happens. Starts a wrangler dev, then serves one agent with the TypeScript client
// (examples/node-agent.mjs) and one with the Python client (examples/python-agent.py, in the venv
// at BATON_PY_VENV or /tmp/baton-venv), waits SECONDS (default 60), and prints each process's CPU
// time over that window (from /proc, in 10 ms ticks) and its resident memory at the end; both must hold their agent's lease first.
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT, startWranglerDev, DEV_TOKEN } from "../test/e2e/wrangler-dev.ts";

const seconds = Number(process.argv[2] ?? "60");
const TICKS = 100;

function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) / TICKS;
}

function rssMiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith("VmRSS:"))!;
  return Number(line.split(/\s+/)[1]) / 1024;
}

async function main(): Promise<void> {
  const dev = await startWranglerDev({});
  const env = { ...process.env, BATON_URL: dev.url, BATON_TOKEN: DEV_TOKEN };
  const venv = process.env.BATON_PY_VENV ?? "/tmp/baton-venv";
  const procs: Record<string, ChildProcess> = {
    typescript: spawn(process.execPath, [join(ROOT, "examples/node-agent.mjs"), "idle-ts"], { env, stdio: "ignore" }),
    python: spawn(join(venv, "bin/python"), [join(ROOT, "examples/python-agent.py"), "idle-py"], { env, stdio: "ignore" }),
  };
  try {
    await new Promise((r) => setTimeout(r, 5000));
    for (const agent of ["idle-ts", "idle-py"]) {
      const p = (await fetch(`${dev.url}/agents/${agent}/presence`, { headers: { authorization: `Bearer ${DEV_TOKEN}` } }).then((r) => r.json())) as { holder: { machine: string } | null };
      if (!p.holder) throw new Error(`${agent} has no holder: its client did not connect`);
    }
    const before = Object.fromEntries(Object.entries(procs).map(([k, p]) => [k, cpuSeconds(p.pid!)]));
    await new Promise((r) => setTimeout(r, seconds * 1000));
    console.log(`serving one idle agent for ${seconds} s (after a 5 s start):`);
    for (const [k, p] of Object.entries(procs)) {
      const cpu = cpuSeconds(p.pid!) - before[k]!;
      console.log(`  ${k.padEnd(10)} CPU ${(cpu * 1000).toFixed(0)} ms (${((cpu / seconds) * 100).toFixed(2)}% of a core), RSS ${rssMiB(p.pid!).toFixed(1)} MiB`);
    }
  } finally {
    for (const p of Object.values(procs)) p.kill("SIGTERM");
    await dev.stop();
  }
}

await main();
