// The sign-in code as a person reads and types it (worker/rules/sign-in-codes.ts): 8 Crockford
// base32 characters shown XXXX-XXXX, read in any case, with or without the dash or spaces, the
// letters that look like digits read as those digits; what the wire lets the CLI print.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { CODE_LENGTH, formatSignInCode, parseSignInCode } from "../../worker/rules/sign-in-codes.ts";
import { SIGN_IN_CODE_LIMITS, signInCodeSchema } from "../../worker/wire/grants.ts";

const bytes = (...values: number[]) => Uint8Array.from(values);

describe("formatSignInCode", () => {
  it("gives 5 bits a byte in Crockford's alphabet, in two groups of four, in the shape the wire accepts", () => {
    expect(formatSignInCode(bytes(0, 1, 9, 10, 17, 18, 30, 31))).toBe("019A-HJYZ");
    // Only the low 5 bits count: 256 is a multiple of 32, so every character is as likely.
    expect(formatSignInCode(bytes(32, 33, 41, 42, 49, 50, 62, 255))).toBe("019A-HJYZ");
    const drawn = formatSignInCode(crypto.getRandomValues(new Uint8Array(CODE_LENGTH)));
    expect(signInCodeSchema.safeParse({ code: drawn, expires_at: 1 }).success).toBe(true);
  });

  it("never shows I, L, O or U, whatever the bytes", () => {
    const all = Array.from({ length: 32 }, (_, i) => formatSignInCode(bytes(i, i, i, i, i, i, i, i))).join("");
    expect(all).not.toMatch(/[ILOU]/);
    expect(new Set(all.replace(/-/g, "")).size).toBe(32);
  });

  it("takes exactly 8 random bytes", () => {
    expect(() => formatSignInCode(new Uint8Array(5))).toThrow(/8 random bytes/);
  });
});

describe("parseSignInCode", () => {
  it("reads a code in any case, with or without the dash and spaces, as its one stored spelling", () => {
    for (const typed of ["K7QD-M2XP", "k7qd-m2xp", "K7QDM2XP", " k7qd m2xp ", "K7-QD-M2-XP"]) expect(parseSignInCode(typed), typed).toBe("K7QDM2XP");
  });

  it("reads O as 0 and I or L as 1, as Crockford decodes them", () => {
    expect(parseSignInCode("oOiI-lL10")).toBe("00111110");
  });

  it("refuses anything else: a wrong length, U, punctuation, letters outside the alphabet", () => {
    for (const typed of ["", "K7QD-M2X", "K7QD-M2XPQ", "K7QD-M2XU", "K7QD_M2XP", "K7QD-M2X!", "ÄBCD-EFGH"]) expect(parseSignInCode(typed), typed).toBeNull();
  });

  it("reads back every code it formats", () => {
    for (let i = 0; i < 50; i++) {
      const code = formatSignInCode(crypto.getRandomValues(new Uint8Array(CODE_LENGTH)));
      expect(parseSignInCode(code)).toBe(code.replace("-", ""));
    }
  });
});

describe("SIGN_IN_CODE_LIMITS.triesPerMinute", () => {
  it("is the limit and period wrangler.toml gives OAUTH_CODE_LIMIT", () => {
    const toml = readFileSync(new URL("../../wrangler.toml", import.meta.url), "utf8");
    const block = toml.split("[[ratelimits]]").find((b) => /name\s*=\s*"OAUTH_CODE_LIMIT"/.test(b));
    expect(block).toBeDefined();
    expect(block).toMatch(new RegExp(`simple\\s*=\\s*\\{\\s*limit\\s*=\\s*${SIGN_IN_CODE_LIMITS.triesPerMinute}\\s*,\\s*period\\s*=\\s*60\\s*\\}`));
  });
});
