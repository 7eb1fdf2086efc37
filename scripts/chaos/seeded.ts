// One seeded generator for the chaos runs, so a run's choices can be replayed with --seed.

/** mulberry32 over `seed`, with the helpers every mode draws its choices with. */
export function seeded(seed: number) {
  let s = seed;
  const random = (): number => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    random,
    pick: <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!,
    between: (lo: number, hi: number): number => lo + random() * (hi - lo),
  };
}
