// docs/reference/routes.md from the route table in worker/scopes.ts (the one the Worker checks
// before routing). The table is module-private, so its rows are read from the source and each row
// is checked against requiredScope(), the function the Worker calls: a misread row fails here.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { requiredScope } from "../../worker/scopes.ts";
import { SCOPES, type Scope } from "../../worker/wire/token-scopes.ts";
import { generatedHeader, markdownTable } from "./markdown.ts";

export const ROUTES_PAGE = "docs/reference/routes.md";
const SOURCE = join(import.meta.dirname, "../../worker/scopes.ts");

interface Route {
  methods: string[];
  path: string;
  scope: Scope;
}

/** What each path is for; a path in the table without a line here fails the generator. */
const WHAT: Record<string, string> = {
  "/whoami": "`{account, token, scopes}`: the presented token's account, name and granted scopes",
  "/metrics": "the account's figures in the Prometheus text format ([metrics](metrics.md))",
  "/agents": "the account's directory (`?view=who` or `?view=summary` for less)",
  "/observe": "WebSocket: the directory and every presence change, live (the dashboard's feed)",
  "/webhook": "the account's webhook",
  "/webhook/test": "a signed `webhook.test` event to the account's webhook now",
  "/agents/{agent}/serve": "WebSocket: a serve connection; `?machine=LABEL` names it",
  "/agents/{agent}/presence": "holder, standbys, connections, fence, transitions, recent messages",
  "/agents/{agent}/messages": "`GET`: history (`?after=ID&limit=N`); `POST`: post a message (`Idempotency-Key` honoured)",
  "/agents/{agent}/policy": "the message policy: mode, max running, run timeout, max attempts, heartbeat timeout, on busy",
  "/agents/{agent}/pause": "stop handing out messages; the lease stays",
  "/agents/{agent}/unpause": "hand out messages again",
  "/agents/{agent}/drain": "a machine (`{\"machine\"}`, default the holder's) finishes its run and hands the lease on",
  "/agents/{agent}/undrain": "a drained machine (default: every machine) may hold and run again",
  "/agents/{agent}/webhook": "the agent's own webhook (replaces the account's for its events)",
  "/agents/{agent}/webhook/test": "a signed `webhook.test` event to the agent's webhook now",
  "/agents/{agent}/messages/{id}": "one message in full",
  "/agents/{agent}/messages/{id}/resume": "resume a parked message (`outcome`: `done` or `redo` for an unknown effect)",
  "/agents/{agent}/messages/{id}/approve": "a person approves a parked message",
  "/agents/{agent}/messages/{id}/reject": "a person rejects a parked message: it ends",
  "/agents/{agent}/messages/{id}/answer": "a person answers the question with one of its choices",
  "/agents/{agent}/messages/{id}/retry": "a failed message, queued again with fresh attempts",
  "/agents/{agent}/messages/{id}/cancel": "stop the message wherever it is (final)",
  "/agents/{agent}/messages/{id}/ask": "a served command's question (`baton ask`), proven by its token and run key",
  "/agents/{agent}/messages/{id}/heartbeat": "a running message is alive; its progress",
  "/agents/{agent}/messages/{id}/steps/{step}": "a running message's step journal, proven by its token and run key",
  "/agents/{agent}/messages/{id}/blobs": "upload a large value (R2) for the running message",
  "/agents/{agent}/messages/{id}/blobs/{blob}": "read a large value back",
  "/leases/{session}": "`GET`: the session lease's state; `DELETE`: release it",
  "/leases/{session}/acquire": "acquire the session lease for a run id",
  "/leases/{session}/renew": "renew it while unexpired",
  "/leases/{session}/release": "release it",
  "/leases/{session}/check": "is this fence still current?",
  "/leases/{session}/data": "`GET`: a value; `PUT`: write one, only as the holder with its fence",
  "/leases/{session}/data/list": "list values by prefix, a page at a time",
  "/leases/{session}/data/delete": "delete values by prefix, fenced like a write",
};

/** The rows of worker/scopes.ts's TABLE, each confirmed by requiredScope. */
export function routeTable(): Route[] {
  const source = readFileSync(SOURCE, "utf8");
  const body = source.slice(source.indexOf("const TABLE"), source.indexOf("];", source.indexOf("const TABLE")));
  const rows = [...body.matchAll(/^\s*\[\[([^\]]+)\], "([^"]+)", "(\w+)"\],/gm)].map((m) => ({
    methods: m[1]!.split(",").map((s) => s.trim().replace(/"/g, "")),
    path: m[2]!,
    scope: m[3]! as Scope,
  }));
  const written = (body.match(/^\s*\[\[/gm) ?? []).length;
  if (rows.length !== written || rows.length === 0) throw new Error(`scripts/docs/routes.ts: read ${rows.length} of ${written} rows of worker/scopes.ts's TABLE`);
  for (const row of rows) {
    const concrete = row.path.replace("{id}", "1").replace(/\{\w+\}/g, "x");
    for (const method of row.methods) {
      if (requiredScope(method, concrete) !== row.scope) throw new Error(`scripts/docs/routes.ts: misread ${method} ${row.path}`);
    }
  }
  return rows;
}

const SCOPE_MAY: Record<Scope, [string, string]> = {
  read: ["every read: presence, messages, policy, blobs, `/agents`, `/observe`, `/metrics`, a session lease's state, `/whoami`", "a dashboard on a wall"],
  send: ["post messages", "a bot or a CI job that asks an agent for work"],
  serve: ["the serve socket and what a served command does over HTTP (steps, heartbeats, blob uploads, `ask`); session-lease writes", "a runner machine"],
  answer: ["a person's answer to a parked message (approve, reject, a choice, resume), and cancel", "a person"],
  admin: ["policy, pause, drain, retry, webhooks, and every scope above", "the owner"],
};

export function routesPage(): string {
  const rows = routeTable();
  const undescribed = rows.filter((r) => !WHAT[r.path]).map((r) => r.path);
  if (undescribed.length) throw new Error(`scripts/docs/routes.ts: describe ${undescribed.join(", ")}`);
  return [
    generatedHeader("scripts/docs/routes.ts", "the route table in worker/scopes.ts"),
    "# Routes and scopes",
    "",
    "Every route needs `Authorization: Bearer <token>` (browsers' WebSockets pass it as the subprotocol",
    "`baton.token.<base64url>` next to `baton`) and a token with the route's scope; without it the answer",
    "is 403 `forbidden`, naming the token and the missing scope. A method and path not listed here is",
    "404 `not_found` for every token, before any scope is looked at. `GET /` (the dashboard) and",
    "`/favicon.ico` are static and need no token. `{id}` is a message id.",
    "",
    ...markdownTable(["method", "path", "scope", "what"], rows.map((r) => [r.methods.join(", "), `\`${r.path}\``, `\`${r.scope}\``, WHAT[r.path]!])),
    "",
    "## Scopes",
    "",
    "Each `BATON_TOKENS` entry names its token and its scopes: `account:name:scope+scope:sha256hex`;",
    "the older `account:sha256hex` is the token `default` with every scope. Every scope includes `read`;",
    "`admin` includes every scope. Why, and how to make an entry: [security](../security.md#token-names-and-scopes).",
    "",
    ...markdownTable(["scope", "may", "typical holder"], SCOPES.map((s) => [`\`${s}\``, ...SCOPE_MAY[s]])),
    "",
  ].join("\n");
}
