#!/usr/bin/env node
// Prints the BATON_TOKENS entry `account:sha256hex` for a token, for `wrangler secret put
// BATON_TOKENS` or .dev.vars. The coordinator stores only this hash, never the token.
//
//   node scripts/hash-token.mjs ACCOUNT --new                  a new random token (on stderr) and its entry
//   printf %s "$TOKEN" | node scripts/hash-token.mjs ACCOUNT   the entry of a token read from stdin (first line)
//   node scripts/hash-token.mjs ACCOUNT TOKEN                  same, but the token lands in shell history
import { createHash, randomBytes } from "node:crypto";

const ACCOUNT_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const TOKEN_SHAPE = /^\S{1,4096}$/;

function fail(message) {
  process.stderr.write(`hash-token: ${message}\n`);
  process.exit(1);
}

const [account, argToken] = process.argv.slice(2);
if (!account || account === "--help" || account === "-h") {
  fail("usage: node scripts/hash-token.mjs ACCOUNT [TOKEN | --new]   (without either, the token is read from stdin)");
}
if (!ACCOUNT_NAME.test(account)) fail(`account ${JSON.stringify(account)} must be 1-63 chars of a-z, 0-9, '_' or '-', starting with a letter or digit`);

const generated = argToken === "--new";
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

const entry = `${account}:${createHash("sha256").update(token, "utf8").digest("hex")}`;
if (generated) process.stderr.write(`new token for account ${account} (give it to the user; it is not stored anywhere):\n${token}\n`);
process.stdout.write(`${entry}\n`);
