// "Did you mean …?" for a mistyped command or option, as git and npm do: the closest known word
// by edit distance (a swap of two neighbouring letters counts as one edit, so `sned` is one edit
// from `send`), offered only when it is close enough to be what was meant.

/** Edits (insert, delete, replace, swap of neighbours) that turn `a` into `b`: optimal string alignment distance. */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}

/**
 * The known word closest to `typed`, or null when none is plausibly meant: at most two edits, and
 * fewer than half of the typed word's letters (so `nonsense` suggests nothing). Ties go to the
 * word listed first.
 */
export function closest(typed: string, known: readonly string[]): string | null {
  let best: { word: string; distance: number } | null = null;
  for (const word of known) {
    const distance = editDistance(typed.toLowerCase(), word);
    if (best === null || distance < best.distance) best = { word, distance };
  }
  if (best === null || best.distance > 2 || best.distance * 2 >= typed.length) return null;
  return best.word;
}

/** " (did you mean send?)", or "" when nothing is close. */
export function didYouMean(typed: string, known: readonly string[]): string {
  const word = closest(typed, known);
  return word === null ? "" : ` (did you mean ${word}?)`;
}
