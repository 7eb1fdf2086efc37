// A web page on another origin cannot use the coordinator: its socket upgrades (observe, serve)
// and its HTTP requests are refused with 403 whatever the token, the public dev token included,
// unless BATON_ALLOWED_ORIGINS lists the origin (here https://ops.example, set in
// vitest.workers.config.ts). Pages on the coordinator's own origin (the dashboard) and clients
// that send no Origin (CLI, Node, Python) go on as before.
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { BATON_PROTOCOL, tokenProtocol } from "../../worker/wire/token-protocol.ts";
import { BASE, DEV_TOKEN, uniqueAgent } from "./helpers.ts";

const EVIL = "https://evil.example";

/** A coordinator on loopback, as `npm start` runs it: the dashboard's own origin. */
const LOCAL = "http://127.0.0.1:8787";

/** An upgrade as a browser sends it: the token in the subprotocol list, the page's origin in Origin. */
function browserUpgrade(path: string, origin: string | null, base = BASE, token = DEV_TOKEN): Promise<Response> {
  return SELF.fetch(`${base}${path}`, {
    headers: {
      Upgrade: "websocket",
      "Sec-WebSocket-Protocol": `${BATON_PROTOCOL}, ${tokenProtocol(token)}`,
      ...(origin === null ? {} : { Origin: origin }),
    },
  });
}

function closeAccepted(res: Response): void {
  res.webSocket!.accept();
  res.webSocket!.close(1000, "test done");
}

describe("requests from web pages on other origins", () => {
  it("a foreign page's observe and serve upgrades with the dev token are refused with 403 and a clear reason", async () => {
    for (const path of ["/observe", `/agents/${uniqueAgent()}/serve?machine=page`]) {
      const res = await browserUpgrade(path, EVIL);
      expect(res.status, path).toBe(403);
      expect(res.webSocket).toBeNull();
      const body = await res.json<{ error: string; message: string }>();
      expect(body.error).toBe("forbidden");
      expect(body.message).toBe(`requests from web pages on ${EVIL} are refused: this coordinator answers browsers on its own origin (${BASE}) only; list other origins in BATON_ALLOWED_ORIGINS`);
    }
    // `null` is what sandboxed frames and file: pages send: foreign too.
    expect((await browserUpgrade("/observe", "null")).status).toBe(403);
  });

  it("a foreign page's HTTP request with the dev token is refused, and changes nothing", async () => {
    const agent = uniqueAgent();
    const post = await SELF.fetch(`${BASE}/agents/${agent}/messages`, {
      method: "POST", headers: { Authorization: `Bearer ${DEV_TOKEN}`, Origin: EVIL, "content-type": "application/json" }, body: JSON.stringify({ text: "deploy token=hunter2" }),
    });
    expect(post.status).toBe(403);
    expect((await SELF.fetch(`${BASE}/agents`, { headers: { Authorization: `Bearer ${DEV_TOKEN}`, Origin: EVIL } })).status).toBe(403);
    const page = await SELF.fetch(`${BASE}/agents/${agent}/messages`, { headers: { Authorization: `Bearer ${DEV_TOKEN}` } });
    expect(await page.json()).toMatchObject({ messages: [] });
  });

  it("the coordinator's own loopback origin (the dashboard), an allowed origin, and clients without Origin go on", async () => {
    for (const origin of [LOCAL, "https://ops.example", null]) {
      const res = await browserUpgrade("/observe", origin, LOCAL);
      expect(res.status, String(origin)).toBe(101);
      closeAccepted(res);
      const http = await SELF.fetch(`${LOCAL}/agents`, { headers: { Authorization: `Bearer ${DEV_TOKEN}`, ...(origin === null ? {} : { Origin: origin }) } });
      expect(http.status, String(origin)).toBe(200);
    }
    const serve = await browserUpgrade(`/agents/${uniqueAgent()}/serve?machine=dashboard`, LOCAL, LOCAL);
    expect(serve.status).toBe(101);
    closeAccepted(serve);
  });

  it("a page on a name rebound to the coordinator (its Origin and Host match) cannot use the public dev token; a real token still works there", async () => {
    const rebound = "http://rebind.attacker.example:8787";
    const upgrade = await browserUpgrade("/observe", rebound, rebound);
    expect(upgrade.status).toBe(403);
    expect((await upgrade.json<{ message: string }>()).message).toMatch(/public dev token is refused on requests addressed to "rebind\.attacker\.example"/);
    const post = await SELF.fetch(`${rebound}/agents/${uniqueAgent()}/messages`, {
      method: "POST", headers: { Authorization: `Bearer ${DEV_TOKEN}`, Origin: rebound, "content-type": "application/json" }, body: JSON.stringify({ text: "x" }),
    });
    expect(post.status).toBe(403);
    // A deployment's own page on its own name, with a token nobody else knows, is not a rebinding.
    const real = await browserUpgrade("/observe", BASE, BASE, "dev-reader-token");
    expect(real.status).toBe(101);
    closeAccepted(real);
  });

  it("a rebound page's same-origin GETs (no Origin) cannot read messages or /whoami with the dev token, by its URL or its Host header; nothing is shown", async () => {
    const agent = uniqueAgent();
    const secret = await SELF.fetch(`${BASE}/agents/${agent}/messages`, {
      method: "POST", headers: { Authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" }, body: JSON.stringify({ text: "deploy token=hunter2" }),
    });
    expect(secret.status).toBe(201);
    const rebound = "http://rebind.attacker.example:8787";
    const requests = [
      ...[`/agents/${agent}/messages`, "/whoami"].map((path) => new Request(`${rebound}${path}`, { headers: { Authorization: `Bearer ${DEV_TOKEN}` } })),
      // The same page through a server that keeps the browser's Host but answers on its own URL.
      new Request(`${BASE}/whoami`, { headers: { Authorization: `Bearer ${DEV_TOKEN}`, Host: "rebind.attacker.example:8787" } }),
      new Request(`${BASE}/agents/${agent}/messages`, { headers: { Authorization: `Bearer ${DEV_TOKEN}`, Host: "REBIND.attacker.example." } }),
    ];
    for (const request of requests) {
      const res = await SELF.fetch(request);
      const body = await res.text();
      expect(res.status, request.url).toBe(403);
      expect((JSON.parse(body) as { message: string }).message).toMatch(/the public dev token is refused on requests addressed to "rebind\.attacker\.example\.?": it signs requests to a loopback name only/);
      expect(body).not.toContain("hunter2");
    }
  });

  it("the dev token goes on at every loopback name and address; a real token goes on at any host", async () => {
    for (const base of ["http://localhost:8787", "http://127.0.0.1:8787", "http://127.8.9.10", "http://[::1]:8787", "http://localhost.", "http://LOCALHOST"]) {
      const res = await SELF.fetch(`${base}/whoami`, { headers: { Authorization: `Bearer ${DEV_TOKEN}` } });
      expect(res.status, base).toBe(200);
    }
    const hosted = await SELF.fetch(`${BASE}/whoami`, { headers: { Authorization: `Bearer ${DEV_TOKEN}`, Host: "127.0.0.1:8787" } });
    expect(hosted.status).toBe(200);
    for (const base of ["http://rebind.attacker.example:8787", "https://baton.example.com"]) {
      const res = await SELF.fetch(`${base}/whoami`, { headers: { Authorization: "Bearer dev-reader-token", Host: new URL(base).host } });
      expect(res.status, base).toBe(200);
    }
  });
});
