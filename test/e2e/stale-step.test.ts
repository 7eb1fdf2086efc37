// Issue 46: the orphan's `baton step` of a step its successor had already recorded exited 0 and
// printed the successor's output. A stale attempt's replay is refused as its write would be: the
// CLI says it lost the run, prints nothing on stdout and runs nothing.
import { mkdtempSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { rawRunner } from "./raw-serve.ts";
import { authHeaders, postMessage, runBatonAsync, sharedServeFixture, uniqueAgent } from "./serve-helpers.ts";

const fx = sharedServeFixture();

describe("a stale attempt's baton step", () => {
  it("a step its successor recorded is refused: exit 1, 'lost message' on stderr, nothing on stdout, COMMAND never ran", async () => {
    const agent = uniqueAgent("stale-step");
    const a = await rawRunner(fx.dev.url, agent, "desktop", "runner-a");
    const id = await postMessage(fx.dev.url, agent, "work");
    const first = await a.sock.next("message", (f) => f.run === true && f.id === id);
    a.sock.close();
    const b = await rawRunner(fx.dev.url, agent, "laptop", "runner-b");
    const second = await b.sock.next("message", (f) => f.run === true && f.id === id, 15_000);
    expect(second.token).toBeGreaterThan(first.token!);
    const put = await fetch(`${fx.dev.url}/agents/${agent}/messages/${id}/steps/plan`, {
      method: "PUT", headers: authHeaders(), body: JSON.stringify({ token: second.token, run_key: second.run_key, kind: "step", phase: "done", value: "wrote-by-lap" }),
    });
    expect(put.status).toBe(200);
    const work = mkdtempSync(join(tmpdir(), "baton-stale-"));
    const env = {
      BATON_URL: fx.dev.url, BATON_AGENT: agent, BATON_MESSAGE_ID: String(id), BATON_MESSAGE_TOKEN: String(first.token), BATON_RUN_KEY: first.run_key!,
    };
    const stale = await runBatonAsync(["step", "plan", "--", "sh", "-c", `touch ${join(work, "ran")}; echo wrote-by-desktop`], env);
    expect({ code: stale.code, stdout: stale.stdout }).toEqual({ code: 1, stdout: "" });
    expect(stale.stderr).toMatch(/lost message \d+.*stale_token|lost message \d+.*not message/);
    expect(existsSync(join(work, "ran"))).toBe(false);
    const current = await runBatonAsync(["step", "plan", "--", "sh", "-c", "echo never"], { ...env, BATON_MESSAGE_TOKEN: String(second.token), BATON_RUN_KEY: second.run_key! });
    expect({ code: current.code, stdout: current.stdout, stderr: current.stderr }).toEqual({ code: 0, stdout: "wrote-by-lap", stderr: "" });
    b.sock.close();
  });
});
