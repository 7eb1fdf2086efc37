// `baton agent show AGENT`: the agent's message policy and where it may run (pause, drained
// machines, restart grace), without changing anything.
import { requestJson } from "../../client/http.ts";
import { policyViewSchema, presenceSchema } from "../../worker/wire/http-responses.ts";
import { writeText } from "../lib/printable.ts";
import { defineCommand } from "../lib/command.ts";
import { resolveConnection } from "../lib/config.ts";
import { agentName } from "../lib/names.ts";
import { routePath } from "../../worker/wire/routes.ts";

export default defineCommand({
  path: ["agent", "show"],
  summary: "Show an agent's message policy (mode, max running, run timeout, max attempts) and its controls (paused, drained machines).",
  positionals: [{ name: "AGENT", description: "agent name", required: true }],
  options: {},
  async run({ args, options }) {
    const agent = agentName(args[0]!);
    const conn = resolveConnection(options);
    const [policy, presence] = await Promise.all([
      requestJson(conn, "GET", routePath("/agents/{agent}/policy", { agent }), policyViewSchema),
      requestJson(conn, "GET", routePath("/agents/{agent}/presence", { agent }), presenceSchema),
    ]);
    const c = presence.controls;
    if (options.json) {
      process.stdout.write(`${JSON.stringify({ agent, policy, controls: c })}\n`);
      return;
    }
    const lines = [
      `${agent}`,
      // A corrupt stored policy: the values below are the defaults the coordinator runs with, not ones anyone set.
      ...(policy.policy_problem === undefined ? [] : [`  policy         could not be read (${policy.policy_problem}); the defaults below run until \`baton agent set\` saves one`]),
      `  mode           ${policy.mode}${policy.mode === "single" ? " (the serve leaseholder runs every message)" : " (every serving runner with a free slot takes the next one)"}`,
      `  max running    ${policy.max_running}`,
      `  run timeout    ${policy.run_timeout_seconds} s`,
      `  max attempts   ${policy.max_attempts}`,
      `  on busy        ${policy.on_busy ?? "queue"}${policy.debounce_ms ? `, debounce ${policy.debounce_ms} ms${policy.debounce_max_ms ? ` (at most ${policy.debounce_max_ms} ms after a burst's first)` : ""}` : ""} (what a new message does while its group is busy)`,
      `  A2A            ${policy.a2a ? `on (/agents/${agent}/a2a)` : "off"}${policy.description ? `: ${policy.description}` : ""}`,
      `  paused         ${c.paused ? `yes, since ${new Date(c.paused_since ?? 0).toISOString()}` : "no"}`,
      `  drained        ${c.drained.length ? c.drained.map((d) => d.machine).join(", ") : "none"}`,
      `  hysteresis     ${c.hysteresis_seconds} s (a preferred runner takes the lease after being ready this long)`,
      ...(c.reserved_until ? [`  restart grace  the lease waits for its previous holder until ${new Date(c.reserved_until).toISOString()}`] : []),
      `  change it with: baton agent set ${agent} [--mode single|pool] [--max-running N] [--run-timeout S] [--max-attempts N] [--on-busy queue|reject|interrupt|replace] [--debounce-ms MS] [--debounce-max MS] [--a2a on|off] [--description TEXT]`,
    ];
    writeText(`${lines.join("\n")}\n`);
  },
});
