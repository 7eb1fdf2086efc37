// `baton send AGENT TEXT [--wait]`: posts a message for the agent; with --wait, prints its reply,
// saying so when nobody serves the agent (the message then waits in the queue). Ctrl-C while
// waiting prints the command that cancels the message (or, with --cancel-on-interrupt, cancels it)
// and exits 130, as a shell reports SIGINT.
import { requestJson, type Connection } from "../../client/http.ts";
import { replyText } from "../../client/run-journal.ts";
import { cancel } from "../../client/cancel.ts";
import { CoordinatorError } from "../../client/errors.ts";
import { describeCancel } from "./cancel.ts";
import { printable, shellWord, writeText } from "../lib/printable.ts";
import { answerCommands } from "../lib/next-steps.ts";
import { messageViewSchema, presenceSchema, type MessageView } from "../../worker/wire/http-responses.ts";
import { defineCommand, numberOption } from "../lib/command.ts";
import { resolveConnection } from "../lib/config.ts";
import { CLIError, UsageError } from "../lib/errors.ts";
import { agentName } from "../lib/names.ts";
import { LIMITS, TRACEPARENT, unknownOutcomeReason, utf8Bytes } from "../../worker/wire/protocol.ts";
import { routePath } from "../../worker/wire/routes.ts";
import { readOutput } from "../../client/output.ts";
import { OutputPrinter } from "../lib/output-printer.ts";
import { tokenLabel } from "../lib/token-label.ts";
import { addSchedule, parseDuration } from "../../client/schedules.ts";

const SEND_EXIT = { noReply: 3, failed: 4, parked: 5, rejected: 6, cancelled: 7, superseded: 8, busy: 9, interrupted: 130 } as const;
const POLL_MS = 250;
const PRESENCE_EVERY_MS = 5000;

export default defineCommand({
  path: ["send"],
  summary: "Send a message to an agent. With --wait, print the reply once the serving machine has run it.",
  positionals: [
    { name: "AGENT", description: "agent name", required: true },
    { name: "TEXT", description: "message text ('-' reads stdin)", required: true },
  ],
  options: {
    wait: { type: "boolean", description: "wait for the reply and print it" },
    timeout: { type: "string", value: "SECONDS", description: "with --wait, give up after this long (0.1-86400; default 300)" },
    group: { type: "string", value: "KEY", description: "messages with the same group (a conversation) run one at a time, in order" },
    "run-timeout": { type: "string", value: "SECONDS", description: "take the message back from a run that is not done by then (default: the agent's)" },
    quiet: { type: "boolean", description: "with --wait, print only the reply, not the run's live output" },
    "cancel-on-interrupt": { type: "boolean", description: "with --wait, Ctrl-C cancels the message (its run is stopped) instead of leaving it queued or running" },
    at: { type: "string", value: "TIME", description: "post it later, once, at TIME (ISO 8601: 2026-12-24T09:00, in --tz, or with Z or an offset): a one-off schedule" },
    in: { type: "string", value: "DURATION", description: "post it later, once, after DURATION (90s, 10m, 2h) by the coordinator's clock: a one-off schedule" },
    tz: { type: "string", value: "ZONE", description: "with --at and no offset: the IANA time zone TIME is in (default UTC)" },
  },
  exitCodes: [
    { code: SEND_EXIT.noReply, meaning: "with --wait: no reply within --timeout (the message stays queued)" },
    { code: SEND_EXIT.failed, meaning: "with --wait: the message failed (every attempt allowed was used; the reason is printed)" },
    { code: SEND_EXIT.parked, meaning: "with --wait: the message parked for a person (its question and the commands that answer it are printed)" },
    { code: SEND_EXIT.rejected, meaning: "with --wait: a person rejected the message; it will not run" },
    { code: SEND_EXIT.cancelled, meaning: "with --wait: someone cancelled the message (who and why are printed)" },
    { code: SEND_EXIT.superseded, meaning: "with --wait: a newer message of its group replaced it before it started (on_busy replace)" },
    { code: SEND_EXIT.busy, meaning: "the agent's group is busy and its on_busy is reject: nothing was stored (the running or queued message is named; with --json, the refusal as JSON)" },
    { code: SEND_EXIT.interrupted, meaning: "with --wait: Ctrl-C; the message goes on unless --cancel-on-interrupt (the cancel command is printed)" },
  ],
  async run({ args, options }) {
    const agent = agentName(args[0]!);
    const timeoutS = options.timeout === undefined ? 300 : numberOption(options.timeout, "timeout", { min: 0.1, max: 86_400, unit: "seconds" });
    if (options.timeout !== undefined && !options.wait) throw new UsageError("--timeout only applies with --wait");
    if (options["cancel-on-interrupt"] && !options.wait) throw new UsageError("--cancel-on-interrupt only applies with --wait");
    if (options.quiet && !options.wait) throw new UsageError("--quiet only applies with --wait");
    const text = args[1] === "-" ? await readStdin(LIMITS.messageTextBytes) : args[1]!;
    if (text === "") throw new UsageError("the message text is empty");
    if (utf8Bytes(text) > LIMITS.messageTextBytes) throw tooLong();
    const conn = resolveConnection(options);
    if (options.at !== undefined || options.in !== undefined) return sendLater(agent, text, options, conn);
    if (options.tz !== undefined) throw new UsageError("--tz goes with --at");
    const { min, max } = LIMITS.runTimeoutSeconds;
    const body = {
      text,
      ...(options.group === undefined ? {} : { group: options.group }),
      ...(options["run-timeout"] === undefined ? {} : { run_timeout_seconds: numberOption(options["run-timeout"], "run-timeout", { min, max, unit: "seconds" }) }),
      // A command run under a trace (TRACEPARENT, as `baton serve` gives its commands) sends within it.
      ...(process.env.TRACEPARENT && TRACEPARENT.test(process.env.TRACEPARENT) ? { traceparent: process.env.TRACEPARENT } : {}),
    };
    // Watched from before the post: a Ctrl-C while the post is on its way (the message may already
    // run when the answer arrives) is dealt with once its id is known, not by the default exit.
    const interrupt = options.wait ? onInterrupt() : null;
    const sent = await requestJson(conn, "POST", routePath("/agents/{agent}/messages", { agent }), messageViewSchema, { body }).catch((error: unknown) => {
      interrupt?.stop();
      // A busy refusal is an answer about the agent, not a failure of the command: its own exit code, and JSON with --json.
      if (!(error instanceof CoordinatorError && error.code === "busy")) throw error;
      // With --json, the coordinator's refusal as it sent it: {"error": "busy", "message", "holder"}.
      if (options.json) process.stdout.write(`${JSON.stringify(Object.keys(error.details).length > 0 ? error.details : { error: error.code, message: error.message })}\n`);
      throw new CLIError(error.message, SEND_EXIT.busy);
    });
    if (interrupt === null) {
      process.stdout.write(options.json ? `${JSON.stringify(sent)}\n` : `sent message ${sent.id} to ${agent}\n`);
      return;
    }
    const deadline = performance.now() + timeoutS * 1000;
    const state = await agentState(conn, agent).catch((error: unknown) => {
      interrupt.stop();
      throw error;
    });
    let served = state.served;
    if (!served) process.stderr.write(`baton: nobody serves ${agent} right now; message ${sent.id} waits in its queue until \`baton serve ${agent} -- COMMAND\` runs (waiting up to ${timeoutS} s)\n`);
    if (state.paused) process.stderr.write(`baton: ${agent} is paused; message ${sent.id} waits in its queue until \`baton unpause ${agent}\`\n`);
    let presenceAt = performance.now();
    // On a terminal the run's output shows as it comes (--quiet: only the reply; --json and pipes: unchanged).
    const live = process.stdout.isTTY && !options.json && !options.quiet ? follow(conn, agent, sent.id) : null;
    try {
      for (;;) {
        if (interrupt.fired) return await interrupted(conn, agent, sent.id, options["cancel-on-interrupt"], options.json);
        const m = await requestJson(conn, "GET", routePath("/agents/{agent}/messages/{id}", { agent, id: sent.id }), messageViewSchema);
        if (m.status === "acknowledged") {
          // The reply is the command's output: exact in a pipe, made printable on a terminal.
          const reply = options.json ? `${JSON.stringify(m)}\n` : ((await replyText(conn, agent, m)) ?? "");
          // A served command's stdout streamed live is its reply: shown once.
          if (live !== null && (await live.finish()) === reply) return;
          process.stdout.write(!options.json && process.stdout.isTTY ? printable(reply) : reply);
          return;
        }
        if (live !== null && m.status !== "queued" && m.status !== "running") await live.finish();
        if (m.status === "parked") {
          if (options.json) process.stdout.write(`${JSON.stringify(m)}\n`);
          writeText(waitingFor(agent, m), process.stderr);
          throw new CLIError(`message ${sent.id} waits for a person; once answered, \`baton show ${agent} ${sent.id}\` prints its reply (sending again would post it twice)`, SEND_EXIT.parked);
        }
        if (m.status === "rejected") {
          if (options.json) process.stdout.write(`${JSON.stringify(m)}\n`);
          const last = m.answers.at(-1);
          throw new CLIError(`message ${sent.id} was rejected${last ? ` by ${tokenLabel(last.token)} (${last.account})${last.text ? `: ${printable(last.text)}` : ""}` : ""}`, SEND_EXIT.rejected);
        }
        if (m.status === "cancelled") {
          if (options.json) process.stdout.write(`${JSON.stringify(m)}\n`);
          else process.stderr.write(`baton: ${describeCancel(agent, m)}`);
          throw new CLIError(`message ${sent.id} was cancelled`, SEND_EXIT.cancelled);
        }
        if (m.status === "superseded") {
          if (options.json) process.stdout.write(`${JSON.stringify(m)}\n`);
          throw new CLIError(`message ${sent.id} was superseded by message ${m.superseded_by ?? "?"} before it started (on_busy replace): it will not run`, SEND_EXIT.superseded);
        }
        if (m.status === "failed") {
          if (options.json) process.stdout.write(`${JSON.stringify(m)}\n`);
          const why = m.error ? `: ${m.error}` : "";
          const notes = [m.retried_after ? `retried after ${m.retried_after}` : "", m.declined ? `${m.declined} declined, not counted` : ""].filter(Boolean);
          throw new CLIError(`message ${sent.id} failed after ${m.attempts} attempt${m.attempts === 1 ? "" : "s"}${notes.length > 0 ? ` (${notes.join(", ")})` : ""}${why}`, SEND_EXIT.failed);
        }
        if (performance.now() >= deadline) {
          const why = served ? "" : `; nobody serves ${agent}`;
          throw new CLIError(`no reply to message ${sent.id} within ${timeoutS} s (status ${m.status}${why})`, SEND_EXIT.noReply);
        }
        if (performance.now() - presenceAt >= PRESENCE_EVERY_MS) {
          presenceAt = performance.now();
          const now = (await agentState(conn, agent)).served;
          if (now && !served) process.stderr.write(`baton: ${agent} is served now; waiting for the reply\n`);
          if (!now && served) process.stderr.write(`baton: nobody serves ${agent} any more; message ${sent.id} waits in its queue\n`);
          served = now;
        }
        await Promise.race([interrupt.promise, new Promise((r) => setTimeout(r, Math.min(POLL_MS, Math.max(0, deadline - performance.now()))))]);
      }
    } finally {
      interrupt.stop();
      live?.stop();
    }
  },
});

/** How long the live output may lag behind the message's final status before the wait ends anyway. */
const OUTPUT_TAIL_MS = 3000;

/** Prints the message's live output while the wait goes on; finish() waits for its end (briefly) and says what its last attempt wrote to stdout. */
function follow(conn: Connection, agent: string, id: number): { finish(): Promise<string>; stop(): void } {
  const stop = new AbortController();
  const printer = new OutputPrinter();
  const reading = (async () => {
    for await (const event of readOutput(conn, agent, id, { signal: stop.signal })) printer.print(event);
  })().catch(() => {});
  return {
    async finish() {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([reading, new Promise((r) => (timer = setTimeout(r, OUTPUT_TAIL_MS)))]);
      clearTimeout(timer);
      stop.abort();
      return printer.attemptStdout;
    },
    stop: () => stop.abort(),
  };
}

/** Ctrl-C while waiting: noted (and the wait woken), not the default exit, so the message can be dealt with first. */
function onInterrupt(): { fired: boolean; promise: Promise<void>; stop(): void } {
  let wake = () => {};
  const state = { fired: false, promise: new Promise<void>((r) => (wake = r)), stop: () => process.off("SIGINT", handler) };
  const handler = () => {
    if (state.fired) process.exit(SEND_EXIT.interrupted);
    state.fired = true;
    wake();
  };
  process.on("SIGINT", handler);
  return state;
}

/** The wait was interrupted: cancel the message (--cancel-on-interrupt), or say how to; exit 130 either way. */
async function interrupted(conn: Connection, agent: string, id: number, cancelIt: boolean, json: boolean): Promise<number> {
  if (!cancelIt) {
    process.stderr.write(`baton: stopped waiting; message ${id} goes on (queued or running). To stop it:\n  baton cancel ${shellWord(agent)} ${id}\n`);
    return SEND_EXIT.interrupted;
  }
  try {
    const m = await cancel(agent, id, conn, { reason: "interrupted: Ctrl-C on baton send --wait", via: "cli" });
    if (json) process.stdout.write(`${JSON.stringify(m)}\n`);
    process.stderr.write(`baton: ${describeCancel(agent, m)}`);
  } catch (error) {
    process.stderr.write(`baton: message ${id} was not cancelled: ${error instanceof Error ? error.message : String(error)}\n  baton show ${shellWord(agent)} ${id}\n`);
  }
  return SEND_EXIT.interrupted;
}

async function agentState(conn: Connection, agent: string): Promise<{ served: boolean; paused: boolean }> {
  const presence = await requestJson(conn, "GET", routePath("/agents/{agent}/presence", { agent }), presenceSchema);
  return { served: presence.serve_candidates > 0, paused: presence.controls?.paused ?? false };
}

/** The question a parked message waits on, and the commands that answer it. */
function waitingFor(agent: string, m: MessageView): string {
  if (m.waiting_on !== null) {
    return `baton: message ${m.id} parked: ${unknownOutcomeReason(m.waiting_on)}; did it happen?\n  baton resume ${agent} ${m.id} --done [OUTCOME]   or   baton resume ${agent} ${m.id} --redo\n`;
  }
  const q = m.question;
  const asked = q?.text ? `: ${printable(q.text)}` : " for approval";
  const deadline = q?.deadline ? `\n  (by ${new Date(q.deadline).toISOString()}, then: ${q.on_deadline})` : "";
  return `baton: message ${m.id} parked, waiting for a person${asked}\n${answerCommands(agent, m.id, q?.choices ?? []).map((c) => `  ${c}`).join("\n")}${deadline}\n`;
}

function tooLong(): UsageError {
  return new UsageError(`the message text is over ${LIMITS.messageTextBytes} bytes, the most one message may hold; nothing was sent (send a path or a link to it instead)`);
}

/** Standard input as text, refused (and no longer read) as soon as it passes `limit` bytes. */
async function readStdin(limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of process.stdin) {
    bytes += (chunk as Buffer).length;
    if (bytes > limit) {
      process.stdin.destroy();
      throw tooLong();
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** `--at` / `--in`: a one-off schedule, which the coordinator posts once at its time (docs/guides/schedules.md). */
async function sendLater(
  agent: string, text: string, options: { at?: string; in?: string; tz?: string; wait?: boolean; group?: string; "run-timeout"?: string; json: boolean }, conn: Connection,
): Promise<void> {
  if (options.wait) throw new UsageError("--wait does not go with --at or --in: the message is posted later (`baton schedule show` lists its message once posted)");
  if (options.at !== undefined && options.in !== undefined) throw new UsageError("give --at or --in, not both");
  if (options.tz !== undefined && options.at === undefined) throw new UsageError("--tz goes with --at");
  if (utf8Bytes(text) > LIMITS.scheduleTextBytes) throw new UsageError(`a message sent later is at most ${LIMITS.scheduleTextBytes} bytes`);
  const inSeconds = options.in === undefined ? undefined : parseDuration(options.in);
  if (inSeconds === null) throw new UsageError(`--in must be a duration like 90s, 10m or 2h, got ${JSON.stringify(options.in)}`);
  const { min, max } = LIMITS.runTimeoutSeconds;
  const view = await addSchedule(agent, {
    text,
    ...(options.at === undefined ? {} : { at: options.at }),
    ...(options.tz === undefined ? {} : { tz: options.tz }),
    ...(inSeconds === undefined ? {} : { in_seconds: inSeconds }),
    ...(options.group === undefined ? {} : { group: options.group }),
    ...(options["run-timeout"] === undefined ? {} : { run_timeout_seconds: numberOption(options["run-timeout"], "run-timeout", { min, max, integer: true, unit: "seconds" }) }),
  }, conn);
  process.stdout.write(options.json ? `${JSON.stringify(view)}\n` : `scheduled for ${new Date(view.next_slot ?? view.at ?? 0).toISOString()} as schedule ${view.id} of ${agent}\n`);
}
