// A run's live output on a terminal or in a pipe (`baton logs`, `baton send --wait`): stdout and
// text chunks to stdout, stderr chunks to stderr, each stream decoded on its own (a character cut
// between chunks is joined; bytes that are not UTF-8 show as U+FFFD). On a terminal the text is
// made printable (printable.ts: no escapes, NUL or bidi tricks reach it); in a pipe it is exact.
// Attempts, takeovers and drops are told on stderr, as lines of their own.
import type { OutputEvent } from "../../worker/wire/output.ts";
import { eventBytes } from "../../client/core/sse.ts";
import { printable } from "./printable.ts";

const ENDED: Record<string, string> = {
  failed: "failed", parked: "parked for a person", cancelled: "was cancelled", lease_lost: "lost the message (its runner left or went silent)", timed_out: "ran out of time",
  declined: "was given back unstarted (its runner was stopping; not counted)",
};

export class OutputPrinter {
  private readonly decoders = { out: new TextDecoder(), err: new TextDecoder() };
  /** What the current attempt wrote to stdout, as text (send --wait compares it with the reply). */
  attemptStdout = "";
  private attempts = 0;
  private atLineStart = { out: true, err: true };

  constructor(private readonly out: NodeJS.WritableStream = process.stdout, private readonly err: NodeJS.WritableStream = process.stderr) {}

  print(e: OutputEvent): void {
    switch (e.type) {
      case "chunk": {
        const to = e.stream === "stderr" ? "err" : "out";
        const bytes = eventBytes(e);
        const text = this.decoders[to].decode(bytes, { stream: true });
        if (e.stream === "stdout") this.attemptStdout += text;
        const stream = to === "out" ? this.out : this.err;
        stream.write(isTerminal(stream) ? printable(text) : bytes);
        if (text.length > 0) this.atLineStart[to] = text.endsWith("\n");
        return;
      }
      case "attempt":
        this.attemptStdout = "";
        // The first attempt needs no announcement; a later one is a takeover or a retry, said in place.
        if (this.attempts++ > 0 || e.attempt > 1) this.note(`attempt ${e.attempt} on ${printable(e.machine)}`);
        return;
      case "attempt_end":
        if (e.reason !== "replied") this.note(`attempt ${e.attempt} ${ENDED[e.reason] ?? e.reason}`);
        return;
      case "dropped":
        if (e.reason === "agent_budget") this.note(`output dropped: agent budget (${e.bytes} bytes of this finished message's output went to keep the agent within BATON_OUTPUT_BYTES_PER_AGENT)`);
        else this.note(`${e.bytes} bytes of the oldest output were dropped (past the message's output budget); output resumes at byte ${e.offset}`);
        return;
      case "end":
        return;
    }
  }

  private note(text: string): void {
    const lead = this.atLineStart.out && this.atLineStart.err ? "" : "\n";
    this.atLineStart = { out: true, err: true };
    this.err.write(`${lead}baton: ${text}\n`);
  }
}

function isTerminal(stream: NodeJS.WritableStream): boolean {
  return (stream as { isTTY?: boolean }).isTTY === true;
}
