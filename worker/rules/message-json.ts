// The JSON a message row and its journal keep, each column with its codec (stored-json.ts), for the
// message store that writes and reads them and the rules that read them in the rows an event
// carries. What a corrupt one reads as: a question as none asked, a checkpoint or progress as none
// kept, a cancel record as unknown; a step's value is refused as `internal`, never replayed as
// another value.
import * as z from "zod/mini";
import { ON_DEADLINE } from "../wire/enums.ts";
import type { KeptQuestion } from "./plan/kept-question.ts";
import { StoredJson } from "./stored-json.ts";

/** Who cancelled a message, from where, when and why. */
export interface CancelRecord {
  at: number;
  account: string;
  token: string;
  via: string;
  reason: string | null;
}

/** A question as stored with its message: the rules' KeptQuestion, kept as JSON in its row. */
export type StoredQuestion = KeptQuestion;

const maybeString = z.optional(z.nullable(z.string()));
export const questionJson = new StoredJson<StoredQuestion>("messages.question", z.object({
  text: z.string(), choices: z.nullable(z.array(z.string())), step: maybeString, on_deadline: z.optional(z.nullable(z.enum(ON_DEADLINE))),
  token: z.number(), asked_at: z.number(), needs: z.optional(z.number()), reject_needs: z.optional(z.number()), approvers: z.optional(z.array(z.string())),
  approve: z.optional(z.nullable(z.object({ effect: z.string(), args: z.string(), digest: z.string() }))),
  votes: z.optional(z.array(z.object({ token: z.string(), account: z.string(), via: z.string(), choice: z.string(), text: z.nullable(z.string()), at: z.number() }))),
}));
export const cancelJson = new StoredJson<CancelRecord>("messages.cancel", z.object({
  at: z.number(), account: z.string(), token: z.string(), via: z.string(), reason: z.nullable(z.string()),
}));
/** A checkpoint's or a heartbeat's progress value: any JSON its run wrote. */
export const checkpointJson = new StoredJson<unknown>("messages.checkpoint", z.unknown());
export const progressJson = new StoredJson<unknown>("messages.progress", z.unknown());
/** A journal record's value (message_steps.value): any JSON its step wrote (objects/run-copy.ts splices the text as stored). */
export const stepValueJson = new StoredJson<unknown>("message_steps.value", z.unknown());
