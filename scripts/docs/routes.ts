// docs/reference/routes.md from the route table in worker/wire/routes.ts, the one the Worker
// matches, checks scopes against and dispatches from.
import { SCOPES, type Scope } from "../../worker/wire/token-scopes.ts";
import { ROUTES, routeParts, type RouteKey } from "../../worker/wire/routes.ts";
import { generatedHeader, markdownTable } from "./markdown.ts";

export const ROUTES_PAGE = "docs/reference/routes.md";

const SCOPE_MAY: Record<Scope, [string, string]> = {
  read: ["every read: presence, messages, policy, blobs, `/agents`, `/observe`, `/metrics`, a session lease's state, `/whoami`", "a dashboard on a wall"],
  send: ["post messages", "a bot or a CI job that asks an agent for work"],
  serve: ["the serve socket and what a served command does over HTTP (steps, heartbeats, blob uploads, `ask`); session-lease writes", "a runner machine"],
  answer: ["a person's answer to a parked message (approve, reject, a choice, resume), and cancel", "a person"],
  admin: ["policy, pause, drain, retry, webhooks, and every scope above", "the owner"],
};

export function routesPage(): string {
  const rows = (Object.keys(ROUTES) as RouteKey[]).map((key) => ({ ...routeParts(key), ...ROUTES[key] }));
  return [
    generatedHeader("scripts/docs/routes.ts", "the route table in worker/wire/routes.ts"),
    "# Routes and scopes",
    "",
    "Every route needs `Authorization: Bearer <token>` (browsers' WebSockets pass it as the subprotocol",
    "`baton.token.<base64url>` next to `baton`) and a token with the route's scope; without it the answer",
    "is 403 `forbidden`, naming the token and the missing scope. A method and path not listed here is",
    "404 `not_found` for every token, before any scope is looked at. `GET /` (the dashboard) and",
    "`/favicon.ico` are static and need no token. `{id}` is a message id.",
    "",
    ...markdownTable(["method", "path", "scope", "what"], rows.map((r) => [r.method, `\`${r.path}\``, `\`${r.scope}\``, r.what])),
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
