// What the directory shows of an agent is itself leased: true only while the agent's own object
// keeps confirming it. An entry is valid for three heartbeat TTLs from its last confirmation, and
// the agent confirms every two, on a wake it has anyway (its presence scan). An agent object that
// cannot report (crashed, lost, unreachable) leaves an entry that turns "unknown" on its own;
// nothing is ever shown as live on the strength of an old report.

export interface DirectoryLeaseTimes {
  renewEveryMs: number;
  validForMs: number;
}

function directoryLeaseTimes(heartbeatTtlMs: number): DirectoryLeaseTimes {
  return { renewEveryMs: 2 * heartbeatTtlMs, validForMs: 3 * heartbeatTtlMs };
}

/** Until when a report or confirmation made at `at` vouches for the entry. */
export function confirmedUntil(at: number, heartbeatTtlMs: number): number {
  return at + directoryLeaseTimes(heartbeatTtlMs).validForMs;
}

/** When the agent must confirm again; null when nothing it shows needs confirming (no connections). */
export function nextConfirmation(lastConfirmedAt: number | null, connected: boolean, heartbeatTtlMs: number): number | null {
  if (!connected) return null;
  return (lastConfirmedAt ?? 0) + directoryLeaseTimes(heartbeatTtlMs).renewEveryMs;
}
