// Turns the benchmark's samples into the markdown report printed and written to docs/benchmarks.md.
import { fmt, markdownTable, percentile, ratio, summarize } from "./stats.ts";
import type { WakeResult } from "./wakes.ts";

export interface ScenarioResult {
  label: string;
  baton: number[];
  etcd: number[];
  failures: { baton: number; etcd: number };
}

export interface ReportInput {
  date: string;
  revision: string;
  command: string;
  machine: string;
  etcdVersion: string;
  ttlSeconds: number;
  scanSeconds: number;
  trials: number;
  keys: number;
  concurrency: number;
  acquireMode: string;
  results: ScenarioResult[];
  rates: Record<string, number[]>;
  wakes: WakeResult[] | null;
}

export function renderReport(r: ReportInput): string {
  const rows = r.results.map((s) => {
    const b = summarize(s.baton);
    const e = summarize(s.etcd);
    const failed = s.failures.baton + s.failures.etcd > 0 ? ` (failed: baton ${s.failures.baton}, etcd ${s.failures.etcd})` : "";
    return [s.label + failed, String(b.count), fmt(b.p50), fmt(b.p99), String(e.count), fmt(e.p50), fmt(e.p99), ratio(b.p50, e.p50), ratio(b.p99, e.p99)];
  });
  const batonRate = percentile(r.rates.baton ?? [], 50);
  const etcdRate = percentile(r.rates.etcd ?? [], 50);
  rows.push(["acquisitions per second (median of rounds)", String(r.rates.baton?.length ?? 0), fmt(batonRate), "", String(r.rates.etcd?.length ?? 0), fmt(etcdRate), "", ratio(batonRate, etcdRate), ""]);
  const table = markdownTable(
    ["scenario", "baton n", "baton p50", "baton p99", "etcd n", "etcd p50", "etcd p99", "p50 baton/etcd", "p99 baton/etcd"],
    rows,
  );
  const wakes = r.wakes === null
    ? "The coordinator does not report `wakes` in its presence JSON yet; not measured."
    : markdownTable(
        ["group (one agent each)", "connections", "window (s)", "wakes", "wakes per object-hour", "wakes per connection-hour"],
        r.wakes.map((w) => [w.label, String(w.connections), fmt(w.windowSeconds), String(w.wakes), fmt(w.perObjectHour), fmt(w.perConnectionHour)]),
      );
  return `# Benchmarks

Latest run: ${r.date}, baton ${r.revision}, on ${r.machine}; wrangler dev (workerd, local) and etcd ${r.etcdVersion}, both on loopback.

Command: \`${r.command}\`

Same lease TTL for both: ${r.ttlSeconds} s (baton: \`BATON_HEARTBEAT_TTL_SECONDS=${r.ttlSeconds}\`, \`BATON_PRESENCE_SCAN_SECONDS=${r.scanSeconds}\`;
etcd: a lease of ${r.ttlSeconds} s per candidate). Both heartbeat every TTL/3. ${r.trials} trials per scenario and system,
baton and etcd interleaved. etcd is driven like its \`concurrency.Election\` (lowest create revision under a prefix
leads; the others watch the next older key) through its v3 JSON gateway.

- graceful handoff: the holder releases (baton \`serve_lease release\`; etcd deletes its key, as \`Resign\` does) until the standby knows it leads.
- crash: the holder is a separate process killed with SIGKILL, until the standby knows it leads.
- silent holder: the holder process is SIGSTOPped (sockets stay open, heartbeats stop), until the standby knows it leads.
- acquire: ${r.keys} fresh keys per system in 3 rounds, ${r.concurrency} in flight; baton: ${r.acquireMode}; etcd: lease grant + create-if-absent txn.

${table}

## Durable Object wakes of idle connections

Connections that only heartbeat with the exact text \`{"type":"ping"}\` for a window; the delta of the
\`wakes\` counter in \`GET /agents/{agent}/presence\` (minus the closing presence request itself).
The control group sends \`{"type": "ping"}\`, which the runtime cannot auto-answer, so each heartbeat wakes the object.
Wakes left in the idle groups are the presence-scan alarm, one per object per scan, whatever the number of connections.

${wakes}
`;
}
