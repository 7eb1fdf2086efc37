// What the CLI prints of a runner's question and a person's answer: control and format characters
// cannot reach the terminal, and a suggested command's arguments are shell-quoted.
import { describe, expect, it } from "vitest";
import { printable, shellWord } from "../../cli/lib/printable.ts";
import { answerCommands, answerHint } from "../../cli/lib/next-steps.ts";
import { questionChoices } from "../../cli/commands/ask.ts";

describe("printable", () => {
  it("replaces escape sequences, bell and bidi overrides, and keeps lines, tabs and ordinary text", () => {
    expect(printable("Ship\u001b[2K\r?\u001b]0;pwned\u0007 \u202Eevil")).toBe("Ship\uFFFD[2K\uFFFD?\uFFFD]0;pwned\uFFFD \uFFFDevil");
    expect(printable("line one\n\tline two — déjà")).toBe("line one\n\tline two — déjà");
    expect(printable("family 👨\u200D👩\u200D👧, می\u200Cخواهم, \u2066isolate\u2069 \u200Bgap")).toBe("family 👨\u200D👩\u200D👧, می\u200Cخواهم, \uFFFDisolate\uFFFD \uFFFDgap");
  });

  it("leaves no control byte of a hostile failure reason or message text, and reads CRLF as a line end", () => {
    const hostile = "deploy\u001b[1A\u001b[2K baton answer a 1 ship\u0007\u001b]2;title\u001b\\\u009b31m\r\nnext";
    const shown = printable(hostile);
    expect(shown).not.toMatch(/[\u0000-\u0008\u000B-\u001F\u007F-\u009F]/);
    expect(shown).toBe("deploy\uFFFD[1A\uFFFD[2K baton answer a 1 ship\uFFFD\uFFFD]2;title\uFFFD\\\uFFFD31m\nnext");
  });
});

describe("shellWord", () => {
  it("leaves plain words bare and single-quotes anything a shell would read", () => {
    expect(shellWord("ship")).toBe("ship");
    expect(shellWord("ship; touch /tmp/x #")).toBe("'ship; touch /tmp/x #'");
    expect(shellWord("it's")).toBe("'it'\\''s'");
  });
});

describe("suggested answers", () => {
  it("name the question's own choices, never approve, when it has choices", () => {
    expect(answerCommands("a", 3, ["ship", "hold on"])).toEqual(["baton answer a 3 ship [TEXT]", "baton answer a 3 'hold on' [TEXT]", "baton reject a 3 [REASON]"]);
    expect(answerCommands("a", 3, [])).toEqual(["baton approve a 3 [TEXT]", "baton reject a 3 [REASON]"]);
    expect(answerHint("a", 3, ["ship", "hold"])).toBe("baton answer a 3 ship|hold, or baton reject a 3");
    expect(answerHint("a", 3, [])).toBe("baton approve|reject a 3");
  });
});

describe("baton ask --choices", () => {
  it("takes what the person plainly means: reject is always offered, so listing it changes nothing", () => {
    expect(questionChoices("approve,reject")).toBeUndefined();
    expect(questionChoices("approve")).toBeUndefined();
    expect(questionChoices("ship, hold,reject")).toEqual(["ship", "hold"]);
    expect(questionChoices("ship,ship,hold")).toEqual(["ship", "hold"]);
    expect(questionChoices("reject")).toBeUndefined();
  });
});
