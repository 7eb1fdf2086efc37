// A question several people decide (rules/quorum.ts) in the real object: N approvals from distinct
// tokens, optionally named ones; any one reject decides unless reject_needs says otherwise; the
// deadline as for any question; every answer recorded; a runner's (serve) token answers nothing.
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { MessageFrame } from "../../worker/wire/protocol.ts";
import { BASE, call, claimant, message, post, uniqueAgent, write } from "./helpers.ts";
import { passTime } from "./clock.ts";

const PERSON = "dev-person-token"; // token "person", scope answer
const ADMIN = "dev-admin-token"; // token "admin"
const RUNNER = "dev-runner-token"; // token "runner", scope serve

async function answerAs(token: string, agent: string, id: number, kind: "approve" | "reject", text?: string) {
  const res = await SELF.fetch(`${BASE}/agents/${agent}/messages/${id}/${kind}`, {
    method: "POST", headers: { Authorization: `Bearer ${token}`, "content-type": "application/json", "x-baton-via": "cli" }, body: JSON.stringify({ text }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

describe("questions several people decide", () => {
  it("the same token approving twice counts once: still parked at 1 of 2; a second person's approval ends it", async () => {
    const agent = uniqueAgent();
    const id = await post(agent, "q", { question: { text: "Pay $500?", needs: 2 } });
    expect((await answerAs(PERSON, agent, id, "approve")).body).toMatchObject({ status: "parked", question: { quorum: { approvals: 1, needs: 2 } } });
    const again = await answerAs(PERSON, agent, id, "approve", "still yes");
    expect(again).toMatchObject({ status: 200, body: { status: "parked", question: { quorum: { approvals: 1, needs: 2, answered: [{ token: "person", text: "still yes" }] } } } });
    const done = await answerAs(ADMIN, agent, id, "approve");
    expect(done.body).toMatchObject({ status: "acknowledged", question: null });
    expect(JSON.parse(done.body.reply)).toMatchObject({ choice: "approve", by: { token: "admin" } });
    // The record keeps every answer: who, when, what.
    expect(done.body.answers.map((a: any) => [a.token, a.choice])).toEqual([["person", "approve"], ["person", "approve"], ["admin", "approve"]]);
  });

  it("named approvers only: a token not named is 403 and changes nothing; the view lists who has not answered", async () => {
    const agent = uniqueAgent();
    const id = await post(agent, "q", { question: { text: "Deploy?", needs: 2, approvers: ["person", "admin", "carol"] } });
    const refused = await call("POST", `/agents/${agent}/messages/${id}/approve`, {});
    expect(refused).toMatchObject({ status: 403, body: { error: "forbidden", message: expect.stringMatching(/not among this question's approvers/) } });
    await answerAs(PERSON, agent, id, "approve");
    expect(await message(agent, id)).toMatchObject({
      status: "parked", answers: [expect.objectContaining({ token: "person" })],
      question: { quorum: { approvals: 1, needs: 2, approvers: ["person", "admin", "carol"], waiting_for: ["admin", "carol"] } },
    });
  });

  it("any one reject decides, after an approval; with reject_needs 2 one reject waits", async () => {
    const agent = uniqueAgent();
    const id = await post(agent, "q", { question: { text: "Delete?", needs: 2 } });
    await answerAs(PERSON, agent, id, "approve");
    expect((await answerAs(ADMIN, agent, id, "reject")).body).toMatchObject({ status: "rejected" });
    const lenient = await post(agent, "q2", { question: { text: "Delete?", needs: 2, reject_needs: 2 } });
    expect((await answerAs(ADMIN, agent, lenient, "reject")).body).toMatchObject({ status: "parked", question: { quorum: { rejections: 1, reject_needs: 2 } } });
    expect((await answerAs(PERSON, agent, lenient, "reject")).body).toMatchObject({ status: "rejected" });
  });

  it("a deadline with 1 of 2 approvals does what on_deadline says; the partial approval stays in the record", async () => {
    const agent = uniqueAgent();
    const failing = await post(agent, "q", { question: { text: "Renew?", needs: 2 }, deadline_seconds: 5 });
    const approving = await post(agent, "q2", { question: { text: "Renew?", needs: 2, on_deadline: "approve" }, deadline_seconds: 5 });
    await answerAs(PERSON, agent, failing, "approve");
    await answerAs(PERSON, agent, approving, "approve");
    await passTime(agent, 5000);
    expect(await message(agent, failing)).toMatchObject({ status: "failed", answers: [expect.objectContaining({ token: "person", choice: "approve" })] });
    const approved = await message(agent, approving);
    expect(approved.status).toBe("acknowledged");
    expect(JSON.parse(approved.reply as string)).toMatchObject({ by: { via: "deadline" } });
  });

  it("a runner's (serve) token cannot answer, even when named an approver; nothing is counted", async () => {
    const agent = uniqueAgent();
    const id = await post(agent, "q", { question: { text: "Pay?", needs: 2, approvers: ["runner", "person"] } });
    expect((await answerAs(RUNNER, agent, id, "approve")).status).toBe(403);
    expect(await message(agent, id)).toMatchObject({ status: "parked", answers: [], question: { quorum: { approvals: 0, waiting_for: ["runner", "person"] } } });
  });

  it("a run's question needing two people: the run gets the approval only when both approved", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "charge");
    const run = await a.sock.next("message", (f) => f.run && f.id === id) as MessageFrame;
    expect(await write(a.sock, { type: "park", id, token: run.token, question: { text: "Charge $500?", needs: 2, step: "ask:charge" } })).toMatchObject({ op: "park" });
    await answerAs(PERSON, agent, id, "approve");
    expect((await message(agent, id)).status).toBe("parked");
    await answerAs(ADMIN, agent, id, "approve", "ok");
    const again = await a.sock.next("message", (f) => f.run && f.id === id && f.attempt === 2) as MessageFrame;
    expect(again).toMatchObject({ resume_choice: "approve", resume_input: "ok" });
  });

  it("bad quorums are refused and store nothing", async () => {
    const agent = uniqueAgent();
    for (const question of [
      { text: "x", needs: 0 },
      { text: "x", needs: 2, choices: ["a", "b"] },
      { text: "x", needs: 3, approvers: ["a", "b"] },
      { text: "x", approvers: ["a", "a"] },
      { text: "x", approvers: ["not a name"] },
    ]) {
      expect((await call("POST", `/agents/${agent}/messages`, { text: "q", question })).status).toBe(400);
    }
    expect((await call("GET", `/agents/${agent}/messages`)).body.messages).toEqual([]);
  });
});
