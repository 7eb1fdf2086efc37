// The parts of an agent object whose memory mirrors its storage, built from storage: when the
// object starts, and again after a schedule fire was rolled back (agent-object.ts), so that no
// memory keeps what storage dropped.
import { AgentStore, type AgentIdentity } from "./agent-store.ts";
import { AgentControls } from "./agent-controls.ts";
import { AgentMetricsKeeper } from "./metrics-agent.ts";
import { WorkDesk } from "./work-desk.ts";
import { AgentWebhooks } from "./agent-webhooks.ts";
import { AgentInputs } from "./agent-inputs.ts";
import { AgentSchedules } from "./agent-schedules.ts";
import { Outbound } from "./outbound.ts";
import { directoryObjectName } from "./names.ts";
import type { ApplyParts } from "./agent-apply.ts";
import type { SnapshotParts } from "./agent-snapshot.ts";
import type { Clock } from "./clock.ts";
import type { CoordinatorConfig } from "../config.ts";
import type { Env } from "../env.ts";

export interface AgentParts {
  store: AgentStore;
  controls: AgentControls;
  desk: WorkDesk;
  metrics: AgentMetricsKeeper;
  /** Webhook configuration, outbox and delivery (agent-webhooks.ts). */
  webhooks: AgentWebhooks;
  /** What a snapshot reads and what a plan is applied to. */
  parts: SnapshotParts & ApplyParts;
  /** The agent's schedules and their fires (agent-schedules.ts). */
  schedules: AgentSchedules;
  /** The Worker's calls, each one event (agent-inputs.ts). */
  inputs: AgentInputs;
}

export interface AgentSetting {
  ctx: DurableObjectState;
  env: Env;
  config: CoordinatorConfig;
  clock: Clock;
  identity: AgentIdentity | null;
  now: () => number;
}

export function buildAgentParts({ ctx, env, config, clock, identity, now }: AgentSetting): AgentParts {
  const store = new AgentStore(ctx.storage.sql);
  const controls = new AgentControls(ctx.storage.sql, config.preference);
  const desk = new WorkDesk(ctx.storage.sql, `agents/${ctx.id.toString()}`, config.outputBytes, config.agentOutputBytes);
  const metrics = new AgentMetricsKeeper(ctx.storage.sql);
  const directory = () => identity && env.DIRECTORY.get(env.DIRECTORY.idFromName(directoryObjectName(identity.account)));
  const webhooks = new AgentWebhooks(ctx.storage.sql, directory, now, undefined, env.BATON_WEBHOOK_ALLOW_PRIVATE === "true");
  const parts = { desk, store, metrics, webhooks, controls, ctx, clock, config, retention: config.retention, outbound: new Outbound() };
  const schedules = new AgentSchedules(ctx.storage.sql, desk, webhooks, config.retention);
  const inputs = new AgentInputs({ desk, store, controls, webhooks, metrics, config, identity, blobs: env.BLOBS });
  return { store, controls, desk, metrics, webhooks, parts, schedules, inputs };
}
