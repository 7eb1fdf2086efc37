// Reads GET /metrics text with parse-prometheus-text-format (a real parser of the Prometheus text
// format, not a regex). That parser folds a histogram's label sets into one series, so the
// per-agent view below hands it only one agent's lines with the agent label taken off.
import parsePrometheusTextFormat, { type ParsedFamily, type ParsedSample } from "parse-prometheus-text-format";

export function parseMetrics(text: string): Map<string, ParsedFamily> {
  return new Map(parsePrometheusTextFormat(text).map((f) => [f.name, f]));
}

/** Every family as one agent sees it: its samples only, labels without `agent`. */
export function agentMetrics(text: string, agent: string): Map<string, ParsedFamily> {
  const label = `agent="${agent}"`;
  const lines = text.split("\n")
    .filter((l) => l.startsWith("#") || l.includes(`{${label}`))
    .map((l) => l.replace(`{${label},`, "{").replace(`{${label}}`, ""));
  return parseMetrics(lines.join("\n") + "\n");
}

/** The value of the sample of `family` whose labels include `labels`, as a number; undefined if none. */
export function sampleValue(families: Map<string, ParsedFamily>, family: string, labels: Record<string, string> = {}): number | undefined {
  const match = families.get(family)?.metrics.find((m: ParsedSample) =>
    Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
  return match?.value === undefined ? undefined : Number(match.value);
}
