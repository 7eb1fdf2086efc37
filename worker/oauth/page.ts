// The sign-in page an OAuth client sends a person to: which client asks, where its tokens go, the
// scopes it asked for and the agents it may be limited to; the person pastes a baton token (or
// types a sign-in code `baton login --code` printed) and approves or denies. One HTML document with no external assets: its style carries a nonce that
// its Content-Security-Policy names, and the form may post only here and, after approval, be
// redirected only to the client's own redirect URI. Everything the client chose is escaped.
import type { ConsentDescription } from "@cloudflare/workers-oauth-provider";
import { SIGN_IN_CODE_LIMITS } from "../wire/grants.ts";
import { SCOPES, type Scope } from "../wire/token-scopes.ts";

const escape = (value: string) => value.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);

const SCOPE_MEANING: Record<Scope, string> = {
  read: "see agents, messages, output and leases",
  send: "post messages to agents",
  answer: "answer, approve, reject, resume and cancel messages, as a person",
  serve: "serve agents and hold session leases, as a machine",
  admin: "change policies, webhooks, schedules and grants: everything",
};

export interface SignInPage {
  details: ConsentDescription;
  handle: string;
  /** The authorization request's query string, so a refused attempt can show the page again. */
  query: string;
  ticked: readonly Scope[];
  agents: string;
  /** The sign-in code as last typed, to correct after an error; never a token. */
  code: string;
  error: string | null;
}

const STYLE = `body{font:15px/1.45 system-ui,sans-serif;max-width:34rem;margin:2rem auto;padding:0 1rem;color:#1d1d1f}
h1{font-size:1.3rem}label{display:block;margin:.35rem 0}.muted{color:#666;font-size:.9em}.warn{background:#fff4e5;padding:.5rem .75rem}
.error{background:#fde8e8;padding:.5rem .75rem}input[type=password],input[type=text]{width:100%;box-sizing:border-box;padding:.4rem;font:inherit}
button{font:inherit;padding:.4rem 1rem;margin-right:.5rem}`;

function body(page: SignInPage): string {
  const { details } = page;
  const name = escape(details.clientName);
  const scopes = SCOPES.map((scope) => {
    const checked = page.ticked.includes(scope) ? " checked" : "";
    return `<label><input type="checkbox" name="scope" value="${scope}"${checked}> <b>${scope}</b> <span class="muted">${SCOPE_MEANING[scope]}</span></label>`;
  }).join("\n");
  const asked = details.scope.length === 0 ? "no scopes by name" : details.scope.map(escape).join(" ");
  return `<h1>Allow ${name} to use baton?</h1>
<p>${details.clientDomain ? `Published by <b>${escape(details.clientDomain)}</b>.` : "This client registered itself: its name is not verified."}
Access will be sent to <b>${escape(details.redirectHost)}</b>.</p>
${details.redirectIsLoopback ? '<p class="warn">This sends access to a program on your own computer: continue only if you just started signing in from it.</p>' : ""}
${page.error === null ? "" : `<p class="error" role="alert">${escape(page.error)}</p>`}
<form method="post">
<input type="hidden" name="handle" value="${escape(page.handle)}">
<input type="hidden" name="query" value="${escape(page.query)}">
<label>Your baton token <input type="password" name="token" autocomplete="new-password"></label>
<label>or a sign-in code from <code>baton login --code</code> <input type="text" name="code" autocomplete="one-time-code" spellcheck="false" placeholder="XXXX-XXXX-XXXX" value="${escape(page.code)}"></label>
<p class="muted">Give one, not both (clear the token field if a password manager filled it). Either is used once to approve, never stored or given to the client; a code works once, for ${SIGN_IN_CODE_LIMITS.minutes} minutes. The grant gets only scopes the token has, and ends when the token is removed.</p>
<fieldset><legend>Scopes (the client asked for ${asked})</legend>
${scopes}
</fieldset>
<label>Only these agents (names separated by commas; blank: every agent)
<input type="text" name="agents" value="${escape(page.agents)}"></label>
<p><button name="decision" value="approve">Approve</button><button name="decision" value="deny" formnovalidate>Deny</button></p>
</form>
<p class="muted">Every grant is listed by <code>baton grants</code> and revoked by <code>baton grants revoke ID</code>.</p>`;
}

/** The page as a response, with the consent binding headers the provider gave (cookie, no framing, no caching). */
export function signInResponse(page: SignInPage, headers: Headers, status = 200): Response {
  const nonce = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(16))));
  const redirectOrigin = new URL(page.details.redirectUri).origin;
  const out = new Headers(headers);
  out.set("content-type", "text/html; charset=utf-8");
  out.set("content-security-policy",
    `default-src 'none'; style-src 'nonce-${nonce}'; base-uri 'none'; form-action 'self'${redirectOrigin === "null" ? "" : ` ${redirectOrigin}`}; frame-ancestors 'none'`);
  out.set("x-content-type-options", "nosniff");
  // Not no-referrer: under it a browser posts the form with `Origin: null`, which index.ts refuses as a foreign page.
  out.set("referrer-policy", "same-origin");
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>baton: allow ${escape(page.details.clientName)}</title><style nonce="${nonce}">${STYLE}</style></head><body>
${body(page)}
</body></html>`;
  return new Response(html, { status, headers: out });
}

/** A plain page for a request that cannot go back to the client (unknown client or redirect URI, expired page). */
export function problemResponse(message: string, status = 400): Response {
  return new Response(`baton could not sign you in: ${message}\n`, {
    status, headers: { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store", "x-content-type-options": "nosniff" },
  });
}
