// A runner whose `baton serve` got SIGTERM (hello `stopping`) in the real runtime: it is elected
// holder only when no other runner is there, and a holder that says it is stopping hands the lease
// on at its safe point (its runs finished), before it releases.
import { describe, expect, it } from "vitest";
import type { MessageFrame } from "../../worker/wire/protocol.ts";
import { outputSections as sections, runCopy as run } from "./output-sections.ts";
import { BASE, call, claimant, DEV_TOKEN, message, post, presence, sayStopping, settle, uniqueAgent, write, type TestSocket } from "./helpers.ts";
import { SELF } from "cloudflare:test";
import { passTime } from "./clock.ts";
import { retryBackoffMs } from "../../worker/rules/message-lease.ts";

describe("a stopping runner and the serve lease", () => {
  it("the holder leaves with a stopping standby of the older claim and a normal one: the normal one is elected, and runs the queued message", async () => {
    const agent = uniqueAgent();
    const holder = await claimant(agent, "holder");
    const leaving = await claimant(agent, "leaving");
    const staying = await claimant(agent, "staying");
    await sayStopping(leaving.sock);
    // Presence says it, to `baton who` and the dashboard alike.
    expect((await presence(agent)).connections.map((c) => [c.machine, c.stopping ?? false])).toEqual([["holder", false], ["leaving", true], ["staying", false]]);
    holder.sock.close();
    expect(await staying.sock.next("serve_lease", (f) => f.held)).toMatchObject({ fence: holder.lease.fence + 1 });
    const p = await presence(agent);
    expect(p.holder?.machine).toBe("staying");
    expect(p.transitions[0]).toMatchObject({ from_machine: "holder", to_machine: "staying", reason: "closed" });
    const id = await post(agent, "for the runner that stays");
    expect(await run(staying.sock, id)).toMatchObject({ attempt: 1 });
    await settle(leaving.sock);
    expect(leaving.sock.framesOf("message").filter((f) => f.run)).toEqual([]);
  });

  it("a stopping holder finishes its run, then hands the lease on at once (reason stopping); its release then finds nothing to give up", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const b = await claimant(agent, "b");
    const id = await post(agent, "running when the stop began");
    const first = await run(a.sock, id);
    await sayStopping(a.sock);
    // The safe point: a holder running a message keeps the lease.
    expect((await presence(agent)).holder?.machine).toBe("a");
    expect(await write(a.sock, { type: "ack", id, token: first.token })).toMatchObject({ op: "ack" });
    expect(await b.sock.next("serve_lease", (f) => f.held)).toMatchObject({ fence: a.lease.fence + 1 });
    const p = await presence(agent);
    expect(p.transitions[0]).toMatchObject({ from_machine: "a", to_machine: "b", reason: "stopping" });
    expect(p.connections.map((c) => [c.machine, c.held, c.stopping ?? false])).toEqual([["a", false, true], ["b", true, false]]);
    expect(await write(a.sock, { type: "serve_lease", op: "release" })).toMatchObject({ op: "release", released: false });
  });

  it("a stopping runner whose lease was handed on leaves the line with its release: when the new holder goes, the lease does not come back to it", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const b = await claimant(agent, "b");
    await sayStopping(a.sock);
    expect(await b.sock.next("serve_lease", (f) => f.held)).toMatchObject({ fence: a.lease.fence + 1 });
    expect(await write(a.sock, { type: "serve_lease", op: "release" })).toMatchObject({ op: "release", released: false });
    expect(await presence(agent)).toMatchObject({ holder: { machine: "b" }, serve_candidates: 1, serve_standbys: 0 });
    b.sock.close();
    await settle(a.sock);
    expect(await presence(agent)).toMatchObject({ holder: null, serve_candidates: 0, serve_standbys: 0 });
    expect(a.sock.framesOf("serve_lease").filter((f) => f.held)).toEqual([]);
  });

  it("a stopping holder with no other runner keeps the lease: it is the only one that can finish its work", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    await sayStopping(a.sock);
    expect(await presence(agent)).toMatchObject({ holder: { machine: "a" }, fence: a.lease.fence });
  });
});

describe("a message that crossed the runner's hello stopping", () => {
  /** A holder and a standby; the holder is handed `text` and only then says it is stopping: its hello was in flight. */
  async function crossed(agent: string, maxAttempts: number) {
    expect((await call("PUT", `/agents/${agent}/policy`, { max_attempts: maxAttempts })).status).toBe(200);
    const a = await claimant(agent, "a");
    const b = await claimant(agent, "b");
    const id = await post(agent, "handed out as the stop began");
    const handed = await run(a.sock, id);
    await sayStopping(a.sock);
    return { a, b, id, handed };
  }

  it("left unstarted, it costs an attempt: released by a stopping runner, a max_attempts 1 message fails without ever running", async () => {
    const agent = uniqueAgent();
    const { a, b, id } = await crossed(agent, 1);
    // What a serve that ignores the late message does: it releases, then goes.
    expect(await write(a.sock, { type: "serve_lease", op: "release" })).toMatchObject({ op: "release" });
    expect(await message(agent, id)).toMatchObject({ status: "failed", attempts: 1 });
    await settle(b.sock);
    expect(b.sock.framesOf("message").filter((f) => f.run)).toEqual([]);
  });

  it("declined, it goes back to the queue uncounted: the next holder runs it as attempt 2 (never attempt 1 twice), and with max_attempts 1 it completes", async () => {
    const agent = uniqueAgent();
    const { a, b, id, handed } = await crossed(agent, 1);
    expect(handed).toMatchObject({ attempt: 1 });
    expect(await write(a.sock, { type: "decline", id, token: handed.token })).toEqual(expect.objectContaining({ type: "result", op: "decline", id, token: handed.token }));
    // The stopping holder ran nothing, so the lease moved at once and the message went with it.
    const second = await run(b.sock, id);
    expect(second).toMatchObject({ attempt: 2 });
    expect(second.token).toBeGreaterThan(handed.token!);
    expect(await message(agent, id)).toMatchObject({ status: "running", attempts: 2, declined: 1 });
    // Its old token is spent: a second decline, or any write under it, is refused and changes nothing.
    expect(await write(a.sock, { type: "decline", id, token: handed.token })).toMatchObject({ type: "error", code: "stale_token" });
    expect(await message(agent, id)).toMatchObject({ status: "running", attempts: 2, declined: 1, token: second.token });
    expect(await write(b.sock, { type: "output", id, token: second.token, chunks: [{ stream: "stdout", text: "ran" }] })).toMatchObject({ type: "result" });
    expect(await write(b.sock, { type: "reply", id, token: second.token, key: `reply-${id}`, text: "done" })).toMatchObject({ type: "result" });
    expect(await message(agent, id)).toMatchObject({ status: "acknowledged", attempts: 2, declined: 1, reply: "done" });
    // Each hand-out has its own section of the output: the declined one ends as such, the next begins under its own number.
    expect(await sections(agent, id)).toEqual(["1@a", "1:declined", "2@b", "2:chunk", "2:replied"]);
  });

  it("declined k times by stopping runners in turn, it is never failed for attempts: with max_attempts 2 the next attempt's failure is its first counted try, and it runs again", async () => {
    const agent = uniqueAgent();
    const k = 3;
    const x = await crossed(agent, 2);
    let [holder, standby, handed] = [x.a, x.b, x.handed];
    for (let n = 1; n <= k; n++) {
      expect(await write(holder.sock, { type: "decline", id: x.id, token: handed.token })).toMatchObject({ type: "result", op: "decline" });
      handed = await run(standby.sock, x.id);
      expect(handed, `after decline ${n}`).toMatchObject({ attempt: n + 1 });
      expect(await message(agent, x.id), `after decline ${n}`).toMatchObject({ status: "running", attempts: n + 1, declined: n });
      holder = standby;
      if (n === k) break;
      // The next one to take over joins, and only then does the one running it say it is stopping.
      standby = await claimant(agent, `r${n + 2}`);
      await sayStopping(holder.sock);
    }
    // Attempt k + 1 fails: one try of two counted, so it is queued again after the first backoff, not failed.
    expect(await write(holder.sock, { type: "fail", id: x.id, token: handed.token, reason: "exit 1" })).toMatchObject({ op: "fail", status: "queued" });
    expect(await message(agent, x.id)).toMatchObject({ status: "queued", attempts: k + 1, declined: k, failures: 1 });
    await passTime(agent, retryBackoffMs(1) + 100);
    const last = await run(holder.sock, x.id);
    expect(last).toMatchObject({ attempt: k + 2 });
    expect(await write(holder.sock, { type: "reply", id: x.id, token: last.token, key: `reply-${x.id}`, text: "done" })).toMatchObject({ type: "result" });
    expect(await message(agent, x.id)).toMatchObject({ status: "acknowledged", attempts: k + 2, declined: k });
    expect(await sections(agent, x.id)).toEqual(["1@a", "1:declined", "2@b", "2:declined", "3@r3", "3:declined", "4@r4", "4:failed", "5@r4", "5:replied"]);
  });

  it("an attempt that left anything under its token (a step, a checkpoint, a heartbeat, output, a blob, a question) ran: its decline is refused and changes nothing", async () => {
    type Handed = Awaited<ReturnType<typeof crossed>>;
    const frame = async (x: Handed, f: Record<string, unknown>) => (await write(x.a.sock, { id: x.id, token: x.handed.token, ...f })).type === "result";
    const traces: [string, (x: Handed, agent: string) => Promise<boolean>][] = [
      ["step", (x) => frame(x, { type: "step", name: "draft", kind: "step", phase: "done", value: 1 })],
      ["checkpoint", (x) => frame(x, { type: "message_checkpoint", value: { page: 2 } })],
      ["heartbeat", (x) => frame(x, { type: "heartbeat" })],
      ["output", (x) => frame(x, { type: "output", chunks: [{ stream: "stdout", text: "working" }] })],
      ["blob", async ({ id, handed }, agent) => (await SELF.fetch(`${BASE}/agents/${agent}/messages/${id}/blobs`, {
        method: "PUT", body: new Uint8Array(8),
        headers: { authorization: `Bearer ${DEV_TOKEN}`, "x-baton-token": String(handed.token), "x-baton-run-key": handed.run_key!, "content-length": "8" },
      })).status === 201],
      ["question", async ({ id, handed }, agent) => (await call("POST", `/agents/${agent}/messages/${id}/ask`, { token: handed.token, run_key: handed.run_key, question: { text: "Which?" } })).status === 200],
    ];
    for (const [what, leave] of traces) {
      const agent = uniqueAgent();
      const x = await crossed(agent, 1);
      expect(await leave(x, agent), what).toBe(true);
      const refused = await write(x.a.sock, { type: "decline", id: x.id, token: x.handed.token });
      expect(refused, what).toMatchObject({ type: "error", code: "outcome_unknown" });
      expect(String(refused.message), what).toContain("fail it");
      expect(await message(agent, x.id), what).toMatchObject({ status: "running", attempts: 1, token: x.handed.token });
      // It can still end the attempt honestly: a fail costs the attempt (max_attempts 1: failed).
      expect(await write(x.a.sock, { type: "fail", id: x.id, token: x.handed.token, reason: "stopped" }), what).toMatchObject({ op: "fail", status: "failed" });
    }
  });

  it("a runner that did not say it is stopping cannot decline: refused, and the message runs on under its token", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "runs here");
    const handed = await run(a.sock, id);
    const refused = await write(a.sock, { type: "decline", id, token: handed.token });
    expect(refused).toMatchObject({ type: "error", code: "bad_request" });
    expect(String(refused.message)).toContain("stopping");
    expect(await message(agent, id)).toMatchObject({ status: "running", attempts: 1, token: handed.token });
  });
});
