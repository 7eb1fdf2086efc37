// The configuration table of docs/guides/operate.md states the defaults worker/config.ts applies:
// each var's default cell is read from DEFAULT here, so changing a default without the guide goes red.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DEFAULT } from "../../worker/config.ts";

const GUIDE = readFileSync(join(import.meta.dirname, "../../docs/guides/operate.md"), "utf8");

const VARS: [string, number][] = [
  ["BATON_HEARTBEAT_TTL_SECONDS", DEFAULT.heartbeatTtlSeconds],
  ["BATON_PRESENCE_SCAN_SECONDS", DEFAULT.presenceScanSeconds],
  ["BATON_LEASE_SHARDS", DEFAULT.leaseShards],
  ["BATON_HISTORY_MESSAGES", DEFAULT.historyMessages],
  ["BATON_POST_KEY_HOURS", DEFAULT.postKeyHours],
  ["BATON_PREFERENCE_HYSTERESIS_SECONDS", DEFAULT.preferenceHysteresisSeconds],
  ["BATON_RESTART_GRACE_SECONDS", DEFAULT.restartGraceSeconds],
  ["BATON_OUTPUT_BYTES_PER_MESSAGE", DEFAULT.outputBytesPerMessage],
];

describe("the operate guide's configuration table", () => {
  it.each(VARS)("%s defaults to %s, as worker/config.ts says", (name, value) => {
    const row = GUIDE.split("\n").find((line) => line.startsWith(`| \`${name}\` |`));
    expect(row, `no row for ${name}`).toBeDefined();
    expect(row!.split(" | ")[1]).toBe(String(value));
  });
});
