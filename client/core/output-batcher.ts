// A run's live output on its way to the coordinator: many small writes become few `output`
// frames (one every FLUSH_MS, or at once when OUTPUT_BATCH_BYTES wait), one frame in flight at a
// time so chunks arrive in order, each sent through the run's Writer (its token, the socket's
// frame pacer). Bytes that are valid UTF-8 travel as text, others as base64; a character cut at a
// flush waits for its last bytes. A producer far ahead of the coordinator is held back: write()
// resolves once what waits is under MAX_PENDING_BYTES. Without I/O: the clock and the send are given.
import { LIMITS } from "../../worker/wire/protocol.ts";
import type { OutputChunk, OutputStream } from "../../worker/wire/output.ts";
import type { Clock } from "./clock.ts";

export const FLUSH_MS = 50;
/** What one frame carries at most. */
export const OUTPUT_BATCH_BYTES = LIMITS.outputBatchBytes;
/** Bytes a run may have waiting before write() holds its caller back. */
export const MAX_PENDING_BYTES = 1024 * 1024;

interface Segment {
  stream: OutputStream;
  parts: Uint8Array[];
  bytes: number;
}

export class OutputBatcher {
  private segments: Segment[] = [];
  private pending = 0;
  private timer: (() => void) | null = null;
  private sending: Promise<void> = Promise.resolve();
  private stopped = false;
  private waiters: (() => void)[] = [];

  /** `send` posts one frame's chunks and rejects when the coordinator refused them (the run is over then). */
  constructor(private readonly send: (chunks: OutputChunk[]) => Promise<unknown>, private readonly clock: Clock) {}

  /** Queues `data` of `stream`; resolves at once unless too much waits already, then once it drained. Ignored after a refusal. */
  write(data: string | Uint8Array, stream: OutputStream = "text"): Promise<void> {
    if (this.stopped) return Promise.resolve();
    const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
    if (bytes.byteLength === 0) return Promise.resolve();
    const last = this.segments.at(-1);
    if (last && last.stream === stream) {
      last.parts.push(bytes);
      last.bytes += bytes.byteLength;
    } else this.segments.push({ stream, parts: [bytes], bytes: bytes.byteLength });
    this.pending += bytes.byteLength;
    if (this.pending >= OUTPUT_BATCH_BYTES) this.pump(false);
    else this.timer ??= this.clock.after(FLUSH_MS, () => this.pump(false));
    if (this.pending < MAX_PENDING_BYTES) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Sends everything waiting (a cut character too) and resolves once it was answered: before the run's reply, fail or park. */
  async flush(): Promise<void> {
    this.pump(true);
    await this.sending;
  }

  /** Bytes waiting to be sent. */
  get waiting(): number {
    return this.pending;
  }

  private pump(final: boolean): void {
    this.timer?.();
    this.timer = null;
    this.sending = this.sending.then(async () => {
      let sent = false;
      while (!this.stopped) {
        const chunks = this.take(final);
        if (chunks.length === 0) break;
        sent = true;
        try {
          await this.send(chunks);
        } catch {
          // Refused: this attempt no longer holds the message, so nothing more of it is sent.
          this.stop();
        }
        this.release();
        // Only full frames go now; the rest waits for the timer, so a steady producer still batches.
        if (!final && this.pending < OUTPUT_BATCH_BYTES) break;
      }
      // Only a cut character left: the next write (or the flush at the end) sends it.
      if (sent && this.pending > 0 && !this.stopped) this.timer ??= this.clock.after(FLUSH_MS, () => this.pump(false));
    });
  }

  private stop(): void {
    this.stopped = true;
    this.segments = [];
    this.pending = 0;
  }

  private release(): void {
    if (this.pending >= MAX_PENDING_BYTES) return;
    for (const resolve of this.waiters.splice(0)) resolve();
  }

  /** Up to one frame's chunks from the front; without `final`, a character cut at the end stays behind. */
  private take(final: boolean): OutputChunk[] {
    const chunks: OutputChunk[] = [];
    let room = OUTPUT_BATCH_BYTES;
    while (this.segments.length > 0 && room > 0 && chunks.length < LIMITS.outputBatchChunks) {
      const seg = this.segments[0]!;
      const all = concat(seg.parts, seg.bytes);
      let cut = Math.min(all.byteLength, room);
      const alone = this.segments.length === 1;
      // A frame's end never splits a character; the stream's end does only when nothing more can complete it.
      if (cut < all.byteLength || (alone && !final)) cut = utf8Boundary(all, cut);
      if (cut === 0) {
        if (chunks.length > 0 || (alone && !final)) break;
        cut = Math.min(all.byteLength, room);
      }
      chunks.push(encodeChunk(seg.stream, all.subarray(0, cut)));
      room -= cut;
      this.pending -= cut;
      const rest = all.subarray(cut);
      if (rest.byteLength === 0) this.segments.shift();
      else {
        seg.parts = [rest];
        seg.bytes = rest.byteLength;
        break;
      }
    }
    return chunks;
  }
}

function concat(parts: Uint8Array[], bytes: number): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(bytes);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/** The largest cut at or before `at` that does not split a UTF-8 character (at itself when the bytes are not UTF-8 there). */
export function utf8Boundary(bytes: Uint8Array, at: number): number {
  if (at >= bytes.byteLength) {
    // The end: hold back a lead byte whose continuation has not come yet.
    for (let back = 1; back <= 3 && at - back >= 0; back++) {
      const b = bytes[at - back]!;
      if ((b & 0xc0) === 0x80) continue;
      const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
      return need > back ? at - back : at;
    }
    return at;
  }
  let cut = at;
  while (cut > 0 && cut > at - 3 && (bytes[cut]! & 0xc0) === 0x80) cut--;
  return (bytes[cut]! & 0xc0) === 0x80 ? at : cut;
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/** Text when the bytes are UTF-8 and JSON escaping does not blow them up (control characters), base64 otherwise. */
export function encodeChunk(stream: OutputStream, bytes: Uint8Array): OutputChunk {
  try {
    const text = strictUtf8.decode(bytes);
    if (JSON.stringify(text).length <= bytes.byteLength * 1.34 + 16) return { stream, text };
  } catch {
    // not UTF-8
  }
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return { stream, base64: btoa(bin) };
}
