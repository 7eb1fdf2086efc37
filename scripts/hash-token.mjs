#!/usr/bin/env node
// Prints the BATON_TOKENS entry for a token, for `wrangler secret put BATON_TOKENS` or .dev.vars.
// The coordinator stores only this hash, never the token. With --name and --scopes the entry is
// `account:name:scope+scope:sha256hex`; without them it is `account:sha256hex` (named default,
// every scope).
//
//   node scripts/hash-token.mjs ACCOUNT --new                  a new random token (on stderr) and its entry
//   printf %s "$TOKEN" | node scripts/hash-token.mjs ACCOUNT   the entry of a token read from stdin (first line)
//   node scripts/hash-token.mjs ACCOUNT TOKEN                  same, but the token lands in shell history
//   ... --name ci-runner --scopes serve                        a named token with only the scopes it needs
import { createHash, randomBytes } from "node:crypto";

const ACCOUNT_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const TOKEN_SHAPE = /^\S{1,4096}$/;
// The same rules as worker/wire/token-scopes.ts; test/unit/auth-hash-token.test.ts parses what this prints.
const TOKEN_NAME = /^[A-Za-z0-9._-]{1,64}$/;
const SCOPES = ["read", "send", "serve", "answer", "admin"];
const USAGE = "usage: node scripts/hash-token.mjs ACCOUNT [TOKEN | --new] [--name NAME --scopes SCOPE+SCOPE]   (without a token, it is read from stdin)";

function fail(message) {
  process.stderr.write(`hash-token: ${message}\n`);
  process.exit(1);
}

/** Flags by exact spelling only, so a token that starts with '-' (base64url may) stays a token. */
function parseCommandLine(args) {
  const values = {};
  const positionals = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    const [flag, inline] = arg.startsWith("--") && arg.includes("=") ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)] : [arg, undefined];
    if (flag === "--name" || flag === "--scopes") {
      const value = inline ?? args[++i];
      if (value === undefined) fail(`${flag} needs a value\n${USAGE}`);
      values[flag.slice(2)] = value;
    } else if (arg === "--new") values.new = true;
    else if (arg === "--help" || arg === "-h") values.help = true;
    else positionals.push(arg);
  }
  return { values, positionals };
}

const { values, positionals } = parseCommandLine(process.argv.slice(2));
const [account, argToken, ...extra] = positionals;
if (!account || values.help || extra.length > 0 || (values.new && argToken !== undefined)) fail(USAGE);
if (!ACCOUNT_NAME.test(account)) fail(`account ${JSON.stringify(account)} must be 1-63 chars of a-z, 0-9, '_' or '-', starting with a letter or digit`);

let label = "";
if (values.name !== undefined || values.scopes !== undefined) {
  if (values.name === undefined || values.scopes === undefined) fail("--name and --scopes go together (without both, the entry has every scope)");
  if (!TOKEN_NAME.test(values.name)) fail(`token name ${JSON.stringify(values.name)} must be 1-64 chars of A-Z, a-z, 0-9, '.', '_' or '-'`);
  const scopes = values.scopes.split(/[+,]/);
  const unknown = scopes.filter((scope) => !SCOPES.includes(scope));
  if (unknown.length > 0) fail(`unknown scope ${JSON.stringify(unknown[0])}: scopes are ${SCOPES.join(", ")}, joined by '+'`);
  label = `${values.name}:${[...new Set(scopes)].join("+")}:`;
}

const generated = values.new === true;
let token = argToken;
if (generated) {
  token = randomBytes(32).toString("base64url");
} else if (token === undefined) {
  let text = "";
  for await (const chunk of process.stdin) text += chunk;
  token = text.split(/\r?\n/)[0].trim();
  if (token === "") fail("no token on stdin (pass --new to make one)");
}
if (!TOKEN_SHAPE.test(token)) fail("a token is 1-4096 characters without spaces or line breaks");

const entry = `${account}:${label}${createHash("sha256").update(token, "utf8").digest("hex")}`;
if (generated) process.stderr.write(`new token for account ${account} (give it to the user; it is not stored anywhere):\n${token}\n`);
process.stdout.write(`${entry}\n`);
