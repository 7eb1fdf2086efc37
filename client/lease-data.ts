// Data kept under a session lease, over HTTP (/leases/{session}/data): values written only by the
// lease's current holder with its fence, read by anyone with read. The coordinator keeps small
// values in the lease's shard and larger ones (up to 16 MiB) in R2; callers see bytes either way.
import { leaseDataDeletedSchema, leaseDataPageSchema, leaseDataPutAnswerSchema, type LeaseDataPutAnswer } from "../worker/wire/lease-data.ts";
import { errorBodySchema } from "../worker/wire/http-responses.ts";
import { CoordinatorError, UnreachableError } from "./errors.ts";
import { refusal, requestJson, send, type Connection } from "./http.ts";
import { routePath } from "../worker/wire/routes.ts";

/** Who writes: the lease's session, its run id and its fence, attached to every write. */
export interface LeaseWriter {
  readonly session: string;
  readonly runId: string;
  readonly fence: number;
}

export interface LeaseDataItem {
  key: string;
  bytes: number;
  /** The fence the value was written under. */
  fence: number;
  /** The value: carried by the list page when inline, else fetched by key. */
  value(): Promise<Uint8Array>;
}

async function answered(conn: Connection, res: Response): Promise<unknown> {
  const text = await res.text().catch(() => "");
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    data = undefined;
  }
  if (res.ok) return data;
  const body = errorBodySchema.safeParse(data);
  throw refusal(conn, res.status, body.success ? body.data : null);
}

/**
 * Stores `value` under `key` if `writer` holds its lease now; with `ifAbsent`, a value the key
 * already has is kept. A refusal throws CoordinatorError with code stale_fence, not_holder or
 * lease_expired, and nothing was stored.
 */
export async function putLeaseData(
  conn: Connection, writer: LeaseWriter, key: string, value: Uint8Array, options: { ifAbsent?: boolean } = {},
): Promise<LeaseDataPutAnswer> {
  const res = await send(conn, "PUT", `${routePath("/leases/{session}/data", { session: writer.session })}?key=${encodeURIComponent(key)}`, {
    body: value as Uint8Array<ArrayBuffer>,
    headers: {
      "content-type": "application/octet-stream",
      "x-baton-run-id": writer.runId,
      "x-baton-fence": String(writer.fence),
      ...(options.ifAbsent ? { "x-baton-if-absent": "true" } : {}),
    },
    timeoutMs: 120_000,
  });
  const parsed = leaseDataPutAnswerSchema.safeParse(await answered(conn, res));
  if (!parsed.success) throw new UnreachableError(`${conn.url} did not answer a lease data write as a coordinator would`, "not a baton answer");
  return parsed.data;
}

/** The value under `key`, or null when there is none. */
export async function getLeaseData(conn: Connection, session: string, key: string): Promise<Uint8Array | null> {
  const res = await send(conn, "GET", `${routePath("/leases/{session}/data", { session })}?key=${encodeURIComponent(key)}`, { timeoutMs: 120_000 });
  if (res.status === 404) {
    await res.body?.cancel();
    return null;
  }
  if (!res.ok) await answered(conn, res);
  return new Uint8Array(await res.arrayBuffer());
}

/** Every key under `prefix`, in key order (or reversed), page by page from `after` on. */
export async function* listLeaseData(
  conn: Connection, session: string, options: { prefix?: string; after?: string; order?: "asc" | "desc" } = {},
): AsyncGenerator<LeaseDataItem> {
  let after = options.after ?? null;
  for (;;) {
    const query = new URLSearchParams({ prefix: options.prefix ?? "", order: options.order ?? "asc" });
    if (after !== null) query.set("after", after);
    const page = await requestJson(conn, "GET", `${routePath("/leases/{session}/data/list", { session })}?${query}`, leaseDataPageSchema);
    for (const entry of page.entries) {
      const inline = entry.value;
      yield {
        key: entry.key, bytes: entry.bytes, fence: entry.fence,
        value: async () => {
          if (inline !== undefined) return Uint8Array.from(atob(inline), (c) => c.charCodeAt(0));
          const bytes = await getLeaseData(conn, session, entry.key);
          if (bytes === null) throw new CoordinatorError(`the value under ${entry.key} was deleted while it was listed`, 404, "not_found");
          return bytes;
        },
      };
    }
    if (page.next === null) return;
    after = page.next;
  }
}

/** Deletes every key under `prefix` ("" for all) if `writer` holds its lease now; returns how many. */
export async function deleteLeaseData(conn: Connection, writer: LeaseWriter, prefix: string): Promise<number> {
  let deleted = 0;
  for (;;) {
    const answer = await requestJson(conn, "POST", routePath("/leases/{session}/data/delete", { session: writer.session }), leaseDataDeletedSchema, {
      body: { run_id: writer.runId, fence: writer.fence, prefix },
    });
    deleted += answer.deleted;
    if (!answer.more) return deleted;
  }
}
