// `baton agent set AGENT [--mode single|pool] [--max-running N] [--run-timeout SECONDS] [--max-attempts N]`:
// the agent's message policy. Without options it prints the current one.
import { requestJson } from "../../client/http.ts";
import { policyViewSchema } from "../../worker/wire/http-responses.ts";
import { LIMITS } from "../../worker/wire/protocol.ts";
import { defineCommand, numberOption } from "../lib/command.ts";
import { resolveConnection } from "../lib/config.ts";
import { UsageError } from "../lib/errors.ts";
import { agentName } from "../lib/names.ts";

export default defineCommand({
  path: ["agent", "set"],
  summary: "Set how an agent's messages run: single (the serve leaseholder runs them all) or pool (every serving runner with a free slot " +
    "takes the next one); how many run at once, the run timeout after which a message is taken back, and the attempts before it fails.",
  positionals: [{ name: "AGENT", description: "agent name", required: true }],
  options: {
    mode: { type: "string", value: "single|pool", description: "single (default) or pool" },
    "max-running": { type: "string", value: "N", description: "messages running at once across all runners (1-10000; default 64)" },
    "run-timeout": { type: "string", value: "SECONDS", description: "a run not done by then is taken back and handed out again (default 3600)" },
    "max-attempts": { type: "string", value: "N", description: "after this many attempts a message fails (1-100; default 5)" },
  },
  async run({ args, options }) {
    const agent = agentName(args[0]!);
    const mode = options.mode;
    if (mode !== undefined && mode !== "single" && mode !== "pool") throw new UsageError(`--mode must be single or pool, got ${JSON.stringify(mode)}`);
    const { min, max } = LIMITS.runTimeoutSeconds;
    const body = {
      ...(mode === undefined ? {} : { mode }),
      ...(options["max-running"] === undefined ? {} : { max_running: numberOption(options["max-running"], "max-running", { min: 1, max: 10_000, integer: true }) }),
      ...(options["run-timeout"] === undefined ? {} : { run_timeout_seconds: numberOption(options["run-timeout"], "run-timeout", { min, max, unit: "seconds" }) }),
      ...(options["max-attempts"] === undefined ? {} : { max_attempts: numberOption(options["max-attempts"], "max-attempts", { min: 1, max: 100, integer: true }) }),
    };
    const conn = resolveConnection(options);
    const path = `/agents/${agent}/policy`;
    const policy = Object.keys(body).length === 0
      ? await requestJson(conn, "GET", path, policyViewSchema)
      : await requestJson(conn, "PUT", path, policyViewSchema, { body });
    process.stdout.write(options.json
      ? `${JSON.stringify(policy)}\n`
      : `${agent}: mode ${policy.mode}, max running ${policy.max_running}, run timeout ${policy.run_timeout_seconds} s, max attempts ${policy.max_attempts}\n`);
  },
});
