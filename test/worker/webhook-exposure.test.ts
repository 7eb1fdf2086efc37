// Where a webhook may point and who sees how its deliveries went: URLs at loopback, private,
// link-local and metadata addresses, and URLs with a user name or password, are refused with a
// 400 that stores nothing (BATON_WEBHOOK_ALLOW_PRIVATE is "false" in these tests); a read-only
// token sees the delivery counts, not the receiver's host nor each attempt's status and error,
// which only a token that may configure webhooks (admin) sees in the agent's presence; the
// account's directory (GET /agents, dashboards) carries the counts alone.
import { runDurableObjectAlarm, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { BASE, claimant, DEV_TOKEN, presence, stubFor, uniqueAgent, write } from "./helpers.ts";

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const BUSY_URL = "http://receiver.test/status/503";
const READER = "dev-reader-token";

async function put(path: string, url: string) {
  const res = await SELF.fetch(`${BASE}${path}`, {
    method: "PUT", headers: { Authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" }, body: JSON.stringify({ url, secret: SECRET }),
  });
  return { status: res.status, body: await res.json<{ error?: string; message?: string }>() };
}

describe("webhook targets", () => {
  const refused: [string, RegExp][] = [
    ["http://127.0.0.1:8080/hook", /a loopback address \(127\.0\.0\.1\)/],
    ["http://2130706433/hook", /a loopback address \(127\.0\.0\.1\)/],
    ["http://0x7f.1/hook", /a loopback address/],
    ["http://0177.0.0.1/hook", /a loopback address \(127\.0\.0\.1\)/],
    ["http://localhost./hook", /a local or internal name/],
    ["http://localhost:3000/hook", /a local or internal name \(localhost\)/],
    ["http://[::1]/hook", /a loopback address \(\[::1\]\)/],
    ["http://[::ffff:127.0.0.1]/hook", /a loopback address/],
    ["http://169.254.169.254/latest/meta-data/", /a link-local address \(cloud metadata lives there\)/],
    ["http://metadata.google.internal/computeMetadata/v1/", /a local or internal name/],
    ["http://10.0.0.5/hook", /a private address/],
    ["http://192.168.1.10/hook", /a private address/],
    ["http://172.20.0.1/hook", /a private address/],
    ["http://[fd00:ec2::254]/hook", /a private address/],
    ["http://0.0.0.0:8787/hook", /a reserved address/],
    ["http://vm:19999/hook", /a single-label \(local\) name/],
    ["http://kubernetes/hook", /a single-label \(local\) name/],
    ["http://instance-data/latest/", /a single-label \(local\) name/],
    ["http://[::127.0.0.1]/hook", /a loopback address/],
    ["http://[::ffff:0:7f00:1]/hook", /a loopback address/],
    ["http://[2002:7f00:1::]/hook", /a loopback address/],
    ["http://[2002:a00:5::1]/hook", /a private address/],
    ["http://[fec0::1]/hook", /a site-local address/],
    ["http://[64:ff9b:1::7f00:1]/hook", /a loopback address/],
    ["http://[64:ff9b:1::808:808]/hook", /a local NAT64 address/],
    ["https://user:pw@hooks.example.com/x", /must not carry a user name or password/],
    // Spelled as a resolver reads them: any number of trailing dots, case, percent escapes, IDNA,
    // IPv4 forms hidden behind the dots.
    ["http://localhost../hook", /a local or internal name \(localhost\.\.\)/],
    ["http://LOCALHOST.../hook", /a local or internal name/],
    ["http://metadata.google.internal../computeMetadata/v1/", /a local or internal name/],
    ["http://vm../hook", /a single-label \(local\) name/],
    ["http://vm.:19999/hook", /a single-label \(local\) name/],
    ["http://127.0.0.1../hook", /a loopback address/],
    ["http://0x7f.1../hook", /a loopback address/],
    ["http://2130706433../hook", /a loopback address/],
    ["http://0251.0376.0251.0376../latest/", /a link-local address/],
    ["http://local%68ost../hook", /a local or internal name/],
    ["http://%6c%6f%63%61%6c%68%6f%73%74/hook", /a local or internal name/],
    ["http://ｌｏｃａｌｈｏｓｔ。/hook", /a local or internal name/],
    ["http://localhost.localdomain./hook", /a local or internal name/],
    ["http://[0:0:0:0:0:ffff:127.0.0.1]/hook", /a loopback address/],
    ["http://[::ffff:a9fe:a9fe]/latest/", /a link-local address/],
    ["http://..../hook", /an empty name/],
  ];
  it.each(refused)("PUT of %s is a 400 that names why, and stores nothing", async (url, why) => {
    const agent = uniqueAgent();
    const res = await put(`/agents/${agent}/webhook`, url);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: "bad_request", message: expect.stringMatching(why) });
    if (!url.includes("@")) expect(res.body.message).toContain("set BATON_WEBHOOK_ALLOW_PRIVATE=true to allow it");
    const get = await SELF.fetch(`${BASE}/agents/${agent}/webhook`, { headers: { Authorization: `Bearer ${DEV_TOKEN}` } });
    expect(get.status).toBe(404);
  });

  it("the account's webhook is held to the same rule; public addresses are taken", async () => {
    expect((await put("/webhook", "http://169.254.169.254/")).status).toBe(400);
    const agent = uniqueAgent();
    for (const url of ["https://hooks.example.com/baton", "http://93.184.215.14:8080/x", "http://[2606:4700::1]/x", "http://172.32.0.1/x"]) {
      expect((await put(`/agents/${agent}/webhook`, url)).status, url).toBe(200);
    }
  });
});

describe("who sees how deliveries went", () => {
  it("a read-only token sees counts; admin sees the host, status and error in presence; the directory carries counts alone", async () => {
    const agent = uniqueAgent();
    expect((await put(`/agents/${agent}/webhook`, BUSY_URL)).status).toBe(200);
    const { sock } = await claimant(agent, "m1");
    const posted = await SELF.fetch(`${BASE}/agents/${agent}/messages`, {
      method: "POST", headers: { Authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" }, body: JSON.stringify({ text: "approve?" }),
    });
    const { id } = await posted.json<{ id: number }>();
    const frame = await sock.next("message", (f) => f.run && f.id === id);
    expect(await write(sock, { type: "park", id, token: frame.token })).toMatchObject({ op: "park" });
    await runDurableObjectAlarm(stubFor(agent));
    await expect.poll(async () => (await presence(agent)).webhook!.failed_attempts).toBeGreaterThanOrEqual(1);
    expect((await presence(agent, DEV_TOKEN)).webhook).toMatchObject({ host: "receiver.test", last_status: 503, last_error: "the receiver answered 503" });
    const read = (await presence(agent, READER)).webhook!;
    expect(read).toMatchObject({ configured: "agent", host: null, last_status: null, last_error: null, pending: 1 });
    expect(read.failed_attempts).toBeGreaterThanOrEqual(1);
    await expect.poll(async () => {
      const list = await (await SELF.fetch(`${BASE}/agents`, { headers: { Authorization: `Bearer ${DEV_TOKEN}` } })).json<{ agents: { agent: string; webhook?: unknown }[] }>();
      return list.agents.find((a) => a.agent === agent)?.webhook;
    }).toMatchObject({ configured: "agent", host: null, last_status: null, last_error: null });
  });
});
