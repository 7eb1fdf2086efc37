// What a question several people decide says while it waits, in words: read by the CLI and the
// dashboard alike (no schema here, so the page's bundle stays small).
import type { QuestionQuorum } from "./http-responses.ts";

/** What an answer that did not decide its question tells the answerer: "recorded, 1 of 2 approvals; waiting for bob". */
export function quorumTally(q: QuestionQuorum): string {
  const rejects = q.reject_needs > 1 ? `, ${q.rejections} of ${q.reject_needs} rejects` : "";
  const waiting = q.waiting_for === null || q.waiting_for.length === 0 ? "" : `; waiting for ${q.waiting_for.join(", ")}`;
  return `recorded, ${q.approvals} of ${q.needs} approvals${rejects}${waiting}`;
}
