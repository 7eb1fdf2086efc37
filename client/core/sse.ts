// Server-Sent Events as GET …/output sends them, parsed without I/O: text in, complete events out,
// the unfinished rest kept for the next read. Only `id`, `event` and `data` fields are read;
// comments (`: waiting`) and `retry` are skipped. The data of each event is validated against the
// wire's schema: an event that does not match is dropped, never half-trusted.
import { outputEventSchema, type OutputEvent } from "../../worker/wire/output.ts";

export class SseParser {
  private buffer = "";

  /** Feeds text as it arrives; returns the events it completed, in order. */
  push(text: string): OutputEvent[] {
    this.buffer += text.replace(/\r\n?/g, "\n");
    const events: OutputEvent[] = [];
    let cut: number;
    while ((cut = this.buffer.indexOf("\n\n")) >= 0) {
      const block = this.buffer.slice(0, cut);
      this.buffer = this.buffer.slice(cut + 2);
      const data = block.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(l.startsWith("data: ") ? 6 : 5)).join("\n");
      if (data === "") continue;
      let parsed: unknown;
      try {
        parsed = JSON.parse(data);
      } catch {
        continue;
      }
      const event = outputEventSchema.safeParse(parsed);
      if (event.success) events.push(event.data);
    }
    return events;
  }
}

/** The bytes of a chunk event (text as UTF-8, base64 decoded). */
export function eventBytes(e: Extract<OutputEvent, { type: "chunk" }>): Uint8Array {
  if (e.text !== undefined) return new TextEncoder().encode(e.text);
  const bin = atob(e.base64 ?? "");
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}
