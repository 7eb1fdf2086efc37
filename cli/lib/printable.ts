// Text that came from the coordinator (a message's text, a runner's question, its choices or its
// failure reason, a person's answer, a machine label, a refusal's message) shown on a terminal:
// control and format characters are replaced (worker/wire/printable.ts, shared with the dashboard), so nobody who can write to the coordinator can move
// the cursor, retitle the window or hide text from the person reading it; and arguments of a
// suggested command are shell-quoted, so pasting it runs that command and nothing else. `--json`
// output is never passed through here: it stays exact (JSON escapes every control character).

import { printable } from "../../worker/wire/printable.ts";

export { printable };

/** Writes coordinator text for a person to read (stdout by default), made printable. */
export function writeText(text: string, stream: NodeJS.WritableStream = process.stdout): void {
  stream.write(printable(text));
}

/** One shell word: left bare when it is plainly safe, else single-quoted. */
export function shellWord(word: string): string {
  return /^[A-Za-z0-9._:@%+=,/-]+$/.test(word) ? word : `'${printable(word).replace(/'/g, "'\\''")}'`;
}
