// BATON_ALLOWED_ORIGINS is read once, with an exact message naming the entry that is not an origin.
import { describe, expect, it } from "vitest";
import { parseAllowedOrigins } from "../../worker/origins.ts";

describe("parseAllowedOrigins", () => {
  it("takes origins, comma-separated, with or without a trailing slash; none is fine", () => {
    expect(parseAllowedOrigins(undefined)).toEqual({ ok: true, origins: new Set() });
    expect(parseAllowedOrigins(" https://ops.example.com, http://127.0.0.1:9000/ ")).toEqual({ ok: true, origins: new Set(["https://ops.example.com", "http://127.0.0.1:9000"]) });
  });

  const bad: [string, number][] = [
    ["*", 1],
    ["https://ops.example.com,ops.example.com", 2],
    ["https://ops.example.com/dashboard", 1],
    ["null", 1],
    ["file:///tmp/x.html", 1],
  ];
  it.each(bad)("refuses %s, naming entry %d", (raw, entry) => {
    const parsed = parseAllowedOrigins(raw);
    expect(parsed.ok).toBe(false);
    expect(!parsed.ok && parsed.message).toMatch(new RegExp(`^BATON_ALLOWED_ORIGINS entry ${entry} must be an origin such as https://ops.example.com`));
  });
});
