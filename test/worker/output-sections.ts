// What the workerd files that follow a message across attempts read: its run copy on a socket, and
// its output as a list of sections, so one assertion shows which attempt wrote what.
import type { MessageFrame } from "../../worker/wire/protocol.ts";
import type { OutputEvent, OutputPage } from "../../worker/wire/output.ts";
import { call, type TestSocket } from "./helpers.ts";

/** The next run copy of message `id` on `sock`. */
export function runCopy(sock: TestSocket, id: number): Promise<MessageFrame> {
  return sock.next("message", (f) => f.run && f.id === id);
}

/** The message's output as "attempt@machine" (began), "attempt:chunk" and "attempt:reason" (ended). */
export async function outputSections(agent: string, id: number): Promise<string[]> {
  const events: OutputEvent[] = [];
  for (let from = 0; ;) {
    const page = (await call("GET", `/agents/${agent}/messages/${id}/output?format=json&from=${from}`)).body as unknown as OutputPage;
    events.push(...page.events);
    if (!page.more) break;
    from = page.cursor;
  }
  return events.flatMap((e) => (e.type === "attempt" ? [`${e.attempt}@${e.machine}`] : e.type === "chunk" ? [`${e.attempt}:chunk`] : e.type === "attempt_end" ? [`${e.attempt}:${e.reason}`] : []));
}
