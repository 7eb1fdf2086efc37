// serve's own `baton` for the commands it runs: a script first on PATH (and in BATON_CLI) that runs
// the same CLI with the same Node and loader flags, passing every argument through untouched.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { writeCliShim } from "../../cli/lib/cli-shim.ts";

describe("writeCliShim", () => {
  it("puts a baton first on PATH that runs this CLI with its arguments as given; remove() takes it away", () => {
    const dir = mkdtempSync(join(tmpdir(), "baton-shim-test-"));
    const script = join(dir, "it's main.js");
    writeFileSync(script, "process.stdout.write(JSON.stringify({ args: process.argv.slice(2), flag: process.execArgv }));\n");
    const shim = writeCliShim(script, process.execPath, ["--no-warnings", "--inspect=9229"], "/usr/bin:/bin");
    expect(shim.env.PATH).toBe(`${join(shim.env.BATON_CLI, "..")}:/usr/bin:/bin`);
    const run = spawnSync("sh", ["-c", 'baton step "two words" \'$HOME\' -- x'], { env: { PATH: shim.env.PATH }, encoding: "utf8" });
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ args: ["step", "two words", "$HOME", "--", "x"], flag: ["--no-warnings"] });
    shim.remove();
    expect(existsSync(shim.env.BATON_CLI)).toBe(false);
  });
});
