// What the CLI prints of a runner's question and a person's answer: control and format characters
// cannot reach the terminal, and a suggested command's arguments are shell-quoted.
import { describe, expect, it } from "vitest";
import { printable, shellWord } from "../../cli/lib/printable.ts";

describe("printable", () => {
  it("replaces escape sequences, bell and bidi overrides, and keeps lines, tabs and ordinary text", () => {
    expect(printable("Ship\u001b[2K\r?\u001b]0;pwned\u0007 \u202Eevil")).toBe("Ship\uFFFD[2K\uFFFD?\uFFFD]0;pwned\uFFFD \uFFFDevil");
    expect(printable("line one\n\tline two — déjà")).toBe("line one\n\tline two — déjà");
  });
});

describe("shellWord", () => {
  it("leaves plain words bare and single-quotes anything a shell would read", () => {
    expect(shellWord("ship")).toBe("ship");
    expect(shellWord("ship; touch /tmp/x #")).toBe("'ship; touch /tmp/x #'");
    expect(shellWord("it's")).toBe("'it'\\''s'");
  });
});
