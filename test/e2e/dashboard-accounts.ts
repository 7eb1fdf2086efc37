// The tokens of the e2e-browser project's one wrangler dev (dashboard-dev.global.ts): each
// dashboard file has an account of its own, named after the file, so that the cards, the "Needs a
// person" list and the counts it checks show its own agents only (a page shows its whole account).
// Every account has its default token (every scope), "bob" (answer only, a second person) and
// "wall" (read only). Every token is a fixed test string: a new dashboard file adds its account here.
import { createHash } from "node:crypto";
import { DEV_TOKEN } from "./wrangler-dev.ts";

export const DASHBOARD_ACCOUNTS = [
  "dashboard-lease", "dashboard-layout", "dashboard-connection",
  "dashboard-person-asks", "dashboard-person-answers", "dashboard-person-controls",
  "dashboard-wall", "dashboard-steps", "dashboard-output", "dashboard-stop", "dashboard-schedules",
] as const;
export type DashboardAccount = (typeof DASHBOARD_ACCOUNTS)[number];

/** The named tokens every dashboard account has beside its default one, with their scopes. */
const NAMED = { bob: "answer", wall: "read" } as const;

/** A dashboard account's default token (every scope), or its named one. */
export const dashboardToken = (account: DashboardAccount, name?: keyof typeof NAMED): string =>
  name === undefined ? `e2e-${account}-token` : `e2e-${account}-${name}-token`;

/** oauth.test.ts's person: a named token of account "dev" that signs in on baton's OAuth page. */
export const OAUTH_PERSON = { token: "e2e-person-token", name: "ana", scopes: "send+answer" } as const;

const sha256 = (token: string) => createHash("sha256").update(token).digest("hex");

/** BATON_TOKENS of the project's server: the dev token, oauth.test.ts's person and every dashboard account's tokens. */
export function dashboardTokenEntries(): string[] {
  return [
    `dev:${sha256(DEV_TOKEN)}`,
    `dev:${OAUTH_PERSON.name}:${OAUTH_PERSON.scopes}:${sha256(OAUTH_PERSON.token)}`,
    ...DASHBOARD_ACCOUNTS.flatMap((account) => [
      `${account}:${sha256(dashboardToken(account))}`,
      ...Object.entries(NAMED).map(([name, scopes]) => `${account}:${name}:${scopes}:${sha256(dashboardToken(account, name as keyof typeof NAMED))}`),
    ]),
  ];
}
