// A webhook's host as a resolver reads it (rules/webhook-exposure.ts resolverName): every trailing
// dot gone and IPv4 forms the dots hid parsed again, so no spelling of a private place passes the
// check; public names are left as they are.
import { describe, expect, it } from "vitest";
import { resolverName, webhookTargetRefusal } from "../../worker/rules/webhook-exposure.ts";

describe("resolverName", () => {
  const rows: [string, string][] = [
    ["localhost..", "localhost"],
    ["localhost...", "localhost"],
    ["metadata.google.internal..", "metadata.google.internal"],
    ["vm..", "vm"],
    ["0x7f.1..", "127.0.0.1"],
    ["127.1..", "127.0.0.1"],
    ["2130706433..", "127.0.0.1"],
    ["0251.0376.0251.0376..", "169.254.169.254"],
    ["[::1]", "[::1]"],
    ["hooks.example.com.", "hooks.example.com"],
    ["hooks.example.com", "hooks.example.com"],
    ["....", ""],
  ];
  it.each(rows)("%s reads as %s", (host, name) => expect(resolverName(host)).toBe(name));

  it("a public name passes, with or without its trailing dots", () => {
    for (const url of ["https://hooks.example.com/x", "https://hooks.example.com../x", "https://8.8.8.8./x"]) expect(webhookTargetRefusal(url, false)).toBeNull();
  });
});
