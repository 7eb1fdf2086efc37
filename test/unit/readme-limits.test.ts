// The README's table of limits states what the wire's LIMITS enforce: each row's figures are
// derived here from LIMITS, so changing a limit without the README (or the other way) goes red.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { LIMITS } from "../../worker/wire/protocol.ts";

const README = readFileSync(join(import.meta.dirname, "../../README.md"), "utf8");
const kib = (bytes: number) => `${bytes / 1024} KiB`;
const mib = (bytes: number) => `${bytes / (1024 * 1024)} MiB`;

/** The first cell of a row of the limits table, and what its other cells must say. */
const ROWS: [string, string[]][] = [
  ["frame size", [kib(LIMITS.frameBytes)]],
  ["message text", [kib(LIMITS.messageTextBytes)]],
  ["message request body (`POST /agents/{agent}/messages`)", [kib(LIMITS.messageTextBytes * 2), `${LIMITS.messageTextBytes * 2} bytes`]],
  ["reply text inline", [kib(LIMITS.replyTextBytes), mib(LIMITS.blobBytes)]],
  ["checkpoint (JSON) inline", [kib(LIMITS.checkpointBytes), mib(LIMITS.blobBytes)]],
  ["step or effect result inline (JSON)", [kib(LIMITS.stepValueBytes), `${LIMITS.stepsPerMessage} steps`, mib(LIMITS.journalBytes)]],
  ["step result, message checkpoint or reply as a blob (R2)", [mib(LIMITS.blobBytes), `${LIMITS.blobsPerMessage} blobs`, mib(LIMITS.messageBlobBytes)]],
  ["heartbeat details", [kib(LIMITS.progressBytes)]],
  ["request bodies", [kib(LIMITS.requestBodyBytes)]],
  ["connections per agent", [String(LIMITS.connectionsPerAgent)]],
  ["frames per second per connection", [`${LIMITS.framesPerSecond} frames`, `${LIMITS.frameCharsPerSecond / 1024} Ki characters`]],
  ["one `sync`", [`${LIMITS.syncPageMessages} messages`, kib(LIMITS.syncPageBytes)]],
  ["sync replay", [`${mib(LIMITS.replayBytesPerSecond)}/s per connection`, `${mib(LIMITS.replayBytesPerSecondPerAgent)}/s per agent`]],
  ["machine labels", [`1–${LIMITS.machineLabelChars} printable characters`]],
  ["lease TTL", [`${LIMITS.leaseTtlSeconds.min}–${LIMITS.leaseTtlSeconds.max} s`]],
];

describe("the README's limits", () => {
  const table = new Map(README.split("\n").filter((l) => l.startsWith("| ")).map((l) => {
    const cells = l.split(" | ");
    return [cells[0]!.slice(2), cells.slice(1).join(" | ")] as const;
  }));
  it.each(ROWS)("%s: as LIMITS says", (label, figures) => {
    const row = table.get(label);
    expect(row, `no README row "${label}"`).toBeDefined();
    for (const figure of figures) expect(row).toContain(figure);
  });
});
