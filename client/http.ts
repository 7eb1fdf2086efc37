// The one HTTP client: JSON to and from the coordinator with the bearer token. Answers are
// validated against the wire module's schemas; refusals and failures become CoordinatorError or
// UnreachableError with one set of messages, written for people rather than echoing the server.
import type * as z from "zod/mini";
import { errorBodySchema, type ErrorBody } from "../worker/wire/http-responses.ts";
import { CoordinatorError, UnreachableError } from "./errors.ts";

export interface Connection {
  /** Coordinator base URL, e.g. https://baton.example.workers.dev (no trailing slash needed). */
  url: string;
  token: string;
  /** A fetch implementation; defaults to the global one. */
  fetch?: typeof fetch;
  /**
   * How requestJson sends its small JSON requests; defaults to `fetch`. The CLI passes one on
   * node:http, since loading fetch's HTTP stack costs a one-shot command more than its request.
   */
  request?: PlainRequest;
  /**
   * The answers are the coordinator's own, made in the same Worker (the remote MCP endpoint's
   * calls through its pipeline): a 2xx body is taken as its route's schema says, not checked again,
   * and a call gets no timeout signal, since nothing in the Worker reads one (a timer per call, for nothing).
   */
  ownAnswers?: boolean;
}

/** One request whose answer is read whole as text; rejects as fetch does ("fetch failed", with the cause). */
export type PlainRequest = (
  url: string, init: { method: string; headers: Record<string, string>; body?: string; signal?: AbortSignal },
) => Promise<{ status: number; text: string; location?: string }>;

export interface RequestOptions {
  body?: unknown;
  headers?: Record<string, string>;
  /** Abort the request after this long (default 30 s). */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 30_000;

export function baseUrl(conn: Connection): string {
  return conn.url.replace(/\/+$/, "");
}

/**
 * Sends one request and returns the validated 2xx body. Throws CoordinatorError when the
 * coordinator refuses (any other status), UnreachableError when it cannot be asked or what
 * answered is not a coordinator. Never retries: callers decide.
 */
export async function requestJson<S extends z.ZodMiniType>(
  conn: Connection, method: string, path: string, schema: S, opts: RequestOptions = {},
): Promise<z.infer<S>> {
  const { status, text, location } = await exchange(conn, method, path, {
    headers: { ...(opts.body === undefined ? {} : { "content-type": "application/json" }), ...opts.headers },
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    timeoutMs: opts.timeoutMs,
  });
  let data: unknown = undefined;
  try {
    data = JSON.parse(text);
  } catch {
    // not JSON: judged below by the status
  }
  if (status >= 200 && status < 300) {
    if (conn.ownAnswers === true && data !== undefined) return data as z.infer<S>;
    const parsed = schema.safeParse(data);
    if (parsed.success) return parsed.data;
    const reason = `${method} ${path} answered ${status} with something that is not a baton answer`;
    throw new UnreachableError(`${baseUrl(conn)} does not look like a baton coordinator: ${reason}`, reason);
  }
  if (status >= 300 && status < 400 && location) {
    throw new CoordinatorError(`the coordinator at ${baseUrl(conn)} redirects to ${location} (HTTP ${status}): use that URL`, status, null);
  }
  const body = errorBodySchema.safeParse(data);
  throw refusal(conn, status, body.success ? body.data : null);
}

/** One request answered whole: through the connection's own `request` when it has one, else `send`. */
async function exchange(
  conn: Connection, method: string, path: string, opts: { headers: Record<string, string>; body?: string; timeoutMs?: number },
): Promise<{ status: number; text: string; location?: string }> {
  const request = conn.request;
  if (!request) {
    const res = await send(conn, method, path, opts);
    return { status: res.status, text: await res.text().catch(() => "") };
  }
  return withToken(conn, method, path, opts, (url, init) => request(url, { ...init, body: opts.body }));
}

/**
 * One request with the bearer token, answered with whatever status; UnreachableError when nothing
 * answered (with a hint when TLS met a plain-HTTP server). requestJson and the blob transfers use it.
 */
export function send(
  conn: Connection, method: string, path: string, opts: { headers?: Record<string, string>; body?: BodyInit; timeoutMs?: number } = {},
): Promise<Response> {
  return withToken(conn, method, path, opts, (url, init) => (conn.fetch ?? fetch)(url, { ...init, body: opts.body }));
}

/** Calls `transport` with the URL, the bearer token, the headers and the timeout; a failure to answer becomes UnreachableError. */
async function withToken<T>(
  conn: Connection, method: string, path: string, opts: { headers?: Record<string, string>; timeoutMs?: number },
  transport: (url: string, init: { method: string; headers: Record<string, string>; signal?: AbortSignal }) => Promise<T>,
): Promise<T> {
  const url = `${baseUrl(conn)}${path}`;
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  try {
    return await transport(url, {
      method,
      headers: { authorization: `Bearer ${conn.token}`, ...opts.headers },
      signal: conn.ownAnswers === true ? undefined : AbortSignal.timeout(Math.max(1, Math.round(timeoutMs))),
    });
  } catch (err) {
    throw unreachable(conn, url, err, timeoutMs);
  }
}

function unreachable(conn: Connection, url: string, err: unknown, timeoutMs: number): UnreachableError {
  const reason = failureReason(err, timeoutMs);
  // TLS to a plain-HTTP server (wrangler dev is one) never completes its handshake: say so.
  const tls = url.startsWith("https:") && /CONNECT_TIMEOUT|SSL|EPROTO|handshake|wrong version|before secure TLS/i.test(`${reason} ${String((err as { cause?: unknown })?.cause ?? "")}`);
  const hint = tls ? `; no TLS handshake: if the coordinator speaks plain HTTP (wrangler dev does), use ${baseUrl(conn).replace(/^https:/, "http:")}` : "";
  return new UnreachableError(`cannot reach the coordinator at ${baseUrl(conn)}: ${reason}${hint}`, reason);
}

/** A refusal in words for people; the code and status stay on the error for programs. */
export function refusal(conn: Connection, status: number, body: ErrorBody | null): CoordinatorError {
  const at = baseUrl(conn);
  if (body === null) {
    const what = status >= 500 ? "failed" : "refused the request";
    return new CoordinatorError(`the coordinator at ${at} ${what} (HTTP ${status}, not a baton answer: check the URL)`, status, null);
  }
  return new CoordinatorError(sentenceFor(at, status, body), status, body.error, body);
}

function sentenceFor(at: string, status: number, body: ErrorBody): string {
  switch (body.error) {
    case "unauthorized":
      return `the coordinator at ${at} refused the token (run \`baton login\`, or pass --token or BATON_TOKEN)`;
    case "bad_name":
      return `not a valid name: ${lowerFirst(body.message)}`;
    case "not_found":
      return `not found: ${lowerFirst(body.message)}`;
    case "too_large":
      return `too large: ${lowerFirst(body.message)}`;
    case "too_many_connections":
    case "rate_limited":
      return `the coordinator is busy: ${lowerFirst(body.message)}`;
    case "lease_held":
      return "the lease is held by another run";
    case "lease_lost":
      return "the lease is no longer held by this run";
    default:
      return status >= 500
        ? `the coordinator at ${at} failed (HTTP ${status}): ${lowerFirst(body.message)}`
        : `the coordinator refused the request: ${lowerFirst(body.message)}`;
  }
}

function lowerFirst(text: string): string {
  return text.charAt(0).toLowerCase() + text.slice(1);
}

/** Why a fetch failed, in a few words: "connection refused (ECONNREFUSED)", "no answer within 10 s". */
export function failureReason(err: unknown, timeoutMs?: number): string {
  if (err instanceof Error && (err.name === "TimeoutError" || err.name === "AbortError")) {
    return timeoutMs === undefined ? "no answer in time" : `no answer within ${Math.round(timeoutMs / 100) / 10} s`;
  }
  const cause = err instanceof Error ? (err as Error & { cause?: unknown }).cause : undefined;
  const code = typeof cause === "object" && cause !== null ? (cause as { code?: unknown }).code : undefined;
  const words: Record<string, string> = {
    ECONNREFUSED: "connection refused",
    ENOTFOUND: "host not found",
    EAI_AGAIN: "name lookup failed",
    ECONNRESET: "connection reset",
    ETIMEDOUT: "connection timed out",
    EHOSTUNREACH: "host unreachable",
    ENETUNREACH: "network unreachable",
    CERT_HAS_EXPIRED: "TLS certificate expired",
    UND_ERR_CONNECT_TIMEOUT: "no connection within 10 s",
    CONNECT_TIMEOUT: "no connection within 10 s",
    EPROTO: "the server did not answer in TLS",
    ERR_SSL_WRONG_VERSION_NUMBER: "the server did not answer in TLS",
    DEPTH_ZERO_SELF_SIGNED_CERT: "self-signed TLS certificate",
  };
  if (typeof code === "string") return words[code] ? `${words[code]} (${code})` : code;
  if (cause instanceof Error) return cause.message;
  return err instanceof Error ? err.message : String(err);
}

/** What a failed connection attempt was about: retry with a reason, or give up (bad token, bad name). */
export type ProbeResult = { fatal: false; reason: string } | { fatal: true; error: Error };

const UPGRADE_LOST = "the WebSocket upgrade failed although plain HTTP works (a proxy that drops WebSockets?)";

/**
 * Asks `path` over plain HTTP why a WebSocket could not be opened: a refusal that retrying
 * cannot fix (4xx other than 408 and 429: a bad token, a token without the scope, a bad name) is
 * fatal; anything else is a reason to retry. Probing the socket's own path is answered 426
 * `upgrade_required` when only the upgrade went missing.
 */
export async function probe<S extends z.ZodMiniType>(conn: Connection, path: string, schema: S): Promise<ProbeResult> {
  try {
    await requestJson(conn, "GET", path, schema);
    return { fatal: false, reason: UPGRADE_LOST };
  } catch (err) {
    if (err instanceof UnreachableError) return { fatal: false, reason: err.reason };
    if (err instanceof CoordinatorError && err.code === "upgrade_required") return { fatal: false, reason: UPGRADE_LOST };
    if (err instanceof CoordinatorError && err.status >= 400 && err.status < 500 && err.status !== 408 && err.status !== 429) {
      return { fatal: true, error: err };
    }
    return { fatal: false, reason: err instanceof Error ? err.message : String(err) };
  }
}
