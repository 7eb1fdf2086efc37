// `baton` inside a served command, however serve was started (`npx baton`, `node dist/cli/main.js`,
// a global install, a development loader): serve writes a one-line `baton` script that runs this
// very CLI with this very Node, in a directory of its own put first on the command's PATH, and
// names the script in BATON_CLI for programs that would rather not search PATH. So `baton step`,
// `baton effect` and `baton ask` in the command run the same version as the serve that runs it.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join, resolve } from "node:path";

export interface CliShim {
  /** The environment a served command gets on top of serve's own: PATH with the shim first, BATON_CLI. */
  env: { PATH: string; BATON_CLI: string };
  /** Removes the shim's directory (serve does it on its way out). */
  remove(): void;
}

function shellQuote(word: string): string {
  return `'${word.replace(/'/g, "'\\''")}'`;
}

/** Writes the shim for the CLI this process runs (`script`, run by `node` with `nodeArgs`). */
export function writeCliShim(
  script: string = process.argv[1]!,
  node: string = process.execPath,
  nodeArgs: readonly string[] = process.execArgv,
  path: string = process.env.PATH ?? "",
): CliShim {
  const dir = mkdtempSync(join(tmpdir(), "baton-cli-"));
  const bin = join(dir, "baton");
  // The loader flags (tsx while developing) come along; a debugger's port would clash, so it stays behind.
  const flags = nodeArgs.filter((a) => !/^--(inspect|debug)/.test(a));
  const words = [node, ...flags, resolve(script)].map(shellQuote).join(" ");
  writeFileSync(bin, `#!/bin/sh\nexec ${words} "$@"\n`);
  chmodSync(bin, 0o755);
  return {
    env: { PATH: path ? `${dir}${delimiter}${path}` : dir, BATON_CLI: bin },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
