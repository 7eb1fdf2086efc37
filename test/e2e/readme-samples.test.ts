// The README's quick-start sample is what a user sees: its commands are run as written (the
// machine label given by BATON_MACHINE, as the sample's "desktop") against a real `wrangler dev`
// with the default settings, and every line of output must match the sample, ages aside.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BIN } from "./serve-helpers.ts";
import { DEV_TOKEN, ROOT, startWranglerDev, type DevServer } from "./wrangler-dev.ts";
import { spawnSync } from "node:child_process";

let dev: DevServer;
beforeAll(async () => {
  dev = await startWranglerDev();
});
afterAll(async () => {
  await dev?.stop();
});

/** The sample block: each `$ command` with the lines it printed. */
function sample(): { command: string; output: string[] }[] {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const start = readme.indexOf("```\n$ npx baton serve reviewer -- ./examples/shell-agent.sh");
  expect(start).toBeGreaterThan(0);
  const block = readme.slice(start + 4, readme.indexOf("```", start + 4));
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
  return [...words.slice(2), "--url", dev.url];
}

describe("README quick start", () => {
  it("prints exactly what the sample shows", async () => {
    const [serveStep, whoStep, sendStep] = sample();
    expect(serveStep!.command).toBe("npx baton serve reviewer -- ./examples/shell-agent.sh");
    const serveArgs = args(serveStep!.command);
    const dashes = serveArgs.indexOf("--");
    const serve = spawn(process.execPath, [BIN, ...serveArgs.slice(0, dashes), "--url", dev.url, ...serveArgs.slice(dashes).filter((a) => a !== "--url" && a !== dev.url)], {
      cwd: ROOT, env, stdio: ["ignore", "ignore", "pipe"],
    });
    let err = "";
    serve.stderr!.on("data", (d) => (err += d));
    try {
      await expect.poll(() => err.includes("holder"), { timeout: 20_000 }).toBe(true);
      const who = spawnSync(process.execPath, [BIN, ...args(whoStep!.command)], { cwd: ROOT, env, encoding: "utf8", timeout: 30_000 });
      const sent = spawnSync(process.execPath, [BIN, ...args(sendStep!.command)], { cwd: ROOT, env, encoding: "utf8", timeout: 30_000 });
      expect(normal(who.stdout.split("\n"))).toEqual(normal(whoStep!.output));
      expect(normal(sent.stdout.split("\n"))).toEqual(normal(sendStep!.output));
      await expect.poll(() => err.includes("ran message"), { timeout: 10_000 }).toBe(true);
      expect(normal(err.split("\n")).map((l) => l.replace(dev.url, "http://127.0.0.1:8787"))).toEqual(normal(serveStep!.output));
    } finally {
      serve.kill("SIGTERM");
    }
  });
});
