// Text that came from the coordinator (a runner's question, its choices, a person's answer) shown
// on a terminal: control and format characters are replaced, so a runner cannot move the cursor,
// retitle the window or hide text from the person reading it; and arguments of a suggested command
// are shell-quoted, so pasting it runs that command and nothing else.

/** C0 and C1 controls (but newline and tab), and format characters such as bidi overrides. */
const UNPRINTABLE = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\p{Cf}]/gu;

export function printable(text: string): string {
  return text.replace(UNPRINTABLE, "\uFFFD");
}

/** One shell word: left bare when it is plainly safe, else single-quoted. */
export function shellWord(word: string): string {
  return /^[A-Za-z0-9._:@%+=,/-]+$/.test(word) ? word : `'${printable(word).replace(/'/g, "'\\''")}'`;
}
