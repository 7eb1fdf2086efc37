#!/usr/bin/env node
// Another team's agent handing work to a baton agent over A2A, with the official @a2a-js/sdk
// client (npm install @a2a-js/sdk): it reads the agent's card, sends TEXT as a streaming message
// and prints the run's live output as it comes, then the task's state on stderr. The agent must
// have opted in (`PUT /agents/AGENT/policy {"a2a": true}`) and be served (`baton serve AGENT -- …`).
//
//   BATON_URL=http://127.0.0.1:8787 BATON_TOKEN=… node examples/a2a-send.mjs AGENT [TEXT]
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from "@a2a-js/sdk/client";
import { Role, TaskState } from "@a2a-js/sdk";

const url = process.env.BATON_URL ?? "http://127.0.0.1:8787";
const token = process.env.BATON_TOKEN ?? "baton-dev-token";
const [agent = "assistant", text = "hello"] = process.argv.slice(2);

// A baton token as Bearer on every call, the card's one security scheme.
const fetchImpl = (input, init = {}) =>
  fetch(input, { ...init, headers: { ...Object.fromEntries(new Headers(init.headers)), authorization: `Bearer ${token}` } });
const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
  transports: [new JsonRpcTransportFactory({ fetchImpl })],
  cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
}));
// The card is at {base}/.well-known/agent-card.json: keep the trailing slash.
const client = await factory.createFromUrl(`${url}/agents/${agent}/a2a/`);

const stream = client.sendMessageStream({
  message: { messageId: crypto.randomUUID(), role: Role.ROLE_USER, parts: [{ content: { $case: "text", value: text } }] },
});
for await (const { payload } of stream) {
  if (payload?.$case === "artifactUpdate" && payload.value.artifact.artifactId === "output") {
    process.stdout.write(payload.value.artifact.parts.map((p) => p.content?.value ?? "").join(""));
  } else if (payload?.$case === "statusUpdate") {
    console.error(`task ${payload.value.taskId}: ${TaskState[payload.value.status.state]}`);
  }
}
