// "Did you mean …?" for a mistyped command or option: close words are offered, far ones are not.
import { describe, expect, it } from "vitest";
import { closest, editDistance } from "../../cli/lib/suggest.ts";

const COMMANDS = ["serve", "who", "send", "drain", "undrain", "pause", "unpause", "history", "resume", "ask", "approve", "reject", "answer", "retry", "step", "effect", "heartbeat", "show", "login", "lease", "agent"];

describe("editDistance", () => {
  it("counts a swap of neighbouring letters as one edit", () => {
    expect(editDistance("sned", "send")).toBe(1);
    expect(editDistance("histroy", "history")).toBe(1);
    expect(editDistance("who", "show")).toBe(2);
    expect(editDistance("", "ask")).toBe(3);
  });
});

describe("closest", () => {
  const cases: [string, string | null][] = [
    ["sned", "send"],
    ["SEND", "send"],
    ["histroy", "history"],
    ["serv", "serve"],
    ["aprove", "approve"],
    ["rejct", "reject"],
    ["whp", "who"],
    ["nonsense", null],
    ["x", null],
    ["deploy", null],
  ];
  it.each(cases)("%s suggests %s", (typed, expected) => {
    expect(closest(typed, COMMANDS)).toBe(expected);
  });
});
