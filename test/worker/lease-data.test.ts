// Data under a session lease in the real runtime: only the holder with its fence writes, a former
// holder is refused after a takeover and changes nothing, values past the inline limit go to R2
// and back, lists page within their budgets, fenced deletes, scopes, and bad input.
import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { LIMITS } from "../../worker/wire/protocol.ts";
import { BASE, DEV_TOKEN, OTHER_TOKEN } from "./helpers.ts";
import { advanceClock } from "./clock.ts";

const READER = "dev-reader-token";
const RUNNER = "dev-runner-token";

interface Grant { run_id: string; fence: number }

async function acquire(session: string, ttl = 30): Promise<Grant> {
  const run_id = crypto.randomUUID();
  const res = await SELF.fetch(`${BASE}/leases/${session}/acquire`, {
    method: "POST", headers: { Authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ run_id, ttl_seconds: ttl }),
  });
  expect(res.status).toBe(201);
  return (await res.json()) as Grant;
}

async function put(session: string, key: string, value: Uint8Array | string, as: Grant, token = DEV_TOKEN, ifAbsent = false) {
  const body = typeof value === "string" ? new TextEncoder().encode(value) : value;
  const res = await SELF.fetch(`${BASE}/leases/${session}/data?key=${encodeURIComponent(key)}`, {
    method: "PUT", body,
    headers: {
      Authorization: `Bearer ${token}`, "x-baton-run-id": as.run_id, "x-baton-fence": String(as.fence), "content-length": String(body.byteLength),
      ...(ifAbsent ? { "x-baton-if-absent": "true" } : {}),
    },
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function get(session: string, key: string, token = DEV_TOKEN) {
  const res = await SELF.fetch(`${BASE}/leases/${session}/data?key=${encodeURIComponent(key)}`, { headers: { Authorization: `Bearer ${token}` } });
  return { status: res.status, fence: res.headers.get("x-baton-fence"), bytes: new Uint8Array(await res.arrayBuffer()) };
}

async function list(session: string, query: string) {
  const res = await SELF.fetch(`${BASE}/leases/${session}/data/list?${query}`, { headers: { Authorization: `Bearer ${DEV_TOKEN}` } });
  return { status: res.status, body: (await res.json()) as { entries: { key: string; bytes: number; value?: string }[]; next: string | null; usage: { keys: number; bytes: number } } };
}

async function del(session: string, prefix: string, as: Grant) {
  const res = await SELF.fetch(`${BASE}/leases/${session}/data/delete`, {
    method: "POST", headers: { Authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ run_id: as.run_id, fence: as.fence, prefix }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const text = (b: Uint8Array) => new TextDecoder().decode(b);
const session = () => `data-${crypto.randomUUID()}`;

describe("data under a session lease", () => {
  it("the holder writes and anyone with read reads it back with its fence", async () => {
    const s = session();
    const a = await acquire(s);
    expect(await put(s, "cp/1", "one", a)).toMatchObject({ status: 201, body: { key: "cp/1", bytes: 3, fence: a.fence, stored: "inline" } });
    const read = await get(s, "cp/1", READER);
    expect({ status: read.status, fence: read.fence, text: text(read.bytes) }).toEqual({ status: 200, fence: String(a.fence), text: "one" });
    expect((await get(s, "cp/2")).status).toBe(404);
  });

  it("A's lease expires, B takes over, A's write is refused with stale_fence and changes nothing", async () => {
    const s = session();
    const a = await acquire(s, 1);
    expect((await put(s, "cp/1", "from A", a)).status).toBe(201);
    await advanceClock(1000, { session: s });
    expect(await put(s, "cp/2", "A after expiry", a)).toMatchObject({ status: 409, body: { error: "lease_expired" } });
    const b = await acquire(s);
    // Above A's, not necessarily A's + 1: the shard's floor for keys it forgot (other files' sessions, in a shared isolate) may lift it.
    expect(b.fence).toBeGreaterThan(a.fence);
    expect((await put(s, "cp/2", "from B", b)).status).toBe(201);
    expect(await put(s, "cp/2", "late A", a)).toMatchObject({ status: 409, body: { error: "stale_fence" } });
    expect(await put(s, "cp/3", "late A", a)).toMatchObject({ status: 409, body: { error: "stale_fence" } });
    expect(await put(s, "cp/2", "a guess", { run_id: crypto.randomUUID(), fence: b.fence })).toMatchObject({ status: 409, body: { error: "not_holder" } });
    expect(await del(s, "", a)).toMatchObject({ status: 409, body: { error: "stale_fence" } });
    expect(text((await get(s, "cp/2")).bytes)).toBe("from B");
    expect((await get(s, "cp/3")).status).toBe(404);
    expect((await list(s, "prefix=cp/")).body.entries.map((e) => e.key)).toEqual(["cp/1", "cp/2"]);
  });

  it("a value past the inline limit goes to R2 and comes back whole; replacing it removes the old object", async () => {
    const s = session();
    const a = await acquire(s);
    const big = new Uint8Array(LIMITS.leaseDataInlineBytes + 10_000).map((_, i) => i % 251);
    expect(await put(s, "big", big, a)).toMatchObject({ status: 201, body: { stored: "r2", bytes: big.byteLength } });
    expect((await get(s, "big")).bytes).toEqual(big);
    const objects = async () => (await env.BLOBS!.list({ prefix: `lease-data/dev/${s}/` })).objects.length;
    expect(await objects()).toBe(1);
    expect(await put(s, "big", "small now", a)).toMatchObject({ status: 201, body: { stored: "inline" } });
    expect(await objects()).toBe(0);
    expect(text((await get(s, "big")).bytes)).toBe("small now");
  });

  it("a value kept in R2 whose object is gone reads as a 500, never as a 404 (no value); an empty inline value reads back empty", async () => {
    const s = session();
    const a = await acquire(s);
    expect((await put(s, "big", new Uint8Array(LIMITS.leaseDataInlineBytes + 1), a)).status).toBe(201);
    const [object] = (await env.BLOBS!.list({ prefix: `lease-data/dev/${s}/` })).objects;
    await env.BLOBS!.delete(object!.key);
    const lost = await SELF.fetch(`${BASE}/leases/${s}/data?key=big`, { headers: { Authorization: `Bearer ${DEV_TOKEN}` } });
    expect(lost.status).toBe(500);
    expect(await lost.json()).toMatchObject({ error: "internal", message: expect.stringMatching(/stored a value under big in R2, but its object cannot be read/) });
    expect((await put(s, "empty", "", a)).status).toBe(201);
    expect(await get(s, "empty")).toMatchObject({ status: 200, bytes: new Uint8Array(0) });
    expect((await get(s, "never")).status).toBe(404);
  });

  it("an if-absent write keeps the value a key already has, inline or in R2", async () => {
    const s = session();
    const a = await acquire(s);
    expect(await put(s, "w/1", "first", a, DEV_TOKEN, true)).toMatchObject({ status: 201, body: { stored: "inline" } });
    expect(await put(s, "w/1", "second", a, DEV_TOKEN, true)).toMatchObject({ status: 200, body: { stored: "kept" } });
    expect(await put(s, "w/1", new Uint8Array(LIMITS.leaseDataInlineBytes + 1), a, DEV_TOKEN, true)).toMatchObject({ status: 200, body: { stored: "kept" } });
    expect(text((await get(s, "w/1")).bytes)).toBe("first");
    expect((await env.BLOBS!.list({ prefix: `lease-data/dev/${s}/` })).objects).toHaveLength(0);
  });

  it("a stale writer's large value is refused before it reaches R2", async () => {
    const s = session();
    const a = await acquire(s, 1);
    await advanceClock(1000, { session: s });
    await acquire(s);
    const big = new Uint8Array(LIMITS.leaseDataInlineBytes + 1);
    expect(await put(s, "big", big, a)).toMatchObject({ status: 409, body: { error: "stale_fence" } });
    expect((await env.BLOBS!.list({ prefix: `lease-data/dev/${s}/` })).objects).toHaveLength(0);
  });

  it("lists by prefix in either order, paged by count, with inline values as base64", async () => {
    const s = session();
    const a = await acquire(s);
    for (const k of ["cp/a/1", "cp/a/2", "cp/a/3", "cp/b/1", "w/a/1"]) expect((await put(s, k, k.toUpperCase(), a)).status).toBe(201);
    const first = await list(s, "prefix=cp/a/&limit=2");
    expect(first.body.entries.map((e) => [e.key, atob(e.value!)])).toEqual([["cp/a/1", "CP/A/1"], ["cp/a/2", "CP/A/2"]]);
    expect(first.body.next).toBe("cp/a/2");
    expect((await list(s, "prefix=cp/a/&limit=2&after=cp/a/2")).body).toMatchObject({ entries: [{ key: "cp/a/3" }], next: null });
    expect((await list(s, "prefix=cp/&order=desc")).body.entries.map((e) => e.key)).toEqual(["cp/b/1", "cp/a/3", "cp/a/2", "cp/a/1"]);
    expect((await list(s, "prefix=cp/a/&order=desc&after=cp/a/2")).body.entries.map((e) => e.key)).toEqual(["cp/a/1"]);
  });

  it("a list page stops at its byte budget of inline values and never carries R2 values", async () => {
    const s = session();
    const a = await acquire(s);
    const chunk = new Uint8Array(LIMITS.leaseDataInlineBytes);
    const keys = Array.from({ length: 10 }, (_, i) => `k/${i}`);
    for (const k of keys) expect((await put(s, k, chunk, a)).status).toBe(201);
    const page = await list(s, "prefix=k/");
    expect(page.body.entries).toHaveLength(LIMITS.leaseDataPageBytes / LIMITS.leaseDataInlineBytes);
    expect(page.body.next).toBe(page.body.entries.at(-1)!.key);
    await put(s, "r/1", new Uint8Array(LIMITS.leaseDataInlineBytes + 1), a);
    expect((await list(s, "prefix=r/")).body.entries).toEqual([expect.objectContaining({ key: "r/1", bytes: LIMITS.leaseDataInlineBytes + 1 })]);
    expect((await list(s, "prefix=r/")).body.entries[0]!.value).toBeUndefined();
  });

  it("a fenced delete removes a prefix, R2 objects included, and nothing else", async () => {
    const s = session();
    const a = await acquire(s);
    await put(s, "t/1", "x", a);
    await put(s, "t/2", new Uint8Array(LIMITS.leaseDataInlineBytes + 1), a);
    await put(s, "u/1", "keep", a);
    expect(await del(s, "t/", a)).toMatchObject({ status: 200, body: { deleted: 2, more: false } });
    expect((await list(s, "prefix=")).body.entries.map((e) => e.key)).toEqual(["u/1"]);
    expect((await env.BLOBS!.list({ prefix: `lease-data/dev/${s}/` })).objects).toHaveLength(0);
  });

  it("the session's usage counts keys and bytes through new keys, replacements, R2, kept writes and deletes", async () => {
    const s = session();
    const a = await acquire(s);
    const usage = async () => (await list(s, "prefix=")).body.usage;
    expect(await usage()).toEqual({ keys: 0, bytes: 0 });
    await put(s, "a", "12345", a);
    await put(s, "b", "123", a);
    expect(await usage()).toEqual({ keys: 2, bytes: 8 });
    await put(s, "a", "1", a);
    await put(s, "b", "999", a, DEV_TOKEN, true);
    expect(await usage()).toEqual({ keys: 2, bytes: 4 });
    await put(s, "r2", new Uint8Array(LIMITS.leaseDataInlineBytes + 1), a);
    expect(await usage()).toEqual({ keys: 3, bytes: 4 + LIMITS.leaseDataInlineBytes + 1 });
    await del(s, "b", a);
    expect(await usage()).toEqual({ keys: 2, bytes: 1 + LIMITS.leaseDataInlineBytes + 1 });
    await del(s, "", a);
    expect(await usage()).toEqual({ keys: 0, bytes: 0 });
  });

  it("reading needs read, writing needs serve, and another account sees nothing", async () => {
    const s = session();
    const a = await acquire(s);
    expect(await put(s, "k", "v", a, READER)).toMatchObject({ status: 403, body: { error: "forbidden" } });
    expect((await put(s, "k", "v", a, RUNNER)).status).toBe(201);
    expect((await get(s, "k", READER)).status).toBe(200);
    expect((await get(s, "k", OTHER_TOKEN)).status).toBe(404);
  });

  it("bad keys, missing headers and bad list queries are 400 and change nothing", async () => {
    const s = session();
    const a = await acquire(s);
    expect((await put(s, "has space", "v", a)).status).toBe(400);
    expect((await put(s, "k".repeat(LIMITS.leaseDataKeyChars + 1), "v", a)).status).toBe(400);
    expect((await put(s, "k", "v", { run_id: "not-a-uuid", fence: 1 })).status).toBe(400);
    expect((await put(s, "k", "v", { ...a, fence: 0 })).status).toBe(400);
    expect((await list(s, "limit=0")).status).toBe(400);
    expect((await list(s, "order=sideways")).status).toBe(400);
    expect((await list(s, "prefix=")).body.entries).toEqual([]);
  });

  it("a fence header is a plain decimal number: the fence spelled with an exponent, in hex, with a decimal point, a leading zero or a plus sign is refused", async () => {
    const s = session();
    const first = await acquire(s);
    await SELF.fetch(`${BASE}/leases/${s}/release`, { method: "POST", headers: { Authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" }, body: JSON.stringify({ run_id: first.run_id }) });
    const grant = await acquire(s);
    // 2 in a fresh shard; more where the shard forgot other keys (its fence floor), so spelled from the grant.
    const n = grant.fence;
    expect(n).toBeGreaterThan(first.fence);
    for (const spelled of [`${n}e0`, `0x${n.toString(16)}`, `${n}.0`, `0${n}`, `+${n}`]) {
      const res = await SELF.fetch(`${BASE}/leases/${s}/data?key=k`, {
        method: "PUT", body: "v", headers: { Authorization: `Bearer ${DEV_TOKEN}`, "x-baton-run-id": grant.run_id, "x-baton-fence": spelled, "content-length": "1" },
      });
      expect(res.status, spelled).toBe(400);
    }
    expect((await put(s, "k", "v", grant)).status).toBe(201);
  });
});

