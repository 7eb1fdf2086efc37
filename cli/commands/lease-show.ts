// `baton lease show SESSION`: a session lease's state: held or free, fence, expiry.
import { requestJson } from "../../client/http.ts";
import { leaseStateSchema } from "../../worker/wire/http-responses.ts";
import { defineCommand } from "../lib/command.ts";
import { resolveConnection } from "../lib/config.ts";
import { sessionName } from "../lib/names.ts";
import { routePath } from "../../worker/wire/routes.ts";

export default defineCommand({
  path: ["lease", "show"],
  summary: "Show a session lease: held or free, fence, expiry.",
  positionals: [{ name: "SESSION", description: "session key", required: true }],
  options: {},
  async run({ args, options }) {
    const session = sessionName(args[0]!);
    const state = await requestJson(resolveConnection(options), "GET", routePath("/leases/{session}", { session }), leaseStateSchema);
    if (options.json) {
      process.stdout.write(`${JSON.stringify(state)}\n`);
      return;
    }
    const line = state.held
      ? `${session}: held, fence ${state.fence} (token ${state.fence_token}), expires in ${((state.expires_in_ms ?? 0) / 1000).toFixed(1)} s`
      : `${session}: free, last fence ${state.fence}`;
    process.stdout.write(`${line}\n`);
  },
});
