// A question as a message keeps it, from a runner's park or its `baton ask`.
import type { OnDeadline } from "../message-lease.ts";
import type { Question } from "../../wire/protocol.ts";
import type { Vote } from "../quorum.ts";
import type { ApprovalAsked } from "../permits.ts";

/** A question as a message keeps it: what a runner asked, and the journal step its answer replays as. */
export interface KeptQuestion {
  text: string;
  choices: string[] | null;
  step: string | null;
  on_deadline: OnDeadline | null;
  /** The deadline a served command asked with (`baton ask --deadline`), used when its park names none. */
  deadline_seconds?: number | null;
  /** The token of the attempt that asked. */
  token: number;
  asked_at: number;
  /** Asked by the coordinator for an effect that needs approval: what approving it permits (../permits.ts). */
  approve?: ApprovalAsked | null;
  /** Several people (rules/quorum.ts): absent on questions kept before them, and on questions one answer decides. */
  needs?: number;
  reject_needs?: number;
  approvers?: string[];
  /** The answers so far of a question several people decide, one per token. */
  votes?: Vote[];
}

/** A question as the attempt of `token` asks it now. */
export function keptQuestion(q: Question, token: number, now: number): KeptQuestion {
  return {
    text: q.text, choices: q.choices ?? null, step: q.step ?? null, on_deadline: q.on_deadline ?? null, token, asked_at: now,
    ...(q.needs === undefined ? {} : { needs: q.needs }), ...(q.reject_needs === undefined ? {} : { reject_needs: q.reject_needs }),
    ...(q.approvers === undefined ? {} : { approvers: q.approvers }),
  };
}
