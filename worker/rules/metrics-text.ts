// The Prometheus text exposition format (version 0.0.4), written by hand: families of gauges,
// counters and histograms with escaped labels. prom-client would bring a registry, default Node
// process metrics and Node-only imports into the Worker bundle to print a few dozen lines, so this
// small typed writer does that job; the e2e tests read its output with a real parser from npm.

export const CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

export type Labels = Readonly<Record<string, string>>;

export interface Sample {
  labels: Labels;
  value: number;
}

export interface HistogramSample {
  labels: Labels;
  /** Upper bounds in ascending order, and the observations at or below each (not cumulative). */
  bounds: readonly number[];
  counts: readonly number[];
  count: number;
  sum: number;
}

export type Family =
  | { name: string; help: string; type: "gauge" | "counter"; samples: Sample[] }
  | { name: string; help: string; type: "histogram"; samples: HistogramSample[] };

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

function escapeHelp(text: string): string {
  return text.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

function formatValue(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Infinity) return "+Inf";
  if (value === -Infinity) return "-Inf";
  return String(value);
}

function labelText(labels: Labels): string {
  const pairs = Object.entries(labels).map(([k, v]) => {
    if (!LABEL_NAME.test(k)) throw new Error(`invalid label name ${JSON.stringify(k)}`);
    return `${k}="${escapeLabel(v)}"`;
  });
  return pairs.length ? `{${pairs.join(",")}}` : "";
}

function line(name: string, labels: Labels, value: number): string {
  return `${name}${labelText(labels)} ${formatValue(value)}`;
}

/** The exposition text of the given families, each with its HELP and TYPE lines; empty families are left out. */
export function formatFamilies(families: readonly Family[]): string {
  const out: string[] = [];
  for (const family of families) {
    if (!METRIC_NAME.test(family.name)) throw new Error(`invalid metric name ${JSON.stringify(family.name)}`);
    if (family.samples.length === 0) continue;
    out.push(`# HELP ${family.name} ${escapeHelp(family.help)}`, `# TYPE ${family.name} ${family.type}`);
    if (family.type !== "histogram") {
      for (const s of family.samples) out.push(line(family.name, s.labels, s.value));
      continue;
    }
    for (const h of family.samples) {
      let cumulative = 0;
      h.bounds.forEach((bound, i) => {
        cumulative += h.counts[i] ?? 0;
        out.push(line(`${family.name}_bucket`, { ...h.labels, le: formatValue(bound) }, cumulative));
      });
      out.push(line(`${family.name}_bucket`, { ...h.labels, le: "+Inf" }, h.count));
      out.push(line(`${family.name}_sum`, h.labels, h.sum), line(`${family.name}_count`, h.labels, h.count));
    }
  }
  return out.length ? `${out.join("\n")}\n` : "";
}
