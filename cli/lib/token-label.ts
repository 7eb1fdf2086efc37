// How a token's name reads in a sentence. A token configured without a name (`account:sha256`, as
// the dev token is) is named "default" by the coordinator, and "cancelled by default (cli)" reads
// as an adverb: it is shown as "the unnamed token" (the dev token, on a local coordinator).
// --json output keeps the stored name.

/** The name the coordinator gives a token configured without one (worker/auth.ts). */
export const UNNAMED_TOKEN = "default";

/** "token alice", or "the unnamed token" for the one configured without a name. */
export function tokenLabel(name: string): string {
  return name === UNNAMED_TOKEN ? "the unnamed token" : `token ${name}`;
}
