// A run that fails is a failure, never a reply, through the real CLI: `baton serve` refuses a
// command that does not exist, a command that exits non-zero is retried and then failed with its
// exit code and stderr, `send --wait` exits non-zero and says why, `history` shows the reason.
// Also the first-hour items: two serves of one agent on one host with two machine labels, and
// the command sees its machine label.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { authHeaders, runBaton, sharedServeFixture, startServe, uniqueAgent, waitForMessage, writeSinkCommand } from "./serve-helpers.ts";

const fx = sharedServeFixture();

function script(body: string): string {
  const dir = mkdtempSync(join(tmpdir(), "baton-fail-"));
  const path = join(dir, "run.sh");
  writeFileSync(path, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return path;
}

describe("failed runs", () => {
  it("serve refuses a command that does not exist or is not executable, exit 127, before serving", () => {
    const agent = uniqueAgent("ghost");
    const missing = runBaton(["serve", agent, "--", "./no-such-file.sh"], { BATON_URL: fx.dev.url });
    expect(missing.code).toBe(127);
    expect(missing.stderr).toMatch(/no-such-file\.sh does not exist/);
    const dir = mkdtempSync(join(tmpdir(), "baton-noexec-"));
    writeFileSync(join(dir, "plain.sh"), "#!/bin/sh\necho hi\n", { mode: 0o644 });
    const plain = runBaton(["serve", agent, "--", join(dir, "plain.sh")], { BATON_URL: fx.dev.url });
    expect(plain.code).toBe(127);
    expect(plain.stderr).toMatch(/not executable/);
    expect(runBaton(["serve", agent, "--", "no-such-command-anywhere"], { BATON_URL: fx.dev.url }).stderr).toMatch(/not found on PATH/);
  });

  it("a command that exits 3 is retried, then failed with its exit code and stderr; send --wait exits 4 and says why; history, show and agent show tell it", async () => {
    const agent = uniqueAgent("exit3");
    const res = await fetch(`${fx.dev.url}/agents/${agent}/policy`, { method: "PUT", headers: authHeaders(), body: JSON.stringify({ max_attempts: 2 }) });
    expect(res.status).toBe(200);
    const { sink } = writeSinkCommand(mkdtempSync(join(tmpdir(), "baton-exit3-")));
    const command = script(`echo "partial output"; echo "it broke: $BATON_ATTEMPT" >&2; exit 3`);
    const served = startServe({ url: fx.dev.url, agent, tag: "a", command, sink });
    fx.started.push(served);
    await served.waitFor(/holder/);
    const sent = runBaton(["send", agent, "hi", "--wait", "--timeout", "30"], { BATON_URL: fx.dev.url });
    expect(sent.code).toBe(4);
    expect(sent.stdout).toBe("");
    expect(sent.stderr).toMatch(/failed after 2 attempts: the command exited with code 3; stderr: it broke: 2/);
    const history = runBaton(["history", agent], { BATON_URL: fx.dev.url });
    expect(history.stdout).toMatch(/failed\s+attempts 2/);
    expect(history.stdout).toMatch(/failed: the command exited with code 3; stderr: it broke: 2/);
    expect(history.stdout).not.toContain("partial output");
    const shown = runBaton(["show", agent, "1"], { BATON_URL: fx.dev.url });
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/^message 1 of .*: failed, 2 attempts \(2 failed\)/);
    expect(shown.stdout).toMatch(/failed\s+the command exited with code 3; stderr: it broke: 2/);
    const policy = runBaton(["agent", "show", agent], { BATON_URL: fx.dev.url });
    expect(policy.stdout).toMatch(/mode\s+single/);
    expect(policy.stdout).toMatch(/max attempts\s+2/);
    const bare = runBaton(["agent"], { BATON_URL: fx.dev.url });
    expect(bare.code).toBe(2);
    expect(bare.stderr).toMatch(/agent needs a subcommand: show or set/);
  });

  it("baton retry runs a failed message as attempts 3 and 4 (BATON_ATTEMPT), with max_attempts 2 again; history, show and logs say its numbers went on", async () => {
    const agent = uniqueAgent("retried");
    const res = await fetch(`${fx.dev.url}/agents/${agent}/policy`, { method: "PUT", headers: authHeaders(), body: JSON.stringify({ max_attempts: 2 }) });
    expect(res.status).toBe(200);
    const { sink } = writeSinkCommand(mkdtempSync(join(tmpdir(), "baton-retried-")));
    const served = startServe({ url: fx.dev.url, agent, tag: "a", command: script(`echo "try $BATON_ATTEMPT"; echo "it broke: $BATON_ATTEMPT" >&2; exit 3`), sink });
    fx.started.push(served);
    await served.waitFor(/holder/);
    const sent = runBaton(["send", agent, "hi", "--wait", "--timeout", "30"], { BATON_URL: fx.dev.url });
    expect(sent.stderr).toMatch(/failed after 2 attempts: the command exited with code 3; stderr: it broke: 2/);
    const retried = runBaton(["retry", agent, "1"], { BATON_URL: fx.dev.url });
    expect(retried).toMatchObject({ code: 0, stderr: "" });
    const failed = await waitForMessage(fx.dev.url, agent, 1, (m) => m.status === "failed" && m.attempts > 2);
    expect(failed).toMatchObject({ attempts: 4, retried_after: 2, failures: 4, error: expect.stringMatching(/it broke: 4/) });
    const history = runBaton(["history", agent], { BATON_URL: fx.dev.url });
    expect(history.stdout).toMatch(/failed\s+attempts 4 \(retried after 2\)/);
    const shown = runBaton(["show", agent, "1"], { BATON_URL: fx.dev.url });
    expect(shown.stdout).toMatch(/^message 1 of .*: failed, 4 attempts \(retried after 2, 4 failed\)/);
    // Each attempt has its own section: 1 to 4, none twice.
    const logs = runBaton(["logs", agent, "1"], { BATON_URL: fx.dev.url });
    expect(logs.stdout).toBe("try 1\ntry 2\ntry 3\ntry 4\n");
    expect(logs.stderr.match(/baton: attempt \d+ failed/g)).toEqual(["baton: attempt 1 failed", "baton: attempt 2 failed", "baton: attempt 3 failed", "baton: attempt 4 failed"]);
  });

  it("a command killed by a signal is a failed attempt too, never an empty reply", async () => {
    const agent = uniqueAgent("killed");
    await fetch(`${fx.dev.url}/agents/${agent}/policy`, { method: "PUT", headers: authHeaders(), body: JSON.stringify({ max_attempts: 1 }) });
    const { sink } = writeSinkCommand(mkdtempSync(join(tmpdir(), "baton-killed-")));
    const served = startServe({ url: fx.dev.url, agent, tag: "a", command: script("kill -9 $$"), sink });
    fx.started.push(served);
    await served.waitFor(/holder/);
    const sent = runBaton(["send", agent, "hi", "--wait", "--timeout", "30"], { BATON_URL: fx.dev.url });
    expect(sent.code).toBe(4);
    expect(sent.stderr).toMatch(/killed by SIGKILL/);
  });
});

describe("the first hour", () => {
  it("a second serve of one agent on one host with another --machine stands by instead of being refused; the command sees BATON_MACHINE", async () => {
    const agent = uniqueAgent("laptop");
    const dir = mkdtempSync(join(tmpdir(), "baton-laptop-"));
    const lockDir = join(dir, "lock");
    const { sink } = writeSinkCommand(dir);
    const command = script(`cat >/dev/null; echo "$BATON_AGENT on $BATON_MACHINE"`);
    const first = startServe({ url: fx.dev.url, agent, tag: "one", command, sink, lockDir });
    fx.started.push(first);
    await first.waitFor(/holder/);
    const second = startServe({ url: fx.dev.url, agent, tag: "two", command, sink, lockDir });
    fx.started.push(second);
    await second.waitFor(/standby/);
    const same = startServe({ url: fx.dev.url, agent, tag: "one", command, sink, lockDir });
    fx.started.push(same);
    expect((await same.exited).code).toBe(1);
    expect(same.stderr()).toMatch(/already served as machine "machine-one".*another --machine/);
    const sent = runBaton(["send", agent, "hi", "--wait", "--timeout", "30"], { BATON_URL: fx.dev.url });
    expect(sent).toMatchObject({ code: 0, stdout: `${agent} on machine-one\n` });
  });
});
