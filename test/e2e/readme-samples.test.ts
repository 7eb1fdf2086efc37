// The README's quick start is what a user sees: its commands are run as written (the first serve's
// machine label given by BATON_MACHINE, as the sample's "desktop") against a real `wrangler dev`
// with the default settings, and every line of output must match the samples, ages aside: one
// machine serving, then a second one that stands by and takes over when the first is killed.
// The README's TypeScript agent is an excerpt of examples/node-agent.mjs, run here the same way.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BIN } from "./serve-helpers.ts";
import { DEV_TOKEN, ROOT, startWranglerDev, type DevServer } from "./wrangler-dev.ts";

let dev: DevServer;
beforeAll(async () => {
  dev = await startWranglerDev();
});
afterAll(async () => {
  await dev?.stop();
});

const README = readFileSync(join(ROOT, "README.md"), "utf8");

/** The sample block that starts with `$ FIRST`: each `$ command` with the lines it printed. */
function sample(first: string): { command: string; output: string[] }[] {
  const start = README.indexOf(`\`\`\`\n$ ${first}\n`);
  expect(start, `no README sample starting with $ ${first}`).toBeGreaterThan(0);
  const block = README.slice(start + 4, README.indexOf("```", start + 4));
  const steps: { command: string; output: string[] }[] = [];
  for (const line of block.split("\n")) {
    if (line.startsWith("$ ")) steps.push({ command: line.slice(2), output: [] });
    else if (line.trim() !== "") steps.at(-1)!.output.push(line);
  }
  return steps;
}

/** Ages and column padding differ from run to run; nothing else may. */
function normal(lines: string[]): string[] {
  return lines.map((l) => l.replace(/\d+m\d+s ago|\d+(\.\d+)?s ago/g, "<age> ago").replace(/\s+/g, " ").trim()).filter(Boolean);
}

const env = { ...process.env, BATON_URL: "", BATON_TOKEN: DEV_TOKEN, BATON_MACHINE: "desktop" };
function args(command: string): string[] {
  const words = command.match(/"[^"]*"|\S+/g)!.map((w) => w.replace(/^"|"$/g, ""));
  expect(words.slice(0, 2)).toEqual(["npx", "baton"]);
  return words.slice(2);
}

/** A sample's `npx baton serve …` as a process of the built CLI, pointed at the test's coordinator; its stderr collected. */
function startServe(command: string): { proc: ChildProcess; err: () => string } {
  const words = args(command);
  const dashes = words.indexOf("--");
  const proc = spawn(process.execPath, [BIN, ...words.slice(0, dashes), "--url", dev.url, ...words.slice(dashes)], {
    cwd: ROOT, env, stdio: ["ignore", "ignore", "pipe"],
  });
  let err = "";
  proc.stderr!.on("data", (d) => (err += d));
  return { proc, err: () => err };
}

function run(command: string): string[] {
  const r = spawnSync(process.execPath, [BIN, ...args(command), "--url", dev.url], { cwd: ROOT, env, encoding: "utf8", timeout: 30_000 });
  return normal(r.stdout.split("\n"));
}

const asPrinted = (err: string) => normal(err.split("\n")).map((l) => l.replace(dev.url, "http://127.0.0.1:8787"));

describe("README quick start", () => {
  it("prints exactly what the samples show: one machine serving, then a second one taking over after the first is killed", async () => {
    const [serveStep, whoStep, sendStep] = sample("npx baton serve reviewer -- ./examples/shell-agent.sh");
    const [secondStep, resendStep] = sample("npx baton serve reviewer --machine laptop-2 -- ./examples/shell-agent.sh");
    const first = startServe(serveStep!.command);
    let second: ReturnType<typeof startServe> | null = null;
    try {
      await expect.poll(() => first.err().includes("holder"), { timeout: 20_000 }).toBe(true);
      expect(run(whoStep!.command)).toEqual(normal(whoStep!.output));
      expect(run(sendStep!.command)).toEqual(normal(sendStep!.output));
      await expect.poll(() => first.err().includes("ran message"), { timeout: 10_000 }).toBe(true);
      expect(asPrinted(first.err())).toEqual(normal(serveStep!.output));

      second = startServe(secondStep!.command);
      await expect.poll(() => second!.err().includes("standby"), { timeout: 20_000 }).toBe(true);
      first.proc.kill("SIGKILL");
      await expect.poll(() => second!.err().includes("holder"), { timeout: 20_000 }).toBe(true);
      expect(run(resendStep!.command)).toEqual(normal(resendStep!.output));
      await expect.poll(() => second!.err().includes("ran message"), { timeout: 10_000 }).toBe(true);
      expect(asPrinted(second.err())).toEqual(normal(secondStep!.output));
    } finally {
      first.proc.kill("SIGKILL");
      second?.proc.kill("SIGTERM");
    }
  });

  it("the TypeScript agent is examples/node-agent.mjs, and it answers as the shell agent does", async () => {
    const excerpt = README.slice(README.indexOf("```js\n", README.indexOf("## An agent in TypeScript")) + 6);
    const source = readFileSync(join(ROOT, "examples/node-agent.mjs"), "utf8");
    expect(source).toContain(excerpt.slice(0, excerpt.indexOf("```")).trimEnd());
    const agent = `readme-ts-${process.pid}`;
    const proc = spawn(process.execPath, ["examples/node-agent.mjs", agent], {
      cwd: ROOT, env: { ...env, BATON_URL: dev.url, BATON_MACHINE: "laptop" }, stdio: ["ignore", "ignore", "pipe"],
    });
    let err = "";
    proc.stderr!.on("data", (d) => (err += d));
    try {
      await expect.poll(() => err.includes("holder"), { timeout: 20_000 }).toBe(true);
      expect(run(`npx baton send ${agent} "hello" --wait`)).toEqual([`${agent} on laptop (fence 1), message 1: HELLO`]);
    } finally {
      proc.kill("SIGTERM");
    }
  });

  it("the Python agent is examples/python-agent.py (which test/python/test_serve.py runs)", () => {
    const excerpt = README.slice(README.indexOf("```python\n", README.indexOf("## An agent in TypeScript")) + 10);
    const source = readFileSync(join(ROOT, "examples/python-agent.py"), "utf8");
    expect(source).toContain(excerpt.slice(0, excerpt.indexOf("```")).trimEnd());
  });
});
