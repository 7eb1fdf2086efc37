// A sign-in codes object (one shard) in the real runtime (worker/objects/sign-in-codes-object.ts,
// its store and the plan of worker/rules/sign-in-codes.ts), each test on an object of its own whose
// clock stands still until the test moves it: a code is found while live and spent once, lives ten
// minutes by the object's clock, a token keeps five and all tokens of the shard a thousand, and
// every event (a find too) prunes what expired.
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SignInCodes } from "../../worker/objects/sign-in-codes-object.ts";
import { SIGN_IN_CODE_LIMITS } from "../../worker/wire/grants.ts";
import { advanceCodesClock } from "./clock.ts";

const TEN_MINUTES = SIGN_IN_CODE_LIMITS.minutes * 60_000;

/** An object of this test's own, its clock stopped; and its time. */
async function freshCodes(): Promise<{ codes: DurableObjectStub<SignInCodes>; now: number }> {
  const codes = env.SIGN_IN_CODES.get(env.SIGN_IN_CODES.idFromName(`test-${crypto.randomUUID()}`));
  return { codes, now: (await advanceCodesClock(codes, 0)).now };
}

/** Rows in the object's table, expired ones too: what the prune left. */
function storedRows(codes: DurableObjectStub<SignInCodes>): Promise<number> {
  return runInDurableObject(codes, (_object: SignInCodes, ctx: DurableObjectState) => ctx.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM sign_in_codes").one().n);
}

describe("sign-in codes", () => {
  it("a code is found while live and spent once: after its spend, and for the loser of two racing spends, it is unknown", async () => {
    const { codes, now } = await freshCodes();
    expect(await codes.mint("h1", "token-a")).toEqual({ kind: "minted", expiresAt: now + TEN_MINUTES });
    expect(await codes.find("h1")).toEqual({ kind: "found", signer: "token-a" });
    expect(await codes.find("h1")).toEqual({ kind: "found", signer: "token-a" });
    expect(await codes.spend("h1")).toEqual({ kind: "spent", signer: "token-a" });
    expect(await codes.spend("h1")).toEqual({ kind: "unknown" });
    expect(await codes.find("h1")).toEqual({ kind: "unknown" });
    expect(await codes.find("never-made")).toEqual({ kind: "unknown" });
    await codes.mint("h2", "token-a");
    const raced = await Promise.all([codes.spend("h2"), codes.spend("h2")]);
    expect(raced.map((a) => a.kind).sort()).toEqual(["spent", "unknown"]);
    expect(await storedRows(codes)).toBe(0);
  });

  it("a code lives ten minutes by the object's clock: found a millisecond before, unknown at its expiry, and the event that finds it expired prunes it", async () => {
    const { codes } = await freshCodes();
    await codes.mint("h1", "token-a");
    await advanceCodesClock(codes, TEN_MINUTES - 1);
    expect(await codes.find("h1")).toMatchObject({ kind: "found" });
    await advanceCodesClock(codes, 1);
    expect(await storedRows(codes)).toBe(1);
    expect(await codes.spend("h1")).toEqual({ kind: "unknown" });
    expect(await storedRows(codes)).toBe(0);
  });

  it("a find prunes too: finding any hash, even one never made, deletes every code that expired and keeps the live ones", async () => {
    const { codes } = await freshCodes();
    await codes.mint("old1", "token-a");
    await codes.mint("old2", "token-b");
    await advanceCodesClock(codes, 1);
    await codes.mint("young", "token-a");
    await advanceCodesClock(codes, TEN_MINUTES - 1);
    expect(await storedRows(codes)).toBe(3);
    expect(await codes.find("never-made")).toEqual({ kind: "unknown" });
    expect(await storedRows(codes)).toBe(1);
    expect(await codes.find("young")).toEqual({ kind: "found", signer: "token-a" });
  });

  it("a hash that is live already is taken (the Worker draws again); once it expired it may be drawn anew", async () => {
    const { codes } = await freshCodes();
    await codes.mint("h1", "token-a");
    expect(await codes.mint("h1", "token-b")).toEqual({ kind: "taken" });
    expect(await codes.find("h1")).toEqual({ kind: "found", signer: "token-a" });
    await advanceCodesClock(codes, TEN_MINUTES);
    expect(await codes.mint("h1", "token-b")).toMatchObject({ kind: "minted" });
    expect(await codes.find("h1")).toEqual({ kind: "found", signer: "token-b" });
  });

  it(`a token keeps at most ${SIGN_IN_CODE_LIMITS.perToken} live codes: a new one drops its oldest, and another token's stay`, async () => {
    const { codes } = await freshCodes();
    await codes.mint("b1", "token-b");
    for (let i = 1; i <= SIGN_IN_CODE_LIMITS.perToken + 1; i++) {
      expect(await codes.mint(`a${i}`, "token-a")).toMatchObject({ kind: "minted" });
      await advanceCodesClock(codes, 1);
    }
    expect(await codes.find("a1")).toEqual({ kind: "unknown" });
    for (let i = 2; i <= SIGN_IN_CODE_LIMITS.perToken + 1; i++) expect(await codes.find(`a${i}`), `a${i}`).toMatchObject({ kind: "found" });
    expect(await codes.find("b1")).toMatchObject({ kind: "found" });
    expect(await storedRows(codes)).toBe(SIGN_IN_CODE_LIMITS.perToken + 1);
  });

  it(`at most ${SIGN_IN_CODE_LIMITS.storedPerShard} live codes in a shard: a new token's is refused and stores nothing, a full token still renews its own, and expired ones make room and are pruned`, async () => {
    const { codes } = await freshCodes();
    const signers = SIGN_IN_CODE_LIMITS.storedPerShard / SIGN_IN_CODE_LIMITS.perToken;
    for (let s = 0; s < signers; s++) {
      const minted = await Promise.all(Array.from({ length: SIGN_IN_CODE_LIMITS.perToken }, (_, i) => codes.mint(`s${s}-${i}`, `token-${s}`)));
      expect(minted.every((m) => m.kind === "minted"), `token-${s}`).toBe(true);
    }
    expect(await codes.mint("late", "token-late")).toEqual({ kind: "full" });
    expect(await codes.find("late")).toEqual({ kind: "unknown" });
    expect(await storedRows(codes)).toBe(SIGN_IN_CODE_LIMITS.storedPerShard);
    expect(await codes.mint("s0-again", "token-0")).toMatchObject({ kind: "minted" });
    expect(await storedRows(codes)).toBe(SIGN_IN_CODE_LIMITS.storedPerShard);
    await advanceCodesClock(codes, TEN_MINUTES);
    expect(await codes.mint("late", "token-late")).toMatchObject({ kind: "minted" });
    expect(await storedRows(codes)).toBe(1);
  });
});
