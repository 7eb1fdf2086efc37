// Where the CLI finds its coordinator and token: flags, then environment, then the config file
// written by `baton login`; a local URL falls back to the dev token that `wrangler dev` accepts.
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import type { Connection } from "../../client/http.ts";
import { CLIError, UsageError } from "./errors.ts";
import { DEFAULT_CONNECT_TIMEOUT_SECONDS, nodeRequest, nodeRequestWithin } from "./node-request.ts";

export const DEFAULT_URL = "http://127.0.0.1:8787";
export const DEV_TOKEN = "baton-dev-token";

export interface StoredConfig {
  url?: string;
  token?: string;
}

export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME || join(homedir(), ".config");
  return join(base, "baton", "config.json");
}

/** The file `baton login` writes; anything of another shape counts as nothing stored. */
export function readStoredConfig(env: NodeJS.ProcessEnv = process.env): StoredConfig {
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(configPath(env), "utf8"));
  } catch {
    return {};
  }
  if (typeof data !== "object" || data === null) return {};
  const { url, token } = data as Record<string, unknown>;
  return { ...(typeof url === "string" ? { url } : {}), ...(typeof token === "string" ? { token } : {}) };
}

/** Loopback only: `localhost`, `[::1]` or a dotted 127.x.y.z address (not a name that starts with "127."). */
export function isLocalUrl(url: string): boolean {
  const host = new URL(url).hostname;
  return host === "localhost" || host === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

function sameUrl(a: string, b: string): boolean {
  return a.replace(/\/+$/, "") === b.replace(/\/+$/, "");
}

export type { Connection } from "../../client/http.ts";

/** The coordinator URL without trailing slashes; anything but http(s) is a user mistake. */
export function checkedUrl(raw: string): string {
  const url = raw.replace(/\/+$/, "");
  let protocol: string;
  try {
    protocol = new URL(url).protocol;
  } catch {
    throw new UsageError(`not a URL: ${url}`);
  }
  if (protocol !== "http:" && protocol !== "https:") throw new UsageError(`not an http(s) URL: ${url}`);
  return url;
}

/** Resolves URL and token; never prints the token. */
export function resolveConnection(flags: { url?: string; token?: string }, env: NodeJS.ProcessEnv = process.env): Connection {
  const stored = readStoredConfig(env);
  const url = checkedUrl(flags.url || env.BATON_URL || stored.url || DEFAULT_URL);
  // A stored token goes only to the coordinator it was stored for; the dev token only to loopback.
  const storedToken = stored.token && (!stored.url || sameUrl(stored.url, url)) ? stored.token : "";
  const token = flags.token || env.BATON_TOKEN || storedToken || (isLocalUrl(url) ? DEV_TOKEN : "");
  if (!token) throw new CLIError(`no token for ${url}: run \`baton login\` or set BATON_TOKEN`);
  const connectSeconds = connectTimeoutSeconds(env);
  return { url, token, request: connectSeconds === DEFAULT_CONNECT_TIMEOUT_SECONDS ? nodeRequest : nodeRequestWithin(connectSeconds * 1000) };
}

/** BATON_CONNECT_TIMEOUT_SECONDS: how long a connection (TLS included) may take to come up, 0.1 to 300 s (default 10). */
export function connectTimeoutSeconds(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.BATON_CONNECT_TIMEOUT_SECONDS;
  if (raw === undefined || raw === "") return DEFAULT_CONNECT_TIMEOUT_SECONDS;
  const seconds = Number(raw);
  if (!Number.isFinite(seconds) || seconds < 0.1 || seconds > 300) {
    throw new UsageError(`BATON_CONNECT_TIMEOUT_SECONDS must be a number of seconds between 0.1 and 300, got ${JSON.stringify(raw)}`);
  }
  return seconds;
}
