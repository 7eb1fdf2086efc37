// JSON over HTTP to the coordinator, with the bearer token; errors become named CLIErrors.
import { CLIError } from "./errors.ts";
import type { Connection } from "./config.ts";

export async function api<T>(conn: Connection, method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
  let res: Response;
  try {
    res = await fetch(`${conn.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${conn.token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    throw new CLIError(`cannot reach the coordinator at ${conn.url}: ${(err as Error).message}`);
  }
  const text = await res.text();
  let parsed: unknown = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    throw new CLIError(`${method} ${path}: ${res.status} with a body that is not JSON`);
  }
  if (res.status === 401) throw new CLIError(`unauthorized at ${conn.url}: check BATON_TOKEN or run \`baton login\``);
  return { status: res.status, body: parsed as T };
}

/** Like api(), but any status outside 2xx is a CLIError carrying the server's message. */
export async function apiOk<T>(conn: Connection, method: string, path: string, body?: unknown): Promise<T> {
  const res = await api<T & { error?: string; message?: string }>(conn, method, path, body);
  if (res.status < 200 || res.status > 299) {
    throw new CLIError(`${res.body?.error ?? res.status}: ${res.body?.message ?? "request failed"}`);
  }
  return res.body;
}
