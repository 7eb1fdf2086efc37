// `baton agent set AGENT [--mode single|pool] [--max-running N] [--run-timeout SECONDS] [--max-attempts N]
// [--on-busy queue|reject|interrupt|replace] [--debounce-ms MS] [--debounce-max MS] [--a2a on|off] [--description TEXT]`: the agent's message policy. Without options it prints the current one.
import { requestJson } from "../../client/http.ts";
import { policyViewSchema } from "../../worker/wire/http-responses.ts";
import { ON_BUSY, POLICY_MODES } from "../../worker/wire/enums.ts";
import { LIMITS } from "../../worker/wire/protocol.ts";
import { defineCommand, numberOption } from "../lib/command.ts";
import { resolveConnection } from "../lib/config.ts";
import { UsageError } from "../lib/errors.ts";
import { agentName } from "../lib/names.ts";
import { routePath } from "../../worker/wire/routes.ts";

/** "a or b", "a, b or c": the words an option takes, for its usage error. */
const eitherOf = (words: readonly string[]) => `${words.slice(0, -1).join(", ")} or ${words.at(-1)}`;

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
    "on-busy": {
      type: "string", value: "POLICY",
      description: "what a new message does while one of its group is queued or running: queue (default: waits), reject (409 busy, not stored), " +
        "interrupt (the running one is cancelled), replace (queued, not yet started ones are superseded)",
    },
    "debounce-ms": { type: "string", value: "MS", description: `with replace: hold a new message this long so a burst becomes one run (0-${LIMITS.debounceMs.max}; 0: none)` },
    "debounce-max": {
      type: "string", value: "MS",
      description: `with a debounce: a held message runs at most this long after the first of its burst, however steady the trickle ` +
        `(1-${LIMITS.debounceMaxMs.max}; 0 or unset: ${LIMITS.debounceMaxMs.defaultTimesDebounce} times --debounce-ms)`,
    },
    a2a: { type: "string", value: "on|off", description: "answer A2A: an Agent Card and JSON-RPC at /agents/AGENT/a2a (docs/guides/remote.md#a2a); default off" },
    description: { type: "string", value: "TEXT", description: `what the agent does (its A2A card's description and skill; 1-${LIMITS.descriptionChars} characters, "" removes it)` },
  },
  async run({ args, options }) {
    const agent = agentName(args[0]!);
    const mode = options.mode;
    if (mode !== undefined && !(POLICY_MODES as readonly string[]).includes(mode)) throw new UsageError(`--mode must be ${eitherOf(POLICY_MODES)}, got ${JSON.stringify(mode)}`);
    const onBusy = options["on-busy"];
    if (onBusy !== undefined && !(ON_BUSY as readonly string[]).includes(onBusy)) {
      throw new UsageError(`--on-busy must be ${eitherOf(ON_BUSY)}, got ${JSON.stringify(onBusy)}`);
    }
    const a2a = options.a2a;
    if (a2a !== undefined && a2a !== "on" && a2a !== "off") throw new UsageError(`--a2a must be on or off, got ${JSON.stringify(a2a)}`);
    const description = options.description;
    if (description !== undefined && description.length > LIMITS.descriptionChars) throw new UsageError(`--description is at most ${LIMITS.descriptionChars} characters`);
    const { min, max } = LIMITS.runTimeoutSeconds;
    const body = {
      ...(mode === undefined ? {} : { mode }),
      ...(options["max-running"] === undefined ? {} : { max_running: numberOption(options["max-running"], "max-running", { min: 1, max: 10_000, integer: true }) }),
      ...(options["run-timeout"] === undefined ? {} : { run_timeout_seconds: numberOption(options["run-timeout"], "run-timeout", { min, max, unit: "seconds" }) }),
      ...(options["max-attempts"] === undefined ? {} : { max_attempts: numberOption(options["max-attempts"], "max-attempts", { min: 1, max: 100, integer: true }) }),
      ...(onBusy === undefined ? {} : { on_busy: onBusy }),
      ...(options["debounce-ms"] === undefined ? {} : { debounce_ms: numberOption(options["debounce-ms"], "debounce-ms", { min: 0, max: LIMITS.debounceMs.max, integer: true }) }),
      ...(options["debounce-max"] === undefined ? {} : { debounce_max_ms: numberOption(options["debounce-max"], "debounce-max", { min: 0, max: LIMITS.debounceMaxMs.max, integer: true }) }),
      ...(a2a === undefined ? {} : { a2a: a2a === "on" }),
      ...(description === undefined ? {} : { description: description === "" ? null : description }),
    };
    const conn = resolveConnection(options);
    const path = routePath("/agents/{agent}/policy", { agent });
    // A debounce holds a message back only under on_busy replace: anywhere else it would be
    // accepted and mean nothing, so it is refused before anything changes.
    if (body.debounce_ms !== undefined && body.debounce_ms > 0) {
      const effective = onBusy ?? (await requestJson(conn, "GET", path, policyViewSchema)).on_busy ?? "queue";
      if (effective !== "replace") {
        throw new UsageError(`--debounce-ms only applies with --on-busy replace (${agent}'s would be ${effective}); nothing was changed`);
      }
    }
    const policy = Object.keys(body).length === 0
      ? await requestJson(conn, "GET", path, policyViewSchema)
      : await requestJson(conn, "PUT", path, policyViewSchema, { body });
    process.stdout.write(options.json
      ? `${JSON.stringify(policy)}\n`
      : `${agent}: mode ${policy.mode}, max running ${policy.max_running}, run timeout ${policy.run_timeout_seconds} s, max attempts ${policy.max_attempts}, ` +
        `on busy ${policy.on_busy ?? "queue"}${policy.debounce_ms ? ` (debounce ${policy.debounce_ms} ms${policy.debounce_max_ms ? `, at most ${policy.debounce_max_ms} ms after a burst's first` : ""})` : ""}` +
        `${policy.a2a ? ", A2A on" : ""}\n`);
  },
});
