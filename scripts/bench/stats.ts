// Small statistics and table helpers shared by the benchmark and the chaos run.

/** Nearest-rank percentile (p in 0..100) of the samples; NaN for an empty list. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return NaN;
  if (p < 0 || p > 100) throw new Error(`percentile must be between 0 and 100, got ${p}`);
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1]!;
}

export interface Summary {
  count: number;
  p50: number;
  p99: number;
}

export function summarize(samples: readonly number[]): Summary {
  return { count: samples.length, p50: percentile(samples, 50), p99: percentile(samples, 99) };
}

/** baton/etcd ratio as text; a dash when either side has no figure or the divisor is zero. */
export function ratio(baton: number, etcd: number): string {
  if (!Number.isFinite(baton) || !Number.isFinite(etcd) || etcd === 0) return "-";
  return `${(baton / etcd).toFixed(2)}x`;
}

/** Formats a number for the tables: integers above 100, one decimal below. */
export function fmt(value: number): string {
  if (!Number.isFinite(value)) return "-";
  return Math.abs(value) >= 100 ? String(Math.round(value)) : value.toFixed(1);
}

/** A GitHub-flavoured markdown table, which also reads fine in a terminal. */
export function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`;
  return [line(header), `| ${widths.map((w) => "-".repeat(w)).join(" | ")} |`, ...rows.map(line)].join("\n");
}
