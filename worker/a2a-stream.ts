// A task followed to its next stop, for A2A's streaming methods (SendStreamingMessage,
// SubscribeToTask) and for a SendMessage that waits: the message's live output read page by page
// through GET …/messages/{id}/output (a long poll, one page in flight, pulled only when the reader
// took the last, as output-routes.ts does), turned into artifact and status updates
// (rules/a2a-task.ts), until the task ends or waits for a person. A failover is one more working
// status and the output going on; the stream never says more than the message does.
import { inner, type A2ACaller } from "./a2a-calls.ts";
import { contextOf, isTerminal, outputUpdates, replyArtifact, taskOf, taskState, taskStatus } from "./rules/a2a-task.ts";
import type { A2ARpcId, A2AStreamResponse } from "./wire/a2a.ts";
import type { MessageView } from "./wire/http-responses.ts";
import type { OutputPage } from "./wire/output.ts";

/** How long one stream stays open (the client subscribes again after), and how long a SendMessage waits. */
export const A2A_STREAM_MS = 5 * 60_000;
export const A2A_SEND_WAIT_MS = 60_000;
const FOLLOW_WAIT_S = 25;

const stopsHere = (m: MessageView) => { const s = taskState(m); return isTerminal(s) || s === "TASK_STATE_INPUT_REQUIRED"; };

/** One page of output, or null when there is none to read, or the caller's credential no longer stands (a revoked grant). */
async function page(c: A2ACaller, id: number, from: number, waitS: number): Promise<OutputPage | null> {
  const read = await inner<OutputPage>(c, "GET", `/messages/${id}/output?format=json&from=${from}&wait=${waitS}`);
  // Asked after the read, which may have waited: a page that came while the credential ended is not used.
  return read.ok && (await c.still()) ? read.value : null;
}

async function view(c: A2ACaller, id: number): Promise<MessageView | null> {
  const read = await inner<MessageView>(c, "GET", `/messages/${id}`);
  return read.ok ? read.value : null;
}

/** The seq after the output kept so far: where a stream that continues a task (an answer) starts, so it does not repeat. */
export async function outputEnd(c: A2ACaller, id: number): Promise<number> {
  let cursor = 0;
  for (;;) {
    const p = await page(c, id, cursor, 0);
    if (p === null) return cursor;
    cursor = p.cursor;
    if (!p.more) return cursor;
  }
}

/** Waits until the message ends or asks a person, at most `waitMs`; the message as it is then. */
export async function awaitStop(c: A2ACaller, m: MessageView, waitMs: number): Promise<MessageView> {
  const deadline = Date.now() + waitMs;
  let cursor = await outputEnd(c, m.id);
  let current = m;
  while (!stopsHere(current) && Date.now() < deadline) {
    const p = await page(c, m.id, cursor, Math.max(1, Math.min(FOLLOW_WAIT_S, Math.ceil((deadline - Date.now()) / 1000))));
    if (p === null) break;
    cursor = p.cursor;
    current = (await view(c, m.id)) ?? current;
  }
  return current;
}

/**
 * The SSE body of a streaming method: the task first, then its updates from output seq `from`,
 * then, when it ends or asks a person, the reply (if any) and the final status.
 */
export function taskStream(c: A2ACaller, rpcId: A2ARpcId, first: MessageView, from: number): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  const frame = (result: A2AStreamResponse) => `data: ${JSON.stringify({ jsonrpc: "2.0", id: rpcId, result })}\n\n`;
  const started = Date.now();
  let cursor = from;
  let outputStarted = from > 0;
  let done = false;
  const closing = (m: MessageView): string => {
    done = true;
    const reply = replyArtifact(m);
    const ids = { taskId: String(m.id), contextId: contextOf(m) };
    return (reply ? frame({ artifactUpdate: { ...ids, artifact: reply, append: false, lastChunk: true } }) : "") + frame({ statusUpdate: { ...ids, status: taskStatus(m, Date.now()) } });
  };
  return new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode(frame({ task: taskOf(first, c.agent, Date.now()) })));
      if (stopsHere(first)) {
        done = true;
        controller.close();
      }
    },
    async pull(controller) {
      if (done || Date.now() - started > A2A_STREAM_MS) return controller.close();
      const p = await page(c, first.id, cursor, FOLLOW_WAIT_S);
      if (p === null) return controller.close();
      cursor = p.cursor;
      const out = outputUpdates(p.events, first, outputStarted, Date.now());
      outputStarted = out.started;
      let text = out.updates.map(frame).join("");
      if (p.final || p.status === "parked" || p.events.some((e) => e.type === "attempt_end")) {
        const m = await view(c, first.id);
        if (m === null || stopsHere(m)) text += m === null ? "" : closing(m);
        if (m === null) done = true;
      }
      // An empty page is a wait that timed out: a comment keeps proxies from closing an idle stream.
      controller.enqueue(encoder.encode(text === "" ? ": waiting\n\n" : text));
      if (done) controller.close();
    },
  }, { highWaterMark: 0 });
}
