// Text that came from the coordinator (a message's text, a runner's question, its choices or its
// failure reason, a person's answer, a machine label, a refusal's message) shown on a terminal:
// control and format characters are replaced, so nobody who can write to the coordinator can move
// the cursor, retitle the window or hide text from the person reading it; and arguments of a
// suggested command are shell-quoted, so pasting it runs that command and nothing else. `--json`
// output is never passed through here: it stays exact (JSON escapes every control character).

/**
 * C0 and C1 controls (but newline and tab), and format characters such as bidi overrides; the
 * zero-width joiner and non-joiner stay, as emoji sequences and scripts such as Persian need them.
 */
const UNPRINTABLE = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F]|(?![\u200C\u200D])\p{Cf}/gu;

/** The text with every unprintable character replaced by U+FFFD; CRLF line ends become plain newlines. */
export function printable(text: string): string {
  return text.replace(/\r\n/g, "\n").replace(UNPRINTABLE, "\uFFFD");
}

/** Writes coordinator text for a person to read (stdout by default), made printable. */
export function writeText(text: string, stream: NodeJS.WritableStream = process.stdout): void {
  stream.write(printable(text));
}

/** One shell word: left bare when it is plainly safe, else single-quoted. */
export function shellWord(word: string): string {
  return /^[A-Za-z0-9._:@%+=,/-]+$/.test(word) ? word : `'${printable(word).replace(/'/g, "'\\''")}'`;
}
