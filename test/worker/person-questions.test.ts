// A question for a person alone (what `baton mcp`'s ask posts): the message is parked with its
// question from the start, never handed to a runner, ends with the answer as its reply (who, how,
// when), and cannot be resumed or retried into a run.
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { auth, BASE, call, claimant, message, post, presence, uniqueAgent } from "./helpers.ts";
import { passTime } from "./clock.ts";

async function answerFrom(via: string, path: string, body: unknown) {
  const res = await SELF.fetch(`${BASE}${path}`, { method: "POST", headers: { ...auth, "x-baton-via": via }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe("questions for a person", () => {
  it("is parked with its question from the start, shown as waiting for a person, and never handed to a connected runner", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "Drop the staging database?", { question: { text: "Drop the staging database?", choices: ["drop", "keep"] } });
    expect(await message(agent, id)).toMatchObject({
      status: "parked", attempts: 0, for_person: true, question: { text: "Drop the staging database?", choices: ["drop", "keep"], on_deadline: "fail" },
    });
    expect((await presence(agent)).work.parked).toEqual([expect.objectContaining({ id, question: "Drop the staging database?", choices: ["drop", "keep"] })]);
    const ordinary = await post(agent, "after it");
    await a.sock.next("message", (f) => f.run && f.id === ordinary);
    expect(a.sock.frames.some((f) => f.type === "message" && f.id === id)).toBe(false);
  });

  it("25 open questions: presence counts all 25 and lists the newest 20, so a reader can say how many it does not list", async () => {
    const agent = uniqueAgent();
    const ids: number[] = [];
    for (let i = 0; i < 25; i++) ids.push(await post(agent, `q${i}`, { question: { text: `Question ${i}?` } }));
    const work = (await presence(agent)).work;
    expect(work.counts.parked).toBe(25);
    expect(work.parked.map((p) => p.id)).toEqual(ids.slice(5).reverse());
  });

  it("an answer ends it acknowledged with the answer as its reply, recorded with who gave it; a second answer is 409", async () => {
    const agent = uniqueAgent();
    const id = await post(agent, "q", { question: { text: "Ship it?", choices: ["ship", "hold"] } });
    const answered = await answerFrom("page", `/agents/${agent}/messages/${id}/answer`, { choice: "ship", text: "go" });
    expect(answered).toMatchObject({ status: 200, body: { status: "acknowledged", question: null, answers: [expect.objectContaining({ choice: "ship", via: "page" })] } });
    expect(JSON.parse(answered.body.reply as string)).toMatchObject({ choice: "ship", text: "go", by: { account: "dev", via: "page" } });
    expect(typeof answered.body.acked_at).toBe("number");
    expect((await answerFrom("cli", `/agents/${agent}/messages/${id}/answer`, { choice: "hold" })).status).toBe(409);
    expect((await presence(agent)).work.counts).toMatchObject({ acknowledged: 1, parked: 0, queued: 0, running: 0 });
  });

  it("reject ends it rejected; it cannot be resumed or retried into a run", async () => {
    const agent = uniqueAgent();
    const id = await post(agent, "q", { question: { text: "Delete it?" } });
    expect((await answerFrom("cli", `/agents/${agent}/messages/${id}/resume`, { input: "x" })).status).toBe(400);
    expect((await answerFrom("cli", `/agents/${agent}/messages/${id}/reject`, { text: "no" })).body).toMatchObject({ status: "rejected" });
    const failed = await post(agent, "q2", { question: { text: "Renew?" }, deadline_seconds: 1 });
    await passTime(agent, 1000);
    expect((await message(agent, failed)).status).toBe("failed");
    const retried = await answerFrom("cli", `/agents/${agent}/messages/${failed}/retry`, {});
    expect(retried.status).toBe(409);
    expect(retried.body.message).toMatch(/question for a person/);
  });

  it("a deadline that approves ends it acknowledged, answered by the deadline", async () => {
    const agent = uniqueAgent();
    const a = await claimant(agent, "a");
    const id = await post(agent, "q", { question: { text: "Renew?", on_deadline: "approve" }, deadline_seconds: 1 });
    await passTime(agent, 1000);
    expect((await message(agent, id)).status).toBe("acknowledged");
    const done = await message(agent, id);
    expect(JSON.parse(done.reply as string)).toMatchObject({ choice: "approve", by: { via: "deadline" } });
    expect(a.sock.frames.some((f) => f.type === "message" && f.id === id)).toBe(false);
  });

  it("bad combinations are refused and store nothing", async () => {
    const agent = uniqueAgent();
    for (const body of [
      { text: "q", deadline_seconds: 5 },
      { text: "q", question: { text: "x" }, group: "g" },
      { text: "q", question: { text: "x", step: "ask:1" } },
      { text: "q", question: { text: "x", choices: ["a", "reject"] } },
    ]) {
      expect((await call("POST", `/agents/${agent}/messages`, body)).status).toBe(400);
    }
    expect((await presence(agent)).work.counts).toMatchObject({ parked: 0, queued: 0 });
  });

  it("posting questions bounds the history as any post does (the newest 20 finished here)", async () => {
    const agent = uniqueAgent();
    for (let i = 0; i < 24; i++) {
      const id = await post(agent, `q${i}`, { question: { text: `Question ${i}?` } });
      expect((await answerFrom("cli", `/agents/${agent}/messages/${id}/reject`, {})).status).toBe(200);
    }
    await post(agent, "last", { question: { text: "Last?" } });
    const page = await call("GET", `/agents/${agent}/messages?after=0&limit=100`);
    expect((page.body.messages as unknown[]).length).toBeLessThanOrEqual(21);
  });
});

