// Calls to the session-lease HTTP API for the workerd tests (session-lease.test.ts,
// session-lease-shards.test.ts): acquire, renew, release and check by POST, the state by GET.
import { SELF } from "cloudflare:test";
import { expect } from "vitest";
import { BASE, DEV_TOKEN } from "./helpers.ts";

export type Op = "acquire" | "renew" | "release" | "check";

export function uniqueSession(): string {
  return `s-${crypto.randomUUID()}`;
}

export async function call(session: string, op: Op, body: unknown, token = DEV_TOKEN) {
  const res = await SELF.fetch(`${BASE}/leases/${session}/${op}`, {
    method: "POST",
    headers: { Authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

export async function state(session: string, token = DEV_TOKEN) {
  const res = await SELF.fetch(`${BASE}/leases/${session}`, { headers: { Authorization: `Bearer ${token}` } });
  expect(res.status).toBe(200);
  return (await res.json()) as Record<string, unknown>;
}
