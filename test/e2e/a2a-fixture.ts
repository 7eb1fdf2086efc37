// The A2A e2e files' fixture (a2a.test.ts, a2a-runs.test.ts): the shared wrangler dev with its
// served shell agents, the official @a2a-js/sdk client with a Bearer token, push receivers, and the
// stream readers both files use. Everything a test starts here is stopped after it.
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect } from "vitest";
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory, type Client } from "@a2a-js/sdk/client";
import { Role, type SendMessageRequest, type StreamResponse } from "@a2a-js/sdk";
import { killLeftovers } from "./process-tree-fixture.ts";
import { BIN, sharedServeFixture, startServe, type ServeProc } from "./serve-helpers.ts";
import { NAMED_TOKENS } from "./shared-accounts.ts";
import { DEV_TOKEN, ROOT } from "./wrangler-dev.ts";
import { startReceiver, type Receiver } from "./receiver.ts";

/** Token "wall" of account dev, read only. */
export const READER = NAMED_TOKENS.reader.token;

/** The shared server, and helpers that start what a test needs on it; call once at a file's top level. */
export function a2aFixture() {
  const fx = sharedServeFixture();
  const dirs: string[] = [];
  const receivers: Receiver[] = [];
  afterEach(async () => {
    dirs.splice(0).forEach(killLeftovers);
    await Promise.all(receivers.splice(0).map((r) => r.close()));
  });

  /** A push receiver on 127.0.0.1 (wrangler dev's .dev.vars allows private addresses): answers 200 and keeps every request. */
  async function pushReceiver() {
    const r = await startReceiver("/a2a/push");
    receivers.push(r);
    const states = () => r.got.map((d) => (JSON.parse(d.body) as { statusUpdate: { status: { state: string } } }).statusUpdate.status.state);
    return {
      url: r.url,
      got: r.got,
      states,
      async waitForStates(n: number): Promise<string[]> {
        await r.waitFor((got) => got.length >= n);
        return states();
      },
    };
  }

  /** A served shell agent: `long` starts a process tree, `ask` asks a person, `lines` prints eight lines slowly, anything else is echoed. */
  function agentCommand(): { dir: string; command: string; env: Record<string, string> } {
    const dir = mkdtempSync(join(tmpdir(), "baton-a2a-"));
    dirs.push(dir);
    writeFileSync(join(dir, "baton"), `#!/bin/sh\nexec "${process.execPath}" "${BIN}" "$@"\n`, { mode: 0o755 });
    const command = join(dir, "agent.sh");
    writeFileSync(command, [
      "#!/bin/sh",
      "text=$(cat)",
      'case "$text" in',
      '  long*) base="$PIDS/$BATON_MESSAGE_ID"',
      "    sh -c 'sleep 1000 & echo $! > \"$0.bg\"; echo $$ > \"$0.sub\"; wait' \"$base\" &",
      '    echo $$ > "$base.sh.tmp" && mv "$base.sh.tmp" "$base.sh"',
      "    wait ;;",
      '  ask*) echo "asking"; choice=$(baton ask "Ship it?" --choices ship,hold) || exit $?; echo "answered: $choice" ;;',
      '  lines*) i=1; while [ $i -le 8 ]; do echo "$TAG line $i"; sleep 0.3; i=$((i+1)); done ;;',
      '  *) echo "did: $text" ;;',
      "esac",
      "",
    ].join("\n"), { mode: 0o755 });
    return { dir, command, env: { PIDS: dir, PATH: `${dir}:${process.env.PATH}` } };
  }

  function serve(agent: string, tag: string, command: string, env: Record<string, string>): ServeProc {
    const s = startServe({ url: fx.dev.url, agent, tag, command, sink: "/dev/null", env });
    fx.started.push(s);
    return s;
  }

  /**
   * `node ARGS…` without blocking this process: spawnSync would hold the event loop while wrangler
   * dev closes an idle keep-alive socket, which the next fetch would then reuse ("other side closed").
   */
  function node(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
    return new Promise((resolve) => {
      const p = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, BATON_URL: fx.dev.url, BATON_TOKEN: DEV_TOKEN } });
      let stdout = "";
      let stderr = "";
      p.stdout.on("data", (d) => (stdout += d));
      p.stderr.on("data", (d) => (stderr += d));
      p.on("close", (code) => resolve({ code, stdout, stderr }));
    });
  }
  const baton = (args: string[]) => node([BIN, ...args]);

  /** `baton agent set AGENT --a2a on --description …`, as its owner opts it in. */
  async function optIn(agent: string, description = "Echoes what it is sent; asks before shipping."): Promise<void> {
    const set = await baton(["agent", "set", agent, "--a2a", "on", "--description", description]);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toContain(", A2A on\n");
  }

  /** The A2A client as another team would build it: the SDK's factory, its card resolver, a Bearer token on every call. */
  async function a2aClient(agent: string, token = DEV_TOKEN): Promise<Client> {
    const authed: typeof fetch = (input, init) => fetch(input, { ...init, headers: { ...Object.fromEntries(new Headers(init?.headers)), authorization: `Bearer ${token}` } });
    const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl: authed })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl: authed }),
    }));
    return factory.createFromUrl(`${fx.dev.url}/agents/${agent}/a2a/`);
  }

  return { fx, pushReceiver, agentCommand, serve, node, baton, optIn, a2aClient };
}

export const userMessage = (text: string, extra: { messageId?: string; taskId?: string; contextId?: string; returnImmediately?: boolean } = {}): SendMessageRequest => ({
  tenant: "",
  metadata: undefined,
  configuration: extra.returnImmediately ? { acceptedOutputModes: [], returnImmediately: true, taskPushNotificationConfig: undefined, historyLength: undefined } : undefined,
  message: {
    messageId: extra.messageId ?? crypto.randomUUID(), role: Role.ROLE_USER, taskId: extra.taskId ?? "", contextId: extra.contextId ?? "", extensions: [], referenceTaskIds: [], metadata: undefined,
    parts: [{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "" }],
  },
});

export const textOf = (parts: { content?: { $case: string; value: unknown } }[] | undefined) => (parts ?? []).map((p) => (p.content?.$case === "text" ? String(p.content.value) : "")).join("");

export async function collect(stream: AsyncGenerator<StreamResponse>, onEvent: (e: StreamResponse, all: StreamResponse[]) => void = () => {}): Promise<StreamResponse[]> {
  const all: StreamResponse[] = [];
  for await (const e of stream) {
    all.push(e);
    onEvent(e, all);
  }
  return all;
}
export const outputText = (events: StreamResponse[]) => events.map((e) => (e.payload?.$case === "artifactUpdate" && e.payload.value.artifact?.artifactId === "output" ? textOf(e.payload.value.artifact.parts) : "")).join("");
export const lastState = (events: StreamResponse[]) => events.flatMap((e) => (e.payload?.$case === "statusUpdate" ? [e.payload.value.status?.state] : [])).at(-1);
