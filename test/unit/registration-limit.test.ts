// The budget key of an OAuth client registration and of a sign-in code typed on the page
// (worker/rules/registration-limit.ts), and the per-minute figure the refusal states against the
// one wrangler.toml configures.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { codeTryKey, registrationKey, REGISTRATIONS_PER_MINUTE } from "../../worker/rules/registration-limit.ts";

describe("registrationKey", () => {
  it("an IPv6 address is charged to its /64, however it is written", () => {
    const key = "2001:db8:0:1::/64";
    for (const written of ["2001:db8:0:1::1", "2001:DB8:0:1:ffff:ffff:ffff:ffff", "2001:0db8:0000:0001:0000:0000:0000:0002", "[2001:db8:0:1::3]", "2001:db8:0:1::4%eth0", "2001:db8:0:1:0:0:1.2.3.4"]) {
      expect(registrationKey(written)).toBe(key);
    }
    expect(registrationKey("2001:db8:0:2::1")).toBe("2001:db8:0:2::/64");
    expect(registrationKey("::1")).toBe("0:0:0:0::/64");
    expect(registrationKey("2001:db8::")).toBe("2001:db8:0:0::/64");
  });

  it("an IPv4 address is its own budget, also when it arrives IPv4-mapped", () => {
    expect(registrationKey("203.0.113.7")).toBe("203.0.113.7");
    expect(registrationKey("::ffff:203.0.113.7")).toBe("203.0.113.7");
    expect(registrationKey("::ffff:cb00:7107")).toBe("203.0.113.7");
    expect(registrationKey(" 203.0.113.8 ")).not.toBe(registrationKey("203.0.113.7"));
  });

  it("no address is one shared budget; something unparseable is its own bounded key", () => {
    expect(registrationKey(null)).toBe("unknown");
    expect(registrationKey("")).toBe("unknown");
    expect(registrationKey("1:2:3:4:5:6:7:8:9")).toBe("1:2:3:4:5:6:7:8:9");
    expect(registrationKey("x".repeat(500))).toHaveLength(64);
  });
});

describe("codeTryKey", () => {
  it("an IPv6 address is charged to its /48, so a host with a routed /48 has one budget, not 65,536", () => {
    const key = "typed:2001:db8:1::/48";
    for (const written of ["2001:db8:1::1", "2001:db8:1:ffff:ffff:ffff:ffff:ffff", "2001:0db8:0001:00ab:0000:0000:0000:0002", "[2001:db8:1:2::3]", "2001:db8:1:3::4%eth0"]) {
      expect(codeTryKey(written), written).toBe(key);
    }
    expect(codeTryKey("2001:db8:2::1")).toBe("typed:2001:db8:2::/48");
    expect(registrationKey("2001:db8:1:2::1")).not.toBe(registrationKey("2001:db8:1:3::1"));
  });

  it("an IPv4 address (also IPv4-mapped) is its own budget; no address is one shared budget", () => {
    expect(codeTryKey("203.0.113.7")).toBe("typed:203.0.113.7");
    expect(codeTryKey("::ffff:203.0.113.7")).toBe("typed:203.0.113.7");
    expect(codeTryKey(null)).toBe("typed:unknown");
  });
});

describe("REGISTRATIONS_PER_MINUTE", () => {
  it("is the limit and period wrangler.toml gives OAUTH_REGISTER_LIMIT", () => {
    const toml = readFileSync(new URL("../../wrangler.toml", import.meta.url), "utf8");
    const block = toml.split("[[ratelimits]]").find((b) => /name\s*=\s*"OAUTH_REGISTER_LIMIT"/.test(b));
    expect(block).toBeDefined();
    expect(block).toMatch(new RegExp(`simple\\s*=\\s*\\{\\s*limit\\s*=\\s*${REGISTRATIONS_PER_MINUTE}\\s*,\\s*period\\s*=\\s*60\\s*\\}`));
  });
});
