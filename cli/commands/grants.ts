// `baton grants list` and `baton grants revoke ID`: the OAuth grants people approved for remote
// hosts (MCP and A2A clients) on the sign-in page, each with its client, scopes, agents and the
// token that signed in, and their revocation: the grant's access and refresh tokens stop working
// at once. Both need an admin token.
import { requestJson } from "../../client/http.ts";
import { GRANT_ID, grantListSchema, grantRevokedSchema, type GrantView } from "../../worker/wire/grants.ts";
import { routePath } from "../../worker/wire/routes.ts";
import { defineCommand } from "../lib/command.ts";
import { resolveConnection } from "../lib/config.ts";
import { UsageError } from "../lib/errors.ts";
import { printable, writeText } from "../lib/printable.ts";

const iso = (t: number | null) => (t === null ? "never" : new Date(t).toISOString());

function describe(g: GrantView): string[] {
  return [
    `${g.id}  ${printable(g.client_name ?? g.client_id)}${g.client_name === null ? "" : ` (client ${printable(g.client_id)})`}`,
    `  scopes          ${g.scopes.join(" ")}`,
    `  agents          ${g.agents === null ? "every agent" : g.agents.join(", ")}`,
    `  signed in with  token ${printable(g.signed_in_with)}`,
    `  created         ${iso(g.created_at)}, ends ${iso(g.expires_at)} unless refreshed or revoked`,
  ];
}

export default defineCommand({
  path: ["grants", "list"],
  summary: "List the account's OAuth grants, newest first: the client a person approved, its scopes, the agents it is limited to, " +
    "the baton token that signed in, and when it was made. Client names are what the client registered: not verified.",
  positionals: [],
  options: {},
  async run({ options }) {
    const list = await requestJson(resolveConnection(options), "GET", routePath("/grants"), grantListSchema);
    if (options.json) {
      process.stdout.write(`${JSON.stringify(list)}\n`);
      return;
    }
    const lines = list.grants.length === 0 ? ["no OAuth grants: a remote host gets one when a person approves it on the sign-in page"] : list.grants.flatMap(describe);
    if (list.more) lines.push("(more grants than shown: revoke the ones you do not need)");
    writeText(`${lines.join("\n")}\n`);
  },
});

export const revokeCommand = defineCommand({
  path: ["grants", "revoke"],
  summary: "Revoke an OAuth grant: its access and refresh tokens stop working at once; the client must ask a person again.",
  positionals: [{ name: "ID", description: "the grant's id (`baton grants list`; it may begin with -)", required: true, dashed: GRANT_ID }],
  options: {},
  exitCodes: [{ code: 1, meaning: "the account has no such grant, or the coordinator refused or could not be reached" }],
  async run({ args, options }) {
    const id = args[0]!;
    if (!GRANT_ID.test(id)) throw new UsageError(`ID must be a grant id as \`baton grants list\` shows it, got ${JSON.stringify(id.slice(0, 80))}`);
    const answer = await requestJson(resolveConnection(options), "DELETE", routePath("/grants/{grant}", { grant: id }), grantRevokedSchema);
    process.stdout.write(options.json ? `${JSON.stringify(answer)}\n` : `revoked grant ${answer.revoked}: its tokens no longer work\n`);
  },
});
