// A person in the loop end to end: a shell agent under real `baton serve` asks with `baton ask`,
// `send --wait` says at once that the message waits and how to answer it (exit 5), `baton answer`
// runs it again and the re-run `baton ask` prints the choice; `baton reject` ends a message as
// rejected; every next step the CLI prints works as printed.
// `baton hook claude-code` fed Claude Code's documented hook input: allow and deny by a named
// person, the deadline asks here, bad input and an unreachable coordinator never allow, and a
// re-run for the same tool call finds the same question.
// (person-client-library.test.ts: ctx.ask, effects a person approves, deadlines.)
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { errorOf, shellAgent } from "./person-helpers.ts";
import { BIN, getJson, postMessage, runBaton, sharedServeFixture, startServe, uniqueAgent, waitForMessage } from "./serve-helpers.ts";
import { DEV_TOKEN, ROOT } from "./wrangler-dev.ts";
import { freshCall, startHook } from "./hook-process.ts";
import { PERMISSION_REQUEST, PRE_TOOL_USE } from "../unit/claude-code-hook-inputs.ts";

const fx = sharedServeFixture();
/** `baton send --wait` as a user runs it: resolves with its exit code and output. */
function sendWait(agent: string, text: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [BIN, "send", agent, text, "--wait", "--timeout", "30"], {
      cwd: ROOT, env: { ...process.env, BATON_URL: fx.dev.url, BATON_TOKEN: DEV_TOKEN },
    });
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (d) => (stdout += d));
    p.stderr.on("data", (d) => (stderr += d));
    p.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

describe("a person in the loop through baton serve", () => {
  it("baton ask parks with the question; send --wait says so at once (exit 5); baton answer runs it again and ask prints the choice", async () => {
    const agent = uniqueAgent("ask");
    const { dir, command, env } = shellAgent([
      `choice=$(baton ask "Ship v2 to production?" --choices ship,hold)`,
      `echo "decided $choice: $BATON_RESUME_CHOICE / $BATON_RESUME_INPUT"`,
    ].join("\n"));
    const a = startServe({ url: fx.dev.url, agent, tag: "a", command, sink: join(dir, "sink"), env });
    fx.started.push(a);
    await a.waitFor(/holder/);
    const t0 = performance.now();
    const waited = await sendWait(agent, "release v2");
    expect(waited.code).toBe(5);
    expect(performance.now() - t0).toBeLessThan(15_000);
    expect(waited.stderr).toContain("waiting for a person: Ship v2 to production?");
    const id = Number(/message (\d+) parked/.exec(waited.stderr)?.[1]);
    expect(waited.stderr).toContain(`baton answer ${agent} ${id} ship [TEXT]`);
    expect(waited.stderr).toContain(`baton reject ${agent} ${id} [REASON]`);
    const answered = runBaton(["answer", agent, String(id), "ship", "after the standup"], { BATON_URL: fx.dev.url });
    expect(answered.code).toBe(0);
    const done = await waitForMessage(fx.dev.url, agent, id, (m) => m.status === "acknowledged", 20_000);
    expect(done.reply?.trim()).toBe("decided ship: ship / after the standup");
    const shown = runBaton(["show", agent, String(id)], { BATON_URL: fx.dev.url });
    expect(shown.stdout).toMatch(/answered\s+\S+ ship "after the standup" by the unnamed token \(dev, cli\)/);
    expect(runBaton(["answer", agent, String(id), "hold"], { BATON_URL: fx.dev.url }).code).toBe(1);
  });

  it("a script that goes on after baton ask without || exit still waits for each answer, first question first, and gets each answer back", async () => {
    const agent = uniqueAgent("noexit");
    const { dir, command, env } = shellAgent([
      "set +e",
      `first=$(baton ask "First: staging?" --choices yes,no)`,
      `second=$(baton ask "Second: PRODUCTION?" --choices ship,hold)`,
      `echo "first=$first second=$second"`,
    ].join("\n"));
    const a = startServe({ url: fx.dev.url, agent, tag: "a", command, sink: join(dir, "sink"), env });
    fx.started.push(a);
    await a.waitFor(/holder/);
    const id = await postMessage(fx.dev.url, agent, "two gates");
    const asked = (m: unknown) => (m as { question?: { text?: string } | null }).question?.text;
    const one = await waitForMessage(fx.dev.url, agent, id, (m) => m.status === "parked", 20_000);
    expect(asked(one)).toBe("First: staging?");
    expect(runBaton(["answer", agent, String(id), "yes"], { BATON_URL: fx.dev.url }).code).toBe(0);
    const two = await waitForMessage(fx.dev.url, agent, id, (m) => m.status === "parked" && asked(m) === "Second: PRODUCTION?", 20_000);
    expect(two.attempts).toBe(2);
    expect(runBaton(["answer", agent, String(id), "ship"], { BATON_URL: fx.dev.url }).code).toBe(0);
    const done = await waitForMessage(fx.dev.url, agent, id, (m) => m.status === "acknowledged", 20_000);
    expect(done.reply?.trim()).toBe("first=yes second=ship");
  });

  it("baton ask never prints a run's own record as the answer: baton step under ask: is refused, and an ask under a name a step holds fails the run", async () => {
    const agent = uniqueAgent("askforge");
    expect((await fetch(`${fx.dev.url}/agents/${agent}/policy`, {
      method: "PUT", headers: { Authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" }, body: JSON.stringify({ max_attempts: 1 }),
    })).status).toBe(200);
    const { dir, command, env } = shellAgent([
      `baton step ask:1 -- echo apply 2>>"$WORK/refused.log" || echo refused >> "$WORK/refused.log"`,
      "baton step approval -- echo apply",
      `choice=$(baton ask "Apply?" --choices apply,hold --name approval) || exit $?`,
      `echo "shipped $choice"`,
    ].join("\n"));
    const a = startServe({ url: fx.dev.url, agent, tag: "a", command, sink: join(dir, "sink"), env });
    fx.started.push(a);
    await a.waitFor(/holder/);
    const id = await postMessage(fx.dev.url, agent, "deploy");
    const failed = await waitForMessage(fx.dev.url, agent, id, (m) => m.status === "failed", 20_000);
    expect(failed.reply).toBeNull();
    expect(errorOf(failed)).toMatch(/"approval" is recorded as a step, not as a person's answer/);
    const refused = await import("node:fs").then((fs) => fs.readFileSync(join(dir, "refused.log"), "utf8"));
    expect(refused).toMatch(/kept for a person's answers[\s\S]*refused/);
  });

  it("baton reject ends a parked message as rejected: it never runs again, and history shows the answer and who gave it", async () => {
    const agent = uniqueAgent("reject");
    const { dir, command, env } = shellAgent([`baton ask "Delete the old bucket?" >/dev/null`, `echo ran >> "$WORK/ran.log"`].join("\n"));
    const a = startServe({ url: fx.dev.url, agent, tag: "a", command, sink: join(dir, "sink"), env });
    fx.started.push(a);
    await a.waitFor(/holder/);
    const id = await postMessage(fx.dev.url, agent, "cleanup");
    await waitForMessage(fx.dev.url, agent, id, (m) => m.status === "parked", 20_000);
    const rejected = runBaton(["reject", agent, String(id), "not this week"], { BATON_URL: fx.dev.url });
    expect(rejected).toMatchObject({ code: 0, stdout: expect.stringContaining("rejected") });
    const m = await waitForMessage(fx.dev.url, agent, id, (v) => v.status === "rejected", 5_000);
    expect(m.attempts).toBe(1);
    expect(await import("node:fs").then((fs) => fs.existsSync(join(dir, "ran.log")))).toBe(false);
    const history = runBaton(["history", agent], { BATON_URL: fx.dev.url });
    expect(history.stdout).toMatch(/rejected/);
    expect(history.stdout).toContain(`answered reject "not this week"`);
  });
});

describe("every next step the CLI prints works as printed", () => {
  /** A served command that finds `baton` only through serve: PATH holds nothing but the system's own directories. */
  function bareAgent(body: string): { dir: string; command: string; env: Record<string, string> } {
    const dir = mkdtempSync(join(tmpdir(), "baton-bare-"));
    const command = join(dir, "agent.sh");
    writeFileSync(command, `#!/bin/sh\nset -e\n${body}\n`, { mode: 0o755 });
    return { dir, command, env: { PATH: "/usr/bin:/bin" } };
  }

  it("serve started as `node dist/cli/main.js` puts its own baton first on the command's PATH; --choices approve,reject is the plain question; the approve history prints runs it as the attempt approve names", async () => {
    const agent = uniqueAgent("bare");
    const { dir, command, env } = bareAgent([
      `choice=$(baton ask "Deploy v3?" --choices approve,reject) || exit $?`,
      `built=$(baton step build -- echo built)`,
      `echo "$choice $built attempt $BATON_ATTEMPT cli $BATON_CLI"`,
    ].join("\n"));
    const a = startServe({ url: fx.dev.url, agent, tag: "a", command, sink: join(dir, "sink"), env });
    fx.started.push(a);
    await a.waitFor(/holder/);
    const waited = await sendWait(agent, "release v3");
    expect(waited.code, waited.stderr).toBe(5);
    const id = Number(/message (\d+) parked/.exec(waited.stderr)?.[1]);
    expect(waited.stderr).toContain(`  baton approve ${agent} ${id} [TEXT]\n  baton reject ${agent} ${id} [REASON]`);
    await a.waitFor(new RegExp(`parked message ${id} \\(token \\d+\\): it waits for a person: \`baton show ${agent} ${id}\` says how to answer`));
    expect(runBaton(["show", agent, String(id)], { BATON_URL: fx.dev.url }).stdout).toContain(`asks: Deploy v3?`);
    const history = runBaton(["history", agent], { BATON_URL: fx.dev.url });
    const hint = /\(asks: Deploy v3\?; baton (approve)\|reject (\S+) (\d+)\)/.exec(history.stdout);
    expect(hint, history.stdout).not.toBeNull();
    const approved = runBaton([hint![1]!, hint![2]!, hint![3]!], { BATON_URL: fx.dev.url });
    expect(approved.code, approved.stderr).toBe(0);
    const attempt = /it runs again(?: now)? \(attempt (\d+)\)/.exec(approved.stdout)?.[1];
    expect(attempt, approved.stdout).toBeDefined();
    const done = await waitForMessage(fx.dev.url, agent, id, (m) => m.status === "acknowledged", 20_000);
    expect(done.reply?.trim()).toMatch(new RegExp(`^approve built attempt ${attempt} cli /\\S+/baton$`));
  });

  it("for a question with choices, history, show and send print baton answer with those choices, and each works as printed", async () => {
    const agent = uniqueAgent("choices");
    const { dir, command, env } = bareAgent([`choice=$(baton ask "Ship v2?" --choices ship,hold) || exit $?`, `echo "chose $choice"`].join("\n"));
    const a = startServe({ url: fx.dev.url, agent, tag: "a", command, sink: join(dir, "sink"), env });
    fx.started.push(a);
    await a.waitFor(/holder/);
    const first = await postMessage(fx.dev.url, agent, "one");
    const second = await postMessage(fx.dev.url, agent, "two");
    await waitForMessage(fx.dev.url, agent, second, (m) => m.status === "parked", 20_000);
    const history = runBaton(["history", agent], { BATON_URL: fx.dev.url });
    expect(history.stdout).not.toContain("approve");
    const hint = new RegExp(`baton answer ${agent} ${first} (ship\\|hold), or baton reject ${agent} ${first}`).exec(history.stdout);
    expect(hint, history.stdout).not.toBeNull();
    const answered = runBaton(["answer", agent, String(first), hint![1]!.split("|")[1]!], { BATON_URL: fx.dev.url });
    expect(answered.code, answered.stderr).toBe(0);
    const shown = runBaton(["show", agent, String(second)], { BATON_URL: fx.dev.url });
    const printed = /answer\s+(baton answer \S+ \d+ ship) \[TEXT\]/.exec(shown.stdout);
    expect(printed, shown.stdout).not.toBeNull();
    expect(runBaton(printed![1]!.split(" ").slice(1), { BATON_URL: fx.dev.url }).code).toBe(0);
    expect((await waitForMessage(fx.dev.url, agent, first, (m) => m.status === "acknowledged", 20_000)).reply?.trim()).toBe("chose hold");
    expect((await waitForMessage(fx.dev.url, agent, second, (m) => m.status === "acknowledged", 20_000)).reply?.trim()).toBe("chose ship");
  });
});

describe("baton hook claude-code", () => {
  const BY_CLI = "dev (token default, with the CLI)";

  it("PreToolUse: the question names the tool, its input, the directory and the machine; baton approve allows, naming who approved", async () => {
    const agent = uniqueAgent("hook");
    const hook = startHook(fx.dev.url, freshCall(PRE_TOOL_USE, "allow"), ["--agent", agent, "--machine", "ana-laptop"]);
    const id = await hook.asked;
    const asked = await getJson<{ status: string; for_person: boolean; question: { text: string } }>(`${fx.dev.url}/agents/${agent}/messages/${id}`);
    expect(asked).toMatchObject({ status: "parked", for_person: true });
    expect(asked.question.text).toMatch(/^Claude Code wants to use Bash on ana-laptop in \/home\/ana\/shop:\n\{"command":"npm publish","description":"Publish the package","run_in_background":false,"timeout":120000\}\n\(sha256 [0-9a-f]{16}\)$/);
    expect(runBaton(["approve", agent, String(id), "ship it"], { BATON_URL: fx.dev.url }).code).toBe(0);
    const out = await hook.done;
    expect(out.code).toBe(0);
    const said = `baton: approved by ${BY_CLI}: ship it`;
    expect(JSON.parse(out.stdout)).toEqual({ systemMessage: said, hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "allow", permissionDecisionReason: said } });
  });

  it("PermissionRequest: baton reject denies with who rejected as the message Claude reads", async () => {
    const agent = uniqueAgent("hook");
    const hook = startHook(fx.dev.url, freshCall(PERMISSION_REQUEST, "deny"), ["--agent", agent]);
    const id = await hook.asked;
    expect(runBaton(["reject", agent, String(id), "not on a Friday"], { BATON_URL: fx.dev.url }).code).toBe(0);
    const out = await hook.done;
    const said = `baton: rejected by ${BY_CLI}: not on a Friday`;
    expect(out.code).toBe(0);
    expect(JSON.parse(out.stdout)).toEqual({ systemMessage: said, hookSpecificOutput: { hookEventName: "PermissionRequest", decision: { behavior: "deny", message: said } } });
  });

  it("the same tool call id twice asks one question, and both runs print the one answer", async () => {
    const agent = uniqueAgent("hook");
    const call = freshCall(PRE_TOOL_USE, "twice");
    const first = startHook(fx.dev.url, call, ["--agent", agent]);
    const id = await first.asked;
    const second = startHook(fx.dev.url, call, ["--agent", agent]);
    expect(await second.asked).toBe(id);
    const page = await getJson<{ messages: { id: number }[] }>(`${fx.dev.url}/agents/${agent}/messages`);
    expect(page.messages.map((m) => m.id)).toEqual([id]);
    expect(runBaton(["approve", agent, String(id)], { BATON_URL: fx.dev.url }).code).toBe(0);
    const [a, b] = await Promise.all([first.done, second.done]);
    expect(JSON.parse(a.stdout).hookSpecificOutput.permissionDecision).toBe("allow");
    expect(b.stdout).toBe(a.stdout);
  });

  it("nobody answers by the deadline: the question fails and the hook says ask (PreToolUse) or decides nothing (PermissionRequest), never allow", async () => {
    const agent = uniqueAgent("hook");
    const pre = startHook(fx.dev.url, freshCall(PRE_TOOL_USE, "late"), ["--agent", agent, "--deadline", "1"]);
    const perm = startHook(fx.dev.url, freshCall(PERMISSION_REQUEST, "late"), ["--agent", agent, "--deadline", "1"]);
    const [preId, permId] = [await pre.asked, await perm.asked];
    const [p, q] = [await pre.done, await perm.done];
    const said = `baton: message ${preId} has no answer: its deadline passed with no answer; asking here`;
    expect(JSON.parse(p.stdout)).toEqual({ systemMessage: said, hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "ask", permissionDecisionReason: said } });
    expect(JSON.parse(q.stdout)).toEqual({ systemMessage: `baton: message ${permId} has no answer: its deadline passed with no answer; asking here` });
    expect((await waitForMessage(fx.dev.url, agent, preId, () => true)).status).toBe("failed");
    // A late answer is refused: the prompt was already handed back to Claude Code.
    expect(runBaton(["approve", agent, String(preId)], { BATON_URL: fx.dev.url }).code).toBe(1);
  });

  it("input it cannot read blocks (exit 2) without asking; a readable event with a bad field, an unreachable coordinator or a refused token asks here", async () => {
    const agent = uniqueAgent("hook");
    const garbage = await startHook(fx.dev.url, "{\"hook_event_name\": ", ["--agent", agent]).done;
    expect(garbage).toMatchObject({ code: 2, stdout: "" });
    expect(garbage.stderr).toMatch(/^baton hook: the hook input is not JSON .*; blocking the tool call\n$/);
    const { tool_name: _, ...nameless } = freshCall(PRE_TOOL_USE, "bad");
    const bad = await startHook(fx.dev.url, nameless, ["--agent", agent]).done;
    expect(bad.code).toBe(0);
    expect(JSON.parse(bad.stdout).hookSpecificOutput).toMatchObject({ permissionDecision: "ask", permissionDecisionReason: expect.stringMatching(/not a PreToolUse or PermissionRequest input: .* at tool_name; asking here$/) });
    const away = await startHook("http://127.0.0.1:9", freshCall(PERMISSION_REQUEST, "away"), ["--agent", agent]).done;
    expect(away.code).toBe(0);
    expect(JSON.parse(away.stdout)).toEqual({ systemMessage: expect.stringMatching(/^baton: could not ask a person: cannot reach the coordinator at http:\/\/127\.0\.0\.1:9.*; asking here$/) });
    expect(away.stderr).toMatch(/Claude Code asks here/);
    const refused = await startHook(fx.dev.url, freshCall(PRE_TOOL_USE, "token"), ["--agent", agent, "--token", "wrong-token"]).done;
    expect(refused.code).toBe(0);
    expect(JSON.parse(refused.stdout).hookSpecificOutput).toMatchObject({ permissionDecision: "ask", permissionDecisionReason: expect.stringMatching(/refused the token.*; asking here$/) });
    const page = await getJson<{ messages: unknown[] }>(`${fx.dev.url}/agents/${agent}/messages`);
    expect(page.messages).toEqual([]);
  });
});
