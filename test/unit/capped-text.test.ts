// The cut of text the coordinator keeps and shows (what a schedule fire threw): at most the bytes
// of UTF-8 given, between characters, with an ellipsis that counts in the bytes.
import { describe, expect, it } from "vitest";
import { capUtf8, utf8Bytes } from "../../worker/rules/capped-text.ts";

const bytes = (s: string) => new TextEncoder().encode(s).length;

describe("capUtf8", () => {
  it("keeps text that fits, to the byte", () => {
    expect(capUtf8("", 10)).toBe("");
    expect(capUtf8("abcdefghij", 10)).toBe("abcdefghij");
    expect(capUtf8("€€€", 9)).toBe("€€€");
  });

  it("cuts longer text with an ellipsis, in all at most the bytes given", () => {
    expect(capUtf8("abcdefghijk", 10)).toBe("abcdefg…");
    expect(bytes(capUtf8("x".repeat(10_240), 500))).toBe(500);
  });

  it("never splits a character: multi-byte characters and surrogate pairs are kept whole or dropped", () => {
    expect(capUtf8("ab€€€€", 10)).toBe("ab€…");
    expect(capUtf8("a😀😀😀", 10)).toBe("a😀…");
    expect(capUtf8("😀😀😀", 9)).toBe("😀…");
    for (let max = 3; max < 40; max++) {
      const cut = capUtf8("é€😀".repeat(10), max);
      expect(bytes(cut)).toBeLessThanOrEqual(max);
      expect(cut.endsWith("…")).toBe(true);
      expect(cut).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
    }
  });

  it("counts bytes as TextEncoder does, a lone surrogate as U+FFFD", () => {
    for (const s of ["plain", "é€😀", "\uD800x", "x\uDC00"]) expect(utf8Bytes(s)).toBe(bytes(s));
  });

  it("gives nothing when not even the ellipsis fits", () => {
    expect(capUtf8("abcdef", 2)).toBe("");
  });
});
