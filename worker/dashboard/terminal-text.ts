// A run's output is what a program printed for a terminal: escapes, NUL, bidi overrides. On the
// page it is shown as text nodes only, and, as the CLI's printable() does (cli/lib/printable.ts),
// control and format characters (but newline and tab) become U+FFFD, so no escape sequence shows
// as garbage that looks like something else and no bidi override reorders what a person reads.

/** C0 and C1 controls (but newline and tab), and format characters; zero-width (non-)joiners stay. */
const UNPRINTABLE = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F]|(?![\u200C\u200D])\p{Cf}/gu;

export function terminalText(text: string): string {
  return text.replace(/\r\n/g, "\n").replace(UNPRINTABLE, "\uFFFD");
}
