// What the MCP `get_output` tool returns for one page of a message's live output (GET
// …/output?format=json): the text its chunks stand for (bytes that are not UTF-8 read as U+FFFD),
// with takeovers, attempt ends and dropped bytes said on lines of their own, and the cursor a host
// passes back as `from` to read on without loss or repeat.
import { chunkBytes, type OutputPage } from "../worker/wire/output.ts";

export interface OutputResult {
  agent: string;
  message_id: number;
  status: string;
  text: string;
  /** Pass as `from` next time: the seq of the last event this page carried. */
  next_from: number;
  /** More stored output follows at once (call again without waiting). */
  more: boolean;
  /** The message is final: nothing will follow what has been read. */
  final: boolean;
  dropped_bytes: number;
}

export function outputResult(agent: string, page: OutputPage): OutputResult {
  const decoder = new TextDecoder();
  let text = "";
  let dropped = 0;
  const note = (line: string) => {
    text += `${text === "" || text.endsWith("\n") ? "" : "\n"}[baton: ${line}]\n`;
  };
  for (const e of page.events) {
    if (e.type === "chunk") text += decoder.decode(chunkBytes(e), { stream: true });
    else if (e.type === "attempt" && e.attempt > 1) note(`attempt ${e.attempt} on ${e.machine} took over`);
    else if (e.type === "attempt_end" && e.reason !== "replied") note(`attempt ${e.attempt} ended: ${e.reason}`);
    else if (e.type === "dropped") {
      dropped += e.bytes;
      note(`${e.bytes} bytes of the oldest output were dropped (past the message's output budget)`);
    }
  }
  text += decoder.decode();
  return { agent, message_id: page.id, status: page.status, text, next_from: page.cursor, more: page.more, final: page.final && !page.more, dropped_bytes: dropped };
}
