// Helpers of the person-in-the-loop end-to-end files: a shell agent that finds `baton` first on
// its PATH, and why a message's latest attempt failed.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BIN } from "./serve-helpers.ts";

/** Why a message's latest attempt failed, from its view. */
export const errorOf = (view: object): string | null | undefined => (view as { error?: string | null }).error;

/** A served shell script (`set -e`) with this checkout's `baton` first on its PATH and $WORK its directory. */
export function shellAgent(body: string): { dir: string; command: string; env: Record<string, string> } {
  const dir = mkdtempSync(join(tmpdir(), "baton-ask-"));
  writeFileSync(join(dir, "baton"), `#!/bin/sh\nexec "${process.execPath}" "${BIN}" "$@"\n`, { mode: 0o755 });
  const command = join(dir, "agent.sh");
  writeFileSync(command, `#!/bin/sh\nset -e\n${body}\n`, { mode: 0o755 });
  return { dir, command, env: { WORK: dir, PATH: `${dir}:${process.env.PATH}` } };
}
