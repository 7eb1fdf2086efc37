// `baton webhook set URL [AGENT]`, `baton webhook show [AGENT]`, `baton webhook rm [AGENT]` and
// `baton webhook test [AGENT]`: an agent's own webhook, or without AGENT the account's, configured,
// shown, removed and tried without curl. `set` prints a secret baton made once (it is never shown
// again); `test` sends a signed `webhook.test` event now and prints what the receiver answered.
import * as z from "zod/mini";
import { requestJson } from "../../client/http.ts";
import {
  isWebhookSecret, isWebhookUrl, WEBHOOK_LIMITS, webhookTestResultSchema, webhookViewSchema, type WebhookView,
} from "../../worker/wire/webhooks.ts";
import { defineCommand, numberOption } from "../lib/command.ts";
import { resolveConnection } from "../lib/config.ts";
import { CLIError, UsageError } from "../lib/errors.ts";
import { agentName } from "../lib/names.ts";
import { printable } from "../lib/printable.ts";
import { routePath } from "../../worker/wire/routes.ts";

const AGENT = { name: "AGENT", description: "agent name (without it: the account's webhook, for agents with none of their own)", required: false };

/** The webhook's path and how messages name it. */
function target(raw: string | undefined): { path: string; what: string } {
  if (raw === undefined) return { path: routePath("/webhook"), what: "the account's webhook" };
  const agent = agentName(raw);
  return { path: routePath("/agents/{agent}/webhook", { agent }), what: `the webhook of agent ${agent}` };
}

function describe(v: WebhookView): string[] {
  return [
    `${v.agent === null ? "the account's webhook" : `the webhook of agent ${v.agent}`}: ${printable(v.url)}`,
    `  agent.no_holder after  ${v.no_holder_after_seconds} s without a holder`,
    `  links point to         ${printable(v.link_origin)}`,
    `  updated                ${new Date(v.updated_at).toISOString()}`,
    ...(v.old_secret_expires_at === null ? [] : [`  previous secret        still signs beside the current one until ${new Date(v.old_secret_expires_at).toISOString()}`]),
  ];
}

export default defineCommand({
  path: ["webhook", "set"],
  summary: "Set a webhook: URL receives a signed POST (Standard Webhooks) for each event of the agent, or of every agent of the account " +
    "without a webhook of its own. Without --secret baton makes one for a new webhook and prints it once; an existing one keeps its secret " +
    "unless --secret or --rotate-secret gives a new one, beside which the old one still signs for --keep-old-secret seconds.",
  positionals: [{ name: "URL", description: "the receiver: an http: or https: URL", required: true }, AGENT],
  options: {
    secret: { type: "string", value: "whsec_...", description: "the signing secret: whsec_ and the base64 of 24-64 random bytes (default: baton makes one)" },
    "rotate-secret": { type: "boolean", description: "baton makes a new secret (printed once); the old one still signs beside it for a while" },
    "keep-old-secret": {
      type: "string", value: "SECONDS", description: `how long a replaced secret still signs (0-${WEBHOOK_LIMITS.keepOldSecretSeconds.max}; default ${WEBHOOK_LIMITS.keepOldSecretSeconds.default})`,
    },
    "no-holder-after": {
      type: "string", value: "SECONDS",
      description: `agent.no_holder once the agent has had no holder this long (${WEBHOOK_LIMITS.noHolderAfterSeconds.min}-${WEBHOOK_LIMITS.noHolderAfterSeconds.max}; default ${WEBHOOK_LIMITS.noHolderAfterSeconds.default})`,
    },
  },
  async run({ args, options }) {
    const url = args[0]!;
    if (!isWebhookUrl(url)) throw new UsageError(`URL must be an http: or https: URL of at most ${WEBHOOK_LIMITS.urlChars} characters, got ${JSON.stringify(url)}`);
    const { path } = target(args[1]);
    const secret = options.secret;
    if (secret !== undefined && !isWebhookSecret(secret)) {
      throw new UsageError(`--secret must be whsec_ and the base64 of ${WEBHOOK_LIMITS.secretBytes.min}-${WEBHOOK_LIMITS.secretBytes.max} random bytes (leave it out and baton makes one)`);
    }
    if (secret !== undefined && options["rotate-secret"]) throw new UsageError("give --secret or --rotate-secret, not both");
    const keep = WEBHOOK_LIMITS.keepOldSecretSeconds;
    const noHolder = WEBHOOK_LIMITS.noHolderAfterSeconds;
    const body = {
      url,
      ...(secret === undefined ? {} : { secret }),
      ...(options["rotate-secret"] ? { rotate_secret: true } : {}),
      ...(options["keep-old-secret"] === undefined ? {} : {
        keep_old_secret_seconds: numberOption(options["keep-old-secret"], "keep-old-secret", { min: keep.min, max: keep.max, integer: true, unit: "seconds" }),
      }),
      ...(options["no-holder-after"] === undefined ? {} : {
        no_holder_after_seconds: numberOption(options["no-holder-after"], "no-holder-after", { min: noHolder.min, max: noHolder.max, integer: true, unit: "seconds" }),
      }),
    };
    const view = await requestJson(resolveConnection(options), "PUT", path, webhookViewSchema, { body });
    if (options.json) {
      process.stdout.write(`${JSON.stringify(view)}\n`);
      return;
    }
    const lines = describe(view);
    if (view.secret !== undefined) lines.push(`  secret                 ${view.secret}`, "  (shown this once: give it to the receiver now; `baton webhook show` never prints it)");
    process.stdout.write(`${lines.join("\n")}\n`);
  },
});

export const showCommand = defineCommand({
  path: ["webhook", "show"],
  summary: "Show a webhook (never its secret): its URL, when agent.no_holder fires, where event links point, and a replaced secret that still signs.",
  positionals: [AGENT],
  options: {},
  exitCodes: [{ code: 1, meaning: "there is no such webhook, or the coordinator refused or could not be reached" }],
  async run({ args, options }) {
    const view = await requestJson(resolveConnection(options), "GET", target(args[0]).path, webhookViewSchema);
    process.stdout.write(options.json ? `${JSON.stringify(view)}\n` : `${describe(view).join("\n")}\n`);
  },
});

export const rmCommand = defineCommand({
  path: ["webhook", "rm"],
  summary: "Remove a webhook. An agent's events then go to the account's webhook, if there is one; without AGENT the account's is removed.",
  positionals: [AGENT],
  options: {},
  exitCodes: [{ code: 1, meaning: "there is no such webhook, or the coordinator refused or could not be reached" }],
  async run({ args, options }) {
    const { path, what } = target(args[0]);
    await requestJson(resolveConnection(options), "DELETE", path, z.unknown());
    process.stdout.write(options.json ? `${JSON.stringify({ removed: true, agent: args[0] ?? null })}\n` : `removed ${what}\n`);
  },
});

export const testCommand = defineCommand({
  path: ["webhook", "test"],
  summary: "Send a signed webhook.test event to a webhook now (once, never queued or retried) and print what the receiver answered.",
  positionals: [AGENT],
  options: {},
  exitCodes: [{ code: 1, meaning: "the receiver did not answer 2xx, there is no such webhook, or the coordinator refused or could not be reached" }],
  async run({ args, options }) {
    const { path, what } = target(args[0]);
    const result = await requestJson(resolveConnection(options), "POST", `${path}/test`, webhookTestResultSchema);
    const answered = result.status === null ? "no answer" : `answered ${result.status}`;
    if (options.json) process.stdout.write(`${JSON.stringify(result)}\n`);
    else if (result.delivered) process.stdout.write(`sent webhook.test ${result.id} to ${printable(result.url)}: ${answered}\n`);
    if (!result.delivered) {
      if (options.json) return 1;
      throw new CLIError(`sent webhook.test ${result.id} to ${printable(result.url)} (${what}): ${printable(result.error ?? answered)}`);
    }
  },
});
