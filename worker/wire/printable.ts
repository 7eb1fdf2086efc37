// Text that came from the coordinator, made safe to show a person: on a terminal (cli/lib/printable.ts)
// and on the dashboard (a run's output). Control and format characters are replaced, so nobody who
// can write to the coordinator can move the cursor, retitle the window or hide text (a bidi
// override) from the person reading it. JSON output never passes through here: it stays exact.

/**
 * C0 and C1 controls (but newline and tab), and format characters such as bidi overrides; the
 * zero-width joiner and non-joiner stay, as emoji sequences and scripts such as Persian need them.
 */
const UNPRINTABLE = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F]|(?![\u200C\u200D])\p{Cf}/gu;

/** The text with every unprintable character replaced by U+FFFD; CRLF line ends become plain newlines. */
export function printable(text: string): string {
  return text.replace(/\r\n/g, "\n").replace(UNPRINTABLE, "\uFFFD");
}
