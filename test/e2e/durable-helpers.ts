// Helpers of the durable-steps end-to-end files: a message's view with its journal, and a poll.

/** A message's view with its journal (GET /agents/{agent}/messages/{id}). */
export interface Journaled {
  id: number;
  status: string;
  attempts: number;
  reply: string | null;
  waiting_on: string | null;
  progress: unknown;
  steps: { name: string; kind: string; status: string; attempt: number; bytes: number }[];
}

/** Polls `check` every 50 ms until it holds; throws naming `what` after `timeoutMs`. */
export async function until(check: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`never: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
