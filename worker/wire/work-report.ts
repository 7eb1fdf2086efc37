// What presence says about an agent's messages: its policy, how many wait, and which run, wait for
// a person (parked) or gave up (failed). Plain data, shared by the worker, the CLI and the dashboard.

export interface RunningMessage {
  id: number;
  attempt: number;
  token: number;
  claim_seq: number | null;
  machine: string | null;
  /** Server ms at which the run times out and the message is taken back. */
  expires_at: number | null;
  group: string | null;
}

export interface WorkReport {
  mode: "single" | "pool";
  max_running: number;
  run_timeout_seconds: number;
  max_attempts: number;
  counts: { queued: number; running: number; parked: number; acknowledged: number; failed: number };
  running: RunningMessage[];
  parked: { id: number; attempt: number; deadline: number | null; group: string | null }[];
  /** The most recent failures, newest first. */
  failed: { id: number; attempts: number; error: string | null }[];
}
