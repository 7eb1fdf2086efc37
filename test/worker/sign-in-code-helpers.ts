// What the workerd tests of sign-in codes share: calls with a token, a code made for a token, a
// sign-in page of a new client, a wrong code, the Worker with bindings changed, and the page's
// error and code field as a browser shows them.
import { createExecutionContext, env, SELF } from "cloudflare:test";
import { expect } from "vitest";
import type { Env } from "../../worker/env.ts";
import worker from "../../worker/index.ts";
import { CODE_LENGTH, formatSignInCode } from "../../worker/rules/sign-in-codes.ts";
import { signInCodeSchema } from "../../worker/wire/grants.ts";
import { openSignIn, registerClient, type FetchLike } from "../e2e/oauth-dance.ts";
import { BASE } from "./helpers.ts";

export const f: FetchLike = (url, init) => SELF.fetch(url, init);

/** The Worker with some bindings or vars changed, as a FetchLike. */
export function withEnv(changes: Partial<Env>): FetchLike {
  return (url, init) => worker.fetch(new Request(url, init), { ...(env as unknown as Env), ...changes }, createExecutionContext());
}

/** BATON_TOKENS with one entry (by its `account:name:` prefix) replaced, or removed when `entry` is null. */
export function tokensWith(prefix: string, entry: string | null): string {
  const configured = (env as unknown as Env).BATON_TOKENS!.split(",");
  return configured.flatMap((e) => (e.startsWith(prefix) ? (entry === null ? [] : [entry]) : [e])).join(",");
}

export async function as(token: string, method: string, path: string, via: FetchLike = f, base = BASE) {
  const res = await via(`${base}${path}`, { method, headers: { Authorization: `Bearer ${token}` } });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

export async function mintCode(token: string, base = BASE): Promise<string> {
  const made = await as(token, "POST", "/sign-in-codes", f, base);
  expect(made.status, JSON.stringify(made.body)).toBe(201);
  return signInCodeSchema.parse(made.body).code;
}

/** A sign-in page of a new client, opened as a browser opens it. */
export async function newPage(via: FetchLike = f, base = BASE) {
  return openSignIn(via, base, await registerClient(f, BASE), "read answer");
}

export const aWrongCode = () => formatSignInCode(crypto.getRandomValues(new Uint8Array(CODE_LENGTH)));

const unescapeHtml = (s: string) => s.replace(/&#(\d+);/g, (_, n: string) => String.fromCharCode(Number(n)));

/** The page's error as the person reads it, or null when it shows none. */
export function errorOf(html: string): string | null {
  const shown = /<p class="error" role="alert">([^<]*)<\/p>/.exec(html)?.[1];
  return shown === undefined ? null : unescapeHtml(shown);
}

/** What the page's code field holds as a browser reads it (its value attribute, unescaped). */
export function codeFieldOf(html: string): string | null {
  const field = /<input [^>]*name="code"[^>]*>/.exec(html)?.[0];
  if (field === undefined) return null;
  return unescapeHtml(/value="([^"]*)"/.exec(field)?.[1] ?? "");
}
