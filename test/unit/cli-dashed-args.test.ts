// A grant id is base64url, so one in 64 begins with "-": `baton grants revoke -nkjCbg9TUHs5rl5` must
// revoke it, not call it an unknown option (a clean clone's OAuth test drew such an id and failed).
import { describe, expect, it } from "vitest";
import { revokeCommand } from "../../cli/commands/grants.ts";
import { parseInvocation } from "../../cli/lib/command.ts";
import { UsageError } from "../../cli/lib/errors.ts";

describe("an argument that may begin with a dash", () => {
  it("a grant id beginning with - is the ID, beside options in any order", () => {
    expect(parseInvocation(revokeCommand, ["-nkjCbg9TUHs5rl5"]).args).toEqual(["-nkjCbg9TUHs5rl5"]);
    const both = parseInvocation(revokeCommand, ["--json", "-nkjCbg9TUHs5rl5", "--url", "http://127.0.0.1:8787"]);
    expect(both).toMatchObject({ args: ["-nkjCbg9TUHs5rl5"], options: { json: true, url: "http://127.0.0.1:8787" } });
  });

  it("a long option is still an option, and a word that is no grant id is still refused as an option", () => {
    expect(() => parseInvocation(revokeCommand, ["--nope"])).toThrow(/unknown option --nope/);
    expect(() => parseInvocation(revokeCommand, ["-x!"])).toThrow(UsageError);
    expect(() => parseInvocation(revokeCommand, ["-nkjCbg9TUHs5rl5", "-other"])).toThrow(/unexpected argument "-other"/);
  });
});
