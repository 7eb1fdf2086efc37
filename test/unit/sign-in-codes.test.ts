// The sign-in code as a person reads and types it (worker/rules/sign-in-codes.ts): 12 Crockford
// base32 characters (60 bits) shown XXXX-XXXX-XXXX, read in any case, with or without the dashes
// or spaces, the letters that look like digits read as those digits; what the wire lets the CLI
// print; which of the sixteen objects keeps a code, and the one a token's codes all go to.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { CODE_LENGTH, codeShard, formatSignInCode, parseSignInCode } from "../../worker/rules/sign-in-codes.ts";
import { SIGN_IN_CODE_LIMITS, signInCodeSchema } from "../../worker/wire/grants.ts";

const bytes = (...values: number[]) => Uint8Array.from(values);

describe("formatSignInCode", () => {
  it("gives 5 bits a byte in Crockford's alphabet, in three groups of four, in the shape the wire accepts", () => {
    expect(CODE_LENGTH).toBe(12);
    expect(formatSignInCode(bytes(0, 1, 9, 10, 17, 18, 30, 31, 2, 3, 4, 5))).toBe("019A-HJYZ-2345");
    // Only the low 5 bits count: 256 is a multiple of 32, so every character is as likely.
    expect(formatSignInCode(bytes(32, 33, 41, 42, 49, 50, 62, 255, 34, 35, 36, 37))).toBe("019A-HJYZ-2345");
    const drawn = formatSignInCode(crypto.getRandomValues(new Uint8Array(CODE_LENGTH)));
    expect(signInCodeSchema.safeParse({ code: drawn, expires_at: 1 }).success).toBe(true);
    expect(signInCodeSchema.safeParse({ code: "019A-HJYZ", expires_at: 1 }).success).toBe(false);
  });

  it("never shows I, L, O or U, whatever the bytes", () => {
    const all = Array.from({ length: 32 }, (_, i) => formatSignInCode(new Uint8Array(CODE_LENGTH).fill(i))).join("");
    expect(all).not.toMatch(/[ILOU]/);
    expect(new Set(all.replace(/-/g, "")).size).toBe(32);
  });

  it("takes exactly 12 random bytes", () => {
    expect(() => formatSignInCode(new Uint8Array(8))).toThrow(/12 random bytes/);
  });
});

describe("parseSignInCode", () => {
  it("reads a code in any case, with or without the dashes and spaces, as its one stored spelling", () => {
    for (const typed of ["K7QD-M2XP-9RTA", "k7qd-m2xp-9rta", "K7QDM2XP9RTA", " k7qd m2xp 9rta ", "K7-QD-M2-XP-9R-TA", "k7qdm2xp-9rta"]) expect(parseSignInCode(typed), typed).toBe("K7QDM2XP9RTA");
  });

  it("reads O as 0 and I or L as 1, as Crockford decodes them", () => {
    expect(parseSignInCode("oOiI-lL10-OIL0")).toBe("001111100110");
  });

  it("refuses anything else: a wrong length (the old 8 too), U, punctuation, letters outside the alphabet", () => {
    for (const typed of ["", "K7QD-M2XP", "K7QD-M2XP-9RT", "K7QD-M2XP-9RTAB", "K7QD-M2XP-9RTU", "K7QD_M2XP_9RTA", "K7QD-M2XP-9RT!", "ÄBCD-EFGH-JKMN"]) expect(parseSignInCode(typed), typed).toBeNull();
  });

  it("reads back every code it formats", () => {
    for (let i = 0; i < 50; i++) {
      const code = formatSignInCode(crypto.getRandomValues(new Uint8Array(CODE_LENGTH)));
      expect(parseSignInCode(code)).toBe(code.replace(/-/g, ""));
    }
  });
});

describe("codeShard", () => {
  it(`is one of ${SIGN_IN_CODE_LIMITS.shards}, the first hex digit of a SHA-256: a code's by its hash, a token's by its own`, () => {
    expect(SIGN_IN_CODE_LIMITS.shards).toBe(16);
    expect(codeShard("a3f0")).toBe("a");
    expect(codeShard("0b")).toBe("0");
    const seen = new Set(Array.from({ length: 16 }, (_, i) => codeShard(`${i.toString(16)}${"0".repeat(63)}`)));
    expect(seen.size).toBe(SIGN_IN_CODE_LIMITS.shards);
  });
});

describe("SIGN_IN_CODE_LIMITS.triesPerMinute and mintsPerMinute", () => {
  it("are the limit and period wrangler.toml gives OAUTH_CODE_LIMIT (one binding, keyed by address and by token)", () => {
    const toml = readFileSync(new URL("../../wrangler.toml", import.meta.url), "utf8");
    const block = toml.split("[[ratelimits]]").find((b) => /name\s*=\s*"OAUTH_CODE_LIMIT"/.test(b));
    expect(block).toBeDefined();
    expect(block).toMatch(new RegExp(`simple\\s*=\\s*\\{\\s*limit\\s*=\\s*${SIGN_IN_CODE_LIMITS.triesPerMinute}\\s*,\\s*period\\s*=\\s*60\\s*\\}`));
    expect(SIGN_IN_CODE_LIMITS.mintsPerMinute).toBe(SIGN_IN_CODE_LIMITS.triesPerMinute);
  });
});
