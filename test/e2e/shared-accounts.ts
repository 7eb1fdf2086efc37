// The tokens the shared wrangler dev knows (shared-dev.global.ts), beside the dev token: named
// tokens with fewer scopes in account "dev" for the files that test scopes, a token of another
// account, and an account of its own for each file that reads or configures a whole account (its
// agent directory, its account webhook, its metrics), so that no other file's agents show there.
// Every token is a fixed test string: a file that needs one more adds it here.
import { createHash } from "node:crypto";
import { DEV_TOKEN } from "./wrangler-dev.ts";

/** Named tokens of account "dev" (`dev:NAME:SCOPES:sha256`, as scripts/hash-token.mjs prints them). */
export const NAMED_TOKENS = {
  /** "wall", read only. */
  reader: { token: "e2e-reader-token", name: "wall", scopes: "read" },
  /** "ci-runner", serve only. */
  runner: { token: "e2e-runner-token", name: "ci-runner", scopes: "serve" },
  /** "mcp-sender", send only. */
  mcpSender: { token: "e2e-mcp-sender-token", name: "mcp-sender", scopes: "send" },
  /** "mcp-person", answer only. */
  mcpPerson: { token: "e2e-mcp-person-token", name: "mcp-person", scopes: "answer" },
  /** "lena", who signs a remote MCP host in with OAuth (mcp-oauth.test.ts). */
  hostOwner: { token: "e2e-host-owner-token", name: "lena", scopes: "read+send+answer" },
} as const;

/** A token (every scope) of account "alice", which holds nothing. */
export const ALICE_TOKEN = "tok-Zq81-secret-do-not-print";

/** The files with an account of their own on the shared server; the account is named after the file. */
export const FILE_ACCOUNTS = ["webhooks", "metrics", "who-directory"] as const;
export type FileAccount = (typeof FILE_ACCOUNTS)[number];

/** The token (every scope) of a file's own account. */
export const accountToken = (account: FileAccount): string => `e2e-account-${account}-token`;

const sha256 = (token: string) => createHash("sha256").update(token).digest("hex");

/** BATON_TOKENS of the shared server: the dev token, the named ones, alice's and each file's account. */
export function sharedTokenEntries(): string[] {
  return [
    `dev:${sha256(DEV_TOKEN)}`,
    ...Object.values(NAMED_TOKENS).map(({ token, name, scopes }) => `dev:${name}:${scopes}:${sha256(token)}`),
    `alice:${sha256(ALICE_TOKEN)}`,
    ...FILE_ACCOUNTS.map((account) => `${account}:${sha256(accountToken(account))}`),
  ];
}
