// cli/lib/output-printer.ts: hostile output (escape sequences, NUL, invalid UTF-8, a 10 MB line)
// reaches a terminal harmless and a pipe exact; attempts and takeovers are said on stderr.
import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { OutputPrinter } from "../../cli/lib/output-printer.ts";

function sink(tty: boolean) {
  const parts: Buffer[] = [];
  const w = new Writable({ write(chunk, _enc, cb) { parts.push(Buffer.from(chunk)); cb(); } }) as Writable & { isTTY?: boolean };
  w.isTTY = tty;
  return { w, text: () => Buffer.concat(parts).toString("utf8"), bytes: () => Buffer.concat(parts) };
}

const chunk = (seq: number, body: { text: string } | { base64: string }, stream: "stdout" | "stderr" = "stdout") =>
  ({ type: "chunk" as const, seq, offset: 0, attempt: 1, machine: "m", stream, at: 0, ...body });

describe("OutputPrinter", () => {
  it("on a terminal: escapes, NUL and bidi controls are replaced, invalid UTF-8 shows as U+FFFD, newlines and tabs stay", () => {
    const out = sink(true);
    const err = sink(true);
    const p = new OutputPrinter(out.w, err.w);
    p.print(chunk(1, { text: "\u001b]0;owned\u0007\u001b[2J\u0000ok\tx\n\u202Eevil\n" }));
    p.print(chunk(2, { base64: Buffer.from([0x66, 0xff, 0xfe, 0x67, 0x0a]).toString("base64") }, "stderr"));
    expect(out.text()).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f\u202e]/);
    expect(out.text()).toContain("ok\tx\n");
    expect(err.text()).toBe("f\uFFFD\uFFFDg\n");
  });

  it("in a pipe the bytes are exact", () => {
    const out = sink(false);
    const p = new OutputPrinter(out.w, sink(false).w);
    const bytes = Buffer.from([0x1b, 0x5b, 0x32, 0x4a, 0x00, 0xff]);
    p.print(chunk(1, { base64: bytes.toString("base64") }));
    expect(out.bytes()).toEqual(bytes);
  });

  it("a 10 MB line passes through in one piece, in time linear in its length (not hanging)", () => {
    // A ratio, not a wall-clock bound: a loaded machine slows both sizes alike, a quadratic pass
    // would make ten times the bytes cost a hundred times the time.
    const timed = (bytes: number) => {
      const out = sink(true);
      const p = new OutputPrinter(out.w, sink(true).w);
      const line = `${"\u001b".repeat(10)}${"y".repeat(bytes)}\n`;
      const started = performance.now();
      p.print(chunk(1, { text: line }));
      const ms = performance.now() - started;
      expect(out.text().length).toBe(line.length);
      expect(out.text().startsWith("\uFFFD".repeat(10))).toBe(true);
      return ms;
    };
    timed(1024 * 1024);
    const oneMb = Math.max(timed(1024 * 1024), 5);
    const tenMb = timed(10 * 1024 * 1024);
    expect(tenMb / oneMb).toBeLessThan(40);
  });

  it("a takeover and a drop are told in place on stderr, on a line of their own", () => {
    const out = sink(false);
    const err = sink(false);
    const p = new OutputPrinter(out.w, err.w);
    p.print({ type: "attempt", seq: 1, attempt: 1, machine: "laptop-1", at: 0 });
    p.print(chunk(2, { text: "half" }));
    p.print({ type: "attempt_end", seq: 3, attempt: 1, reason: "lease_lost", at: 0 });
    p.print({ type: "attempt", seq: 4, attempt: 2, machine: "laptop-2", at: 0 });
    p.print({ type: "dropped", bytes: 10, offset: 10 });
    expect(err.text()).toBe("\nbaton: attempt 1 lost the message (its runner left or went silent)\nbaton: attempt 2 on laptop-2\nbaton: 10 bytes of the oldest output were dropped (past the message's output budget); output resumes at byte 10\n");
  });
});
