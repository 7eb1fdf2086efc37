// Where the CLI finds its coordinator and token: flags, then environment, then the config file
// written by `baton login`; a local URL falls back to the dev token that `wrangler dev` accepts.
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { CLIError } from "./errors.ts";

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

export function readStoredConfig(env: NodeJS.ProcessEnv = process.env): StoredConfig {
  try {
    return JSON.parse(readFileSync(configPath(env), "utf8")) as StoredConfig;
  } catch {
    return {};
  }
}

export function isLocalUrl(url: string): boolean {
  const host = new URL(url).hostname;
  return host === "localhost" || host === "[::1]" || host === "::1" || host.startsWith("127.");
}

export interface Connection {
  url: string;
  token: string;
}

/** Resolves URL and token; never prints the token. */
export function resolveConnection(flags: { url?: string; token?: string }, env: NodeJS.ProcessEnv = process.env): Connection {
  const stored = readStoredConfig(env);
  const url = (flags.url || env.BATON_URL || stored.url || DEFAULT_URL).replace(/\/+$/, "");
  try {
    new URL(url);
  } catch {
    throw new CLIError(`not a URL: ${url}`);
  }
  const token = flags.token || env.BATON_TOKEN || stored.token || (isLocalUrl(url) ? DEV_TOKEN : "");
  if (!token) throw new CLIError(`no token for ${url}: run \`baton login\` or set BATON_TOKEN`);
  return { url, token };
}

export function wsUrl(httpUrl: string): string {
  return httpUrl.replace(/^http/, "ws");
}
