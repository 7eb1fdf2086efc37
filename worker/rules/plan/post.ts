// A post, decided in the plan's event phase: the row it inserts (under the next message id, as a
// claim takes the next claim sequence), what the agent's on_busy policy does to its group
// (../on-busy.ts: refuse it, or cancel and supersede others), and for a question for a person
// alone, the park it starts in. Nothing is stored before the plan: apply inserts the row first.
import { decideOnBusy } from "../on-busy.ts";
import { askPerson, type MessageLease, type MessagePolicy } from "../message-lease.ts";
import type { Question } from "../../wire/protocol.ts";
import type { OnBusy } from "../../wire/enums.ts";
import type { MessageChange } from "./types.ts";
import { keptQuestion } from "./write.ts";

/** How many queued messages one dispatch looks at (oldest first): a bound on its work, not on the queue. */
export const DISPATCH_WINDOW = 500;

/** What a post asks for, as the Worker validated it. */
export interface NewPost {
  text: string;
  group: string | null;
  runTimeoutMs: number | null;
  /** Its idempotency key (null: none), remembered with the row. */
  key: string | null;
  /** A question for a person alone, with its deadline. */
  question: Question | null;
  deadlineSeconds: number | null;
  traceparent: string | null;
  /** A schedule's own on_busy for its slots' messages (undefined: the agent's policy). */
  onBusy?: OnBusy;
}

/** The row a post inserts, as apply stores it (id included). */
export interface PostInsert {
  id: number;
  text: string;
  createdAt: number;
  group: string | null;
  runTimeoutMs: number | null;
  /** Not handed out before then (an on_busy replace debounce), and the post that began its burst. */
  holdUntil: number | null;
  heldSince: number | null;
  /** Runs before older queued messages of its group (on_busy interrupt). */
  first: boolean;
  forPerson: boolean;
  traceparent: string | null;
  key: string | null;
}

export type PostPlan =
  | { ok: true; insert: PostInsert; lease: MessageLease; change: MessageChange | null; interrupt: readonly MessageLease[]; supersede: readonly MessageLease[] }
  /** on_busy reject while the group is busy: nothing is stored. */
  | { ok: false; code: "busy"; holder: number; message: string };

/** The lease a freshly inserted row reads as (leaseOf of its column defaults). */
export function newLease(i: PostInsert): MessageLease {
  return {
    id: i.id, status: "queued", attempts: 0, token: 0, runner: null, expiresAt: null, group: i.group, runTimeoutMs: i.runTimeoutMs,
    retryAt: i.holdUntil, capAt: null, pendingAsk: null, onDeadline: null, parkMs: null, forPerson: i.forPerson, ...(i.first ? { first: true } : {}),
    ...(i.heldSince === null ? {} : { heldSince: i.heldSince }),
  };
}

/**
 * `lastId`: the last message id SQLite handed out; `groupOpen`: what of the post's group its policy
 * decides on (../on-busy.ts busyRead, the whole group), read only when it may act on them (null:
 * queue, or a question for a person, which is never busy nor makes anything busy).
 */
export function planPost(post: NewPost, lastId: number, groupOpen: readonly MessageLease[] | null, policy: MessagePolicy, now: number): PostPlan {
  const busy = groupOpen === null ? null : decideOnBusy(post.onBusy ? { ...policy, onBusy: post.onBusy } : policy, groupOpen, post.group, now);
  if (busy?.action === "refuse") return { ok: false, code: busy.code, holder: busy.holder, message: busy.message };
  const insert: PostInsert = {
    id: lastId + 1, text: post.text, createdAt: now, group: post.group, runTimeoutMs: post.runTimeoutMs, holdUntil: busy?.holdUntil ?? null,
    heldSince: busy?.heldSince ?? null, first: busy?.first ?? false, forPerson: post.question !== null, traceparent: post.traceparent, key: post.key,
  };
  const lease = newLease(insert);
  // Nobody runs a question for a person: it is parked from the start, its question kept with it.
  const change: MessageChange | null = post.question === null ? null : {
    kind: "park", id: insert.id, before: "queued", checkpoint: null, question: keptQuestion({ ...post.question, step: undefined }, lease.token, now),
    lease: askPerson(lease, now, post.deadlineSeconds === null ? null : post.deadlineSeconds * 1000, post.question.on_deadline ?? null),
  };
  return { ok: true, insert, lease, change, interrupt: busy?.interrupt ?? [], supersede: busy?.supersede ?? [] };
}

/** A new queued message joins the dispatch's open messages only where the window a snapshot reads would hold it. */
export function inWindow(open: Iterable<MessageLease>, lease: MessageLease): boolean {
  let queued = 0;
  for (const m of open) if (m.status === "queued") queued += 1;
  return lease.first === true || queued < DISPATCH_WINDOW;
}
