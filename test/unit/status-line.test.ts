// The terminal status line of `baton serve`: the command's stderr goes above it, never glued to it,
// and after a stop the last line on screen is what happened last, not a stale "holder".
import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { StatusReporter } from "../../cli/lib/status-line.ts";

function terminal() {
  let screen = "";
  const out = new Writable({ write(chunk, _e, done) { screen += chunk.toString(); done(); } }) as Writable & { isTTY: boolean };
  out.isTTY = true;
  /** What a terminal shows: \r returns to the line start, \x1b[2K clears the line. */
  const lines = () => {
    const shown: string[] = [""];
    for (const part of screen.split(/(\r|\x1b\[2K|\n)/)) {
      if (part === "\r" || part === "\x1b[2K") shown[shown.length - 1] = part === "\x1b[2K" ? "" : shown[shown.length - 1]!;
      else if (part === "\n") shown.push("");
      else shown[shown.length - 1] += part;
    }
    return shown;
  };
  return { out, lines };
}

describe("the serve status line", () => {
  it("puts the command's stderr on lines of its own above the live line", async () => {
    const { out, lines } = terminal();
    const r = new StatusReporter("baton serve a", "http://x", out);
    r.status({ kind: "holder", fence: 1 } as never);
    const err = r.commandStderr();
    err.write("starting 1 ");
    err.write("attempt 1\nhalf");
    await new Promise<void>((done) => err.end(done));
    expect(lines()).toEqual(["starting 1 attempt 1", "half", "baton serve a: holder (fence 1)"]);
  });

  it("after a stop, the last line shown is the last thing said", () => {
    const { out, lines } = terminal();
    const r = new StatusReporter("baton serve a", "http://x", out);
    r.status({ kind: "holder", fence: 1 } as never);
    r.event({ type: "released" });
    r.end();
    expect(lines().filter(Boolean)).toEqual(["baton serve a: released the lease"]);
  });

  it("a sole holder stopped with Ctrl-C reads as out of line, then released, never as 1st in line (in a log)", () => {
    const { out, lines } = terminal();
    out.isTTY = false;
    const r = new StatusReporter("baton serve a", "http://x", out);
    r.status({ kind: "holder", fence: 1 });
    r.log("SIGINT: stopping");
    // What the coordinator answers a release: not held, position -1.
    r.status({ kind: "standby", position: -1, fence: 1 });
    r.event({ type: "released" });
    r.end();
    expect(lines()).toEqual([
      "baton serve a: holder (fence 1)", "baton serve a: SIGINT: stopping", "baton serve a: out of line (released or drained)", "baton serve a: released the lease", "",
    ]);
  });

  it("a standby says its place in line", () => {
    const { out, lines } = terminal();
    new StatusReporter("baton serve a", "http://x", out).status({ kind: "standby", position: 2, fence: 1 });
    expect(lines()).toEqual(["baton serve a: standby (2nd in line)"]);
  });
});
