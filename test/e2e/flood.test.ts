// The chaos flood phase in a bounded form (4 s of flood) on the project's shared wrangler dev (its
// 2 s TTL), so CI runs it with every `npm test`: sync floods from one account neither cost the
// holder its lease nor a pinging standby its connection, the silent holder is still replaced, and
// another account's lease keeps renewing.
import { describe, expect, it } from "vitest";
import { floodInvariants, runFlood } from "../../scripts/chaos/flood.ts";
import { sharedServeFixture } from "./serve-helpers.ts";
import { ALICE_TOKEN } from "./shared-accounts.ts";
import { SHARED_SERVE_VARS } from "./shared-dev.global.ts";
import { DEV_TOKEN } from "./wrangler-dev.ts";

const fx = sharedServeFixture();

describe("flood phase, bounded", () => {
  it("a sync flood from three connections of one account breaks none of the flood invariants", async () => {
    const ttlS = Number(SHARED_SERVE_VARS.BATON_HEARTBEAT_TTL_SECONDS);
    const result = await runFlood(4000, { url: fx.dev.url, ttlS, token: DEV_TOKEN, otherToken: ALICE_TOKEN });
    console.log(`flood: longest pong gap ${result.stallMs} ms (TTL ${ttlS} s), takeover ${result.takeoverLateMs} ms after the silent holder's deadline`);
    expect(result.refused).toBeGreaterThan(0);
    const broken = floodInvariants(result).filter((i) => !i.ok).map((i) => i.name);
    expect(broken, JSON.stringify(result)).toEqual([]);
  }, 120_000);
});
