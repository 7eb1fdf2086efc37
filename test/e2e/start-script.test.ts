// `npm start -- --port P`: the coordinator comes up on P and every "try it" line it prints talks
// to P (run here as printed, with the built CLI in place of `npx baton`); apart from the port, it
// prints what the README shows.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { BIN } from "./serve-helpers.ts";
import { DEV_TOKEN, freePort, ROOT } from "./wrangler-dev.ts";

let stop: (() => void) | null = null;
afterAll(() => stop?.());

describe("npm start on another port", () => {
  it("prints try-it lines that carry the URL, and the printed send reaches that coordinator", async () => {
    const port = await freePort();
    const proc = spawn(process.execPath, ["scripts/start.mjs", "--port", String(port), "--persist-to", mkdtempSync(join(tmpdir(), "baton-start-"))], {
      cwd: ROOT, env: { ...process.env, BATON_URL: "", BATON_TOKEN: "" }, stdio: ["ignore", "pipe", "pipe"], detached: true,
    });
    stop = () => {
      try {
        process.kill(-proc.pid!, "SIGTERM");
      } catch {
        // gone already
      }
    };
    let out = "";
    proc.stderr!.on("data", (d) => (out += d));
    await new Promise<void>((resolve, reject) => {
      proc.stdout!.on("data", (d) => {
        out += d;
        if (out.includes("send reviewer")) resolve();
      });
      proc.once("exit", (code) => reject(new Error(`npm start exited ${code}:\n${out}`)));
    });
    const url = `http://127.0.0.1:${port}`;
    const tryIt = out.split("\n").filter((l) => l.includes("npx baton "));
    expect(tryIt).toHaveLength(3);
    for (const line of tryIt) expect(line).toContain(`--url ${url}`);
    const readme = readFileSync(join(ROOT, "README.md"), "utf8");
    const at = readme.indexOf("```\nbaton: coordinator ready at");
    expect(at, "the README shows what npm start prints").toBeGreaterThan(0);
    const shown = readme.slice(at + 4, readme.indexOf("```", at + 4)).trim().split("\n");
    const printed = out.split("\n").filter((l) => l.startsWith("baton:")).map((l) => l.replaceAll(` --url ${url}`, "").replaceAll(url, "http://127.0.0.1:8787"));
    expect(printed).toEqual(shown);
    const send = tryIt.find((l) => l.includes("send reviewer"))!.replace(/^.*npx baton /, "").replace(" --wait", "");
    const words = send.match(/"[^"]*"|\S+/g)!.map((w) => w.replace(/^"|"$/g, ""));
    const sent = spawnSync(process.execPath, [BIN, ...words], { cwd: ROOT, env: { ...process.env, BATON_URL: "", BATON_TOKEN: DEV_TOKEN }, encoding: "utf8" });
    expect(sent.status, sent.stderr).toBe(0);
    expect(sent.stdout).toMatch(/^sent message \d+ to reviewer\n$/);
  }, 120_000);
});
