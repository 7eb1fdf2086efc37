// The chaos flood phase in a bounded form (4 s of flood), so CI runs it with every `npm test`:
// sync floods from one account neither cost the holder its lease nor a pinging standby its
// connection, the silent holder is still replaced, and another account's lease keeps renewing.
import { describe, expect, it } from "vitest";
import { floodInvariants, runFlood } from "../../scripts/chaos/flood.ts";

describe("flood phase, bounded", () => {
  it("a sync flood from three connections of one account breaks none of the flood invariants", async () => {
    const result = await runFlood(4000);
    expect(result.refused).toBeGreaterThan(0);
    const broken = floodInvariants(result).filter((i) => !i.ok).map((i) => i.name);
    expect(broken, JSON.stringify(result)).toEqual([]);
  }, 120_000);
});
