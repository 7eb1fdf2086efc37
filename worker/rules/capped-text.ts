// Text the coordinator did not write but keeps and shows (what a schedule fire threw: a storage
// error may quote a whole row) is cut to a number of UTF-8 bytes, so one failure cannot grow a
// fire record, a webhook body or an API answer without bound. The cut falls between characters
// (never inside a surrogate pair) and ends with an ellipsis, counted in the bytes.
const ELLIPSIS = "…";
const ELLIPSIS_BYTES = 3;

/** `text` as it is when it fits in `maxBytes` of UTF-8; otherwise its longest whole-character start that fits with "…" after it. */
export function capUtf8(text: string, maxBytes: number): string {
  if (utf8Bytes(text) <= maxBytes) return text;
  const budget = maxBytes - ELLIPSIS_BYTES;
  if (budget < 0) return "";
  let used = 0;
  let end = 0;
  for (const ch of text) {
    const bytes = charBytes(ch.codePointAt(0)!);
    if (used + bytes > budget) break;
    used += bytes;
    end += ch.length;
  }
  return text.slice(0, end) + ELLIPSIS;
}

/** UTF-8 bytes of `text` as TextEncoder writes it (a lone surrogate becomes U+FFFD: 3 bytes). */
export function utf8Bytes(text: string): number {
  let n = 0;
  for (const ch of text) n += charBytes(ch.codePointAt(0)!);
  return n;
}

function charBytes(cp: number): number {
  return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}
